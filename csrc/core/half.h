/*
 * half.h -- 16-bit storage: exact conversions in plain C (not public).
 *
 * float16 is IEEE 754 binary16 (1 sign, 5 exponent, 10 fraction bits);
 * bfloat16 is the top half of a float32 (1, 8, 7). Every float16 and
 * every bfloat16 is exactly a float, so reading is exact. Writing rounds
 * once, to nearest, ties to even, as the hardware instructions do
 * (vcvtps2ph with rounding mode 0, vcvtneps2bf16, NEON fcvtn): the SIMD
 * paths and these functions give the same bits. NaN stays NaN (quiet, its
 * sign kept), overflow goes to +-inf, float16 subnormals are kept.
 *
 * Bits are handled through memcpy, never pointer casts (no aliasing
 * questions, and compilers turn it into one move).
 */
#ifndef ATTNPY_HALF_H
#define ATTNPY_HALF_H

#include <stdint.h>
#include <string.h>

#include "attn.h"

static inline float attn_bits_to_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint32_t attn_f32_to_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* bfloat16 -> float: the 16 bits are the float's top half */
static inline float attn_bf16_to_f32(uint16_t h)
{
    return attn_bits_to_f32((uint32_t)h << 16);
}

/* float -> bfloat16, nearest even; NaN -> quiet NaN of the same sign */
static inline uint16_t attn_f32_to_bf16(float f)
{
    const uint32_t u = attn_f32_to_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x0040u);
    const uint32_t lsb = (u >> 16) & 1u;
    return (uint16_t)((u + 0x7fffu + lsb) >> 16);
}

/* float16 -> float, exact (subnormals normalised, inf kept); a NaN keeps
 * its sign and payload and comes out quiet, as vcvtph2ps and NEON fcvtl
 * make it (so every path reads the same bits)                          */
static inline float attn_f16_to_f32(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu, frac = h & 0x3ffu;
    if (exp == 0x1f) /* inf, or NaN made quiet */
        return attn_bits_to_f32(sign | 0x7f800000u | (frac << 13)
                                | (frac ? 0x400000u : 0u));
    if (exp != 0)
        return attn_bits_to_f32(sign | ((exp + 112u) << 23) | (frac << 13));
    /* zero or subnormal: frac * 2^-24, exact in float */
    const float mag = (float)frac * 0x1p-24f;
    return sign ? -mag : mag;
}

/* float -> float16, nearest even; overflow -> inf; NaN -> quiet NaN */
static inline uint16_t attn_f32_to_f16(float f)
{
    const uint32_t u = attn_f32_to_bits(f);
    const uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    const uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) /* NaN: keep the top payload bits, set quiet */
        return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x477ff000u) /* >= 65520 rounds to inf (and inf itself) */
        return (uint16_t)(sign | 0x7c00u);
    if (a >= 0x38800000u) { /* normal float16: drop 13 bits, nearest even */
        const uint32_t lsb = (a >> 13) & 1u;
        return (uint16_t)(sign | ((a - 0x38000000u + 0xfffu + lsb) >> 13));
    }
    /* subnormal float16 (or zero): |f| < 2^-14, the result is
     * round(|f| * 2^24) units of 2^-24; the product is exact and the
     * float -> int conversion below rounds to nearest even by hand */
    const float scaled = attn_bits_to_f32(a) * 0x1p24f;
    uint32_t n = (uint32_t)scaled; /* truncates */
    const float rest = scaled - (float)n;
    if (rest > 0.5f || (rest == 0.5f && (n & 1u)))
        n++;
    return (uint16_t)(sign | n);
}

/* element i of a row stored as `st` (float storage: ATTN_ST_NATIVE with an
 * ATTN_F32 problem), as a float                                          */
static inline float attn_load_f32(attn_store st, const void *base,
                                  ptrdiff_t i)
{
    switch (st) {
    case ATTN_ST_F16:
        return attn_f16_to_f32(((const uint16_t *)base)[i]);
    case ATTN_ST_BF16:
        return attn_bf16_to_f32(((const uint16_t *)base)[i]);
    default:
        return ((const float *)base)[i];
    }
}

static inline void attn_store_f32(attn_store st, void *base, ptrdiff_t i,
                                  float x)
{
    switch (st) {
    case ATTN_ST_F16:
        ((uint16_t *)base)[i] = attn_f32_to_f16(x);
        break;
    case ATTN_ST_BF16:
        ((uint16_t *)base)[i] = attn_f32_to_bf16(x);
        break;
    default:
        ((float *)base)[i] = x;
        break;
    }
}

#endif /* ATTNPY_HALF_H */
