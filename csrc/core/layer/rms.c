/*
 * layer/rms.c -- RMS normalisation (Llama's RMSNorm), forward and
 * backward, on the row driver (rows/rows.h). The per-row code is
 * rms_body.h, instantiated for float and double on unit-stride rows of
 * its type (the storage layer).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "rows/lanes.h"
#include "rows/rows.h"

#define T float
#define SFX f32
#include "layer/rms_body.h"
#define T double
#define SFX f64
#include "layer/rms_body.h"

attn_status attn_rms_norm(const attn_rms *p, const attn_exec *ex)
{
    if (!p)
        return ATTN_EINVAL;
    const attn_mat *ops[] = {&p->y, &p->x, &p->weight};
    if (!attn__stores_ok(p->dtype, ops, 3))
        return ATTN_EINVAL;
    const size_t rb = attn__row_bytes(p->dtype, p->n);
    if (p->n == 0)
        return ATTN_OK;
    if (!rb || rb > SIZE_MAX / 3)
        return ATTN_ENOMEM;
    const attn_rows_job job = {p->nrows, p->n, 0, NULL,
                               p->dtype == ATTN_F32 ? rms_fwd_f32
                                                    : rms_fwd_f64,
                               (void *)p, 3 * rb, 3.0};
    return attn__rows_run(&job, ex);
}

attn_status attn_rms_norm_backward(const attn_rms_grad *p,
                                   const attn_exec *ex)
{
    if (!p)
        return ATTN_EINVAL;
    const attn_mat *ops[] = {&p->dx, &p->dweight, &p->dy, &p->x,
                             &p->weight};
    if (!attn__stores_ok(p->dtype, ops, 5))
        return ATTN_EINVAL;
    const size_t n = p->n, rb = attn__row_bytes(p->dtype, n);
    if (n == 0)
        return ATTN_OK;
    if (!rb || rb > SIZE_MAX / 4 || n > SIZE_MAX / sizeof(double))
        return ATTN_ENOMEM;
    double *sums = p->dweight.data ? malloc(n * sizeof(double)) : NULL;
    if (p->dweight.data && !sums)
        return ATTN_ENOMEM;
    const attn_rows_job job = {p->nrows, n, sums ? 1 : 0, sums,
                               p->dtype == ATTN_F32 ? rms_bwd_f32
                                                    : rms_bwd_f64,
                               (void *)p, 4 * rb, 5.0};
    const attn_status st = attn__rows_run(&job, ex);
    if (st == ATTN_OK && sums)
        attn__store_vec(p->dtype, &p->dweight, sums, n);
    free(sums);
    return st;
}
