"""float16 and bfloat16 through the attention functions.

The promise checked here: a 16-bit input is read in 16 bits by the kernels
(never converted as a whole), everything is accumulated in float32 and a
16-bit result is rounded once. So every call on 16-bit inputs gives the
bits of the same call on the inputs upcast to float32, rounded once to the
result dtype -- on every instruction set, with one exception: the opt-in
"amx" set takes the scores of bfloat16 Q and K (E a multiple of 32, at
most 256) from AMX tiles, with their own rounding. Those calls are
compared with a tolerance (one bfloat16 rounding step for 16-bit results,
1e-5 relative for the float32 lse) instead of bit for bit.
"""
import itertools
import os
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest

import attnpy
import attnpy.dask  # noqa: F401  (the dask front end is checked below)
from attnpy import _core

import ml_dtypes  # noqa: E402 (the test extra has it)

F16 = np.dtype(np.float16)
BF16 = np.dtype(ml_dtypes.bfloat16)
F32, F64 = np.dtype(np.float32), np.dtype(np.float64)
ALL = [F16, BF16, F32, F64]
SIXTEEN = [F16, BF16]


ISAS = attnpy.isas()


def bf16_dot(Q, K):
    """Does this call take AMX scores (the module docstring)?"""
    E = Q.shape[-1]
    return (_core.isa() == "amx" and Q.dtype == BF16 and K.dtype == BF16
            and E % 32 == 0 and E <= 256)


def expected_dtype(*dts):
    """The rule, written out independently of the binding: float64 wins,
    16-bit pairs of one kind stay, anything else (float16 with bfloat16
    too) is float32."""
    if F64 in dts:
        return F64
    if all(d == F16 for d in dts):
        return F16
    if all(d == BF16 for d in dts):
        return BF16
    return F32


def bits(a):
    """the array's bytes as unsigned integers (NaN-safe bit equality)"""
    a = np.ascontiguousarray(a)
    return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.itemsize])


def assert_bits(got, want, approx=False):
    """the same bits, or with `approx` the same within one rounding step
    of the dtype (bfloat16: 2^-8 relative; float32 lse: 1e-5)"""
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape
    if not approx:
        assert np.array_equal(bits(got), bits(want))
        return
    rtol = 2.0 ** -7 if got.dtype == BF16 else 1e-5
    np.testing.assert_allclose(got.astype(F64), want.astype(F64), rtol=rtol,
                               atol=rtol * np.abs(want.astype(F64)).max())


def qkv(dtype, shape=(2, 3, 37, 24), S=45, Ev=20, seed=0):
    rng = np.random.default_rng(seed)
    B, H, L, E = shape
    Q = rng.standard_normal((B, H, L, E))
    K = rng.standard_normal((B, H, S, E))
    V = rng.standard_normal((B, H, S, Ev))
    return tuple(a.astype(dtype) for a in (Q, K, V))


def up(*arrs):
    return tuple(None if a is None else np.asarray(a).astype(F32)
                 for a in arrs)


# -- result dtypes -----------------------------------------------------------

@pytest.mark.parametrize("dts", list(itertools.product(ALL, repeat=3)),
                         ids=lambda d: "-".join(x.name for x in d))
def test_result_dtype_every_combination(dts):
    Q, K, V = (a.astype(d) for a, d in zip(qkv(F64, (1, 1, 3, 4), 5, 2),
                                            dts))
    want = expected_dtype(*dts)
    out, lse = attnpy.attention(Q, K, V, return_lse=True)
    assert out.dtype == want
    assert lse.dtype == (F32 if want in SIXTEEN else want)
    o2, w = attnpy.scaled_dot_product_attention(Q, K, V)
    assert o2.dtype == w.dtype == want
    # NumPy agrees wherever it can promote the three (it cannot promote
    # float16 with bfloat16)
    try:
        np_rt = np.result_type(*dts)
    except TypeError:
        assert F16 in dts and BF16 in dts
    else:
        assert np_rt == want


def test_integers_and_bool_keep_the_old_rule():
    Q, K, V = qkv(F64, (1, 1, 3, 4), 5, 4)
    assert attnpy.attention(Q.astype(np.int8), K.astype(F32),
                            V.astype(F32)).dtype == F32
    assert attnpy.attention(Q.astype(np.int64), K.astype(F32),
                            V.astype(F32)).dtype == F64
    assert attnpy.attention(Q.astype(np.uint8), K.astype(F16),
                            V.astype(F16)).dtype == F16
    assert attnpy.attention(Q.astype(np.int64), K.astype(BF16),
                            V.astype(BF16)).dtype == F64
    assert attnpy.attention(Q.astype(bool), K.astype(bool),
                            V.astype(bool)).dtype == F64


# -- the same bits as the float32 call, rounded once --------------------------

@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("dt", SIXTEEN, ids=str)
def test_attention_is_the_float32_call_rounded_once(dt, isa):
    _core.set_isa(isa)
    Q, K, V = qkv(dt)
    rng = np.random.default_rng(1)
    mask = rng.random((37, 45)) < 0.8
    bias = rng.standard_normal((3, 37, 45)).astype(dt)
    for kw in ({}, {"causal": True}, {"mask": mask, "bias": bias},
               {"window": (5, 2), "softcap": 4.0,
                "alibi_slopes": [0.5, 0.25, 0.125]},
               {"causal": "bottom_right"}):
        kw32 = dict(kw, bias=up(kw.get("bias"))[0]) if "bias" in kw else kw
        out, lse = attnpy.attention(Q, K, V, return_lse=True, **kw)
        o32, l32 = attnpy.attention(*up(Q, K, V), return_lse=True, **kw32)
        assert_bits(out, o32.astype(dt), bf16_dot(Q, K))
        assert_bits(lse, l32, bf16_dot(Q, K))


@pytest.mark.parametrize("dt", SIXTEEN, ids=str)
def test_thread_count_and_batch_invariant(dt):
    """the same bits with 1 or 3 threads, and a row decoded alone (L = 1)
    as inside the long Q (the bfloat16 dot-product path included)"""
    Q, K, V = qkv(dt, (2, 2, 33, 16), 70, 16)
    attnpy.set_num_threads(1)
    one = attnpy.attention(Q, K, V, causal="bottom_right")
    attnpy.set_num_threads(3)
    assert_bits(attnpy.attention(Q, K, V, causal="bottom_right"), one)
    row = attnpy.attention(Q[:, :, -1:], K, V, causal="bottom_right")
    assert_bits(row, one[:, :, -1:])


@pytest.mark.parametrize("dt", SIXTEEN, ids=str)
def test_sdpa_and_explain_weights(dt):
    Q, K, V = qkv(dt, (1, 2, 9, 8), 11, 8)
    out, w = attnpy.scaled_dot_product_attention(Q, K, V, causal=True)
    o32, w32 = attnpy.scaled_dot_product_attention(*up(Q, K, V), causal=True)
    approx = bf16_dot(Q, K)
    assert_bits(out, o32.astype(dt), approx)
    assert_bits(w, w32.astype(dt), approx)
    tr = attnpy.explain(Q, K, V, causal=True)
    assert_bits(tr.weights, w)
    assert_bits(tr.output, out)
    tr32 = attnpy.explain(*up(Q, K, V), causal=True)
    assert tr.scores.dtype == F32           # the steps in float32
    assert_bits(tr.scores, tr32.scores, approx)


@pytest.mark.parametrize("dt", SIXTEEN, ids=str)
def test_explain_walkthrough_of_16bit_weights(dt):
    """the walk-through's row-sum check allows the 16-bit rounding of the
    weights (one rounding each: a row of sum 1 moves by at most 2^-11 for
    float16, 2^-8 for bfloat16), and no more"""
    X = np.random.default_rng(8).standard_normal((30, 4)).astype(dt)
    tr = attnpy.explain(X, X, X)
    dev = np.abs(tr.weights.astype(F64).sum(-1) - 1).max()
    assert 0 < dev <= (2.0 ** -10 if dt == F16 else 2.0 ** -7)
    assert "each row sums to 1: yes" in str(tr)
    assert f"{dt.name} rounding" in str(tr)


@pytest.mark.parametrize("dt", SIXTEEN, ids=str)
def test_mixed_16bit_inputs(dt):
    """float16 Q with bfloat16 K: float32 result, each read in 16 bits"""
    Q, K, V = qkv(F32, (1, 2, 9, 8), 11, 8)
    Qh, Kb, Vh = Q.astype(F16), K.astype(BF16), V.astype(dt)
    out = attnpy.attention(Qh, Kb, Vh)
    assert_bits(out, attnpy.attention(*up(Qh, Kb, Vh)))


@pytest.mark.parametrize("dt", SIXTEEN, ids=str)
def test_16bit_with_float64_is_the_float64_call(dt):
    Q, K, V = qkv(dt, (1, 2, 9, 8), 11, 8)
    V64 = V.astype(F64)
    out = attnpy.attention(Q, K, V64)
    assert_bits(out, attnpy.attention(Q.astype(F64), K.astype(F64), V64))


@pytest.mark.parametrize("dt", SIXTEEN, ids=str)
def test_decode_path_and_kvcache(dt):
    cache = attnpy.KVCache(2, 3, max_len=64, head_dim=24, dtype=dt)
    assert cache.dtype == dt and cache.keys.dtype == dt
    Q, K, V = qkv(dt, (2, 3, 1, 24), 40, 24)
    Kc, Vc = cache.append(K, V)
    assert Kc.dtype == dt and np.array_equal(bits(Kc), bits(K))
    out = attnpy.attention(Q, Kc, Vc)           # L = 1: the decode kernel
    assert_bits(out, attnpy.attention(*up(Q, Kc, Vc)).astype(dt),
                bf16_dot(Q, Kc))
    Kc, Vc = cache.append(K[:, :, :3].astype(F64), V[:, :, :3])
    assert cache.length == 43 and Kc.dtype == dt


def test_kvcache_dtypes_and_errors():
    assert attnpy.KVCache(1, 1, 4, 2, dtype="bfloat16").dtype == BF16
    assert attnpy.KVCache(1, 1, 4, 2, dtype=np.float16).dtype == F16
    with pytest.raises(TypeError, match="float16, bfloat16, float32 or "
                                        "float64"):
        attnpy.KVCache(1, 1, 4, 2, dtype=np.int32)


@pytest.mark.parametrize("dt", SIXTEEN, ids=str)
def test_dask_is_the_float32_call_rounded_once(dt):
    import dask.array as da
    Q, K, V = qkv(dt, (1, 2, 40, 16), 48, 16)
    chunks = lambda a: da.from_array(a, chunks=(1, 1, 16, 16))  # noqa: E731
    out, lse = attnpy.dask.attention(chunks(Q), chunks(K), chunks(V),
                                     causal=True, return_lse=True)
    o32, l32 = attnpy.dask.attention(*(chunks(a) for a in up(Q, K, V)),
                                     causal=True, return_lse=True)
    assert out.dtype == dt and lse.dtype == F32
    assert_bits(out.compute(), o32.compute().astype(dt), bf16_dot(Q, K))
    assert_bits(lse.compute(), l32.compute(), bf16_dot(Q, K))


# -- out= ---------------------------------------------------------------------

@pytest.mark.parametrize("dt", SIXTEEN, ids=str)
def test_out_may_be_wider(dt):
    Q, K, V = qkv(dt, (1, 2, 9, 8), 11, 8)
    o32 = attnpy.attention(*up(Q, K, V))
    approx = bf16_dot(Q, K)
    for wide in (F32, F64):
        out = np.full(o32.shape, np.nan, dtype=wide)
        r = attnpy.attention(Q, K, V, out=out)
        assert r is out
        assert_bits(out, o32.astype(wide), approx)   # not rounded to 16 bits
    strided = np.zeros(o32.shape[:-1] + (16,), F64)[..., ::2]
    attnpy.attention(Q, K, V, out=strided)
    assert_bits(np.ascontiguousarray(strided), o32.astype(F64), approx)
    assert np.array_equal(strided, out)          # the float64 out above
    w = np.empty((1, 2, 9, 11), F32)
    _, w2 = attnpy.scaled_dot_product_attention(Q, K, V, weights_out=w)
    assert w2 is w and w.dtype == F32


def test_out_may_not_be_narrower_or_other_16bit():
    Q, K, V = qkv(F16, (1, 1, 3, 4), 5, 4)
    with pytest.raises(TypeError, match=r"^attention: out has dtype "
                                        r"bfloat16 but the result has dtype "
                                        r"float16"):
        attnpy.attention(Q, K, V, out=np.empty((1, 1, 3, 4), BF16))
    with pytest.raises(TypeError, match="out has dtype float16 but the "
                                        "result has dtype float32"):
        attnpy.attention(*up(Q, K, V), out=np.empty((1, 1, 3, 4), F16))


# -- gradients -------------------------------------------------------------

@pytest.mark.parametrize("dts", [(F16, F16, F16), (BF16, BF16, BF16),
                                 (F16, BF16, F32), (BF16, F32, F16)],
                         ids=lambda d: "-".join(x.name for x in d))
def test_gradients_in_each_inputs_dtype(dts):
    Q, K, V = (a.astype(d) for a, d in zip(qkv(F32, (2, 2, 9, 8), 11, 8),
                                            dts))
    out, lse = attnpy.attention(Q, K, V, causal=True, return_lse=True)
    dout = np.ones_like(out)
    grads = attnpy.attention_backward(dout, Q, K, V, out, lse, causal=True)
    assert [g.dtype for g in grads] == list(dts)
    # the float32 backward on the upcast operands, rounded once
    g32 = attnpy.attention_backward(*up(dout, Q, K, V, out), lse,
                                    causal=True)
    for g, w, d in zip(grads, g32, dts):
        assert_bits(g, w.astype(d))


@pytest.mark.parametrize("dt", ALL, ids=str)
def test_gradients_of_long_and_strided_rows(dt):
    """rowsum(dout * out), the backward's first step, over rows longer
    than the chunk it reads at a time (136 > 128), four rows at a time and
    the three left over (L = 11), from contiguous or strided dout and out:
    16 bits give the float32 backward on the upcast operands rounded
    once, and every dtype the same bits from either layout"""
    rng = np.random.default_rng(5)
    Q, K, V, dout = (rng.standard_normal((1, 2, 11, 136)).astype(dt)
                     for _ in range(4))
    out, lse = attnpy.attention(Q, K, V, return_lse=True)
    want = attnpy.attention_backward(dout, Q, K, V, out, lse)
    if dt in SIXTEEN:
        g32 = attnpy.attention_backward(*up(dout, Q, K, V, out), lse)
        for g, w in zip(want, g32):
            assert_bits(g, w.astype(dt))
    # every other column of arrays twice as wide: rows of stride 2
    d2, o2 = (np.repeat(a, 2, axis=-1)[..., ::2] for a in (dout, out))
    assert d2.strides[-1] == 2 * dout.strides[-1]
    for g, w in zip(attnpy.attention_backward(d2, Q, K, V, o2, lse), want):
        assert_bits(g, w)


@pytest.mark.parametrize("dt", SIXTEEN, ids=str)
def test_summed_gradients_are_rounded_once(dt):
    """K, V broadcast (GQA): dK, dV summed in float32, then rounded"""
    rng = np.random.default_rng(3)
    Q = rng.standard_normal((2, 4, 9, 8)).astype(dt)
    K, V = rng.standard_normal((2, 2, 2, 11, 8)).astype(dt)
    bias = rng.standard_normal((9, 11)).astype(dt)
    kw = dict(causal=True, enable_gqa=True, bias=bias)
    out, lse = attnpy.attention(Q, K, V, return_lse=True, **kw)
    dout = rng.standard_normal(out.shape).astype(dt)
    grads = attnpy.attention_backward(dout, Q, K, V, out, lse,
                                      bias_grad=True, **kw)
    g32 = attnpy.attention_backward(*up(dout, Q, K, V, out), lse,
                                    bias_grad=True,
                                    **dict(kw, bias=up(bias)[0]))
    assert [g.dtype for g in grads] == [dt] * 4
    for g, w in zip(grads, g32):
        assert_bits(g, w.astype(dt))


# -- no whole-array copy ----------------------------------------------------

@pytest.mark.parametrize("dt", SIXTEEN, ids=str)
def test_no_conversion_copy(dt):
    """The inputs are 3 MB of 16-bit data; a float32 copy of any one would
    be 2 MB. The only NumPy allocation is the output (1 MB)."""
    rng = np.random.default_rng(4)
    shape = (1, 4, 2048, 64)
    Q, K, V = (rng.standard_normal(shape, dtype=np.float32).astype(dt)
               for _ in range(3))
    attnpy.attention(Q[:, :, :8], K[:, :, :8], V[:, :, :8])  # warm up
    tracemalloc.start()
    try:
        out = attnpy.attention(Q, K, V, causal=True)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert out.dtype == dt
    assert peak <= out.nbytes + 64 * 1024, (peak, out.nbytes)
    # into a 16-bit out=: nothing allocated at all
    tracemalloc.start()
    try:
        attnpy.attention(Q, K, V, causal=True, out=out)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= 64 * 1024, peak


@pytest.mark.parametrize("dt", SIXTEEN, ids=str)
def test_backward_no_conversion_copy(dt):
    """16-bit Q, K, V, out, dout read in place: the backward pass allocates
    its three 16-bit gradients (and its float32 lse input is used as is)"""
    rng = np.random.default_rng(7)
    shape = (1, 4, 1024, 64)
    Q, K, V = (rng.standard_normal(shape, dtype=np.float32).astype(dt)
               for _ in range(3))
    out, lse = attnpy.attention(Q, K, V, causal=True, return_lse=True)
    dout = rng.standard_normal(shape, dtype=np.float32).astype(dt)
    tracemalloc.start()
    try:
        grads = attnpy.attention_backward(dout, Q, K, V, out, lse,
                                          causal=True)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [g.dtype for g in grads] == [dt] * 3
    assert peak <= 3 * Q.nbytes + 64 * 1024, (peak, Q.nbytes)


@pytest.mark.parametrize("dt", SIXTEEN, ids=str)
@pytest.mark.parametrize("which", [0, 1, 2], ids=["Q", "K", "V"])
def test_every_memory_layout(dt, which):
    """strided, transposed, reversed, byteswapped and unaligned 16-bit
    operands give the contiguous call's bits"""
    from _arrays import layouts
    args = list(qkv(dt, (2, 1, 7, 8), 9, 6, seed=5))
    want = attnpy.attention(*args, causal=True)
    seen = []
    for name, a in layouts(args[which]):
        got = attnpy.attention(*(args[:which] + [a] + args[which + 1:]),
                               causal=True)
        assert_bits(got, want)
        seen.append(name)
    assert {"transposed", "strided", "byteswapped", "unaligned"} <= set(seen)


@pytest.mark.parametrize("dt", SIXTEEN, ids=str)
def test_strided_views_are_not_copied(dt):
    """K given transposed (a (E, S) array seen as (S, E)) and V a strided
    view: both read in place, only the output is allocated"""
    rng = np.random.default_rng(6)
    Q = rng.standard_normal((4, 1024, 64), dtype=np.float32).astype(dt)
    KT = rng.standard_normal((4, 64, 1024), dtype=np.float32).astype(dt)
    V2 = rng.standard_normal((4, 1024, 128), dtype=np.float32).astype(dt)
    K, V = KT.swapaxes(-1, -2), V2[..., ::2]
    attnpy.attention(Q[:, :4], K[:, :4], V[:, :4])
    tracemalloc.start()
    try:
        out = attnpy.attention(Q, K, V)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= out.nbytes + 64 * 1024, (peak, out.nbytes)
    assert_bits(out, attnpy.attention(Q, np.ascontiguousarray(K),
                                      np.ascontiguousarray(V)))


# -- recognising bfloat16, and the messages -----------------------------------

def test_bfloat16_recognised_without_importing_ml_dtypes():
    code = (
        "import sys, numpy as np, attnpy\n"
        "x = np.ones((2, 3, 4), np.float32)\n"
        "attnpy.attention(x, x, x)\n"
        "attnpy.KVCache(1, 1, 4, 4)\n"
        "assert 'ml_dtypes' not in sys.modules, 'imported too early'\n"
        "import ml_dtypes\n"
        "b = x.astype(ml_dtypes.bfloat16)\n"
        "o = attnpy.attention(b, b, b)\n"
        "assert o.dtype == b.dtype, o.dtype\n"
        "print('ok')\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [os.getcwd()] + [p for p in [env.get("PYTHONPATH")] if p])
    r = subprocess.run([sys.executable, "-c", code], capture_output=True,
                       text=True, env=env, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


@pytest.mark.parametrize("bad", [np.complex64, object, "U2",
                                 np.dtype([("a", "u1"), ("b", "u1")])],
                         ids=str)
def test_error_names_the_accepted_dtypes(bad):
    x = np.ones((2, 3))
    with pytest.raises(TypeError, match=r"^attention: K has dtype .*: "
                       r"expected float16, bfloat16, float32 or float64"):
        attnpy.attention(x, x.astype(bad), x)


def test_other_two_byte_void_is_not_bfloat16():
    x = np.ones((2, 3))
    with pytest.raises(TypeError, match="expected float16, bfloat16"):
        attnpy.attention(x, x, np.zeros((2, 3), "V2"))


@pytest.mark.parametrize("dt", SIXTEEN, ids=str)
def test_reference_twin_takes_16bit_like_attnpy(dt):
    """attnpy.reference.attention computes either 16-bit dtype in float32
    (float64 beside float64), as attnpy does before its one rounding: the
    twin's result rounded to dt is within one rounding of attnpy's (AMX
    bfloat16 scores differ in the last bits), and the twin equals its own
    call on the inputs widened exactly to float32."""
    from attnpy import reference as ref
    Q, K, V = qkv(dt)
    rng = np.random.default_rng(3)
    mask = (rng.random((37, 45)) < 0.8).astype(dt)
    bias = rng.standard_normal((3, 37, 45)).astype(dt)
    for kw in ({}, {"causal": True, "bias": bias}, {"mask": mask}):
        want = ref.attention(Q, K, V, **kw)
        assert want.dtype == F32
        wide = {k: up(v)[0] for k, v in kw.items() if k != "causal"}
        assert np.array_equal(want, ref.attention(*up(Q, K, V),
                                                  **dict(kw, **wide)))
        got = attnpy.attention(Q, K, V, **kw)
        np.testing.assert_allclose(got.astype(F32), want,
                                   rtol=2.0 ** -7 if dt == BF16 else 2e-3,
                                   atol=1e-3)
    out, w = ref.scaled_dot_product_attention(Q, K, V.astype(F64))
    assert out.dtype == w.dtype == F64
    np.testing.assert_allclose(out, attnpy.attention(Q, K, V.astype(F64)),
                               rtol=1e-12, atol=1e-12)
