"""NumPy twin of the quant family: GGUF blocks decoded to float32, then
an ordinary matrix product.

Block layouts (32 weights a block, every number little-endian)::

    q4_1  20 bytes: float16 d, float16 m, 16 bytes q
          weight j < 16 = d * (q[j] & 15) + m, weight 16 + j = d * (q[j] >> 4) + m
    q8_0  34 bytes: float16 d, 32 int8 q;  weight j = d * q[j]

d and m are widened to float32 first and the formulas are evaluated in
float32, as the ``gguf`` package's dequantizer does.
"""
import numpy as np

__all__ = ["quantized_matmul", "dequantize", "BLOCK_BYTES"]

BLOCK_BYTES = {"q4_1": 20, "q8_0": 34}


def _blocks(weight, qtype):
    if qtype not in BLOCK_BYTES:
        raise ValueError(f"quantized_matmul: unknown qtype {qtype!r}")
    w = np.asarray(weight)
    if w.dtype != np.uint8:
        raise TypeError(f"quantized_matmul: weight must be uint8, got "
                        f"{w.dtype}")
    if w.ndim != 2 or w.shape[1] % BLOCK_BYTES[qtype]:
        raise ValueError(f"quantized_matmul: weight has shape {w.shape}")
    # the block count written out: reshape cannot infer it when N = 0
    return np.ascontiguousarray(w).reshape(
        w.shape[0], w.shape[1] // BLOCK_BYTES[qtype], BLOCK_BYTES[qtype])


def dequantize(weight, qtype):
    """The float32 (N, K) matrix of GGUF rows `weight` (N, bytes)."""
    b = _blocks(weight, qtype)
    d = b[..., 0:2].copy().view(np.float16).astype(np.float32)
    if qtype == "q4_1":
        m = b[..., 2:4].copy().view(np.float16).astype(np.float32)
        q = b[..., 4:]
        q = np.concatenate([q & 15, q >> 4], axis=-1).astype(np.float32)
        w = d * q + m
    else:
        w = b[..., 2:].copy().view(np.int8).astype(np.float32) * d
    return w.reshape(b.shape[0], b.shape[1] * 32)   # 32 weights a block


def quantized_matmul(x, weight, qtype):
    """x @ W.T, W = dequantize(weight, qtype): (..., K) -> (..., N)
    float32 (summed in float64, rounded once)."""
    x = np.asarray(x)
    if x.dtype.kind != "f":
        raise TypeError(f"quantized_matmul: x must be float32, got {x.dtype}")
    w = dequantize(weight, qtype)
    if x.ndim < 1 or x.shape[-1] != w.shape[1]:
        raise ValueError(f"quantized_matmul: x has shape {x.shape}, W "
                         f"{w.shape}")
    y = x.astype(np.float64) @ w.T.astype(np.float64)
    return y.astype(np.float32)
