/*
 * layer/norm.c -- layer normalisation (the tutorial's form and PyTorch's)
 * and RMS normalisation (Llama's RMSNorm), forward and backward, on the
 * row driver (rows/rows.h). The per-row code is norm_body.h, instantiated
 * for float and double; it sees unit-stride rows of its type whatever
 * the operands' strides and storage (the storage layer).
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
    const attn_rows_job job = {p->dtype, p->nrows, p->n,
                               p->dtype == ATTN_F32 ? ln_fwd_f32 : ln_fwd_f64,
                               (void *)p, 4.0, 7, 0,
                               {&p->y, &p->sum, &p->x, &p->res, &p->shift,
                                &p->weight, &p->bias},
                               {0}};
    return attn__rows_run(&job, ex);
}

attn_status attn_layer_norm_backward(const attn_norm_grad *p,
                                     const attn_exec *ex)
{
    if (!p)
        return ATTN_EINVAL;
    const attn_rows_job job = {p->dtype, p->nrows, p->n,
                               p->dtype == ATTN_F32 ? ln_bwd_f32 : ln_bwd_f64,
                               (void *)p, 6.0, 4, 0,
                               {&p->dx, &p->dweight, &p->dbias, &p->dy, &p->s,
                                &p->weight},
                               {&p->dweight, &p->dbias}};
    return attn__rows_run(&job, ex);
}

attn_status attn_rms_norm(const attn_rms *p, const attn_exec *ex)
{
    if (!p)
        return ATTN_EINVAL;
    const attn_rows_job job = {p->dtype, p->nrows, p->n,
                               p->dtype == ATTN_F32 ? rms_fwd_f32
                                                    : rms_fwd_f64,
                               (void *)p, 3.0, 3, 0,
                               {&p->y, &p->x, &p->weight}, {0}};
    return attn__rows_run(&job, ex);
}

attn_status attn_rms_norm_backward(const attn_rms_grad *p,
                                   const attn_exec *ex)
{
    if (!p)
        return ATTN_EINVAL;
    const attn_rows_job job = {p->dtype, p->nrows, p->n,
                               p->dtype == ATTN_F32 ? rms_bwd_f32
                                                    : rms_bwd_f64,
                               (void *)p, 5.0, 4, 0,
                               {&p->dx, &p->dweight, &p->dy, &p->x,
                                &p->weight},
                               {&p->dweight}};
    return attn__rows_run(&job, ex);
}
