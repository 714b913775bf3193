"""Decoding: the split-K decode path of attention, merge_attention,
KVCache and the token-by-token example (rotary_embedding:
tests/positional/test_rotary.py).

merge_attention is checked against attention over all keys, the decode
path against the reference and bitwise over thread counts.
"""
import importlib.util
import os

import numpy as np
import pytest

import attnpy
from attnpy import reference as ref

from _arrays import TOLERANCES, layouts

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def close(got, want, dtype=None):
    rtol, atol = TOLERANCES[np.dtype(dtype or got.dtype)]
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


# ---------------------------------------------------------------------------
# merge_attention
# ---------------------------------------------------------------------------

def partial(Q, K, V, mask=None):
    """(out, lse) of attention over these keys, by the reference."""
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    with np.errstate(divide="ignore"):
        m = np.max(s, axis=-1, initial=-np.inf)
        lse = np.where(m == -np.inf, -np.inf,
                       np.log(np.sum(np.exp(s - np.where(
                           m == -np.inf, 0, m)[..., None]), axis=-1))
                       + np.where(m == -np.inf, 0, m))
    return ref.attention(Q, K, V, mask=mask), lse.astype(Q.dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("parts", [1, 2, 3])
def test_merge_equals_attention_over_all_keys(dtype, parts):
    rng = np.random.default_rng(4)
    Q = rng.standard_normal((2, 3, 5, 8)).astype(dtype)
    K = rng.standard_normal((2, 3, 40, 8)).astype(dtype)
    V = rng.standard_normal((2, 3, 40, 6)).astype(dtype)
    mask = rng.random((5, 40)) < 0.6
    mask[0] = False                                    # a fully masked row
    cuts = np.linspace(0, 40, parts + 1).astype(int)
    outs, lses = zip(*(partial(Q, K[..., a:b, :], V[..., a:b, :],
                               mask[:, a:b])
                       for a, b in zip(cuts[:-1], cuts[1:])))
    out, lse = attnpy.merge_attention(outs, lses)
    assert out.dtype == dtype and lse.dtype == dtype
    assert out.shape == (2, 3, 5, 6) and lse.shape == (2, 3, 5)
    close(out, attnpy.attention(Q, K, V, mask=mask))
    close(lse, partial(Q, K, V, mask)[1].astype(dtype))
    assert np.all(out[..., 0, :] == 0) and np.all(lse[..., 0] == -np.inf)
    r_out, r_lse = ref.merge_attention(outs, lses)
    close(out, r_out)
    close(lse, r_lse)


def test_merge_layouts_and_dtypes():
    rng = np.random.default_rng(11)
    outs = [rng.standard_normal((2, 3, 4)) for _ in range(3)]
    lses = [rng.standard_normal((2, 3)) * 3 for _ in range(3)]
    want = ref.merge_attention(outs, lses)
    for (name, o), (_, x) in zip(layouts(outs[1]), layouts(lses[2])):
        got = attnpy.merge_attention([outs[0], o, outs[2]],
                                     [lses[0], lses[1], x])
        close(got[0], want[0])
        close(got[1], want[1])
    # float16 parts stay float16 (the lses of 16-bit results are float32);
    # int parts convert to float64
    o16 = [o.astype(np.float16) for o in outs]
    got = attnpy.merge_attention(o16, [x.astype(np.float32) for x in lses])
    assert got[0].dtype == np.float16 and got[1].dtype == np.float32
    want16 = ref.merge_attention(o16, [x.astype(np.float32) for x in lses])
    assert want16[0].dtype == np.float16
    np.testing.assert_allclose(got[0], want16[0], rtol=2e-3, atol=1e-3)
    assert attnpy.merge_attention([np.ones((2, 3), int)],
                                  [np.zeros(2, int)])[0].dtype == np.float64
    # every part's dtype counts, however many parts: a float64 lse last
    # of 12 float32 parts makes the result float64, as in the reference
    outs = [rng.standard_normal((2, 4)).astype(np.float32) for _ in range(12)]
    lses = [rng.standard_normal(2).astype(np.float32) for _ in range(11)]
    lses.append(rng.standard_normal(2))
    got, want = attnpy.merge_attention(outs, lses), ref.merge_attention(outs, lses)
    assert got[0].dtype == want[0].dtype == np.float64
    close(got[0], want[0])


def test_merge_special_values_and_broadcasting():
    # a partial of weight 0 is skipped (its NaN stays out); NaN lse -> NaN
    outs = [np.full((3, 2), np.nan), np.ones((3, 2))]
    lses = [np.array([-np.inf, 0.0, -np.inf]), np.array([0.5, np.nan, -np.inf])]
    for fn in (attnpy.merge_attention, ref.merge_attention):
        out, lse = fn(outs, lses)
        np.testing.assert_array_equal(out[0], [1, 1])
        assert lse[0] == 0.5 and np.isnan(lse[1]) and np.isnan(out[1]).all()
        np.testing.assert_array_equal(out[2], [0, 0])
        assert lse[2] == -np.inf
    # leading dims broadcast, one stacked array works as a sequence
    rng = np.random.default_rng(5)
    o = rng.standard_normal((2, 4, 3, 5))
    lq = rng.standard_normal((4, 3))
    a = attnpy.merge_attention(o, [lq, lq[:1]])
    b = ref.merge_attention(o, [lq, lq[:1]])
    assert a[0].shape == (4, 3, 5) and a[1].shape == (4, 3)
    close(a[0], b[0])
    close(a[1], b[1])


def test_merge_errors():
    with pytest.raises(ValueError, match="merge_attention: 2 outs but 1"):
        attnpy.merge_attention([np.zeros((2, 3))] * 2, [np.zeros(2)])
    with pytest.raises(ValueError, match="merge_attention: nothing"):
        attnpy.merge_attention([], [])
    with pytest.raises(ValueError, match=r"merge_attention: .*lses\[1\]"):
        attnpy.merge_attention([np.zeros((2, 3))] * 2,
                               [np.zeros(2), np.zeros(3)])
    with pytest.raises(TypeError, match="merge_attention"):
        attnpy.merge_attention(3, 4)


# ---------------------------------------------------------------------------
# the decode path of attention (1 <= L <= 4)
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("L", [1, 2, 4, 5])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_decode_path_matches_reference(L, dtype):
    rng = np.random.default_rng(6)
    S, E = 1500, 64                     # several key chunks per head
    Q = rng.standard_normal((2, 4, L, E)).astype(dtype)
    K = rng.standard_normal((2, 1, S, E)).astype(dtype)  # one K/V head
    V = rng.standard_normal((2, 1, E, S)).astype(dtype).swapaxes(-1, -2)
    pad = attnpy.padding_mask(np.array([S, 700]), S)     # (2, 1, 1, S)
    bias = rng.standard_normal((L, S)).astype(dtype)
    for kw in (dict(), dict(mask=pad), dict(bias=bias, causal=True),
               dict(causal="bottom_right", mask=pad),
               dict(mask=np.zeros((L, S), bool), fully_masked="uniform")):
        got = attnpy.attention(Q, K, V, **kw)
        close(got, ref.attention(Q, K, V, **kw))


def test_decode_path_bitwise_over_threads_and_with_weights():
    rng = np.random.default_rng(7)
    Q = rng.standard_normal((1, 1, 1, 128)).astype(np.float32)
    K, V = rng.standard_normal((2, 1, 1, 5000, 128)).astype(np.float32)
    outs = []
    for n in (1, 2, 3):
        attnpy.set_num_threads(n)
        outs.append(attnpy.attention(Q, K, V).tobytes())
    assert outs[0] == outs[1] == outs[2]
    out, w = attnpy.scaled_dot_product_attention(Q, K, V)
    assert out.tobytes() == outs[0]
    close(w, ref.scaled_dot_product_attention(Q, K, V)[1])


# ---------------------------------------------------------------------------
# KVCache
# ---------------------------------------------------------------------------

def test_kv_cache_appends_views_without_copies():
    rng = np.random.default_rng(8)
    cache = attnpy.KVCache(2, 3, 10, 4, value_dim=5)
    assert (cache.length, cache.max_len, cache.dtype) == (0, 10, np.float32)
    assert cache.keys.shape == (2, 3, 0, 4) and cache.values.shape == (2, 3, 0, 5)
    k1 = rng.standard_normal((2, 3, 6, 4))
    v1 = rng.standard_normal((2, 3, 6, 5))
    K1, V1 = cache.append(k1, v1)
    k2, v2 = rng.standard_normal((2, 3, 1, 4)), rng.standard_normal((2, 3, 1, 5))
    K2, V2 = cache.append(k2, v2)
    assert cache.length == 7 and K2.shape == (2, 3, 7, 4)
    np.testing.assert_array_equal(K2, np.concatenate([k1, k2], 2).astype(np.float32))
    np.testing.assert_array_equal(V2, np.concatenate([v1, v2], 2).astype(np.float32))
    # the same storage every time: no copy, no reallocation
    assert np.shares_memory(K1, K2) and np.shares_memory(V1, V2)
    assert np.shares_memory(cache.keys, K2)
    with pytest.raises(ValueError, match="read-only"):
        K2[0, 0, 0, 0] = 1.0
    cache.reset()
    assert cache.length == 0
    K3, _ = cache.append(k2, v2)
    assert np.shares_memory(K3, K1)
    np.testing.assert_array_equal(K3, k2.astype(np.float32))
    assert "length=1" in repr(cache) and "max_len=10" in repr(cache)


def test_kv_cache_errors():
    cache = attnpy.KVCache(1, 2, 4, 8, dtype=np.float64)
    cache.append(np.zeros((1, 2, 3, 8)), np.zeros((1, 2, 3, 8)))
    with pytest.raises(ValueError, match=r"KVCache.append: the cache is full"
                       r".*3 of max_len=4.*2 more"):
        cache.append(np.zeros((1, 2, 2, 8)), np.zeros((1, 2, 2, 8)))
    assert cache.length == 3                 # a failed append changes nothing
    with pytest.raises(ValueError, match=r"k must have shape \(1, 2, T, 8\)"):
        cache.append(np.zeros((1, 2, 1, 7)), np.zeros((1, 2, 1, 8)))
    with pytest.raises(ValueError, match="k has 1 positions but v has 2"):
        cache.append(np.zeros((1, 2, 1, 8)), np.zeros((1, 2, 2, 8)))
    with pytest.raises(TypeError, match="KVCache.append: v has dtype complex"):
        cache.append(np.zeros((1, 2, 1, 8)), np.zeros((1, 2, 1, 8), complex))
    with pytest.raises(TypeError, match="KVCache: dtype"):
        attnpy.KVCache(1, 1, 4, 8, dtype=np.int32)
    with pytest.raises(ValueError, match="KVCache: max_len must be >= 0"):
        attnpy.KVCache(1, 1, -1, 8)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_decoding_with_the_cache_equals_the_causal_pass(dtype):
    rng = np.random.default_rng(9)
    B, H, T, E = 2, 4, 40, 16
    Q, K, V = rng.standard_normal((3, B, H, T, E)).astype(dtype)
    full = attnpy.attention(Q, K, V, causal=True)
    cache = attnpy.KVCache(B, H, T, E, dtype=dtype)
    cache.append(K[..., :8, :], V[..., :8, :])
    steps = [attnpy.attention(Q[..., :8, :], cache.keys, cache.values,
                              causal="bottom_right")]
    for t in range(8, T):
        Kc, Vc = cache.append(K[..., t:t + 1, :], V[..., t:t + 1, :])
        steps.append(attnpy.attention(Q[..., t:t + 1, :], Kc, Vc,
                                      causal="bottom_right"))
    close(np.concatenate(steps, axis=-2), full)


def test_example_decode_kv_cache(capsys):
    path = os.path.join(ROOT, "examples", "decode_kv_cache.py")
    spec = importlib.util.spec_from_file_location("decode_kv_cache", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    err, scale = mod.decode_vs_full()
    assert 0 <= err <= 1e-4 * scale
    assert mod.main()
    assert "same as recomputing the full pass each step: True" in \
        capsys.readouterr().out
