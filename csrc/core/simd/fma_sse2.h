/*
 * simd/fma_sse2.h -- four float fused multiply-adds at once where the
 * build's target has no fma instruction (x86-64's base: SSE2), for the
 * portable kernels' narrow build (simd/vec_portable.h). The same value
 * as attn_fmaf (simd/fma.h): the product exact in double, the sum
 * rounded to odd in double, then once to float (Boldo and Melquiond) --
 * two lanes per SSE2 register; the C library's fmaf lane by lane cost
 * about 50x the FMA build's time in the kernels' inner loops.
 * Round to odd without a 64-bit compare (SSE2 has none): an inexact sum
 * s becomes its neighbour toward zero (s, or s - 1 ulp when the exact
 * sum is smaller in magnitude) with the last bit set. Written with the
 * intrinsics rather than generic vectors: gcc's vectorizer was seen to
 * change the generic version's result (-O2, gcc 12).
 */
#ifndef ATTNPY_SIMD_FMA_SSE2_H
#define ATTNPY_SIMD_FMA_SSE2_H

#include <emmintrin.h>

/* RO(x + y), two doubles                                                */
static inline __m128d attn__add_odd_sse2(__m128d x, __m128d y)
{
    const __m128d zero = _mm_setzero_pd();
    const __m128d s = _mm_add_pd(x, y), t = _mm_sub_pd(s, x);
    const __m128d err = _mm_add_pd(_mm_sub_pd(x, _mm_sub_pd(s, t)),
                                   _mm_sub_pd(y, t));
    const __m128i u = _mm_castpd_si128(s), one = _mm_set1_epi64x(1);
    const __m128i inexact = _mm_castpd_si128(_mm_and_pd(
        _mm_cmpneq_pd(err, zero), _mm_cmpeq_pd(_mm_sub_pd(s, s), zero)));
    const __m128i diff = _mm_castpd_si128(
        _mm_xor_pd(_mm_cmpgt_pd(err, zero), _mm_cmpgt_pd(s, zero)));
    /* the signs of err and s differ: the exact sum is nearer 0 than s */
    const __m128i tr = _mm_sub_epi64(u, _mm_and_si128(diff, one));
    return _mm_castsi128_pd(_mm_or_si128(
        _mm_and_si128(inexact, _mm_or_si128(tr, one)),
        _mm_andnot_si128(inexact, u)));
}

static inline __m128 attn__fmaf4_sse2(__m128 a, __m128 b, __m128 c)
{
    const __m128d lo = attn__add_odd_sse2(
        _mm_mul_pd(_mm_cvtps_pd(a), _mm_cvtps_pd(b)), _mm_cvtps_pd(c));
    const __m128d hi = attn__add_odd_sse2(
        _mm_mul_pd(_mm_cvtps_pd(_mm_movehl_ps(a, a)),
                   _mm_cvtps_pd(_mm_movehl_ps(b, b))),
        _mm_cvtps_pd(_mm_movehl_ps(c, c)));
    return _mm_movelh_ps(_mm_cvtpd_ps(lo), _mm_cvtpd_ps(hi));
}

/* the portable build's 4-lane float vectors (pf4_vt), the same 16 bytes */
static inline pf4_vt pf4_fma_sse2(pf4_vt a, pf4_vt b, pf4_vt c)
{
    __m128 x, y, z;
    memcpy(&x, &a, sizeof x);
    memcpy(&y, &b, sizeof y);
    memcpy(&z, &c, sizeof z);
    const __m128 r = attn__fmaf4_sse2(x, y, z);
    pf4_vt out;
    memcpy(&out, &r, sizeof out);
    return out;
}

#endif /* ATTNPY_SIMD_FMA_SSE2_H */
