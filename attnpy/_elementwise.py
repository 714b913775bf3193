"""The element-wise family: softmax, its backward pass and Jacobian, and
the head reshapes (split_heads, a view; combine_heads, a strided copy in
C)."""
from __future__ import annotations

import numpy as np

from . import _core
from ._validate import axis as _axis, check_out as _check_out
from ._validate import empty as _empty, public, size as _size
from ._types import Array, ArrayLike

__all__ = ["softmax", "softmax_backward", "softmax_jacobian", "split_heads",
           "combine_heads"]


@public("softmax")
def softmax(x: ArrayLike, axis: int = -1, *,
            out: Array | None = None) -> Array:
    """Numerically stable softmax along one axis.

    ``exp(x - max(x)) / sum(exp(x - max(x)))`` along `axis`, exactly the
    tutorial's formula, computed in C. NaN and infinities propagate as they
    do in NumPy (a row of all ``-inf`` gives NaN, a row with one ``+inf``
    gives NaN where the others are finite).

    Parameters
    ----------
    x : array_like
        Real input. float32 and float64 are computed in their own precision,
        integers and booleans as float64. float16 and bfloat16
        (``ml_dtypes.bfloat16``) are read in 16 bits, one row at a time,
        computed exactly as the float32 call on the same values, and the
        result (of x's dtype) is rounded once to nearest even.
    axis : int, optional
        The axis to normalise along (default: the last).
    out : ndarray, optional
        Where to write the result: exactly x's shape, the result dtype or
        a wider float (a float32 `out` for float16 `x` gets the float32
        result unrounded), any strides. ``out=x`` computes in place.

    Returns
    -------
    ndarray
        The probabilities; each slice along `axis` sums to 1.

    Examples
    --------
    >>> import numpy as np, attnpy
    >>> attnpy.softmax([1.0, 2.0, 3.0]).round(4)
    array([0.09  , 0.2447, 0.6652])
    >>> attnpy.softmax([[0.0, 0.0], [0.0, float("-inf")]])
    array([[0.5, 0.5],
           [1. , 0. ]])

    float16 stays float16: the float32 result, rounded once

    >>> attnpy.softmax(np.array([1.0, 2.0, 3.0], np.float16))
    array([0.09  , 0.2448, 0.665 ], dtype=float16)
    """
    x = _core.as_array16(x, "softmax", "x")
    return _core.softmax(x, axis=_axis(axis, x.ndim, "softmax"), out=out,
                         fname="softmax")


def softmax_backward(dy: ArrayLike, y: ArrayLike, axis: int = -1, *,
                     out: Array | None = None) -> Array:
    """Gradient of a loss through ``y = softmax(x, axis)``.

    Given ``y`` (the softmax's output) and ``dy`` (the loss's gradient with
    respect to ``y``), returns the gradient with respect to ``x``::

        dx = y * (dy - sum(dy * y, axis))

    which is ``J^T dy`` for the Jacobian ``J = diag(y) - y y^T`` of each
    slice (:func:`softmax_jacobian`) without ever building ``J``. The sum is
    accumulated in double precision, and ``dy - sum`` is taken before the
    product with ``y``.

    Parameters
    ----------
    dy : array_like
        Gradient with respect to the softmax's output; ``y``'s shape.
    y : array_like
        The softmax's output, ``softmax(x, axis)``.
    axis : int, optional
        The axis the softmax normalised along (default: the last).
    out : ndarray, optional
        Where to write the result: exactly ``y``'s shape and the result
        dtype (NumPy's result type of dy and y: float16 for two float16
        inputs, float32 for float16 with float32 or with bfloat16; bool
        and integers count as float64) or a wider float, any strides.
        ``out=dy`` or ``out=y`` computes in place. 16-bit inputs are read
        in 16 bits and a 16-bit result is the float32 result rounded once.

    Returns
    -------
    ndarray
        ``dx``, ``y``'s shape. Each slice along `axis` sums to 0 (up to
        rounding): adding a constant to ``x`` does not change softmax.

    Examples
    --------
    >>> import numpy as np, attnpy
    >>> y = attnpy.softmax([1.0, 2.0, 3.0])
    >>> dx = attnpy.softmax_backward([0.0, 0.0, 1.0], y)  # d y[2] / d x
    >>> dx.round(4)
    array([-0.0599, -0.1628,  0.2227])
    >>> bool(np.allclose(dx, attnpy.softmax_jacobian(y)[2]))
    True
    >>> abs(float(dx.sum())) < 1e-15
    True
    """
    dy = _core.as_array16(dy, "softmax_backward", "dy")
    y = _core.as_array16(y, "softmax_backward", "y")
    axis = _axis(axis, y.ndim, "softmax_backward")
    return _core.softmax_backward(dy, y, axis=axis, out=out,
                                  fname="softmax_backward")


def softmax_jacobian(y: ArrayLike, axis: int = -1) -> Array:
    """The Jacobian of softmax, as an array you can print.

    For ``y = softmax(x, axis)``, ``J[..., i, j] = d y_i / d x_j =
    y_i * ([i == j] - y_j)``, i.e. ``diag(y) - y y^T`` for each slice: the
    matrix the "inside the attention" tutorial writes out. Each row sums to
    0, and ``J`` is symmetric.

    Parameters
    ----------
    y : array_like
        The softmax's output.
    axis : int, optional
        The axis the softmax normalised along (default: the last).

    Returns
    -------
    ndarray
        Shape ``y.shape`` without `axis`, then ``(n, n)`` with ``n =
        y.shape[axis]``; float32 for float32/float16 input, else float64.
        It is n times larger than ``y``: for gradients use
        :func:`softmax_backward`, which never builds it.

    Examples
    --------
    >>> import numpy as np, attnpy
    >>> y = attnpy.softmax([1.0, 2.0, 3.0])
    >>> J = attnpy.softmax_jacobian(y)
    >>> J.round(4)
    array([[ 0.0819, -0.022 , -0.0599],
           [-0.022 ,  0.1848, -0.1628],
           [-0.0599, -0.1628,  0.2227]])
    >>> np.abs(J.sum(axis=-1)).max() < 1e-15  # each row sums to 0
    np.True_
    >>> attnpy.softmax_jacobian(np.full((2, 4, 3), 0.25), axis=1).shape
    (2, 3, 4, 4)
    """
    y = _core.as_real(y, "softmax_jacobian", "y")
    axis = _axis(axis, y.ndim, "softmax_jacobian")
    return _core.softmax_jacobian(y, axis=axis, fname="softmax_jacobian")


def split_heads(x: ArrayLike, num_heads: int) -> Array:
    """(..., T, H*dk) -> (..., H, T, dk): a zero-copy view when possible.

    Parameters
    ----------
    x : array_like, shape (..., T, d_model)
    num_heads : int
        H, which must divide d_model.

    Returns
    -------
    ndarray, shape (..., H, T, d_model // H)
        A view of `x` when `x` is an array (no copy).

    Examples
    --------
    >>> import numpy as np, attnpy
    >>> x = np.arange(12.0).reshape(1, 2, 6)       # (batch, T, d_model)
    >>> h = attnpy.split_heads(x, 3)
    >>> h.shape
    (1, 3, 2, 2)
    >>> bool(np.shares_memory(h, x))
    True
    """
    fname = "split_heads"
    H = _size(num_heads, fname, "num_heads")
    x = _core.as_real(x, fname, "x")
    if x.ndim < 2:
        raise ValueError(f"{fname}: x must have at least 2 dimensions "
                         f"(..., T, d_model), got shape {x.shape}")
    d = x.shape[-1]
    if H == 0 or d % H:
        raise ValueError(f"{fname}: d_model={d} is not divisible by "
                         f"num_heads={H} (x.shape={x.shape})")
    try:
        y = x.reshape(x.shape[:-1] + (H, d // H))
    except (ValueError, OverflowError):  # only d == 0 with a huge H
        raise ValueError(f"{fname}: cannot split x.shape={x.shape} into "
                         f"num_heads={H} heads") from None
    return np.swapaxes(y, -3, -2)


def combine_heads(x: ArrayLike, *, out: Array | None = None) -> Array:
    """(..., H, T, dk) -> (..., T, H*dk), the inverse of :func:`split_heads`.

    A copy in x's own dtype (float32/float64 by the C core).

    Parameters
    ----------
    x : array_like, shape (..., H, T, dk)
    out : ndarray, optional
        A (..., T, H*dk) array of x's dtype to fill, any strides.

    Returns
    -------
    ndarray, shape (..., T, H*dk)

    Examples
    --------
    >>> import numpy as np, attnpy
    >>> x = np.arange(12.0).reshape(1, 2, 6)
    >>> bool(np.array_equal(attnpy.combine_heads(attnpy.split_heads(x, 3)), x))
    True
    """
    fname = "combine_heads"
    x = _core.as_real(x, fname, "x")
    if x.dtype.kind == "f" and x.dtype.itemsize in (4, 8):  # any byte order
        return _core.combine_heads(x, out=out, fname=fname)
    # other real dtypes: a pure data move, so the dtype is kept (NumPy does
    # it; the C core copies only the float types it computes in)
    if x.ndim < 3:
        raise ValueError(f"{fname}: x must have at least 3 dimensions "
                         f"(..., H, T, dk), got shape {x.shape}")
    *lead, H, T, dk = x.shape
    result = _empty((*lead, T, H * dk), x.dtype, fname)
    np.copyto(result.reshape(*lead, T, H, dk), np.swapaxes(x, -3, -2))
    if out is None:
        return result
    _check_out(out, result.shape, result.dtype, fname)
    if not out.flags.writeable:
        raise ValueError(f"{fname}: out is read-only")
    np.copyto(out, result)
    return out
