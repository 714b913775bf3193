"""Gradients: the fused backward pass of :func:`attnpy.attention`.

The C core computes one gradient per broadcast batch item (FlashAttention-2's
recompute scheme: P rebuilt from the forward pass's lse, never an L x S
array); this wrapper sums them back to the shapes the caller passed, in
NumPy's fixed order, and casts them to the inputs' dtypes.
"""
from __future__ import annotations


import numpy as np

from . import _variants
from ._attention import document_variants
from ._validate import flag as _flag, is_bfloat16, public
from ._types import Array, ArrayLike, Causal, FullyMasked, Window

__all__ = ["attention_backward"]


def _sum_to(g, shape):
    """g summed over the dims that were broadcast to reach it from shape."""
    extra = g.ndim - len(shape)
    if extra > 0:
        g = g.sum(axis=tuple(range(extra)))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    if axes:
        g = g.sum(axis=axes, keepdims=True)
    return g.reshape(shape)


def _like(g, x):
    """g in the dtype of input x when that is a float type, float16 and
    bfloat16 included (else as is): a gradient the kernel accumulated in
    float32 and the sums above kept there is rounded once here."""
    dt = np.asarray(x).dtype
    if (np.issubdtype(dt, np.floating) or is_bfloat16(dt)) and g.dtype != dt:
        return g.astype(dt)
    return g


def _check_dest(dest, like, name):
    """dq=/dk=/dv= checked before the pass runs: an array of the operand's
    shape, writeable (the dtype is checked as the gradient is written)."""
    if dest is None:
        return
    if not isinstance(dest, np.ndarray):
        raise TypeError(f"attention_backward: {name} must be a numpy array")
    if dest.shape != np.shape(like):
        raise ValueError(f"attention_backward: {name} must have shape "
                         f"{np.shape(like)}, got {name}.shape={dest.shape}")
    if not dest.flags.writeable:
        raise ValueError(f"attention_backward: {name} is read-only")


def _deliver(g, dest, name):
    """g written into dest (checked by _check_dest before the pass)."""
    if dest is None:
        return g
    if dest.shape != g.shape or dest.dtype != g.dtype:
        raise ValueError(f"attention_backward: {name} must have shape "
                         f"{g.shape} and dtype {g.dtype}, got "
                         f"{name}.shape={dest.shape}, dtype {dest.dtype}")
    np.copyto(dest, g)
    return dest


@public("attention_backward")
def attention_backward(
        dout: ArrayLike, Q: ArrayLike, K: ArrayLike, V: ArrayLike,
        out: ArrayLike, lse: ArrayLike, *, mask: ArrayLike | None = None,
        bias: ArrayLike | None = None, causal: Causal = False,
        scale: float | None = None, fully_masked: FullyMasked = "zero",
        bias_grad: bool = False, dq: Array | None = None,
        dk: Array | None = None, dv: Array | None = None,
        enable_gqa: bool = False, window: Window = None,
        alibi_slopes: ArrayLike | None = None,
        softcap: float | None = None) -> tuple[Array, ...]:
    """Gradients of :func:`attention` with respect to Q, K, V (and bias).

    Given ``out, lse = attention(Q, K, V, ..., return_lse=True)`` and the
    gradient ``dout`` of a loss with respect to ``out``, returns the
    gradients of that loss with respect to Q, K and V, computed in C with
    FlashAttention-2's recompute scheme: the weights are rebuilt block by
    block from ``lse`` (``P = exp(s - lse)``), ``D = rowsum(dout * out)``,
    ``dS = P * (dout V^T - D)``, ``dQ = scale dS K``, ``dK = scale dS^T Q``,
    ``dV = P^T dout``; memory stays linear in the sequence lengths.

    Parameters
    ----------
    dout : array_like, shape (..., L, Ev)
        Gradient of the loss with respect to the forward output.
    Q, K, V, out, lse : array_like
        The forward pass's inputs and its results (``return_lse=True``).
    mask, bias, causal, scale, fully_masked
        Exactly those of the forward call: the gradient is of the function
        that call computed. Masked positions contribute exactly 0.
        ``fully_masked``: "zero" rows give nothing to any gradient;
        "uniform" rows are differentiated as the constant 1/S weights they
        produced (dQ row 0, every key's dV gets dout/S); "nan" gives NaN
        (that row of dQ and dbias, and all of dK, dV of its batch item);
        "raise" raises ValueError as the forward pass does.
    bias_grad : bool
        Also return the gradient of ``bias`` (which must be given).
    dq, dk, dv : ndarray, optional
        Arrays of exactly the gradients' shapes and dtypes to fill.
{variants}
    The variants are those of the forward call too. With `softcap`, dQ
    and dK carry the factor ``1 - tanh^2`` of the cap (dbias does not:
    the bias is added after it); with `enable_gqa`, dK and dV are summed
    over the query heads of each K/V head. ``alibi_slopes`` gets no
    gradient.

    Returns
    -------
    dQ, dK, dV : ndarray
        Each with its input's shape and dtype as passed: where K or V were
        broadcast (one K/V head for many query heads), the gradient is
        summed over the broadcast dims.
    dbias : ndarray
        Only with ``bias_grad=True``: ``dS`` summed to the bias's shape.

    Examples
    --------
    >>> import numpy as np, attnpy
    >>> rng = np.random.default_rng(0)
    >>> Q = rng.standard_normal((2, 4, 16, 8))      # (B, H, L, E)
    >>> K, V = rng.standard_normal((2, 2, 1, 16, 8))  # one K/V head
    >>> out, lse = attnpy.attention(Q, K, V, causal=True, return_lse=True)
    >>> dout = np.ones_like(out)                    # loss = out.sum()
    >>> dQ, dK, dV = attnpy.attention_backward(dout, Q, K, V, out, lse,
    ...                                        causal=True)
    >>> dQ.shape, dK.shape, dV.shape
    ((2, 4, 16, 8), (2, 1, 16, 8), (2, 1, 16, 8))
    >>> ref = attnpy.reference.attention_backward(dout, Q, K, V, out, lse,
    ...                                           causal=True)
    >>> all(np.allclose(a, b, rtol=1e-12, atol=1e-12)
    ...     for a, b in zip((dQ, dK, dV), ref))
    True

    With the variants, the same keywords as the forward call:

    >>> K, V = rng.standard_normal((2, 2, 2, 16, 8))  # 2 K/V heads for 4
    >>> kw = dict(causal=True, enable_gqa=True, window=(7, 0), softcap=3.0,
    ...           alibi_slopes=[0.5, 0.25, 0.125, 0.0625])
    >>> out, lse = attnpy.attention(Q, K, V, return_lse=True, **kw)
    >>> grads = attnpy.attention_backward(dout, Q, K, V, out, lse, **kw)
    >>> [g.shape for g in grads]
    [(2, 4, 16, 8), (2, 2, 16, 8), (2, 2, 16, 8)]
    >>> ref = attnpy.reference.attention_backward(dout, Q, K, V, out, lse,
    ...                                           **kw)
    >>> all(np.allclose(a, b, rtol=1e-10, atol=1e-12)
    ...     for a, b in zip(grads, ref))
    True
    """
    bias_grad = _flag(bias_grad, "attention_backward", "bias_grad")
    if bias_grad and bias is None:
        raise ValueError("attention_backward: bias_grad=True needs a bias")
    dests = ((dq, Q, "dq"), (dk, K, "dk"), (dv, V, "dv"))
    for d, x, n in dests:
        _check_dest(d, x, n)
    given = [(d, n) for d, _, n in dests if d is not None]
    for i, (a, na) in enumerate(given):   # one would overwrite the other
        for b, nb in given[i + 1:]:
            if np.shares_memory(a, b):
                raise ValueError(f"attention_backward: {na} and {nb} share "
                                 f"memory")
    (gq, gk, gv, gb), seen = _variants.sdpa_bwd(
        dout, Q, K, V, out, lse, mask, bias, causal, scale, fully_masked,
        bool(bias_grad), enable_gqa, (window, alibi_slopes, softcap))
    # summed to the operands as the kernel saw them (views under
    # enable_gqa, which sums dK and dV over each group), then to the
    # caller's shapes
    res = [_like(_sum_to(g, np.shape(x)).reshape(np.shape(x0)), x0)
           for g, x, x0 in zip((gq, gk, gv), seen, (Q, K, V))]
    res = [_deliver(g, d, n)
           for g, d, n in zip(res, (dq, dk, dv), ("dq", "dk", "dv"))]
    if bias_grad:
        res.append(_like(_sum_to(gb, np.shape(seen[3])).reshape(
            np.shape(bias)), bias))
    return tuple(res)


document_variants(attention_backward)
