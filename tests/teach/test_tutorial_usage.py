"""The NumPy attention tutorial used with attnpy instead of its own code.

Each test drives attnpy the way the tutorial drives its functions and checks
that attnpy gives the same arrays as attnpy.reference and as the tutorial's
own formulas (attnpy.reference.tutorial_*).
"""
import numpy as np
import pytest

import attnpy
from attnpy import reference as ref

CLOSE = dict(rtol=1e-12, atol=1e-14)


def tutorial_example_qkv():
    """The tutorial's "attention in action" inputs: seed 42, X (1, 3, 4),
    W_q, W_k, W_v = randn(4, 2) * 0.1."""
    np.random.seed(42)
    X = np.array([[[1.0, 0.0, 1.0, 0.0],
                   [0.0, 1.0, 0.0, 1.0],
                   [1.0, 1.0, 0.0, 0.0]]])
    d_model, d_k = 4, 2
    W_q = np.random.randn(d_model, d_k) * 0.1
    W_k = np.random.randn(d_model, d_k) * 0.1
    W_v = np.random.randn(d_model, d_k) * 0.1
    return np.matmul(X, W_q), np.matmul(X, W_k), np.matmul(X, W_v)


def test_attention_in_action():
    Q, K, V = tutorial_example_qkv()
    output, weights = attnpy.scaled_dot_product_attention(Q, K, V)
    assert output.shape == (1, 3, 2) and weights.shape == (1, 3, 3)
    assert output.dtype == np.float64 and weights.dtype == np.float64
    t_out, t_w = ref.tutorial_scaled_dot_product_attention(Q, K, V)
    np.testing.assert_allclose(weights, t_w, **CLOSE)
    np.testing.assert_allclose(output, t_out, **CLOSE)
    r_out, r_w = ref.scaled_dot_product_attention(Q, K, V)
    np.testing.assert_allclose(weights, r_w, **CLOSE)
    np.testing.assert_allclose(output, r_out, **CLOSE)
    # what print(np.round(weights[0], 3)) shows is the tutorial's print
    np.testing.assert_array_equal(np.round(weights[0], 3),
                                  np.round(t_w[0], 3))
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, rtol=1e-15)
    # tiny projections: scores near 0, weights near uniform
    assert np.abs(weights - 1 / 3).max() < 0.01


def test_attention_in_action_with_the_tutorial_mask():
    Q, K, V = tutorial_example_qkv()
    mask = attnpy.create_causal_mask(3)
    output, weights = attnpy.scaled_dot_product_attention(Q, K, V, mask)
    t_out, t_w = ref.tutorial_scaled_dot_product_attention(Q, K, V, mask)
    np.testing.assert_allclose(weights, t_w, **CLOSE)
    np.testing.assert_allclose(output, t_out, **CLOSE)
    assert (weights[0][np.triu_indices(3, 1)] == 0).all()


def test_create_causal_mask_as_printed():
    mask = attnpy.create_causal_mask(5)
    # the "# Output:" comment under create_causal_mask(5) in the tutorial
    printed = [[1., 0., 0., 0., 0.],
               [1., 1., 0., 0., 0.],
               [1., 1., 1., 0., 0.],
               [1., 1., 1., 1., 0.],
               [1., 1., 1., 1., 1.]]
    assert mask.dtype == np.float64 and mask.shape == (5, 5)
    np.testing.assert_array_equal(mask, printed)
    np.testing.assert_array_equal(mask, ref.tutorial_create_causal_mask(5))
    assert str(mask) == str(ref.tutorial_create_causal_mask(5))


def test_softmax_drop_in():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4, 6)) * 5
    for axis in (-1, 0, 1, 2):
        np.testing.assert_allclose(attnpy.softmax(x, axis=axis),
                                   ref.tutorial_softmax(x, axis=axis),
                                   **CLOSE)


def tutorial_mha(d_model, num_heads, seed):
    """attnpy's and the tutorial's layers with the same weights: both drawn
    from np.random after np.random.seed(seed)."""
    np.random.seed(seed)
    mha = attnpy.MultiHeadAttention(d_model, num_heads)
    np.random.seed(seed)
    weights = ref.tutorial_init_weights(d_model)
    return mha, weights


def test_multi_head_attention_as_the_tutorial_drives_it():
    mha, (W_q, W_k, W_v, W_o) = tutorial_mha(8, 2, seed=0)
    # the same weights, bit for bit, as the tutorial's __init__ draws
    for mine, theirs in zip((mha.W_q, mha.W_k, mha.W_v, mha.W_o),
                            (W_q, W_k, W_v, W_o)):
        np.testing.assert_array_equal(mine, theirs)
    assert (mha.d_model, mha.num_heads, mha.d_k) == (8, 2, 4)

    batch, seq = 2, 5
    X = np.random.randn(batch, seq, 8)
    mask = attnpy.create_causal_mask(seq)
    for m in (None, mask):
        output, weights = mha.forward(X, m)
        assert output.shape == (batch, seq, 8)
        assert weights.shape == (batch, 2, seq, seq)   # (batch, heads, ...)
        t_out, t_w = ref.tutorial_multi_head_attention(X, W_q, W_k, W_v, W_o,
                                                       2, m)
        np.testing.assert_allclose(weights, t_w, **CLOSE)
        np.testing.assert_allclose(output, t_out, rtol=1e-12, atol=1e-13)
        # and the reference class, on the same weights
        r = ref.MultiHeadAttention(8, 2, seed=0)
        r.W_q, r.W_k, r.W_v, r.W_o = W_q, W_k, W_v, W_o
        r_out, r_w = r.forward(X, m)
        np.testing.assert_allclose(weights, r_w, **CLOSE)
        np.testing.assert_allclose(output, r_out, rtol=1e-12, atol=1e-13)
    # causal=True is the tutorial's mask
    o_c, w_c = mha.forward(X, causal=True)
    o_m, w_m = mha.forward(X, mask)
    np.testing.assert_allclose(o_c, o_m, **CLOSE)
    np.testing.assert_allclose(w_c, w_m, **CLOSE)


def test_split_and_combine_heads_round_trip():
    mha, _ = tutorial_mha(12, 3, seed=1)
    x = np.random.randn(2, 7, 12)
    h = mha.split_heads(x)
    assert h.shape == (2, 3, 7, 4)          # (batch, heads, seq, d_k)
    np.testing.assert_array_equal(h, ref.tutorial_split_heads(x, 3))
    np.testing.assert_array_equal(attnpy.split_heads(x, 3), h)
    back = mha.combine_heads(h)
    assert back.shape == (2, 7, 12)
    np.testing.assert_array_equal(back, x)
    np.testing.assert_array_equal(back, ref.tutorial_combine_heads(h))
    np.testing.assert_array_equal(attnpy.combine_heads(attnpy.split_heads(
        x, 3)), x)
    # head h holds columns h*d_k : (h+1)*d_k
    np.testing.assert_array_equal(h[:, 1], x[:, :, 4:8])


def test_positional_encoding_as_the_tutorial_calls_it():
    pe = attnpy.positional_encoding(100, 64)
    assert pe.shape == (100, 64) and pe.dtype == np.float64
    t = ref.tutorial_positional_encoding(100, 64)
    np.testing.assert_allclose(pe, t, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(pe[0, :8].round(3), t[0, :8].round(3))
    np.testing.assert_array_equal(pe[1, :8].round(3), t[1, :8].round(3))
    # the usual use: add it to the embeddings
    x = np.random.default_rng(3).standard_normal((2, 10, 64))
    want = x + t[:10]
    got = attnpy.add_positional_encoding(x.copy())
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_fully_masked_row_drop_in_note():
    """A row that may see no key: the tutorial's -1e9 fill gives uniform
    weights; attnpy's default gives zeros, fully_masked='uniform' gives the
    tutorial's numbers."""
    Q, K, V = tutorial_example_qkv()
    mask = attnpy.create_causal_mask(3)
    mask[1] = 0
    t_out, t_w = ref.tutorial_scaled_dot_product_attention(Q, K, V, mask)
    out, w = attnpy.scaled_dot_product_attention(Q, K, V, mask,
                                                 fully_masked="uniform")
    np.testing.assert_allclose(w, t_w, **CLOSE)
    np.testing.assert_allclose(out, t_out, **CLOSE)
    out0, w0 = attnpy.scaled_dot_product_attention(Q, K, V, mask)
    assert (w0[0, 1] == 0).all() and (out0[0, 1] == 0).all()
    np.testing.assert_allclose(np.delete(w0, 1, axis=1),
                               np.delete(t_w, 1, axis=1), **CLOSE)


# ---------------------------------------------------------------------------
# the tutorial's TransformerEncoderLayer, built on attnpy
# ---------------------------------------------------------------------------

def encoder_weights(d_model, num_heads, d_ff, seed, mha_class):
    """The tutorial's TransformerEncoderLayer.__init__: the attention layer
    first, then W1, b1, W2, b2, all from np.random after np.random.seed."""
    np.random.seed(seed)
    mha = mha_class(d_model, num_heads)
    W1 = np.random.randn(d_model, d_ff) * np.sqrt(2.0 / d_model)
    b1 = np.zeros(d_ff)
    W2 = np.random.randn(d_ff, d_model) * np.sqrt(2.0 / d_ff)
    b2 = np.zeros(d_model)
    return mha, (W1, b1, W2, b2)


def attnpy_encoder_layer(x, mha, W1, b1, W2, b2, mask=None):
    """The encoder layer with every attention step done by attnpy."""
    attn_output, _ = mha.forward(x, mask)
    x = ref.tutorial_layer_norm(x + attn_output)
    ff = ref.tutorial_feed_forward(x, W1, b1, W2, b2)
    return ref.tutorial_layer_norm(x + ff)


@pytest.mark.parametrize("d_model,num_heads,d_ff,with_mask", [
    (512, 8, 2048, False),       # the tutorial's sizes and call
    (64, 4, 256, True),          # smaller, with the causal mask
])
def test_encoder_layer(d_model, num_heads, d_ff, with_mask):
    mha, ff = encoder_weights(d_model, num_heads, d_ff, 0,
                              attnpy.MultiHeadAttention)
    batch_size, seq_len = 2, 10
    x = np.random.randn(batch_size, seq_len, d_model)
    mask = attnpy.create_causal_mask(seq_len) if with_mask else None

    got = attnpy_encoder_layer(x, mha, *ff, mask=mask)
    assert got.shape == (batch_size, seq_len, d_model)

    # the same layer on attnpy.reference
    r_mha, r_ff = encoder_weights(d_model, num_heads, d_ff, 0,
                                  ref.MultiHeadAttention)
    for a, b in zip(ff, r_ff):
        np.testing.assert_array_equal(a, b)
    want = ref.tutorial_encoder_layer(x, r_mha.forward, *r_ff, mask=mask)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-11)

    # and on the tutorial's own multi-head attention code
    np.random.seed(0)
    W = ref.tutorial_init_weights(d_model)

    def tutorial_mha(x, mask):
        return ref.tutorial_multi_head_attention(x, *W, num_heads, mask)

    tut = ref.tutorial_encoder_layer(x, tutorial_mha, *ff, mask=mask)
    np.testing.assert_allclose(got, tut, rtol=1e-10, atol=1e-11)
    # layer norm: every position has mean 0 and std ~1
    np.testing.assert_allclose(got.mean(axis=-1), 0, atol=1e-12)
    np.testing.assert_allclose(got.std(axis=-1), 1, rtol=1e-5)
