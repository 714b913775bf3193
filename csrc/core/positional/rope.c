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
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "attn.h"
#include "util.h"

/* ------------------------------------------------------------------------ */
/* one position t of every batch row: cs[2i] = cos, cs[2i+1] = sin          */
/* ------------------------------------------------------------------------ */
#define DEFINE_ROPE(T, SFX)                                                     \
static void rope_##SFX(attn_mat out, attn_mat in, size_t B, size_t t,           \
                       size_t E, const double *cs, int interleaved)             \
{                                                                               \
    const size_t half = E / 2;                                                  \
    const ptrdiff_t da = interleaved ? 2 : 1;        /* step of a over i */     \
    const ptrdiff_t db = interleaved ? 1 : (ptrdiff_t)half; /* b - a     */     \
    for (size_t b = 0; b < B; b++) {                                            \
        const T *x_bt = (const T *)in.data + OFF(in, b)                         \
                        + (ptrdiff_t)t * in.s0;                                 \
        T *y_bt = (T *)out.data + OFF(out, b) + (ptrdiff_t)t * out.s0;          \
        for (size_t i = 0; i < half; i++) {                                     \
            const ptrdiff_t a = (ptrdiff_t)i * da;                              \
            const double xa = x_bt[a * in.s1];                                  \
            const double xb = x_bt[(a + db) * in.s1];                           \
            const double c = cs[2 * i], s = cs[2 * i + 1];                      \
            y_bt[a * out.s1] = (T)(xa * c - xb * s);                            \
            y_bt[(a + db) * out.s1] = (T)(xb * c + xa * s);                     \
        }                                                                       \
    }                                                                           \
}

DEFINE_ROPE(float, f32)
DEFINE_ROPE(double, f64)

attn_status attn_rope(attn_dtype dtype, attn_mat out, attn_mat in, size_t B,
                      size_t T, size_t E, double offset, double base,
                      int interleaved)
{
    if ((dtype != ATTN_F32 && dtype != ATTN_F64) || E % 2)
        return ATTN_EINVAL;
    const size_t half = E / 2;
    /* freq[i] and the table cs[2i], cs[2i+1] of one position */
    if (half > SIZE_MAX / (3 * sizeof(double)))
        return ATTN_ENOMEM;
    double *freq = malloc((3 * half + 1) * sizeof(double));
    if (!freq)
        return ATTN_ENOMEM;
    double *cs = freq + half;
    for (size_t i = 0; i < half; i++)
        freq[i] = pow(base, -(double)(2 * i) / (double)E);
    for (size_t t = 0; t < T; t++) {
        const double pos = offset + (double)t;
        for (size_t i = 0; i < half; i++) {
            const double theta = pos * freq[i];
            cs[2 * i] = cos(theta);
            cs[2 * i + 1] = sin(theta);
        }
        if (dtype == ATTN_F32)
            rope_f32(out, in, B, t, E, cs, interleaved);
        else
            rope_f64(out, in, B, t, E, cs, interleaved);
    }
    free(freq);
    return ATTN_OK;
}
