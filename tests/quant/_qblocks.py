"""GGUF blocks built with NumPy, and the kernel's summation order in
exact NumPy arithmetic (for bit-for-bit checks)."""
import numpy as np

BYTES = {"q4_1": 20, "q8_0": 34}


def make_blocks(rng, n, k, qtype, scale=0.02):
    """(n, k // 32 * bytes) uint8: random float16 d (and m), random
    nibbles / int8 values."""
    nb = k // 32

    def f16(size):
        return (rng.standard_normal(size) * scale).astype(
            np.float16).view(np.uint8).reshape(n, nb, 2)

    if qtype == "q4_1":
        parts = [f16((n, nb)), f16((n, nb)),
                 rng.integers(0, 256, (n, nb, 16), dtype=np.uint8)]
    else:
        parts = [f16((n, nb)),
                 rng.integers(0, 256, (n, nb, 32), dtype=np.uint8)]
    return np.concatenate(parts, axis=-1).reshape(n, -1)


def _fma32(a, b, c):
    """float32 fma(a, b, c), correctly rounded: a * b is exact in
    float64; the float64 sum is rounded to odd (then rounding it to
    float32 is rounding the exact value once)."""
    p = a.astype(np.float64) * b.astype(np.float64)
    c = c.astype(np.float64)
    s = p + c
    bb = s - p                                  # TwoSum: s + e == p + c
    e = (p - (s - bb)) + (c - bb)
    odd = (s.view(np.int64) & 1) == 1
    fix = (e != 0) & ~odd & np.isfinite(s)
    s = np.where(fix, np.nextafter(s, np.where(e > 0, np.inf, -np.inf)), s)
    return s.astype(np.float32)


def ordered_matmul(x, w):
    """x (M, K) @ w (N, K).T in the kernel's order: acc[j] over blocks by
    fma, then acc[l] + acc[l + 16], + 8, + 4, + 2, + 1 (float32)."""
    M, K = x.shape
    acc = np.zeros((M, w.shape[0], 32), np.float32)
    for b in range(K // 32):
        xs = x[:, None, 32 * b:32 * b + 32]
        ws = w[None, :, 32 * b:32 * b + 32]
        acc = _fma32(np.broadcast_to(xs, acc.shape),
                     np.broadcast_to(ws, acc.shape), acc)
    for h in (16, 8, 4, 2, 1):
        acc = acc[..., :h] + acc[..., h:2 * h]
    return acc[..., 0]
