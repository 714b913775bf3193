"""TransformerEncoderLayer against the tutorial's own code (same draws
under np.random.seed) and against attnpy.reference's float64 layer for
every option; MultiHeadAttention(bias=True); errors naming the argument."""
import itertools

import numpy as np
import pytest

import attnpy
from attnpy import reference as R


def _tutorial_layer(d_model, num_heads, d_ff):
    """The tutorial's TransformerEncoderLayer.__init__ draws, in order,
    and its forward (seed 002), from NumPy's global random state."""
    Wq, Wk, Wv, Wo = R.tutorial_init_weights(d_model)
    W1 = np.random.randn(d_model, d_ff) * np.sqrt(2.0 / d_model)
    b1 = np.zeros(d_ff)
    W2 = np.random.randn(d_ff, d_model) * np.sqrt(2.0 / d_ff)
    b2 = np.zeros(d_model)

    def forward(x, mask=None):
        def mha(X, m):
            return R.tutorial_multi_head_attention(X, Wq, Wk, Wv, Wo,
                                                   num_heads, m)
        return R.tutorial_encoder_layer(x, mha, W1, b1, W2, b2, mask)
    return forward


@pytest.mark.parametrize("seed", [0, 42])
def test_the_tutorials_example_same_draws_same_numbers(seed):
    # the tutorial: d_model 512, 8 heads, d_ff 2048, x = randn(2, 10, 512)
    np.random.seed(seed)
    layer = attnpy.TransformerEncoderLayer(d_model=512, num_heads=8,
                                           d_ff=2048)
    x = np.random.randn(2, 10, 512)
    np.random.seed(seed)
    tutorial = _tutorial_layer(512, 8, 2048)
    x_t = np.random.randn(2, 10, 512)
    np.testing.assert_array_equal(x, x_t)   # the same number of draws
    out = layer.forward(x)
    assert out.shape == (2, 10, 512) and out.dtype == np.float64
    assert np.abs(out - tutorial(x)).max() < 1e-11
    mask = R.tutorial_create_causal_mask(10)
    want = tutorial(x, mask)
    assert np.abs(layer.forward(x, mask) - want).max() < 1e-11
    assert np.abs(layer.forward(x, causal=True) - want).max() < 1e-11


def test_seeded_layers_repeat_and_float32_follows():
    a = attnpy.TransformerEncoderLayer(32, 4, 64, seed=3)
    b = attnpy.TransformerEncoderLayer(32, 4, 64, seed=3)
    c = attnpy.TransformerEncoderLayer(32, 4, 64, seed=3, dtype=np.float32)
    np.testing.assert_array_equal(a.W2, b.W2)
    assert c.W1.dtype == np.float32 and c.attention.W_q.dtype == np.float32
    x = np.random.default_rng(0).standard_normal((2, 6, 32))
    np.testing.assert_array_equal(a.forward(x), b.forward(x))
    y32 = c.forward(x.astype(np.float32))
    assert y32.dtype == np.float32
    np.testing.assert_allclose(y32, a.forward(x), rtol=1e-4, atol=1e-4)


def _randomise(layer, rng):
    """Every parameter random (biases and norms too), so that each one
    matters in a comparison."""
    d, f = layer.d_model, layer.d_ff
    for name, shape in [("W1", (d, f)), ("b1", (f,)), ("W2", (f, d)),
                        ("b2", (d,)), ("norm1_bias", (d,)),
                        ("norm2_bias", (d,))]:
        setattr(layer, name, rng.standard_normal(shape) * 0.3)
    layer.norm1_weight = 1 + 0.3 * rng.standard_normal(d)
    layer.norm2_weight = 1 + 0.3 * rng.standard_normal(d)
    if layer.attention.bias:
        for k in "qkvo":
            setattr(layer.attention, f"b_{k}", rng.standard_normal(d) * 0.3)


def _params(layer):
    p = {k: getattr(layer, k) for k in ("W1", "b1", "W2", "b2",
                                        "norm1_weight", "norm1_bias",
                                        "norm2_weight", "norm2_bias")}
    for k in "qkvo":
        p[f"W_{k}"] = getattr(layer.attention, f"W_{k}")
        p[f"b_{k}"] = getattr(layer.attention, f"b_{k}")
    return p


OPTIONS = list(itertools.product(["relu", "gelu", "gelu_tanh"],
                                 [False, True], [False, True],
                                 [False, True]))


@pytest.mark.parametrize("activation,norm_first,eps_in_sqrt,bias", OPTIONS)
def test_every_option_matches_the_reference(activation, norm_first,
                                            eps_in_sqrt, bias):
    rng = np.random.default_rng(hash((activation, norm_first)) % 1000)
    opts = dict(activation=activation, norm_first=norm_first,
                layer_norm_eps=1e-5, eps_in_sqrt=eps_in_sqrt)
    layer = attnpy.TransformerEncoderLayer(24, 3, 40, seed=1, bias=bias,
                                           **opts)
    _randomise(layer, rng)
    x = rng.standard_normal((2, 7, 24))
    lengths = attnpy.padding_mask([7, 4], 7)
    for mask, causal in [(None, False), (None, True), (lengths, False)]:
        got = layer.forward(x, mask, causal=causal)
        want = R.transformer_encoder_layer(x, _params(layer), 3, mask,
                                           causal=causal, **opts)
        assert np.abs(got - want).max() < 1e-11


def test_multi_head_attention_bias():
    rng = np.random.default_rng(5)
    mha = attnpy.MultiHeadAttention(16, 4, seed=0, bias=True)
    assert repr(mha).endswith("bias=True)")
    np.testing.assert_array_equal(mha.b_q, np.zeros(16))
    plain = attnpy.MultiHeadAttention(16, 4, seed=0)
    assert plain.b_o is None
    np.testing.assert_array_equal(plain.W_o, mha.W_o)   # same draws
    for k in "qkvo":
        setattr(mha, f"b_{k}", rng.standard_normal(16))
    for L in (5, 300):   # three products, and the packed (d, 3d) one
        x = rng.standard_normal((2, L, 16))
        Q, K, V = (R.split_heads(x @ getattr(mha, f"W_{k}")
                                 + getattr(mha, f"b_{k}"), 4)
                   for k in "qkv")
        want = R.combine_heads(R.attention(Q, K, V, causal=True)) @ mha.W_o
        want += mha.b_o
        np.testing.assert_allclose(mha(x, causal=True), want, rtol=1e-12,
                                   atol=1e-12)
        np.testing.assert_allclose(mha.forward(x, causal=True)[0], want,
                                   rtol=1e-12, atol=1e-12)


def test_errors_name_the_argument():
    layer = attnpy.TransformerEncoderLayer(16, 2, 32, seed=0)
    with pytest.raises(ValueError, match=r"TransformerEncoderLayer.forward: "
                       r"x must have shape \(..., seq, d_model=16\), got "
                       r"\(2, 5, 12\)"):
        layer.forward(np.ones((2, 5, 12)))
    with pytest.raises(ValueError, match=r"TransformerEncoderLayer: W1 must "
                       r"have shape \(16, 32\), got \(32, 16\)"):
        layer.W1 = np.ones((32, 16))
    with pytest.raises(ValueError, match=r"TransformerEncoderLayer: "
                       r"norm2_bias must have shape \(16,\), got \(15,\)"):
        layer.norm2_bias = np.ones(15)
    with pytest.raises(ValueError, match=r"TransformerEncoderLayer: "
                       r"activation must be 'relu', 'gelu' or 'gelu_tanh', "
                       r"got 'tanh'"):
        attnpy.TransformerEncoderLayer(16, 2, 32, activation="tanh")
    with pytest.raises(TypeError, match=r"TransformerEncoderLayer: "
                       r"norm_first must be True or False"):
        attnpy.TransformerEncoderLayer(16, 2, 32, norm_first="yes")
    with pytest.raises(ValueError, match=r"TransformerEncoderLayer: "
                       r"layer_norm_eps must be >= 0"):
        attnpy.TransformerEncoderLayer(16, 2, 32, layer_norm_eps=-1)
    with pytest.raises(TypeError, match=r"TransformerEncoderLayer: seed "
                       r"must be None, an int"):
        attnpy.TransformerEncoderLayer(16, 2, 32, seed=1.5)
    with pytest.raises(ValueError, match=r"MultiHeadAttention: d_model=16 "
                       r"is not divisible by num_heads=3"):
        attnpy.TransformerEncoderLayer(16, 3, 32)
    with pytest.raises(ValueError, match=r"MultiHeadAttention: b_q cannot "
                       r"be set on a layer made with bias=False"):
        layer.attention.b_q = np.zeros(16)
    mha = attnpy.MultiHeadAttention(16, 2, bias=True)
    with pytest.raises(ValueError, match=r"MultiHeadAttention: b_v must have "
                       r"shape \(16,\), got \(16, 1\)"):
        mha.b_v = np.zeros((16, 1))
    with pytest.raises(TypeError, match=r"MultiHeadAttention: bias must be "
                       r"True or False"):
        attnpy.MultiHeadAttention(16, 2, bias=1)
