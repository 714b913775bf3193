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

static int has_f16c(void)
{
    return (attn__x86_features() & ATTN_X86_F16C) != 0;
}

#define H16_ATTR ATTN_TARGET("avx2,f16c")
#include "layer/half_avx2.h"

static int has_avx2(void)
{
    return (attn__x86_features() & ATTN_X86_AVX2_FMA) != 0;
}

/* unit-stride rows 8 elements at a time (F16C for float16, AVX2 for
 * bfloat16); returns how many were done                               */
static H16_ATTR size_t load_vec(attn_store st, const uint16_t *src,
                                size_t n, float *dst)
{
    size_t j = 0;
    for (; j + 8 <= n; j += 8)
        _mm256_storeu_ps(dst + j, h16_load8(st, src + j));
    return j;
}

static H16_ATTR size_t store_vec(attn_store st, uint16_t *dst, size_t n,
                                 const float *src)
{
    size_t j = 0;
    for (; j + 8 <= n; j += 8)
        h16_store8(st, dst + j, _mm256_loadu_ps(src + j));
    return j;
}
#else
static int has_f16c(void) { return 0; }
static int has_avx2(void) { return 0; }
static size_t load_vec(attn_store st, const uint16_t *src, size_t n,
                       float *dst)
{
    (void)st, (void)src, (void)n, (void)dst;
    return 0;
}
static size_t store_vec(attn_store st, uint16_t *dst, size_t n,
                        const float *src)
{
    (void)st, (void)src, (void)n, (void)dst;
    return 0;
}
#endif

/* may rows of storage st go 8 lanes at a time?                       */
static int vec_ok(attn_store st)
{
    return has_avx2() && (st != ATTN_ST_F16 || has_f16c());
}

void attn__row16_load(attn_store st, const void *src, ptrdiff_t s, size_t n,
                      float *dst)
{
    const uint16_t *h = src;
    size_t j = s == 1 && vec_ok(st) ? load_vec(st, h, n, dst) : 0;
    for (; j < n; j++)
        dst[j] = attn_load_f32(st, h, (ptrdiff_t)j * s);
}

void attn__row16_store(attn_store st, void *dst, ptrdiff_t s, size_t n,
                       const float *src)
{
    uint16_t *h = dst;
    size_t j = s == 1 && vec_ok(st) ? store_vec(st, h, n, src) : 0;
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
