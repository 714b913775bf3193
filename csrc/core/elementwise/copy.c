/*
 * elementwise/copy.c -- batched strided 2-D copy (combine_heads moves data
 * with it), on the row driver (rows/rows.h): row r = b * rows + i.
 */
#include <stddef.h>
#include <string.h>

#include "rows/rows.h"

static void copy_rows(void *ctx, size_t r0, size_t r1, double *acc,
                      void *scratch)
{
    (void)acc;
    const attn_copy_args *a = ctx;
    const size_t n = a->cols;
    const size_t esz = a->dtype == ATTN_F64 ? sizeof(double) : sizeof(float);
    for (size_t r = r0; r < r1; r++) {
        const void *x = attn__row_in(&a->in, a->dtype,
                                     attn__row_bt(&a->in, r, a->rows), n,
                                     scratch);
        const ptrdiff_t oo = attn__row_bt(&a->out, r, a->rows);
        /* out unit-stride: copied straight there; else scattered from x */
        void *y = attn__row_out(&a->out, a->dtype, oo, (void *)x);
        if (y != x)
            memcpy(y, x, n * esz);
        attn__row_done(&a->out, a->dtype, oo, n, y);
    }
}

attn_status attn_copy2d(const attn_copy_args *a, const attn_exec *ex)
{
    if (!a || a->out.store != ATTN_ST_NATIVE || a->in.store != ATTN_ST_NATIVE)
        return ATTN_EINVAL; /* no 16-bit copy */
    if (a->cols == 0 || a->rows == 0 || a->B == 0)
        return ATTN_OK;
    if (a->B > SIZE_MAX / a->rows)
        return ATTN_ENOMEM;
    const attn_rows_job job = {a->dtype, a->B * a->rows, a->cols, copy_rows,
                               (void *)a, 1.0, 1, 0, {&a->out, &a->in}, {0}};
    return attn__rows_run(&job, ex);
}
