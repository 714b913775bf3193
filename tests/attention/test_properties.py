"""Property tests: attnpy against attnpy.reference on drawn problems.

Hypothesis draws shapes (0-size included), broadcast batch dims, memory
layouts (transposed, reversed, strided, Fortran), dtypes, masks
(bool/float/int, broadcast shapes, NaN counts as "may attend"), bias with
-inf, causal settings, scales and fully_masked policies, and checks:

* attention and scaled_dot_product_attention equal the reference
  (float32: rtol 1e-4, float64: rtol 1e-10, small atol);
* attention's output is bit for bit scaled_dot_product_attention's;
* weight rows sum to 1, or follow the fully_masked policy;
* "raise" raises exactly when a row is fully masked, naming the first one;
* the result dtype follows the documented mapping;
* inputs are never modified.

Bounded: small sizes, 200 examples per test, the whole file in seconds.
"""
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import attnpy
from attnpy import reference as ref

SETTINGS = settings(max_examples=200, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.data_too_large])

TOL = {np.dtype(np.float32): dict(rtol=1e-4, atol=1e-5),
       np.dtype(np.float64): dict(rtol=1e-10, atol=1e-12),
       # float16 results: both sides rounded once from a wider sum, so at
       # most one float16 step (2^-11 relative) apart
       np.dtype(np.float16): dict(rtol=2e-3, atol=1e-6)}

LAYOUTS = ["C", "T", "rev", "step", "F", "revbatch"]


def relayout(a, kind):
    """An array equal to `a` laid out in memory as `kind` says."""
    a = np.asarray(a)
    if a.ndim < 2 or kind == "C":
        return a.copy()
    if kind == "T":
        return np.ascontiguousarray(np.swapaxes(a, -1, -2)).swapaxes(-1, -2)
    if kind == "rev":
        return np.ascontiguousarray(a[..., ::-1, ::-1])[..., ::-1, ::-1]
    if kind == "step":
        return np.repeat(a, 2, axis=-1)[..., ::2]
    if kind == "F":
        return np.asfortranarray(a)
    if kind == "revbatch" and a.ndim > 2:
        return np.ascontiguousarray(a[::-1])[::-1]
    return a.copy()


@st.composite
def leading(draw, batch):
    """Leading dims for one operand: a suffix of `batch`, some dims 1."""
    n = draw(st.integers(0, len(batch)))
    dims = batch[len(batch) - n:]
    return tuple(d if draw(st.booleans()) else 1 for d in dims)


@st.composite
def problems(draw):
    seed = draw(st.integers(0, 2 ** 32 - 1))
    rng = np.random.default_rng(seed)
    dtype = np.dtype(draw(st.sampled_from([np.float32, np.float64])))
    L, S = draw(st.integers(0, 5)), draw(st.integers(0, 5))
    E, Ev = draw(st.integers(0, 4)), draw(st.integers(0, 4))
    batch = tuple(draw(st.lists(st.integers(0, 3), max_size=2)))
    # one input may come in another dtype (float16/int/bool): mapped
    odd = draw(st.sampled_from([None, None, None, "Q", "K", "V"]))
    odd_dtype = draw(st.sampled_from([np.float16, np.int8, np.int64, bool,
                                      np.float32, np.float64]))

    def operand(name, rows, cols):
        shape = draw(leading(batch)) + (rows, cols)
        a = rng.standard_normal(shape)
        if name == odd:
            dt = np.dtype(odd_dtype)
            a = (a > 0) if dt == bool else (a * 2).astype(dt)
        else:
            a = a.astype(dtype)
        return relayout(a, draw(st.sampled_from(LAYOUTS)))

    Q = operand("Q", L, E)
    K = operand("K", S, E)
    V = operand("V", S, Ev)

    def scores_shaped():
        if draw(st.integers(0, 5)) == 0:           # 1-D: (S,) or (1,)
            return (draw(st.sampled_from([S, 1])),)
        return draw(leading(batch)) + (draw(st.sampled_from([L, 1])),
                                       draw(st.sampled_from([S, 1])))

    mask = None
    if draw(st.booleans()):
        shape = scores_shaped()
        density = draw(st.sampled_from([0.0, 0.3, 0.7, 1.0]))
        keep = rng.random(shape) < density
        kind = draw(st.sampled_from(["bool", "float", "int", "float32"]))
        if kind == "bool":
            mask = keep
        elif kind == "int":  # nonzero integers: may attend
            mask = keep.astype(np.int32) * rng.integers(1, 5, shape)
        else:  # a float keep-mask holds 0 and 1 only
            mask = keep.astype(np.float64 if kind == "float" else np.float32)
        mask = relayout(mask, draw(st.sampled_from(LAYOUTS)))
    bias = None
    if draw(st.booleans()):
        shape = scores_shaped()
        bias = rng.standard_normal(shape)
        p_inf = draw(st.sampled_from([0.0, 0.3, 1.0]))
        bias = np.where(rng.random(shape) < p_inf, -np.inf, bias)
        bias = bias.astype(draw(st.sampled_from([dtype, np.float64])))
        bias = relayout(bias, draw(st.sampled_from(LAYOUTS)))
    kw = dict(
        mask=mask, bias=bias,
        causal=draw(st.sampled_from([False, True, "top_left", "bottom_right",
                                     None])),
        scale=draw(st.one_of(st.none(), st.floats(-4, 4))),
        fully_masked=draw(st.sampled_from(["zero", "uniform", "nan",
                                           "raise"])),
    )
    return Q, K, V, kw


def snapshot(*arrays):
    return [None if a is None else (a.copy(), a.strides) for a in arrays]


def assert_unchanged(arrays, snap):
    for a, s in zip(arrays, snap):
        if a is None:
            continue
        np.testing.assert_array_equal(a, s[0])
        assert a.strides == s[1]


def effective_allowed(Q, K, V, kw):
    """(..., L, S) bool: may query i attend to key j, with -inf bias
    counting as blocked (inputs are finite, so only bias makes -inf)."""
    L, S = Q.shape[-2], K.shape[-2]
    allowed = ref._allowed(L, S, kw["mask"], kw["causal"])
    if kw["bias"] is not None:
        allowed = allowed & (np.asarray(kw["bias"]) != -np.inf)
    lead = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2],
                               *[np.shape(kw[k])[:-2] for k in ("mask", "bias")
                                 if kw[k] is not None and np.ndim(kw[k]) >= 2])
    return np.broadcast_to(allowed, lead + (L, S))


def call_ref(Q, K, V, kw):
    with np.errstate(all="ignore"):
        return ref.scaled_dot_product_attention(Q, K, V, **kw)


@SETTINGS
@given(problems())
def test_attention_matches_reference(problem):
    Q, K, V, kw = problem
    inputs = (Q, K, V, kw["mask"], kw["bias"])
    snap = snapshot(*inputs)
    dtype = ref.compute_dtype(Q, K, V)
    fully = ~effective_allowed(Q, K, V, kw).any(axis=-1)      # (..., L)

    if kw["fully_masked"] == "raise" and fully.any():
        L = Q.shape[-2]
        b, i = np.argwhere(fully.reshape(-1, L))[0]
        for fname, f in (("attention", attnpy.attention),
                         ("scaled_dot_product_attention",
                          attnpy.scaled_dot_product_attention)):
            with pytest.raises(ValueError, match=rf"^{fname}\b") as info:
                f(Q, K, V, **kw)
            msg = str(info.value)
            assert "fully_masked" in msg
            assert re.search(rf"\brow {i}\b", msg), (msg, b, i)
        assert_unchanged(inputs, snap)
        return

    ro, rw = call_ref(Q, K, V, kw)
    o, w = attnpy.scaled_dot_product_attention(Q, K, V, **kw)
    a = attnpy.attention(Q, K, V, **kw)
    assert_unchanged(inputs, snap)

    assert o.dtype == w.dtype == a.dtype == dtype
    assert o.shape == a.shape == ro.shape and w.shape == rw.shape
    np.testing.assert_allclose(o, ro, equal_nan=True, **TOL[dtype])
    np.testing.assert_allclose(w, rw, equal_nan=True, **TOL[dtype])
    # the fused kernel gives bit for bit the same output
    assert a.tobytes() == o.tobytes()

    # rows of the weights: sum to 1, or the fully_masked policy
    S = K.shape[-2]
    if w.size:
        sums = w.sum(axis=-1, dtype=np.float64)
        np.testing.assert_allclose(sums[~fully], 1.0,
                                   rtol=10 * TOL[dtype]["rtol"])
        rows = w[fully]
        outs = o[fully]
        policy = kw["fully_masked"]
        if policy == "zero":
            assert (rows == 0).all() and (outs == 0).all()
        elif policy == "nan":
            assert np.isnan(rows).all() and np.isnan(outs).all()
        elif policy == "uniform":
            np.testing.assert_allclose(rows, 1.0 / S, rtol=TOL[dtype]["rtol"])
        assert (w[~fully] >= 0).all()
        assert not np.isnan(w[~fully]).any()


@SETTINGS
@given(problems(), st.sampled_from(LAYOUTS), st.sampled_from(LAYOUTS))
def test_out_arguments_any_layout(problem, out_layout, w_layout):
    """out= / weights_out= of any strides are filled and returned, and give
    the same numbers as fresh results."""
    Q, K, V, kw = problem
    kw["fully_masked"] = "nan" if kw["fully_masked"] == "raise" \
        else kw["fully_masked"]
    o, w = attnpy.scaled_dot_product_attention(Q, K, V, **kw)
    out = relayout(np.full(o.shape, -5.0, o.dtype), out_layout)
    wout = relayout(np.full(w.shape, -5.0, w.dtype), w_layout)
    r = attnpy.scaled_dot_product_attention(Q, K, V, out=out, weights_out=wout,
                                            **kw)
    assert r[0] is out and r[1] is wout
    assert out.tobytes() == np.ascontiguousarray(o).tobytes() or \
        np.array_equal(out, o, equal_nan=True)
    assert np.array_equal(wout, w, equal_nan=True)
    out2 = relayout(np.full(o.shape, 7.0, o.dtype), out_layout)
    assert attnpy.attention(Q, K, V, out=out2, **kw) is out2
    assert np.array_equal(out2, o, equal_nan=True)


@st.composite
def softmax_inputs(draw):
    seed = draw(st.integers(0, 2 ** 32 - 1))
    rng = np.random.default_rng(seed)
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=1, max_size=3)))
    dtype = draw(st.sampled_from([np.float32, np.float64, np.float16,
                                  np.int32, bool]))
    x = rng.standard_normal(shape) * draw(st.sampled_from([1.0, 30.0]))
    special = draw(st.sampled_from([None, np.nan, np.inf, -np.inf]))
    if special is not None and x.size:
        x[rng.random(shape) < 0.3] = special
    with np.errstate(all="ignore"):
        x = (x > 0) if dtype is bool else x.astype(dtype)
    x = relayout(x, draw(st.sampled_from(LAYOUTS)))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    return x, axis


@SETTINGS
@given(softmax_inputs(), st.sampled_from([None, "fresh", "inplace", "T"]))
def test_softmax_matches_reference(inp, out_kind):
    x, axis = inp
    x0 = x.copy()
    with np.errstate(all="ignore"):
        expect = ref.softmax(x, axis=axis)
    dtype = expect.dtype
    out = None
    if out_kind == "fresh":
        out = np.empty(x.shape, dtype)
    elif out_kind == "T" and x.ndim >= 2:
        out = relayout(np.empty(x.shape, dtype), "T")
    elif out_kind == "inplace" and x.dtype == dtype:
        out = x
    got = attnpy.softmax(x, axis=axis, out=out)
    if out is not None:
        assert got is out
    else:
        np.testing.assert_array_equal(x, x0)
    assert got.dtype == dtype and got.shape == expect.shape
    np.testing.assert_allclose(got, expect, equal_nan=True, **TOL[dtype])


@SETTINGS
@given(st.lists(st.integers(0, 3), min_size=0, max_size=2),
       st.integers(0, 4), st.integers(1, 4), st.integers(0, 4),
       st.sampled_from([np.float32, np.float64, np.int16]),
       st.sampled_from(LAYOUTS))
def test_split_combine_heads_round_trip(lead, T, H, dk, dtype, layout):
    rng = np.random.default_rng(T * 100 + H * 10 + dk)
    x = relayout((rng.standard_normal(tuple(lead) + (T, H * dk)) * 4)
                 .astype(dtype), layout)
    h = attnpy.split_heads(x, H)
    np.testing.assert_array_equal(h, ref.split_heads(x, H))
    c = attnpy.combine_heads(h)
    np.testing.assert_array_equal(c, ref.combine_heads(h))
    np.testing.assert_array_equal(c, x)
    assert c.dtype == np.dtype(dtype)  # a data move keeps the dtype


@SETTINGS
@given(st.integers(0, 64), st.integers(0, 33),
       st.sampled_from([10000.0, 2.0, 1e6, 0.5]),
       st.sampled_from([np.float32, np.float64]), st.integers(0, 1000),
       st.lists(st.integers(0, 3), max_size=2))
def test_positional_encoding_matches_reference(n, d, base, dtype, offset,
                                               lead):
    pe = attnpy.positional_encoding(n, d, base=base, dtype=dtype)
    r = ref.positional_encoding(n, d, base=base, dtype=dtype)
    assert pe.dtype == dtype
    np.testing.assert_allclose(pe, r, **TOL[np.dtype(dtype)])
    x = np.random.default_rng(n).standard_normal(tuple(lead) + (n, d)) \
        .astype(dtype)
    expect = ref.add_positional_encoding(x.copy(), offset=offset, base=base)
    got = attnpy.add_positional_encoding(x, offset=offset, base=base)
    assert got is x
    np.testing.assert_allclose(x, expect, **TOL[np.dtype(dtype)])


def test_softmax_of_a_long_row_keeps_its_digits():
    """A float32 row of 2^24 elements: float partial sums of a row that
    long lose digits (1.6e-5 relative error here, 2.0 for the sum of 2^29
    equal elements); each 2^16 elements' sum is added in double, so the
    error stays that of a 2^16-element row, as NumPy's pairwise sum."""
    x = np.random.default_rng(2).standard_normal(2**24).astype(np.float32)
    y = attnpy.softmax(x)
    t = np.exp(x.astype(np.float64) - x.max())
    t /= t.sum()
    assert np.max(np.abs(y - t) / t) < 2e-6
    assert abs(y.sum(dtype=np.float64) - 1) < 1e-6


def test_softmax_of_rows_across_chunks_same_bits_on_every_set():
    """Rows just under, at and past 2^16 elements (where the chunk sums
    begin) and past several chunks: the same bits on every set."""
    from attnpy import _core
    rng = np.random.default_rng(3)
    rows = [rng.standard_normal(n).astype(dt) for n in
            (2**16 - 1, 2**16, 2**16 + 1, 3 * 2**16 + 5)
            for dt in (np.float32, np.float64)]
    saved = _core.isa()
    try:
        got = {}
        for isa in attnpy.isas():
            _core.set_isa(isa)
            got[isa] = [attnpy.softmax(r) for r in rows]
    finally:
        _core.set_isa(saved)
    first = got[attnpy.isas()[0]]
    for isa, ys in got.items():
        for a, b in zip(first, ys):
            assert np.array_equal(a.view(np.uint8), b.view(np.uint8)), isa
