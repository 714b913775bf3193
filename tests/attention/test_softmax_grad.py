"""softmax_backward and softmax_jacobian: against attnpy.reference, against
central finite differences of attnpy.softmax, every layout, out=, bad input."""
import numpy as np
import pytest

import attnpy
from attnpy import reference as ref

from _arrays import (TOLERANCES, layouts, random_array, snapshot,
                     strided_empty, transposed_empty)
from _grad_np import fd_grad, rel_err

SHAPES = [(5,), (3, 7), (2, 3, 4), (2, 1, 3, 6), (1, 1), (0, 4), (3, 0)]


def _pair(rng, shape, dtype, axis=-1):
    x = random_array(rng, shape, dtype) * 2
    return random_array(rng, shape, dtype), attnpy.softmax(x, axis)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
def test_backward_matches_reference_every_layout(shape, dtype):
    rng = np.random.default_rng(len(shape) * 10 + shape[-1])
    dy, y = _pair(rng, shape, dtype)
    want = ref.softmax_backward(dy, y)
    rtol, atol = TOLERANCES[np.dtype(dtype)]
    for (nd_, dyv), (ny, yv) in zip(layouts(dy), layouts(y)):
        before = snapshot(dyv, yv)
        got = attnpy.softmax_backward(dyv, yv)
        assert got.dtype == dtype and got.shape == shape, (nd_, ny)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol,
                                   err_msg=f"{nd_}/{ny}")
        assert snapshot(dyv, yv) == before, "inputs changed"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
def test_jacobian_matches_reference_every_layout(shape, dtype):
    rng = np.random.default_rng(shape[0] * 7 + len(shape))
    _, y = _pair(rng, shape, dtype)
    want = ref.softmax_jacobian(y)
    for name, yv in layouts(y):
        got = attnpy.softmax_jacobian(yv)
        assert got.dtype == dtype, name
        assert got.shape == shape[:-1] + (shape[-1], shape[-1]), name
        # the same two roundings in the same order: identical bits
        np.testing.assert_array_equal(got, want, err_msg=name)


@pytest.mark.parametrize("axis", [0, 1, 2, -2])
def test_axes_other_than_last(axis):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 4, 5))
    y = attnpy.softmax(x, axis)
    dy = rng.standard_normal(y.shape)
    got = attnpy.softmax_backward(dy, y, axis)
    moved = ref.softmax_backward(np.moveaxis(dy, axis, -1),
                                 np.moveaxis(y, axis, -1))
    np.testing.assert_allclose(got, np.moveaxis(moved, -1, axis),
                               rtol=1e-12, atol=1e-14)
    jac = attnpy.softmax_jacobian(y, axis)
    np.testing.assert_array_equal(jac, ref.softmax_jacobian(y, axis))
    n = y.shape[axis]
    assert jac.shape == tuple(np.delete(y.shape, axis % 3)) + (n, n)
    # J^T dy is the backward pass (J is symmetric)
    np.testing.assert_allclose(
        np.einsum("...ij,...i->...j", jac, np.moveaxis(dy, axis, -1)),
        np.moveaxis(got, axis, -1), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("shape,axis", [((6,), -1), ((3, 5), -1),
                                        ((2, 4, 3), 1), ((4, 3), 0)])
def test_backward_equals_finite_differences(shape, axis):
    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal(shape) * 1.5
    dy = rng.standard_normal(shape)

    def loss(xx):
        return float(np.sum(dy * attnpy.softmax(xx, axis)))

    fd = fd_grad(lambda: loss(x), x)
    got = attnpy.softmax_backward(dy, attnpy.softmax(x, axis), axis)
    assert rel_err(got, fd) < 1e-6
    # and the Jacobian: column j of J is d softmax / d x_j
    y = attnpy.softmax(x, axis)
    jac = attnpy.softmax_jacobian(y, axis)
    ym = np.moveaxis(y, axis, -1)
    xm = np.moveaxis(x, axis, -1)
    for idx in np.ndindex(ym.shape[:-1]):
        for j in range(ym.shape[-1]):
            xp, xn = xm[idx].copy(), xm[idx].copy()
            xp[j] += 1e-6
            xn[j] -= 1e-6
            col = (attnpy.softmax(xp) - attnpy.softmax(xn)) / 2e-6
            assert rel_err(jac[idx][:, j], col) < 1e-6


def test_gradient_rows_sum_to_zero_and_jacobian_rows_too():
    rng = np.random.default_rng(11)
    y = attnpy.softmax(rng.standard_normal((4, 9)) * 3)
    dx = attnpy.softmax_backward(rng.standard_normal((4, 9)), y)
    assert np.abs(dx.sum(-1)).max() < 1e-15
    jac = attnpy.softmax_jacobian(y)
    assert np.abs(jac.sum(-1)).max() < 1e-15
    np.testing.assert_array_equal(jac, np.swapaxes(jac, -1, -2))


def test_float32_sum_is_accumulated_in_double():
    # 10**5 entries of 1e-5: a float32 running sum drifts by ~1e-3 relative
    n = 100_000
    y = np.full(n, 1.0 / n, np.float32)
    dy = np.ones(n, np.float32)
    dx = attnpy.softmax_backward(dy, y)
    s = np.float32(np.sum(dy.astype(np.float64) * y.astype(np.float64)))
    np.testing.assert_array_equal(dx, y * (dy - s))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_out_in_place_and_strided(dtype):
    rng = np.random.default_rng(5)
    dy, y = _pair(rng, (4, 6), dtype)
    want = attnpy.softmax_backward(dy, y)
    for target in ("dy", "y"):
        a, b = dy.copy(), y.copy()
        out = a if target == "dy" else b
        got = attnpy.softmax_backward(a, b, out=out)
        assert got is out
        np.testing.assert_array_equal(got, want)
    for out in (strided_empty((4, 6), dtype), transposed_empty((4, 6), dtype)):
        assert attnpy.softmax_backward(dy, y, out=out) is out
        np.testing.assert_array_equal(out, want)
    # out overlapping y without being y: through a temporary, same result
    buf = np.concatenate([y, y], axis=1)
    yv, outv = buf[:, :6], buf[:, 1:7]
    attnpy.softmax_backward(dy, yv, out=outv)
    np.testing.assert_array_equal(outv, want)


def test_dtype_promotion():
    rng = np.random.default_rng(6)
    dy, y = _pair(rng, (3, 4), np.float32)
    assert attnpy.softmax_backward(dy, y).dtype == np.float32
    assert attnpy.softmax_backward(dy.astype(np.float16), y).dtype == \
        np.float32
    got = attnpy.softmax_backward(dy.astype(np.float64), y)
    assert got.dtype == np.float64
    np.testing.assert_allclose(
        got, ref.softmax_backward(dy.astype(np.float64), y), rtol=1e-12)
    assert attnpy.softmax_jacobian(y.astype(np.float16)).dtype == np.float32


def test_bad_input():
    y = attnpy.softmax(np.zeros((3, 4)))
    with pytest.raises(ValueError, match=r"softmax_backward: dy and y must "
                       r"have the same shape.*dy.shape=\(3, 5\).*"
                       r"y.shape=\(3, 4\)"):
        attnpy.softmax_backward(np.zeros((3, 5)), y)
    with pytest.raises(ValueError, match=r"dy.shape=\(4,\)"):
        attnpy.softmax_backward(np.zeros(4), y)   # no broadcasting
    with pytest.raises(ValueError, match="dy and y must have the same shape"):
        ref.softmax_backward(np.zeros((3, 5)), y)
    with pytest.raises(np.exceptions.AxisError, match="softmax_backward: "
                       "axis 2 is out of bounds"):
        attnpy.softmax_backward(y, y, 2)
    with pytest.raises(np.exceptions.AxisError, match="softmax_jacobian"):
        attnpy.softmax_jacobian(np.float64(1.0))
    with pytest.raises(TypeError, match="softmax_jacobian: axis must be an "
                       "integer, got float"):
        attnpy.softmax_jacobian(y, 1.0)
    with pytest.raises(TypeError, match="softmax_backward"):
        attnpy.softmax_backward(y.astype(complex), y)
    with pytest.raises(ValueError, match=r"softmax_backward: out has shape "
                       r"\(4, 3\) but the result has shape \(3, 4\)"):
        attnpy.softmax_backward(y, y, out=np.zeros((4, 3)))
    with pytest.raises(TypeError, match="softmax_backward: out has dtype "
                       "float32"):
        attnpy.softmax_backward(y, y, out=np.zeros((3, 4), np.float32))
