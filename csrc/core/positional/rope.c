/*
 * positional/rope.c -- rotary position embedding (RoPE), both conventions.
 *
 * For batch row b, position t and feature pair i < E/2:
 *     theta = (offset + t) * base^(-2i/E)
 *     (y_a, y_b) = (x_a cos theta - x_b sin theta, x_b cos theta + x_a sin theta)
 * with (a, b) = (i, i + E/2) (rotate-half: GPT-NeoX, Llama) or
 * (2i, 2i + 1) (interleaved: GPT-J). Angles, cos, sin (simd/scalar.h:
 * the same bits on every system) and the rotation are computed in double
 * and rounded once to the output's type. On the row driver
 * (rows/rows.h): row r is position t = r / B of batch row b = r % B, so a
 * thread's rows share their position's table; each row is read whole
 * before it is written (out may be in).
 */
#include <stdint.h>
#include <stdlib.h>

#include "rows/rows.h"
#include "simd/scalar.h"

typedef struct {
    const attn_rope_args *a;
    const double *freq; /* E/2                                          */
} rope_ctx;

#define DEFINE_ROPE(T, SFX)                                                     \
static void rope_row_##SFX(T *y, const T *x, size_t E, const double *cs,        \
                           int interleaved)                                     \
{                                                                               \
    const size_t half = E / 2;                                                  \
    const size_t da = interleaved ? 2 : 1;         /* step of a over i */      \
    const size_t db = interleaved ? 1 : half;      /* b - a            */      \
    for (size_t i = 0; i < half; i++) {                                         \
        const size_t a = i * da;                                                \
        const double xa = x[a], xb = x[a + db];                                 \
        const double c = cs[2 * i], s = cs[2 * i + 1];                          \
        y[a] = (T)(xa * c - xb * s);                                            \
        y[a + db] = (T)(xb * c + xa * s);                                       \
    }                                                                           \
}
DEFINE_ROPE(float, f32)
DEFINE_ROPE(double, f64)

/* rows [r0, r1) (scratch: the position's table, E doubles, then 2
 * staged rows)                                                          */
static void rope_rows(void *ctx, size_t r0, size_t r1, double *acc,
                      void *scratch)
{
    (void)acc;
    const rope_ctx *c = ctx;
    const attn_rope_args *a = c->a;
    const attn_dtype dt = a->dtype;
    const size_t E = a->E, half = E / 2, rb = attn__row_bytes(dt, E);
    double *cs = scratch;
    char *buf = (char *)scratch + attn__row_bytes(ATTN_F64, E);
    size_t have = SIZE_MAX; /* the position the table holds */
    for (size_t r = r0; r < r1; r++) {
        const size_t t = r / a->B, b = r % a->B;
        if (t != have) {
            const double pos = a->offset + (double)t;
            for (size_t i = 0; i < half; i++)
                attn_sincos(pos * c->freq[i], &cs[2 * i + 1], &cs[2 * i]);
            have = t;
        }
        const ptrdiff_t oi = OFF(a->in, b) + (ptrdiff_t)t * a->in.s0;
        const ptrdiff_t oo = OFF(a->out, b) + (ptrdiff_t)t * a->out.s0;
        const void *x = attn__row_in(&a->in, dt, oi, E, buf);
        void *y = attn__row_out(&a->out, dt, oo, buf + rb);
        if (dt == ATTN_F64)
            rope_row_f64(y, x, E, cs, a->interleaved);
        else
            rope_row_f32(y, x, E, cs, a->interleaved);
        attn__row_done(&a->out, dt, oo, E, y);
    }
}

attn_status attn_rope(const attn_rope_args *a, const attn_exec *ex)
{
    if (!a || a->E % 2)
        return ATTN_EINVAL;
    const size_t E = a->E, half = E / 2;
    if (E == 0 || a->B == 0 || a->T == 0)
        return ATTN_OK;
    /* a row's cos / sin table (double), beside its two staged rows     */
    const size_t tb = attn__row_bytes(ATTN_F64, E);
    if (!tb || a->T > SIZE_MAX / a->B)
        return ATTN_ENOMEM;
    double *freq = malloc(half * sizeof(double));
    if (!freq)
        return ATTN_ENOMEM;
    for (size_t i = 0; i < half; i++)
        freq[i] = attn_pow(a->base, -(double)(2 * i) / (double)E);
    rope_ctx c = {a, freq};
    const attn_rows_job job = {a->dtype, a->T * a->B, E, rope_rows, &c, 6.0,
                               2, tb, {&a->out, &a->in}, {0}};
    const attn_status st = attn__rows_run(&job, ex);
    free(freq);
    return st;
}
