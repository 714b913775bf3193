"""MultiHeadAttention without need_weights takes the fused kernel.

No public attention entry point that was not asked for the weights may
allocate an (L, S) array: NumPy reports its allocations to tracemalloc, so
the traced peak of a call at L = S = 2048 must stay far below one L x S
float32 array (16 MiB), while the weights path, measured the same way,
must exceed it (so the measurement itself is shown to work).
"""
import tracemalloc

import numpy as np
import pytest

import attnpy

L = 2048
D, H = 64, 4
LS_BYTES = L * L * 4           # one (L, S) float32 array


def by_hand(mha, q, k, v, **kw):
    Q = attnpy.split_heads(np.matmul(q, mha.W_q), mha.num_heads)
    K = attnpy.split_heads(np.matmul(k, mha.W_k), mha.num_heads)
    V = attnpy.split_heads(np.matmul(v, mha.W_v), mha.num_heads)
    return attnpy.combine_heads(attnpy.attention(Q, K, V, **kw)) @ mha.W_o


def traced_peak(f):
    f()                                   # first call: lazy imports, threads
    tracemalloc.start()
    try:
        f()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, L, D), dtype=np.float32)
    mem = rng.standard_normal((1, L, D), dtype=np.float32)
    mha = attnpy.MultiHeadAttention(D, H, seed=0, dtype=np.float32)
    Q, K, V = (rng.standard_normal((1, H, L, D // H), dtype=np.float32)
               for _ in range(3))
    return dict(x=x, mem=mem, mha=mha, Q=Q, K=K, V=V,
                mask=attnpy.causal_mask(L),
                pad=attnpy.padding_mask([L // 2], L),
                bias=np.zeros((L, L), dtype=np.float32))


CALLS = {
    "mha self": lambda d: d["mha"](d["x"]),
    "mha causal": lambda d: d["mha"](d["x"], causal=True),
    "mha mask": lambda d: d["mha"](d["x"], mask=d["mask"]),
    "mha padding mask": lambda d: d["mha"](d["x"], mask=d["pad"]),
    "mha cross": lambda d: d["mha"](d["x"], d["mem"]),
    "mha cross causal": lambda d: d["mha"](d["x"], d["mem"], causal="bottom_right"),
    "attention": lambda d: attnpy.attention(d["Q"], d["K"], d["V"]),
    "attention causal": lambda d: attnpy.attention(d["Q"], d["K"], d["V"], causal=True),
    "attention mask": lambda d: attnpy.attention(d["Q"], d["K"], d["V"], mask=d["mask"]),
    "attention bias": lambda d: attnpy.attention(d["Q"], d["K"], d["V"], bias=d["bias"]),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_no_LxS_allocation(data, name):
    peak = traced_peak(lambda: CALLS[name](data))
    assert peak < LS_BYTES / 4, (
        f"{name}: traced peak {peak / 2**20:.1f} MiB; one (L, S) array is "
        f"{LS_BYTES / 2**20:.0f} MiB")


def test_weights_path_is_measured(data):
    # the same measurement sees the (heads, L, S) weights when asked for
    peak = traced_peak(lambda: data["mha"](data["x"], need_weights=True))
    assert peak >= H * LS_BYTES


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kw", [{}, {"causal": True}, {"causal": "bottom_right"},
                                {"mask": "pad"}])
@pytest.mark.parametrize("rows", [5, 300])   # below / above the packed size
def test_same_numbers_as_by_hand(dtype, kw, rows):
    rng = np.random.default_rng(rows)
    mha = attnpy.MultiHeadAttention(32, 4, seed=1, dtype=dtype)
    x = rng.standard_normal((2, rows, 32)).astype(dtype)
    kw = dict(kw)
    if kw.get("mask") == "pad":
        kw["mask"] = attnpy.padding_mask([rows, rows // 2], rows)
    tol = 1e-12 if dtype == np.float64 else 2e-5
    ref = by_hand(mha, x, x, x, **kw)
    got = mha(x, **kw)
    assert got.dtype == ref.dtype and got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)
    out, w = mha(x, need_weights=True, **kw)
    np.testing.assert_allclose(out, ref, rtol=tol, atol=tol)
    out2, w2 = mha.forward(x, kw.get("mask"), causal=kw.get("causal", False))
    np.testing.assert_array_equal(out2, out)
    np.testing.assert_array_equal(w2, w)


def test_cross_attention_broadcast_batch():
    rng = np.random.default_rng(3)
    mha = attnpy.MultiHeadAttention(16, 2, seed=2)
    q = rng.standard_normal((3, 7, 16))
    kv = rng.standard_normal((1, 9, 16))      # one memory for every query
    np.testing.assert_allclose(mha(q, kv), by_hand(mha, q, kv, kv),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("how", ["assign", "in place"])
def test_packed_projection_follows_the_weights(how):
    rng = np.random.default_rng(4)
    mha = attnpy.MultiHeadAttention(32, 4, seed=3)
    x = rng.standard_normal((1, 400, 32))     # big enough for the packed path
    before = mha(x)
    new = rng.standard_normal((32, 32))
    if how == "assign":
        mha.W_k = new
    else:
        mha.W_k[...] = new
    after = mha(x)
    assert not np.allclose(after, before)
    np.testing.assert_allclose(after, by_hand(mha, x, x, x), rtol=1e-12,
                               atol=1e-12)


def test_mask_broadcasting_beyond_the_input_batch():
    # a mask with more leading dims than x: the output takes its batch shape
    rng = np.random.default_rng(5)
    mha = attnpy.MultiHeadAttention(8, 2, seed=4)
    x = rng.standard_normal((1, 6, 8))
    mask = rng.random((3, 1, 6, 6)) > 0.3
    got = mha(x, mask=mask)
    out, _ = mha(x, mask=mask, need_weights=True)
    assert got.shape == (3, 6, 8)
    np.testing.assert_allclose(got, out, rtol=1e-12, atol=1e-12)
