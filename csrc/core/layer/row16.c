/*
 * layer/row16.c -- widening and rounding 16-bit rows (row16.h).
 *
 * The conversions are half.h's, bit for bit. On unit-stride rows, when
 * the CPU has them: float16 with F16C's vcvtph2ps / vcvtps2ph (rounding
 * mode 0: nearest even), bfloat16 with AVX2 integer lanes (a shift one
 * way; the other, half.h's integer round with the NaN case blended in).
 * Everything else, and the tails, by half.h's scalar code.
 */
#include <stdint.h>
#include <string.h>

#include "half.h"
#include "layer/row16.h"
#include "runtime/platform.h"
#include "util.h"

#if ATTN_ARCH_X86
#include <immintrin.h>

#define F16C_ATTR ATTN_TARGET("avx,f16c")

static int has_f16c(void)
{
    return (attn__x86_features() & ATTN_X86_F16C) != 0;
}

static F16C_ATTR size_t f16_load_vec(const uint16_t *src, size_t n,
                                     float *dst)
{
    size_t j = 0;
    for (; j + 8 <= n; j += 8)
        _mm256_storeu_ps(dst + j, _mm256_cvtph_ps(_mm_loadu_si128(
                                      (const __m128i *)(src + j))));
    return j;
}

static F16C_ATTR size_t f16_store_vec(uint16_t *dst, size_t n,
                                      const float *src)
{
    size_t j = 0;
    for (; j + 8 <= n; j += 8)
        _mm_storeu_si128((__m128i *)(dst + j),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + j),
                                         _MM_FROUND_TO_NEAREST_INT));
    return j;
}

static int has_avx2(void)
{
    return (attn__x86_features() & ATTN_X86_AVX2_FMA) != 0;
}

#define AVX2_ATTR ATTN_TARGET("avx2")

static AVX2_ATTR size_t bf16_load_vec(const uint16_t *src, size_t n,
                                      float *dst)
{
    size_t j = 0;
    for (; j + 8 <= n; j += 8) {
        __m256i u = _mm256_cvtepu16_epi32(
            _mm_loadu_si128((const __m128i *)(src + j)));
        _mm256_storeu_si256((__m256i *)(dst + j), _mm256_slli_epi32(u, 16));
    }
    return j;
}

/* attn_f32_to_bf16 on 8 lanes: (u + 0x7fff + lsb) >> 16, or for NaN the
 * top half with the quiet bit set                                      */
static AVX2_ATTR size_t bf16_store_vec(uint16_t *dst, size_t n,
                                       const float *src)
{
    const __m256i one = _mm256_set1_epi32(1), bias = _mm256_set1_epi32(0x7fff),
                  abs = _mm256_set1_epi32(0x7fffffff),
                  inf = _mm256_set1_epi32(0x7f800000),
                  quiet = _mm256_set1_epi32(0x0040);
    size_t j = 0;
    for (; j + 8 <= n; j += 8) {
        __m256i u = _mm256_loadu_si256((const __m256i *)(src + j));
        __m256i hi = _mm256_srli_epi32(u, 16);
        __m256i r = _mm256_srli_epi32(
            _mm256_add_epi32(_mm256_add_epi32(u, bias),
                             _mm256_and_si256(hi, one)), 16);
        __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs), inf);
        r = _mm256_blendv_epi8(r, _mm256_or_si256(hi, quiet), nan);
        /* 8 x 32 -> 8 x 16: pack within lanes, then put the halves in order */
        __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
        _mm_storeu_si128((__m128i *)(dst + j), _mm256_castsi256_si128(p));
    }
    return j;
}
#else
static int has_f16c(void) { return 0; }
static int has_avx2(void) { return 0; }
static size_t bf16_load_vec(const uint16_t *src, size_t n, float *dst)
{
    (void)src, (void)n, (void)dst;
    return 0;
}
static size_t bf16_store_vec(uint16_t *dst, size_t n, const float *src)
{
    (void)src, (void)n, (void)dst;
    return 0;
}
static size_t f16_load_vec(const uint16_t *src, size_t n, float *dst)
{
    (void)src, (void)n, (void)dst;
    return 0;
}
static size_t f16_store_vec(uint16_t *dst, size_t n, const float *src)
{
    (void)src, (void)n, (void)dst;
    return 0;
}
#endif

void attn__row16_load(attn_store st, const void *src, ptrdiff_t s, size_t n,
                      float *dst)
{
    const uint16_t *h = src;
    size_t j = 0;
    if (s == 1 && st == ATTN_ST_BF16 && has_avx2())
        j = bf16_load_vec(h, n, dst);
    else if (s == 1 && st == ATTN_ST_F16 && has_f16c())
        j = f16_load_vec(h, n, dst);
    for (; j < n; j++)
        dst[j] = attn_load_f32(st, h, (ptrdiff_t)j * s);
}

void attn__row16_store(attn_store st, void *dst, ptrdiff_t s, size_t n,
                       const float *src)
{
    uint16_t *h = dst;
    size_t j = 0;
    if (s == 1 && st == ATTN_ST_BF16 && has_avx2())
        j = bf16_store_vec(h, n, src);
    else if (s == 1 && st == ATTN_ST_F16 && has_f16c())
        j = f16_store_vec(h, n, src);
    for (; j < n; j++)
        attn_store_f32(st, h, (ptrdiff_t)j * s, src[j]);
}

int attn__any16(attn_dtype dtype, const attn_mat *const *ops, int nops)
{
    int any = 0;
    for (int i = 0; i < nops; i++) {
        if (!ops[i]->data || ops[i]->store == ATTN_ST_NATIVE)
            continue;
        if (ops[i]->store != ATTN_ST_F16 && ops[i]->store != ATTN_ST_BF16)
            return -1;
        any = 1;
    }
    return any && dtype != ATTN_F32 ? -1 : any;
}

void attn__row16_add(attn_row16 *s, attn_mat *m, int out, int vec)
{
    if (!m->data || m->store == ATTN_ST_NATIVE || s->nops == ATTN_ROW16_MAX)
        return;
    const int i = s->nops++;
    s->op[i] = m;
    s->orig[i] = *m;
    s->out[i] = (unsigned char)out;
    s->vec[i] = (unsigned char)vec;
}

size_t attn__row16_floats(const attn_row16 *s)
{
    return (size_t)s->nops * s->n;
}

void attn__row16_begin(attn_row16 *s, float *scratch)
{
    for (int i = 0; i < s->nops; i++) {
        float *row = scratch + (size_t)i * s->n;
        *s->op[i] = (attn_mat){row, NULL, 0, 1, ATTN_ST_NATIVE};
        if (s->vec[i])
            attn__row16_load(s->orig[i].store, s->orig[i].data,
                             s->orig[i].s1, s->n, row);
    }
}

/* where row r of operand i starts, in elements of 16 bits               */
static const uint16_t *row_at(const attn_row16 *s, int i, size_t r)
{
    const attn_mat *m = &s->orig[i];
    ptrdiff_t o = OFF(*m, r);
    if (s->rows_by_s0)
        o += (ptrdiff_t)r * m->s0;
    return (const uint16_t *)m->data + o;
}

void attn__row16_in(const attn_row16 *s, size_t r)
{
    for (int i = 0; i < s->nops; i++)
        if (!s->out[i] && !s->vec[i])
            attn__row16_load(s->orig[i].store, row_at(s, i, r),
                             s->orig[i].s1, s->n, s->op[i]->data);
}

void attn__row16_out(const attn_row16 *s, size_t r)
{
    for (int i = 0; i < s->nops; i++)
        if (s->out[i])
            attn__row16_store(s->orig[i].store, (void *)row_at(s, i, r),
                              s->orig[i].s1, s->n, s->op[i]->data);
}
