/*
 * simd/vec_avx512.h -- the SIMD primitives for AVX-512F (16 floats / 8
 * doubles), and the template parameters of one element type; used as
 * simd/vec_avx2.h is. The primitives and their semantics: simd/math.h.
 */
#ifndef ATTNPY_SIMD_VEC_AVX512_H
#define ATTNPY_SIMD_VEC_AVX512_H

#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "runtime/platform.h"

#define ATTN_AVX512_ATTR ATTN_TARGET("avx512f,avx2,fma,f16c")
#define A_ static ATTN_INLINE ATTN_AVX512_ATTR

/* pow2t, orsign and getmant (|a| with the exponent field set to the
 * bias; integer operations, not vgetmant: the same bits as every other
 * set for every input) of one element type: x the helpers' letter (f,
 * d), V its vector, S the intrinsics' suffix (ps, pd), I the integer
 * lanes' (epi32, epi64), SIGN their sign bit, the exponent bias and
 * fraction bits                                                         */
#define AVX512_BITS(x, V, S, I, SIGN, BIAS, MBITS)                             \
    A_ V avx512##x##_pow2t(V t)                                                \
    {                                                                          \
        return _mm512_castsi512_##S(_mm512_slli_##I(_mm512_add_##I(            \
            _mm512_cast##S##_si512(t), _mm512_set1_##I(BIAS)), MBITS));        \
    }                                                                          \
    A_ V avx512##x##_orsign(V a, V s)                                          \
    {                                                                          \
        return _mm512_castsi512_##S(_mm512_or_si512(                           \
            _mm512_cast##S##_si512(a),                                         \
            _mm512_and_si512(_mm512_set1_##I(SIGN),                            \
                             _mm512_cast##S##_si512(s))));                     \
    }                                                                          \
    A_ V avx512##x##_getmant(V a)                                              \
    {                                                                          \
        return _mm512_castsi512_##S(_mm512_or_si512(                           \
            _mm512_and_si512(_mm512_cast##S##_si512(a),                        \
                             _mm512_set1_##I((1ll << MBITS) - 1)),             \
            _mm512_set1_##I((long long)BIAS << MBITS)));                       \
    }
AVX512_BITS(f, __m512, ps, epi32, (int)0x80000000u, 127, 23)
AVX512_BITS(d, __m512d, pd, epi64, (long long)0x8000000000000000ull, 1023, 52)
#undef AVX512_BITS

/* float: 16 lanes */
/* the exponent field less the bias (integer operations, not vgetexp:
 * the same bits as every other set for every input)                    */
A_ __m512 avx512f_getexp(__m512 a)
{
    const __m512i e = _mm512_and_si512(
        _mm512_srli_epi32(_mm512_castps_si512(a), 23), _mm512_set1_epi32(0xff));
    return _mm512_sub_ps(_mm512_cvtepi32_ps(e), _mm512_set1_ps(127.0f));
}

/* double: 8 lanes */
/* 2^52 + e from the bits (AVX-512F has no 64-bit integer conversion)  */
A_ __m512d avx512d_getexp(__m512d a)
{
    const __m512i e = _mm512_and_si512(
        _mm512_srli_epi64(_mm512_castpd_si512(a), 52), _mm512_set1_epi64(0x7ff));
    const __m512d two52 = _mm512_set1_pd(4503599627370496.0);
    return _mm512_sub_pd(
        _mm512_castsi512_pd(_mm512_or_si512(e, _mm512_castpd_si512(two52))),
        _mm512_set1_pd(4503599627370496.0 + 1023.0));
}

/* r[i] = row i of a W x W block -> r[c] = column c (VTRANS)              */
A_ void avx512f_trans(__m512 *r)
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

A_ void avx512d_trans(__m512d *r)
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

/* 16-bit storage (half.h's rules), AVX-512F only                        */
A_ __m512 avx512f_ld_f16(const uint16_t *p)
{
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
}
A_ __m512 avx512f_ld_bf16(const uint16_t *p)
{
    const __m512i u = _mm512_cvtepu16_epi32(
        _mm256_loadu_si256((const __m256i *)p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(u, 16));
}
A_ void avx512f_st_f16(uint16_t *p, __m512 v)
{
    _mm256_storeu_si256((__m256i *)p,
                        _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT
                                               | _MM_FROUND_NO_EXC));
}
A_ void avx512f_st_bf16(uint16_t *p, __m512 v)
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
#undef A_

#endif /* ATTNPY_SIMD_VEC_AVX512_H */

/* ---- the template parameters of one element type (simd/undef.h) ---- */
#define ATTR ATTN_AVX512_ATTR
#if SIMD_F64
#define T double
#define SIMD_T_F64 1
#define VT __m512d
#define VM __mmask8
#define W 8
#define SFX(name) name##_avx512_f64
#define VI_(op) _mm512_##op##_pd /* the intrinsic, and this file's helper */
#define VFN_(name) avx512d_##name
#define VLT(a, b) _mm512_cmp_pd_mask(a, b, _CMP_LT_OQ)
#define VLE(a, b) _mm512_cmp_pd_mask(a, b, _CMP_LE_OQ)
#define VEQ(a, b) _mm512_cmp_pd_mask(a, b, _CMP_EQ_OQ)
#else
#define T float
#define SIMD_T_F64 0
#define VT __m512
#define VM __mmask16
#define W 16
#define SFX(name) name##_avx512_f32
#define VI_(op) _mm512_##op##_ps
#define VFN_(name) avx512f_##name
#define VLT(a, b) _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ)
#define VLE(a, b) _mm512_cmp_ps_mask(a, b, _CMP_LE_OQ)
#define VEQ(a, b) _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ)
#define VLOAD_F16(p) avx512f_ld_f16(p)
#define VLOAD_BF16(p) avx512f_ld_bf16(p)
#define VSTORE_F16(p, v) avx512f_st_f16(p, v)
#define VSTORE_BF16(p, v) avx512f_st_bf16(p, v)
#endif
#define VABS(a) VI_(abs)(a)
#define VSEL(m, a, b) VI_(mask_blend)(m, b, a)
#define VRSUM(a) VI_(reduce_add)(a)
/* the lanes i < k (0 <= k <= W): a mask, masked loads (the others 0,
 * their memory never touched) and stores                               */
#define VMASKN(k) ((VM)(((uint32_t)1 << (k)) - 1u))
#define VLOADN(p, k) VI_(maskz_loadu)(VMASKN(k), p)
#define VSTOREN(p, k, v) VI_(mask_storeu)(p, VMASKN(k), v)
#include "simd/vec_x86.h"
#undef SIMD_F64
