/*
 * simd/u128.h -- 128-bit unsigned integers from two 64-bit halves, the
 * little the exact arithmetic of simd/fma.c and simd/scalar.c needs
 * (not public). Portable C: MSVC has no unsigned __int128.
 */
#ifndef ATTNPY_SIMD_U128_H
#define ATTNPY_SIMD_U128_H

#include <stdint.h>

typedef struct {
    uint64_t hi, lo;
} attn__u128;

/* the index of x's highest set bit, x != 0 (no compiler builtin: MSVC)  */
static inline int attn__msb64(uint64_t x)
{
    int n = 0;
    for (int s = 32; s > 0; s >>= 1)
        if (x >> s) {
            x >>= s;
            n += s;
        }
    return n;
}

static inline int attn__msb128(attn__u128 x)
{
    return x.hi ? 64 + attn__msb64(x.hi) : attn__msb64(x.lo);
}

/* the 128-bit product of two 64-bit integers, from 32-bit halves       */
static inline attn__u128 attn__mul64(uint64_t a, uint64_t b)
{
    const uint64_t a0 = a & 0xffffffffu, a1 = a >> 32;
    const uint64_t b0 = b & 0xffffffffu, b1 = b >> 32;
    const uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    const uint64_t mid = (p00 >> 32) + (p01 & 0xffffffffu) + (p10 & 0xffffffffu);
    attn__u128 r;
    r.lo = (mid << 32) | (p00 & 0xffffffffu);
    r.hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
    return r;
}

#endif /* ATTNPY_SIMD_U128_H */
