"""Twins of the pieces of a Llama-family decoder: RMS norm and the SwiGLU
gate, with their backward passes (float64 inside; SiLU is
activations.py's)."""
import numpy as np

from ._common import (_quiet, _store, grad_dtype, result_dtype)


def rms_norm(x, eps=1e-6, *, weight=None, out=None):
    """RMS normalisation over the last axis (Llama's RMSNorm):

        y = x / sqrt(mean(x^2) + eps) * weight

    Computed in float64, then rounded to the compute dtype.

    >>> rms_norm(np.array([3.0, 4.0]), eps=0.0).round(4)
    array([0.8485, 1.1314])
    """
    dtype = result_dtype(*(a for a in (x, weight) if a is not None))
    x64 = np.asarray(x, dtype=np.float64)
    with _quiet():                     # NaN/inf rows; n == 0: empty anyway
        ms = (x64 * x64).sum(axis=-1, keepdims=True) / x64.shape[-1]
        y = x64 / np.sqrt(ms + eps)
    if weight is not None:
        y = y * np.asarray(weight, dtype=np.float64)
    return _store(y.astype(dtype), out, "rms_norm", "out")


def rms_norm_backward(dy, x, eps=1e-6, *, weight=None):
    """Gradients of rms_norm: (dx, dweight), step by step (float64).

    y = xhat * w with xhat = x * r, r = (mean(x^2) + eps)^-1/2:
    dxhat = dy w; dx = dxhat r + x dr/dx summed over the row, where
    dr/dx_i = -r^3 x_i / n.
    """
    dtype = result_dtype(*(a for a in (dy, x, weight) if a is not None))
    x64 = np.asarray(x, dtype=np.float64)
    dy64 = np.asarray(dy, dtype=np.float64)
    n = x64.shape[-1]
    w = 1.0 if weight is None else np.asarray(weight, dtype=np.float64)
    with _quiet():
        r = 1.0 / np.sqrt((x64 * x64).sum(axis=-1, keepdims=True) / n + eps)
        dxhat = dy64 * w
        dr = (dxhat * x64).sum(axis=-1, keepdims=True)    # through r
        dx = dxhat * r + dr * (-(r ** 3) * x64 / n)
        dweight = (dy64 * x64 * r).sum(axis=tuple(range(x64.ndim - 1)))
    wd = dtype if weight is None else grad_dtype(weight, dtype)
    return dx.astype(grad_dtype(x, dtype)), dweight.astype(wd)


def swiglu(gate, up, *, out=None):
    """silu(gate) * up (Llama's gated feed-forward unit), in float64.

    >>> swiglu(np.array([1.0]), np.array([2.0])).round(4)
    array([1.4621])
    """
    dtype = result_dtype(gate, up)
    g = np.asarray(gate, dtype=np.float64)
    if g.shape != np.shape(up):
        raise ValueError(f"swiglu: up must have the shape of gate "
                         f"(up.shape={np.shape(up)}, gate.shape={g.shape})")
    with _quiet():
        y = g / (1.0 + np.exp(-g)) * np.asarray(up, dtype=np.float64)
    return _store(y.astype(dtype), out, "swiglu", "out")


def swiglu_backward(dy, gate, up):
    """Gradients of swiglu: (dgate, dup), s = sigmoid(gate):
    dgate = dy up s (1 + gate (1 - s)), dup = dy silu(gate)."""
    dtype = result_dtype(dy, gate, up)
    g = np.asarray(gate, dtype=np.float64)
    d = np.asarray(dy, dtype=np.float64)
    with _quiet():
        s = 1.0 / (1.0 + np.exp(-g))
        dgate = d * np.asarray(up, dtype=np.float64) * s * (1 + g * (1 - s))
        dup = d * g * s
    return (dgate.astype(grad_dtype(gate, dtype)),
            dup.astype(grad_dtype(up, dtype)))
