/*
 * simd/lane.h -- the bit-level primitives on one float (sclf_*) or double
 * (scld_*): max, min, abs, orsign, pow2t, getexp, getmant with the
 * meaning simd/math.h lists. The one-lane set (simd/vec_scalar.h) is
 * made of them, and the portable set's loops over lanes
 * (simd/vec_portable.h without generic vectors) call them.
 */
#ifndef ATTNPY_SIMD_LANE_H
#define ATTNPY_SIMD_LANE_H

#include <stdint.h>
#include <string.h>

/* The bit-level primitives of one type T (prefix P), through its
 * unsigned twin U: SHIFT the mantissa's width, EMASK the exponent field,
 * BIAS the exponent bias. getexp: the exponent field less the bias;
 * getmant: |a| with the field set to the bias.                          */
#define SCL_DEFINE_(P, T, U, SHIFT, EMASK, BIAS)                               \
    static inline T P##_max(T a, T b) { return a > b ? a : b; }                \
    static inline T P##_min(T a, T b) { return a < b ? a : b; }                \
    static inline T P##_abs(T a)                                               \
    {                                                                          \
        U u;                                                                   \
        memcpy(&u, &a, sizeof u);                                              \
        u &= ~((U)1 << (8 * sizeof(U) - 1));                                   \
        memcpy(&a, &u, sizeof u);                                              \
        return a;                                                              \
    }                                                                          \
    static inline T P##_orsign(T a, T s)                                       \
    {                                                                          \
        U u, v;                                                                \
        memcpy(&u, &a, sizeof u);                                              \
        memcpy(&v, &s, sizeof v);                                              \
        u |= v & ((U)1 << (8 * sizeof(U) - 1));                                \
        memcpy(&a, &u, sizeof u);                                              \
        return a;                                                              \
    }                                                                          \
    static inline T P##_pow2t(T t)                                             \
    {                                                                          \
        U u;                                                                   \
        memcpy(&u, &t, sizeof u);                                              \
        u = (u + BIAS) << SHIFT;                                               \
        memcpy(&t, &u, sizeof u);                                              \
        return t;                                                              \
    }                                                                          \
    static inline T P##_getexp(T a)                                            \
    {                                                                          \
        U u;                                                                   \
        memcpy(&u, &a, sizeof u);                                              \
        return (T)(int)((u >> SHIFT) & EMASK) - (T)BIAS;                       \
    }                                                                          \
    static inline T P##_getmant(T a)                                           \
    {                                                                          \
        U u;                                                                   \
        memcpy(&u, &a, sizeof u);                                              \
        u = (u & (((U)1 << SHIFT) - 1)) | ((U)BIAS << SHIFT);                  \
        memcpy(&a, &u, sizeof u);                                              \
        return a;                                                              \
    }

SCL_DEFINE_(sclf, float, uint32_t, 23, 0xffu, 127u)
SCL_DEFINE_(scld, double, uint64_t, 52, 0x7ffu, 1023u)
#undef SCL_DEFINE_

#endif /* ATTNPY_SIMD_LANE_H */
