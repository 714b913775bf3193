"""Gradients of softmax: its backward pass and its Jacobian, in C."""
from __future__ import annotations

from . import _core
from ._validate import axis as _axis
from ._types import Array, ArrayLike

__all__ = ["softmax_backward", "softmax_jacobian"]


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
        dtype (float32 when both inputs are float32 or float16, else
        float64), any strides. ``out=dy`` or ``out=y`` computes in place.

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
    dy = _core.as_real(dy, "softmax_backward", "dy")
    y = _core.as_real(y, "softmax_backward", "y")
    axis = _axis(axis, y.ndim, "softmax_backward")
    return _core.softmax_backward(dy, y, axis, out, "softmax_backward")


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
    return _core.softmax_jacobian(y, axis, "softmax_jacobian")
