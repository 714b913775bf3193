"""TransformerEncoderLayer: the tutorial's encoder layer, with the options
of torch.nn.TransformerEncoderLayer, built from attnpy's pieces."""
from __future__ import annotations

from typing import Any

import numpy as np

from . import _core
from ._validate import float_dtype as _float_dtype, public, size as _size
from ._layer import (_activation, _eps, _ffn_grads, _ffn_hidden, _flag,
                     _rows)
from ._mha import MultiHeadAttention
from ._mha_grad import backward as _mha_backward
from ._types import Activation, Array, ArrayLike, Causal, DTypeLike, Seed

__all__ = ["TransformerEncoderLayer"]

# parameter name -> shape, from (d_model, d_ff)
_SHAPES = {
    "W1": lambda d, f: (d, f), "b1": lambda d, f: (f,),
    "W2": lambda d, f: (f, d), "b2": lambda d, f: (d,),
    "norm1_weight": lambda d, f: (d,), "norm1_bias": lambda d, f: (d,),
    "norm2_weight": lambda d, f: (d,), "norm2_bias": lambda d, f: (d,),
}


def _generator(seed, fname):
    """None (NumPy's global state, the tutorial's draws) or a Generator."""
    if seed is None or isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, (bool, np.bool_)) or not isinstance(
            seed, (int, np.integer)):
        raise TypeError(f"{fname}: seed must be None, an int or a "
                        f"numpy.random.Generator, got {type(seed).__name__}")
    if seed < 0:
        raise ValueError(f"{fname}: seed must be >= 0, got {seed}")
    return np.random.default_rng(seed)


class TransformerEncoderLayer:
    """One transformer encoder layer: self-attention, feed-forward network,
    residual connections and layer normalisation.

    The defaults are the tutorial's ``TransformerEncoderLayer`` exactly
    (post-norm, ReLU, ``(x - mean) / (std + eps)`` with eps 1e-6, no
    attention biases, the same random draws under ``np.random.seed``); the
    options are those of ``torch.nn.TransformerEncoderLayer``::

        norm_first=False (tutorial, BERT):  x = LN1(x + SA(x))
                                            x = LN2(x + FF(x))
        norm_first=True (pre-norm, GPT):    x = x + SA(LN1(x))
                                            x = x + FF(LN2(x))

    SA is :class:`MultiHeadAttention` (the fused kernel, never the
    (heads, L, S) weights) and FF is :func:`feed_forward`. The matrix
    products are NumPy's; the residual add, the normalisation and its
    weight and bias are one pass in C, as are bias + activation.

    Parameters
    ----------
    d_model, num_heads, d_ff : int
        Model width, heads (dividing d_model), hidden width of FF.
    seed : int or numpy.random.Generator, optional
        None (default): the weights are drawn from NumPy's global state in
        the tutorial's order (W_q, W_k, W_v, W_o, then ``W1 =
        randn(d_model, d_ff) * sqrt(2 / d_model)`` and ``W2 = randn(d_ff,
        d_model) * sqrt(2 / d_ff)``); an int or Generator draws the same
        way from ``default_rng(seed)``.
    dtype : float32 or float64
    activation : {"relu", "gelu", "gelu_tanh"}
    norm_first : bool
    layer_norm_eps : float
        eps of both layer norms (tutorial 1e-6; PyTorch's default 1e-5).
    eps_in_sqrt : bool
        Normalise by ``sqrt(var + eps)`` (PyTorch, BERT) instead of
        ``std + eps`` (the tutorial).
    bias : bool
        Biases on the attention projections (``MultiHeadAttention(bias=
        True)``). FF's b1, b2 and the norms' biases always exist (zeros
        unless assigned).

    Attributes
    ----------
    attention : MultiHeadAttention
        Its ``grads`` hold the attention's gradients after :meth:`backward`.
    W1, b1, W2, b2 : ndarray
        (d_model, d_ff), (d_ff,), (d_ff, d_model), (d_model,); assignable.
    norm1_weight, norm1_bias, norm2_weight, norm2_bias : ndarray (d_model,)
        Start at ones and zeros (which change no bit); assignable.
    grads : dict
        Gradients of the layer's own parameters (the eight above) set by
        :meth:`backward`, each in the parameters' dtype; empty before.

    Examples
    --------
    >>> import numpy as np, attnpy
    >>> np.random.seed(0)
    >>> layer = attnpy.TransformerEncoderLayer(d_model=64, num_heads=8,
    ...                                        d_ff=256)
    >>> x = np.random.randn(2, 10, 64)
    >>> y = layer.forward(x)
    >>> y.shape
    (2, 10, 64)
    >>> bool(np.allclose(y.mean(-1), 0) and np.allclose(y.std(-1), 1))
    True
    """

    def __init__(self, d_model: int, num_heads: int, d_ff: int, *,
                 seed: Seed = None, dtype: DTypeLike = np.float64,
                 activation: Activation = "relu", norm_first: bool = False,
                 layer_norm_eps: float = 1e-6, eps_in_sqrt: bool = False,
                 bias: bool = False) -> None:
        fname = "TransformerEncoderLayer"
        d = _size(d_model, fname, "d_model")
        f = _size(d_ff, fname, "d_ff")
        dt = _float_dtype(dtype, fname)
        self.activation = activation        # checked by the properties
        self.norm_first = norm_first
        self.layer_norm_eps = layer_norm_eps
        self.eps_in_sqrt = eps_in_sqrt
        _flag(bias, fname, "bias")
        rng = _generator(seed, fname)
        self.d_model, self.d_ff, self.dtype = d, f, dt
        # the tutorial's order: the attention's four matrices, W1, W2
        self.attention = MultiHeadAttention(d, num_heads, seed=rng, dtype=dt,
                                            bias=bias)
        self.num_heads = self.attention.num_heads
        draw = np.random.randn if rng is None else (
            lambda *shape: rng.standard_normal(shape))
        self.W1 = draw(d, f) * (np.sqrt(2.0 / d) if d else 0.0)
        self.b1 = np.zeros(f)
        self.W2 = draw(f, d) * (np.sqrt(2.0 / f) if f else 0.0)
        self.b2 = np.zeros(d)
        self.norm1_weight, self.norm2_weight = np.ones(d), np.ones(d)
        self.norm1_bias, self.norm2_bias = np.zeros(d), np.zeros(d)
        self._cache = None
        self.grads = {}     # set by backward

    def _param(name):
        attr = "_" + name

        def get(self) -> Array | None:
            return getattr(self, attr)

        def set(self, value: ArrayLike) -> None:
            fname = "TransformerEncoderLayer"
            a = _core.as_real(value, fname, name)
            want = _SHAPES[name](self.d_model, self.d_ff)
            if a.shape != want:
                raise ValueError(f"{fname}: {name} must have shape {want}, "
                                 f"got {a.shape}")
            setattr(self, attr, np.array(a, dtype=self.dtype))

        return property(get, set, doc=f"{name} (assignable; shape checked)")

    W1, b1, W2, b2 = _param("W1"), _param("b1"), _param("W2"), _param("b2")
    norm1_weight, norm1_bias = _param("norm1_weight"), _param("norm1_bias")
    norm2_weight, norm2_bias = _param("norm2_weight"), _param("norm2_bias")
    del _param

    def _option(name, check):
        """An option checked when assigned, as the constructor checks it
        (the kernels read it unchecked)."""
        attr = "_" + name

        def get(self) -> Any:
            return getattr(self, attr)

        def set(self, value: Any) -> None:
            setattr(self, attr, check(value, "TransformerEncoderLayer", name))

        return property(get, set, doc=f"{name} (assignable; checked)")

    activation = _option("activation", lambda v, f, a: _activation(v, f))
    norm_first = _option("norm_first", _flag)
    layer_norm_eps = _option("layer_norm_eps", _eps)
    eps_in_sqrt = _option("eps_in_sqrt", _flag)
    del _option

    def __repr__(self):
        return (f"TransformerEncoderLayer(d_model={self.d_model}, "
                f"num_heads={self.num_heads}, d_ff={self.d_ff}, "
                f"dtype={self.dtype.name}, activation={self.activation!r}, "
                f"norm_first={self.norm_first}, "
                f"layer_norm_eps={self.layer_norm_eps}, "
                f"eps_in_sqrt={self.eps_in_sqrt}, "
                f"bias={self.attention.bias})")

    def _norm(self, x, i, residual=None, shift=None, fname=""):
        """LN_i(x + (residual + shift))."""
        return _core.layer_norm(
            x, residual=residual, shift=shift,
            weight=getattr(self, f"_norm{i}_weight"),
            bias=getattr(self, f"_norm{i}_bias"), eps=self.layer_norm_eps,
            eps_in_sqrt=self.eps_in_sqrt, fname=fname)

    def _ffn(self, x, fname):
        """FF without b2, 2-D: act(x W1 + b1) W2 (the hidden layer in place
        on the product: backward recomputes x W1)."""
        _, hidden = _ffn_hidden(_rows(x), self._W1, self._b1,
                                self.activation, fname, False)
        return np.matmul(hidden, self._W2)

    @public("TransformerEncoderLayer.forward")
    def forward(self, x: ArrayLike, mask: ArrayLike | None = None, *,
                causal: Causal = False) -> Array:
        """The layer applied to x (..., seq, d_model) -> (..., seq, d_model).

        A query that may see no key gets a zero attention output. The
        call's arguments are kept for a backward pass.

        Parameters
        ----------
        x : array_like, shape (..., seq, d_model)
        mask : array_like, optional
            A keep-mask as in :func:`attnpy.attention` (nonzero/True = may
            attend; e.g. ``padding_mask(lengths, seq)``). Negative entries,
            and float entries other than 0 and 1, raise ValueError (an
            additive -inf mask, or weights, are not a keep-mask).
        causal : {False, True, "top_left", "bottom_right"}, optional
            As in :func:`attnpy.attention`.

        Returns
        -------
        ndarray, shape (..., seq, d_model)

        Examples
        --------
        >>> import numpy as np, attnpy
        >>> layer = attnpy.TransformerEncoderLayer(8, 2, 16, seed=0)
        >>> x = np.random.default_rng(1).standard_normal((2, 5, 8))
        >>> y = layer.forward(x, attnpy.padding_mask([5, 3], 5))
        >>> y.shape
        (2, 5, 8)
        >>> bool(np.array_equal(layer(x, causal=True),
        ...                     layer.forward(x, causal=True)))
        True
        """
        fname = "TransformerEncoderLayer.forward"
        self._cache = None   # only a call that succeeded is differentiated
        x = _core.as_array16(x, fname, "x")
        if x.ndim < 2 or x.shape[-1] != self.d_model:
            raise ValueError(f"{fname}: x must have shape (..., seq, "
                             f"d_model={self.d_model}), got {x.shape}")
        dt = np.result_type(x.dtype, self.dtype)
        x = x.astype(np.float32 if dt == np.float32 else np.float64,
                     copy=False)
        attn = self.attention
        # the cache holds arrays the pass makes anyway (references): a
        # forward never differentiated pays for nothing; backward
        # recomputes the norms' inputs and x W1
        if self.norm_first:
            n1 = self._norm(x, 1, fname=fname)
            x1 = x + attn(n1, mask=mask, causal=causal)
            n2 = self._norm(x1, 2, fname=fname)
            f = self._ffn(n2, fname)
            np.add(f, self._b2, out=f)
            y = np.add(_rows(x1), f, out=f)
            cache = dict(x=x, n1=n1, x1=x1, n2=n2)
        else:
            a = attn(x, mask=mask, causal=causal)
            x1 = self._norm(x, 1, a, fname=fname)
            f = self._ffn(x1, fname)
            y = self._norm(_rows(x1), 2, f, self._b2, fname)
            cache = dict(x=x, a=a, x1=x1, f=f)
        # what a backward pass needs (with the attention call's own tape)
        cache.update(tape=attn._tape, shape=x.shape, dtype=y.dtype)
        self._cache = cache
        return y.reshape(x.shape)

    __call__ = forward

    def _norm_grad(self, dy, s, i, fname):
        """LN_i's backward at its input s (2-D): dx; dweight and dbias go
        to self.grads."""
        dx, dw, db = _core.layer_norm_backward(
            dy, s, weight=getattr(self, f"_norm{i}_weight"),
            eps=self.layer_norm_eps, eps_in_sqrt=self.eps_in_sqrt,
            return_dweight=True, return_dbias=True, fname=fname)
        self.grads[f"norm{i}_weight"] = dw
        self.grads[f"norm{i}_bias"] = db
        return dx

    def _ffn_grad(self, dy, x, fname):
        """FF's backward (2-D dy at its output, x its input): dx; the
        gradients of W1, b1, W2, b2 go to self.grads."""
        pre, hidden = _ffn_hidden(x, self._W1, self._b1, self.activation,
                                  fname, True)
        dx, dW1, db1, dW2, db2 = _ffn_grads(
            dy, x, pre, hidden, self._W1, self._b1, self._W2, self._b2,
            self.activation, fname)
        self.grads.update(W1=dW1, b1=db1, W2=dW2, b2=db2)
        return dx

    def backward(self, d_out: ArrayLike) -> Array:
        """Gradients of the last :meth:`forward` call.

        Parameters
        ----------
        d_out : array_like
            The loss's gradient with respect to that call's output (its
            shape).

        Returns
        -------
        dx : ndarray
            The gradient with respect to the call's x (x's shape).

        Notes
        -----
        Sets ``self.grads`` to the gradients of W1, b1, W2, b2 and the
        norms' weights and biases (the parameters' dtype and shapes), and
        ``self.attention.grads`` to the attention's (W_q ... W_o, and b_q
        ... b_o with ``bias=True``); both are replaced, not accumulated.
        The mask and causal of the call are honoured. The chain rule runs
        through the C backward passes of the norms (residual included) and
        of bias + activation, NumPy's matmul for the products, and
        :meth:`MultiHeadAttention.backward` for the attention. Do not
        modify the input or the parameters in place between forward and
        backward.

        Examples
        --------
        >>> import numpy as np, attnpy
        >>> layer = attnpy.TransformerEncoderLayer(16, 2, 32, seed=0)
        >>> x = np.random.default_rng(1).standard_normal((2, 5, 16))
        >>> y = layer.forward(x, causal=True)
        >>> dx = layer.backward(np.ones_like(y))
        >>> dx.shape, sorted(layer.grads)[:3], layer.grads["W1"].shape
        ((2, 5, 16), ['W1', 'W2', 'b1'], (16, 32))
        >>> sorted(layer.attention.grads)
        ['W_k', 'W_o', 'W_q', 'W_v']
        """
        fname = "TransformerEncoderLayer.backward"
        c = self._cache
        if c is None:
            raise RuntimeError(f"{fname}: no forward call to differentiate; "
                               "call forward (or the layer) first")
        dy = _core.as_real(d_out, fname, "d_out")
        if dy.shape != c["shape"]:
            raise ValueError(f"{fname}: d_out must have the shape of the "
                             f"last forward call's output {c['shape']}, got "
                             f"{dy.shape}")
        dy = _rows(dy.astype(c["dtype"], copy=False))
        self.grads = {}
        attn = self.attention
        x = _rows(c["x"])
        if self.norm_first:
            dn2 = self._ffn_grad(dy, _rows(c["n2"]), fname)
            dx1 = self._norm_grad(dn2, _rows(c["x1"]), 2, fname)
            dx1 += dy
            dn1 = _mha_backward(attn, c["tape"], dx1.reshape(c["shape"]))
            dx = self._norm_grad(_rows(dn1), x, 1, fname)
            dx += dx1
        else:   # the norms' inputs, added in the forward pass's order
            x1 = _rows(c["x1"])
            s2 = x1 + (c["f"] + self._b2)
            ds2 = self._norm_grad(dy, s2, 2, fname)
            dx1 = self._ffn_grad(ds2, x1, fname)
            dx1 += ds2
            s1 = x + _rows(c["a"])
            ds1 = self._norm_grad(dx1, s1, 1, fname)
            da = _mha_backward(attn, c["tape"], ds1.reshape(c["shape"]))
            dx = np.add(ds1, _rows(da), out=ds1)
        order = ("W1", "b1", "W2", "b2", "norm1_weight", "norm1_bias",
                 "norm2_weight", "norm2_bias")
        self.grads = {k: self.grads[k].astype(self.dtype, copy=False)
                      for k in order}
        return dx.reshape(c["shape"])
