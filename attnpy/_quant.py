"""The quant family: matrix products with weights kept in GGUF blocks.

A decode step of a small language model is mostly matrix-vector products
that read every weight once; reading the weights in their 4- or 8-bit
blocks (20 or 34 bytes per 32 weights) instead of as float32 (128 bytes)
reads 4-6 times fewer bytes. The C kernel (csrc/core/quant/) decodes each
block in registers into exactly the float32 values of the ``gguf``
package's dequantizer and sums x * w in one fixed order, the same on
every instruction set and for any number of threads.
"""
from __future__ import annotations

import math
from typing import Literal

import numpy as np

from . import _core
from ._validate import check_out as _check_out, public
from ._types import Array, ArrayLike

__all__ = ["quantized_matmul"]

_BLOCK_BYTES = {"q4_1": 20, "q8_0": 34}


def _qtype(qtype, fname):
    if not isinstance(qtype, str):
        raise TypeError(f"{fname}: qtype must be a str ('q4_1' or 'q8_0'), "
                        f"got {type(qtype).__name__}")
    if qtype not in _BLOCK_BYTES:
        raise ValueError(f"{fname}: qtype must be 'q4_1' or 'q8_0', got "
                         f"{qtype!r}")
    return qtype


def _array(a, fname, arg, kind, what):
    if isinstance(a, np.ma.MaskedArray):
        raise TypeError(f"{fname}: {arg} is a masked array; pass "
                        f"{arg}.filled(...) or {arg}.data")
    a = np.asarray(a) if not isinstance(a, np.ndarray) else a
    if a.dtype != np.dtype(kind).newbyteorder("="):
        if a.dtype.kind != np.dtype(kind).kind or a.dtype.itemsize != \
                np.dtype(kind).itemsize:
            raise TypeError(f"{fname}: {arg} must have dtype {what}, got "
                            f"{a.dtype}")
    return a


def _rows(a, dtype):
    """a 2-D array as the kernel takes it: unit-stride aligned rows of
    native `dtype` (a view when it already is one, else a copy)."""
    if (a.dtype == dtype and a.flags.aligned and a.ndim == 2
            and (a.shape[1] <= 1 or a.strides[1] == a.itemsize)
            and (a.shape[0] <= 1 or (a.strides[0] >= a.shape[1] * a.itemsize
                                     and a.strides[0] % a.itemsize == 0))):
        return a
    return np.array(a, dtype=dtype, order="C")   # a copy: aligned too


@public("quantized_matmul")
def quantized_matmul(x: ArrayLike, weight: ArrayLike,
                     qtype: Literal["q4_1", "q8_0"], *,
                     out: Array | None = None) -> Array:
    """``x @ W.T`` with ``W`` read directly from GGUF quantized blocks.

    `weight` holds the rows of an (N, K) weight matrix exactly as a GGUF
    file stores them (``gguf.GGUFReader(path).tensors[i].data``): row n is
    K / 32 blocks of 32 weights,

    * ``"q4_1"``: 20 bytes, float16 ``d``, float16 ``m``, 16 bytes ``q``;
      weight ``j < 16`` is ``d * (q[j] & 15) + m`` and weight ``16 + j``
      is ``d * (q[j] >> 4) + m``;
    * ``"q8_0"``: 34 bytes, float16 ``d``, 32 int8 ``q``; weight ``j`` is
      ``d * q[j]``.

    The weights are exactly the float32 values ``gguf.dequantize`` gives
    (``d`` and ``m`` widened to float32; ``d * q`` is exact), so the result
    differs from ``x @ gguf.dequantize(weight, ...).T`` only by the order
    of the float32 sums, as two BLAS libraries differ. That order is fixed
    (32 running sums, one per position in a block, then a pairwise tree):
    the same bits on every instruction set and for any thread count. A
    matrix-vector product reads 20 (q4_1) or 34 (q8_0) bytes per 32
    weights instead of 128: use it where a product is bound by reading
    the weights (one token at a time); for many rows of x, a float32
    copy of W with NumPy's BLAS is faster.

    Parameters
    ----------
    x : array_like of float32, shape (..., K)
        K a multiple of 32; any leading dims, any strides.
    weight : array_like of uint8, shape (N, K // 32 * block_bytes)
        The GGUF rows (block_bytes: 20 for q4_1, 34 for q8_0).
    qtype : {"q4_1", "q8_0"}
        How the blocks are coded.
    out : ndarray of float32, shape (..., N), optional
        Where to write the result (any strides).

    Returns
    -------
    ndarray of float32, shape (..., N)

    Examples
    --------
    One q8_0 block: d = 0.5 (float16 bits 0x3800), q = 0, 1, ..., 31.

    >>> import numpy as np, attnpy
    >>> block = np.concatenate([np.frombuffer(np.float16(0.5).tobytes(),
    ...                                       np.uint8),
    ...                         np.arange(32, dtype=np.int8).view(np.uint8)])
    >>> W = block[None, :]                       # (N, 34): N = 1, K = 32
    >>> attnpy.quantized_matmul(np.ones(32, np.float32), W, "q8_0")
    array([248.], dtype=float32)
    """
    fname = "quantized_matmul"
    qt = _qtype(qtype, fname)
    x = _array(x, fname, "x", np.float32, "float32")
    w = _array(weight, fname, "weight", np.uint8, "uint8")
    if x.ndim < 1:
        raise ValueError(f"{fname}: x must have at least 1 dimension "
                         f"(..., K), got shape {x.shape}")
    K = x.shape[-1]
    bs = _BLOCK_BYTES[qt]
    if K % 32:
        raise ValueError(f"{fname}: x has K = {K} features, not a multiple "
                         f"of 32 (the block size); x.shape={x.shape}")
    if w.ndim != 2 or w.shape[1] != K // 32 * bs:
        raise ValueError(f"{fname}: weight must have shape (N, {K // 32 * bs})"
                         f" for x of K = {K} ({K // 32} blocks of {bs} bytes "
                         f"a row, {qt}), got weight.shape={w.shape}")
    N = w.shape[0]
    shape = x.shape[:-1] + (N,)
    if out is not None:
        _check_out(out, shape, np.dtype(np.float32), fname)
        if not out.flags.writeable:
            raise ValueError(f"{fname}: out is read-only")
    M = math.prod(x.shape[:-1])
    x2 = _rows(x.reshape(M, K), np.dtype(np.float32))
    w2 = _rows(w, np.dtype(np.uint8))
    dst = None
    if out is not None and not (np.may_share_memory(out, x2)
                                or np.may_share_memory(out, w2)):
        try:
            # a view when the layout allows (else a copy, caught below);
            # reshape's copy= keyword needs NumPy 2.1
            dst = _rows(out.reshape(M, N), np.dtype(np.float32))
        except ValueError:
            dst = None
        if dst is not None and not np.shares_memory(dst, out):
            dst = None
    res = dst if dst is not None else np.empty((M, N), np.float32)
    _core.qmatmul(x2, w2, res, qtype=qt, fname=fname)
    if out is None:
        return res.reshape(shape)
    if dst is None:
        out[...] = res.reshape(shape)
    return out
