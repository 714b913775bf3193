/*
 * simd/vec_scalar.h -- the portable primitives on one lane (W = 1, VT =
 * T): the same operations as simd/vec_portable.h, for code that works on
 * one value at a time (a row's log-sum-exp, an angle) and for the
 * functions of simd/math.h called from plain C (simd/scalar.c).
 *
 *     #define SIMD_F64 1
 *     #include "simd/vec_scalar.h"
 *     #include "simd/math.h"             (defines exp_neg_scalar_f64 ...)
 */
#ifndef ATTNPY_SIMD_VEC_SCALAR_H
#define ATTNPY_SIMD_VEC_SCALAR_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "half.h"
#include "runtime/platform.h"
#include "simd/fma.h"

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

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

#endif /* ATTNPY_SIMD_VEC_SCALAR_H */

/* ---- the template parameters of one element type (simd/undef.h) ---- */
#define ATTR
#define W 1
#define VM int
#define VZERO() ((T)0)
#define VSET1(x) ((T)(x))
#define VLOADU(p) (*(p))
#define VSTOREU(p, v) (*(p) = (v))
#define VADD(a, b) ((a) + (b))
#define VSUB(a, b) ((a) - (b))
#define VMUL(a, b) ((a) * (b))
#define VDIV(a, b) ((a) / (b))
#define VLT(a, b) ((a) < (b))
#define VLE(a, b) ((a) <= (b))
#define VEQ(a, b) ((a) == (b))
#define VSEL(m, a, b) ((m) ? (a) : (b))
#define VRSUM(a) (a)
#define VMAX(a, b) VFN_(max)(a, b)
#define VMIN(a, b) VFN_(min)(a, b)
#define VABS(a) VFN_(abs)(a)
#define VORSIGN(a, s) VFN_(orsign)(a, s)
#define VPOW2T(t) VFN_(pow2t)(t)
#define VGETEXP(a) VFN_(getexp)(a)
#define VGETMANT(a) VFN_(getmant)(a)
#if SIMD_F64
#define T double
#define SIMD_T_F64 1
#define VT double
#define SFX(name) name##_scalar_f64
#define VFN_(name) scld_##name /* SCL_DEFINE_'s functions of this type */
#define VFMA(a, b, c) attn_fma(a, b, c)
#define VFNMA(a, b, c) attn_fma(-(a), b, c)
#else
#define T float
#define SIMD_T_F64 0
#define VT float
#define SFX(name) name##_scalar_f32
#define VFN_(name) sclf_##name
#define VFMA(a, b, c) attn_fmaf(a, b, c)
#define VFNMA(a, b, c) attn_fmaf(-(a), b, c)
#define VLOAD_F16(p) attn_f16_to_f32(*(p))
#define VLOAD_BF16(p) attn_bf16_to_f32(*(p))
#define VSTORE_F16(p, v) (*(p) = attn_f32_to_f16(v))
#define VSTORE_BF16(p, v) (*(p) = attn_f32_to_bf16(v))
#endif
#undef SIMD_F64
