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

static inline float sclf_max(float a, float b) { return a > b ? a : b; }
static inline float sclf_min(float a, float b) { return a < b ? a : b; }
static inline float sclf_abs(float a)
{
    uint32_t u;
    memcpy(&u, &a, sizeof u);
    u &= 0x7fffffffu;
    memcpy(&a, &u, sizeof u);
    return a;
}
static inline float sclf_orsign(float a, float s)
{
    uint32_t u, v;
    memcpy(&u, &a, sizeof u);
    memcpy(&v, &s, sizeof v);
    u |= v & 0x80000000u;
    memcpy(&a, &u, sizeof u);
    return a;
}
static inline float sclf_pow2t(float t)
{
    uint32_t u;
    memcpy(&u, &t, sizeof u);
    u = (u + 127u) << 23;
    memcpy(&t, &u, sizeof u);
    return t;
}
/* the exponent field less the bias; |a| with the field set to the bias */
static inline float sclf_getexp(float a)
{
    uint32_t u;
    memcpy(&u, &a, sizeof u);
    return (float)(int)((u >> 23) & 0xffu) - 127.0f;
}
static inline float sclf_getmant(float a)
{
    uint32_t u;
    memcpy(&u, &a, sizeof u);
    u = (u & 0x7fffffu) | (127u << 23);
    memcpy(&a, &u, sizeof u);
    return a;
}

static inline double scld_max(double a, double b) { return a > b ? a : b; }
static inline double scld_min(double a, double b) { return a < b ? a : b; }
static inline double scld_abs(double a)
{
    uint64_t u;
    memcpy(&u, &a, sizeof u);
    u &= 0x7fffffffffffffffull;
    memcpy(&a, &u, sizeof u);
    return a;
}
static inline double scld_orsign(double a, double s)
{
    uint64_t u, v;
    memcpy(&u, &a, sizeof u);
    memcpy(&v, &s, sizeof v);
    u |= v & 0x8000000000000000ull;
    memcpy(&a, &u, sizeof u);
    return a;
}
static inline double scld_pow2t(double t)
{
    uint64_t u;
    memcpy(&u, &t, sizeof u);
    u = (u + 1023u) << 52;
    memcpy(&t, &u, sizeof u);
    return t;
}
static inline double scld_getexp(double a)
{
    uint64_t u;
    memcpy(&u, &a, sizeof u);
    return (double)(int)((u >> 52) & 0x7ffu) - 1023.0;
}
static inline double scld_getmant(double a)
{
    uint64_t u;
    memcpy(&u, &a, sizeof u);
    u = (u & 0xfffffffffffffull) | (1023ull << 52);
    memcpy(&a, &u, sizeof u);
    return a;
}

#endif /* ATTNPY_SIMD_VEC_SCALAR_H */

/* ---- the template parameters of one element type (simd/undef.h) ---- */
#define ATTR
#define SIMD_ISA_SCALAR 1
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
#if SIMD_F64
#define T double
#define SIMD_T_F64 1
#define VT double
#define SFX(name) name##_scalar_f64
#define VFMA(a, b, c) attn_fma(a, b, c)
#define VFNMA(a, b, c) attn_fma(-(a), b, c)
#define VMAX(a, b) scld_max(a, b)
#define VMIN(a, b) scld_min(a, b)
#define VABS(a) scld_abs(a)
#define VORSIGN(a, s) scld_orsign(a, s)
#define VPOW2T(t) scld_pow2t(t)
#define VGETEXP(a) scld_getexp(a)
#define VGETMANT(a) scld_getmant(a)
#else
#define T float
#define SIMD_T_F64 0
#define VT float
#define SFX(name) name##_scalar_f32
#define VFMA(a, b, c) attn_fmaf(a, b, c)
#define VFNMA(a, b, c) attn_fmaf(-(a), b, c)
#define VMAX(a, b) sclf_max(a, b)
#define VMIN(a, b) sclf_min(a, b)
#define VABS(a) sclf_abs(a)
#define VORSIGN(a, s) sclf_orsign(a, s)
#define VPOW2T(t) sclf_pow2t(t)
#define VGETEXP(a) sclf_getexp(a)
#define VGETMANT(a) sclf_getmant(a)
#define VLOAD_F16(p) attn_f16_to_f32(*(p))
#define VLOAD_BF16(p) attn_bf16_to_f32(*(p))
#define VSTORE_F16(p, v) (*(p) = attn_f32_to_f16(v))
#define VSTORE_BF16(p, v) (*(p) = attn_f32_to_bf16(v))
#endif
#undef SIMD_F64
