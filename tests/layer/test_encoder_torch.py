"""TransformerEncoderLayer, layer_norm, gelu and feed_forward against
PyTorch (an oracle for the tests only; never a run-time dependency):
torch.nn.TransformerEncoderLayer in eval mode with the same weights, for
every option combination, forward and backward (dx and every parameter's
gradient), 1e-8 in float64; the backward functions against
torch.autograd."""
import itertools

import numpy as np
import pytest

import attnpy

import torch  # a test dependency (the [test] extra): fail, never skip
F = torch.nn.functional


class _TutorialNorm(torch.nn.Module):
    """(x - mean) / (std + eps) * weight + bias: the tutorial's form, for
    eps_in_sqrt=False (torch's LayerNorm puts eps under the root)."""

    def __init__(self, d, eps):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(d, dtype=torch.float64))
        self.bias = torch.nn.Parameter(torch.zeros(d, dtype=torch.float64))
        self.eps = eps

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        std = x.std(-1, unbiased=False, keepdim=True)
        return (x - mean) / (std + self.eps) * self.weight + self.bias


def _torch_layer(layer):
    d, h, f = layer.d_model, layer.num_heads, layer.d_ff
    act = {"relu": "relu", "gelu": "gelu",
           "gelu_tanh": lambda t: F.gelu(t, approximate="tanh")}
    t = torch.nn.TransformerEncoderLayer(
        d, h, dim_feedforward=f, dropout=0.0,
        activation=act[layer.activation], layer_norm_eps=layer.layer_norm_eps,
        batch_first=True, norm_first=layer.norm_first, dtype=torch.float64)
    if not layer.eps_in_sqrt:
        t.norm1 = _TutorialNorm(d, layer.layer_norm_eps)
        t.norm2 = _TutorialNorm(d, layer.layer_norm_eps)
    a = layer.attention
    zeros = np.zeros(d)
    bias = {k: zeros if getattr(a, f"b_{k}") is None else getattr(a, f"b_{k}")
            for k in "qkvo"}
    T = lambda v: torch.tensor(np.ascontiguousarray(v))  # noqa: E731
    with torch.no_grad():
        t.self_attn.in_proj_weight.copy_(T(np.concatenate(
            [a.W_q.T, a.W_k.T, a.W_v.T])))
        t.self_attn.in_proj_bias.copy_(T(np.concatenate(
            [bias["q"], bias["k"], bias["v"]])))
        t.self_attn.out_proj.weight.copy_(T(a.W_o.T))
        t.self_attn.out_proj.bias.copy_(T(bias["o"]))
        t.linear1.weight.copy_(T(layer.W1.T))
        t.linear1.bias.copy_(T(layer.b1))
        t.linear2.weight.copy_(T(layer.W2.T))
        t.linear2.bias.copy_(T(layer.b2))
        for i in (1, 2):
            getattr(t, f"norm{i}").weight.copy_(T(getattr(layer,
                                                          f"norm{i}_weight")))
            getattr(t, f"norm{i}").bias.copy_(T(getattr(layer,
                                                        f"norm{i}_bias")))
    return t.eval()


OPTIONS = list(itertools.product(["relu", "gelu", "gelu_tanh"],
                                 [False, True], [False, True],
                                 [False, True], [1e-6, 1e-5]))


@pytest.mark.parametrize("activation,norm_first,eps_in_sqrt,bias,eps",
                         OPTIONS)
def test_encoder_layer_matches_torch(activation, norm_first, eps_in_sqrt,
                                     bias, eps):
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
    tl = _torch_layer(layer)
    x = rng.standard_normal((3, 9, d))
    lengths = [9, 5, 1]
    # grad enabled: torch's layer runs its modules (the no_grad "fast
    # path" would bypass the tutorial-form norms)
    pad = torch.arange(9)[None, :] >= torch.tensor(lengths)[:, None]
    cases = [
        (dict(), dict()),
        (dict(causal=True),
         dict(src_mask=torch.ones(9, 9, dtype=torch.bool).triu(1))),
        (dict(mask=attnpy.padding_mask(lengths, 9)),
         dict(src_key_padding_mask=pad)),
    ]
    for ours, theirs in cases:
        tl.zero_grad()
        xt = torch.tensor(x, requires_grad=True)
        yt = tl(xt, **theirs)
        got = layer.forward(x, ours.get("mask"),
                            causal=ours.get("causal", False))
        assert np.abs(got - yt.detach().numpy()).max() < 1e-8
        dy = rng.standard_normal(x.shape)
        yt.backward(torch.tensor(dy))
        dx = layer.backward(dy)
        assert dx.shape == x.shape
        assert np.abs(dx - xt.grad.numpy()).max() < 1e-8
        want = _torch_grads(tl, bias)
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


@pytest.mark.parametrize("eps_in_sqrt", [False, True])
def test_layer_norm_and_backward_match_torch(eps_in_sqrt):
    rng = np.random.default_rng(1)
    x, dy = rng.standard_normal((2, 4, 6, 40)) * 2
    w, b = rng.standard_normal(40), rng.standard_normal(40)
    xt = torch.tensor(x, requires_grad=True)
    wt = torch.tensor(w, requires_grad=True)
    bt = torch.tensor(b, requires_grad=True)
    if eps_in_sqrt:
        yt = F.layer_norm(xt, (40,), wt, bt, eps=1e-5)
    else:
        yt = ((xt - xt.mean(-1, keepdim=True))
              / (xt.std(-1, unbiased=False, keepdim=True) + 1e-5) * wt + bt)
    yt.backward(torch.tensor(dy))
    y = attnpy.layer_norm(x, 1e-5, weight=w, bias=b, eps_in_sqrt=eps_in_sqrt)
    np.testing.assert_allclose(y, yt.detach().numpy(), rtol=0, atol=1e-12)
    dx, dw, db = attnpy.layer_norm_backward(dy, x, 1e-5, weight=w,
                                            eps_in_sqrt=eps_in_sqrt)
    for got, want in ((dx, xt.grad), (dw, wt.grad), (db, bt.grad)):
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelu_matches_torch(approximate, dtype):
    x = np.linspace(-8, 8, 2001).astype(dtype).reshape(3, 667)
    xt = torch.tensor(x, requires_grad=True)
    yt = F.gelu(xt, approximate=approximate)
    yt.backward(torch.ones_like(yt))
    tol = 1e-6 if dtype == np.float32 else 1e-14
    np.testing.assert_allclose(attnpy.gelu(x, approximate=approximate),
                               yt.detach().numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(
        attnpy.gelu_backward(np.ones_like(x), x, approximate=approximate),
        xt.grad.numpy(), rtol=tol * 4, atol=tol * 4)


@pytest.mark.parametrize("activation", ["relu", "gelu", "gelu_tanh"])
def test_feed_forward_backward_matches_torch(activation):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 5, 8))
    W1, W2 = rng.standard_normal((8, 16)), rng.standard_normal((16, 8))
    b1, b2 = rng.standard_normal(16), rng.standard_normal(8)
    dy = rng.standard_normal((2, 5, 8))
    ts = [torch.tensor(a, requires_grad=True) for a in (x, W1, b1, W2, b2)]
    act = {"relu": F.relu, "gelu": F.gelu,
           "gelu_tanh": lambda t: F.gelu(t, approximate="tanh")}[activation]
    yt = act(ts[0] @ ts[1] + ts[2]) @ ts[3] + ts[4]
    yt.backward(torch.tensor(dy))
    y = attnpy.feed_forward(x, W1, b1, W2, b2, activation=activation)
    np.testing.assert_allclose(y, yt.detach().numpy(), rtol=1e-12,
                               atol=1e-12)
    grads = attnpy.feed_forward_backward(dy, x, W1, b1, W2, b2,
                                         activation=activation)
    for got, t in zip(grads, ts):
        np.testing.assert_allclose(got, t.grad.numpy(), rtol=1e-11,
                                   atol=1e-11)
