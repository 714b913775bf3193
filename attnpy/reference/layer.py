"""Twins of the layer family: multi-head attention, layer norm,
feed-forward network, the encoder layer (the activations' twins are
activations.py)."""
import math

import numpy as np

from ._common import (_quiet, _store, grad_dtype, result_dtype)
from .elementwise import (combine_heads, softmax_backward, split_heads)
from .attention import (attention, scaled_dot_product_attention)
from .activations import _dgelu64, _gelu64


# ---------------------------------------------------------------------------
# multi-head attention
# ---------------------------------------------------------------------------

def _sum_to(g, shape):
    """g summed over the leading and size-1 dims broadcast to reach it."""
    g = g.sum(axis=tuple(range(g.ndim - len(shape))))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    return g.sum(axis=axes, keepdims=True)


def _outer_sum(x, g):
    """sum over every leading dim and row of x^T g."""
    return np.matmul(x.reshape(-1, x.shape[-1]).T,
                     g.reshape(-1, g.shape[-1]))


class MultiHeadAttention:
    """Multi-head self/cross attention with the tutorial's weights.

    W_q, W_k, W_v, W_o are (d_model, d_model), drawn in that order as
    standard normals times sqrt(2 / d_model):

    * seed=None: from NumPy's global state (np.random.randn), so
      ``np.random.seed(0); MultiHeadAttention(8, 2)`` has the tutorial's
      weights;
    * seed=int: from np.random.default_rng(seed).standard_normal.
    """

    def __init__(self, d_model, num_heads, *, seed=None, dtype=np.float64):
        if d_model % num_heads != 0:
            raise ValueError("MultiHeadAttention: d_model must be divisible "
                             "by num_heads")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.dtype = np.dtype(dtype)
        std = np.sqrt(2.0 / d_model)
        if seed is None:
            draw = lambda: np.random.randn(d_model, d_model)      # noqa: E731
        else:
            rng = np.random.default_rng(seed)
            draw = lambda: rng.standard_normal((d_model, d_model))  # noqa
        self.W_q = (draw() * std).astype(self.dtype)
        self.W_k = (draw() * std).astype(self.dtype)
        self.W_v = (draw() * std).astype(self.dtype)
        self.W_o = (draw() * std).astype(self.dtype)

    def split_heads(self, x):
        """(batch, seq, d_model) -> (batch, heads, seq, d_k)."""
        return split_heads(x, self.num_heads)

    def combine_heads(self, x):
        """(batch, heads, seq, d_k) -> (batch, seq, d_model)."""
        return combine_heads(x)

    def __call__(self, query, key=None, value=None, *, mask=None,
                 causal=False, need_weights=False):
        """Attention of `query` over `key`/`value` (default: query itself).

        Returns the output (batch, L, d_model), and the weights
        (batch, heads, L, S) too when need_weights is true.
        """
        key = query if key is None else key
        value = key if value is None else value
        Q = self.split_heads(np.matmul(query, self.W_q))
        K = self.split_heads(np.matmul(key, self.W_k))
        V = self.split_heads(np.matmul(value, self.W_v))
        heads, weights = scaled_dot_product_attention(
            Q, K, V, mask, causal=causal)
        output = np.matmul(self.combine_heads(heads), self.W_o)
        # everything backward needs, kept (this is the reference: memory
        # is no concern)
        self._saved = dict(
            xs=(query, key, value), QKV=(Q, K, V), P=weights, heads=heads,
            self_attn=key is query and value is query,
            W=(self.W_q, self.W_k, self.W_v, self.W_o))
        return (output, weights) if need_weights else output

    def backward(self, d_output):
        """Gradients of the last call: dX (self-attention) or (d_query,
        d_key, d_value); sets self.grads {"W_q", "W_k", "W_v", "W_o"}.

        The chain rule over the saved weights P (fully masked rows are 0)::

            dW_o = C^T dy         dO = split(dy W_o^T)
            dV = P^T dO           dP = dO V^T
            dS = softmax_backward(dP, P)
            dQ = scale dS K       dK = scale dS^T Q
            dW_q = x_q^T combine(dQ)      dx_q = combine(dQ) W_q^T  (k, v alike)
        """
        sv = getattr(self, "_saved", None)
        if sv is None:
            raise RuntimeError("MultiHeadAttention.backward: no forward call "
                               "to differentiate")
        (Q, K, V), P = sv["QKV"], sv["P"]
        W_q, W_k, W_v, W_o = sv["W"]
        dy = np.asarray(d_output)
        C = self.combine_heads(sv["heads"])
        grads = {"W_o": _outer_sum(C, dy)}
        dO = self.split_heads(np.matmul(dy, W_o.T))
        scale = 1.0 / math.sqrt(self.d_k)
        dS = softmax_backward(np.matmul(dO, np.swapaxes(V, -1, -2)), P)
        dQKV = (scale * np.matmul(dS, K),
                scale * np.matmul(np.swapaxes(dS, -1, -2), Q),
                np.matmul(np.swapaxes(P, -1, -2), dO))
        dxs = []
        for name, x, w, g, X in zip(("W_q", "W_k", "W_v"), sv["xs"],
                                    (W_q, W_k, W_v), dQKV, (Q, K, V)):
            g = self.combine_heads(_sum_to(g, X.shape))
            grads[name] = _outer_sum(np.asarray(x), g)
            dxs.append(np.matmul(g, w.T))
        self.grads = {n: grads[n].astype(self.dtype)
                      for n in ("W_q", "W_k", "W_v", "W_o")}
        return sum(dxs) if sv["self_attn"] else tuple(dxs)

    def forward(self, X, mask=None, *, causal=False):
        """Self-attention as in the tutorial: returns (output, weights)."""
        return self(X, mask=mask, causal=causal, need_weights=True)


# ---------------------------------------------------------------------------
# the transformer layer's pieces: layer norm, feed-forward network,
# their gradients, and the encoder layer
# ---------------------------------------------------------------------------

ACTIVATIONS = ("relu", "gelu", "gelu_tanh")


def layer_norm(x, eps=1e-6, *, weight=None, bias=None, eps_in_sqrt=False,
               out=None):
    """Layer normalisation over the last axis.

    ::

        mean = mean(x),  var = mean((x - mean)^2)     (per row)
        y    = (x - mean) / (sqrt(var) + eps)          the tutorial
             = (x - mean) / sqrt(var + eps)            eps_in_sqrt=True
        y    = y * weight + bias                       when given

    Computed in float64 (the compute dtype's result), then rounded.

    >>> layer_norm(np.array([1.0, 2.0, 3.0]), eps=0.0).round(4)
    array([-1.2247,  0.    ,  1.2247])
    """
    dtype = result_dtype(*(a for a in (x, weight, bias) if a is not None))
    x64 = np.asarray(x, dtype=np.float64)
    n = x64.shape[-1]
    with _quiet():                     # NaN/inf rows; n == 0: empty anyway
        mean = x64.sum(axis=-1, keepdims=True) / n
        var = ((x64 - mean) ** 2).sum(axis=-1, keepdims=True) / n
        if eps_in_sqrt:
            y = (x64 - mean) / np.sqrt(var + eps)
        else:
            y = (x64 - mean) / (np.sqrt(var) + eps)
    if weight is not None:
        y = y * np.asarray(weight, dtype=np.float64)
    if bias is not None:
        y = y + np.asarray(bias, dtype=np.float64)
    return _store(y.astype(dtype), out, "layer_norm", "out")


def layer_norm_backward(dy, x, eps=1e-6, *, weight=None, eps_in_sqrt=False):
    """Gradients of layer_norm: (dx, dweight, dbias).

    Step by step through the forward pass (float64): y = xhat * w + b,
    xhat = c * r with c = x - mean and r = 1 / (std + eps) (or
    1 / sqrt(var + eps)); dweight and dbias sum over every row. Where
    std == 0 the tutorial form's d(std) is taken as 0 (as PyTorch does).
    """
    dtype = result_dtype(*(a for a in (dy, x, weight) if a is not None))
    x64 = np.asarray(x, dtype=np.float64)
    dy64 = np.asarray(dy, dtype=np.float64)
    n = x64.shape[-1]
    w = 1.0 if weight is None else np.asarray(weight, dtype=np.float64)
    with _quiet():                     # NaN/inf rows; n == 0: empty anyway
        c = x64 - x64.sum(axis=-1, keepdims=True) / n
        var = (c * c).sum(axis=-1, keepdims=True) / n
        std = np.sqrt(var)
        r = 1.0 / np.sqrt(var + eps) if eps_in_sqrt else 1.0 / (std + eps)
        xhat = c * r
        dxhat = dy64 * w
        dc = dxhat * r                                 # through xhat = c * r
        dr = (dxhat * c).sum(axis=-1, keepdims=True)   # ... and through r
        if eps_in_sqrt:                            # r = (var + eps)^-1/2
            dvar = dr * -0.5 * r ** 3
        else:                                      # r = 1 / (std + eps)
            dstd = dr * -(r * r)
            dvar = np.where(std > 0, dstd / (2 * std), 0.0)
        dc = dc + dvar * 2 * c / n                     # var = mean(c^2)
        dx = dc - dc.sum(axis=-1, keepdims=True) / n   # c = x - mean(x)
    lead = tuple(range(x64.ndim - 1))
    dweight = (dy64 * xhat).sum(axis=lead)
    dbias = dy64.sum(axis=lead)
    wd = dtype if weight is None else grad_dtype(weight, dtype)
    return (dx.astype(grad_dtype(x, dtype)), dweight.astype(wd),
            dbias.astype(dtype))


def _act64(h, activation):
    if activation == "relu":
        return np.maximum(0.0, h)
    return _gelu64(h, "tanh" if activation == "gelu_tanh" else "none")


def _dact64(h, activation):
    if activation == "relu":
        return (h > 0).astype(np.float64)
    return _dgelu64(h, "tanh" if activation == "gelu_tanh" else "none")


def _ffn_check(activation, func):
    if activation not in ACTIVATIONS:
        raise ValueError(f"{func}: activation must be 'relu', 'gelu' or "
                         f"'gelu_tanh', got {activation!r}")


def feed_forward(x, W1, b1, W2, b2, *, activation="relu"):
    """Position-wise feed-forward network: act(x W1 + b1) W2 + b2 (float64,
    rounded to the compute dtype). b1, b2 may be None (no bias)."""
    _ffn_check(activation, "feed_forward")
    ops = [a for a in (x, W1, b1, W2, b2) if a is not None]
    dtype = result_dtype(*ops)
    f = lambda a: 0.0 if a is None else np.asarray(a, np.float64)  # noqa
    hidden = _act64(f(x) @ f(W1) + f(b1), activation)
    return (hidden @ f(W2) + f(b2)).astype(dtype)


def feed_forward_backward(dy, x, W1, b1, W2, b2, *, activation="relu"):
    """Gradients of feed_forward: (dx, dW1, db1, dW2, db2) (float64,
    rounded; db1/db2 are None when b1/b2 are)."""
    _ffn_check(activation, "feed_forward_backward")
    ops = [a for a in (dy, x, W1, b1, W2, b2) if a is not None]
    dtype = result_dtype(*ops)
    f = lambda a: 0.0 if a is None else np.asarray(a, np.float64)  # noqa
    x2 = f(x).reshape(-1, np.shape(x)[-1])
    dy2 = f(dy).reshape(-1, np.shape(dy)[-1])
    pre = x2 @ f(W1) + f(b1)
    hidden = _act64(pre, activation)
    dpre = (dy2 @ f(W2).T) * _dact64(pre, activation)
    dx = (dpre @ f(W1).T).reshape(np.shape(x))
    grads = (dx, x2.T @ dpre, None if b1 is None else dpre.sum(axis=0),
             hidden.T @ dy2, None if b2 is None else dy2.sum(axis=0))
    return tuple(None if g is None else g.astype(grad_dtype(a, dtype))
                 for g, a in zip(grads, (x, W1, b1, W2, b2)))


def transformer_encoder_layer(x, p, num_heads, mask=None, *, causal=False,
                              activation="relu", norm_first=False,
                              layer_norm_eps=1e-6, eps_in_sqrt=False):
    """One transformer encoder layer in float64, from a dict of parameters
    p: W_q, W_k, W_v, W_o (d, d; (in, out)), optional b_q, b_k, b_v, b_o;
    W1, b1, W2, b2; norm1_weight, norm1_bias, norm2_weight, norm2_bias.

        post-norm (default, the tutorial):  x = LN1(x + SA(x))
                                            x = LN2(x + FF(x))
        norm_first (pre-norm):              x = x + SA(LN1(x))
                                            x = x + FF(LN2(x))

    SA: multi-head self-attention (mask/causal as in attention, fully
    masked rows give 0); FF: feed_forward.
    """
    g = lambda k: None if p.get(k) is None else np.asarray(p[k], np.float64)  # noqa

    def ln(z, i):
        return layer_norm(z, layer_norm_eps, weight=g(f"norm{i}_weight"),
                          bias=g(f"norm{i}_bias"), eps_in_sqrt=eps_in_sqrt)

    def sa(z):
        proj = {}
        for k in "qkvo":
            b = g(f"b_{k}")
            proj[k] = (lambda t, W=g(f"W_{k}"), b=b:
                       t @ W if b is None else t @ W + b)
        Q, K, V = (split_heads(proj[k](z), num_heads) for k in "qkv")
        heads = attention(Q, K, V, mask=mask, causal=causal)
        return proj["o"](combine_heads(heads))

    def ff(z):
        return feed_forward(z, g("W1"), g("b1"), g("W2"), g("b2"),
                            activation=activation)

    x = np.asarray(x, dtype=np.float64)
    if norm_first:
        x = x + sa(ln(x, 1))
        return x + ff(ln(x, 2))
    x = ln(x + sa(x), 1)
    return ln(x + ff(x), 2)
