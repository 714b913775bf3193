"""MultiHeadAttention: the tutorial's class, with attention computed in C."""
from __future__ import annotations

from typing import Any
import math

import numpy as np

from . import _core, _mha_grad
from ._elementwise import combine_heads, split_heads
from ._validate import empty as _empty, float_dtype as _float_dtype
from ._validate import flag as _flag, num_heads as _num_heads, public
from ._validate import size as _size
from ._types import Array, ArrayLike, Causal, DTypeLike, Seed

__all__ = ["MultiHeadAttention"]

# self-attention with at least this many rows makes one packed
# (d_model, 3*d_model) projection instead of three (python -m attnpy bench --only mha)
_PACKED_MIN = 256


class MultiHeadAttention:
    """Multi-head attention layer, a drop-in for the tutorial's class.

    Parameters
    ----------
    d_model : int
        Model dimension; must be divisible by `num_heads`.
    num_heads : int
        Number of heads; each has ``d_k = d_model // num_heads`` features.
    seed : int or numpy.random.Generator, optional
        None (default) draws the weights from NumPy's global random state
        exactly as the tutorial does (``np.random.randn(d, d) *
        np.sqrt(2 / d)`` for W_q, W_k, W_v, W_o in that order), so
        ``np.random.seed(0)`` before construction reproduces the tutorial's
        weights. An int or Generator uses ``default_rng(seed)``.
    dtype : float32 or float64
        dtype of the weight matrices.
    bias : bool, optional
        Give the four projections a bias: ``x @ W_q + b_q`` and so on (the
        weights stay (in, out), as in the tutorial). The biases start at
        zero (no random draws: the weights are the same either way).

    Attributes
    ----------
    W_q, W_k, W_v, W_o : ndarray, shape (d_model, d_model)
        Projection matrices (assignable; a new value must have that shape).
    b_q, b_k, b_v, b_o : ndarray, shape (d_model,), or None
        The projections' biases with ``bias=True`` (assignable), else None.
    grads : dict
        ``{"W_q", "W_k", "W_v", "W_o"}`` gradients (and ``b_q`` ... ``b_o``
        with ``bias=True``) set by :meth:`backward` (empty before the first
        backward call).

    Examples
    --------
    >>> import numpy as np, attnpy
    >>> mha = attnpy.MultiHeadAttention(8, 2, seed=0)
    >>> X = np.random.default_rng(1).standard_normal((1, 5, 8))
    >>> out, w = mha.forward(X, attnpy.create_causal_mask(5))
    >>> out.shape, w.shape
    ((1, 5, 8), (1, 2, 5, 5))
    >>> bool(np.allclose(w.sum(-1), 1))
    True

    Cross-attention: queries from one sequence, keys/values from another.

    >>> memory = np.random.default_rng(2).standard_normal((1, 7, 8))
    >>> mha(X, memory).shape
    (1, 5, 8)
    """

    def __init__(self, d_model: int, num_heads: int, *, seed: Seed = None,
                 dtype: DTypeLike = np.float64, bias: bool = False) -> None:
        fname = "MultiHeadAttention"
        if not isinstance(bias, (bool, np.bool_)):
            raise TypeError(f"{fname}: bias must be True or False, got "
                            f"{type(bias).__name__}")
        d = _size(d_model, fname, "d_model")
        h = _num_heads(_size(num_heads, fname, "num_heads"), d, fname)
        dt = _float_dtype(dtype, fname)
        self.d_model, self.num_heads, self.d_k, self.dtype = d, h, d // h, dt
        if not (seed is None or isinstance(seed, np.random.Generator)):
            if isinstance(seed, (bool, np.bool_)) or not isinstance(
                    seed, (int, np.integer)):
                raise TypeError(f"{fname}: seed must be None, an int or a "
                                f"numpy.random.Generator, got "
                                f"{type(seed).__name__}")
            if seed < 0:
                raise ValueError(f"{fname}: seed must be >= 0, got {seed}")
        if seed is None:
            draw = lambda: np.random.randn(d, d)  # noqa: E731 (tutorial)
        else:
            rng = np.random.default_rng(seed)
            draw = lambda: rng.standard_normal((d, d))  # noqa: E731
        std = np.sqrt(2.0 / d) if d else 0.0
        _empty((4, d, d), dt, fname, "the weight matrices")  # fail early
        self.W_q = draw() * std
        self.W_k = draw() * std
        self.W_v = draw() * std
        self.W_o = draw() * std
        self.bias = bool(bias)
        for name in ("_b_q", "_b_k", "_b_v", "_b_o"):
            setattr(self, name, np.zeros(d, dt) if bias else None)
        self._tape = None   # the last call's arguments, for backward
        self.grads = {}     # set by backward

    def _param(name, vector):
        attr = "_" + name

        def get(self) -> Array | None:
            return getattr(self, attr)

        def set(self, value: ArrayLike) -> None:
            fname = "MultiHeadAttention"
            if vector and not self.bias:
                raise ValueError(f"{fname}: {name} cannot be set on a layer "
                                 f"made with bias=False")
            w = _core.as_real(value, fname, name)
            shape = (self.d_model,) * (1 if vector else 2)
            if w.shape != shape:
                raise ValueError(f"{fname}: {name} must have shape {shape}, "
                                 f"got {w.shape}")
            setattr(self, attr, np.array(w, dtype=self.dtype))

        doc = ("shape (d_model,), or None" if vector
               else "shape (d_model, d_model)")
        return property(get, set, doc=f"{name}, {doc}")

    W_q, W_k = _param("W_q", False), _param("W_k", False)
    W_v, W_o = _param("W_v", False), _param("W_o", False)
    b_q, b_k = _param("b_q", True), _param("b_k", True)
    b_v, b_o = _param("b_v", True), _param("b_o", True)
    del _param

    def _linear(self, x, W, b):
        """x @ W (+ b, added in place on the product). x (..., d) is seen
        as one (rows, d) matrix: one GEMM (NumPy's batched matmul of a 3-D
        x by a 2-D W can be many times slower)."""
        y = np.matmul(x.reshape(math.prod(x.shape[:-1]), x.shape[-1]), W)
        if b is not None:
            np.add(y, b, out=y)
        return y.reshape(x.shape[:-1] + (W.shape[1],))

    def __repr__(self):
        return (f"MultiHeadAttention(d_model={self.d_model}, "
                f"num_heads={self.num_heads}, dtype={self.dtype.name}"
                f"{', bias=True' if self.bias else ''})")

    def split_heads(self, x: ArrayLike) -> Array:
        """(batch, seq, d_model) -> (batch, heads, seq, d_k).

        Parameters
        ----------
        x : array_like, shape (..., seq, d_model)

        Returns
        -------
        ndarray, shape (..., heads, seq, d_k)
            A view (see :func:`attnpy.split_heads`).

        Examples
        --------
        >>> import numpy as np, attnpy
        >>> mha = attnpy.MultiHeadAttention(8, 2, seed=0)
        >>> mha.split_heads(np.zeros((1, 5, 8))).shape
        (1, 2, 5, 4)
        """
        return split_heads(x, self.num_heads)

    def combine_heads(self, x: ArrayLike) -> Array:
        """(batch, heads, seq, d_k) -> (batch, seq, d_model).

        Parameters
        ----------
        x : array_like, shape (..., heads, seq, d_k)

        Returns
        -------
        ndarray, shape (..., seq, d_model)

        Examples
        --------
        >>> import numpy as np, attnpy
        >>> mha = attnpy.MultiHeadAttention(8, 2, seed=0)
        >>> mha.combine_heads(np.zeros((1, 2, 5, 4))).shape
        (1, 5, 8)
        """
        return combine_heads(x)

    def _check(self, x, arg, fname):
        x = _core.as_array16(x, fname, arg)
        if x.ndim < 2 or x.shape[-1] != self.d_model:
            raise ValueError(f"{fname}: {arg} must have shape (..., seq, "
                             f"d_model={self.d_model}), got {x.shape}")
        return x

    def _attend(self, query, key, value, mask, causal, fname, need_weights,
                names=("query", "key", "value")):
        q = self._check(query, names[0], fname)
        self_attn = key is query and value is query
        k = q if self_attn else self._check(key, names[1], fname)
        v = q if self_attn else self._check(value, names[2], fname)
        if v.shape[-2] != k.shape[-2]:
            raise ValueError(f"{fname}: {names[2]} has {v.shape[-2]} "
                             f"positions but {names[1]} has {k.shape[-2]} "
                             f"({names[1]}.shape={k.shape}, "
                             f"{names[2]}.shape={v.shape})")
        try:
            np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
        except ValueError:
            raise ValueError(
                f"{fname}: the leading (batch) dimensions of {names[0]}, "
                f"{names[1]} and {names[2]} do not broadcast "
                f"({names[0]}.shape={q.shape}, {names[1]}.shape={k.shape}, "
                f"{names[2]}.shape={v.shape})") from None
        self._tape = None
        Q, K, V = self._project(q, k, v, self_attn)
        result = self._heads(Q, K, V, mask, causal, fname, need_weights)
        # only a call that succeeded can be differentiated
        self._tape = _mha_grad.record(self, q, k, v, self_attn, mask, causal)
        return result

    def _heads(self, Q, K, V, mask, causal, fname, need_weights):
        """The attention of the projected heads and the output projection:
        (output, weights or None)."""
        if need_weights:
            out, w = _core.sdpa(Q, K, V, mask=mask, causal=causal,
                                fname=fname, return_weights=True)
            return self._linear(self.combine_heads(out), self.W_o,
                                self._b_o), w
        # the fused kernel, never the (..., heads, L, S) weights; it writes
        # each head's rows straight into the (..., L, heads, d_k) layout
        # that the output projection reads as (..., L, d_model): no
        # combine_heads copy
        heads = self._heads_out(Q, K, V, mask)
        if heads is None:  # shapes that sdpa itself will reject or resolve
            out = _core.sdpa(Q, K, V, mask=mask, causal=causal, fname=fname)
            return self._linear(self.combine_heads(out), self.W_o,
                                self._b_o), None
        _core.sdpa(Q, K, V, mask=mask, causal=causal,
                   out=np.swapaxes(heads, -3, -2), fname=fname)
        combined = heads.reshape(heads.shape[:-2] + (self.d_model,))
        return self._linear(combined, self.W_o, self._b_o), None

    def _project(self, q, k, v, self_attn):
        """Q, K, V (..., heads, seq, d_k) as views of the projections.
        Self-attention makes one (d_model, 3*d_model) product, built from
        the current W_q, W_k, W_v on every call (so assigning them, or
        changing them in place, is always seen); its three column blocks
        are read by the kernel through strides."""
        d = self.d_model
        if self_attn and q.size >= _PACKED_MIN * d:
            dt = np.result_type(q.dtype, self.dtype)
            w_qkv = np.empty((d, 3 * d), dtype=dt)
            for i, w in enumerate((self._W_q, self._W_k, self._W_v)):
                w_qkv[:, i * d:(i + 1) * d] = w
            b_qkv = None
            if self.bias:
                b_qkv = np.concatenate([self._b_q, self._b_k, self._b_v])
            qkv = self._linear(q, w_qkv, b_qkv)
            return (self.split_heads(qkv[..., :d]),
                    self.split_heads(qkv[..., d:2 * d]),
                    self.split_heads(qkv[..., 2 * d:]))
        return (self.split_heads(self._linear(q, self.W_q, self._b_q)),
                self.split_heads(self._linear(k, self.W_k, self._b_k)),
                self.split_heads(self._linear(v, self.W_v, self._b_v)))

    def _heads_out(self, Q, K, V, mask):
        """An empty (..., L, heads, d_k) array for the kernel's output, or
        None when the batch shapes do not broadcast (sdpa then raises)."""
        try:
            lead = [Q.shape[:-2], K.shape[:-2], V.shape[:-2]]
            if mask is not None:
                lead.append(np.shape(mask)[:-2])
            batch = np.broadcast_shapes(*lead)
        except ValueError:
            return None
        if batch[-1:] != (self.num_heads,):
            return None
        dt = np.result_type(Q.dtype, K.dtype, V.dtype)
        if dt not in (np.float32, np.float64):
            return None
        return np.empty(batch[:-1] + (Q.shape[-2], self.num_heads,
                                      self.d_k), dtype=dt)

    def backward(self, d_output: ArrayLike) -> Any:
        """Gradients of the last call (forward or __call__).

        Parameters
        ----------
        d_output : array_like
            The loss's gradient with respect to the last call's output
            (same shape).

        Returns
        -------
        ndarray or tuple of ndarray
            After self-attention (``forward(X)`` or ``layer(X)``): ``dX``,
            X's shape. After cross-attention: ``(d_query, d_key,
            d_value)``, each its input's shape (when key and value were the
            same array, add d_key and d_value for its gradient).

        Notes
        -----
        Sets ``self.grads`` to ``{"W_q", "W_k", "W_v", "W_o"}`` gradients,
        (d_model, d_model) arrays of the weights' dtype, and with
        ``bias=True`` also ``{"b_q", "b_k", "b_v", "b_o"}`` (d_model,)
        (replaced, not accumulated, by each call). The mask and causal of the call are
        honoured.

        A call keeps only references to its arguments and weights, so a
        layer that is never differentiated pays nothing: backward
        recomputes the projections and the attention with its log-sum-exp
        (:func:`attnpy.attention` with ``return_lse=True``, one forward
        pass) before :func:`attnpy.attention_backward`. Do not modify the
        inputs or the weight arrays in place between the call and backward.

        Examples
        --------
        >>> import numpy as np, attnpy
        >>> mha = attnpy.MultiHeadAttention(8, 2, seed=0)
        >>> X = np.random.default_rng(1).standard_normal((1, 5, 8))
        >>> y = mha(X, causal=True)
        >>> dX = mha.backward(np.ones_like(y))
        >>> dX.shape, sorted(mha.grads)
        ((1, 5, 8), ['W_k', 'W_o', 'W_q', 'W_v'])
        """
        return _mha_grad.backward(self, self._tape, d_output)

    @public("MultiHeadAttention.forward")
    def forward(self, X: ArrayLike, mask: ArrayLike | None = None, *,
                causal: Causal = False) -> tuple[Array, Array]:
        """Self-attention, as the tutorial's ``forward``.

        Parameters
        ----------
        X : array_like, shape (..., seq, d_model)
            The sequence; queries, keys and values are its projections.
        mask : array_like, optional
            A keep-mask broadcastable to (..., heads, seq, seq):
            nonzero/True = may attend (the tutorial's
            ``create_causal_mask(seq)``, or ``padding_mask(lengths, seq)``
            for padded batches). Negative entries, and float entries
            other than 0 and 1, raise ValueError: an additive -inf mask,
            or weights, are not a keep-mask.
        causal : {False, True, "top_left", "bottom_right"}, optional
            As in :func:`attnpy.attention`; combines with `mask`.

        Returns
        -------
        output : ndarray, shape (..., seq, d_model)
        weights : ndarray, shape (..., heads, seq, seq)
            Each head's attention weights; rows sum to 1.

        Examples
        --------
        >>> import numpy as np, attnpy
        >>> mha = attnpy.MultiHeadAttention(8, 2, seed=0)
        >>> X = np.random.default_rng(1).standard_normal((2, 5, 8))
        >>> out, w = mha.forward(X, attnpy.padding_mask([5, 3], 5))
        >>> out.shape, w.shape
        ((2, 5, 8), (2, 2, 5, 5))
        >>> float(w[1, :, :, 3:].max())    # the padding keys get no weight
        0.0
        """
        return self._attend(X, X, X, mask, causal,
                            "MultiHeadAttention.forward", True,
                            ("X", "X", "X"))

    @public("MultiHeadAttention")
    def __call__(self, query: ArrayLike, key: ArrayLike | None = None,
                 value: ArrayLike | None = None, *,
                 mask: ArrayLike | None = None, causal: Causal = False,
                 need_weights: bool = False) -> Any:
        """Attention of `query` over `key`/`value`.

        Without `need_weights` the heads run through the fused kernel of
        :func:`attnpy.attention`: memory beyond the projections is O(L),
        never the (..., heads, L, S) weights.

        Parameters
        ----------
        query : array_like, shape (..., L, d_model)
        key : array_like, shape (..., S, d_model), optional
            Default: `query` (self-attention).
        value : array_like, shape (..., S, d_model), optional
            Default: `key`.
        mask : array_like, optional
            A keep-mask broadcastable to (..., heads, L, S) (nonzero/True =
            may attend), as in :meth:`forward`.
        causal : {False, True, "top_left", "bottom_right"}, optional
            As in :func:`attnpy.attention`.
        need_weights : bool, optional
            Also return the (..., heads, L, S) weights.

        Returns
        -------
        output : ndarray, shape (..., L, d_model)
        weights : ndarray, shape (..., heads, L, S)
            Only with ``need_weights=True``.

        Examples
        --------
        >>> import numpy as np, attnpy
        >>> mha = attnpy.MultiHeadAttention(8, 2, seed=0)
        >>> X = np.random.default_rng(1).standard_normal((1, 5, 8))
        >>> memory = np.random.default_rng(2).standard_normal((1, 7, 8))
        >>> mha(X, memory).shape
        (1, 5, 8)
        >>> out, w = mha(X, causal=True, need_weights=True)
        >>> bool(np.allclose(out, mha.forward(X, causal=True)[0]))
        True
        """
        need_weights = _flag(need_weights, "MultiHeadAttention", "need_weights")
        key = query if key is None else key
        value = key if value is None else value
        out, w = self._attend(query, key, value, mask, causal,
                              "MultiHeadAttention", need_weights)
        return (out, w) if need_weights else out
