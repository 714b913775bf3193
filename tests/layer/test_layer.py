"""layer_norm, gelu, feed_forward and their backward functions against
their NumPy twins in attnpy.reference (and the tutorial's own code), over
every layout and dtype of tests/_arrays.py; out= and in place; the same
bits for any thread count; errors that name the argument."""
import numpy as np
import pytest

import attnpy
from attnpy import reference as R

from _arrays import (FLOAT_DTYPES, TOLERANCES, all_arrays, random_array,
                     snapshot, strided_empty, transposed_empty)

LN_OPTIONS = [dict(eps=1e-6), dict(eps=1e-5, eps_in_sqrt=True),
              dict(eps=0.1, weight=True, bias=True),
              dict(eps=1e-12, eps_in_sqrt=True, weight=True)]


def _tol(dtype, scale=1):
    rtol, atol = TOLERANCES[np.dtype(dtype)]
    return dict(rtol=rtol * scale, atol=atol * scale, equal_nan=True)


def _ln_kwargs(opt, n, rng, dtype):
    kw = dict(opt)
    for k in ("weight", "bias"):
        if kw.get(k):
            kw[k] = rng.standard_normal(n).astype(dtype)
    return kw


# ---------------------------------------------------------------------------
# layer_norm
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("opt", LN_OPTIONS)
def test_layer_norm_matches_reference_on_every_layout(opt):
    rng = np.random.default_rng(0)
    for desc, x in all_arrays(rng):
        kw = _ln_kwargs(opt, x.shape[-1], rng, np.float64)
        before = snapshot(x)
        want = R.layer_norm(x, **kw)
        got = attnpy.layer_norm(x, **kw)
        assert got.dtype == want.dtype and got.shape == x.shape, desc
        # float32 rounds once from float64: 1-2 ulp of the result
        np.testing.assert_allclose(got, want, **_tol(got.dtype, 4),
                                   err_msg=desc)
        assert snapshot(x) == before, desc


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_layer_norm_is_the_tutorials(dtype):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((2, 10, 512)) * 3 + 1).astype(dtype)
    got = attnpy.layer_norm(x)
    want = R.tutorial_layer_norm(x.astype(np.float64))
    assert got.dtype == dtype
    np.testing.assert_allclose(got, want, **_tol(dtype))
    if dtype == np.float64:
        assert np.abs(got - want).max() < 1e-13


def test_layer_norm_weight_promotes_and_mixed_dtypes():
    x = np.ones((2, 3), np.float32) * np.arange(3, dtype=np.float32)
    assert attnpy.layer_norm(x).dtype == np.float32
    assert attnpy.layer_norm(x, weight=np.ones(3)).dtype == np.float64
    # float16 stays float16 (read in 16 bits, rounded once)
    assert attnpy.layer_norm(x.astype(np.float16)).dtype == np.float16
    assert attnpy.layer_norm([[1, 2, 3]]).dtype == np.float64


def test_layer_norm_out_and_in_place():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 4, 6))
    w, b = rng.standard_normal(6), rng.standard_normal(6)
    want = attnpy.layer_norm(x, weight=w, bias=b)
    for out in (strided_empty(x.shape, x.dtype),
                transposed_empty(x.shape, x.dtype), np.empty_like(x)):
        r = attnpy.layer_norm(x, weight=w, bias=b, out=out)
        assert r is out
        np.testing.assert_array_equal(out, want)
    y = x.copy()
    assert attnpy.layer_norm(y, weight=w, bias=b, out=y) is y
    np.testing.assert_array_equal(y, want)
    # out overlapping x another way: goes through a temporary
    z = np.concatenate([x, x], axis=-1)
    attnpy.layer_norm(z[..., :6], weight=w, bias=b, out=z[..., 3:9])
    np.testing.assert_array_equal(z[..., 3:9], want)


def test_layer_norm_edges():
    # a constant row: std 0 -> zeros, then the bias
    np.testing.assert_array_equal(
        attnpy.layer_norm(np.full((2, 4), 3.0), bias=np.arange(4.0)),
        np.tile(np.arange(4.0), (2, 1)))
    # one feature
    np.testing.assert_array_equal(attnpy.layer_norm(np.ones((3, 1))),
                                  np.zeros((3, 1)))
    # NaN stays in its row
    y = attnpy.layer_norm(np.array([[1.0, np.nan], [1.0, 2.0]]))
    assert np.isnan(y[0]).all() and not np.isnan(y[1]).any()
    assert attnpy.layer_norm(np.zeros((0, 5))).shape == (0, 5)
    assert attnpy.layer_norm(np.zeros((3, 0))).shape == (3, 0)


@pytest.mark.parametrize("opt", LN_OPTIONS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_layer_norm_backward_matches_reference(opt, dtype):
    rng = np.random.default_rng(3)
    for shape in [(7,), (3, 5), (2, 3, 16), (4, 1), (0, 3), (2, 2, 130)]:
        x = (rng.standard_normal(shape) * 2 + 0.5).astype(dtype)
        dy = rng.standard_normal(shape).astype(dtype)
        kw = _ln_kwargs(opt, shape[-1], rng, dtype)
        kw.pop("bias", None)
        got = attnpy.layer_norm_backward(dy, x, **kw)
        want = R.layer_norm_backward(dy, x, **kw)
        for g, w, name in zip(got, want, ("dx", "dweight", "dbias")):
            assert g.dtype == dtype and g.shape == w.shape, name
            scale = 1 + np.abs(w).max(initial=0)
            np.testing.assert_allclose(g, w, rtol=_tol(dtype)["rtol"] * 20,
                                       atol=_tol(dtype)["atol"] * 20 * scale,
                                       err_msg=f"{name} {shape}")


def test_layer_norm_backward_finite_differences():
    rng = np.random.default_rng(4)
    for eps_in_sqrt in (False, True):
        x, dy = rng.standard_normal((2, 3, 6))
        w = rng.standard_normal(6)
        dx, dw, db = attnpy.layer_norm_backward(dy, x, 1e-3, weight=w,
                                                eps_in_sqrt=eps_in_sqrt)
        h, num = 1e-6, np.zeros_like(x)
        for i in np.ndindex(x.shape):
            xp, xm = x.copy(), x.copy()
            xp[i] += h
            xm[i] -= h
            f = [np.sum(dy * attnpy.layer_norm(z, 1e-3, weight=w,
                                               eps_in_sqrt=eps_in_sqrt))
                 for z in (xp, xm)]
            num[i] = (f[0] - f[1]) / (2 * h)
        np.testing.assert_allclose(dx, num, rtol=1e-6, atol=1e-7)
        xhat = attnpy.layer_norm(x, 1e-3, eps_in_sqrt=eps_in_sqrt)
        np.testing.assert_allclose(dw, (dy * xhat).sum(0), rtol=1e-12)
        np.testing.assert_allclose(db, dy.sum(0), rtol=1e-12)


def test_layer_norm_backward_out_is_dy():
    rng = np.random.default_rng(5)
    x, dy = rng.standard_normal((2, 4, 9))
    want = attnpy.layer_norm_backward(dy, x)[0]
    d = dy.copy()
    assert attnpy.layer_norm_backward(d, x, out=d)[0] is d
    np.testing.assert_array_equal(d, want)


# ---------------------------------------------------------------------------
# gelu
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_matches_reference_on_every_layout(approximate):
    rng = np.random.default_rng(6)
    for desc, x in all_arrays(rng):
        before = snapshot(x)
        want = R.gelu(x, approximate=approximate)
        got = attnpy.gelu(x, approximate=approximate)
        assert got.dtype == want.dtype, desc
        np.testing.assert_allclose(got, want, **_tol(got.dtype, 2),
                                   err_msg=desc)
        assert snapshot(x) == before, desc


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_gelu_backward(approximate, dtype):
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((3, 50)) * 3).astype(dtype)
    dy = rng.standard_normal((3, 50)).astype(dtype)
    got = attnpy.gelu_backward(dy, x, approximate=approximate)
    want = R.gelu_backward(dy, x, approximate=approximate)
    np.testing.assert_allclose(got, want, **_tol(dtype, 4))
    if dtype == np.float64:  # and the derivative is the derivative
        h = 1e-6
        num = (attnpy.gelu(x + h, approximate=approximate)
               - attnpy.gelu(x - h, approximate=approximate)) / (2 * h)
        np.testing.assert_allclose(got, dy * num, rtol=1e-7, atol=1e-8)


def test_gelu_in_place_and_out():
    x = np.linspace(-4, 4, 24).reshape(4, 6)
    want = attnpy.gelu(x)
    y = x.copy()
    assert attnpy.gelu(y, out=y) is y
    np.testing.assert_array_equal(y, want)
    out = transposed_empty(x.shape, x.dtype)
    assert attnpy.gelu(x, out=out) is out
    np.testing.assert_array_equal(out, want)


# ---------------------------------------------------------------------------
# feed_forward
# ---------------------------------------------------------------------------

def _ffn_params(rng, d, f, d_out=None, dtype=np.float64, bias=True):
    d_out = d if d_out is None else d_out
    W1 = (rng.standard_normal((d, f)) * np.sqrt(2 / d)).astype(dtype)
    W2 = (rng.standard_normal((f, d_out)) * np.sqrt(2 / f)).astype(dtype)
    b1 = rng.standard_normal(f).astype(dtype) if bias else None
    b2 = rng.standard_normal(d_out).astype(dtype) if bias else None
    return W1, b1, W2, b2


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_feed_forward_is_the_tutorials(dtype):
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 10, 64)).astype(dtype)
    W1, b1, W2, b2 = _ffn_params(rng, 64, 256, dtype=dtype)
    got = attnpy.feed_forward(x, W1, b1, W2, b2)
    want = R.tutorial_feed_forward(x, W1, b1, W2, b2)
    assert got.dtype == dtype and got.shape == x.shape
    np.testing.assert_allclose(got, want, **_tol(dtype, 4))


@pytest.mark.parametrize("activation", ["relu", "gelu", "gelu_tanh"])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("bias", [True, False])
def test_feed_forward_and_backward_match_reference(activation, dtype, bias):
    rng = np.random.default_rng(9)
    for shape, f, d_out in [((5, 8), 16, 8), ((2, 3, 8), 12, 5),
                            ((8,), 4, 8), ((0, 8), 6, 8)]:
        x = rng.standard_normal(shape).astype(dtype)
        W1, b1, W2, b2 = _ffn_params(rng, shape[-1], f, d_out, dtype, bias)
        y = attnpy.feed_forward(x, W1, b1, W2, b2, activation=activation)
        yr = R.feed_forward(x, W1, b1, W2, b2, activation=activation)
        assert y.shape == shape[:-1] + (d_out,) and y.dtype == dtype
        np.testing.assert_allclose(y, yr, **_tol(dtype, 10))
        dy = rng.standard_normal(y.shape).astype(dtype)
        got = attnpy.feed_forward_backward(dy, x, W1, b1, W2, b2,
                                           activation=activation)
        want = R.feed_forward_backward(dy, x, W1, b1, W2, b2,
                                       activation=activation)
        for g, w, name in zip(got, want, ("dx", "dW1", "db1", "dW2", "db2")):
            if w is None:
                assert g is None, name
                continue
            assert g.shape == w.shape and g.dtype == dtype, name
            np.testing.assert_allclose(g, w, **_tol(dtype, 20),
                                       err_msg=f"{name} {shape}")


def test_feed_forward_inputs_unchanged_and_mixed_dtypes():
    rng = np.random.default_rng(10)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    W1, b1, W2, b2 = _ffn_params(rng, 4, 8)
    before = snapshot(x, W1, b1, W2, b2)
    y = attnpy.feed_forward(x, W1, b1, W2, b2, activation="gelu")
    assert y.dtype == np.float64    # float32 x, float64 weights
    assert snapshot(x, W1, b1, W2, b2) == before
    W1, b1, W2, b2 = (a.astype(np.float32) for a in (W1, b1, W2, b2))
    assert attnpy.feed_forward(x, W1, b1, W2, b2).dtype == np.float32


# ---------------------------------------------------------------------------
# threads: the same bits
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_same_bits_for_any_thread_count(dtype):
    rng = np.random.default_rng(11)
    x = random_array(rng, (64, 128, 96), dtype)
    dy = random_array(rng, (64, 128, 96), dtype)
    w, b = random_array(rng, (96,), dtype), random_array(rng, (96,), dtype)
    results = []
    for n in (1, 2, 3):
        attnpy.set_num_threads(n)
        results.append([attnpy.layer_norm(x, weight=w, bias=b),
                        *attnpy.layer_norm_backward(dy, x, weight=w),
                        attnpy.gelu(x), attnpy.gelu_backward(dy, x)])
    for other in results[1:]:
        for a, b_ in zip(results[0], other):
            assert a.tobytes() == b_.tobytes()


# ---------------------------------------------------------------------------
# errors name the function and the argument
# ---------------------------------------------------------------------------

def test_errors():
    x = np.ones((2, 3))
    W1, W2 = np.ones((3, 4)), np.ones((4, 3))
    with pytest.raises(ValueError, match=r"feed_forward: activation must be "
                       r"'relu', 'gelu' or 'gelu_tanh', got 'swish'"):
        attnpy.feed_forward(x, W1, None, W2, None, activation="swish")
    with pytest.raises(ValueError, match=r"feed_forward: W1 must have shape "
                       r"\(d_model=3, d_ff\), got \(4, 3\)"):
        attnpy.feed_forward(x, W2, None, W2, None)
    with pytest.raises(ValueError, match=r"feed_forward: W2 must have shape "
                       r"\(d_ff=4, d_out\), got \(3, 4\)"):
        attnpy.feed_forward(x, W1, None, W1, None)
    with pytest.raises(ValueError, match=r"feed_forward: b1 must have shape "
                       r"\(4,\), got \(3,\)"):
        attnpy.feed_forward(x, W1, np.ones(3), W2, None)
    with pytest.raises(ValueError, match=r"feed_forward_backward: dy must "
                       r"have the output's shape \(2, 3\), got \(2, 4\)"):
        attnpy.feed_forward_backward(np.ones((2, 4)), x, W1, None, W2, None)
    with pytest.raises(TypeError, match="feed_forward: W1"):
        attnpy.feed_forward(x, np.ones((3, 4), complex), None, W2, None)
    with pytest.raises(ValueError, match=r"layer_norm: weight must have "
                       r"shape \(3,\), the features of x"):
        attnpy.layer_norm(x, weight=np.ones(4))
    with pytest.raises(ValueError, match=r"layer_norm: bias must have "
                       r"shape \(3,\)"):
        attnpy.layer_norm(x, bias=np.ones((1, 3)))
    with pytest.raises(ValueError, match=r"layer_norm: eps must be >= 0"):
        attnpy.layer_norm(x, -1.0)
    with pytest.raises(TypeError, match=r"layer_norm: eps must be a real"):
        attnpy.layer_norm(x, "small")
    with pytest.raises(TypeError, match=r"layer_norm: eps_in_sqrt must be "
                       r"True or False"):
        attnpy.layer_norm(x, eps_in_sqrt="yes")
    with pytest.raises(ValueError, match=r"layer_norm: x must have at least "
                       r"1 dimension"):
        attnpy.layer_norm(3.0)
    with pytest.raises(ValueError, match=r"layer_norm: out has shape"):
        attnpy.layer_norm(x, out=np.ones((3, 2)))
    with pytest.raises(TypeError, match=r"layer_norm: out has dtype"):
        attnpy.layer_norm(x, out=np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match=r"layer_norm_backward: dy must "
                       r"have the shape of x"):
        attnpy.layer_norm_backward(np.ones((2, 4)), x)
    with pytest.raises(ValueError, match=r"gelu: approximate must be 'none' "
                       r"or 'tanh', got 'erf'"):
        attnpy.gelu(x, approximate="erf")
    with pytest.raises(ValueError, match=r"gelu_backward: dy must have the "
                       r"shape of x"):
        attnpy.gelu_backward(np.ones(3), x)
    with pytest.raises(TypeError, match=r"gelu: x has dtype complex128"):
        attnpy.gelu(np.ones(3, complex))


# -- rows that need no offset table ------------------------------------------

SHORT_ROWS = {
    "gelu": lambda x, out: attnpy.gelu(x, out=out),
    "silu": lambda x, out: attnpy.silu(x, out=out),
    "layer_norm": lambda x, out: attnpy.layer_norm(x, out=out),
    "rms_norm": lambda x, out: attnpy.rms_norm(x, out=out),
    "softmax": lambda x, out: attnpy.softmax(x, axis=-1, out=out),
    "softmax axis 0": lambda x, out: attnpy.softmax(x, axis=0, out=out),
}


@pytest.mark.parametrize("name", SHORT_ROWS)
def test_short_rows_take_no_table_and_any_layout_the_same_values(name):
    """Row r of an array whose leading dims collapse into one stride is at
    r * stride, with no offset table (8 bytes a row and operand: gelu on
    (2**20, 2) float32 with out= took 16 MiB of them for 8 MiB of data).
    Layouts that do not collapse (transposed, sliced, broadcast) keep
    their table and give the same values as the contiguous call."""
    import tracemalloc
    f = SHORT_ROWS[name]
    x = np.random.default_rng(5).standard_normal((2 ** 20, 2)).astype(
        np.float32)
    out = np.empty_like(x)
    f(x, out)                                   # first call: warm
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        f(x[::-1], out[::-1])                   # reversed rows: collapse
        f(x, out)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, peak
    want = f(x, None)
    np.testing.assert_array_equal(out, want)
    small = x[:24].reshape(2, 3, 4, 2)
    for view in (small.transpose(1, 0, 2, 3), small[:, ::2],
                 small[::-1, :, ::-1], np.broadcast_to(small[:, :1],
                                                       (2, 3, 4, 2))):
        np.testing.assert_array_equal(f(view, None),
                                      f(np.ascontiguousarray(view), None))


@pytest.mark.parametrize("isa", attnpy.isas())
@pytest.mark.parametrize("name", ["gelu", "silu", "softmax"])
def test_a_row_tail_stays_in_its_row_with_the_bits_of_a_long_row(name, isa):
    """The last n % W elements of a row go through masked lanes: nothing
    past the row is read into its result or written (sentinels after each
    row of out stay), and an element-wise function gives each element the
    bits it gets inside one long row."""
    from attnpy import _core
    was = _core.isa()
    _core.set_isa(isa)
    try:
        f = SHORT_ROWS[name]
        rng = np.random.default_rng(9)
        for dt in (np.float32, np.float64):
            for n in range(1, 35):
                big = rng.standard_normal((6, n + 5)).astype(dt)
                x = big[:, :n]                  # rows followed by other data
                big[:, n:] = np.nan             # read past the row: NaN
                box = np.full((6, n + 5), 7.0, dt)
                got = f(x, box[:, :n])
                assert np.all(box[:, n:] == 7.0), (n, dt)
                assert np.isfinite(got).all(), (n, dt)
                if name != "softmax":
                    long = f(np.ascontiguousarray(x).reshape(1, -1), None)
                    np.testing.assert_array_equal(got, long.reshape(6, n))
                else:
                    np.testing.assert_allclose(got.sum(axis=-1), 1, rtol=1e-5)
    finally:
        _core.set_isa(was)
