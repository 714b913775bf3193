/*
 * attention/vec_avx2.h -- AVX2 + FMA (8 floats / 4 doubles).
 *
 * The vector primitives of the attention templates (tile.h, decode_tile.h)
 * for this instruction set, and their template parameters for one element
 * type. Use (the selector is consumed, the parameters are #undef'd by the
 * template):
 *
 *     #define ATTN_VEC_F64 0            (0: float, 1: double)
 *     #include "attention/vec_avx2.h"
 *     #include "attention/tile.h"
 *
 * Besides the parameters tile.h lists, VRSUM(v) is the sum of the lanes of
 * v, in a fixed order.
 */
#ifndef ATTNPY_VEC_AVX2_H
#define ATTNPY_VEC_AVX2_H

#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "attention/exp.h"
#include "runtime/platform.h"

/* f16c: vcvtph2ps / vcvtps2ph (every AVX2 CPU has it; cpuid.c requires
 * it for this path)                                                    */
#define ATTR ATTN_TARGET("avx2,fma,f16c")

/* The steps exp and expm1 share (exp.h), on xc = max(CLAMP, x):
 * x = n ln2 + r; returns q1 = 1 + r q(r), so that exp(x) = 2^n (1 + r q1)
 * and expm1(x) = 2^n (r q1) + (2^n - 1); *r_ = r, *s_ = 2^n (0 for the
 * clamped n = -127 / -1023, whose exponent field is 0)                  */
static ATTN_INLINE ATTR __m256 expk8_f32(__m256 xc, __m256 *r_, __m256 *s_)
{
    const __m256 magic = _mm256_set1_ps(AX_MAGIC_F);
    __m256 t = _mm256_fmadd_ps(xc, _mm256_set1_ps(AX_LOG2E_F), magic);
    __m256 n = _mm256_sub_ps(t, magic);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(AX_LN2HI_F), xc);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(AX_LN2LO_F), r);
    __m256 q = _mm256_set1_ps(AX_Q6_F);
    q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(AX_Q5_F));
    q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(AX_Q4_F));
    q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(AX_Q3_F));
    q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(AX_Q2_F));
    /* 2^n from the low bits of t (t = MAGIC + n) */
    __m256i e = _mm256_slli_epi32(
        _mm256_add_epi32(_mm256_castps_si256(t), _mm256_set1_epi32(127)), 23);
    *r_ = r;
    *s_ = _mm256_castsi256_ps(e);
    return _mm256_fmadd_ps(q, r, _mm256_set1_ps(1.0f));
}

/* exp(x), x <= 0 (or NaN / -inf): 8 floats */
static ATTN_INLINE ATTR __m256 exp8_f32(__m256 x)
{
    /* max(c, x) returns x when x is NaN: NaN propagates */
    __m256 xc = _mm256_max_ps(_mm256_set1_ps(AX_CLAMP_F), x);
    __m256 r, s;
    __m256 q = expk8_f32(xc, &r, &s);
    /* p(r) = 1 + r (1 + r q(r)) */
    __m256 y = _mm256_fmadd_ps(q, r, _mm256_set1_ps(1.0f));
    y = _mm256_mul_ps(y, s);
    /* x < ln(FLT_MIN) (incl. -inf): 0; NaN compares false and stays NaN */
    __m256 under = _mm256_cmp_ps(x, _mm256_set1_ps(AX_MINX_F), _CMP_LT_OQ);
    return _mm256_andnot_ps(under, y);
}

/* tanh(x) = sign(x) * -m / (2 + m), m = expm1(-2|x|) in [-1, 0]: no
 * cancellation near 0 (m = r q1 there), +-1 for large |x|, NaN stays NaN */
static ATTN_INLINE ATTR __m256 tanh8_f32(__m256 x)
{
    const __m256 sgn = _mm256_set1_ps(-0.0f);
    __m256 a2 = _mm256_mul_ps(_mm256_andnot_ps(sgn, x), _mm256_set1_ps(-2.0f));
    __m256 xc = _mm256_max_ps(_mm256_set1_ps(AX_CLAMP_F), a2);
    __m256 r, s;
    __m256 q = expk8_f32(xc, &r, &s);
    __m256 m = _mm256_fmadd_ps(s, _mm256_mul_ps(q, r),
                               _mm256_sub_ps(s, _mm256_set1_ps(1.0f)));
    __m256 th = _mm256_div_ps(_mm256_sub_ps(_mm256_setzero_ps(), m),
                              _mm256_add_ps(_mm256_set1_ps(2.0f), m));
    return _mm256_or_ps(th, _mm256_and_ps(sgn, x));
}

static ATTN_INLINE ATTR __m256d expk4_f64(__m256d xc, __m256d *r_,
                                          __m256d *s_)
{
    const __m256d magic = _mm256_set1_pd(AX_MAGIC_D);
    __m256d t = _mm256_fmadd_pd(xc, _mm256_set1_pd(AX_LOG2E_D), magic);
    __m256d n = _mm256_sub_pd(t, magic);
    __m256d r = _mm256_fnmadd_pd(n, _mm256_set1_pd(AX_LN2HI_D), xc);
    r = _mm256_fnmadd_pd(n, _mm256_set1_pd(AX_LN2LO_D), r);
    __m256d q = _mm256_set1_pd(AX_Q11_D);
    q = _mm256_fmadd_pd(q, r, _mm256_set1_pd(AX_Q10_D));
    q = _mm256_fmadd_pd(q, r, _mm256_set1_pd(AX_Q9_D));
    q = _mm256_fmadd_pd(q, r, _mm256_set1_pd(AX_Q8_D));
    q = _mm256_fmadd_pd(q, r, _mm256_set1_pd(AX_Q7_D));
    q = _mm256_fmadd_pd(q, r, _mm256_set1_pd(AX_Q6_D));
    q = _mm256_fmadd_pd(q, r, _mm256_set1_pd(AX_Q5_D));
    q = _mm256_fmadd_pd(q, r, _mm256_set1_pd(AX_Q4_D));
    q = _mm256_fmadd_pd(q, r, _mm256_set1_pd(AX_Q3_D));
    q = _mm256_fmadd_pd(q, r, _mm256_set1_pd(AX_Q2_D));
    __m256i e = _mm256_slli_epi64(
        _mm256_add_epi64(_mm256_castpd_si256(t), _mm256_set1_epi64x(1023)),
        52);
    *r_ = r;
    *s_ = _mm256_castsi256_pd(e);
    return _mm256_fmadd_pd(q, r, _mm256_set1_pd(1.0));
}

/* exp(x), x <= 0: 4 doubles */
static ATTN_INLINE ATTR __m256d exp4_f64(__m256d x)
{
    __m256d xc = _mm256_max_pd(_mm256_set1_pd(AX_CLAMP_D), x);
    __m256d r, s;
    __m256d q = expk4_f64(xc, &r, &s);
    /* p(r) = 1 + r (1 + r q(r)) */
    __m256d y = _mm256_fmadd_pd(q, r, _mm256_set1_pd(1.0));
    y = _mm256_mul_pd(y, s);
    __m256d under = _mm256_cmp_pd(x, _mm256_set1_pd(AX_MINX_D), _CMP_LT_OQ);
    return _mm256_andnot_pd(under, y);
}

static ATTN_INLINE ATTR __m256d tanh4_f64(__m256d x)
{
    const __m256d sgn = _mm256_set1_pd(-0.0);
    __m256d a2 = _mm256_mul_pd(_mm256_andnot_pd(sgn, x), _mm256_set1_pd(-2.0));
    __m256d xc = _mm256_max_pd(_mm256_set1_pd(AX_CLAMP_D), a2);
    __m256d r, s;
    __m256d q = expk4_f64(xc, &r, &s);
    __m256d m = _mm256_fmadd_pd(s, _mm256_mul_pd(q, r),
                                _mm256_sub_pd(s, _mm256_set1_pd(1.0)));
    __m256d th = _mm256_div_pd(_mm256_sub_pd(_mm256_setzero_pd(), m),
                               _mm256_add_pd(_mm256_set1_pd(2.0), m));
    return _mm256_or_pd(th, _mm256_and_pd(sgn, x));
}

static ATTN_INLINE ATTR __m256 safe8_f32(__m256 m)
{
    __m256 isninf = _mm256_cmp_ps(m, _mm256_set1_ps(-INFINITY), _CMP_EQ_OQ);
    return _mm256_andnot_ps(isninf, m);
}

static ATTN_INLINE ATTR __m256d safe4_f64(__m256d m)
{
    __m256d isninf = _mm256_cmp_pd(m, _mm256_set1_pd(-INFINITY), _CMP_EQ_OQ);
    return _mm256_andnot_pd(isninf, m);
}

/* the sum of the lanes, in a fixed order */
static ATTN_INLINE ATTR float hsum8_f32(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v),
                          _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static ATTN_INLINE ATTR double hsum4_f64(__m256d v)
{
    __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v),
                           _mm256_extractf128_pd(v, 1));
    s = _mm_add_sd(s, _mm_unpackhi_pd(s, s));
    return _mm_cvtsd_f64(s);
}


/* r[i] = row i of a W x W block -> r[c] = column c (VTRANS)              */
static ATTN_INLINE ATTR void transpose8_f32(__m256 *r)
{
    __m256 t[8], u[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    /* u[4i + m], 128-bit lane k: column 4k + m of rows 4i .. 4i + 3 */
    for (int i = 0; i < 2; i++)
        for (int h = 0; h < 2; h++) {
            const __m256d a = _mm256_castps_pd(t[4 * i + h]);
            const __m256d b = _mm256_castps_pd(t[4 * i + 2 + h]);
            u[4 * i + 2 * h] = _mm256_castpd_ps(_mm256_unpacklo_pd(a, b));
            u[4 * i + 2 * h + 1] = _mm256_castpd_ps(_mm256_unpackhi_pd(a, b));
        }
    for (int m = 0; m < 4; m++) {
        r[m] = _mm256_permute2f128_ps(u[m], u[4 + m], 0x20);
        r[4 + m] = _mm256_permute2f128_ps(u[m], u[4 + m], 0x31);
    }
}

static ATTN_INLINE ATTR void transpose4_f64(__m256d *r)
{
    __m256d t[4];
    /* t[2i + m], 128-bit lane k: column 2k + m of rows 2i, 2i + 1 */
    for (int i = 0; i < 2; i++) {
        t[2 * i] = _mm256_unpacklo_pd(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_pd(r[2 * i], r[2 * i + 1]);
    }
    for (int m = 0; m < 2; m++) {
        r[m] = _mm256_permute2f128_pd(t[m], t[2 + m], 0x20);
        r[2 + m] = _mm256_permute2f128_pd(t[m], t[2 + m], 0x31);
    }
}

/* 16-bit storage (half.h's rules): 8 float16 / bfloat16 <-> 8 floats.
 * Reading is exact; writing rounds to nearest even (vcvtps2ph with
 * rounding mode 0; bfloat16 by integer rounding, NaN kept quiet), the
 * bits of attn_f32_to_f16 / attn_f32_to_bf16.                          */
static ATTN_INLINE ATTR __m256 ld8_f16(const uint16_t *p)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

static ATTN_INLINE ATTR __m256 ld8_bf16(const uint16_t *p)
{
    const __m256i u = _mm256_cvtepu16_epi32(
        _mm_loadu_si128((const __m128i *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(u, 16));
}

static ATTN_INLINE ATTR void st8_f16(uint16_t *p, __m256 v)
{
    _mm_storeu_si128((__m128i *)p,
                     _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}

/* float bits -> bfloat16 bits in the low half of each 32-bit lane */
static ATTN_INLINE ATTR __m256i bf16r8(__m256 v)
{
    const __m256i u = _mm256_castps_si256(v);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16),
                                         _mm256_set1_epi32(1));
    const __m256i r = _mm256_srli_epi32(
        _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb),
        16);
    const __m256i nan = _mm256_cmpgt_epi32(
        _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)),
        _mm256_set1_epi32(0x7f800000));
    const __m256i qn = _mm256_or_si256(_mm256_srli_epi32(u, 16),
                                       _mm256_set1_epi32(0x40));
    return _mm256_blendv_epi8(r, qn, nan);
}

static ATTN_INLINE ATTR void st8_bf16(uint16_t *p, __m256 v)
{
    const __m256i r = bf16r8(v);
    _mm_storeu_si128((__m128i *)p,
                     _mm_packus_epi32(_mm256_castsi256_si128(r),
                                      _mm256_extracti128_si256(r, 1)));
}

#endif /* ATTNPY_VEC_AVX2_H */

/* ---- the template parameters of one element type ---- */
#if ATTN_VEC_F64
#define T double
#define VT __m256d
#define W 4
#define SFX(name) name##_avx2_f64
#define VZERO() _mm256_setzero_pd()
#define VSET1(x) _mm256_set1_pd(x)
#define VLOADU(p) _mm256_loadu_pd(p)
#define VSTOREU(p, v) _mm256_storeu_pd(p, v)
#define VFMA(a, b, c) _mm256_fmadd_pd(a, b, c)
#define VMUL(a, b) _mm256_mul_pd(a, b)
#define VADD(a, b) _mm256_add_pd(a, b)
#define VSUB(a, b) _mm256_sub_pd(a, b)
#define VMAX(a, b) _mm256_max_pd(a, b)
#define VEXP(a) exp4_f64(a)
#define VTANH(a) tanh4_f64(a)
#define VSAFE(a) safe4_f64(a)
#define VRSUM(a) hsum4_f64(a)
#define VTRANS(r) transpose4_f64(r)
#else
#define T float
#define VT __m256
#define W 8
#define SFX(name) name##_avx2_f32
#define VZERO() _mm256_setzero_ps()
#define VSET1(x) _mm256_set1_ps(x)
#define VLOADU(p) _mm256_loadu_ps(p)
#define VSTOREU(p, v) _mm256_storeu_ps(p, v)
#define VFMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define VMUL(a, b) _mm256_mul_ps(a, b)
#define VADD(a, b) _mm256_add_ps(a, b)
#define VSUB(a, b) _mm256_sub_ps(a, b)
#define VMAX(a, b) _mm256_max_ps(a, b)
#define VEXP(a) exp8_f32(a)
#define VTANH(a) tanh8_f32(a)
#define VSAFE(a) safe8_f32(a)
#define VRSUM(a) hsum8_f32(a)
#define VTRANS(r) transpose8_f32(r)
#define VLOAD_F16(p) ld8_f16(p)
#define VLOAD_BF16(p) ld8_bf16(p)
#define VSTORE_F16(p, v) st8_f16(p, v)
#define VSTORE_BF16(p, v) st8_bf16(p, v)
#endif
#undef ATTN_VEC_F64
