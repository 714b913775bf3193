/*
 * positional/posenc.c -- the sinusoidal positional encoding of the
 * tutorials, computed in double (simd/scalar.h's functions: the same bits
 * on every system) and stored in the output's precision. The frequency
 * of column pair i is computed as the tutorial writes it,
 * exp(2i * -(log(base) / D)). On the row driver (rows/rows.h): row r is
 * position t = r / B of batch row b = r % B, so a thread's rows share
 * their position's sines and cosines.
 */
#include <stdint.h>
#include <stdlib.h>

#include "rows/rows.h"
#include "simd/scalar.h"

typedef struct {
    const attn_posenc_args *a;
    const double *freq; /* D / 2 + 1                                    */
} posenc_ctx;

#define DEFINE_POSENC(T, SFX)                                                   \
static void posenc_row_##SFX(T *y, size_t D, const double *pe,                  \
                             int accumulate)                                    \
{                                                                               \
    for (size_t c = 0; c < D; c++)                                              \
        y[c] = accumulate ? (T)((double)y[c] + pe[c]) : (T)pe[c];               \
}
DEFINE_POSENC(float, f32)
DEFINE_POSENC(double, f64)

/* rows [r0, r1) (scratch: the position's D values, then 1 staged row)  */
static void posenc_rows(void *ctx, size_t r0, size_t r1, double *acc,
                        void *scratch)
{
    (void)acc;
    const posenc_ctx *c = ctx;
    const attn_posenc_args *a = c->a;
    const attn_dtype dt = a->dtype;
    const size_t D = a->D;
    double *pe = scratch;
    char *buf = (char *)scratch + attn__row_bytes(ATTN_F64, D);
    size_t have = SIZE_MAX;
    for (size_t r = r0; r < r1; r++) {
        const size_t t = r / a->B, b = r % a->B;
        if (t != have) {
            const double pos = (double)t + a->offset;
            for (size_t i = 0; 2 * i < D; i++) {
                double s, co;
                attn_sincos(pos * c->freq[i], &s, &co);
                pe[2 * i] = s;
                if (2 * i + 1 < D)
                    pe[2 * i + 1] = co;
            }
            have = t;
        }
        const ptrdiff_t oo = OFF(a->out, b) + (ptrdiff_t)t * a->out.s0;
        /* accumulate: the row read (into buf when strided), then written */
        void *y = a->accumulate
            ? (void *)attn__row_in(&a->out, dt, oo, D, buf)
            : attn__row_out(&a->out, dt, oo, buf);
        if (dt == ATTN_F64)
            posenc_row_f64(y, D, pe, a->accumulate);
        else
            posenc_row_f32(y, D, pe, a->accumulate);
        attn__row_done(&a->out, dt, oo, D, y);
    }
}

attn_status attn_posenc(const attn_posenc_args *a, const attn_exec *ex)
{
    if (!a || a->out.store != ATTN_ST_NATIVE) /* no 16-bit encoding */
        return ATTN_EINVAL;
    const size_t D = a->D, npairs = D / 2 + 1;
    if (D == 0 || a->B == 0 || a->T == 0)
        return ATTN_OK;
    /* a row's encoding (double), beside its staged row                  */
    const size_t pb = attn__row_bytes(ATTN_F64, D);
    if (!pb || a->T > SIZE_MAX / a->B || npairs > SIZE_MAX / sizeof(double))
        return ATTN_ENOMEM;
    double *freq = malloc(npairs * sizeof(double));
    if (!freq)
        return ATTN_ENOMEM;
    const double step = -(attn_log(a->base) / (double)D);
    for (size_t i = 0; i < npairs; i++)
        freq[i] = attn_exp((double)(2 * i) * step);
    posenc_ctx c = {a, freq};
    const attn_rows_job job = {a->dtype, a->T * a->B, D, posenc_rows, &c,
                               4.0, 1, pb, {&a->out}, {0}};
    const attn_status st = attn__rows_run(&job, ex);
    free(freq);
    return st;
}
