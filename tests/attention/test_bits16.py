"""16-bit data (float16, bfloat16): a query row's bits do not depend on
what else is in the call, and 16-bit inputs are never copied whole.

Row i of one call (its output, its lse, its row of dQ) must be bitwise
equal to the same row computed alone, inside another block of query rows,
or in split calls, under 1 to 4 threads, on every instruction set the CPU
has (each set against itself); decoding token by token from a 16-bit
KVCache gives exactly the bits of one full causal pass. And a float16
causal attention over 65,536 tokens allocates nothing beyond its output
(NumPy reports its allocations to tracemalloc, so a conversion copy of Q,
K or V would show).
"""
import tracemalloc

import numpy as np
import pytest

import attnpy
from attnpy import _core
from test_bits import ISAS   # the instruction sets this CPU has

DTYPES = ("float16", "bfloat16")


def np_dtype(name):
    if name == "float16":
        return np.dtype(np.float16)
    import ml_dtypes  # the test extra has it
    return np.dtype(ml_dtypes.bfloat16)


@pytest.fixture(params=ISAS)
def isa(request):
    saved = _core.isa()
    _core.set_isa(request.param)
    yield request.param
    _core.set_isa(saved)


def amx_e(name, E):
    """bfloat16 with E = 32: the "amx" set takes its scores from AMX tiles
    only when E is a multiple of 32; float16 keeps the small E."""
    return 32 if name == "bfloat16" else E


def same_bits(a, b):
    """Same dtype, shape and bits (NaN payloads and signed zeros included)."""
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    u = {2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize]
    return np.array_equal(a.view(u), b.view(u))


def data(rng, name, B, H, L, S, E, Hkv=None):
    dt = np_dtype(name)
    Hkv = Hkv or H
    return (rng.standard_normal((B, H, L, E)).astype(dt),
            (2 * rng.standard_normal((B, Hkv, S, E))).astype(dt),
            rng.standard_normal((B, Hkv, S, E)).astype(dt))


VARIANTS = [
    {},
    {"window": (40, 0)},
    {"alibi_slopes": np.array([0.5, 0.125])},
    {"softcap": 5.0},
    {"enable_gqa": True},
]


@pytest.mark.parametrize("name", DTYPES)
@pytest.mark.parametrize("variant", range(len(VARIANTS)))
def test_kv_cache_decode_is_the_causal_pass(isa, name, variant):
    """Token by token from a 16-bit KVCache == one full causal pass, bitwise,
    with the variants; query blocks and every thread count too."""
    rng = np.random.default_rng(variant)
    kw = dict(VARIANTS[variant])
    H, Hkv, L, E = 2, 1 if kw.get("enable_gqa") else 2, 150, 16
    E = amx_e(name, E)
    if kw.get("alibi_slopes") is not None:
        kw["alibi_slopes"] = kw["alibi_slopes"].astype(np_dtype(name))
    Q, K, V = data(rng, name, 1, H, L, L, E, Hkv)
    attnpy.set_num_threads(1)
    full, lse = attnpy.attention(Q, K, V, causal=True, return_lse=True, **kw)
    assert full.dtype == np_dtype(name) and lse.dtype == np.float32
    for nt in (2, 3, 4):
        attnpy.set_num_threads(nt)
        assert same_bits(attnpy.attention(Q, K, V, causal=True, **kw), full), nt
    cache = attnpy.KVCache(1, Hkv, max_len=L, head_dim=E, dtype=np_dtype(name))
    for i in range(L):
        attnpy.set_num_threads(1 + i % 4)
        Kc, Vc = cache.append(K[:, :, i:i + 1], V[:, :, i:i + 1])
        assert Kc.dtype == np_dtype(name)
        o, l1 = attnpy.attention(Q[:, :, i:i + 1], Kc, Vc,
                                 causal="bottom_right", return_lse=True, **kw)
        assert same_bits(o[:, :, 0], full[:, :, i]), (isa, i)
        assert same_bits(l1[:, :, 0], lse[:, :, i]), (isa, i)
    # split calls: rows a..b-1 against keys 0..b-1, joined == the one call
    parts = [attnpy.attention(Q[:, :, a:b], K[:, :, :b], V[:, :, :b],
                              causal="bottom_right", **kw)
             for a, b in [(0, 1), (1, 3), (3, 70), (70, 117), (117, 150)]]
    assert same_bits(np.concatenate(parts, axis=2), full), isa


@pytest.mark.parametrize("name", DTYPES)
@pytest.mark.parametrize("policy", ["zero", "uniform", "nan"])
def test_row_alone_with_mask_bias_and_policies(isa, name, policy):
    """A row alone (L = 1, with its row of mask and bias) == the row inside
    the call, through attention, scaled_dot_product_attention and explain,
    fully masked rows included."""
    rng = np.random.default_rng(1)
    B, H, L, S, E = 2, 2, 19, 300, 8
    E = amx_e(name, E)
    Q, K, V = data(rng, name, B, H, L, S, E)
    mask = rng.random((B, 1, L, S)) < 0.7
    mask[:, :, 3] = False
    mask[1, :, 11] = False
    bias = rng.standard_normal((1, H, L, S)).astype(np_dtype(name))
    kw = dict(mask=mask, bias=bias, fully_masked=policy)
    attnpy.set_num_threads(2)
    full = attnpy.attention(Q, K, V, **kw)
    assert full.dtype == np_dtype(name)
    assert same_bits(attnpy.scaled_dot_product_attention(Q, K, V, **kw)[0], full)
    for b in range(B):
        trace = attnpy.explain(Q[b, 0], K[b, 0], V[b, 0], mask=mask[b, 0],
                               bias=bias[0, 0], fully_masked=policy)
        assert same_bits(np.asarray(trace.output), full[b, 0]), (isa, b)
    for i in (0, 3, 11, 16, L - 1):
        attnpy.set_num_threads(1 + i % 4)
        o = attnpy.attention(Q[:, :, i:i + 1], K, V, mask=mask[:, :, i:i + 1],
                             bias=bias[:, :, i:i + 1], fully_masked=policy)
        assert same_bits(o[:, :, 0], full[:, :, i]), (isa, policy, i)


@pytest.mark.parametrize("name", DTYPES)
def test_long_rows_split_over_threads(isa, name):
    """One head, one row, many key chunks split over the threads: the row's
    bits are those of the row inside a longer Q, whatever the thread count."""
    rng = np.random.default_rng(2)
    Q, K, V = data(rng, name, 1, 1, 6, 20000, 64)
    attnpy.set_num_threads(1)
    want = attnpy.attention(Q, K, V, return_lse=True)
    rows = [(nt, i) for nt in (1, 2, 3, 4) for i in (0, 5)]
    for nt, i in rows:
        attnpy.set_num_threads(nt)
        got = attnpy.attention(Q[:, :, i:i + 1], K, V, return_lse=True)
        assert all(same_bits(g[:, :, 0], w[:, :, i]) for g, w in zip(got, want)), (isa, nt, i)


@pytest.mark.parametrize("name", DTYPES)
@pytest.mark.parametrize("causal", [False, True])
def test_dq_rows(isa, name, causal):
    """attention_backward in 16 bits: a row's dQ alone == inside the call,
    and dK, dV do not depend on the thread count."""
    rng = np.random.default_rng(3)
    B, H, L, S, E = 1, 2, 40, 300, 16
    E = amx_e(name, E)
    Q, K, V = data(rng, name, B, H, L, S, E)
    dout = rng.standard_normal(Q.shape).astype(np_dtype(name))
    c = "bottom_right" if causal else False
    attnpy.set_num_threads(2)
    out, lse = attnpy.attention(Q, K, V, causal=c, return_lse=True)
    grads = attnpy.attention_backward(dout, Q, K, V, out, lse, causal=c)
    assert all(g.dtype == np_dtype(name) for g in grads[:3])
    for nt in (1, 3):
        attnpy.set_num_threads(nt)
        again = attnpy.attention_backward(dout, Q, K, V, out, lse, causal=c)
        assert all(same_bits(a, b) for a, b in zip(again[:3], grads[:3])), nt
    for i in (0, 17, L - 1):
        attnpy.set_num_threads(1 + i % 4)
        s = slice(i, i + 1)
        n = i + S - L + 1 if causal else S
        dq1 = attnpy.attention_backward(dout[:, :, s], Q[:, :, s], K[:, :, :n], V[:, :, :n],
                                        out[:, :, s], lse[:, :, s], causal=c)[0]
        assert same_bits(dq1[:, :, 0], grads[0][:, :, i]), (isa, i)


def _extra_allocated(fn):
    """(result, peak bytes NumPy/Python allocated during fn beyond before)."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        out = fn()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return out, peak - before


SMALL_OBJECTS = 64 << 10      # the call's Python objects; any copy is MiBs


@pytest.mark.parametrize("L", [256, pytest.param(65536, marks=pytest.mark.slow)])
def test_no_hidden_copy(L):
    """float16 causal attention over 65,536 keys (the fast suite: the last
    256 queries; slow: all 65,536): the call allocates its output and
    nothing of Q, K or V's size."""
    rng = np.random.default_rng(4)
    S, E = 65536, 16
    Q = rng.standard_normal((1, 1, L, E)).astype(np.float16)
    K, V = (rng.standard_normal((1, 1, S, E)).astype(np.float16) for _ in range(2))
    attnpy.attention(Q[:, :, :4], K[:, :, :64], V[:, :, :64], causal="bottom_right")
    out, extra = _extra_allocated(
        lambda: attnpy.attention(Q, K, V, causal="bottom_right"))
    assert out.dtype == np.float16 and out.shape == Q.shape
    assert extra <= out.nbytes + SMALL_OBJECTS, (extra, out.nbytes, K.nbytes)
    # the same check sees a copy: one float32 view of K alone is far over
    _, copy = _extra_allocated(lambda: (attnpy.attention(Q, K, V, causal="bottom_right"),
                                        K.astype(np.float32)))
    assert copy > out.nbytes + SMALL_OBJECTS


_RSS_CHILD = r"""
import sys
import numpy as np
import attnpy
from test_bits16 import np_dtype

def status(key):          # kB lines of /proc/self/status
    with open("/proc/self/status") as f:
        return next(int(x.split()[1]) * 1024 for x in f if x.startswith(key))

rng = np.random.default_rng(5)
dt = np_dtype(sys.argv[1])
S, E, L = 65536, 128, 256
Q = rng.standard_normal((1, 1, L, E), dtype=np.float32).astype(dt)
K, V = (rng.standard_normal((1, 1, S, E), dtype=np.float32).astype(dt) for _ in range(2))
attnpy.attention(Q[:, :, :4], K[:, :, :64], V[:, :, :64], causal="bottom_right")
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")                      # the peak RSS (VmHWM) starts again from now
before = status("VmRSS:")
out = attnpy.attention(Q, K, V, causal="bottom_right")
print(status("VmHWM:") - before, out.nbytes, K.nbytes)
"""

SCRATCH = 2 << 20     # the threads' block scratch and page rounding


@pytest.mark.parametrize("name", DTYPES)
def test_no_hidden_copy_in_the_process_peak(name):
    """The same claim by the process's peak RSS (which also sees memory
    that C code takes with malloc): 256 queries against 65,536 keys of
    E = 128 (16 MiB each for K and V) need no more than their output and
    the threads' scratch."""
    import os
    import subprocess
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.abspath(list(attnpy.__path__)[0]))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [root, here] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    p = subprocess.run([sys.executable, "-c", _RSS_CHILD, name], capture_output=True,
                       text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stderr
    extra, out_bytes, k_bytes = (int(x) for x in p.stdout.split())
    assert extra <= out_bytes + SCRATCH < k_bytes, (extra, out_bytes, k_bytes)


@pytest.mark.parametrize("name", DTYPES)
def test_infinite_values_behind_zero_weights(isa, name):
    """A key of weight 0 contributes nothing, even where its V row is
    infinite (0 x inf is not NaN here): rows that mask the key are finite
    and close to the call without it (other key blocks: other roundings);
    rows that see it are infinite (feature 0) or NaN (feature 3: inf -
    inf); a row alone gives the same bits. Ev = 32: on "amx" the tiles'
    P V, which sums such a row again over the keys of nonzero weight."""
    rng = np.random.default_rng(5)
    B, H, L, S, E = 1, 2, 20, 150, 32
    Q, K, V = data(rng, name, B, H, L, S, E)
    V[:, :, 70] = np.inf
    V[:, :, 71, 3] = -np.inf
    mask = np.ones((L, S), bool)
    mask[::2, 70:72] = False            # even rows never see keys 70, 71
    out = attnpy.attention(Q, K, V, mask=mask)
    keep = np.r_[0:70, 72:S]
    without = attnpy.attention(Q, K[:, :, keep], V[:, :, keep],
                               mask=mask[:, keep])
    even = out[:, :, ::2].astype(np.float32)
    assert np.isfinite(even).all(), isa
    np.testing.assert_allclose(even, without[:, :, ::2].astype(np.float32),
                               rtol=2e-2, atol=2e-2)
    assert np.isposinf(out[:, :, 1::2, 0].astype(np.float32)).all(), isa
    assert np.isnan(out[:, :, 1::2, 3].astype(np.float32)).all(), isa
    for i in (0, 1, 7, L - 1):
        o = attnpy.attention(Q[:, :, i:i + 1], K, V, mask=mask[i:i + 1])
        assert same_bits(o[:, :, 0], out[:, :, i]), (isa, i)
