/*
 * quant/qmatvec_x86.c -- qmatvec.c's row kernels for AVX-512F and AVX2
 * (+ FMA, F16C), in qmatvec.h's order: the 32 accumulators are two zmm
 * (positions 0..15, 16..31) or four ymm registers, the final tree is
 * acc[l] + acc[l + 16], then + 8, + 4, + 2, + 1, exactly as the portable
 * code. AVX-512 takes four weight rows through a block together (eight
 * independent FMA chains share the loads of x) and prefetches; AVX2 takes
 * two, without prefetch. Each function carries its target
 * attribute; qmatvec.c calls one only after checking the CPU.
 */
#include <stdint.h>
#include <string.h>

#include "quant/qmatvec.h"
#include "runtime/platform.h"

#if ATTN_ARCH_X86
#include <immintrin.h>

#define T512 ATTN_TARGET("avx512f,avx2,fma,f16c")
#define T256 ATTN_TARGET("avx2,fma,f16c")
#define NR 4 /* weight rows per pass */

/* A hint to fetch the rows two passes ahead (a pass reads NR rows front
 * to back, NR blocks per step; two lines a step keep ahead of that).
 * The address may lie past the matrix: it is computed as an integer and
 * a prefetch never faults.                                              */
#define PREFETCH_AHEAD(w, ldw, r, off)                                         \
    do {                                                                       \
        const uintptr_t a_ = (uintptr_t)(w) + ((r) + 2 * NR) * (ldw) + (off);  \
        _mm_prefetch((const char *)a_, _MM_HINT_T0);                           \
        _mm_prefetch((const char *)(a_ + 64), _MM_HINT_T0);                    \
    } while (0)

/* the block's d and m (or d and the first two int8: unused) as floats   */
static T256 ATTN_INLINE __m128 dm_of(const uint8_t *blk)
{
    int32_t v;
    memcpy(&v, blk, sizeof v);
    return _mm_cvtph_ps(_mm_cvtsi32_si128(v));
}

/* s[0..3] -> s0 + s2, s1 + s3 -> (s0 + s2) + (s1 + s3): the last two
 * steps of the tree                                                     */
static T256 ATTN_INLINE float tail4(__m128 s)
{
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

/* ---- AVX-512 ------------------------------------------------------------ */
static T512 ATTN_INLINE float sum512(__m512 a0, __m512 a1)
{
    const __m512 s = _mm512_add_ps(a0, a1);
    const __m256 lo = _mm512_castps512_ps256(s);
    const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(
        _mm512_castps_pd(s), 1));
    const __m256 t = _mm256_add_ps(lo, hi);
    return tail4(_mm_add_ps(_mm256_castps256_ps128(t),
                            _mm256_extractf128_ps(t, 1)));
}

/* Q4_1: the block's 16 possible weights d k + m (k = 0..15, one FMA:
 * d k is exact, so this is gguf's d q + m) in a register, looked up by
 * each nibble (vpermps reads the low 4 bits of an index)               */
static T512 ATTN_INLINE void q41_512(const uint8_t *blk, __m512 x0,
                                     __m512 x1, __m512 *a0, __m512 *a1)
{
    const __m128 dm = dm_of(blk);
    const __m512 k = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
                                    12, 13, 14, 15);
    const __m512 tab = _mm512_fmadd_ps(_mm512_broadcastss_ps(dm), k,
                                       _mm512_broadcastss_ps(
                                           _mm_movehdup_ps(dm)));
    const __m512i q = _mm512_cvtepu8_epi32(
        _mm_loadu_si128((const __m128i *)(blk + 4)));
    *a0 = _mm512_fmadd_ps(x0, _mm512_permutexvar_ps(q, tab), *a0);
    *a1 = _mm512_fmadd_ps(x1, _mm512_permutexvar_ps(
                                  _mm512_srli_epi32(q, 4), tab), *a1);
}

static T512 ATTN_INLINE void q80_512(const uint8_t *blk, __m512 x0,
                                     __m512 x1, __m512 *a0, __m512 *a1)
{
    const __m512 d = _mm512_broadcastss_ps(dm_of(blk));
    const __m512 q0 = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
        _mm_loadu_si128((const __m128i *)(blk + 2))));
    const __m512 q1 = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
        _mm_loadu_si128((const __m128i *)(blk + 18))));
    *a0 = _mm512_fmadd_ps(x0, _mm512_mul_ps(d, q0), *a0);
    *a1 = _mm512_fmadd_ps(x1, _mm512_mul_ps(d, q1), *a1);
}

#define DEFINE_ROWS512(NAME, BLK, BYTES)                                       \
T512 void NAME(float *y, const float *x, const uint8_t *w, size_t ldw,         \
               size_t nrows, size_t nb)                                        \
{                                                                              \
    size_t r = 0;                                                              \
    for (; r + NR <= nrows; r += NR) {                                         \
        __m512 a[2 * NR];                                                      \
        for (int k = 0; k < 2 * NR; k++)                                       \
            a[k] = _mm512_setzero_ps();                                        \
        const uint8_t *p = w + r * ldw;                                        \
        for (size_t b = 0; b < nb; b++, p += BYTES) {                          \
            PREFETCH_AHEAD(w, ldw, r, b * NR * BYTES);                         \
            const __m512 x0 = _mm512_loadu_ps(x + b * QK);                     \
            const __m512 x1 = _mm512_loadu_ps(x + b * QK + 16);                \
            for (int k = 0; k < NR; k++)                                       \
                BLK(p + (size_t)k * ldw, x0, x1, &a[2 * k], &a[2 * k + 1]);    \
        }                                                                      \
        for (int k = 0; k < NR; k++)                                           \
            y[r + (size_t)k] = sum512(a[2 * k], a[2 * k + 1]);                 \
    }                                                                          \
    for (; r < nrows; r++) {                                                   \
        __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();             \
        const uint8_t *p = w + r * ldw;                                        \
        for (size_t b = 0; b < nb; b++, p += BYTES)                            \
            BLK(p, _mm512_loadu_ps(x + b * QK),                                \
                _mm512_loadu_ps(x + b * QK + 16), &a0, &a1);                   \
        y[r] = sum512(a0, a1);                                                 \
    }                                                                          \
}

DEFINE_ROWS512(attn__qrows_q4_1_avx512, q41_512, Q4_1_BYTES)
DEFINE_ROWS512(attn__qrows_q8_0_avx512, q80_512, Q8_0_BYTES)

/* ---- AVX2: a[0..3] hold positions 0-7, 8-15, 16-23, 24-31 --------------- */
static T256 ATTN_INLINE float sum256(const __m256 *a)
{
    const __m256 t = _mm256_add_ps(_mm256_add_ps(a[0], a[2]),
                                   _mm256_add_ps(a[1], a[3]));
    return tail4(_mm_add_ps(_mm256_castps256_ps128(t),
                            _mm256_extractf128_ps(t, 1)));
}

static T256 ATTN_INLINE void q41_256(const uint8_t *blk, const __m256 *x,
                                     __m256 *a)
{
    const __m128 dm = dm_of(blk);
    const __m256 d = _mm256_broadcastss_ps(dm);
    const __m256 m = _mm256_broadcastss_ps(_mm_movehdup_ps(dm));
    const __m128i q = _mm_loadu_si128((const __m128i *)(blk + 4));
    const __m256i b0 = _mm256_cvtepu8_epi32(q);
    const __m256i b1 = _mm256_cvtepu8_epi32(_mm_srli_si128(q, 8));
    const __m256i f = _mm256_set1_epi32(15);
    const __m256 w[4] = {
        _mm256_cvtepi32_ps(_mm256_and_si256(b0, f)),
        _mm256_cvtepi32_ps(_mm256_and_si256(b1, f)),
        _mm256_cvtepi32_ps(_mm256_srli_epi32(b0, 4)),
        _mm256_cvtepi32_ps(_mm256_srli_epi32(b1, 4))};
    for (int k = 0; k < 4; k++)
        a[k] = _mm256_fmadd_ps(x[k], _mm256_fmadd_ps(d, w[k], m), a[k]);
}

static T256 ATTN_INLINE void q80_256(const uint8_t *blk, const __m256 *x,
                                     __m256 *a)
{
    const __m256 d = _mm256_broadcastss_ps(dm_of(blk));
    for (int k = 0; k < 4; k++) {
        const __m128i q = _mm_loadl_epi64((const __m128i *)(blk + 2 + 8 * k));
        const __m256 w = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q));
        a[k] = _mm256_fmadd_ps(x[k], _mm256_mul_ps(d, w), a[k]);
    }
}

#define DEFINE_ROWS256(NAME, BLK, BYTES)                                       \
T256 void NAME(float *y, const float *x, const uint8_t *w, size_t ldw,         \
               size_t nrows, size_t nb)                                        \
{                                                                              \
    for (size_t r = 0; r < nrows; r += 2) {                                    \
        const size_t nr = nrows - r < 2 ? 1 : 2;                               \
        __m256 a[8];                                                           \
        for (int k = 0; k < 8; k++)                                            \
            a[k] = _mm256_setzero_ps();                                        \
        const uint8_t *p = w + r * ldw;                                        \
        for (size_t b = 0; b < nb; b++, p += BYTES) {                          \
            __m256 xv[4];                                                      \
            for (int k = 0; k < 4; k++)                                        \
                xv[k] = _mm256_loadu_ps(x + b * QK + 8 * k);                   \
            BLK(p, xv, a);                                                     \
            if (nr == 2)                                                       \
                BLK(p + ldw, xv, a + 4);                                       \
        }                                                                      \
        y[r] = sum256(a);                                                      \
        if (nr == 2)                                                           \
            y[r + 1] = sum256(a + 4);                                          \
    }                                                                          \
}

DEFINE_ROWS256(attn__qrows_q4_1_avx2, q41_256, Q4_1_BYTES)
DEFINE_ROWS256(attn__qrows_q8_0_avx2, q80_256, Q8_0_BYTES)

#else
typedef int attn_quant_x86_unused; /* ISO C: no empty translation unit */
#endif
