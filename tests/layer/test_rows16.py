"""float16 and bfloat16 data in the row functions: softmax and
softmax_backward, rotary_embedding, merge_attention, layer_norm, gelu,
rms_norm, silu, swiglu, their backward functions and feed_forward.

The rule checked bit for bit: a call with 16-bit operands gives the
float32 call on the same values (widened exactly), with a 16-bit result
rounded once to nearest even; the result dtype is NumPy's result type of
the operands (float16 + bfloat16 -> float32); out= may be a wider float; a
gradient comes back in its 16-bit operand's dtype. And no whole-array
float32 copy of a 16-bit input is made (tracemalloc sees NumPy's
allocations)."""
import tracemalloc

import numpy as np
import pytest

import attnpy
from attnpy import _activations, reference

import ml_dtypes  # noqa: E402 (the test extra has it)
BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)
DT16 = [F16, BF16]


def bits_equal(got, want):
    """Same dtype and the same bits (any NaN equals any NaN)."""
    assert got.dtype == want.dtype and got.shape == want.shape
    g = np.asarray(got).view(np.uint16 if got.itemsize == 2 else np.uint32)
    w = np.asarray(want).view(g.dtype)
    nan = np.isnan(got.astype(np.float32)) & np.isnan(want.astype(np.float32))
    bad = (g != w) & ~nan
    assert not bad.any(), (got[bad][:5], want[bad][:5])


def data(rng, shape, dtype, scale=2.0, special=True):
    """Normals of `dtype`, with a few edges (NaN, inf, 0, large)."""
    a = (rng.standard_normal(shape) * scale).astype(np.float32)
    if special and a.size > 8:
        flat = a.reshape(-1)
        flat[rng.choice(a.size, 4, replace=False)] = [np.nan, np.inf, 0.0,
                                                      -300.0]
    return a.astype(dtype)


def f32(*arrays):
    return [None if a is None else a.astype(np.float32) for a in arrays]


def layouts(a):
    """a, a strided view and a transposed-then-back copy's view."""
    yield a
    big = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
    big[..., ::2] = a
    yield big[..., ::2]
    if a.ndim >= 2:
        yield np.swapaxes(np.ascontiguousarray(np.swapaxes(a, -1, -2)), -1, -2)


# ---------------------------------------------------------------------------
# one input, one output: the 16-bit call is the float32 call rounded once
# ---------------------------------------------------------------------------

UNARY = {  # name: (function, keyword arguments)
    "softmax": ("softmax", dict(axis=-1)),
    "softmax_axis0": ("softmax", dict(axis=0)),
    "rotary_embedding": ("rotary_embedding", dict(offset=3)),
    "rotary_interleaved": ("rotary_embedding", dict(interleaved=True)),
    "layer_norm": ("layer_norm", dict(eps=1e-5)),
    "layer_norm_sqrt": ("layer_norm", dict(eps=1e-5, eps_in_sqrt=True)),
    "gelu": ("gelu", {}),
    "gelu_tanh": ("gelu", dict(approximate="tanh")),
    "rms_norm": ("rms_norm", dict(eps=1e-6)),
    "silu": ("silu", {}),
}


@pytest.mark.parametrize("dtype", DT16, ids=str)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_is_the_float32_call_rounded_once(name, dtype):
    rng = np.random.default_rng(1)
    fname, kw = UNARY[name]
    fn = getattr(attnpy, fname)
    for shape in [(3, 8), (2, 5, 40), (1, 1, 2), (4, 0)]:
        x = data(rng, shape, dtype)
        want32 = fn(x.astype(np.float32), **kw)
        want = want32.astype(dtype)
        for v in layouts(x):
            bits_equal(fn(v, **kw), want)
        out = np.empty_like(x)
        assert fn(x, out=out, **kw) is out
        bits_equal(out, want)
        wide = np.empty(shape, np.float32)     # a wider out=: unrounded
        assert fn(x, out=wide, **kw) is wide
        bits_equal(wide, want32)
        xi = x.copy()                          # in place
        assert fn(xi, out=xi, **kw) is xi
        bits_equal(xi, want)


# every public activation (attnpy._activations.__all__, so a new one is
# here without a line): the rule, and its twin in 16 bits
TWIN16 = {F16: (2e-3, 1e-3), BF16: (1.6e-2, 1e-2)}  # an ulp of the dtype


@pytest.mark.parametrize("dtype", DT16, ids=str)
@pytest.mark.parametrize("name", _activations.__all__)
def test_every_activation_16bit(name, dtype):
    rng = np.random.default_rng(8)
    fn, twin = getattr(attnpy, name), getattr(reference, name)
    nargs = 2 if name.endswith("_backward") else 1
    for shape in [(3, 8), (2, 5, 40), (4, 0)]:
        args = [data(rng, shape, dtype) for _ in range(nargs)]
        got = fn(*args)
        assert got.dtype == dtype
        bits_equal(got, fn(*f32(*args)).astype(dtype))
        want = twin(*args)
        assert want.dtype == dtype
        rtol, atol = TWIN16[dtype]
        np.testing.assert_allclose(got.astype(np.float64),
                                   want.astype(np.float64), rtol=rtol,
                                   atol=atol, equal_nan=True)


# ---------------------------------------------------------------------------
# several operands: mixed dtypes, result dtypes, gradients' dtypes
# ---------------------------------------------------------------------------

def result_dtype(*dts):
    dts = [np.dtype(d) for d in dts if d is not None]
    if all(d == dts[0] for d in dts):
        return dts[0]
    return np.dtype(np.float64) if np.float64 in dts else np.dtype(np.float32)


MIXES = [(F16, F16), (BF16, BF16), (F16, np.float32), (BF16, np.float32),
         (F16, BF16), (np.float32, F16)]


@pytest.mark.parametrize("dx, dw", MIXES, ids=str)
def test_layer_norm_and_backward_mixed(dx, dw):
    rng = np.random.default_rng(2)
    x = data(rng, (5, 24), dx)
    w, b = data(rng, 24, dw, special=False), data(rng, 24, dw, special=False)
    dy = data(rng, (5, 24), dx, special=False)
    rd = result_dtype(dx, dw)
    got = attnpy.layer_norm(x, 1e-5, weight=w, bias=b, eps_in_sqrt=True)
    want = attnpy.layer_norm(*f32(x), 1e-5, weight=w.astype(np.float32),
                             bias=b.astype(np.float32), eps_in_sqrt=True)
    bits_equal(got, want.astype(rd))
    g = attnpy.layer_norm_backward(dy, x, 1e-5, weight=w)
    g32 = attnpy.layer_norm_backward(*f32(dy, x), 1e-5,
                                     weight=w.astype(np.float32))
    own = [dx if np.dtype(dx).itemsize == 2 else rd,
           dw if np.dtype(dw).itemsize == 2 else rd, rd]
    for a, a32, dt in zip(g, g32, own):
        bits_equal(a, a32.astype(dt))


@pytest.mark.parametrize("dx, dw", MIXES, ids=str)
def test_rms_norm_and_backward_mixed(dx, dw):
    rng = np.random.default_rng(3)
    x, dy = data(rng, (2, 3, 40), dx), data(rng, (2, 3, 40), dx)
    w = data(rng, 40, dw, special=False)
    rd = result_dtype(dx, dw)
    bits_equal(attnpy.rms_norm(x, weight=w),
               attnpy.rms_norm(*f32(x), weight=w.astype(np.float32))
               .astype(rd))
    g = attnpy.rms_norm_backward(dy, x, weight=w)
    g32 = attnpy.rms_norm_backward(*f32(dy, x), weight=w.astype(np.float32))
    bits_equal(g[0], g32[0].astype(dx if np.dtype(dx).itemsize == 2 else rd))
    bits_equal(g[1], g32[1].astype(dw if np.dtype(dw).itemsize == 2 else rd))


@pytest.mark.parametrize("dg, du", MIXES, ids=str)
def test_swiglu_and_backward_mixed(dg, du):
    rng = np.random.default_rng(4)
    gate, up = data(rng, (6, 33), dg, 4.0), data(rng, (6, 33), du)
    dy = data(rng, (6, 33), dg, special=False)
    rd = result_dtype(dg, du)
    bits_equal(attnpy.swiglu(gate, up),
               attnpy.swiglu(*f32(gate, up)).astype(rd))
    dgate, dup = attnpy.swiglu_backward(dy, gate, up)
    w = attnpy.swiglu_backward(*f32(dy, gate, up))
    bits_equal(dgate, w[0].astype(dg if np.dtype(dg).itemsize == 2 else rd))
    bits_equal(dup, w[1].astype(du if np.dtype(du).itemsize == 2 else rd))


@pytest.mark.parametrize("dtype", DT16, ids=str)
def test_gelu_backward_and_softmax_backward(dtype):
    rng = np.random.default_rng(5)
    x, dy = data(rng, (4, 50), dtype), data(rng, (4, 50), dtype)
    for approximate in ("none", "tanh"):
        bits_equal(attnpy.gelu_backward(dy, x, approximate=approximate),
                   attnpy.gelu_backward(*f32(dy, x), approximate=approximate)
                   .astype(dtype))
    y = attnpy.softmax(data(rng, (4, 50), dtype, special=False))
    want = attnpy.softmax_backward(*f32(dy, y)).astype(dtype)
    bits_equal(attnpy.softmax_backward(dy, y), want)
    dyc = dy.copy()
    assert attnpy.softmax_backward(dyc, y, out=dyc) is dyc   # in place
    bits_equal(dyc, want)
    # float16 with bfloat16: float32, which NumPy cannot promote
    other = BF16 if dtype == F16 else F16
    got = attnpy.softmax_backward(dy, y.astype(other))
    assert got.dtype == np.float32
    bits_equal(got, attnpy.softmax_backward(*f32(dy, y.astype(other))))


@pytest.mark.parametrize("dtype", DT16, ids=str)
def test_merge_attention(dtype):
    rng = np.random.default_rng(6)
    outs = [data(rng, (2, 3, 8), dtype, special=False) for _ in range(3)]
    lses = [(rng.standard_normal((2, 3)) * 3).astype(np.float32)
            for _ in range(3)]
    lses[1][0, 0] = -np.inf
    out, lse = attnpy.merge_attention(outs, lses)
    out32, lse32 = attnpy.merge_attention(f32(*outs), lses)
    assert out.dtype == dtype and lse.dtype == np.float32
    bits_equal(out, out32.astype(dtype))
    bits_equal(lse, lse32)
    # 16-bit lses too: read in 16 bits; the merged lse stays float32
    l16 = [x.astype(dtype) for x in lses]
    out, lse = attnpy.merge_attention(outs, l16)
    o32, l32 = attnpy.merge_attention(f32(*outs), f32(*l16))
    bits_equal(out, o32.astype(dtype))
    bits_equal(lse, l32)


@pytest.mark.parametrize("dtype", DT16, ids=str)
@pytest.mark.parametrize("activation", ["relu", "gelu", "gelu_tanh"])
def test_feed_forward(dtype, activation):
    rng = np.random.default_rng(7)
    x = data(rng, (2, 3, 8), dtype, 1.0, special=False)
    W1, W2 = (data(rng, s, dtype, 0.5, special=False)
              for s in ((8, 16), (16, 8)))
    b1, b2 = data(rng, 16, dtype, special=False), data(rng, 8, dtype,
                                                       special=False)
    got = attnpy.feed_forward(x, W1, b1, W2, b2, activation=activation)
    want = attnpy.feed_forward(*f32(x, W1, b1, W2, b2), activation=activation)
    bits_equal(got, want.astype(dtype))
    dy = data(rng, (2, 3, 8), dtype, special=False)
    g = attnpy.feed_forward_backward(dy, x, W1, b1, W2, b2,
                                     activation=activation)
    w = attnpy.feed_forward_backward(*f32(dy, x, W1, b1, W2, b2),
                                     activation=activation)
    for a, b in zip(g, w):
        bits_equal(a, b.astype(dtype))


def test_result_dtypes_and_refusals():
    x16 = np.ones((2, 4), F16)
    assert attnpy.softmax(x16.astype(BF16)).dtype == BF16
    assert attnpy.layer_norm(x16, weight=np.ones(4, BF16)).dtype == np.float32
    assert attnpy.rms_norm(x16, weight=np.ones(4)).dtype == np.float64
    assert attnpy.swiglu(x16, x16.astype(np.float32)).dtype == np.float32
    with pytest.raises(TypeError, match="out"):  # out= narrower than result
        attnpy.softmax(x16.astype(np.float32), out=x16)
    with pytest.raises(TypeError, match="softmax"):
        attnpy.softmax(np.ones(3, np.complex64))


@pytest.mark.parametrize("dtype", DT16, ids=str)
def test_no_whole_array_float32_copy(dtype):
    """The peak of NumPy's allocations during a 16-bit call is the 16-bit
    result, not a float32 copy of the input (twice its size)."""
    x = np.ones((512, 512), dtype)
    w = np.ones(512, dtype)
    calls = [lambda: attnpy.softmax(x), lambda: attnpy.layer_norm(x),
             lambda: attnpy.rms_norm(x, weight=w), lambda: attnpy.silu(x),
             lambda: attnpy.rotary_embedding(x),
             lambda: attnpy.swiglu(x, x), lambda: attnpy.gelu(x)]
    for call in calls:
        call()
        tracemalloc.start()
        try:
            y = call()
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert y.dtype == dtype
        assert peak < x.nbytes * 1.5, (call, peak, x.nbytes)
