"""TransformerEncoderLayer, layer_norm, gelu and feed_forward against
PyTorch (an oracle for the tests only; never a run-time dependency):
torch.nn.TransformerEncoderLayer in eval mode with the same weights, for
every option combination and three maskings, forward and backward (dx and
every parameter's gradient), 1e-8 in float64; the backward functions
against torch.autograd.

The fast suite compares with torch's results stored in tests/data/oracle
(tests/_oracle.py): every test here except the layer's option grid, of
which it keeps three rows (each activation, each value of every other
option, each masking once); CI's oracle step runs the whole grid against
torch itself (the rows marked oracle)."""
import itertools

import numpy as np
import pytest

import attnpy


def _tutorial_norm(torch, d, eps):
    """(x - mean) / (std + eps) * weight + bias: the tutorial's form, for
    eps_in_sqrt=False (torch's LayerNorm puts eps under the root)."""

    class TutorialNorm(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.ones(d,
                                                        dtype=torch.float64))
            self.bias = torch.nn.Parameter(torch.zeros(d,
                                                       dtype=torch.float64))
            self.eps = eps

        def forward(self, x):
            mean = x.mean(-1, keepdim=True)
            std = x.std(-1, unbiased=False, keepdim=True)
            return (x - mean) / (std + self.eps) * self.weight + self.bias

    return TutorialNorm()


def _layer_arrays(layer):
    """(options, parameters) of an attnpy layer: what torch's twin needs."""
    opts = dict(d=layer.d_model, h=layer.num_heads, f=layer.d_ff,
                activation=layer.activation, eps=layer.layer_norm_eps,
                norm_first=layer.norm_first, eps_in_sqrt=layer.eps_in_sqrt)
    a = layer.attention
    zeros = np.zeros(layer.d_model)
    p = {f"b_{k}": zeros if getattr(a, f"b_{k}") is None
         else getattr(a, f"b_{k}") for k in "qkvo"}
    p.update({n: getattr(a, n) for n in ("W_q", "W_k", "W_v", "W_o")})
    p.update({n: getattr(layer, n) for n in (
        "W1", "b1", "W2", "b2", "norm1_weight", "norm1_bias",
        "norm2_weight", "norm2_bias")})
    return opts, p


def _torch_layer(torch, opts, p):
    F = torch.nn.functional
    d, h, f = opts["d"], opts["h"], opts["f"]
    act = {"relu": "relu", "gelu": "gelu",
           "gelu_tanh": lambda t: F.gelu(t, approximate="tanh")}
    t = torch.nn.TransformerEncoderLayer(
        d, h, dim_feedforward=f, dropout=0.0,
        activation=act[opts["activation"]], layer_norm_eps=opts["eps"],
        batch_first=True, norm_first=opts["norm_first"], dtype=torch.float64)
    if not opts["eps_in_sqrt"]:
        t.norm1 = _tutorial_norm(torch, d, opts["eps"])
        t.norm2 = _tutorial_norm(torch, d, opts["eps"])
    T = lambda v: torch.tensor(np.ascontiguousarray(v))  # noqa: E731
    with torch.no_grad():
        t.self_attn.in_proj_weight.copy_(T(np.concatenate(
            [p["W_q"].T, p["W_k"].T, p["W_v"].T])))
        t.self_attn.in_proj_bias.copy_(T(np.concatenate(
            [p["b_q"], p["b_k"], p["b_v"]])))
        t.self_attn.out_proj.weight.copy_(T(p["W_o"].T))
        t.self_attn.out_proj.bias.copy_(T(p["b_o"]))
        t.linear1.weight.copy_(T(p["W1"].T))
        t.linear1.bias.copy_(T(p["b1"]))
        t.linear2.weight.copy_(T(p["W2"].T))
        t.linear2.bias.copy_(T(p["b2"]))
        for i in (1, 2):
            getattr(t, f"norm{i}").weight.copy_(T(p[f"norm{i}_weight"]))
            getattr(t, f"norm{i}").bias.copy_(T(p[f"norm{i}_bias"]))
    return t.eval()


def _torch_run(opts, p, bias, x, dy, masking, lengths):
    """torch's layer with the same parameters on x (masking: "none",
    "causal" or "padding" by lengths): (output, dx, names, gradients...),
    the gradients under attnpy's names and layouts ((in, out) matrices)."""
    import torch  # the oracle extra; a test dependency, never skipped
    tl = _torch_layer(torch, opts, p)
    L = x.shape[-2]
    theirs = {
        "none": dict(),
        "causal": dict(src_mask=torch.ones(L, L, dtype=torch.bool).triu(1)),
        "padding": dict(src_key_padding_mask=torch.arange(L)[None, :]
                        >= torch.tensor(lengths)[:, None]),
    }[masking]
    # grad enabled: torch's layer runs its modules (the no_grad "fast
    # path" would bypass the tutorial-form norms)
    xt = torch.tensor(x, requires_grad=True)
    yt = tl(xt, **theirs)
    yt.backward(torch.tensor(dy))
    g = _torch_grads(tl, bias)
    names = sorted(g)
    return (yt.detach().numpy(), xt.grad.numpy(), np.array(names),
            *(g[k] for k in names))


OPTIONS = list(itertools.product(["relu", "gelu", "gelu_tanh"],
                                 [False, True], [False, True],
                                 [False, True], [1e-6, 1e-5]))
MASKINGS = ["none", "causal", "padding"]
# the fast suite's rows (against torch's stored results): each activation,
# each value of the other options and each masking once
FAST = {("relu", False, False, False, 1e-6, "none"),
        ("gelu", True, True, True, 1e-5, "causal"),
        ("gelu_tanh", False, True, False, 1e-5, "padding")}
GRID = [pytest.param(*o, m, marks=[] if (*o, m) in FAST
                     else [pytest.mark.oracle])
        for o in OPTIONS for m in MASKINGS]


@pytest.mark.parametrize("activation,norm_first,eps_in_sqrt,bias,eps,masking",
                         GRID)
def test_encoder_layer_matches_torch(torch_oracle, activation, norm_first,
                                     eps_in_sqrt, bias, eps, masking):
    rng = np.random.default_rng(len(activation) + 2 * norm_first)
    layer = attnpy.TransformerEncoderLayer(
        32, 4, 48, seed=7, activation=activation, norm_first=norm_first,
        layer_norm_eps=eps, eps_in_sqrt=eps_in_sqrt, bias=bias)
    d = 32
    for name, shape in [("b1", (48,)), ("b2", (d,)), ("norm1_bias", (d,)),
                        ("norm2_bias", (d,))]:
        setattr(layer, name, rng.standard_normal(shape) * 0.3)
    layer.norm1_weight = 1 + 0.3 * rng.standard_normal(d)
    layer.norm2_weight = 1 + 0.3 * rng.standard_normal(d)
    if bias:
        for k in "qkvo":
            setattr(layer.attention, f"b_{k}", rng.standard_normal(d) * 0.3)
    x = rng.standard_normal((3, 9, d))
    dy = rng.standard_normal(x.shape)
    lengths = [9, 5, 1]
    ours = {"none": dict(), "causal": dict(causal=True),
            "padding": dict(mask=attnpy.padding_mask(lengths, 9))}[masking]
    opts, p = _layer_arrays(layer)
    yt, dxt, names, *gt = torch_oracle("layer", _torch_run, opts, p, bias,
                                       x, dy, masking, lengths)
    want = dict(zip(names.tolist(), gt))
    got = layer.forward(x, ours.get("mask"), causal=ours.get("causal", False))
    assert np.abs(got - yt).max() < 1e-8
    dx = layer.backward(dy)
    assert dx.shape == x.shape
    assert np.abs(dx - dxt).max() < 1e-8
    assert sorted(layer.grads) == sorted(k for k in want if k[1] != "_")
    mine = dict(layer.grads, **layer.attention.grads)
    assert sorted(mine) == sorted(want)
    for k, g in want.items():
        assert mine[k].shape == g.shape, k
        assert np.abs(mine[k] - g).max() < 1e-8, k


def _torch_grads(t, bias):
    """The gradients of torch's layer under attnpy's names and layouts
    ((in, out) matrices)."""
    d = t.linear1.in_features
    g = lambda p: p.grad.numpy()  # noqa: E731
    w_in, b_in = g(t.self_attn.in_proj_weight), g(t.self_attn.in_proj_bias)
    out = {"W1": g(t.linear1.weight).T, "b1": g(t.linear1.bias),
           "W2": g(t.linear2.weight).T, "b2": g(t.linear2.bias),
           "W_o": g(t.self_attn.out_proj.weight).T}
    for i in (1, 2):
        norm = getattr(t, f"norm{i}")
        out[f"norm{i}_weight"], out[f"norm{i}_bias"] = (g(norm.weight),
                                                        g(norm.bias))
    for j, k in enumerate("qkv"):
        out[f"W_{k}"] = w_in[j * d:(j + 1) * d].T
        if bias:
            out[f"b_{k}"] = b_in[j * d:(j + 1) * d]
    if bias:
        out["b_o"] = g(t.self_attn.out_proj.bias)
    return out


def _torch_layer_norm(x, w, b, dy, eps_in_sqrt):
    import torch  # the oracle extra; a test dependency, never skipped
    F = torch.nn.functional
    xt = torch.tensor(x, requires_grad=True)
    wt = torch.tensor(w, requires_grad=True)
    bt = torch.tensor(b, requires_grad=True)
    if eps_in_sqrt:
        yt = F.layer_norm(xt, (40,), wt, bt, eps=1e-5)
    else:
        yt = ((xt - xt.mean(-1, keepdim=True))
              / (xt.std(-1, unbiased=False, keepdim=True) + 1e-5) * wt + bt)
    yt.backward(torch.tensor(dy))
    return (yt.detach().numpy(), xt.grad.numpy(), wt.grad.numpy(),
            bt.grad.numpy())


@pytest.mark.parametrize("eps_in_sqrt", [False, True])
def test_layer_norm_and_backward_match_torch(torch_oracle, eps_in_sqrt):
    rng = np.random.default_rng(1)
    x, dy = rng.standard_normal((2, 4, 6, 40)) * 2
    w, b = rng.standard_normal(40), rng.standard_normal(40)
    yt, *grads = torch_oracle("layer_norm", _torch_layer_norm, x, w, b, dy,
                              eps_in_sqrt)
    y = attnpy.layer_norm(x, 1e-5, weight=w, bias=b, eps_in_sqrt=eps_in_sqrt)
    np.testing.assert_allclose(y, yt, rtol=0, atol=1e-12)
    dx, dw, db = attnpy.layer_norm_backward(dy, x, 1e-5, weight=w,
                                            eps_in_sqrt=eps_in_sqrt)
    for got, want in zip((dx, dw, db), grads):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


def _torch_gelu(x, approximate):
    import torch  # the oracle extra; a test dependency, never skipped
    xt = torch.tensor(x, requires_grad=True)
    yt = torch.nn.functional.gelu(xt, approximate=approximate)
    yt.backward(torch.ones_like(yt))
    return yt.detach().numpy(), xt.grad.numpy()


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelu_matches_torch(torch_oracle, approximate, dtype):
    x = np.linspace(-8, 8, 2001).astype(dtype).reshape(3, 667)
    yt, dxt = torch_oracle("gelu", _torch_gelu, x, approximate)
    tol = 1e-6 if dtype == np.float32 else 1e-14
    np.testing.assert_allclose(attnpy.gelu(x, approximate=approximate),
                               yt, rtol=tol, atol=tol)
    np.testing.assert_allclose(
        attnpy.gelu_backward(np.ones_like(x), x, approximate=approximate),
        dxt, rtol=tol * 4, atol=tol * 4)


def _torch_feed_forward(arrays, dy, activation):
    import torch  # the oracle extra; a test dependency, never skipped
    F = torch.nn.functional
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    act = {"relu": F.relu, "gelu": F.gelu,
           "gelu_tanh": lambda t: F.gelu(t, approximate="tanh")}[activation]
    yt = act(ts[0] @ ts[1] + ts[2]) @ ts[3] + ts[4]
    yt.backward(torch.tensor(dy))
    return (yt.detach().numpy(), *(t.grad.numpy() for t in ts))


@pytest.mark.parametrize("activation", ["relu", "gelu", "gelu_tanh"])
def test_feed_forward_backward_matches_torch(torch_oracle, activation):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 5, 8))
    W1, W2 = rng.standard_normal((8, 16)), rng.standard_normal((16, 8))
    b1, b2 = rng.standard_normal(16), rng.standard_normal(8)
    dy = rng.standard_normal((2, 5, 8))
    yt, *tgrads = torch_oracle("feed_forward", _torch_feed_forward,
                               (x, W1, b1, W2, b2), dy, activation)
    y = attnpy.feed_forward(x, W1, b1, W2, b2, activation=activation)
    np.testing.assert_allclose(y, yt, rtol=1e-12, atol=1e-12)
    grads = attnpy.feed_forward_backward(dy, x, W1, b1, W2, b2,
                                         activation=activation)
    for got, t in zip(grads, tgrads):
        np.testing.assert_allclose(got, t, rtol=1e-11, atol=1e-11)
