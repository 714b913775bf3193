/*
 * layer/norm.c -- layer normalisation (the tutorial's form and PyTorch's),
 * forward and backward, over the rows driver of rows.c. The per-row code
 * is norm_body.h, instantiated for float and double.
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

attn_status attn_layer_norm(const attn_norm *p, const attn_exec *ex)
{
    if (!p || (p->dtype != ATTN_F32 && p->dtype != ATTN_F64))
        return ATTN_EINVAL;
    if (p->n == 0)
        return ATTN_OK;
    attn_rows_fn fn = p->dtype == ATTN_F32 ? ln_fwd_f32 : ln_fwd_f64;
    return attn__rows_run(p->nrows, p->n, 0, NULL, fn, (void *)p, 4.0, ex);
}

attn_status attn_layer_norm_backward(const attn_norm_grad *p,
                                     const attn_exec *ex)
{
    if (!p || (p->dtype != ATTN_F32 && p->dtype != ATTN_F64))
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
        st = attn__rows_run(p->nrows, n, want ? 2 : 0, sums, fn, (void *)p,
                            6.0, ex);
    if (st == ATTN_OK && sums) {
        attn__store_vec(p->dtype, p->dweight, sums, n);
        attn__store_vec(p->dtype, p->dbias, sums + n, n);
    }
    free(sums);
    return st;
}
