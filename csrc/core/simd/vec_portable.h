/*
 * simd/vec_portable.h -- the portable SIMD primitives: plain C, no
 * intrinsics, any CPU. This is the numeric rule: every other
 * simd/vec_<isa>.h performs exactly these IEEE operations.
 *
 *     #define SIMD_F64 0                 (0: float, 1: double)
 *     #define SIMD_PORT_WIDE 0           (optional, 0 by default)
 *     #include "simd/vec_portable.h"
 *     #include "simd/math.h"
 *
 * SIMD_PORT_WIDE 0: 4 floats / 2 doubles, compiled for the build's
 *     target (x86-64: SSE2 and the C library's fma; AArch64: NEON and
 *     its fmadd; elsewhere whatever the compiler does), names *_port_*.
 * SIMD_PORT_WIDE 1 (x86 with gcc or clang only): 8 floats / 4 doubles,
 *     the same code compiled for AVX2 + FMA (target attribute), names
 *     *_portw_*: what the "portable" set runs on a CPU that has them
 *     ("baseline" runs the narrow build).
 * With gcc and clang the vectors are generic vectors (vector_size: + - *
 * / and compares map onto the target's SIMD, or are split); with other
 * compilers (MSVC) small structs of W lanes and loops. VFMA is a
 * correctly rounded fused multiply-add per lane (simd/fma.h), never a
 * multiply then an add; nothing is contracted behind the code's back
 * (setup.py: -ffp-contract=off; clang is told below).
 */
#ifndef ATTNPY_SIMD_VEC_PORTABLE_H
#define ATTNPY_SIMD_VEC_PORTABLE_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "half.h"
#include "runtime/platform.h"
#include "simd/fma.h"

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

/* generic vectors with gcc and clang (-DSIMD_PORT_VEXT=0 builds the loops
 * over lanes there too, to test them)                                   */
#ifndef SIMD_PORT_VEXT
#if defined(__GNUC__) || defined(__clang__)
#define SIMD_PORT_VEXT 1
#else
#define SIMD_PORT_VEXT 0
#endif
#endif

#if SIMD_PORT_VEXT
/* PV_TYPES(prefix, lanes, T, unsigned int of T's size, signed): the
 * vector types P_vt (T), P_vu (bits) and P_vm (what a compare returns)  */
#define PV_TYPES(P, W_, T_, U_, S_)                                            \
    typedef T_ P##_vt __attribute__((vector_size((W_) * sizeof(T_))));        \
    typedef U_ P##_vu __attribute__((vector_size((W_) * sizeof(T_))));        \
    typedef S_ P##_vm __attribute__((vector_size((W_) * sizeof(T_))));

/* PV_OPS(prefix, lanes, T, unsigned int of T's size, fma of one lane,
 * exponent bias, fraction bits, attributes): the primitives simd/math.h
 * lists                                                                 */
#define PV_OPS(P, W_, T_, U_, FMA1, BIAS, MBITS, A_)                      \
    static ATTN_INLINE A_ P##_vt P##_set1(T_ x)                                \
    {                                                                          \
        /* -0 + x is x for every x (+0 + x is not, for x = -0): folded  \
         * to a broadcast */                                                  \
        P##_vt m0 = {0};                                                       \
        return -m0 + x;                                                        \
    }                                                                          \
    static ATTN_INLINE A_ P##_vt P##_load(const T_ *p)                         \
    {                                                                          \
        P##_vt r;                                                              \
        memcpy(&r, p, sizeof r);                                               \
        return r;                                                              \
    }                                                                          \
    static ATTN_INLINE A_ void P##_store(T_ *p, P##_vt a)                      \
    {                                                                          \
        memcpy(p, &a, sizeof a);                                               \
    }                                                                          \
    static ATTN_INLINE A_ P##_vt P##_fma(P##_vt a, P##_vt b, P##_vt c)         \
    {                                                                          \
        for (int i = 0; i < (W_); i++)                                         \
            c[i] = FMA1(a[i], b[i], c[i]);                                     \
        return c;                                                              \
    }                                                                          \
    /* c - a b, one rounding: fma(-a, b, c) (negation is exact) */           \
    static ATTN_INLINE A_ P##_vt P##_fnma(P##_vt a, P##_vt b, P##_vt c)        \
    {                                                                          \
        return P##_fma(-a, b, c);                                              \
    }                                                                          \
    /* m ? a : b, m a compare's result (all bits 1 or 0 per lane) */         \
    static ATTN_INLINE A_ P##_vt P##_sel(P##_vm m, P##_vt a, P##_vt b)         \
    {                                                                          \
        return (P##_vt)(((P##_vu)m & (P##_vu)a) | (~(P##_vu)m & (P##_vu)b));  \
    }                                                                          \
    static ATTN_INLINE A_ P##_vt P##_max(P##_vt a, P##_vt b)                   \
    {                                                                          \
        return P##_sel(a > b, a, b);                                           \
    }                                                                          \
    static ATTN_INLINE A_ P##_vt P##_min(P##_vt a, P##_vt b)                   \
    {                                                                          \
        return P##_sel(a < b, a, b);                                           \
    }                                                                          \
    static ATTN_INLINE A_ P##_vt P##_abs(P##_vt a)                             \
    {                                                                          \
        return (P##_vt)((P##_vu)a & ~(P##_vu)P##_set1(-(T_)0));               \
    }                                                                          \
    static ATTN_INLINE A_ P##_vt P##_orsign(P##_vt a, P##_vt s)                \
    {                                                                          \
        return (P##_vt)((P##_vu)a | ((P##_vu)s & (P##_vu)P##_set1(-(T_)0)));  \
    }                                                                          \
    /* 2^n from t = n + 1.5 2^MBITS: the low bits of t are n           */    \
    static ATTN_INLINE A_ P##_vt P##_pow2t(P##_vt t)                           \
    {                                                                          \
        return (P##_vt)(((P##_vu)t + (BIAS)) << (MBITS));                      \
    }                                                                          \
    /* the exponent field less the bias, as a T: the field put under      \
     * 2^MBITS's bits is 2^MBITS + e, exactly                             */  \
    static ATTN_INLINE A_ P##_vt P##_getexp(P##_vt a)                          \
    {                                                                          \
        const P##_vt two_m = P##_set1((T_)((U_)1 << (MBITS)));                 \
        const P##_vu e = ((P##_vu)a >> (MBITS)) & (U_)(2 * (BIAS) + 1);        \
        return (P##_vt)(e | (P##_vu)two_m) - (two_m + (T_)(BIAS));             \
    }                                                                          \
    /* |a| with the exponent field set to the bias                     */    \
    static ATTN_INLINE A_ P##_vt P##_getmant(P##_vt a)                         \
    {                                                                          \
        return (P##_vt)(((P##_vu)a & (((U_)1 << (MBITS)) - 1))                 \
                        | ((U_)(BIAS) << (MBITS)));                            \
    }                                                                          \
    static ATTN_INLINE A_ T_ P##_rsum(P##_vt a)                                \
    {                                                                          \
        T_ s = a[0];                                                           \
        for (int i = 1; i < (W_); i++)                                         \
            s += a[i];                                                         \
        return s;                                                              \
    }

PV_TYPES(pf4, 4, float, uint32_t, int32_t)
PV_TYPES(pd2, 2, double, uint64_t, int64_t)
PV_OPS(pf4, 4, float, uint32_t, attn_fmaf, 127u, 23, )
PV_OPS(pd2, 2, double, uint64_t, attn_fma, 1023u, 52, )

#if ATTN_ARCH_X86 && !defined(__FMA__) && defined(__SSE2__) && SIMD_PORT_VEXT
#include "simd/fma_sse2.h"
#define PV_PF4_FMA_SSE2 1
#endif

#if ATTN_ARCH_X86
/* the wide variant: AVX2 registers, the FMA instruction inline          */
#define SIMD_PORT_WIDE_ATTR ATTN_TARGET("avx2,fma")
PV_TYPES(pf8, 8, float, uint32_t, int32_t)
PV_TYPES(pd4, 4, double, uint64_t, int64_t)
PV_OPS(pf8, 8, float, uint32_t, __builtin_fmaf, 127u, 23, SIMD_PORT_WIDE_ATTR)
PV_OPS(pd4, 4, double, uint64_t, __builtin_fma, 1023u, 52, SIMD_PORT_WIDE_ATTR)
#define SIMD_PORT_HAVE_WIDE 1
#endif

/* the arithmetic and compares: the vectors' operators                  */
#define PV_OP_(name, a, b, op) ((a) op (b))

#else /* !SIMD_PORT_VEXT: structs of W lanes and loops */
#include "simd/lane.h"

/* PV_SOPS(prefix, lanes, T, lane.h's prefix of T, fma of one lane)       */
#define PV_SOPS(P, W_, T_, S, FMA1)                                            \
    typedef struct { T_ v[W_]; } P##_vt;                                       \
    typedef struct { int v[W_]; } P##_vm;                                      \
    static inline P##_vt P##_set1(T_ x)                                        \
    {                                                                          \
        P##_vt r;                                                              \
        for (int i = 0; i < W_; i++)                                           \
            r.v[i] = x;                                                        \
        return r;                                                              \
    }                                                                          \
    static inline P##_vt P##_load(const T_ *p)                                 \
    {                                                                          \
        P##_vt r;                                                              \
        memcpy(r.v, p, sizeof r.v);                                            \
        return r;                                                              \
    }                                                                          \
    static inline void P##_store(T_ *p, P##_vt a)                              \
    {                                                                          \
        memcpy(p, a.v, sizeof a.v);                                            \
    }                                                                          \
    PV_SBIN(P, W_, add, +)                                                     \
    PV_SBIN(P, W_, sub, -)                                                     \
    PV_SBIN(P, W_, mul, *)                                                     \
    PV_SBIN(P, W_, div, /)                                                     \
    PV_SCMP(P, W_, lt, <)                                                      \
    PV_SCMP(P, W_, le, <=)                                                     \
    PV_SCMP(P, W_, eq, ==)                                                     \
    static inline P##_vt P##_fma(P##_vt a, P##_vt b, P##_vt c)                 \
    {                                                                          \
        for (int i = 0; i < W_; i++)                                           \
            c.v[i] = FMA1(a.v[i], b.v[i], c.v[i]);                             \
        return c;                                                              \
    }                                                                          \
    static inline P##_vt P##_fnma(P##_vt a, P##_vt b, P##_vt c)                \
    {                                                                          \
        for (int i = 0; i < W_; i++)                                           \
            c.v[i] = FMA1(-a.v[i], b.v[i], c.v[i]);                            \
        return c;                                                              \
    }                                                                          \
    static inline P##_vt P##_sel(P##_vm m, P##_vt a, P##_vt b)                 \
    {                                                                          \
        for (int i = 0; i < W_; i++)                                           \
            a.v[i] = m.v[i] ? a.v[i] : b.v[i];                                 \
        return a;                                                              \
    }                                                                          \
    PV_SLANE2(P, W_, S, max)                                                   \
    PV_SLANE2(P, W_, S, min)                                                   \
    PV_SLANE2(P, W_, S, orsign)                                                \
    PV_SLANE1(P, W_, S, abs)                                                   \
    PV_SLANE1(P, W_, S, pow2t)                                                 \
    PV_SLANE1(P, W_, S, getexp)                                                \
    PV_SLANE1(P, W_, S, getmant)                                               \
    static inline T_ P##_rsum(P##_vt a)                                        \
    {                                                                          \
        T_ s = a.v[0];                                                         \
        for (int i = 1; i < W_; i++)                                           \
            s += a.v[i];                                                       \
        return s;                                                              \
    }
#define PV_SBIN(P, W_, name, op)                                               \
    static inline P##_vt P##_##name(P##_vt a, P##_vt b)                        \
    {                                                                          \
        for (int i = 0; i < W_; i++)                                           \
            a.v[i] = a.v[i] op b.v[i];                                         \
        return a;                                                              \
    }
#define PV_SCMP(P, W_, name, op)                                               \
    static inline P##_vm P##_##name(P##_vt a, P##_vt b)                        \
    {                                                                          \
        P##_vm m;                                                              \
        for (int i = 0; i < W_; i++)                                           \
            m.v[i] = a.v[i] op b.v[i];                                         \
        return m;                                                              \
    }
/* lane.h's S_name on every lane, of one operand or two               */
#define PV_SLANE1(P, W_, S, name)                                              \
    static inline P##_vt P##_##name(P##_vt a)                                  \
    {                                                                          \
        for (int i = 0; i < W_; i++)                                           \
            a.v[i] = S##_##name(a.v[i]);                                       \
        return a;                                                              \
    }
#define PV_SLANE2(P, W_, S, name)                                              \
    static inline P##_vt P##_##name(P##_vt a, P##_vt b)                        \
    {                                                                          \
        for (int i = 0; i < W_; i++)                                           \
            a.v[i] = S##_##name(a.v[i], b.v[i]);                               \
        return a;                                                              \
    }

PV_SOPS(pf4, 4, float, sclf, attn_fmaf)
PV_SOPS(pd2, 2, double, scld, attn_fma)
/* the arithmetic and compares: the functions above                      */
#define PV_OP_(name, a, b, op) VFN_(name)(a, b)
#endif /* SIMD_PORT_VEXT */

/* 16-bit storage: W float16 / bfloat16 <-> W floats, lane by lane with
 * half.h's exact conversions                                            */
#define PV_HALF1(P, W_, A_, F)                                                 \
    static ATTN_INLINE A_ P##_vt P##_ld_##F(const uint16_t *p)                 \
    {                                                                          \
        float x[W_];                                                           \
        for (int i = 0; i < (W_); i++)                                         \
            x[i] = attn_##F##_to_f32(p[i]);                                    \
        return P##_load(x);                                                    \
    }                                                                          \
    static ATTN_INLINE A_ void P##_st_##F(uint16_t *p, P##_vt a)               \
    {                                                                          \
        float x[W_];                                                           \
        P##_store(x, a);                                                       \
        for (int i = 0; i < (W_); i++)                                         \
            p[i] = attn_f32_to_##F(x[i]);                                      \
    }
#define PV_HALF(P, W_, A_) PV_HALF1(P, W_, A_, f16) PV_HALF1(P, W_, A_, bf16)

PV_HALF(pf4, 4, )
#ifdef SIMD_PORT_HAVE_WIDE
PV_HALF(pf8, 8, SIMD_PORT_WIDE_ATTR)
#endif

#endif /* ATTNPY_SIMD_VEC_PORTABLE_H */

/* ---- the template parameters of one (variant, element type) ---- */
#ifndef SIMD_PORT_WIDE
#define SIMD_PORT_WIDE 0
#endif
#if SIMD_PORT_WIDE && !defined(SIMD_PORT_HAVE_WIDE)
#error "vec_portable.h: the wide variant needs x86 and gcc or clang"
#endif
#if SIMD_PORT_WIDE
#define ATTR SIMD_PORT_WIDE_ATTR
#if SIMD_F64
#define VFN_(op) pd4_##op
#define W 4
#define SFX(name) name##_portw_f64
#else
#define VFN_(op) pf8_##op
#define W 8
#define SFX(name) name##_portw_f32
#endif
#else
#define ATTR
#if SIMD_F64
#define VFN_(op) pd2_##op
#define W 2
#define SFX(name) name##_port_f64
#else
#define VFN_(op) pf4_##op
#define W 4
#define SFX(name) name##_port_f32
#endif
#endif
#if SIMD_F64
#define T double
#define SIMD_T_F64 1
#else
#define T float
#define SIMD_T_F64 0
#endif
#define VT VFN_(vt)
#define VM VFN_(vm)
#define VZERO() VFN_(set1)(0)
#define VSET1(x) VFN_(set1)(x)
#define VLOADU(p) VFN_(load)(p)
#define VSTOREU(p, v) VFN_(store)(p, v)
#define VADD(a, b) PV_OP_(add, a, b, +)
#define VSUB(a, b) PV_OP_(sub, a, b, -)
#define VMUL(a, b) PV_OP_(mul, a, b, *)
#define VDIV(a, b) PV_OP_(div, a, b, /)
#define VLT(a, b) PV_OP_(lt, a, b, <)
#define VLE(a, b) PV_OP_(le, a, b, <=)
#define VEQ(a, b) PV_OP_(eq, a, b, ==)
#if defined(PV_PF4_FMA_SSE2) && !SIMD_PORT_WIDE && !SIMD_F64
#define VFMA(a, b, c) pf4_fma_sse2(a, b, c)
#define VFNMA(a, b, c) pf4_fma_sse2(-(a), b, c)
#else
#define VFMA(a, b, c) VFN_(fma)(a, b, c)
#define VFNMA(a, b, c) VFN_(fnma)(a, b, c)
#endif
#define VMAX(a, b) VFN_(max)(a, b)
#define VMIN(a, b) VFN_(min)(a, b)
#define VABS(a) VFN_(abs)(a)
#define VORSIGN(a, s) VFN_(orsign)(a, s)
#define VSEL(m, a, b) VFN_(sel)(m, a, b)
#define VPOW2T(t) VFN_(pow2t)(t)
#define VGETEXP(a) VFN_(getexp)(a)
#define VGETMANT(a) VFN_(getmant)(a)
#define VRSUM(a) VFN_(rsum)(a)
#if !SIMD_F64
#define VLOAD_F16(p) VFN_(ld_f16)(p)
#define VLOAD_BF16(p) VFN_(ld_bf16)(p)
#define VSTORE_F16(p, v) VFN_(st_f16)(p, v)
#define VSTORE_BF16(p, v) VFN_(st_bf16)(p, v)
#endif
#undef SIMD_F64
