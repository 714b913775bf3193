/*
 * positional/rope.c -- rotary position embedding (RoPE), both conventions.
 *
 * For batch row b, position t and feature pair i < E/2:
 *     theta = (offset + t) * base^(-2i/E)
 *     (y_a, y_b) = (x_a cos theta - x_b sin theta, x_b cos theta + x_a sin theta)
 * with (a, b) = (i, i + E/2) (rotate-half: GPT-NeoX, Llama) or
 * (2i, 2i + 1) (interleaved: GPT-J). Angles, cos, sin and the rotation are
 * computed in double and rounded once to the output's type. Each pair is
 * read whole before it is written, so out may be the same memory as in.
 * A float16 / bfloat16 operand (float32 calls) is staged a row at a time
 * in float scratch: the float32 result, rounded once to 16 bits.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "attn.h"
#include "layer/row16.h"
#include "util.h"

/* ------------------------------------------------------------------------ */
/* one row x (E elements, stride xs) into y (stride ys): cs[2i] = cos,      */
/* cs[2i+1] = sin of the row's position                                     */
/* ------------------------------------------------------------------------ */
#define DEFINE_ROPE(T, SFX)                                                     \
static void rope_row_##SFX(T *y, ptrdiff_t ys, const T *x, ptrdiff_t xs,        \
                           size_t E, const double *cs, int interleaved)         \
{                                                                               \
    const size_t half = E / 2;                                                  \
    const ptrdiff_t da = interleaved ? 2 : 1;        /* step of a over i */     \
    const ptrdiff_t db = interleaved ? 1 : (ptrdiff_t)half; /* b - a     */     \
    for (size_t i = 0; i < half; i++) {                                         \
        const ptrdiff_t a = (ptrdiff_t)i * da;                                  \
        const double xa = x[a * xs];                                            \
        const double xb = x[(a + db) * xs];                                     \
        const double c = cs[2 * i], s = cs[2 * i + 1];                          \
        y[a * ys] = (T)(xa * c - xb * s);                                       \
        y[(a + db) * ys] = (T)(xb * c + xa * s);                                \
    }                                                                           \
}

DEFINE_ROPE(float, f32)
DEFINE_ROPE(double, f64)

/* rope_row_f32 on unit-stride rows that cannot overlap (one of them is a
 * staged 16-bit row): the same operations on each element, in loops the
 * compiler vectorises                                                    */
static void rope_row_unit(float *restrict y, const float *restrict x,
                          size_t E, const double *restrict cs,
                          int interleaved)
{
    const size_t half = E / 2;
    if (interleaved) {
        for (size_t i = 0; i < half; i++) {
            const double xa = x[2 * i], xb = x[2 * i + 1];
            const double c = cs[2 * i], s = cs[2 * i + 1];
            y[2 * i] = (float)(xa * c - xb * s);
            y[2 * i + 1] = (float)(xb * c + xa * s);
        }
        return;
    }
    for (size_t i = 0; i < half; i++) {
        const double xa = x[i], xb = x[i + half];
        const double c = cs[2 * i], s = cs[2 * i + 1];
        y[i] = (float)(xa * c - xb * s);
        y[i + half] = (float)(xb * c + xa * s);
    }
}

/* position t of every batch row b; stage: 2 E floats of scratch, used for
 * a float16 / bfloat16 operand (the row widened, the float32 result
 * rounded once)                                                          */
static void rope_t(attn_dtype dtype, attn_mat out, attn_mat in, size_t B,
                   size_t t, size_t E, const double *cs, int interleaved,
                   float *stage)
{
    for (size_t b = 0; b < B; b++) {
        const ptrdiff_t oi = OFF(in, b) + (ptrdiff_t)t * in.s0;
        const ptrdiff_t oo = OFF(out, b) + (ptrdiff_t)t * out.s0;
        if (dtype == ATTN_F64) {
            rope_row_f64((double *)out.data + oo, out.s1,
                         (const double *)in.data + oi, in.s1, E, cs,
                         interleaved);
            continue;
        }
        const float *x = (const float *)in.data + oi;
        float *y = (float *)out.data + oo;
        ptrdiff_t xs = in.s1, ys = out.s1;
        if (in.store != ATTN_ST_NATIVE) {
            attn__row16_load(in.store, (const uint16_t *)in.data + oi, in.s1,
                             E, stage);
            x = stage, xs = 1;
        }
        if (out.store != ATTN_ST_NATIVE)
            y = stage + E, ys = 1;
        if (xs == 1 && ys == 1 && (x == stage || y == stage + E))
            rope_row_unit(y, x, E, cs, interleaved);
        else
            rope_row_f32(y, ys, x, xs, E, cs, interleaved);
        if (out.store != ATTN_ST_NATIVE)
            attn__row16_store(out.store, (uint16_t *)out.data + oo, out.s1,
                              E, y);
    }
}

attn_status attn_rope(attn_dtype dtype, attn_mat out, attn_mat in, size_t B,
                      size_t T, size_t E, double offset, double base,
                      int interleaved)
{
    const attn_mat *ops[2] = {&out, &in};
    if ((dtype != ATTN_F32 && dtype != ATTN_F64) || E % 2
        || attn__any16(dtype, ops, 2) < 0)
        return ATTN_EINVAL;
    const size_t half = E / 2;
    /* freq[i], the table cs[2i], cs[2i+1] of one position, and the stage
     * (2 E floats: the room of 2 half doubles)                            */
    if (half > SIZE_MAX / (5 * sizeof(double)) - 1)
        return ATTN_ENOMEM;
    double *freq = malloc((5 * half + 1) * sizeof(double));
    if (!freq)
        return ATTN_ENOMEM;
    double *cs = freq + half;
    float *stage = (float *)(cs + 2 * half + 1);
    for (size_t i = 0; i < half; i++)
        freq[i] = pow(base, -(double)(2 * i) / (double)E);
    for (size_t t = 0; t < T; t++) {
        const double pos = offset + (double)t;
        for (size_t i = 0; i < half; i++) {
            const double theta = pos * freq[i];
            cs[2 * i] = cos(theta);
            cs[2 * i + 1] = sin(theta);
        }
        rope_t(dtype, out, in, B, t, E, cs, interleaved, stage);
    }
    free(freq);
    return ATTN_OK;
}
