"""A query row's results are the same bits whatever else is in the call.

Row i of one call (its output, its lse, its row of dQ) must be bitwise
equal to the same row computed alone (one query row), inside another
block of query rows, under 1 to 4 threads, and through attention,
scaled_dot_product_attention and explain, on every instruction set the
CPU has (each set against itself). The consequence users see: decoding
token by token from a KV cache gives exactly the bits of one full causal
pass.
"""
import numpy as np
import pytest

import attnpy
from attnpy import _core

ISAS = attnpy.isas()  # every set this machine runs (one list: runtime/isa.h)


@pytest.fixture(params=ISAS)
def isa(request):
    saved = _core.isa()
    saved_threads = attnpy.get_num_threads()
    _core.set_isa(request.param)
    yield request.param
    _core.set_isa(saved)
    attnpy.set_num_threads(saved_threads)


def same_bits(a, b):
    """Bitwise equality (NaN payloads and signed zeros included)."""
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    u = np.uint64 if a.dtype == np.float64 else np.uint32
    return np.array_equal(a.view(u), b.view(u))


def data(rng, dtype, B, H, L, S, E, Hkv=None):
    Hkv = Hkv or H
    Q = rng.standard_normal((B, H, L, E)).astype(dtype)
    K = (2 * rng.standard_normal((B, Hkv, S, E))).astype(dtype)
    V = rng.standard_normal((B, Hkv, S, E)).astype(dtype)
    return Q, K, V


VARIANTS = [
    {},
    {"window": (40, 0)},
    {"alibi_slopes": np.array([0.5, 0.125])},
    {"softcap": 5.0},
    {"enable_gqa": True},
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("variant", range(len(VARIANTS)))
def test_kv_cache_decode_is_the_causal_pass(isa, dtype, variant):
    """Token by token from a KVCache == one full causal pass, bitwise,
    with the variants; sub-blocks of queries and every thread count too."""
    rng = np.random.default_rng(variant)
    kw = dict(VARIANTS[variant])
    H, Hkv, L, E = 2, 1 if kw.get("enable_gqa") else 2, 150, 16
    if kw.get("alibi_slopes") is not None:
        kw["alibi_slopes"] = kw["alibi_slopes"].astype(dtype)
    Q, K, V = data(rng, dtype, 1, H, L, L, E, Hkv)
    attnpy.set_num_threads(1)
    full, lse = attnpy.attention(Q, K, V, causal=True, return_lse=True, **kw)
    for nt in (2, 3, 4):
        attnpy.set_num_threads(nt)
        assert same_bits(attnpy.attention(Q, K, V, causal=True, **kw), full)
    cache = attnpy.KVCache(1, Hkv, max_len=L, head_dim=E, dtype=dtype)
    for i in range(L):
        attnpy.set_num_threads(1 + i % 4)
        Kc, Vc = cache.append(K[:, :, i:i + 1], V[:, :, i:i + 1])
        # the new token sits at the cache's last position: bottom-right
        o, l1 = attnpy.attention(Q[:, :, i:i + 1], Kc, Vc,
                                 causal="bottom_right", return_lse=True, **kw)
        assert same_bits(o[:, :, 0], full[:, :, i]), (isa, i)
        assert same_bits(l1[:, :, 0], lse[:, :, i]), (isa, i)
    # query blocks starting anywhere: rows a..b-1 against keys 0..b-1
    for a, b in [(1, 3), (5, 70), (33, 150), (100, 117)]:
        o = attnpy.attention(Q[:, :, a:b], K[:, :, :b], V[:, :, :b],
                             causal="bottom_right", **kw)
        assert same_bits(o, full[:, :, a:b]), (isa, a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("policy", ["zero", "uniform", "nan"])
def test_row_alone_with_mask_bias_and_policies(isa, dtype, policy):
    """A row alone (with its row of mask and bias) == the row inside the
    call, through the three entry points, fully masked rows included."""
    rng = np.random.default_rng(1)
    B, H, L, S, E = 2, 2, 19, 300, 8
    Q, K, V = data(rng, dtype, B, H, L, S, E)
    mask = rng.random((B, 1, L, S)) < 0.7
    mask[:, :, 3] = False            # fully masked rows
    mask[1, :, 11] = False
    bias = rng.standard_normal((1, H, L, S)).astype(dtype)
    kw = dict(mask=mask, bias=bias, fully_masked=policy)
    attnpy.set_num_threads(2)
    full = attnpy.attention(Q, K, V, **kw)
    assert same_bits(attnpy.scaled_dot_product_attention(Q, K, V, **kw)[0],
                     full)
    trace = attnpy.explain(Q, K, V, **kw)
    assert same_bits(np.asarray(trace.output), full)
    for i in (0, 3, 11, 16, L - 1):
        attnpy.set_num_threads(1 + i % 4)
        o = attnpy.attention(Q[:, :, i:i + 1], K, V, mask=mask[:, :, i:i + 1],
                             bias=bias[:, :, i:i + 1], fully_masked=policy)
        assert same_bits(o[:, :, 0], full[:, :, i]), (isa, policy, i)
    # a masked row's uniform output is one function's: in a call of 8 rows
    # and alone, the same bits
    if policy == "uniform":
        o8 = attnpy.attention(Q[:, :, :8], K, V, mask=mask[:, :, :8],
                              fully_masked=policy)
        o1 = attnpy.attention(Q[:, :, 3:4], K, V, mask=mask[:, :, 3:4],
                              fully_masked=policy)
        assert same_bits(o8[:, :, 3], o1[:, :, 0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_long_rows_split_over_threads(isa, dtype):
    """One head, one row, many key chunks: the call splits the keys over
    the threads; the row's bits are those of the row inside a longer Q."""
    rng = np.random.default_rng(2)
    S, E = 20000, 64
    Q, K, V = data(rng, dtype, 1, 1, 6, S, E)
    attnpy.set_num_threads(1)
    full, lse = attnpy.attention(Q, K, V, return_lse=True)
    for nt in (1, 2, 3, 4):
        attnpy.set_num_threads(nt)
        for i in (0, 5):
            o, l1 = attnpy.attention(Q[:, :, i:i + 1], K, V, return_lse=True)
            assert same_bits(o[:, :, 0], full[:, :, i]), (isa, nt, i)
            assert same_bits(l1[:, :, 0], lse[:, :, i]), (isa, nt, i)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("causal", [False, True])
def test_dq_rows(isa, dtype, causal):
    """attention_backward: a row's dQ alone == inside the call."""
    rng = np.random.default_rng(3)
    B, H, L, S, E = 1, 2, 40, 300, 16
    Q, K, V = data(rng, dtype, B, H, L, S, E)
    dout = rng.standard_normal(Q.shape).astype(dtype)
    c = "bottom_right" if causal else False
    attnpy.set_num_threads(2)
    out, lse = attnpy.attention(Q, K, V, causal=c, return_lse=True)
    dq = attnpy.attention_backward(dout, Q, K, V, out, lse, causal=c)[0]
    for i in (0, 17, L - 1):
        attnpy.set_num_threads(1 + i % 4)
        s = slice(i, i + 1)
        # bottom-right alone: the row keeps its keys 0 .. i + S - L
        n = i + S - L + 1 if causal else S
        dq1 = attnpy.attention_backward(dout[:, :, s], Q[:, :, s],
                                        K[:, :, :n], V[:, :, :n],
                                        out[:, :, s], lse[:, :, s],
                                        causal=c)[0]
        assert same_bits(dq1[:, :, 0], dq[:, :, i]), (isa, i)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_zero_output_has_one_sign_alone_or_in_a_longer_q(isa, dtype):
    """Row 0's output is a negative number that underflows to zero as a
    later key block raises its max; another row of its query block sees a
    key block row 0 sees nothing of, which adds +0 to row 0's running
    output there but not when row 0 is computed alone (query blocks
    differ between sets, too). Every zero output is +0: the same bits."""
    big = 122.0 if dtype == np.float32 else 800.0
    S = 97
    K = np.zeros((S, 1), dtype)
    V = np.zeros((S, 1), dtype)
    K[0] = big * 80 / 122          # key block 0: row 0's max first
    V[1] = -1.0                    # weight ~exp(-80): a negative term
    K[48] = big                    # key block 1: a new max, the term -> -0
    for other in (1, 16, 32):
        Q = np.ones((other + 1, 1), dtype)
        M = np.zeros((other + 1, S), bool)
        M[0, [0, 1, 48]] = True
        M[other, 96] = True        # key block 2: another row only
        row0 = attnpy.attention(Q, K, V, mask=M, scale=1.0)[:1]
        alone = attnpy.attention(Q[:1], K, V, mask=M[:1], scale=1.0)
        assert same_bits(row0, alone), (isa, other, row0, alone)
        assert same_bits(alone, np.zeros_like(alone)), (isa, alone)
