/*
 * attention/vec_portable.h -- plain C (any CPU).
 *
 * The vector primitives of the attention templates (tile.h, decode_tile.h)
 * as small structs of W lanes operated on by loops the compiler may
 * vectorise with whatever the baseline target offers (SSE2 on x86-64), and
 * their template parameters for one element type. Same exp as the SIMD
 * paths; only the rounding of a*b+c (no FMA) differs. Use (the selector is
 * consumed, the parameters are #undef'd by the template):
 *
 *     #define ATTN_VEC_F64 0            (0: float, 1: double)
 *     #include "attention/vec_portable.h"
 *     #include "attention/tile.h"
 *
 * Besides the parameters tile.h lists, VRSUM(v) is the sum of the lanes of
 * v, in a fixed order.
 */
#ifndef ATTNPY_VEC_PORTABLE_H
#define ATTNPY_VEC_PORTABLE_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "attention/exp.h"

#define ATTR

#define PW_F 4
#define PW_D 2

typedef struct { float v[PW_F]; } pvf;
typedef struct { double v[PW_D]; } pvd;

/* exp(x) for x <= 0: -inf and underflow -> 0, NaN -> NaN */
static inline float pexp_f(float x)
{
    if (!(x >= AX_MINX_F))
        return x != x ? x : 0.0f;
    float t = x * AX_LOG2E_F + AX_MAGIC_F;
    float n = t - AX_MAGIC_F;
    float r = x - n * AX_LN2HI_F;
    r = r - n * AX_LN2LO_F;
    float q = AX_Q6_F;
    q = q * r + AX_Q5_F;
    q = q * r + AX_Q4_F;
    q = q * r + AX_Q3_F;
    q = q * r + AX_Q2_F;
    q = q * r + 1.0f;
    float y = q * r + 1.0f;
    uint32_t bits = (uint32_t)((int32_t)n + 127) << 23;
    float s;
    memcpy(&s, &bits, sizeof s);
    return y * s;
}

static inline double pexp_d(double x)
{
    if (!(x >= AX_MINX_D))
        return x != x ? x : 0.0;
    double t = x * AX_LOG2E_D + AX_MAGIC_D;
    double n = t - AX_MAGIC_D;
    double r = x - n * AX_LN2HI_D;
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
    q = q * r + 1.0;
    double y = q * r + 1.0;
    uint64_t bits = (uint64_t)((int64_t)n + 1023) << 52;
    double s;
    memcpy(&s, &bits, sizeof s);
    return y * s;
}

#define PV_OPS(VT_, T_, W_, P)                                                 \
    static inline VT_ P##zero(void)                                           \
    {                                                                          \
        VT_ r;                                                                 \
        for (int i = 0; i < W_; i++)                                           \
            r.v[i] = 0;                                                        \
        return r;                                                              \
    }                                                                          \
    static inline VT_ P##set1(T_ x)                                           \
    {                                                                          \
        VT_ r;                                                                 \
        for (int i = 0; i < W_; i++)                                           \
            r.v[i] = x;                                                        \
        return r;                                                              \
    }                                                                          \
    static inline VT_ P##load(const T_ *p)                                    \
    {                                                                          \
        VT_ r;                                                                 \
        memcpy(r.v, p, sizeof r.v);                                            \
        return r;                                                              \
    }                                                                          \
    static inline void P##store(T_ *p, VT_ a) { memcpy(p, a.v, sizeof a.v); } \
    static inline VT_ P##fma(VT_ a, VT_ b, VT_ c)                             \
    {                                                                          \
        for (int i = 0; i < W_; i++)                                           \
            c.v[i] += a.v[i] * b.v[i];                                         \
        return c;                                                              \
    }                                                                          \
    static inline VT_ P##mul(VT_ a, VT_ b)                                    \
    {                                                                          \
        for (int i = 0; i < W_; i++)                                           \
            a.v[i] *= b.v[i];                                                  \
        return a;                                                              \
    }                                                                          \
    static inline VT_ P##add(VT_ a, VT_ b)                                    \
    {                                                                          \
        for (int i = 0; i < W_; i++)                                           \
            a.v[i] += b.v[i];                                                  \
        return a;                                                              \
    }                                                                          \
    static inline VT_ P##sub(VT_ a, VT_ b)                                    \
    {                                                                          \
        for (int i = 0; i < W_; i++)                                           \
            a.v[i] -= b.v[i];                                                  \
        return a;                                                              \
    }                                                                          \
    static inline VT_ P##max(VT_ a, VT_ b)                                    \
    {                                                                          \
        for (int i = 0; i < W_; i++)                                           \
            a.v[i] = b.v[i] > a.v[i] ? b.v[i] : a.v[i];                        \
        return a;                                                              \
    }                                                                          \
    static inline VT_ P##safe(VT_ a)                                          \
    {                                                                          \
        for (int i = 0; i < W_; i++)                                           \
            a.v[i] = a.v[i] == (T_)-INFINITY ? (T_)0 : a.v[i];                 \
        return a;                                                              \
    }                                                                          \
    static inline T_ P##rsum(VT_ a)                                           \
    {                                                                          \
        T_ s = a.v[0];                                                         \
        for (int i = 1; i < W_; i++)                                           \
            s += a.v[i];                                                       \
        return s;                                                              \
    }

PV_OPS(pvf, float, PW_F, pf_)
PV_OPS(pvd, double, PW_D, pd_)

static inline pvf pf_exp(pvf a)
{
    for (int i = 0; i < PW_F; i++)
        a.v[i] = pexp_f(a.v[i]);
    return a;
}

static inline pvd pd_exp(pvd a)
{
    for (int i = 0; i < PW_D; i++)
        a.v[i] = pexp_d(a.v[i]);
    return a;
}

#endif /* ATTNPY_VEC_PORTABLE_H */

/* ---- the template parameters of one element type ---- */
#if ATTN_VEC_F64
#define T double
#define VT pvd
#define W PW_D
#define SFX(name) name##_portable_f64
#define VZERO() pd_zero()
#define VSET1(x) pd_set1(x)
#define VLOADU(p) pd_load(p)
#define VSTOREU(p, v) pd_store(p, v)
#define VFMA(a, b, c) pd_fma(a, b, c)
#define VMUL(a, b) pd_mul(a, b)
#define VADD(a, b) pd_add(a, b)
#define VSUB(a, b) pd_sub(a, b)
#define VMAX(a, b) pd_max(a, b)
#define VEXP(a) pd_exp(a)
#define VSAFE(a) pd_safe(a)
#define VRSUM(a) pd_rsum(a)
#else
#define T float
#define VT pvf
#define W PW_F
#define SFX(name) name##_portable_f32
#define VZERO() pf_zero()
#define VSET1(x) pf_set1(x)
#define VLOADU(p) pf_load(p)
#define VSTOREU(p, v) pf_store(p, v)
#define VFMA(a, b, c) pf_fma(a, b, c)
#define VMUL(a, b) pf_mul(a, b)
#define VADD(a, b) pf_add(a, b)
#define VSUB(a, b) pf_sub(a, b)
#define VMAX(a, b) pf_max(a, b)
#define VEXP(a) pf_exp(a)
#define VSAFE(a) pf_safe(a)
#define VRSUM(a) pf_rsum(a)
#endif
#undef ATTN_VEC_F64
