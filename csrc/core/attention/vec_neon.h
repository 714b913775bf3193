/*
 * attention/vec_neon.h -- AArch64 Advanced SIMD (NEON): 4 floats / 2
 * doubles per 128-bit register, 32 registers, fused multiply-add.
 *
 * The vector primitives of the attention templates (tile.h, decode_tile.h,
 * and any later template written against the same parameters) for this
 * instruction set, and their template parameters for one element type.
 * Use (the selector is consumed, the parameters are #undef'd by the
 * template):
 *
 *     #define ATTN_VEC_F64 0            (0: float, 1: double)
 *     #include "attention/vec_neon.h"
 *     #include "attention/tile.h"
 *
 * Besides the parameters tile.h lists, VRSUM(v) is the sum of the lanes of
 * v, in a fixed order (pairwise: (v0 + v1) + (v2 + v3)).
 *
 * NEON is part of the AArch64 base ISA: no target attribute (ATTR is
 * empty) and no run-time check. VMAX is vmaxq (NaN if either lane is
 * NaN). The exp is the same algorithm and constants as the x86 paths
 * (exp.h), with the same fused operations, so it returns the same bits
 * as the AVX2 exp.
 */
#ifndef ATTNPY_VEC_NEON_H
#define ATTNPY_VEC_NEON_H

#include <arm_neon.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "attention/exp.h"
#include "runtime/platform.h"

#define ATTR

/* The steps exp and expm1 share (exp.h), on xc = max(CLAMP, x):
 * x = n ln2 + r; returns q1 = 1 + r q(r), so that exp(x) = 2^n (1 + r q1)
 * and expm1(x) = 2^n (r q1) + (2^n - 1); *r_ = r, *s_ = 2^n (0 for the
 * clamped n = -127 / -1023, whose exponent field is 0)                  */
static ATTN_INLINE float32x4_t expk4_f32(float32x4_t xc, float32x4_t *r_,
                                         float32x4_t *s_)
{
    const float32x4_t magic = vdupq_n_f32(AX_MAGIC_F);
    float32x4_t t = vfmaq_f32(magic, xc, vdupq_n_f32(AX_LOG2E_F));
    float32x4_t n = vsubq_f32(t, magic);
    float32x4_t r = vfmsq_f32(xc, n, vdupq_n_f32(AX_LN2HI_F));
    r = vfmsq_f32(r, n, vdupq_n_f32(AX_LN2LO_F));
    float32x4_t q = vdupq_n_f32(AX_Q6_F);
    q = vfmaq_f32(vdupq_n_f32(AX_Q5_F), q, r);
    q = vfmaq_f32(vdupq_n_f32(AX_Q4_F), q, r);
    q = vfmaq_f32(vdupq_n_f32(AX_Q3_F), q, r);
    q = vfmaq_f32(vdupq_n_f32(AX_Q2_F), q, r);
    /* 2^n from the low bits of t (t = MAGIC + n) */
    int32x4_t e = vshlq_n_s32(
        vaddq_s32(vreinterpretq_s32_f32(t), vdupq_n_s32(127)), 23);
    *r_ = r;
    *s_ = vreinterpretq_f32_s32(e);
    return vfmaq_f32(vdupq_n_f32(1.0f), q, r);
}

/* exp(x), x <= 0 (or NaN / -inf): 4 floats */
static ATTN_INLINE float32x4_t exp4_f32(float32x4_t x)
{
    /* vmaxq returns NaN when x is NaN: NaN propagates */
    float32x4_t xc = vmaxq_f32(vdupq_n_f32(AX_CLAMP_F), x);
    float32x4_t r, s;
    float32x4_t q = expk4_f32(xc, &r, &s);
    /* p(r) = 1 + r (1 + r q(r)) */
    float32x4_t y = vfmaq_f32(vdupq_n_f32(1.0f), q, r);
    y = vmulq_f32(y, s);
    /* x < ln(FLT_MIN) (incl. -inf): 0; NaN compares false and stays NaN */
    uint32x4_t under = vcltq_f32(x, vdupq_n_f32(AX_MINX_F));
    return vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(y), under));
}

/* tanh(x) = sign(x) * -m / (2 + m), m = expm1(-2|x|) in [-1, 0]: no
 * cancellation near 0 (m = r q1 there), +-1 for large |x|, NaN stays NaN */
static ATTN_INLINE float32x4_t tanh4_f32(float32x4_t x)
{
    float32x4_t a2 = vmulq_f32(vabsq_f32(x), vdupq_n_f32(-2.0f));
    float32x4_t xc = vmaxq_f32(vdupq_n_f32(AX_CLAMP_F), a2);
    float32x4_t r, s;
    float32x4_t q = expk4_f32(xc, &r, &s);
    float32x4_t m = vfmaq_f32(vsubq_f32(s, vdupq_n_f32(1.0f)), s,
                              vmulq_f32(q, r));
    float32x4_t th = vdivq_f32(vsubq_f32(vdupq_n_f32(0.0f), m),
                               vaddq_f32(vdupq_n_f32(2.0f), m));
    return vbslq_f32(vdupq_n_u32(0x80000000u), x, th);
}

static ATTN_INLINE float64x2_t expk2_f64(float64x2_t xc, float64x2_t *r_,
                                         float64x2_t *s_)
{
    const float64x2_t magic = vdupq_n_f64(AX_MAGIC_D);
    float64x2_t t = vfmaq_f64(magic, xc, vdupq_n_f64(AX_LOG2E_D));
    float64x2_t n = vsubq_f64(t, magic);
    float64x2_t r = vfmsq_f64(xc, n, vdupq_n_f64(AX_LN2HI_D));
    r = vfmsq_f64(r, n, vdupq_n_f64(AX_LN2LO_D));
    float64x2_t q = vdupq_n_f64(AX_Q11_D);
    q = vfmaq_f64(vdupq_n_f64(AX_Q10_D), q, r);
    q = vfmaq_f64(vdupq_n_f64(AX_Q9_D), q, r);
    q = vfmaq_f64(vdupq_n_f64(AX_Q8_D), q, r);
    q = vfmaq_f64(vdupq_n_f64(AX_Q7_D), q, r);
    q = vfmaq_f64(vdupq_n_f64(AX_Q6_D), q, r);
    q = vfmaq_f64(vdupq_n_f64(AX_Q5_D), q, r);
    q = vfmaq_f64(vdupq_n_f64(AX_Q4_D), q, r);
    q = vfmaq_f64(vdupq_n_f64(AX_Q3_D), q, r);
    q = vfmaq_f64(vdupq_n_f64(AX_Q2_D), q, r);
    int64x2_t e = vshlq_n_s64(
        vaddq_s64(vreinterpretq_s64_f64(t), vdupq_n_s64(1023)), 52);
    *r_ = r;
    *s_ = vreinterpretq_f64_s64(e);
    return vfmaq_f64(vdupq_n_f64(1.0), q, r);
}

/* exp(x), x <= 0: 2 doubles */
static ATTN_INLINE float64x2_t exp2_f64(float64x2_t x)
{
    float64x2_t xc = vmaxq_f64(vdupq_n_f64(AX_CLAMP_D), x);
    float64x2_t r, s;
    float64x2_t q = expk2_f64(xc, &r, &s);
    /* p(r) = 1 + r (1 + r q(r)) */
    float64x2_t y = vfmaq_f64(vdupq_n_f64(1.0), q, r);
    y = vmulq_f64(y, s);
    uint64x2_t under = vcltq_f64(x, vdupq_n_f64(AX_MINX_D));
    return vreinterpretq_f64_u64(vbicq_u64(vreinterpretq_u64_f64(y), under));
}

static ATTN_INLINE float64x2_t tanh2_f64(float64x2_t x)
{
    float64x2_t a2 = vmulq_f64(vabsq_f64(x), vdupq_n_f64(-2.0));
    float64x2_t xc = vmaxq_f64(vdupq_n_f64(AX_CLAMP_D), a2);
    float64x2_t r, s;
    float64x2_t q = expk2_f64(xc, &r, &s);
    float64x2_t m = vfmaq_f64(vsubq_f64(s, vdupq_n_f64(1.0)), s,
                              vmulq_f64(q, r));
    float64x2_t th = vdivq_f64(vsubq_f64(vdupq_n_f64(0.0), m),
                               vaddq_f64(vdupq_n_f64(2.0), m));
    return vbslq_f64(vdupq_n_u64(0x8000000000000000ull), x, th);
}

/* x == -inf ? 0 : x */
static ATTN_INLINE float32x4_t safe4_f32(float32x4_t m)
{
    uint32x4_t isninf = vceqq_f32(m, vdupq_n_f32(-INFINITY));
    return vreinterpretq_f32_u32(
        vbicq_u32(vreinterpretq_u32_f32(m), isninf));
}

static ATTN_INLINE float64x2_t safe2_f64(float64x2_t m)
{
    uint64x2_t isninf = vceqq_f64(m, vdupq_n_f64(-INFINITY));
    return vreinterpretq_f64_u64(
        vbicq_u64(vreinterpretq_u64_f64(m), isninf));
}

/* 16-bit storage (half.h's rules): 4 float16 / bfloat16 <-> 4 floats.
 * fcvtl / fcvtn convert float16 (fcvtn rounds by FPCR: nearest even, the
 * default every C program runs with); bfloat16 by integer shifts and
 * rounding, NaN kept quiet: the bits of half.h's conversions.          */
static ATTN_INLINE float32x4_t ld4_f16(const uint16_t *p)
{
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p)));
}

static ATTN_INLINE float32x4_t ld4_bf16(const uint16_t *p)
{
    return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16));
}

static ATTN_INLINE void st4_f16(uint16_t *p, float32x4_t v)
{
    vst1_u16(p, vreinterpret_u16_f16(vcvt_f16_f32(v)));
}

static ATTN_INLINE void st4_bf16(uint16_t *p, float32x4_t v)
{
    const uint32x4_t u = vreinterpretq_u32_f32(v);
    const uint32x4_t hi = vshrq_n_u32(u, 16);
    const uint32x4_t lsb = vandq_u32(hi, vdupq_n_u32(1));
    const uint32x4_t r = vshrq_n_u32(
        vaddq_u32(vaddq_u32(u, vdupq_n_u32(0x7fff)), lsb), 16);
    const uint32x4_t nan = vcgtq_u32(vandq_u32(u, vdupq_n_u32(0x7fffffff)),
                                     vdupq_n_u32(0x7f800000));
    const uint32x4_t qn = vorrq_u32(hi, vdupq_n_u32(0x40));
    vst1_u16(p, vmovn_u32(vbslq_u32(nan, qn, r)));
}

#endif /* ATTNPY_VEC_NEON_H */

/* ---- the template parameters of one element type ---- */
#if ATTN_VEC_F64
#define T double
#define VT float64x2_t
#define W 2
#define SFX(name) name##_neon_f64
#define VZERO() vdupq_n_f64(0.0)
#define VSET1(x) vdupq_n_f64(x)
#define VLOADU(p) vld1q_f64(p)
#define VSTOREU(p, v) vst1q_f64(p, v)
#define VFMA(a, b, c) vfmaq_f64(c, a, b)
#define VMUL(a, b) vmulq_f64(a, b)
#define VADD(a, b) vaddq_f64(a, b)
#define VSUB(a, b) vsubq_f64(a, b)
#define VMAX(a, b) vmaxq_f64(a, b)
#define VEXP(a) exp2_f64(a)
#define VTANH(a) tanh2_f64(a)
#define VSAFE(a) safe2_f64(a)
#define VRSUM(a) vaddvq_f64(a)
#else
#define T float
#define VT float32x4_t
#define W 4
#define SFX(name) name##_neon_f32
#define VZERO() vdupq_n_f32(0.0f)
#define VSET1(x) vdupq_n_f32(x)
#define VLOADU(p) vld1q_f32(p)
#define VSTOREU(p, v) vst1q_f32(p, v)
#define VFMA(a, b, c) vfmaq_f32(c, a, b)
#define VMUL(a, b) vmulq_f32(a, b)
#define VADD(a, b) vaddq_f32(a, b)
#define VSUB(a, b) vsubq_f32(a, b)
#define VMAX(a, b) vmaxq_f32(a, b)
#define VEXP(a) exp4_f32(a)
#define VTANH(a) tanh4_f32(a)
#define VSAFE(a) safe4_f32(a)
#define VRSUM(a) vaddvq_f32(a)
#define VLOAD_F16(p) ld4_f16(p)
#define VLOAD_BF16(p) ld4_bf16(p)
#define VSTORE_F16(p, v) st4_f16(p, v)
#define VSTORE_BF16(p, v) st4_bf16(p, v)
#endif
#undef ATTN_VEC_F64
