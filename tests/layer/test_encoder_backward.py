"""TransformerEncoderLayer.backward and MultiHeadAttention(bias=True)
.backward: central finite differences in float64 on small layers (every
activation, both norm placements, both norm forms, mask and causal),
float32, independence from later calls of the attention, and errors that
name the argument. torch's layer is the oracle in test_encoder_torch.py;
the tutorial's own code (forward) in test_encoder.py."""
import itertools

import numpy as np
import pytest

import attnpy
from attnpy import reference as R

OWN = ("W1", "b1", "W2", "b2", "norm1_weight", "norm1_bias",
       "norm2_weight", "norm2_bias")


def _layer(rng, **opts):
    layer = attnpy.TransformerEncoderLayer(8, 2, 12, seed=4, **opts)
    d, f = 8, 12
    for name, shape in [("b1", (f,)), ("b2", (d,)), ("norm1_bias", (d,)),
                        ("norm2_bias", (d,))]:
        setattr(layer, name, 0.3 * rng.standard_normal(shape))
    layer.norm1_weight = 1 + 0.3 * rng.standard_normal(d)
    layer.norm2_weight = 1 + 0.3 * rng.standard_normal(d)
    if layer.attention.bias:
        for k in "qkvo":
            setattr(layer.attention, f"b_{k}", 0.3 * rng.standard_normal(d))
    return layer


def _numeric(loss, a, h=1e-6):
    """d loss / d a by central differences, a perturbed in place."""
    g = np.empty_like(a)
    flat, out = a.reshape(-1), g.reshape(-1)
    for i in range(flat.size):
        keep = flat[i]
        flat[i] = keep + h
        hi = loss()
        flat[i] = keep - h
        lo = loss()
        flat[i] = keep
        out[i] = (hi - lo) / (2 * h)
    return g


def _close(got, want, what):
    """Central differences of a float64 loss of size ~10 with h = 1e-6
    carry ~1e-9 of rounding; b_k's true gradient is 0 (a shift of every
    score of a row), so the bound is 1e-6 relative plus 1e-7 absolute."""
    err = np.abs(got - want).max()
    bound = 1e-6 * np.abs(want).max() + 1e-7
    assert err < bound, f"{what}: error {err:.2e} > {bound:.2e}"


MASKS = {"none": (None, False), "causal": (None, True),
         "padding+causal": ("padding", True)}


@pytest.mark.parametrize("activation,norm_first,eps_in_sqrt", list(
    itertools.product(["relu", "gelu", "gelu_tanh"], [False, True],
                      [False, True])))
@pytest.mark.parametrize("masking", MASKS)
def test_backward_equals_finite_differences(activation, norm_first,
                                            eps_in_sqrt, masking):
    rng = np.random.default_rng(len(activation) + 3 * norm_first)
    layer = _layer(rng, activation=activation, norm_first=norm_first,
                   eps_in_sqrt=eps_in_sqrt, bias=True, layer_norm_eps=1e-5)
    x = rng.standard_normal((2, 5, 8))
    kind, causal = MASKS[masking]
    mask = attnpy.padding_mask([5, 3], 5) if kind else None
    c = rng.standard_normal(x.shape)   # loss = sum(c * y)

    def loss():
        return float((c * layer.forward(x, mask, causal=causal)).sum())

    loss()
    dx = layer.backward(c)
    grads = dict(layer.grads)
    agrads = dict(layer.attention.grads)
    _close(dx, _numeric(loss, x), "dx")
    for name in OWN:
        _close(grads[name], _numeric(loss, getattr(layer, "_" + name)), name)
    for name in ("W_q", "W_k", "W_v", "W_o", "b_q", "b_k", "b_v", "b_o"):
        _close(agrads[name],
               _numeric(loss, getattr(layer.attention, "_" + name)), name)


def test_grads_are_replaced_with_the_parameters_dtype_and_shapes():
    rng = np.random.default_rng(0)
    layer = attnpy.TransformerEncoderLayer(16, 4, 24, seed=0,
                                           dtype=np.float32)
    x = rng.standard_normal((3, 7, 16)).astype(np.float32)
    y = layer.forward(x, causal=True)
    dy = rng.standard_normal(y.shape).astype(np.float32)
    dx = layer.backward(dy)
    assert dx.dtype == np.float32 and dx.shape == x.shape
    assert list(layer.grads) == list(OWN)
    for name, g in layer.grads.items():
        assert g.dtype == np.float32, name
        assert g.shape == getattr(layer, name).shape, name
    # the float64 twin of the same layer agrees to float32's precision
    twin = attnpy.TransformerEncoderLayer(16, 4, 24, seed=0)
    twin.forward(x.astype(np.float64), causal=True)
    dx64 = twin.backward(dy.astype(np.float64))
    np.testing.assert_allclose(dx, dx64, rtol=2e-3, atol=2e-4)
    for name in OWN:
        np.testing.assert_allclose(layer.grads[name], twin.grads[name],
                                   rtol=2e-3, atol=5e-4)
    before = layer.grads
    layer.forward(x)
    layer.backward(np.zeros_like(dy))
    assert layer.grads is not before
    assert all(not g.any() for g in layer.grads.values())


def test_backward_uses_its_own_forward_call():
    """Calling the layer's attention on something else between forward
    and backward does not change the layer's gradients."""
    rng = np.random.default_rng(1)
    layer = _layer(rng, bias=True, activation="gelu")
    x, dy = rng.standard_normal((2, 2, 6, 8))
    layer.forward(x, causal=True)
    want = layer.backward(dy)
    want_grads = dict(layer.attention.grads)
    layer.forward(x, causal=True)
    layer.attention(rng.standard_normal((1, 3, 8)))
    np.testing.assert_array_equal(layer.backward(dy), want)
    for k, g in want_grads.items():
        np.testing.assert_array_equal(layer.attention.grads[k], g)


@pytest.mark.parametrize("cross", [False, True])
def test_multi_head_attention_bias_backward(cross):
    rng = np.random.default_rng(7)
    mha = attnpy.MultiHeadAttention(8, 2, seed=1, bias=True)
    for k in "qkvo":
        setattr(mha, f"b_{k}", rng.standard_normal(8))
    X = rng.standard_normal((2, 4, 8))
    mem = rng.standard_normal((2, 6, 8)) if cross else X
    c = rng.standard_normal(X.shape)

    def loss():
        return float((c * mha(X, mem, mem if cross else None,
                              causal=not cross)).sum())

    loss()
    d = mha.backward(c)
    grads = dict(mha.grads)
    assert sorted(grads) == ["W_k", "W_o", "W_q", "W_v",
                             "b_k", "b_o", "b_q", "b_v"]
    dX = d[0] if cross else d
    _close(dX, _numeric(loss, X), "dX")
    if cross:
        _close(d[1] + d[2], _numeric(loss, mem), "d_memory")
    for k in "qkvo":
        _close(grads[f"b_{k}"], _numeric(loss, mha._b_o if k == "o"
                                         else getattr(mha, f"_b_{k}")),
               f"b_{k}")
    # b_o's gradient is the column sum of d_output, exactly
    np.testing.assert_allclose(grads["b_o"], c.sum(axis=(0, 1)),
                               rtol=1e-14, atol=1e-14)


def test_stacked_tutorial_layers_same_draws_with_padding():
    """Two layers drawn one after the other (the tutorial's draws, in its
    order, layer by layer), under the tutorial's padding mask
    (mask[:, None, None, :]; no row fully masked): 1e-11 in float64."""
    np.random.seed(11)
    layers = [attnpy.TransformerEncoderLayer(64, 4, 96) for _ in range(2)]
    x = np.random.randn(3, 12, 64)
    np.random.seed(11)
    tutorial = []
    for _ in range(2):
        Wq, Wk, Wv, Wo = R.tutorial_init_weights(64)
        W1 = np.random.randn(64, 96) * np.sqrt(2.0 / 64)
        W2 = np.random.randn(96, 64) * np.sqrt(2.0 / 96)
        tutorial.append((Wq, Wk, Wv, Wo, W1, W2))
    np.testing.assert_array_equal(np.random.randn(3, 12, 64), x)
    keep = (np.arange(12)[None, :] < np.array([12, 7, 2])[:, None])
    mask = keep[:, None, None, :].astype(float)
    want, got = x, x
    for (Wq, Wk, Wv, Wo, W1, W2), layer in zip(tutorial, layers):
        def mha(X, m, W=(Wq, Wk, Wv, Wo)):
            return R.tutorial_multi_head_attention(X, *W, 4, m)
        want = R.tutorial_encoder_layer(want, mha, W1, np.zeros(96), W2,
                                        np.zeros(64), mask)
        got = layer.forward(got, mask)
    assert np.abs(got - want).max() < 1e-11


def test_backward_errors_name_the_argument():
    layer = attnpy.TransformerEncoderLayer(16, 2, 32, seed=0)
    with pytest.raises(RuntimeError, match=r"TransformerEncoderLayer."
                       r"backward: no forward call to differentiate"):
        layer.backward(np.ones((2, 5, 16)))
    layer.forward(np.ones((2, 5, 16)))
    with pytest.raises(ValueError, match=r"TransformerEncoderLayer.backward: "
                       r"d_out must have the shape of the last forward "
                       r"call's output \(2, 5, 16\), got \(2, 5, 15\)"):
        layer.backward(np.ones((2, 5, 15)))
    with pytest.raises(TypeError, match=r"TransformerEncoderLayer.backward: "
                       r"d_out"):
        layer.backward("gradient")
    # only a forward call that succeeded can be differentiated
    with pytest.raises(ValueError, match=r"x must have shape"):
        layer.forward(np.ones((2, 5, 12)))
    with pytest.raises(RuntimeError, match=r"no forward call"):
        layer.backward(np.ones((2, 5, 16)))
    with pytest.raises(ValueError, match=r"TransformerEncoderLayer: W2 must "
                       r"have shape \(32, 16\), got \(16, 32\)"):
        layer.W2 = np.ones((16, 32))
    with pytest.raises(ValueError, match=r"TransformerEncoderLayer: b1 must "
                       r"have shape \(32,\), got \(16,\)"):
        layer.b1 = np.ones(16)


def test_float32_input_to_a_float64_layer_is_differentiated_in_float64():
    rng = np.random.default_rng(2)
    layer = _layer(rng, activation="gelu_tanh", norm_first=True)
    x32 = rng.standard_normal((2, 4, 8)).astype(np.float32)
    dy = rng.standard_normal((2, 4, 8))
    y = layer.forward(x32, causal=True)
    assert y.dtype == np.float64
    dx = layer.backward(dy)
    grads = dict(layer.grads)
    layer.forward(x32.astype(np.float64), causal=True)
    np.testing.assert_array_equal(dx, layer.backward(dy))
    for k, g in grads.items():
        np.testing.assert_array_equal(g, layer.grads[k])


@pytest.mark.parametrize("args,exc,msg", [
    ((-1, 2, 8), ValueError, r"TransformerEncoderLayer: d_model must be "
                             r">= 0, got -1"),
    ((16.5, 2, 8), TypeError, r"TransformerEncoderLayer: d_model must be "
                              r"an integer, got float"),
    ((16, 2, -3), ValueError, r"TransformerEncoderLayer: d_ff must be >= 0"),
])
def test_constructor_errors_name_the_argument(args, exc, msg):
    with pytest.raises(exc, match=msg):
        attnpy.TransformerEncoderLayer(*args)
