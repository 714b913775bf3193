/*
 * layer/rms.c -- RMS normalisation (Llama's RMSNorm), forward and
 * backward, over the rows driver of rows.c. The per-row code is
 * rms_body.h, instantiated for float and double.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "layer/lanes.h"
#include "layer/rows.h"

#if defined(__GNUC__)
#define RMS_INLINE __attribute__((always_inline))
#else
#define RMS_INLINE
#endif

#define T float
#define SFX f32
#include "layer/rms_body.h"
#define T double
#define SFX f64
#include "layer/rms_body.h"

attn_status attn_rms_norm(const attn_rms *p, const attn_exec *ex)
{
    if (!p || (p->dtype != ATTN_F32 && p->dtype != ATTN_F64))
        return ATTN_EINVAL;
    if (p->n == 0)
        return ATTN_OK;
    attn_rows_fn fn = p->dtype == ATTN_F32 ? rms_fwd_f32 : rms_fwd_f64;
    return attn__rows_run(p->nrows, p->n, 0, NULL, fn, (void *)p, 3.0, ex);
}

attn_status attn_rms_norm_backward(const attn_rms_grad *p,
                                   const attn_exec *ex)
{
    if (!p || (p->dtype != ATTN_F32 && p->dtype != ATTN_F64))
        return ATTN_EINVAL;
    size_t n = p->n;
    double *sums = NULL;
    if (p->dweight.data && n) {
        if (n > SIZE_MAX / sizeof(double))
            return ATTN_ENOMEM;
        if (!(sums = malloc(n * sizeof(double))))
            return ATTN_ENOMEM;
    }
    attn_rows_fn fn = p->dtype == ATTN_F32 ? rms_bwd_f32 : rms_bwd_f64;
    attn_status st = ATTN_OK;
    if (n)
        st = attn__rows_run(p->nrows, n, sums ? 1 : 0, sums, fn, (void *)p,
                            5.0, ex);
    if (st == ATTN_OK && sums)
        attn__store_vec(p->dtype, p->dweight, sums, n);
    free(sums);
    return st;
}
