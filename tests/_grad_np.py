"""A private NumPy attention backward for the tests of the layers built on it.

attnpy.attention(..., return_lse=True) and attnpy.attention_backward are
the fused C kernels' job (helper `bwd`). Until they are on main, the tests
of MultiHeadAttention.backward and of the notebook's model run the layer's
chain rule over this NumPy version, installed explicitly by
``use_numpy_attention_grad(monkeypatch)``: the same contract (docs/user/gradients.md)
for what the layer uses (mask, causal, scale,
fully_masked="zero"), every L x S array built.
"""
import numpy as np

import attnpy
from attnpy import reference as ref


def _scores(Q, K, mask, causal, scale):
    E = Q.shape[-1]
    scale = 1.0 / np.sqrt(E) if scale is None else scale
    s = scale * np.matmul(Q, np.swapaxes(K, -1, -2))
    allowed = ref._allowed(Q.shape[-2], K.shape[-2], mask, causal)
    return np.where(allowed, s, -np.inf), scale


def attention_lse(Q, K, V, *, mask=None, causal=False, scale=None):
    """(out, lse) of attention with fully_masked="zero"."""
    s, _ = _scores(Q, K, mask, causal, scale)
    with np.errstate(invalid="ignore", divide="ignore"):
        m = np.max(s, axis=-1, keepdims=True)
        m = np.where(np.isfinite(m), m, 0.0)
        lse = (np.log(np.sum(np.exp(s - m), axis=-1, keepdims=True)) + m)
        P = np.where(np.isfinite(lse), np.exp(s - lse), 0.0)
    return np.matmul(P, V), lse[..., 0]


def _sum_to(g, shape):
    """g summed over the dims that were broadcast to reach g.shape."""
    while g.ndim > len(shape):
        g = g.sum(axis=0)
    for ax, n in enumerate(shape):
        if n == 1 and g.shape[ax] != 1:
            g = g.sum(axis=ax, keepdims=True)
    return g


def attention_backward(dout, Q, K, V, out, lse, *, mask=None, causal=False,
                       scale=None, fully_masked="zero"):
    """(dQ, dK, dV), FlashAttention-2's formulas with every array built."""
    assert fully_masked == "zero"
    s, scale = _scores(Q, K, mask, causal, scale)
    lse = np.asarray(lse)[..., None]
    with np.errstate(invalid="ignore"):
        P = np.where(np.isfinite(lse), np.exp(s - lse), 0.0)
    dV = np.matmul(np.swapaxes(P, -1, -2), dout)
    dP = np.matmul(dout, np.swapaxes(V, -1, -2))
    D = np.sum(dout * out, axis=-1, keepdims=True)
    dS = P * (dP - D)
    dQ = scale * np.matmul(dS, K)
    dK = scale * np.matmul(np.swapaxes(dS, -1, -2), Q)
    dt = np.result_type(Q, K, V)
    return tuple(_sum_to(g, x.shape).astype(dt) for g, x in
                 ((dQ, Q), (dK, K), (dV, V)))


def use_numpy_attention_grad(monkeypatch):
    """Make attnpy.attention(..., return_lse=True) and
    attnpy.attention_backward the NumPy versions above, for this test."""
    fused = attnpy.attention

    def attention(Q, K, V, *, return_lse=False, **kw):
        if not return_lse:
            return fused(Q, K, V, **kw)
        out, lse = attention_lse(np.asarray(Q), np.asarray(K), np.asarray(V),
                                 **kw)
        dt = np.result_type(Q, K, V)
        return out.astype(dt), lse.astype(dt)

    monkeypatch.setattr(attnpy, "attention", attention)
    monkeypatch.setattr(attnpy, "attention_backward", attention_backward,
                        raising=False)


def fd_grad(f, x, h=1e-6):
    """Central finite differences of the scalar f() with respect to the
    array x, perturbed in place (and restored)."""
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        keep = x[idx]
        x[idx] = keep + h
        up = f()
        x[idx] = keep - h
        down = f()
        x[idx] = keep
        g[idx] = (up - down) / (2 * h)
    return g


def rel_err(a, b):
    """max |a - b| relative to max |b|."""
    return np.abs(a - b).max() / max(np.abs(b).max(), 1e-300)
