/*
 * simd/vec_avx2.h -- the SIMD primitives for AVX2 + FMA (8 floats / 4
 * doubles), and the template parameters of one element type.
 *
 *     #define SIMD_F64 0                 (0: float, 1: double)
 *     #include "simd/vec_avx2.h"
 *     #include "simd/math.h"             (VEXP, VTANH, ...: written once)
 *     #include "attention/tile.h"        (or any template over them)
 *
 * The primitives and their exact semantics are listed in simd/math.h;
 * every one is the IEEE operation the portable path (simd/vec_portable.h)
 * performs, so a template gives the same bits here and there. F16C's
 * vcvtph2ps / vcvtps2ph come with every AVX2 CPU (runtime/cpuid.c
 * requires them for this set).
 */
#ifndef ATTNPY_SIMD_VEC_AVX2_H
#define ATTNPY_SIMD_VEC_AVX2_H

#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "runtime/platform.h"

#define ATTN_AVX2_ATTR ATTN_TARGET("avx2,fma,f16c")
#define A_ static ATTN_INLINE ATTN_AVX2_ATTR

/* pow2t, abs, orsign and getmant (|a| with the exponent field set to
 * the bias) of one element type: x the helpers' letter (f, d), V its
 * vector, S the intrinsics' suffix (ps, pd), I the integer lanes' (epi32,
 * epi64), SET1I their broadcast, the exponent bias and fraction bits    */
#define AVX2_BITS(x, V, S, I, SET1I, BIAS, MBITS)                              \
    A_ V avx2##x##_pow2t(V t)                                                  \
    {                                                                          \
        return _mm256_castsi256_##S(_mm256_slli_##I(                           \
            _mm256_add_##I(_mm256_cast##S##_si256(t), SET1I(BIAS)), MBITS));   \
    }                                                                          \
    A_ V avx2##x##_abs(V a)                                                    \
    {                                                                          \
        return _mm256_andnot_##S(_mm256_set1_##S(-0.0), a);                    \
    }                                                                          \
    A_ V avx2##x##_orsign(V a, V s)                                            \
    {                                                                          \
        return _mm256_or_##S(a, _mm256_and_##S(_mm256_set1_##S(-0.0), s));     \
    }                                                                          \
    A_ V avx2##x##_getmant(V a)                                                \
    {                                                                          \
        return _mm256_castsi256_##S(_mm256_or_si256(                           \
            _mm256_and_si256(_mm256_cast##S##_si256(a),                        \
                             SET1I((1ll << MBITS) - 1)),                       \
            SET1I((long long)BIAS << MBITS)));                                 \
    }
AVX2_BITS(f, __m256, ps, epi32, _mm256_set1_epi32, 127, 23)
AVX2_BITS(d, __m256d, pd, epi64, _mm256_set1_epi64x, 1023, 52)
#undef AVX2_BITS

/* the lanes i < k (0 <= k <= W): a mask, and masked loads (the others
 * 0, their memory never touched) and stores (vmaskmov)                 */
A_ __m256 avx2f_maskn(size_t k)
{
    return _mm256_castsi256_ps(_mm256_cmpgt_epi32(
        _mm256_set1_epi32((int)k), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
}
A_ __m256d avx2d_maskn(size_t k)
{
    return _mm256_castsi256_pd(_mm256_cmpgt_epi64(
        _mm256_set1_epi64x((long long)k), _mm256_setr_epi64x(0, 1, 2, 3)));
}
A_ __m256 avx2f_loadn(const float *p, size_t k)
{
    return _mm256_maskload_ps(p, _mm256_castps_si256(avx2f_maskn(k)));
}
A_ __m256d avx2d_loadn(const double *p, size_t k)
{
    return _mm256_maskload_pd(p, _mm256_castpd_si256(avx2d_maskn(k)));
}
A_ void avx2f_storen(float *p, size_t k, __m256 v)
{
    _mm256_maskstore_ps(p, _mm256_castps_si256(avx2f_maskn(k)), v);
}
A_ void avx2d_storen(double *p, size_t k, __m256d v)
{
    _mm256_maskstore_pd(p, _mm256_castpd_si256(avx2d_maskn(k)), v);
}

/* float: 8 lanes */
/* the exponent field less the bias                                     */
A_ __m256 avx2f_getexp(__m256 a)
{
    const __m256i e = _mm256_and_si256(
        _mm256_srli_epi32(_mm256_castps_si256(a), 23), _mm256_set1_epi32(0xff));
    return _mm256_sub_ps(_mm256_cvtepi32_ps(e), _mm256_set1_ps(127.0f));
}
/* the lanes' sum, in a fixed order (tested against 0 only)              */
A_ float avx2f_rsum(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v),
                          _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* double: 4 lanes */
/* the field put under 2^52's bits is 2^52 + e, exactly (no AVX2
 * conversion from 64-bit integers)                                      */
A_ __m256d avx2d_getexp(__m256d a)
{
    const __m256i e = _mm256_and_si256(
        _mm256_srli_epi64(_mm256_castpd_si256(a), 52), _mm256_set1_epi64x(0x7ff));
    const __m256d two52 = _mm256_set1_pd(4503599627370496.0);
    return _mm256_sub_pd(
        _mm256_castsi256_pd(_mm256_or_si256(e, _mm256_castpd_si256(two52))),
        _mm256_set1_pd(4503599627370496.0 + 1023.0));
}
A_ double avx2d_rsum(__m256d v)
{
    __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v),
                           _mm256_extractf128_pd(v, 1));
    s = _mm_add_sd(s, _mm_unpackhi_pd(s, s));
    return _mm_cvtsd_f64(s);
}

/* r[i] = row i of a W x W block -> r[c] = column c (VTRANS)              */
A_ void avx2f_trans(__m256 *r)
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

A_ void avx2d_trans(__m256d *r)
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

/* 16-bit storage (half.h's rules): reading is exact; writing rounds to
 * nearest even (vcvtps2ph mode 0; bfloat16 by integer rounding, NaN kept
 * quiet): the bits of attn_f32_to_f16 / attn_f32_to_bf16                */
A_ __m256 avx2f_ld_f16(const uint16_t *p)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}
A_ __m256 avx2f_ld_bf16(const uint16_t *p)
{
    const __m256i u = _mm256_cvtepu16_epi32(
        _mm_loadu_si128((const __m128i *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(u, 16));
}
A_ void avx2f_st_f16(uint16_t *p, __m256 v)
{
    _mm_storeu_si128((__m128i *)p,
                     _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}
A_ void avx2f_st_bf16(uint16_t *p, __m256 v)
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
    const __m256i b = _mm256_blendv_epi8(r, qn, nan);
    _mm_storeu_si128((__m128i *)p,
                     _mm_packus_epi32(_mm256_castsi256_si128(b),
                                      _mm256_extracti128_si256(b, 1)));
}

/* The W x W block at rows p, p + ks, .. (ks in elements) transposed as it
 * is loaded (VLOADT_*): c[m] = column m of rows 0..7. Rows i and i + 4
 * share a register (row i in the low 128 bits), so the lane crossing is
 * done by the loads and the rest is two in-lane 4 x 4 transposes.
 * 16-bit rows are widened on the way (exactly: half.h).               */
A_ void avx2f_t4x2(__m256 *c, const __m256 *r)
{
    const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]);
    const __m256 t1 = _mm256_unpackhi_ps(r[0], r[1]);
    const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]);
    const __m256 t3 = _mm256_unpackhi_ps(r[2], r[3]);
    c[0] = _mm256_shuffle_ps(t0, t2, 0x44);
    c[1] = _mm256_shuffle_ps(t0, t2, 0xee);
    c[2] = _mm256_shuffle_ps(t1, t3, 0x44);
    c[3] = _mm256_shuffle_ps(t1, t3, 0xee);
}
A_ void avx2f_ldt_f32(__m256 *c, const float *p, ptrdiff_t ks)
{
    __m256 lo[4], hi[4];
    for (int i = 0; i < 4; i++) {
        const float *a = p + i * ks, *b = p + (i + 4) * ks;
        lo[i] = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(a)),
                                     _mm_loadu_ps(b), 1);
        hi[i] = _mm256_insertf128_ps(
            _mm256_castps128_ps256(_mm_loadu_ps(a + 4)), _mm_loadu_ps(b + 4),
            1);
    }
    avx2f_t4x2(c, lo);
    avx2f_t4x2(c + 4, hi);
}
A_ void avx2f_ldt_f16(__m256 *c, const uint16_t *p, ptrdiff_t ks)
{
    __m256 lo[4], hi[4];
    for (int i = 0; i < 4; i++) {
        const __m128i a = _mm_loadu_si128((const __m128i *)(p + i * ks));
        const __m128i b = _mm_loadu_si128((const __m128i *)(p + (i + 4) * ks));
        lo[i] = _mm256_cvtph_ps(_mm_unpacklo_epi64(a, b));
        hi[i] = _mm256_cvtph_ps(_mm_unpackhi_epi64(a, b));
    }
    avx2f_t4x2(c, lo);
    avx2f_t4x2(c + 4, hi);
}
/* bfloat16: a float's high 16 bits, so interleaving with zeros widens   */
A_ void avx2f_ldt_bf16(__m256 *c, const uint16_t *p, ptrdiff_t ks)
{
    __m256 lo[4], hi[4];
    const __m256i z = _mm256_setzero_si256();
    for (int i = 0; i < 4; i++) {
        const __m256i y = _mm256_inserti128_si256(
            _mm256_castsi128_si256(
                _mm_loadu_si128((const __m128i *)(p + i * ks))),
            _mm_loadu_si128((const __m128i *)(p + (i + 4) * ks)), 1);
        lo[i] = _mm256_castsi256_ps(_mm256_unpacklo_epi16(z, y));
        hi[i] = _mm256_castsi256_ps(_mm256_unpackhi_epi16(z, y));
    }
    avx2f_t4x2(c, lo);
    avx2f_t4x2(c + 4, hi);
}
#undef A_

#endif /* ATTNPY_SIMD_VEC_AVX2_H */

/* ---- the template parameters of one element type (simd/undef.h) ---- */
#define ATTR ATTN_AVX2_ATTR
#if SIMD_F64
#define T double
#define SIMD_T_F64 1
#define VT __m256d
#define VM __m256d
#define W 4
#define SFX(name) name##_avx2_f64
#define VI_(op) _mm256_##op##_pd /* the intrinsic, and this file's helper */
#define VFN_(name) avx2d_##name
#else
#define T float
#define SIMD_T_F64 0
#define VT __m256
#define VM __m256
#define W 8
#define SFX(name) name##_avx2_f32
#define VI_(op) _mm256_##op##_ps
#define VFN_(name) avx2f_##name
#define VLOAD_F16(p) avx2f_ld_f16(p)
#define VLOAD_BF16(p) avx2f_ld_bf16(p)
#define VSTORE_F16(p, v) avx2f_st_f16(p, v)
#define VSTORE_BF16(p, v) avx2f_st_bf16(p, v)
#define VLOADT_F32(c, p, ks) avx2f_ldt_f32(c, p, ks)
#define VLOADT_F16(c, p, ks) avx2f_ldt_f16(c, p, ks)
#define VLOADT_BF16(c, p, ks) avx2f_ldt_bf16(c, p, ks)
#endif
#define VABS(a) VFN_(abs)(a)
#define VLT(a, b) VI_(cmp)(a, b, _CMP_LT_OQ)
#define VLE(a, b) VI_(cmp)(a, b, _CMP_LE_OQ)
#define VEQ(a, b) VI_(cmp)(a, b, _CMP_EQ_OQ)
#define VSEL(m, a, b) VI_(blendv)(b, a, m)
#define VRSUM(a) VFN_(rsum)(a)
#define VMASKN(k) VFN_(maskn)(k)
#define VLOADN(p, k) VFN_(loadn)(p, k)
#define VSTOREN(p, k, v) VFN_(storen)(p, k, v)
#include "simd/vec_x86.h"
#undef SIMD_F64
