"""Twins of the element-wise family: softmax and its gradients, heads."""
import numpy as np

from ._common import (_as_compute, _quiet, _store, compute_dtype,
                      result_dtype)


# ---------------------------------------------------------------------------
# softmax
# ---------------------------------------------------------------------------

def softmax(x, axis=-1, *, out=None):
    """softmax(x)_j = exp(x_j - max(x)) / sum_k exp(x_k - max(x)) along `axis`.

    Exactly NumPy's arithmetic, NaN and inf included: a row holding a NaN
    or a +inf, or a row that is all -inf, comes out all NaN.
    float16 and bfloat16: computed in float32, rounded once to x's dtype;
    bool/int -> float64. `out` may be `x` (in place).

    >>> softmax(np.array([0.0, np.log(3.0)]))
    array([0.25, 0.75])
    """
    x = np.asarray(x)
    rd = result_dtype(x)
    dtype = np.dtype(np.float64 if rd == np.float64 else np.float32)
    x = _as_compute(x, dtype)
    if x.ndim == 0:
        raise ValueError("softmax: x must have at least one dimension")
    if x.shape[axis] == 0:                     # nothing to normalise
        return _store(x.astype(rd), out, "softmax", "out")
    # -inf - (-inf) and inf - inf are NaN, as in NumPy; do not warn about it.
    with _quiet():
        m = np.max(x, axis=axis, keepdims=True)
        e = np.exp(x - m)
        result = e / np.sum(e, axis=axis, keepdims=True)
    return _store(result.astype(rd, copy=False), out, "softmax", "out")


def _same_shape(dy, y, func):
    if dy.shape != y.shape:
        raise ValueError(f"{func}: dy and y must have the same shape "
                         f"(dy.shape={dy.shape}, y.shape={y.shape})")


def softmax_backward(dy, y, axis=-1, *, out=None):
    """dx = y * (dy - sum(dy * y, axis)): the gradient through y = softmax(x).

    The sum in float64, then rounded to the compute dtype; ``dy - sum``
    before the product with y.

    >>> y = softmax(np.array([0.0, np.log(3.0)]))
    >>> softmax_backward(np.array([1.0, 0.0]), y)   # d y_0 / d x
    array([ 0.1875, -0.1875])
    """
    dy, y = np.asarray(dy), np.asarray(y)
    _same_shape(dy, y, "softmax_backward")
    rd = result_dtype(dy, y)
    dtype = np.dtype(np.float64 if rd == np.float64 else np.float32)
    dy, y = _as_compute(dy, dtype), _as_compute(y, dtype)
    with _quiet():
        s = np.sum(dy.astype(np.float64) * y, axis=axis, keepdims=True)
        result = y * (dy - s.astype(dtype))
    return _store(result.astype(rd, copy=False), out, "softmax_backward",
                  "out")


def softmax_jacobian(y, axis=-1):
    """J[..., i, j] = y_i * ([i == j] - y_j) = diag(y) - y y^T per slice.

    The slices along `axis` become the last two dims: shape ``y.shape``
    without `axis`, then (n, n).

    >>> softmax_jacobian(np.array([0.25, 0.75]))
    array([[ 0.1875, -0.1875],
           [-0.1875,  0.1875]])
    """
    y = np.asarray(y)
    y = _as_compute(y, compute_dtype(y))
    y = np.moveaxis(y, axis, -1)
    eye = np.eye(y.shape[-1], dtype=y.dtype)
    with _quiet():
        return y[..., :, None] * (eye - y[..., None, :])



# ---------------------------------------------------------------------------
# heads
# ---------------------------------------------------------------------------

def split_heads(x, num_heads):
    """(..., T, H*dk) -> (..., H, T, dk): head h gets columns h*dk:(h+1)*dk.

    >>> split_heads(np.arange(4).reshape(1, 4), 2)
    array([[[0, 1]],
    <BLANKLINE>
           [[2, 3]]])
    """
    x = np.asarray(x)
    *lead, T, D = x.shape
    if D % num_heads != 0:
        raise ValueError(f"split_heads: {D} features do not split into "
                         f"{num_heads} heads")
    dk = D // num_heads
    x = x.reshape(*lead, T, num_heads, dk)       # (..., T, H, dk)
    return np.swapaxes(x, -3, -2)                # (..., H, T, dk)


def combine_heads(x, *, out=None):
    """(..., H, T, dk) -> (..., T, H*dk), the inverse of split_heads."""
    x = np.asarray(x)
    *lead, H, T, dk = x.shape
    x = np.swapaxes(x, -3, -2)                   # (..., T, H, dk)
    # a fresh C-contiguous copy, in native byte order
    result = np.ascontiguousarray(x, dtype=x.dtype.newbyteorder("="))
    result = result.reshape(*lead, T, H * dk)
    return _store(result, out, "combine_heads", "out")
