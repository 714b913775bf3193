"""The public functions of attnpy: thin wrappers over the C core.

Each function checks the arguments that are cheap to check in Python, then
calls ``attnpy._core``, which converts the arrays, broadcasts, allocates and
computes with the GIL released. ``attnpy.reference`` holds a plain NumPy twin
of every function here.
"""
from __future__ import annotations

from typing import Any
import textwrap

import numpy as np

from . import _core, _variants
from ._validate import axis as _axis, empty as _empty
from ._validate import float_dtype as _float_dtype, offset_base as _offset_base
from ._validate import public, real as _real, size as _size
from ._types import (Align, Array, ArrayLike, Causal, DTypeLike,
                     FullyMasked, Window)

__all__ = [
    "softmax", "scaled_dot_product_attention", "attention",
    "create_causal_mask", "causal_mask", "padding_mask",
    "positional_encoding", "add_positional_encoding",
    "split_heads", "combine_heads", "set_num_threads", "get_num_threads",
]


@public("softmax")
def softmax(x: ArrayLike, axis: int = -1, *,
            out: Array | None = None) -> Array:
    """Numerically stable softmax along one axis.

    ``exp(x - max(x)) / sum(exp(x - max(x)))`` along `axis`, exactly the
    tutorial's formula, computed in C. NaN and infinities propagate as they
    do in NumPy (a row of all ``-inf`` gives NaN, a row with one ``+inf``
    gives NaN where the others are finite).

    Parameters
    ----------
    x : array_like
        Real input. float32 and float64 are computed in their own precision;
        float16 is computed as float32, integers and booleans as float64.
    axis : int, optional
        The axis to normalise along (default: the last).
    out : ndarray, optional
        Where to write the result: exactly x's shape and the result dtype,
        any strides. ``out=x`` computes in place.

    Returns
    -------
    ndarray
        The probabilities; each slice along `axis` sums to 1.

    Examples
    --------
    >>> import attnpy
    >>> attnpy.softmax([1.0, 2.0, 3.0]).round(4)
    array([0.09  , 0.2447, 0.6652])
    >>> attnpy.softmax([[0.0, 0.0], [0.0, float("-inf")]])
    array([[0.5, 0.5],
           [1. , 0. ]])
    """
    x = _core.as_real(x, "softmax", "x")
    return _core.softmax(x, _axis(axis, x.ndim, "softmax"), out, "softmax")


@public("scaled_dot_product_attention")
def scaled_dot_product_attention(
        Q: ArrayLike, K: ArrayLike, V: ArrayLike,
        mask: ArrayLike | None = None, *, bias: ArrayLike | None = None,
        causal: Causal = False, scale: float | None = None,
        fully_masked: FullyMasked = "zero", out: Array | None = None,
        weights_out: Array | None = None, enable_gqa: bool = False,
        window: Window = None, alibi_slopes: ArrayLike | None = None,
        softcap: float | None = None) -> tuple[Array, Array]:
    """Scaled dot-product attention, returning the output and the weights.

    ``softmax(Q @ K^T * scale + bias, masked) @ V``: the tutorial's
    ``scaled_dot_product_attention(Q, K, V, mask)``, same call, same numbers,
    computed in C.

    Parameters
    ----------
    Q : array_like, shape (..., L, E)
        Queries.
    K : array_like, shape (..., S, E)
        Keys.
    V : array_like, shape (..., S, Ev)
        Values. Leading dims of Q, K, V (and mask, bias) broadcast.
    mask : array_like, optional
        Broadcastable to (..., L, S), any real or bool dtype: nonzero/True
        means "may attend" (the tutorial's 0/1 ``np.tril`` mask, PyTorch's
        boolean convention). A mask with negative entries (an additive
        ``-inf`` mask, PyTorch's float ``attn_mask``) raises ValueError:
        pass that as `bias`. ``numpy.ma`` arrays raise TypeError (their
        hidden entries would be read as data).
    bias : array_like, optional
        Added to the scaled scores, broadcastable to (..., L, S); ``-inf``
        blocks (the additive mask ``M`` of GPT-2 style write-ups).
    causal : {False, True, "top_left", "bottom_right"}
        True/"top_left": query i sees keys j <= i. "bottom_right":
        j <= i + S - L (decoding with a KV cache).
    scale : float, optional
        Default ``1/sqrt(E)``.
    fully_masked : {"zero", "uniform", "nan", "raise"}
        What a query that may see no key gets: zeros (default, as PyTorch
        SDPA), uniform weights 1/S (what the tutorials' -1e9 fill gives),
        NaN, or a ValueError naming the row.
    out, weights_out : ndarray, optional
        Arrays of exactly the results' shapes and dtype (any strides) to fill.
{variants}
    Returns
    -------
    output : ndarray, shape (..., L, Ev)
    weights : ndarray, shape (..., L, S)
        Each row sums to 1 (fully masked rows: per `fully_masked`).

    Examples
    --------
    The "the cat sat" example (Q = K = V = X):

    >>> import numpy as np, attnpy
    >>> X = np.array([[0.9, 0.3, 0.1, 0.5],
    ...               [0.1, 0.8, 0.4, 0.2],
    ...               [0.6, 0.1, 0.9, 0.3]])
    >>> out, w = attnpy.scaled_dot_product_attention(X, X, X)
    >>> w.round(3)
    array([[0.393, 0.278, 0.329],
           [0.307, 0.371, 0.321],
           [0.318, 0.281, 0.401]])
    >>> out[0].round(3)
    array([0.579, 0.373, 0.447, 0.351])

    With the tutorial's causal 0/1 mask:

    >>> w = attnpy.scaled_dot_product_attention(
    ...     X, X, X, attnpy.create_causal_mask(3))[1]
    >>> w.round(3)
    array([[1.   , 0.   , 0.   ],
           [0.453, 0.547, 0.   ],
           [0.318, 0.281, 0.401]])

    A causal sliding window of 2 tokens: each query sees itself and the
    key before it.

    >>> w = attnpy.scaled_dot_product_attention(X, X, X, causal=True,
    ...                                         window=(1, 0))[1]
    >>> (w > 0).astype(int)
    array([[1, 0, 0],
           [1, 1, 0],
           [0, 1, 1]])
    """
    return _variants.sdpa(Q, K, V, mask, bias, causal, scale, fully_masked,
                          out, weights_out, 1, "scaled_dot_product_attention",
                          enable_gqa, window, alibi_slopes, softcap)


@public("attention")
def attention(Q: ArrayLike, K: ArrayLike, V: ArrayLike, *,
              mask: ArrayLike | None = None, bias: ArrayLike | None = None,
              causal: Causal = False, scale: float | None = None,
              fully_masked: FullyMasked = "zero", out: Array | None = None,
              return_lse: bool = False, enable_gqa: bool = False,
              window: Window = None, alibi_slopes: ArrayLike | None = None,
              softcap: float | None = None) -> Any:
    """Fused attention: the output of scaled dot-product attention only.

    Same arguments and semantics as :func:`scaled_dot_product_attention`,
    but the L x S weight matrix is never built: a tiled kernel with an
    online softmax keeps memory linear in the sequence length, and the work
    is spread over :func:`get_num_threads` threads. The output is bit for
    bit the one :func:`scaled_dot_product_attention` returns.

    With ``return_lse=True`` the log-sum-exp of every row's scores comes
    too: ``lse[..., i] = log(sum_j exp(s_ij))`` over the keys row i may see
    (s = the scaled scores plus bias), ``-inf`` for a row that sees no key
    whatever ``fully_masked`` says. It is what
    :func:`attention_backward` needs, and what merges partial results.

    The variants (grouped-query heads, sliding window, ALiBi, soft-capping)
    are computed inside the same kernels, with the semantics of
    :func:`scaled_dot_product_attention`; a window skips the key blocks it
    excludes.

    Parameters
    ----------
    Q, K, V, mask, bias, causal, scale, fully_masked, out
        As in :func:`scaled_dot_product_attention`.
    return_lse : bool, optional
        Also return the rows' log-sum-exp.
{variants}
    Returns
    -------
    output : ndarray, shape (..., L, Ev)
    lse : ndarray, shape (..., L), output's dtype (only if return_lse)

    Examples
    --------
    >>> import numpy as np, attnpy
    >>> rng = np.random.default_rng(0)
    >>> Q, K, V = rng.standard_normal((3, 2, 4, 16, 8))   # (B, H, L, E)
    >>> out = attnpy.attention(Q, K, V, causal=True)
    >>> out.shape
    (2, 4, 16, 8)
    >>> ref = attnpy.reference.attention(Q, K, V, causal=True)
    >>> bool(np.allclose(out, ref, rtol=1e-12, atol=1e-14))
    True
    >>> out, lse = attnpy.attention(Q, K, V, return_lse=True)
    >>> lse.shape
    (2, 4, 16)

    Grouped-query attention: 8 query heads share 2 K/V heads, as if each
    K/V head were repeated for its 4 query heads (nothing is copied):

    >>> Q = rng.standard_normal((2, 8, 16, 8))
    >>> K, V = rng.standard_normal((2, 2, 2, 16, 8))
    >>> out = attnpy.attention(Q, K, V, enable_gqa=True, causal=True)
    >>> rep = attnpy.attention(Q, np.repeat(K, 4, axis=1),
    ...                        np.repeat(V, 4, axis=1), causal=True)
    >>> out.shape, bool(np.allclose(out, rep, rtol=1e-12, atol=1e-14))
    ((2, 8, 16, 8), True)

    ALiBi, one slope per head, is the bias ``-slope * |i - j|``:

    >>> slopes = 2.0 ** -np.arange(1, 9)                 # 8 heads
    >>> i = np.arange(16)
    >>> bias = -slopes[:, None, None] * np.abs(i[:, None] - i[None, :])
    >>> a = attnpy.attention(Q, Q, Q, alibi_slopes=slopes, causal=True)
    >>> b = attnpy.attention(Q, Q, Q, bias=bias, causal=True)
    >>> bool(np.allclose(a, b, rtol=1e-12, atol=1e-14))
    True

    Soft-capping squashes the scaled scores into (-softcap, softcap), a
    sliding window keeps the last 4 keys:

    >>> out = attnpy.attention(Q, Q, Q, softcap=5.0, causal=True,
    ...                        window=(3, 0))
    >>> ref = attnpy.reference.attention(Q, Q, Q, softcap=5.0, causal=True,
    ...                                  window=(3, 0))
    >>> bool(np.allclose(out, ref, rtol=1e-12, atol=1e-14))
    True
    """
    return _variants.sdpa(Q, K, V, mask, bias, causal, scale, fully_masked,
                          out, None, 3 if return_lse else 0, "attention",
                          enable_gqa, window, alibi_slopes, softcap)


for _f in (scaled_dot_product_attention, attention):
    _f.__doc__ = _f.__doc__.replace(
        "{variants}\n",
        textwrap.indent(_variants.VARIANT_PARAMS, "    ") + "\n")
del _f


def create_causal_mask(seq_len: int) -> Array:
    """The tutorial's causal mask: ``np.tril(np.ones((seq_len, seq_len)))``.

    A float64 0/1 matrix: 1 where query i may see key j (j <= i).

    Parameters
    ----------
    seq_len : int
        The sequence length (>= 0).

    Returns
    -------
    ndarray of float64, shape (seq_len, seq_len)
        Pass it as ``mask=`` (1 = may attend), never as ``bias=``.

    Examples
    --------
    >>> import attnpy
    >>> attnpy.create_causal_mask(3)
    array([[1., 0., 0.],
           [1., 1., 0.],
           [1., 1., 1.]])
    """
    n = _size(seq_len, "create_causal_mask", "seq_len")
    return np.tri(n, n, dtype=np.float64)


def causal_mask(L: int, S: int | None = None, *,
                align: Align = "top_left") -> Array:
    """Boolean causal mask of shape (L, S): True where query i may see key j.

    Parameters
    ----------
    L, S : int
        Query and key lengths (S defaults to L).
    align : {"top_left", "bottom_right"}
        "top_left": j <= i (like ``np.tril``, PyTorch ``is_causal``).
        "bottom_right": j <= i + S - L (the last query sees every key, as
        when decoding the newest tokens against a KV cache).

    Returns
    -------
    ndarray of bool, shape (L, S)

    Examples
    --------
    >>> import attnpy
    >>> attnpy.causal_mask(2, 4, align="bottom_right")
    array([[ True,  True,  True, False],
           [ True,  True,  True,  True]])
    """
    L = _size(L, "causal_mask", "L")
    S = L if S is None else _size(S, "causal_mask", "S")
    if not isinstance(align, str) or align not in ("top_left",
                                                   "bottom_right"):
        raise ValueError(f"causal_mask: align must be 'top_left' or "
                         f"'bottom_right', got {align!r}")
    k = 0 if align == "top_left" else S - L
    mask = _empty((L, S), bool, "causal_mask")
    np.greater_equal(np.arange(L)[:, None] + k, np.arange(S), out=mask)
    return mask


def padding_mask(lengths: ArrayLike, S: int) -> Array:
    """Key padding mask of shape (B, 1, 1, S): True where key j < lengths[b].

    Broadcasts against scores of shape (B, H, L, S).

    Parameters
    ----------
    lengths : array_like of int, shape (B,)
        The number of real (not padding) tokens of each sequence, each
        between 0 and S.
    S : int
        The padded key length.

    Returns
    -------
    ndarray of bool, shape (B, 1, 1, S)
        A keep-mask for ``mask=``.

    Examples
    --------
    >>> import attnpy
    >>> attnpy.padding_mask([2, 3], 4)[:, 0, 0]
    array([[ True,  True, False, False],
           [ True,  True,  True, False]])
    """
    S = _size(S, "padding_mask", "S")
    lengths = _core.as_real(lengths, "padding_mask", "lengths")
    if lengths.ndim != 1:
        raise ValueError(f"padding_mask: lengths must be 1-D, got shape "
                         f"{lengths.shape}")
    if lengths.size and lengths.dtype.kind not in "iub":
        raise TypeError(f"padding_mask: lengths must be integers, got dtype "
                        f"{lengths.dtype}")
    if lengths.size and (lengths.min() < 0 or lengths.max() > S):
        raise ValueError(f"padding_mask: lengths must be between 0 and "
                         f"S={S}, got {lengths.tolist()}")
    keep = _empty((lengths.size, 1, 1, S), bool, "padding_mask")
    np.less(np.arange(S), lengths.astype(np.intp)[:, None, None, None],
            out=keep)
    return keep


def positional_encoding(max_len: int, d_model: int, *, base: float = 10000.0,
                        dtype: DTypeLike = np.float64,
                        out: Array | None = None) -> Array:
    """Sinusoidal positional encodings, shape (max_len, d_model).

    ``PE[pos, 2i] = sin(pos / base**(2i/d_model))`` and
    ``PE[pos, 2i+1] = cos(pos / base**(2i/d_model))``, the tutorial's
    formula, computed in float64 and rounded to `dtype`. An odd `d_model`
    works (the cos columns use the first ``d_model // 2`` frequencies).

    Parameters
    ----------
    max_len : int
        Number of positions (rows).
    d_model : int
        Number of features (columns).
    base : float, optional
        The wavelength base (> 0), 10000 in the tutorials.
    dtype : float32 or float64, optional
        The result's dtype.
    out : ndarray, optional
        A (max_len, d_model) array of `dtype` to fill, any strides.

    Returns
    -------
    ndarray, shape (max_len, d_model)

    Examples
    --------
    >>> import attnpy
    >>> pe = attnpy.positional_encoding(100, 64)
    >>> pe.shape
    (100, 64)
    >>> pe[1, :4].round(3)
    array([0.841, 0.54 , 0.682, 0.732])
    """
    fname = "positional_encoding"
    n = _size(max_len, fname, "max_len")
    d = _size(d_model, fname, "d_model")
    base = _real(base, fname, "base")
    if not base > 0:
        raise ValueError(f"{fname}: base must be > 0, got {base}")
    dt = _float_dtype(dtype, fname)
    if out is None:
        out = _empty((n, d), dt, fname)
    elif not isinstance(out, np.ndarray):
        raise TypeError(f"{fname}: out must be a NumPy array, got "
                        f"{type(out).__name__}")
    elif out.shape != (n, d):
        raise ValueError(f"{fname}: out has shape {out.shape} but the result "
                         f"has shape {(n, d)}")
    elif out.dtype != dt:
        raise TypeError(f"{fname}: out has dtype {out.dtype} but the result "
                        f"has dtype {dt}")
    return _core.posenc(out, 0.0, base, False, fname, "out")


def add_positional_encoding(x: Array, *, offset: int = 0,
                            base: float = 10000.0) -> Array:
    """Add sinusoidal positional encodings to `x` in place; returns `x`.

    `x` has shape (..., T, D) and dtype float32 or float64; position t of
    the sequence gets ``PE[t + offset]`` (use `offset` when the tokens are a
    continuation, e.g. decoding step by step).

    Parameters
    ----------
    x : ndarray, shape (..., T, D), float32 or float64
        Modified in place.
    offset : int, optional
        Position of x's first token.
    base : float, optional
        The wavelength base (> 0).

    Returns
    -------
    ndarray
        `x` itself.

    Examples
    --------
    >>> import numpy as np, attnpy
    >>> x = np.zeros((2, 3, 4))
    >>> y = attnpy.add_positional_encoding(x, offset=1)
    >>> y is x
    True
    >>> bool(np.array_equal(x[0], attnpy.positional_encoding(4, 4)[1:]))
    True
    """
    fname = "add_positional_encoding"
    offset, base = _offset_base(offset, base, fname)
    return _core.posenc(x, float(offset), base, True, fname, "x")


def split_heads(x: ArrayLike, num_heads: int) -> Array:
    """(..., T, H*dk) -> (..., H, T, dk): a zero-copy view when possible.

    Parameters
    ----------
    x : array_like, shape (..., T, d_model)
    num_heads : int
        H, which must divide d_model.

    Returns
    -------
    ndarray, shape (..., H, T, d_model // H)
        A view of `x` when `x` is an array (no copy).

    Examples
    --------
    >>> import numpy as np, attnpy
    >>> x = np.arange(12.0).reshape(1, 2, 6)       # (batch, T, d_model)
    >>> h = attnpy.split_heads(x, 3)
    >>> h.shape
    (1, 3, 2, 2)
    >>> bool(np.shares_memory(h, x))
    True
    """
    fname = "split_heads"
    H = _size(num_heads, fname, "num_heads")
    x = _core.as_real(x, fname, "x")
    if x.ndim < 2:
        raise ValueError(f"{fname}: x must have at least 2 dimensions "
                         f"(..., T, d_model), got shape {x.shape}")
    d = x.shape[-1]
    if H == 0 or d % H:
        raise ValueError(f"{fname}: d_model={d} is not divisible by "
                         f"num_heads={H} (x.shape={x.shape})")
    try:
        y = x.reshape(x.shape[:-1] + (H, d // H))
    except (ValueError, OverflowError):  # only d == 0 with a huge H
        raise ValueError(f"{fname}: cannot split x.shape={x.shape} into "
                         f"num_heads={H} heads") from None
    return np.swapaxes(y, -3, -2)


def combine_heads(x: ArrayLike, *, out: Array | None = None) -> Array:
    """(..., H, T, dk) -> (..., T, H*dk), the inverse of :func:`split_heads`.

    A copy in x's own dtype (float32/float64 by the C core).

    Parameters
    ----------
    x : array_like, shape (..., H, T, dk)
    out : ndarray, optional
        A (..., T, H*dk) array of x's dtype to fill, any strides.

    Returns
    -------
    ndarray, shape (..., T, H*dk)

    Examples
    --------
    >>> import numpy as np, attnpy
    >>> x = np.arange(12.0).reshape(1, 2, 6)
    >>> bool(np.array_equal(attnpy.combine_heads(attnpy.split_heads(x, 3)), x))
    True
    """
    fname = "combine_heads"
    x = _core.as_real(x, fname, "x")
    if x.dtype.kind == "f" and x.dtype.itemsize in (4, 8):  # any byte order
        return _core.combine_heads(x, out, fname)
    # other real dtypes: a pure data move, so the dtype is kept (NumPy does
    # it; the C core copies only the float types it computes in)
    if x.ndim < 3:
        raise ValueError(f"{fname}: x must have at least 3 dimensions "
                         f"(..., H, T, dk), got shape {x.shape}")
    *lead, H, T, dk = x.shape
    result = _empty((*lead, T, H * dk), x.dtype, fname)
    np.copyto(result.reshape(*lead, T, H, dk), np.swapaxes(x, -3, -2))
    if out is None:
        return result
    if not isinstance(out, np.ndarray):
        raise TypeError(f"{fname}: out must be a NumPy array, got "
                        f"{type(out).__name__}")
    if out.shape != result.shape:
        raise ValueError(f"{fname}: out has shape {out.shape} but the result "
                         f"has shape {result.shape}")
    if out.dtype != result.dtype:
        raise TypeError(f"{fname}: out has dtype {out.dtype} but the result "
                        f"has dtype {result.dtype}")
    if not out.flags.writeable:
        raise ValueError(f"{fname}: out is read-only")
    np.copyto(out, result)
    return out


def set_num_threads(n: int) -> int:
    """Set how many threads attnpy's kernels use; returns the previous count.

    The default is the number of CPUs this process may run on, or the
    environment variable ``ATTNPY_NUM_THREADS`` when set (an integer from
    1 to 1024; any other value is ignored with a RuntimeWarning).

    Parameters
    ----------
    n : int
        From 1 to 1024. Results are the same bits for any count.

    Returns
    -------
    int
        The previous count.

    Examples
    --------
    >>> import attnpy
    >>> old = attnpy.set_num_threads(1)
    >>> attnpy.get_num_threads()
    1
    >>> _ = attnpy.set_num_threads(old)
    """
    return _core.set_num_threads(n)


def get_num_threads() -> int:
    """The number of threads attnpy's kernels use (see set_num_threads).

    Returns
    -------
    int
        Between 1 and 1024.

    Examples
    --------
    >>> import attnpy
    >>> attnpy.get_num_threads() >= 1
    True
    """
    return _core.get_num_threads()
