/*
 * attention/vec_portable.h -- plain C, no intrinsics (any CPU).
 *
 * The vector primitives of the attention templates (tile.h, decode_tile.h)
 * as vectors of W lanes on which the compiler generates whatever SIMD the
 * target has, and their template parameters for one element type. Use
 * (the selectors are consumed, the parameters are #undef'd by the
 * template):
 *
 *     #define ATTN_VEC_F64 0            (0: float, 1: double)
 *     #define ATTN_PORT_WIDE 0          (optional, 0 by default)
 *     #include "attention/vec_portable.h"
 *     #include "attention/tile.h"
 *
 * ATTN_PORT_WIDE 0: 4 floats / 2 doubles, compiled for the build's target
 *     (x86-64: SSE2; AArch64: NEON; any other: what the compiler does),
 *     names *_portable_*.
 * ATTN_PORT_WIDE 1 (x86 with gcc or clang only): 8 floats / 4 doubles,
 *     the same code compiled for AVX2 (target("avx2"), no FMA: a*b+c is
 *     never fused), names *_portable8_*; sdpa.c runs it for "portable"
 *     when the CPU has AVX2.
 * With gcc and clang the vectors are generic vectors (vector_size: the
 * compiler maps + - * and compares onto the target's SIMD, or splits them
 * when it has none); with other compilers (MSVC) small structs of W lanes
 * and loops. Every lane operation is the same IEEE operation in the same
 * order either way, and a*b+c is a multiply then an add (never
 * contracted: setup.py passes -ffp-contract=off, and clang is told
 * below), so the tile kernel's results are the same bits for every
 * variant and target. The exp is the SIMD paths' algorithm (exp.h) with
 * unfused steps.
 *
 * Besides the parameters tile.h lists, VRSUM(v) is the sum of the lanes of
 * v, in a fixed order (lane 0 + lane 1 + ...).
 */
#ifndef ATTNPY_VEC_PORTABLE_H
#define ATTNPY_VEC_PORTABLE_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "attention/exp.h"
#include "half.h"
#include "runtime/platform.h"

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

#if defined(__GNUC__) || defined(__clang__)
#define ATTN_PORT_VEXT 1 /* generic vectors */
#else
#define ATTN_PORT_VEXT 0
#endif

#if ATTN_PORT_VEXT
/* PV_TYPES(prefix, lanes of T, T, unsigned int of T's size): the vector
 * types VT (T), VU (bits) and VS (signed: what a compare returns)       */
#define PV_TYPES(P, W_, T_, U_, S_)                                            \
    typedef T_ P##vt __attribute__((vector_size((W_) * sizeof(T_))));         \
    typedef U_ P##vu __attribute__((vector_size((W_) * sizeof(T_))));         \
    typedef S_ P##vs __attribute__((vector_size((W_) * sizeof(T_))));

/* PV_OPS(prefix, lanes, T, attributes): the primitives on generic vectors */
#define PV_OPS(P, W_, T_, A_)                                                  \
    static ATTN_INLINE A_ P##vt P##set1(T_ x)                                 \
    {                                                                          \
        /* -0 + x is x for every x (+0 + x is not, for x = -0): the     \
         * compiler folds the add away and is left with a broadcast */       \
        P##vt m0 = {0};                                                        \
        return -m0 + x;                                                        \
    }                                                                          \
    static ATTN_INLINE A_ P##vt P##load(const T_ *p)                          \
    {                                                                          \
        P##vt r;                                                               \
        memcpy(&r, p, sizeof r);                                               \
        return r;                                                              \
    }                                                                          \
    static ATTN_INLINE A_ void P##store(T_ *p, P##vt a)                       \
    {                                                                          \
        memcpy(p, &a, sizeof a);                                               \
    }                                                                          \
    /* m ? a : b, m a compare's result (all bits 1 or 0 per lane)  */        \
    static ATTN_INLINE A_ P##vt P##sel(P##vs m, P##vt a, P##vt b)             \
    {                                                                          \
        return (P##vt)(((P##vu)m & (P##vu)a) | (~(P##vu)m & (P##vu)b));       \
    }                                                                          \
    static ATTN_INLINE A_ P##vt P##max(P##vt a, P##vt b)                      \
    {                                                                          \
        return P##sel(b > a, b, a);                                            \
    }                                                                          \
    static ATTN_INLINE A_ P##vt P##safe(P##vt a)                              \
    {                                                                          \
        return P##sel(a == P##set1((T_)-INFINITY), P##set1(0), a);             \
    }                                                                          \
    static ATTN_INLINE A_ T_ P##rsum(P##vt a)                                 \
    {                                                                          \
        T_ s = a[0];                                                           \
        for (int i = 1; i < (W_); i++)                                         \
            s += a[i];                                                         \
        return s;                                                              \
    }

/* The steps exp and expm1 share (exp.h), on xc = max(CLAMP, x):
 * x = n ln2 + r; returns q1 = 1 + r q(r), so that exp(x) = 2^n (1 + r q1)
 * and expm1(x) = 2^n (r q1) + (2^n - 1); *r_ = r, *s_ = 2^n (0 for the
 * clamped n = -127 / -1023, whose exponent field is 0)                  */
#define PV_EXP_F(P, A_)                                                        \
    static ATTN_INLINE A_ P##vt P##expk(P##vt xc, P##vt *r_, P##vt *s_)       \
    {                                                                          \
        P##vt t = xc * AX_LOG2E_F + AX_MAGIC_F;                                \
        P##vt n = t - AX_MAGIC_F;                                              \
        P##vt r = xc - n * AX_LN2HI_F;                                         \
        r = r - n * AX_LN2LO_F;                                                \
        P##vt q = P##set1(AX_Q6_F);                                            \
        q = q * r + AX_Q5_F;                                                   \
        q = q * r + AX_Q4_F;                                                   \
        q = q * r + AX_Q3_F;                                                   \
        q = q * r + AX_Q2_F;                                                   \
        /* 2^n from the low bits of t (t = MAGIC + n) */                       \
        P##vu e = ((P##vu)t + 127u) << 23;                                     \
        *r_ = r;                                                               \
        *s_ = (P##vt)e;                                                        \
        return q * r + 1.0f;                                                   \
    }                                                                          \
    /* exp(x) for x <= 0: -inf and underflow -> 0, NaN -> NaN */             \
    static ATTN_INLINE A_ P##vt P##exp(P##vt x)                               \
    {                                                                          \
        const P##vt c = P##set1(AX_CLAMP_F);                                   \
        P##vt xc = P##sel(x < c, c, x); /* NaN stays NaN */                    \
        P##vt r, s;                                                            \
        P##vt q = P##expk(xc, &r, &s);                                         \
        P##vt y = q * r + 1.0f;                                                \
        y = y * s;                                                             \
        return P##sel(x < AX_MINX_F, P##set1(0), y);                           \
    }

#define PV_EXP_D(P, A_)                                                        \
    static ATTN_INLINE A_ P##vt P##expk(P##vt xc, P##vt *r_, P##vt *s_)       \
    {                                                                          \
        P##vt t = xc * AX_LOG2E_D + AX_MAGIC_D;                                \
        P##vt n = t - AX_MAGIC_D;                                              \
        P##vt r = xc - n * AX_LN2HI_D;                                         \
        r = r - n * AX_LN2LO_D;                                                \
        P##vt q = P##set1(AX_Q11_D);                                           \
        q = q * r + AX_Q10_D;                                                  \
        q = q * r + AX_Q9_D;                                                   \
        q = q * r + AX_Q8_D;                                                   \
        q = q * r + AX_Q7_D;                                                   \
        q = q * r + AX_Q6_D;                                                   \
        q = q * r + AX_Q5_D;                                                   \
        q = q * r + AX_Q4_D;                                                   \
        q = q * r + AX_Q3_D;                                                   \
        q = q * r + AX_Q2_D;                                                   \
        P##vu e = ((P##vu)t + 1023u) << 52;                                    \
        *r_ = r;                                                               \
        *s_ = (P##vt)e;                                                        \
        return q * r + 1.0;                                                    \
    }                                                                          \
    static ATTN_INLINE A_ P##vt P##exp(P##vt x)                               \
    {                                                                          \
        const P##vt c = P##set1(AX_CLAMP_D);                                   \
        P##vt xc = P##sel(x < c, c, x);                                        \
        P##vt r, s;                                                            \
        P##vt q = P##expk(xc, &r, &s);                                         \
        P##vt y = q * r + 1.0;                                                 \
        y = y * s;                                                             \
        return P##sel(x < AX_MINX_D, P##set1(0), y);                           \
    }

/* tanh(x) = sign(x) * -m / (2 + m), m = expm1(-2|x|) in [-1, 0]: no
 * cancellation near 0 (m = r q1 there), +-1 for large |x|, NaN stays NaN */
#define PV_TANH(P, T_, CLAMP, A_)                                              \
    static ATTN_INLINE A_ P##vt P##tanh(P##vt x)                              \
    {                                                                          \
        const P##vu sgn = (P##vu)P##set1((T_)-0.0);                            \
        P##vt a2 = (P##vt)((P##vu)x & ~sgn) * (T_)-2;                          \
        const P##vt c = P##set1(CLAMP);                                        \
        P##vt xc = P##sel(a2 < c, c, a2);                                      \
        P##vt r, s;                                                            \
        P##vt q = P##expk(xc, &r, &s);                                         \
        P##vt m = s * (q * r) + (s - (T_)1);                                   \
        P##vt th = ((T_)0 - m) / ((T_)2 + m);                                  \
        return (P##vt)((P##vu)th | ((P##vu)x & sgn));                          \
    }

PV_TYPES(pf4_, 4, float, uint32_t, int32_t)
PV_TYPES(pd2_, 2, double, uint64_t, int64_t)
PV_OPS(pf4_, 4, float, )
PV_OPS(pd2_, 2, double, )
PV_EXP_F(pf4_, )
PV_EXP_D(pd2_, )
PV_TANH(pf4_, float, AX_CLAMP_F, )
PV_TANH(pd2_, double, AX_CLAMP_D, )

#if ATTN_ARCH_X86
/* the wide variant: AVX2 registers, unfused multiply and add */
#define ATTN_PORT_WIDE_ATTR ATTN_TARGET("avx2")
PV_TYPES(pf8_, 8, float, uint32_t, int32_t)
PV_TYPES(pd4_, 4, double, uint64_t, int64_t)
PV_OPS(pf8_, 8, float, ATTN_PORT_WIDE_ATTR)
PV_OPS(pd4_, 4, double, ATTN_PORT_WIDE_ATTR)
PV_EXP_F(pf8_, ATTN_PORT_WIDE_ATTR)
PV_EXP_D(pd4_, ATTN_PORT_WIDE_ATTR)
PV_TANH(pf8_, float, AX_CLAMP_F, ATTN_PORT_WIDE_ATTR)
PV_TANH(pd4_, double, AX_CLAMP_D, ATTN_PORT_WIDE_ATTR)
#define ATTN_PORT_HAVE_WIDE 1
#endif

/* the operations every variant spells the same way */
#define PV_FMA(a, b, c) ((c) + (a) * (b)) /* unfused */
#define PV_MUL(a, b) ((a) * (b))
#define PV_ADD(a, b) ((a) + (b))
#define PV_SUB(a, b) ((a) - (b))

#else /* !ATTN_PORT_VEXT: structs of W lanes and loops */

/* one lane: the same steps as PV_EXP_F / PV_EXP_D / PV_TANH */
static inline float pexpk_f(float xc, float *r_, float *s_)
{
    float t = xc * AX_LOG2E_F + AX_MAGIC_F;
    float n = t - AX_MAGIC_F;
    float r = xc - n * AX_LN2HI_F;
    r = r - n * AX_LN2LO_F;
    float q = AX_Q6_F;
    q = q * r + AX_Q5_F;
    q = q * r + AX_Q4_F;
    q = q * r + AX_Q3_F;
    q = q * r + AX_Q2_F;
    uint32_t bits;
    memcpy(&bits, &t, sizeof bits);
    bits = (bits + 127u) << 23;
    memcpy(s_, &bits, sizeof bits);
    *r_ = r;
    return q * r + 1.0f;
}

static inline float pexp_f(float x)
{
    float xc = x < AX_CLAMP_F ? AX_CLAMP_F : x;
    float r, s;
    float q = pexpk_f(xc, &r, &s);
    float y = q * r + 1.0f;
    y = y * s;
    return x < AX_MINX_F ? 0.0f : y;
}

static inline float ptanh_f(float x)
{
    float a2 = fabsf(x) * -2.0f;
    float xc = a2 < AX_CLAMP_F ? AX_CLAMP_F : a2;
    float r, s;
    float q = pexpk_f(xc, &r, &s);
    float m = s * (q * r) + (s - 1.0f);
    return copysignf((0.0f - m) / (2.0f + m), x);
}

static inline double pexpk_d(double xc, double *r_, double *s_)
{
    double t = xc * AX_LOG2E_D + AX_MAGIC_D;
    double n = t - AX_MAGIC_D;
    double r = xc - n * AX_LN2HI_D;
    r = r - n * AX_LN2LO_D;
    double q = AX_Q11_D;
    q = q * r + AX_Q10_D;
    q = q * r + AX_Q9_D;
    q = q * r + AX_Q8_D;
    q = q * r + AX_Q7_D;
    q = q * r + AX_Q6_D;
    q = q * r + AX_Q5_D;
    q = q * r + AX_Q4_D;
    q = q * r + AX_Q3_D;
    q = q * r + AX_Q2_D;
    uint64_t bits;
    memcpy(&bits, &t, sizeof bits);
    bits = (bits + 1023u) << 52;
    memcpy(s_, &bits, sizeof bits);
    *r_ = r;
    return q * r + 1.0;
}

static inline double pexp_d(double x)
{
    double xc = x < AX_CLAMP_D ? AX_CLAMP_D : x;
    double r, s;
    double q = pexpk_d(xc, &r, &s);
    double y = q * r + 1.0;
    y = y * s;
    return x < AX_MINX_D ? 0.0 : y;
}

static inline double ptanh_d(double x)
{
    double a2 = fabs(x) * -2.0;
    double xc = a2 < AX_CLAMP_D ? AX_CLAMP_D : a2;
    double r, s;
    double q = pexpk_d(xc, &r, &s);
    double m = s * (q * r) + (s - 1.0);
    return copysign((0.0 - m) / (2.0 + m), x);
}

#define PV_SOPS(P, W_, T_, EXP1, TANH1)                                               \
    typedef struct { T_ v[W_]; } P##vt;                                        \
    static inline P##vt P##set1(T_ x)                                          \
    {                                                                          \
        P##vt r;                                                               \
        for (int i = 0; i < W_; i++)                                           \
            r.v[i] = x;                                                        \
        return r;                                                              \
    }                                                                          \
    static inline P##vt P##load(const T_ *p)                                   \
    {                                                                          \
        P##vt r;                                                               \
        memcpy(r.v, p, sizeof r.v);                                            \
        return r;                                                              \
    }                                                                          \
    static inline void P##store(T_ *p, P##vt a)                                \
    {                                                                          \
        memcpy(p, a.v, sizeof a.v);                                            \
    }                                                                          \
    static inline P##vt P##fma(P##vt a, P##vt b, P##vt c)                      \
    {                                                                          \
        for (int i = 0; i < W_; i++)                                           \
            c.v[i] += a.v[i] * b.v[i];                                         \
        return c;                                                              \
    }                                                                          \
    static inline P##vt P##mul(P##vt a, P##vt b)                               \
    {                                                                          \
        for (int i = 0; i < W_; i++)                                           \
            a.v[i] *= b.v[i];                                                  \
        return a;                                                              \
    }                                                                          \
    static inline P##vt P##add(P##vt a, P##vt b)                               \
    {                                                                          \
        for (int i = 0; i < W_; i++)                                           \
            a.v[i] += b.v[i];                                                  \
        return a;                                                              \
    }                                                                          \
    static inline P##vt P##sub(P##vt a, P##vt b)                               \
    {                                                                          \
        for (int i = 0; i < W_; i++)                                           \
            a.v[i] -= b.v[i];                                                  \
        return a;                                                              \
    }                                                                          \
    static inline P##vt P##max(P##vt a, P##vt b)                               \
    {                                                                          \
        for (int i = 0; i < W_; i++)                                           \
            a.v[i] = b.v[i] > a.v[i] ? b.v[i] : a.v[i];                        \
        return a;                                                              \
    }                                                                          \
    static inline P##vt P##safe(P##vt a)                                       \
    {                                                                          \
        for (int i = 0; i < W_; i++)                                           \
            a.v[i] = a.v[i] == (T_)-INFINITY ? (T_)0 : a.v[i];                 \
        return a;                                                              \
    }                                                                          \
    static inline T_ P##rsum(P##vt a)                                          \
    {                                                                          \
        T_ s = a.v[0];                                                         \
        for (int i = 1; i < W_; i++)                                           \
            s += a.v[i];                                                       \
        return s;                                                              \
    }                                                                          \
    static inline P##vt P##exp(P##vt a)                                        \
    {                                                                          \
        for (int i = 0; i < W_; i++)                                           \
            a.v[i] = EXP1(a.v[i]);                                             \
        return a;                                                              \
    }                                                                          \
    static inline P##vt P##tanh(P##vt a)                                       \
    {                                                                          \
        for (int i = 0; i < W_; i++)                                           \
            a.v[i] = TANH1(a.v[i]);                                            \
        return a;                                                              \
    }

PV_SOPS(pf4_, 4, float, pexp_f, ptanh_f)
PV_SOPS(pd2_, 2, double, pexp_d, ptanh_d)
#endif /* ATTN_PORT_VEXT */

/* 16-bit storage: W float16 / bfloat16 <-> W floats, lane by lane with
 * half.h's exact conversions (P: a float prefix, any lane layout);
 * PV_HALF1 makes one format's pair, named by F                          */
#define PV_HALF1(P, W_, A_, F)                                                 \
    static ATTN_INLINE A_ P##vt P##ld_##F(const uint16_t *p)                   \
    {                                                                          \
        float x[W_];                                                           \
        for (int i = 0; i < (W_); i++)                                         \
            x[i] = attn_##F##_to_f32(p[i]);                                    \
        return P##load(x);                                                     \
    }                                                                          \
    static ATTN_INLINE A_ void P##st_##F(uint16_t *p, P##vt a)                 \
    {                                                                          \
        float x[W_];                                                           \
        P##store(x, a);                                                        \
        for (int i = 0; i < (W_); i++)                                         \
            p[i] = attn_f32_to_##F(x[i]);                                      \
    }
#define PV_HALF(P, W_, A_) PV_HALF1(P, W_, A_, f16) PV_HALF1(P, W_, A_, bf16)

PV_HALF(pf4_, 4, )
#ifdef ATTN_PORT_HAVE_WIDE
PV_HALF(pf8_, 8, ATTN_PORT_WIDE_ATTR)
#endif

#endif /* ATTNPY_VEC_PORTABLE_H */

/* ---- the template parameters of one (variant, element type) ---- */
#undef ATTR
#undef PV_P_
#ifndef ATTN_PORT_WIDE
#define ATTN_PORT_WIDE 0
#endif
#if ATTN_PORT_WIDE && !defined(ATTN_PORT_HAVE_WIDE)
#error "vec_portable.h: the wide variant needs x86 and gcc or clang"
#endif
#if ATTN_PORT_WIDE
#define ATTR ATTN_PORT_WIDE_ATTR
#if ATTN_VEC_F64
#define PV_P_(op) pd4_##op
#define W 4
#define SFX(name) name##_portable8_f64
#else
#define PV_P_(op) pf8_##op
#define W 8
#define SFX(name) name##_portable8_f32
#endif
#else
#define ATTR
#if ATTN_VEC_F64
#define PV_P_(op) pd2_##op
#define W 2
#define SFX(name) name##_portable_f64
#else
#define PV_P_(op) pf4_##op
#define W 4
#define SFX(name) name##_portable_f32
#endif
#endif
#define T double
#if !ATTN_VEC_F64
#undef T
#define T float
#endif
#define VT PV_P_(vt)
#define VZERO() PV_P_(set1)(0)
#define VSET1(x) PV_P_(set1)(x)
#define VLOADU(p) PV_P_(load)(p)
#define VSTOREU(p, v) PV_P_(store)(p, v)
#if ATTN_PORT_VEXT
#define VFMA(a, b, c) PV_FMA(a, b, c)
#define VMUL(a, b) PV_MUL(a, b)
#define VADD(a, b) PV_ADD(a, b)
#define VSUB(a, b) PV_SUB(a, b)
#else
#define VFMA(a, b, c) PV_P_(fma)(a, b, c)
#define VMUL(a, b) PV_P_(mul)(a, b)
#define VADD(a, b) PV_P_(add)(a, b)
#define VSUB(a, b) PV_P_(sub)(a, b)
#endif
#define VMAX(a, b) PV_P_(max)(a, b)
#define VEXP(a) PV_P_(exp)(a)
#define VTANH(a) PV_P_(tanh)(a)
#define VSAFE(a) PV_P_(safe)(a)
#define VRSUM(a) PV_P_(rsum)(a)
#if !ATTN_VEC_F64
#define VLOAD_F16(p) PV_P_(ld_f16)(p)
#define VLOAD_BF16(p) PV_P_(ld_bf16)(p)
#define VSTORE_F16(p, v) PV_P_(st_f16)(p, v)
#define VSTORE_BF16(p, v) PV_P_(st_bf16)(p, v)
#endif
#undef ATTN_VEC_F64
#undef ATTN_PORT_WIDE
