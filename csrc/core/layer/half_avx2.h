/*
 * layer/half_avx2.h -- 8 float16 / bfloat16 lanes to and from a __m256,
 * with half.h's bits (F16C's vcvtph2ps / vcvtps2ph with rounding mode 0;
 * bfloat16 by integer lanes). For x86 files compiled with AVX2 and F16C
 * enabled per function: include after <immintrin.h>, define H16_ATTR.
 */
#ifndef ATTNPY_LAYER_HALF_AVX2_H
#define ATTNPY_LAYER_HALF_AVX2_H

#include "attn.h"

/* 8 elements stored as st (float, float16, bfloat16) at p, as floats   */
static H16_ATTR inline __m256 h16_load8(attn_store st, const void *p)
{
    if (st == ATTN_ST_F16)
        return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
    if (st == ATTN_ST_BF16)
        return _mm256_castsi256_ps(_mm256_slli_epi32(
            _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p)), 16));
    return _mm256_loadu_ps((const float *)p);
}

/* v rounded to bfloat16, nearest even (NaN: the top half, made quiet)  */
static H16_ATTR inline __m128i h16_bf16_round8(__m256 v)
{
    const __m256i u = _mm256_castps_si256(v);
    const __m256i hi = _mm256_srli_epi32(u, 16);
    __m256i r = _mm256_srli_epi32(
        _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)),
                         _mm256_and_si256(hi, _mm256_set1_epi32(1))), 16);
    const __m256i nan = _mm256_cmpgt_epi32(
        _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)),
        _mm256_set1_epi32(0x7f800000));
    r = _mm256_blendv_epi8(r, _mm256_or_si256(hi, _mm256_set1_epi32(0x40)),
                           nan);
    /* 8 x 32 -> 8 x 16: pack within lanes, then the halves in order    */
    return _mm256_castsi256_si128(
        _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08));
}

/* v stored as st at p (8 elements), a 16-bit store rounded once         */
static H16_ATTR inline void h16_store8(attn_store st, void *p, __m256 v)
{
    if (st == ATTN_ST_F16)
        _mm_storeu_si128((__m128i *)p,
                         _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    else if (st == ATTN_ST_BF16)
        _mm_storeu_si128((__m128i *)p, h16_bf16_round8(v));
    else
        _mm256_storeu_ps((float *)p, v);
}

#endif /* ATTNPY_LAYER_HALF_AVX2_H */
