"""Twins of the element-wise activations (attnpy._activations): gelu,
silu and their backward functions, in float64, rounded once to the
result dtype. Every name of ``__all__`` is a name of attnpy.reference."""
import math

import numpy as np

from ._common import (_quiet, _store, grad_dtype, result_dtype)

__all__ = ["gelu", "gelu_backward", "silu"]


def _erf(x):
    """erf element-wise (NumPy has none; math.erf is exact to ~1 ulp)."""
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def _gelu64(h, approximate):
    if approximate == "tanh":
        inner = np.sqrt(2.0 / np.pi) * (h + 0.044715 * h ** 3)
        return 0.5 * h * (1.0 + np.tanh(inner))
    return 0.5 * h * (1.0 + _erf(h / np.sqrt(2.0)))


def _dgelu64(h, approximate):
    if approximate == "tanh":
        k = np.sqrt(2.0 / np.pi)
        t = np.tanh(k * (h + 0.044715 * h ** 3))
        return (0.5 * (1.0 + t)
                + 0.5 * h * (1.0 - t * t) * k * (1.0 + 3 * 0.044715 * h * h))
    return (0.5 * (1.0 + _erf(h / np.sqrt(2.0)))
            + h * np.exp(-0.5 * h * h) / np.sqrt(2.0 * np.pi))


def _check_approximate(approximate, func):
    if approximate not in ("none", "tanh"):
        raise ValueError(f"{func}: approximate must be 'none' or 'tanh', "
                         f"got {approximate!r}")


def gelu(x, *, approximate="none", out=None):
    """GELU: x * Phi(x) = x (1 + erf(x / sqrt 2)) / 2 ("none", BERT), or
    x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) / 2 ("tanh", GPT-2).

    >>> gelu(np.array([-1.0, 0.0, 1.0])).round(4)
    array([-0.1587,  0.    ,  0.8413])
    """
    _check_approximate(approximate, "gelu")
    dtype = result_dtype(x)
    with _quiet():                     # gelu(-inf) = -inf * 0 = NaN
        y = _gelu64(np.asarray(x, dtype=np.float64), approximate)
    return _store(y.astype(dtype), out, "gelu", "out")


def gelu_backward(dy, x, *, approximate="none"):
    """d gelu(x) / dx times dy."""
    _check_approximate(approximate, "gelu_backward")
    dtype = result_dtype(dy, x)
    dtype = grad_dtype(x, dtype)
    with _quiet():
        d = _dgelu64(np.asarray(x, dtype=np.float64), approximate)
        return (np.asarray(dy, dtype=np.float64) * d).astype(dtype)


def silu(x, *, out=None):
    """SiLU (swish): x * sigmoid(x) = x / (1 + exp(-x)), in float64.

    >>> silu(np.array([-2.0, 0.0, 1.0])).round(4)
    array([-0.2384,  0.    ,  0.7311])
    """
    dtype = result_dtype(x)
    x64 = np.asarray(x, dtype=np.float64)
    with _quiet():                     # silu(-inf) = -inf / inf = NaN
        y = x64 / (1.0 + np.exp(-x64))
    return _store(y.astype(dtype), out, "silu", "out")
