"""The attention functions: scaled_dot_product_attention (output and
weights), attention (the fused kernel), and the masks they take.

Each function checks the arguments that are cheap to check in Python, then
calls ``attnpy._core``, which converts the arrays, broadcasts, allocates and
computes with the GIL released. ``attnpy.reference`` holds a plain NumPy twin
of every function here.
"""
from __future__ import annotations

from typing import Any
import inspect
import textwrap

import numpy as np

from . import _core, _variants
from ._validate import empty as _empty, flag as _flag, public, size as _size
from ._types import Align, Array, ArrayLike, Causal, FullyMasked, Window

__all__ = ["scaled_dot_product_attention", "attention",
           "create_causal_mask", "causal_mask", "padding_mask"]


#: The variant keywords' documentation for the public functions'
#: docstrings: one numpydoc entry a keyword, in their signatures' order.
#: A function's ``{variants}`` becomes the entries of the keywords its own
#: signature has (document_variants).
VARIANT_DOCS = {
    "enable_gqa": """\
enable_gqa : bool, optional
    Grouped-query attention: Q (..., Hq, L, E) with K and V
    (..., Hkv, S, E), Hq a multiple of Hkv; query head h reads K/V head
    ``h // (Hq // Hkv)`` (PyTorch's convention). A mask, bias or
    alibi_slopes with a head axis has Hq (or 1) heads there.
""",
    "window": """\
window : (left, right), optional
    Sliding window: query i sees only keys ``i' - left <= j <= i' + right``
    (i' = i, or i + S - L with ``causal="bottom_right"``); either side may
    be None (unbounded). Intersected with causal, mask and bias:
    ``window=(w - 1, 0)`` with ``causal=True`` is Mistral's w-token window.
""",
    "alibi_slopes": """\
alibi_slopes : array_like, optional
    ALiBi: shape (H,) or (B, H) for Q (B, H, L, E) (broadcast over the
    leading dims like a mask's); ``slope * |i' - j|`` is subtracted from
    the score after the bias.
""",
    "softcap": """\
softcap : float, optional
    Soft-capping (Gemma 2, Grok): the scaled scores s become
    ``softcap * tanh(s / softcap)`` before bias, ALiBi and masks. > 0.
""",
}


def document_variants(f, newline=""):
    """f with ``{variants}`` in its docstring replaced by the entries of
    VARIANT_DOCS whose keywords f takes."""
    names = inspect.signature(f).parameters
    text = "".join(d for k, d in VARIANT_DOCS.items() if k in names)
    f.__doc__ = f.__doc__.replace("{variants}\n",
                                  textwrap.indent(text, "    ") + newline)
    return f


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
        Dtypes: float16, bfloat16 (``ml_dtypes.bfloat16``), float32 or
        float64 (bool and integers are converted to float64). The result
        has ``np.result_type`` of Q, K, V (float16 with bfloat16 gives
        float32); 16-bit inputs are read in 16 bits by the kernels, never
        converted as a whole, accumulated in float32 and the result is
        rounded once. A 16-bit input in a float64 call is converted to
        float64. See the guide's page on 16-bit data.
    mask : array_like, optional
        Broadcastable to (..., L, S), any real or bool dtype: nonzero/True
        means "may attend" (the tutorial's 0/1 ``np.tril`` mask, PyTorch's
        boolean convention). A mask with negative entries (an additive
        ``-inf`` mask, PyTorch's float ``attn_mask``), or a float mask
        with values other than 0 and 1 (weights, probabilities), raises
        ValueError: pass that as `bias`. ``numpy.ma`` arrays raise TypeError (their
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
        Arrays of exactly the results' shapes (any strides) to fill, of
        the results' dtype or a wider float: a float32 `out` for float16
        inputs receives the float32 accumulator, not rounded to 16 bits.
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
                          out, weights_out, "scaled_dot_product_attention",
                          enable_gqa, (window, alibi_slopes, softcap),
                          return_weights=True)


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
    lse : ndarray, shape (..., L) (only if return_lse)
        In the output's dtype, float32 for a float16 or bfloat16 output.

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

    float16 (or bfloat16) inputs are read in 16 bits and accumulated in
    float32: the result is the float32 call's, rounded once to float16,
    and the lse stays float32:

    >>> Qh, Kh, Vh = (a.astype(np.float16) for a in (Q, K, V))
    >>> out, lse = attnpy.attention(Qh, Kh, Vh, return_lse=True)
    >>> out.dtype, lse.dtype
    (dtype('float16'), dtype('float32'))
    >>> up = [a.astype(np.float32) for a in (Qh, Kh, Vh)]
    >>> bool(np.array_equal(out, attnpy.attention(*up).astype(np.float16)))
    True

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
                          out, None, "attention", enable_gqa,
                          (window, alibi_slopes, softcap),
                          return_lse=_flag(return_lse, "attention", "return_lse"))


for _f in (scaled_dot_product_attention, attention):
    document_variants(_f, "\n")
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
    mask = _empty((n, n), np.float64, "create_causal_mask")
    np.greater_equal(np.arange(n)[:, None], np.arange(n), out=mask)
    return mask


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
    if mask.size:   # no arange of the other length for an empty mask
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
    if keep.size:   # no arange of S for an empty mask
        np.less(np.arange(S), lengths.astype(np.intp)[:, None, None, None],
                out=keep)
    return keep
