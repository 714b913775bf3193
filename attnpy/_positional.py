"""The positional family: sinusoidal encodings (the tutorial's table, or
added in place) and the rotary embedding of Llama-type models."""
from __future__ import annotations

import numpy as np

from . import _core
from ._validate import check_out as _check_out, empty as _empty
from ._validate import float_dtype as _float_dtype
from ._validate import flag as _flag, offset_base as _offset_base
from ._validate import real as _real
from ._validate import size as _size
from ._types import Array, ArrayLike, DTypeLike

__all__ = ["positional_encoding", "add_positional_encoding",
           "rotary_embedding"]


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
    else:
        _check_out(out, (n, d), dt, fname)
    return _core.posenc(out, offset=0.0, base=base, accumulate=False,
                        fname=fname, argname="out")


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
        Position of x's first token (a float64 number: integers are
        exact up to 2**53).
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
    return _core.posenc(x, offset=float(offset), base=base, accumulate=True,
                        fname=fname, argname="x")


def rotary_embedding(x: ArrayLike, *, offset: int = 0, base: float = 10000.0,
                     interleaved: bool = False,
                     out: Array | None = None) -> Array:
    """Rotary position embedding (RoPE) of `x`, shape (..., T, E).

    Feature pair i of position t is rotated by the angle
    ``theta = (offset + t) * base**(-2i/E)``:
    ``(a, b) -> (a cos(theta) - b sin(theta), b cos(theta) + a sin(theta))``.
    The pairs are ``(x[..., i], x[..., i + E/2])`` ("rotate half": GPT-NeoX,
    Llama, Mistral) or, with ``interleaved=True``, ``(x[..., 2i],
    x[..., 2i+1])`` (GPT-J, the RoFormer paper). Angles and products are
    computed in float64, rounded once to the dtype of `x`. float16 and
    bfloat16 (``ml_dtypes.bfloat16``) `x` is read in 16 bits, a row at a
    time: the result, of x's dtype, is the float32 call's result on the
    same values rounded once to nearest even.

    Parameters
    ----------
    x : array_like, shape (..., T, E)
        Queries or keys, one head per trailing (T, E) matrix; E even.
    offset : int
        Position of the first row (the cache length when decoding); a
        float64 number: integers are exact up to 2**53.
    base : float
        The frequency base (10000 in most models; 500000 in Llama 3).
    interleaved : bool
        Which feature pairs rotate together (see above).
    out : ndarray, optional
        Where to write the result (x's shape; the result dtype or a wider
        float); pass ``out=x`` to rotate in place.

    Returns
    -------
    ndarray of x's shape, x's dtype for float16, bfloat16, float32 and
    float64 input (bool and integers: float64)

    Examples
    --------
    >>> import numpy as np, attnpy
    >>> x = np.ones((1, 3, 4))                  # (H, T, E)
    >>> attnpy.rotary_embedding(x).round(3)
    array([[[ 1.   ,  1.   ,  1.   ,  1.   ],
            [-0.301,  0.99 ,  1.382,  1.01 ],
            [-1.325,  0.98 ,  0.493,  1.02 ]]])
    >>> y = attnpy.rotary_embedding(x, out=x)   # in place
    >>> y is x
    True
    """
    fname = "rotary_embedding"
    offset, base = _offset_base(offset, base, fname)
    return _core.rope(x, offset=float(offset), base=base,
                      interleaved=_flag(interleaved, fname, "interleaved"),
                      out=out, fname=fname)
