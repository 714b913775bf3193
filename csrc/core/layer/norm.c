/*
 * layer/norm.c -- layer normalisation (the tutorial's form and PyTorch's),
 * forward and backward, over the rows driver of rows.c. The per-row code
 * is norm_body.h, instantiated for float and double. 16-bit operands run
 * the float code on rows staged in float scratch (row16.h).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "layer/lanes.h"
#include "layer/rows.h"

#if defined(__GNUC__)
#define LN_INLINE __attribute__((always_inline))
#else
#define LN_INLINE
#endif

#define T float
#define SFX f32
#include "layer/norm_body.h"
#define T double
#define SFX f64
#include "layer/norm_body.h"

/* the operands of a context copy, for 16-bit staging (rows.h)          */
static void ln_fwd_reg(void *copy, attn_row16 *s)
{
    attn_norm *p = copy;
    attn__row16_add(s, &p->y, 1, 0);
    attn__row16_add(s, &p->sum, 1, 0);
    attn__row16_add(s, &p->x, 0, 0);
    attn__row16_add(s, &p->res, 0, 0);
    attn__row16_add(s, &p->shift, 0, 1);
    attn__row16_add(s, &p->weight, 0, 1);
    attn__row16_add(s, &p->bias, 0, 1);
}

static void ln_bwd_reg(void *copy, attn_row16 *s)
{
    attn_norm_grad *p = copy;
    attn__row16_add(s, &p->dx, 1, 0);
    attn__row16_add(s, &p->dy, 0, 0);
    attn__row16_add(s, &p->s, 0, 0);
    attn__row16_add(s, &p->weight, 0, 1);
}

attn_status attn_layer_norm(const attn_norm *p, const attn_exec *ex)
{
    if (!p || (p->dtype != ATTN_F32 && p->dtype != ATTN_F64))
        return ATTN_EINVAL;
    const attn_rows16 h = {p, sizeof *p, ln_fwd_reg};
    const int h16 = attn__rows16_need(&h, p->dtype);
    if (h16 < 0)
        return ATTN_EINVAL;
    if (p->n == 0)
        return ATTN_OK;
    attn_rows_fn fn = p->dtype == ATTN_F32 ? ln_fwd_f32 : ln_fwd_f64;
    return attn__rows_run16(p->nrows, p->n, 0, NULL, fn, (void *)p,
                            h16 ? &h : NULL, 4.0, ex);
}

attn_status attn_layer_norm_backward(const attn_norm_grad *p,
                                     const attn_exec *ex)
{
    if (!p || (p->dtype != ATTN_F32 && p->dtype != ATTN_F64))
        return ATTN_EINVAL;
    const attn_rows16 h = {p, sizeof *p, ln_bwd_reg};
    const int h16 = attn__rows16_need(&h, p->dtype);
    const attn_mat *vecs[] = {&p->dweight, &p->dbias};
    if (h16 < 0 || attn__any16(p->dtype, vecs, 2) < 0)
        return ATTN_EINVAL;
    int want = p->dweight.data || p->dbias.data;
    size_t n = p->n;
    double *sums = NULL;
    if (want && n) {
        if (n > SIZE_MAX / 2 / sizeof(double))
            return ATTN_ENOMEM;
        sums = malloc(2 * n * sizeof(double));
        if (!sums)
            return ATTN_ENOMEM;
    }
    attn_rows_fn fn = p->dtype == ATTN_F32 ? ln_bwd_f32 : ln_bwd_f64;
    attn_status st = ATTN_OK;
    if (n)
        st = attn__rows_run16(p->nrows, n, want ? 2 : 0, sums, fn,
                              (void *)p, h16 ? &h : NULL, 6.0, ex);
    if (st == ATTN_OK && sums) {
        attn__store_vec(p->dtype, p->dweight, sums, n);
        attn__store_vec(p->dtype, p->dbias, sums + n, n);
    }
    free(sums);
    return st;
}
