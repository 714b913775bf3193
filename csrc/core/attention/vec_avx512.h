/*
 * attention/vec_avx512.h -- AVX-512F (16 floats / 8 doubles).
 *
 * The vector primitives of the attention templates (tile.h, decode_tile.h)
 * for this instruction set, and their template parameters for one element
 * type. Use (the selector is consumed, the parameters are #undef'd by the
 * template):
 *
 *     #define ATTN_VEC_F64 0            (0: float, 1: double)
 *     #include "attention/vec_avx512.h"
 *     #include "attention/tile.h"
 *
 * Besides the parameters tile.h lists, VRSUM(v) is the sum of the lanes of
 * v, in a fixed order.
 */
#ifndef ATTNPY_VEC_AVX512_H
#define ATTNPY_VEC_AVX512_H

#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "attention/exp.h"
#include "runtime/platform.h"

#define ATTR ATTN_TARGET("avx512f,avx2,fma")

/* The steps exp and expm1 share (exp.h), on xc = max(MINX, x) (or NaN):
 * x = n ln2 + r; returns q1 = 1 + r q(r), so that exp(x) = 2^n (1 + r q1)
 * and expm1(x) = 2^n (r q1) + (2^n - 1); *r_ = r, *n_ = n              */
static ATTN_INLINE ATTR __m512 expk16_f32(__m512 xc, __m512 *r_, __m512 *n_)
{
    const __m512 magic = _mm512_set1_ps(AX_MAGIC_F);
    __m512 t = _mm512_fmadd_ps(xc, _mm512_set1_ps(AX_LOG2E_F), magic);
    __m512 n = _mm512_sub_ps(t, magic);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(AX_LN2HI_F), xc);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(AX_LN2LO_F), r);
    __m512 q = _mm512_set1_ps(AX_Q6_F);
    q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(AX_Q5_F));
    q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(AX_Q4_F));
    q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(AX_Q3_F));
    q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(AX_Q2_F));
    *r_ = r;
    *n_ = n;
    return _mm512_fmadd_ps(q, r, _mm512_set1_ps(1.0f));
}

static ATTN_INLINE ATTR __m512 exp16_f32(__m512 x)
{
    /* max(c, x) returns x when x is NaN: NaN propagates. Results below
     * FLT_MIN are set to 0 by the mask, never computed: an underflowing
     * vscalefps would take a slow microcode assist for every masked -inf */
    __m512 xc = _mm512_max_ps(_mm512_set1_ps(AX_MINX_F), x);
    __mmask16 keep = _mm512_cmp_ps_mask(x, _mm512_set1_ps(AX_MINX_F),
                                        _CMP_NLT_UQ); /* x >= min or NaN */
    __m512 r, n;
    __m512 q = expk16_f32(xc, &r, &n);
    /* p(r) = 1 + r (1 + r q(r)) */
    __m512 y = _mm512_fmadd_ps(q, r, _mm512_set1_ps(1.0f));
    return _mm512_maskz_scalef_ps(keep, y, n);
}

/* tanh(x) = sign(x) * -m / (2 + m), m = expm1(-2|x|) in [-1, 0]: no
 * cancellation near 0 (m = r q1 there), +-1 for large |x| (2^n >= FLT_MIN
 * after the clamp: no subnormal), NaN stays NaN                         */
static ATTN_INLINE ATTR __m512 tanh16_f32(__m512 x)
{
    const __m512i sgn = _mm512_set1_epi32((int)0x80000000u);
    __m512 a2 = _mm512_mul_ps(_mm512_abs_ps(x), _mm512_set1_ps(-2.0f));
    __m512 xc = _mm512_max_ps(_mm512_set1_ps(AX_MINX_F), a2);
    __m512 r, n;
    __m512 q = expk16_f32(xc, &r, &n);
    __m512 s = _mm512_scalef_ps(_mm512_set1_ps(1.0f), n);
    __m512 m = _mm512_fmadd_ps(s, _mm512_mul_ps(q, r),
                               _mm512_sub_ps(s, _mm512_set1_ps(1.0f)));
    __m512 th = _mm512_div_ps(_mm512_sub_ps(_mm512_setzero_ps(), m),
                              _mm512_add_ps(_mm512_set1_ps(2.0f), m));
    return _mm512_castsi512_ps(_mm512_or_si512(
        _mm512_castps_si512(th),
        _mm512_and_si512(sgn, _mm512_castps_si512(x))));
}

static ATTN_INLINE ATTR __m512d expk8_f64(__m512d xc, __m512d *r_,
                                          __m512d *n_)
{
    const __m512d magic = _mm512_set1_pd(AX_MAGIC_D);
    __m512d t = _mm512_fmadd_pd(xc, _mm512_set1_pd(AX_LOG2E_D), magic);
    __m512d n = _mm512_sub_pd(t, magic);
    __m512d r = _mm512_fnmadd_pd(n, _mm512_set1_pd(AX_LN2HI_D), xc);
    r = _mm512_fnmadd_pd(n, _mm512_set1_pd(AX_LN2LO_D), r);
    __m512d q = _mm512_set1_pd(AX_Q11_D);
    q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(AX_Q10_D));
    q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(AX_Q9_D));
    q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(AX_Q8_D));
    q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(AX_Q7_D));
    q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(AX_Q6_D));
    q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(AX_Q5_D));
    q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(AX_Q4_D));
    q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(AX_Q3_D));
    q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(AX_Q2_D));
    *r_ = r;
    *n_ = n;
    return _mm512_fmadd_pd(q, r, _mm512_set1_pd(1.0));
}

static ATTN_INLINE ATTR __m512d exp8_f64(__m512d x)
{
    __m512d xc = _mm512_max_pd(_mm512_set1_pd(AX_MINX_D), x);
    __mmask8 keep = _mm512_cmp_pd_mask(x, _mm512_set1_pd(AX_MINX_D),
                                       _CMP_NLT_UQ);
    __m512d r, n;
    __m512d q = expk8_f64(xc, &r, &n);
    /* p(r) = 1 + r (1 + r q(r)) */
    __m512d y = _mm512_fmadd_pd(q, r, _mm512_set1_pd(1.0));
    return _mm512_maskz_scalef_pd(keep, y, n);
}

static ATTN_INLINE ATTR __m512d tanh8_f64(__m512d x)
{
    const __m512i sgn = _mm512_set1_epi64((long long)0x8000000000000000ull);
    __m512d a2 = _mm512_mul_pd(_mm512_abs_pd(x), _mm512_set1_pd(-2.0));
    __m512d xc = _mm512_max_pd(_mm512_set1_pd(AX_MINX_D), a2);
    __m512d r, n;
    __m512d q = expk8_f64(xc, &r, &n);
    __m512d s = _mm512_scalef_pd(_mm512_set1_pd(1.0), n);
    __m512d m = _mm512_fmadd_pd(s, _mm512_mul_pd(q, r),
                                _mm512_sub_pd(s, _mm512_set1_pd(1.0)));
    __m512d th = _mm512_div_pd(_mm512_sub_pd(_mm512_setzero_pd(), m),
                               _mm512_add_pd(_mm512_set1_pd(2.0), m));
    return _mm512_castsi512_pd(_mm512_or_si512(
        _mm512_castpd_si512(th),
        _mm512_and_si512(sgn, _mm512_castpd_si512(x))));
}

static ATTN_INLINE ATTR __m512 safe16_f32(__m512 m)
{
    __mmask16 k = _mm512_cmp_ps_mask(m, _mm512_set1_ps(-INFINITY),
                                     _CMP_EQ_OQ);
    return _mm512_mask_mov_ps(m, k, _mm512_setzero_ps());
}

static ATTN_INLINE ATTR __m512d safe8_f64(__m512d m)
{
    __mmask8 k = _mm512_cmp_pd_mask(m, _mm512_set1_pd(-INFINITY),
                                    _CMP_EQ_OQ);
    return _mm512_mask_mov_pd(m, k, _mm512_setzero_pd());
}


/* r[i] = row i of a W x W block -> r[c] = column c (VTRANS)              */
static ATTN_INLINE ATTR void transpose16_f32(__m512 *r)
{
    __m512 t[16], u[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    /* u[4i + m], 128-bit lane k: column 4k + m of rows 4i .. 4i + 3 */
    for (int i = 0; i < 4; i++)
        for (int h = 0; h < 2; h++) {
            const __m512d a = _mm512_castps_pd(t[4 * i + h]);
            const __m512d b = _mm512_castps_pd(t[4 * i + 2 + h]);
            u[4 * i + 2 * h] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
            u[4 * i + 2 * h + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
        }
    for (int m = 0; m < 4; m++) {
        const __m512 v0 = _mm512_shuffle_f32x4(u[m], u[4 + m], 0x88);
        const __m512 v1 = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0x88);
        const __m512 w0 = _mm512_shuffle_f32x4(u[m], u[4 + m], 0xdd);
        const __m512 w1 = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0xdd);
        r[m] = _mm512_shuffle_f32x4(v0, v1, 0x88);
        r[8 + m] = _mm512_shuffle_f32x4(v0, v1, 0xdd);
        r[4 + m] = _mm512_shuffle_f32x4(w0, w1, 0x88);
        r[12 + m] = _mm512_shuffle_f32x4(w0, w1, 0xdd);
    }
}

static ATTN_INLINE ATTR void transpose8_f64(__m512d *r)
{
    __m512d t[8];
    /* t[2i + m], 128-bit lane k: column 2k + m of rows 2i, 2i + 1 */
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm512_unpacklo_pd(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_pd(r[2 * i], r[2 * i + 1]);
    }
    for (int m = 0; m < 2; m++) {
        const __m512d v0 = _mm512_shuffle_f64x2(t[m], t[2 + m], 0x88);
        const __m512d v1 = _mm512_shuffle_f64x2(t[4 + m], t[6 + m], 0x88);
        const __m512d w0 = _mm512_shuffle_f64x2(t[m], t[2 + m], 0xdd);
        const __m512d w1 = _mm512_shuffle_f64x2(t[4 + m], t[6 + m], 0xdd);
        r[m] = _mm512_shuffle_f64x2(v0, v1, 0x88);
        r[4 + m] = _mm512_shuffle_f64x2(v0, v1, 0xdd);
        r[2 + m] = _mm512_shuffle_f64x2(w0, w1, 0x88);
        r[6 + m] = _mm512_shuffle_f64x2(w0, w1, 0xdd);
    }
}

/* 16-bit storage (half.h's rules): 16 float16 / bfloat16 <-> 16 floats,
 * AVX-512F only (vcvtph2ps / vcvtps2ph zmm; bfloat16 by integer shifts
 * and rounding, NaN kept quiet): the bits of half.h's conversions.     */
static ATTN_INLINE ATTR __m512 ld16_f16(const uint16_t *p)
{
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
}

static ATTN_INLINE ATTR __m512 ld16_bf16(const uint16_t *p)
{
    const __m512i u = _mm512_cvtepu16_epi32(
        _mm256_loadu_si256((const __m256i *)p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(u, 16));
}

static ATTN_INLINE ATTR void st16_f16(uint16_t *p, __m512 v)
{
    _mm256_storeu_si256((__m256i *)p,
                        _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT
                                               | _MM_FROUND_NO_EXC));
}

static ATTN_INLINE ATTR void st16_bf16(uint16_t *p, __m512 v)
{
    const __m512i u = _mm512_castps_si512(v);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16),
                                         _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(
        _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb),
        16);
    const __mmask16 nan = _mm512_cmpgt_epi32_mask(
        _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
        _mm512_set1_epi32(0x7f800000));
    r = _mm512_mask_or_epi32(r, nan, _mm512_srli_epi32(u, 16),
                             _mm512_set1_epi32(0x40));
    _mm256_storeu_si256((__m256i *)p, _mm512_cvtepi32_epi16(r));
}

#endif /* ATTNPY_VEC_AVX512_H */

/* ---- the template parameters of one element type ---- */
#if ATTN_VEC_F64
#define T double
#define VT __m512d
#define W 8
#define SFX(name) name##_avx512_f64
#define VZERO() _mm512_setzero_pd()
#define VSET1(x) _mm512_set1_pd(x)
#define VLOADU(p) _mm512_loadu_pd(p)
#define VSTOREU(p, v) _mm512_storeu_pd(p, v)
#define VFMA(a, b, c) _mm512_fmadd_pd(a, b, c)
#define VMUL(a, b) _mm512_mul_pd(a, b)
#define VADD(a, b) _mm512_add_pd(a, b)
#define VSUB(a, b) _mm512_sub_pd(a, b)
#define VMAX(a, b) _mm512_max_pd(a, b)
#define VEXP(a) exp8_f64(a)
#define VTANH(a) tanh8_f64(a)
#define VSAFE(a) safe8_f64(a)
#define VRSUM(a) _mm512_reduce_add_pd(a)
#define VTRANS(r) transpose8_f64(r)
#else
#define T float
#define VT __m512
#define W 16
#define SFX(name) name##_avx512_f32
#define VZERO() _mm512_setzero_ps()
#define VSET1(x) _mm512_set1_ps(x)
#define VLOADU(p) _mm512_loadu_ps(p)
#define VSTOREU(p, v) _mm512_storeu_ps(p, v)
#define VFMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define VMUL(a, b) _mm512_mul_ps(a, b)
#define VADD(a, b) _mm512_add_ps(a, b)
#define VSUB(a, b) _mm512_sub_ps(a, b)
#define VMAX(a, b) _mm512_max_ps(a, b)
#define VEXP(a) exp16_f32(a)
#define VTANH(a) tanh16_f32(a)
#define VSAFE(a) safe16_f32(a)
#define VRSUM(a) _mm512_reduce_add_ps(a)
#define VTRANS(r) transpose16_f32(r)
#define VLOAD_F16(p) ld16_f16(p)
#define VLOAD_BF16(p) ld16_bf16(p)
#define VSTORE_F16(p, v) st16_f16(p, v)
#define VSTORE_BF16(p, v) st16_bf16(p, v)
#endif
#undef ATTN_VEC_F64
