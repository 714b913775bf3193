"""The transformer layer's pieces around attention: layer_norm,
feed_forward, the Llama family's rms_norm and swiglu, and their backward
functions (the element-wise activations are attnpy._activations).

Matrix products go through NumPy's matmul (its BLAS is the fastest GEMM at
hand); the C core (csrc/core/layer/) does what surrounds them in one pass
over memory: mean, variance and normalisation of a row (with the residual
added on the way), bias + activation. Row sums of the backward passes
(dweight, dbias) are reduced in a fixed order: the same bits for any
number of threads.

float16 and bfloat16 (``ml_dtypes.bfloat16``) operands are read in 16 bits
by the C kernels, one row at a time (never a whole-array copy), computed
exactly as the float32 call computes on the same values, and a 16-bit
result is that float32 result rounded once to nearest even. The result
dtype is NumPy's result type of the operands (float16 + float16 ->
float16, float16 + float32 -> float32, float16 + bfloat16 -> float32);
``out=`` may also be a wider float; a gradient comes back in the dtype of
the operand it belongs to when that operand is 16-bit.
"""
from __future__ import annotations

from typing import Any
import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _core
from ._validate import flag as _flag, is_16bit as _is16, real as _real
from ._validate import result_dtype as _result_dtype
from ._types import Activation, Array, ArrayLike

__all__ = ["layer_norm", "layer_norm_backward", "feed_forward",
           "feed_forward_backward", "rms_norm", "rms_norm_backward",
           "swiglu", "swiglu_backward"]

_ACTIVATIONS = ("relu", "gelu", "gelu_tanh")


def _eps(eps, fname, arg="eps"):
    e = _real(eps, fname, arg)
    if not e >= 0:
        raise ValueError(f"{fname}: {arg} must be >= 0, got {eps!r}")
    return e


def _activation(activation, fname):
    if isinstance(activation, str) and activation in _ACTIVATIONS:
        return activation
    raise ValueError(f"{fname}: activation must be 'relu', 'gelu' or "
                     f"'gelu_tanh', got {activation!r}")


def layer_norm(x: ArrayLike, eps: float = 1e-6, *,
               weight: ArrayLike | None = None,
               bias: ArrayLike | None = None, eps_in_sqrt: bool = False,
               out: Array | None = None) -> Array:
    """Layer normalisation over the last axis (the tutorial's layer_norm).

    ``(x - mean) / (std + eps)`` per row of the last axis, the tutorial's
    formula (std is the population standard deviation, as ``np.std``);
    with ``eps_in_sqrt=True``, ``(x - mean) / sqrt(var + eps)`` as PyTorch's
    ``LayerNorm`` and BERT. Then ``* weight + bias`` when given. Mean and
    variance are accumulated in float64 for either dtype.

    Parameters
    ----------
    x : array_like, shape (..., n)
        Real input; float32 and float64 are computed in their own precision
        (the result dtype follows NumPy's promotion of x, weight, bias);
        float16 and bfloat16 are read in 16 bits, a 16-bit result rounded
        once from the float32 computation.
    eps : float, optional
        Added to the standard deviation (default 1e-6, the tutorial's) or,
        with `eps_in_sqrt`, to the variance.
    weight, bias : array_like, shape (n,), optional
        Per-feature scale and shift (PyTorch's ``elementwise_affine``).
    eps_in_sqrt : bool, optional
        Use ``sqrt(var + eps)`` instead of ``std + eps``.
    out : ndarray, optional
        Where to write the result (exactly its shape and dtype, any
        strides); ``out=x`` normalises in place.

    Returns
    -------
    ndarray, shape (..., n)

    See Also
    --------
    layer_norm_backward : the gradients.

    Examples
    --------
    >>> import numpy as np, attnpy
    >>> x = np.array([[1.0, 2.0, 3.0], [2.0, 2.0, 8.0]])
    >>> attnpy.layer_norm(x).round(4)
    array([[-1.2247,  0.    ,  1.2247],
           [-0.7071, -0.7071,  1.4142]])
    >>> ref = attnpy.reference.tutorial_layer_norm(x)
    >>> bool(np.allclose(attnpy.layer_norm(x), ref, rtol=1e-14, atol=0))
    True
    """
    fname = "layer_norm"
    eps = _eps(eps, fname)
    return _core.layer_norm(x, weight=weight, bias=bias, eps=eps,
                            eps_in_sqrt=_flag(eps_in_sqrt, fname,
                                              "eps_in_sqrt"),
                            out=out, fname=fname)


def layer_norm_backward(dy: ArrayLike, x: ArrayLike, eps: float = 1e-6, *,
                        weight: ArrayLike | None = None,
                        eps_in_sqrt: bool = False,
                        out: Array | None = None) -> Any:
    """Gradients of :func:`layer_norm`: ``(dx, dweight, dbias)``.

    `x`, `eps`, `weight` and `eps_in_sqrt` are those of the forward call
    (the mean and standard deviation are recomputed from x, with the same
    bits as the forward pass). With ``g = dy * weight`` and ``xhat`` the
    normalised x::

        dx      = rstd * (g - mean(g) - k * xhat * mean(g * xhat))
        dweight = sum over rows of dy * xhat,   dbias = sum over rows of dy

    where ``rstd = 1 / sqrt(var + eps)`` and ``k = 1`` (eps_in_sqrt), or
    ``rstd = 1 / (std + eps)`` and ``k = 1 / (std * rstd)`` (the tutorial's
    form; 0 when std == 0, as PyTorch's std backward). Sums over a row and
    over rows are in float64, over rows in a fixed order.

    Parameters
    ----------
    dy : array_like, shape (..., n)
        Gradient of the loss with respect to layer_norm's output.
    x, eps, weight, eps_in_sqrt
        As in the forward call.
    out : ndarray, optional
        Where to write dx; ``out=dy`` overwrites dy.

    Returns
    -------
    dx : ndarray, shape (..., n)
    dweight, dbias : ndarray, shape (n,)
        The gradients for weight and bias (as if weight were ones when it
        is None). dx has x's dtype and dweight weight's when those are
        16-bit (the float32 gradient rounded once), else the result dtype.

    Examples
    --------
    >>> import numpy as np, attnpy
    >>> rng = np.random.default_rng(0)
    >>> x, dy = rng.standard_normal((2, 4, 8))
    >>> dx, dw, db = attnpy.layer_norm_backward(dy, x)
    >>> ref = attnpy.reference.layer_norm_backward(dy, x)
    >>> bool(np.allclose(dx, ref[0], rtol=1e-10, atol=1e-12))
    True
    >>> bool(np.allclose(db, dy.sum(axis=0)))
    True
    """
    fname = "layer_norm_backward"
    eps = _eps(eps, fname)
    return _core.layer_norm_backward(
        dy, x, weight=weight, eps=eps,
        eps_in_sqrt=_flag(eps_in_sqrt, fname, "eps_in_sqrt"),
        return_dweight=True, return_dbias=True, out=out, fname=fname)


# ---------------------------------------------------------------------------
# feed-forward network
# ---------------------------------------------------------------------------

def _own(g, a):
    """Gradient g of operand a: in a's dtype when that is 16-bit (the
    float32 gradient rounded once), else as computed."""
    return g if g is None or not _is16(a.dtype) else g.astype(a.dtype)


def _ffn_operands(fname, x, W1, b1, W2, b2, dy=None):
    """The operands, shapes checked, and the result dtype: the matrix
    products' operands in the compute dtype (float32 for 16-bit data:
    NumPy's BLAS has no 16-bit GEMM), the biases as given when 16-bit
    (the C kernels read them in 16 bits), the rest in the compute dtype."""
    names = ("x", "W1", "b1", "W2", "b2", "dy")
    # b1, b2 may be None; dy is None in the forward call only
    optional = ("b1", "b2") if fname.endswith("backward") else \
        ("b1", "b2", "dy")
    raw = [None if a is None and n in optional
           else _core.as_array16(a, fname, n)
           for a, n in zip((x, W1, b1, W2, b2, dy), names)]
    rd = _result_dtype(*(None if a is None else a.dtype for a in raw))
    dt = np.dtype(np.float64 if rd == np.float64 else np.float32)
    x, W1, b1, W2, b2, dy = (
        None if a is None else a if k in (2, 4) and _is16(a.dtype)
        else a.astype(dt, copy=False)
        for k, a in enumerate(raw))
    if x.ndim < 1:
        raise ValueError(f"{fname}: x must have at least 1 dimension "
                         f"(..., d_model), got shape {x.shape}")
    d = x.shape[-1]
    if W1.ndim != 2 or W1.shape[0] != d:
        raise ValueError(f"{fname}: W1 must have shape (d_model={d}, d_ff), "
                         f"got {W1.shape} (x.shape={x.shape})")
    f = W1.shape[1]
    if W2.ndim != 2 or W2.shape[0] != f:
        raise ValueError(f"{fname}: W2 must have shape (d_ff={f}, d_out), "
                         f"got {W2.shape} (W1.shape={W1.shape})")
    for b, name, n in ((b1, "b1", f), (b2, "b2", W2.shape[1])):
        if b is not None and b.shape != (n,):
            raise ValueError(f"{fname}: {name} must have shape ({n},), got "
                             f"{b.shape}")
    if dy is not None and dy.shape != x.shape[:-1] + (W2.shape[1],):
        raise ValueError(f"{fname}: dy must have the output's shape "
                         f"{x.shape[:-1] + (W2.shape[1],)}, got {dy.shape}")
    return (x, W1, b1, W2, b2, dy), raw, rd


def _rows(a):
    """(..., n) -> (rows, n): one matrix for one GEMM (a view if it can)."""
    return a if a.ndim == 2 else a.reshape(math.prod(a.shape[:-1]),
                                           a.shape[-1])


def _ffn_hidden(x2, W1, b1, act, fname, keep):
    """x2 (rows, d) -> (pre, hidden): pre = x2 W1 (bias not added, kept
    only when `keep` for the backward pass), hidden = act(pre + b1)."""
    pre = np.matmul(x2, W1)
    hidden = _core.bias_act(pre, bias=b1, activation=act,
                            out=None if keep else pre, fname=fname)
    return (pre if keep else None), hidden


def _ffn_grads(dy2, x2, pre, hidden, W1, b1, W2, b2, act, fname):
    """Gradients of the feed-forward network from its intermediates,
    all 2-D: (dx2, dW1, db1, dW2, db2)."""
    dW2 = np.matmul(hidden.T, dy2)
    db2 = None if b2 is None else dy2.sum(axis=0, dtype=np.float64)
    dh = np.matmul(dy2, W2.T)
    dpre, db1 = _core.bias_act_backward(dh, pre, bias=b1, activation=act,
                                        return_dbias=b1 is not None, out=dh,
                                        fname=fname)
    dW1 = np.matmul(x2.T, dpre)
    dx2 = np.matmul(dpre, W1.T)
    if db2 is not None:
        db2 = db2.astype(b2.dtype if _is16(b2.dtype) else dy2.dtype)
    return dx2, dW1, db1, dW2, db2


def feed_forward(x: ArrayLike, W1: ArrayLike, b1: ArrayLike | None,
                 W2: ArrayLike, b2: ArrayLike | None, *, activation: Activation = "relu") -> Array:
    """Position-wise feed-forward network: ``act(x @ W1 + b1) @ W2 + b2``.

    The tutorial's ``feed_forward`` (``activation="relu"``), or with
    ``"gelu"`` (erf form, BERT) or ``"gelu_tanh"`` (GPT-2). The two matrix
    products are NumPy's (BLAS); the bias and the activation are one pass
    in C, in place on the product.

    Parameters
    ----------
    x : array_like, shape (..., d_model)
    W1 : array_like, shape (d_model, d_ff)
    b1 : array_like, shape (d_ff,), or None
    W2 : array_like, shape (d_ff, d_out)
    b2 : array_like, shape (d_out,), or None
    activation : {"relu", "gelu", "gelu_tanh"}

    Returns
    -------
    ndarray, shape (..., d_out)
        In the result dtype of the operands (float32 if all are float32;
        float16 if all are float16, bfloat16 if all are bfloat16, float32
        for mixed 16-bit and float32). With 16-bit operands the products
        run in float32 (NumPy's BLAS), the biases are read in 16 bits by
        the C kernels, and a 16-bit result is the float32 one rounded once.

    See Also
    --------
    feed_forward_backward : the gradients.

    Examples
    --------
    >>> import numpy as np, attnpy
    >>> rng = np.random.default_rng(0)
    >>> x = rng.standard_normal((2, 5, 8))
    >>> W1, W2 = rng.standard_normal((8, 32)), rng.standard_normal((32, 8))
    >>> b1, b2 = np.zeros(32), np.zeros(8)
    >>> y = attnpy.feed_forward(x, W1, b1, W2, b2)
    >>> ref = attnpy.reference.tutorial_feed_forward(x, W1, b1, W2, b2)
    >>> y.shape, bool(np.allclose(y, ref, rtol=1e-12, atol=1e-12))
    ((2, 5, 8), True)
    """
    fname = "feed_forward"
    act = _activation(activation, fname)
    (x, W1, b1, W2, b2, _), _, rd = _ffn_operands(fname, x, W1, b1, W2, b2)
    _, hidden = _ffn_hidden(_rows(x), W1, b1, act, fname, False)
    y = np.matmul(hidden, W2)
    if b2 is not None:
        _core.bias_act(y, bias=b2, out=y, fname=fname)
    if _is16(rd):
        y = y.astype(rd)
    return y.reshape(x.shape[:-1] + (W2.shape[1],))


def feed_forward_backward(dy: ArrayLike, x: ArrayLike, W1: ArrayLike,
                          b1: ArrayLike | None, W2: ArrayLike,
                          b2: ArrayLike | None, *,
                          activation: Activation = "relu"
                          ) -> tuple[Array, ...]:
    """Gradients of :func:`feed_forward`: ``(dx, dW1, db1, dW2, db2)``.

    The arguments after `dy` are those of the forward call; the hidden
    layer is recomputed. With ``pre = x W1 + b1`` and ``h = act(pre)``::

        dW2 = h^T dy,   db2 = sum over rows of dy
        dpre = (dy W2^T) * act'(pre)     (one pass in C, with db1)
        dW1 = x^T dpre, db1 = sum over rows of dpre,   dx = dpre W1^T

    (relu'(pre) = 1 where pre > 0, else 0). db1 / db2 are None when b1 /
    b2 are. Sums over rows are in float64.

    Parameters
    ----------
    dy : array_like, shape (..., d_model)
        The loss's gradient with respect to the output.
    x, W1, b1, W2, b2, activation
        Those of the forward call.

    Returns
    -------
    dx, dW1, db1, dW2, db2 : ndarray (db1, db2: or None)
        Each in the compute dtype, or, for a float16 / bfloat16 operand,
        in that operand's own dtype (its float32 gradient rounded once).

    Examples
    --------
    >>> import numpy as np, attnpy
    >>> rng = np.random.default_rng(0)
    >>> x, dy = rng.standard_normal((2, 3, 4))
    >>> W1, W2 = rng.standard_normal((4, 6)), rng.standard_normal((6, 4))
    >>> b1, b2 = rng.standard_normal(6), rng.standard_normal(4)
    >>> g = attnpy.feed_forward_backward(dy, x, W1, b1, W2, b2,
    ...                                  activation="gelu")
    >>> [a.shape for a in g]
    [(3, 4), (4, 6), (6,), (6, 4), (4,)]
    >>> ref = attnpy.reference.feed_forward_backward(
    ...     dy, x, W1, b1, W2, b2, activation="gelu")
    >>> all(np.allclose(a, r, rtol=1e-12, atol=1e-12) for a, r in zip(g, ref))
    True
    """
    fname = "feed_forward_backward"
    act = _activation(activation, fname)
    ops, raw, _ = _ffn_operands(fname, x, W1, b1, W2, b2, dy)
    x, W1, b1, W2, b2, dy = ops
    x2 = _rows(x)
    pre, hidden = _ffn_hidden(x2, W1, b1, act, fname, True)
    dx2, dW1, db1, dW2, db2 = _ffn_grads(_rows(dy), x2, pre, hidden, W1, b1,
                                         W2, b2, act, fname)
    return (_own(dx2.reshape(x.shape), raw[0]), _own(dW1, raw[1]), db1,
            _own(dW2, raw[3]), db2)


# ---------------------------------------------------------------------------
# the pieces of a Llama-family decoder
# ---------------------------------------------------------------------------

def rms_norm(x: ArrayLike, eps: float = 1e-6, *,
             weight: ArrayLike | None = None,
             out: NDArray[np.floating] | None = None
             ) -> NDArray[np.floating]:
    """Root-mean-square normalisation over the last axis (Llama's RMSNorm).

    ``x / sqrt(mean(x**2) + eps) * weight`` per row of the last axis, with
    eps inside the square root as ``torch.nn.functional.rms_norm`` and
    ``LlamaRMSNorm``. No mean is subtracted. The mean of squares is
    accumulated in float64 for either dtype; each result is computed in
    float64 and rounded once.

    Parameters
    ----------
    x : array_like, shape (..., n)
        Real input; float32 and float64 are computed in their own precision
        (the result dtype follows NumPy's promotion of x and weight);
        float16 and bfloat16 are read in 16 bits, a 16-bit result rounded
        once from the float32 computation.
    eps : float, optional
        Added to the mean of squares (default 1e-6; SmolLM2 and Llama use
        1e-5 or 1e-6, read it from the model's configuration).
    weight : array_like, shape (n,), optional
        Per-feature scale (the norm's learned gain).
    out : ndarray, optional
        Where to write the result (exactly its shape and dtype, any
        strides); ``out=x`` normalises in place.

    Returns
    -------
    ndarray, shape (..., n)

    See Also
    --------
    rms_norm_backward : the gradients.

    Examples
    --------
    >>> import numpy as np, attnpy
    >>> x = np.array([[3.0, 4.0], [1.0, -1.0]])
    >>> attnpy.rms_norm(x, eps=0.0)            # rms of [3, 4] is sqrt(12.5)
    array([[ 0.84852814,  1.13137085],
           [ 1.        , -1.        ]])
    >>> attnpy.rms_norm(x, eps=0.0, weight=np.array([1.0, 0.5])).round(4)
    array([[ 0.8485,  0.5657],
           [ 1.    , -0.5   ]])
    """
    fname = "rms_norm"
    return _core.rms_norm(x, weight=weight, eps=_eps(eps, fname), out=out,
                          fname=fname)


def rms_norm_backward(dy: ArrayLike, x: ArrayLike, eps: float = 1e-6, *,
                      weight: ArrayLike | None = None
                      ) -> tuple[NDArray[np.floating], NDArray[np.floating]]:
    """Gradients of :func:`rms_norm`: ``(dx, dweight)``.

    `x`, `eps` and `weight` are those of the forward call (the root mean
    square is recomputed from x with the forward pass's bits). With
    ``rstd = 1 / sqrt(mean(x**2) + eps)``, ``xhat = x * rstd`` and
    ``g = dy * weight``::

        dx      = rstd * (g - xhat * mean(g * xhat))
        dweight = sum over rows of dy * xhat

    in float64, rounded once; the sum over rows in a fixed order (the same
    bits for any number of threads).

    Parameters
    ----------
    dy : array_like, shape (..., n)
        Gradient of the loss with respect to rms_norm's output.
    x, eps, weight
        As in the forward call.

    Returns
    -------
    dx : ndarray, shape (..., n)
    dweight : ndarray, shape (n,)
        The gradient for weight (as if weight were ones when it is None).
        dx has x's dtype and dweight weight's when those are 16-bit (the
        float32 gradient rounded once), else the result dtype.

    Examples
    --------
    >>> import numpy as np, attnpy
    >>> rng = np.random.default_rng(0)
    >>> x, dy = rng.standard_normal((2, 3, 8))
    >>> w = rng.standard_normal(8)
    >>> dx, dw = attnpy.rms_norm_backward(dy, x, weight=w)
    >>> ref = attnpy.reference.rms_norm_backward(dy, x, weight=w)
    >>> bool(np.allclose(dx, ref[0], rtol=1e-12, atol=1e-13))
    True
    >>> xhat = attnpy.rms_norm(x)
    >>> bool(np.allclose(dw, (dy * xhat).sum(axis=0)))
    True
    """
    fname = "rms_norm_backward"
    return _core.rms_norm_backward(dy, x, weight=weight,
                                   eps=_eps(eps, fname), return_dweight=True,
                                   fname=fname)


def swiglu(gate: ArrayLike, up: ArrayLike, *,
           out: NDArray[np.floating] | None = None) -> NDArray[np.floating]:
    """The gated unit of Llama's feed-forward network: ``silu(gate) * up``.

    One pass over memory instead of two (NumPy's ``gate / (1 +
    np.exp(-gate)) * up`` makes three temporaries). ``silu(gate)`` is
    rounded to the dtype before the product, as ``F.silu(gate) * up`` in
    PyTorch. The feed-forward network is then
    ``swiglu(x @ W_gate, x @ W_up) @ W_down``.

    Parameters
    ----------
    gate, up : array_like, shape (..., n)
        The two halves of the hidden layer (the same shape).
    out : ndarray, optional
        Where to write the result; ``out=gate`` works in place.

    Returns
    -------
    ndarray, the shape of gate

    See Also
    --------
    swiglu_backward : the gradients.

    Examples
    --------
    >>> import numpy as np, attnpy
    >>> gate, up = np.array([[0.0, 1.0, -2.0]]), np.array([[5.0, 2.0, 3.0]])
    >>> attnpy.swiglu(gate, up).round(4)        # silu(gate) * up
    array([[ 0.    ,  1.4621, -0.7152]])
    """
    fname = "swiglu"
    if up is None:
        raise TypeError(f"{fname}: up must be an array, got None (silu(x) "
                        "is attnpy.silu)")
    return _core.swiglu(gate, up, out=out, fname=fname)


def swiglu_backward(dy: ArrayLike, gate: ArrayLike, up: ArrayLike
                    ) -> tuple[NDArray[np.floating], NDArray[np.floating]]:
    """Gradients of :func:`swiglu`: ``(dgate, dup)``.

    With ``s = sigmoid(gate)``::

        dgate = dy * up * s * (1 + gate * (1 - s))
        dup   = dy * silu(gate)

    in the precision of the dtype, as PyTorch's autograd.

    Parameters
    ----------
    dy : array_like, shape (..., n)
        Gradient of the loss with respect to swiglu's output.
    gate, up : array_like, shape (..., n)
        As in the forward call.

    Returns
    -------
    dgate, dup : ndarray, the shape of gate
        In gate's and up's dtype when those are float16 / bfloat16 (the
        float32 gradients rounded once), else the result dtype.

    Examples
    --------
    >>> import numpy as np, attnpy
    >>> gate, up = np.array([0.0, 1.0]), np.array([2.0, 3.0])
    >>> dgate, dup = attnpy.swiglu_backward(np.ones(2), gate, up)
    >>> dgate.round(4), dup.round(4)      # silu'(0) = 0.5, silu(1) = 0.7311
    (array([1.   , 2.783]), array([0.    , 0.7311]))
    """
    fname = "swiglu_backward"
    if up is None:
        raise TypeError(f"{fname}: up must be an array, got None")
    return _core.swiglu_backward(dy, gate, up, fname=fname)
