/*
 * layer/norm.c -- layer normalisation (the tutorial's form and PyTorch's),
 * forward and backward, on the row driver (rows/rows.h). The per-row
 * code is norm_body.h, instantiated for float and double; it sees
 * unit-stride rows of its type whatever the operands' strides and
 * storage (the storage layer).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "rows/lanes.h"
#include "rows/rows.h"

#define T float
#define SFX f32
#include "layer/norm_body.h"
#define T double
#define SFX f64
#include "layer/norm_body.h"

attn_status attn_layer_norm(const attn_norm *p, const attn_exec *ex)
{
    if (!p)
        return ATTN_EINVAL;
    const attn_mat *ops[] = {&p->y, &p->sum, &p->x, &p->res, &p->shift,
                             &p->weight, &p->bias};
    if (!attn__stores_ok(p->dtype, ops, 7))
        return ATTN_EINVAL;
    const size_t rb = attn__row_bytes(p->dtype, p->n);
    if (p->n == 0)
        return ATTN_OK;
    if (!rb || rb > SIZE_MAX / 7)
        return ATTN_ENOMEM;
    const attn_rows_job job = {p->nrows, p->n, 0, NULL,
                               p->dtype == ATTN_F32 ? ln_fwd_f32 : ln_fwd_f64,
                               (void *)p, 7 * rb, 4.0};
    return attn__rows_run(&job, ex);
}

attn_status attn_layer_norm_backward(const attn_norm_grad *p,
                                     const attn_exec *ex)
{
    if (!p)
        return ATTN_EINVAL;
    const attn_mat *ops[] = {&p->dx, &p->dweight, &p->dbias, &p->dy, &p->s,
                             &p->weight};
    if (!attn__stores_ok(p->dtype, ops, 6))
        return ATTN_EINVAL;
    const size_t n = p->n, rb = attn__row_bytes(p->dtype, n);
    const int want = p->dweight.data || p->dbias.data;
    if (n == 0)
        return ATTN_OK;
    if (!rb || rb > SIZE_MAX / 4 || n > SIZE_MAX / 2 / sizeof(double))
        return ATTN_ENOMEM;
    double *sums = want ? malloc(2 * n * sizeof(double)) : NULL;
    if (want && !sums)
        return ATTN_ENOMEM;
    const attn_rows_job job = {p->nrows, n, want ? 2 : 0, sums,
                               p->dtype == ATTN_F32 ? ln_bwd_f32 : ln_bwd_f64,
                               (void *)p, 4 * rb, 6.0};
    const attn_status st = attn__rows_run(&job, ex);
    if (st == ATTN_OK && sums) {
        attn__store_vec(p->dtype, &p->dweight, sums, n);
        attn__store_vec(p->dtype, &p->dbias, sums + n, n);
    }
    free(sums);
    return st;
}
