"""float32 gelu and gelu_backward (layer/act_tmpl.h's rows, the same bits
on every instruction set) against the float64
path: accuracy over the whole range including the far negative tail,
special values, and the same bits for every memory layout."""
import math

import numpy as np
import pytest

import attnpy


def _exact(x, approximate):
    """gelu in float64 without cancellation for negative x: x Phi(x) with
    Phi from erfc, or x / (1 + exp(-2u)) for the tanh form."""
    x = x.astype(np.float64)
    if approximate == "none":
        erfc = np.vectorize(math.erfc)
        return x * 0.5 * erfc(-x / math.sqrt(2))
    u = math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)
    with np.errstate(over="ignore"):
        return x / (1 + np.exp(-2 * u))


def _f64(fn, *arrays, **kw):
    return fn(*(a.astype(np.float64) for a in arrays), **kw)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_float32_gelu_accuracy(approximate):
    x = np.linspace(-14, 9, 400001).astype(np.float32)
    got = attnpy.gelu(x, approximate=approximate).astype(np.float64)
    want = _exact(x, approximate)
    err = np.abs(got - want)
    assert err.max() < 6e-7
    # relative, down to tiny negative outputs (1 + erf(z) in float32
    # would be 0 from z = -3.9 on: erfc is computed instead)
    big = np.abs(want) > 1e-30
    assert (err[big] / np.abs(want[big])).max() < 2e-5
    dy = np.ones_like(x)
    dgot = attnpy.gelu_backward(dy, x, approximate=approximate)
    dwant = _f64(attnpy.gelu_backward, dy, x, approximate=approximate)
    assert np.abs(dgot - dwant).max() < 6e-7


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_float32_special_values_follow_float64(approximate):
    v = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, -1e-30, -100,
                  100, 3.0, -3.0], np.float32)
    got = attnpy.gelu(v, approximate=approximate)
    want = _f64(attnpy.gelu, v, approximate=approximate)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-37)
    d = attnpy.gelu_backward(np.ones_like(v), v, approximate=approximate)
    dw = _f64(attnpy.gelu_backward, np.ones_like(v), v,
              approximate=approximate)
    np.testing.assert_array_equal(np.isnan(d), np.isnan(dw))
    np.testing.assert_allclose(d, dw, rtol=1e-6, atol=1e-12)


@pytest.mark.parametrize("activation", ["gelu", "gelu_tanh"])
def test_float32_every_layout_same_bits(activation):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((6, 301)) * 4).astype(np.float32)
    dy = rng.standard_normal(x.shape).astype(np.float32)
    approximate = "none" if activation == "gelu" else "tanh"
    y = attnpy.gelu(x, approximate=approximate)
    d = attnpy.gelu_backward(dy, x, approximate=approximate)
    xt = np.asfortranarray(x)              # column stride != 1
    np.testing.assert_array_equal(attnpy.gelu(xt, approximate=approximate),
                                  y)
    np.testing.assert_array_equal(
        attnpy.gelu_backward(np.asfortranarray(dy), xt,
                             approximate=approximate), d)
    wide = np.zeros((6, 602), np.float32)
    wide[:, ::2] = x                       # every other element
    np.testing.assert_array_equal(
        attnpy.gelu(wide[:, ::2], approximate=approximate), y)
    # feed_forward's fused bias + activation: the bias added in the pass
    W1 = np.eye(301, dtype=np.float32)
    b1 = rng.standard_normal(301).astype(np.float32)
    W2 = np.eye(301, dtype=np.float32)
    ff = attnpy.feed_forward(x, W1, b1, W2, None, activation=activation)
    np.testing.assert_array_equal(
        ff, attnpy.gelu(x + b1, approximate=approximate))
