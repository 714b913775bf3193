"""rms_norm, silu, swiglu and their backward functions: against PyTorch
(F.rms_norm, F.silu, autograd; the fast suite against torch's results
stored in tests/data/oracle, tests/_oracle.py, on all but the largest
shapes, which CI's oracle step checks against torch itself), against their
NumPy twins in attnpy.reference over every layout and dtype of
tests/_arrays.py, against finite differences; out= and in place; the same
bits for any thread count; errors that name the function, the argument
and the shapes."""
import numpy as np
import pytest

import attnpy
from attnpy import reference as R

from _arrays import (FLOAT_DTYPES, TOLERANCES, all_arrays, layouts,
                     random_array, snapshot, strided_empty, transposed_empty)


def _tol(dtype, scale=1):
    rtol, atol = TOLERANCES[np.dtype(dtype)]
    return dict(rtol=rtol * scale, atol=atol * scale, equal_nan=True)


def _torch():
    """torch and torch.nn.functional (the oracle extra; a test dependency,
    never skipped) and a NumPy-to-torch converter."""
    import torch
    return torch, torch.nn.functional, \
        lambda a: torch.from_numpy(np.ascontiguousarray(a))


# ---------------------------------------------------------------------------
# against PyTorch
# ---------------------------------------------------------------------------

def _torch_rms_norm(x, dy, w, eps):
    torch, F, _t = _torch()
    tx = _t(x).requires_grad_()
    tw = _t(w).requires_grad_() if w is not None else None
    ty = F.rms_norm(tx, (x.shape[-1],), weight=tw, eps=eps)
    ty.backward(_t(dy))
    return (ty.detach().numpy(), tx.grad.numpy(),
            None if tw is None else tw.grad.numpy())


# (shape, eps); the largest shape against torch itself, in CI's oracle step
RMS_CASES = [((7,), 1e-6), ((3, 5, 64), 1e-5),
             pytest.param((2, 576), 1e-5, marks=pytest.mark.oracle),
             ((4, 1), 0.1)]


@pytest.mark.parametrize("shape,eps", RMS_CASES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("with_weight", [False, True])
def test_rms_norm_and_backward_match_torch(torch_oracle, dtype, with_weight,
                                           shape, eps):
    rng = np.random.default_rng([0, len(shape), shape[-1]])
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    dy = rng.standard_normal(shape).astype(dtype)
    w = rng.standard_normal(shape[-1]).astype(dtype) if with_weight \
        else None
    ty, tdx, tdw = torch_oracle("rms_norm", _torch_rms_norm, x, dy, w, eps)
    y = attnpy.rms_norm(x, eps, weight=w)
    dx, dw = attnpy.rms_norm_backward(dy, x, eps, weight=w)
    assert y.dtype == dx.dtype == dw.dtype == dtype
    scale = 4 if dtype == np.float32 else 1
    np.testing.assert_allclose(y, ty, **_tol(dtype, scale),
                               err_msg=str(shape))
    np.testing.assert_allclose(dx, tdx, **_tol(dtype, 8 * scale),
                               err_msg=str(shape))
    if with_weight:
        np.testing.assert_allclose(dw, tdw, **_tol(dtype, 8 * scale))


def _torch_silu_swiglu(gate, up, dy):
    torch, F, _t = _torch()
    tg, tu = _t(gate).requires_grad_(), _t(up).requires_grad_()
    ty = F.silu(tg) * tu
    ty.backward(_t(dy))
    return (F.silu(_t(gate)).numpy(), ty.detach().numpy(), tg.grad.numpy(),
            tu.grad.numpy())


# SmolLM2's FFN width against torch itself, in CI's oracle step; a width
# with vector tails against the stored results
@pytest.mark.parametrize("width", [67, pytest.param(1536,
                                                    marks=pytest.mark.oracle)])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_silu_swiglu_and_backward_match_torch(torch_oracle, dtype, width):
    rng = np.random.default_rng(1)
    shape = (3, 4, width)
    gate = (rng.standard_normal(shape) * 4).astype(dtype)
    gate.flat[:6] = [-200.0, -50.0, -1e-30, 0.0, 50.0, 200.0]
    up = rng.standard_normal(shape).astype(dtype)
    dy = rng.standard_normal(shape).astype(dtype)
    t_silu, ty, tdgate, tdup = torch_oracle("silu_swiglu",
                                            _torch_silu_swiglu, gate, up, dy)
    np.testing.assert_allclose(attnpy.silu(gate), t_silu, **_tol(dtype, 2))
    np.testing.assert_allclose(attnpy.swiglu(gate, up), ty, **_tol(dtype, 2))
    dgate, dup = attnpy.swiglu_backward(dy, gate, up)
    np.testing.assert_allclose(dgate, tdgate, **_tol(dtype, 4))
    np.testing.assert_allclose(dup, tdup, **_tol(dtype, 4))


def _torch_silu(x):
    torch, F, _t = _torch()
    return F.silu(_t(x)).numpy()


def test_silu_specials_match_torch(torch_oracle):
    x = np.array([-np.inf, -1e4, -88.0, -0.0, 0.0, 1e-40, 88.0, np.inf,
                  np.nan], np.float32)
    got, want = attnpy.silu(x), torch_oracle("silu", _torch_silu, x)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    # atol: on AVX2 below x = -87.3 e^x is flushed to 0 (silu(-88) is -0
    # there, -5.3e-37 in torch)
    np.testing.assert_allclose(got, want, rtol=2e-7, atol=1e-36,
                               equal_nan=True)
    assert np.isnan(attnpy.silu(np.array([-np.inf]))[0])  # as torch


# ---------------------------------------------------------------------------
# against the NumPy twins, every layout
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("with_weight", [False, True])
def test_rms_norm_matches_reference_on_every_layout(with_weight):
    rng = np.random.default_rng(2)
    for desc, x in all_arrays(rng):
        w = rng.standard_normal(x.shape[-1]) if with_weight else None
        before = snapshot(x)
        want = R.rms_norm(x, 1e-5, weight=w)
        got = attnpy.rms_norm(x, 1e-5, weight=w)
        assert got.dtype == want.dtype and got.shape == x.shape, desc
        np.testing.assert_allclose(got, want, **_tol(got.dtype, 2),
                                   err_msg=desc)
        assert snapshot(x) == before, desc


def test_silu_and_swiglu_match_reference_on_every_layout():
    rng = np.random.default_rng(3)
    for desc, x in all_arrays(rng):
        before = snapshot(x)
        got = attnpy.silu(x)
        want = R.silu(x)
        assert got.dtype == want.dtype, desc
        np.testing.assert_allclose(got, want, **_tol(got.dtype, 2),
                                   err_msg=desc)
        up = random_array(rng, x.shape, np.float32)
        got = attnpy.swiglu(x, up)
        want = R.swiglu(x, up)
        assert got.dtype == want.dtype, desc
        np.testing.assert_allclose(got, want, **_tol(got.dtype, 4),
                                   err_msg=desc)
        assert snapshot(x) == before, desc


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_backward_passes_match_reference_on_every_layout(dtype):
    rng = np.random.default_rng(4)
    for shape in [(7,), (3, 5), (2, 3, 16), (4, 1), (0, 3), (2, 2, 130)]:
        x = (rng.standard_normal(shape) * 2).astype(dtype)
        up = rng.standard_normal(shape).astype(dtype)
        dy = rng.standard_normal(shape).astype(dtype)
        w = rng.standard_normal(shape[-1]).astype(dtype)
        want_rms = R.rms_norm_backward(dy, x, 1e-5, weight=w)
        want_glu = R.swiglu_backward(dy, x, up)
        for name, lx in layouts(x):
            got = attnpy.rms_norm_backward(dy, lx, 1e-5, weight=w)
            for g, r, what in zip(got, want_rms, ("dx", "dweight")):
                assert g.dtype == dtype and g.shape == r.shape
                s = 1 + np.abs(r).max(initial=0)
                np.testing.assert_allclose(
                    g, r, rtol=_tol(dtype)["rtol"] * 20,
                    atol=_tol(dtype)["atol"] * 20 * s,
                    err_msg=f"{what} {shape} {name}")
            got = attnpy.swiglu_backward(dy, lx, up)
            for g, r, what in zip(got, want_glu, ("dgate", "dup")):
                np.testing.assert_allclose(g, r, **_tol(dtype, 8),
                                           err_msg=f"{what} {shape} {name}")


# ---------------------------------------------------------------------------
# finite differences
# ---------------------------------------------------------------------------

def _numeric(f, x, dy, h=1e-6):
    num = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += h
        xm[i] -= h
        num[i] = (np.sum(dy * f(xp)) - np.sum(dy * f(xm))) / (2 * h)
    return num


def test_backward_passes_against_finite_differences():
    rng = np.random.default_rng(5)
    x, dy, up = rng.standard_normal((3, 2, 7))
    w = rng.standard_normal(7)
    dx, dw = attnpy.rms_norm_backward(dy, x, 1e-3, weight=w)
    np.testing.assert_allclose(
        dx, _numeric(lambda z: attnpy.rms_norm(z, 1e-3, weight=w), x, dy),
        rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(
        dw, _numeric(lambda v: attnpy.rms_norm(x, 1e-3, weight=v), w, dy),
        rtol=1e-6, atol=1e-7)
    dgate, dup = attnpy.swiglu_backward(dy, x, up)
    np.testing.assert_allclose(
        dgate, _numeric(lambda g: attnpy.swiglu(g, up), x, dy),
        rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(
        dup, _numeric(lambda u: attnpy.swiglu(x, u), up, dy),
        rtol=1e-6, atol=1e-8)


# ---------------------------------------------------------------------------
# out=, in place, edges, dtypes, threads
# ---------------------------------------------------------------------------

def test_out_and_in_place():
    rng = np.random.default_rng(6)
    x, up = rng.standard_normal((2, 3, 4, 6))
    w = rng.standard_normal(6)
    for fn, args in ((attnpy.rms_norm, dict(weight=w)), (attnpy.silu, {}),
                     (lambda a, **k: attnpy.swiglu(a, up, **k), {})):
        want = fn(x, **args)
        for out in (strided_empty(x.shape, x.dtype),
                    transposed_empty(x.shape, x.dtype), np.empty_like(x)):
            assert fn(x, **args, out=out) is out
            np.testing.assert_array_equal(out, want)
        y = x.copy()
        assert fn(y, **args, out=y) is y
        np.testing.assert_array_equal(y, want)
        z = np.concatenate([x, x], axis=-1)    # out overlapping x otherwise
        fn(z[..., :6], **args, out=z[..., 3:9])
        np.testing.assert_array_equal(z[..., 3:9], want)
    u = up.copy()                               # swiglu into up
    attnpy.swiglu(x, u, out=u)
    np.testing.assert_array_equal(u, attnpy.swiglu(x, up))


def test_edges_and_dtypes():
    assert attnpy.rms_norm(np.zeros((0, 5))).shape == (0, 5)
    assert attnpy.rms_norm(np.zeros((3, 0))).shape == (3, 0)
    dx, dw = attnpy.rms_norm_backward(np.zeros((0, 4)), np.zeros((0, 4)))
    assert dx.shape == (0, 4) and (dw == 0).all() and dw.shape == (4,)
    # a zero row: 0 / sqrt(eps) = 0; dx = dy / sqrt(eps)
    np.testing.assert_array_equal(attnpy.rms_norm(np.zeros((2, 3))), 0)
    dx, _ = attnpy.rms_norm_backward(np.ones((1, 4)), np.zeros((1, 4)), 0.25)
    np.testing.assert_allclose(dx, 2.0, rtol=1e-15)
    y = attnpy.rms_norm(np.array([[1.0, np.nan], [1.0, 2.0]]))
    assert np.isnan(y[0]).all() and not np.isnan(y[1]).any()
    x32 = np.ones((2, 3), np.float32)
    assert attnpy.rms_norm(x32).dtype == np.float32
    assert attnpy.rms_norm(x32, weight=np.ones(3)).dtype == np.float64
    assert attnpy.rms_norm(x32.astype(np.float16)).dtype == np.float16
    assert attnpy.silu([1, 2]).dtype == np.float64
    assert attnpy.swiglu(x32, x32.astype(np.float64)).dtype == np.float64
    assert attnpy.swiglu_backward(x32, x32, x32)[0].dtype == np.float32


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_same_bits_for_any_thread_count(dtype):
    rng = np.random.default_rng(7)
    x, dy, up = (random_array(rng, (64, 128, 96), dtype) for _ in range(3))
    w = random_array(rng, (96,), dtype)
    saved = attnpy.get_num_threads()
    results = []
    try:
        for n in (1, 2, 3):
            attnpy.set_num_threads(n)
            results.append([attnpy.rms_norm(x, weight=w),
                            *attnpy.rms_norm_backward(dy, x, weight=w),
                            attnpy.swiglu(x, up),
                            *attnpy.swiglu_backward(dy, x, up)])
    finally:
        attnpy.set_num_threads(saved)
    for other in results[1:]:
        for a, b in zip(results[0], other):
            assert a.tobytes() == b.tobytes()


def test_errors():
    x = np.ones((2, 3))
    with pytest.raises(ValueError, match=r"rms_norm: weight must have shape "
                       r"\(3,\), the features of x"):
        attnpy.rms_norm(x, weight=np.ones(4))
    with pytest.raises(ValueError, match=r"rms_norm: eps must be >= 0"):
        attnpy.rms_norm(x, -1.0)
    with pytest.raises(TypeError, match=r"rms_norm: eps must be a real"):
        attnpy.rms_norm(x, "small")
    with pytest.raises(ValueError, match=r"rms_norm: x must have at least "
                       r"1 dimension"):
        attnpy.rms_norm(3.0)
    with pytest.raises(ValueError, match=r"rms_norm: out has shape"):
        attnpy.rms_norm(x, out=np.ones((3, 2)))
    with pytest.raises(TypeError, match=r"rms_norm: out has dtype"):
        attnpy.rms_norm(x, out=np.ones((2, 3), np.float32))
    with pytest.raises(TypeError, match=r"rms_norm: x has dtype complex128"):
        attnpy.rms_norm(np.ones(3, complex))
    with pytest.raises(ValueError, match=r"rms_norm_backward: dy must have "
                       r"the shape of x \(dy.shape=\(2, 4\), "
                       r"x.shape=\(2, 3\)\)"):
        attnpy.rms_norm_backward(np.ones((2, 4)), x)
    with pytest.raises(ValueError, match=r"rms_norm_backward: weight must "
                       r"have shape \(3,\)"):
        attnpy.rms_norm_backward(x, x, weight=np.ones((1, 3)))
    with pytest.raises(ValueError, match=r"swiglu: up must have the shape of "
                       r"gate \(up.shape=\(3, 2\), gate.shape=\(2, 3\)\)"):
        attnpy.swiglu(x, np.ones((3, 2)))
    with pytest.raises(TypeError, match=r"swiglu: up must be an array"):
        attnpy.swiglu(x, None)
    with pytest.raises(TypeError, match=r"swiglu: gate has dtype"):
        attnpy.swiglu(np.ones(3, complex), np.ones(3))
    with pytest.raises(ValueError, match=r"swiglu_backward: dy must have the "
                       r"shape of gate"):
        attnpy.swiglu_backward(np.ones(3), x, x)
    with pytest.raises(ValueError, match=r"swiglu_backward: up must have the "
                       r"shape of gate"):
        attnpy.swiglu_backward(x, x, np.ones(3))
    with pytest.raises(ValueError, match=r"silu: x must have at least 1 "
                       r"dimension"):
        attnpy.silu(np.float64(2.0))
    with pytest.raises(TypeError, match=r"silu: x has dtype"):
        attnpy.silu(np.array(["a"]))
