"""MultiHeadAttention.backward: the chain rule through the layer.

The forward call keeps references to its arguments only (the arrays the
caller passed, the mask, causal, and the weight arrays it used): no extra
memory and no extra time for a forward pass that is never differentiated.
backward recomputes the projections and the attention with its log-sum-exp
(``attnpy.attention(..., return_lse=True)``, one forward pass), then runs
``attnpy.attention_backward``.

For one head-split layer, with x_q, x_k, x_v the inputs (..., L|S, d)::

    Q = split(x_q W_q + b_q)   K = split(x_k W_k + b_k)   V = ...
    O = attention(Q, K, V)            C = combine(O)    y = C W_o + b_o
    dW_o = sum C^T dy                 dC = dy W_o^T     dO = split(dC)
    dQ, dK, dV = attention_backward(dO, Q, K, V, O, lse)
    dW_q = sum x_q^T combine(dQ)      dx_q = combine(dQ) W_q^T   (k, v alike)
    db_q = sum combine(dQ) (k, v alike)   db_o = sum dy    (bias=True only)

and for self-attention dX = dx_q + dx_k + dx_v.
"""
from dataclasses import dataclass

import numpy as np

from . import _core
from ._elementwise import combine_heads, split_heads


@dataclass
class Tape:
    """What one forward call of the layer leaves for backward."""
    inputs: tuple        # (x_q, x_k, x_v) as converted by the call
    self_attn: bool      # True: backward returns one dX
    mask: object
    causal: object
    weights: tuple       # (W_q, W_k, W_v, W_o) the call used
    biases: tuple        # (b_q, b_k, b_v, b_o), None each without bias
    out_shape: tuple
    dtype: np.dtype


def _out_shape(mha, q, k, v, mask):
    """The layer's output shape for these inputs, or None if they do not
    broadcast (the forward call then raises)."""
    heads = (mha.num_heads,)
    lead = [x.shape[:-2] + heads for x in (q, k, v)]
    if mask is not None:
        lead.append(np.shape(mask)[:-2])
    try:
        batch = np.broadcast_shapes(*lead)
    except ValueError:
        return None
    return batch[:-1] + (q.shape[-2], mha.d_model)


def record(mha, q, k, v, self_attn, mask, causal):
    """The tape of a forward call (references only)."""
    weights = (mha.W_q, mha.W_k, mha.W_v, mha.W_o)
    biases = (mha.b_q, mha.b_k, mha.b_v, mha.b_o)
    dtype = np.result_type(q.dtype, k.dtype, v.dtype, mha.dtype)
    if dtype != np.float32:
        dtype = np.dtype(np.float64)
    return Tape((q, k, v), self_attn, mask, causal, weights, biases,
                _out_shape(mha, q, k, v, mask), dtype)


def _wgrad(x, g, dtype):
    """sum over every leading dim and row of x^T g: (d, d)."""
    d = x.shape[-1]
    return np.matmul(x.reshape(-1, d).T, g.reshape(-1, g.shape[-1])).astype(
        dtype, copy=False)


def _bgrad(g, dtype):
    """sum over every leading dim and row of g: (d,), summed in float64."""
    return g.reshape(-1, g.shape[-1]).sum(axis=0, dtype=np.float64).astype(
        dtype, copy=False)


def _project(x, w, b, dt):
    y = np.matmul(x, w).astype(dt, copy=False)
    if b is not None:
        y = np.add(y, b.astype(dt, copy=False), out=y)
    return y


def backward(mha, tape, d_output):
    """See MultiHeadAttention.backward."""
    import attnpy  # the public attention and attention_backward
    fname = "MultiHeadAttention.backward"
    if tape is None:
        raise RuntimeError(f"{fname}: no forward call to differentiate; "
                           "call the layer (forward or __call__) first")
    dy = _core.as_real(d_output, fname, "d_output")
    if dy.shape != tape.out_shape:
        raise ValueError(f"{fname}: d_output must have the shape of the "
                         f"last call's output {tape.out_shape}, got "
                         f"{dy.shape}")
    dt = tape.dtype
    dy = dy.astype(dt, copy=False)
    h = mha.num_heads
    xs = tape.inputs
    W_q, W_k, W_v, W_o = (w.astype(dt, copy=False) for w in tape.weights)
    Q, K, V = (split_heads(_project(x, w, b, dt), h)
               for x, w, b in zip(xs, (W_q, W_k, W_v), tape.biases))
    opts = dict(mask=tape.mask, causal=tape.causal)
    O, lse = attnpy.attention(Q, K, V, return_lse=True, **opts)
    dC = np.matmul(dy, W_o.T)
    grads = {"W_o": _wgrad(combine_heads(O), dy, mha.dtype)}
    dQKV = attnpy.attention_backward(split_heads(dC, h), Q, K, V, O, lse,
                                     **opts)
    dxs = []
    for name, x, w, g in zip(("W_q", "W_k", "W_v"), xs, (W_q, W_k, W_v),
                             dQKV):
        g = combine_heads(g)
        grads[name] = _wgrad(x, g, mha.dtype)
        dxs.append(np.matmul(g, w.T))
        if tape.biases[0] is not None:
            grads["b" + name[1:]] = _bgrad(g, mha.dtype)
    names = ("W_q", "W_k", "W_v", "W_o")
    if tape.biases[0] is not None:
        grads["b_o"] = _bgrad(dy, mha.dtype)
        names += ("b_q", "b_k", "b_v", "b_o")
    mha.grads = {k: grads[k] for k in names}
    if tape.self_attn:
        return dxs[0] + dxs[1] + dxs[2]
    return tuple(dxs)
