"""The element-wise activations: gelu, silu, and their backward
functions. Each is one pass of the C core's bias + activation kernel
(csrc/core/layer/: its list of activations, layer/acts.h, has each one's
formula and derivative, the same bits on every instruction set), or of
the SiLU-gated one (silu). float16 and bfloat16 operands are read in 16
bits, computed exactly as the float32 call computes on the same values,
and a 16-bit result is that float32 result rounded once; a gradient comes
back in x's dtype when x is 16-bit.

A new activation: its line in csrc/core/layer/acts.h, its public
functions here (in ``__all__``: attnpy and its API reference take them
from there), its twin in attnpy/reference/activations.py (the same
names), its entries in tests/_registry.py.
"""
from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from . import _core
from ._types import Approximate, Array, ArrayLike

__all__ = ["gelu", "gelu_backward", "silu"]


def _gelu_act(approximate, fname):
    if isinstance(approximate, str) and approximate in ("none", "tanh"):
        return "gelu" if approximate == "none" else "gelu_tanh"
    raise ValueError(f"{fname}: approximate must be 'none' or 'tanh', got "
                     f"{approximate!r}")


def gelu(x: ArrayLike, *, approximate: Approximate = "none",
         out: Array | None = None) -> Array:
    """Gaussian error linear unit, element-wise.

    ``x * Phi(x) = x * (1 + erf(x / sqrt(2))) / 2`` (``approximate="none"``,
    BERT, ``torch.nn.functional.gelu``), or with ``approximate="tanh"``
    ``x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))) / 2`` (GPT-2).
    float32 is computed with the float32 libm functions.

    Parameters
    ----------
    x : array_like
        Real input, at least 1-D.
    approximate : {"none", "tanh"}
    out : ndarray, optional
        Where to write the result; ``out=x`` works in place.

    Returns
    -------
    ndarray
        x's shape; float32, float16 and bfloat16 keep their dtype (16-bit:
        the float32 result rounded once), the rest is float64.

    Examples
    --------
    >>> import numpy as np, attnpy
    >>> attnpy.gelu(np.array([-1.0, 0.0, 1.0, 3.0])).round(4)
    array([-0.1587,  0.    ,  0.8413,  2.996 ])
    >>> attnpy.gelu(np.array([1.0]), approximate="tanh").round(4)
    array([0.8412])
    """
    fname = "gelu"
    act = _gelu_act(approximate, fname)
    return _core.bias_act(x, activation=act, out=out, fname=fname)


def gelu_backward(dy: ArrayLike, x: ArrayLike, *,
                  approximate: Approximate = "none",
                  out: Array | None = None) -> Array:
    """Gradient of :func:`gelu`: ``dy * gelu'(x)``.

    For "none", ``gelu'(x) = Phi(x) + x * exp(-x^2 / 2) / sqrt(2 pi)``; for
    "tanh" the derivative of the tanh formula. `out=dy` overwrites dy.

    Parameters
    ----------
    dy : array_like
        The loss's gradient with respect to ``gelu(x)``.
    x : array_like
        The forward input (dy's shape).
    approximate : {"none", "tanh"}
        That of the forward call.
    out : ndarray, optional
        Where to write the result.

    Returns
    -------
    ndarray
        The gradient with respect to x.

    Examples
    --------
    >>> import numpy as np, attnpy
    >>> attnpy.gelu_backward(np.ones(3), np.array([-1.0, 0.0, 1.0])).round(4)
    array([-0.0833,  0.5   ,  1.0833])
    """
    fname = "gelu_backward"
    act = _gelu_act(approximate, fname)
    return _core.bias_act_backward(dy, x, activation=act, out=out,
                                   fname=fname)[0]


def silu(x: ArrayLike, *, out: NDArray[np.floating] | None = None
         ) -> NDArray[np.floating]:
    """Sigmoid linear unit (swish), element-wise: ``x * sigmoid(x)``.

    Computed as ``x / (1 + exp(-x))`` in the precision of the dtype (float32
    with ``expf``), as ``torch.nn.functional.silu``: silu(-inf) is NaN
    there and here. float16 and bfloat16 keep their dtype: the float32
    result on the same values, rounded once.

    Parameters
    ----------
    x : array_like
        Real input, at least 1-D.
    out : ndarray, optional
        Where to write the result; ``out=x`` works in place.

    Returns
    -------
    ndarray, the shape of x

    Examples
    --------
    >>> import numpy as np, attnpy
    >>> attnpy.silu(np.array([-2.0, 0.0, 1.0, 10.0])).round(4)
    array([-0.2384,  0.    ,  0.7311,  9.9995])
    """
    return _core.swiglu(x, out=out, fname="silu")
