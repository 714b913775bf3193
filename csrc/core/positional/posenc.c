/*
 * positional/posenc.c -- the sinusoidal positional encoding of the
 * tutorials, computed in double and stored in the output's precision.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "attn.h"
#include "layer/row16.h"
#include "util.h"

/* ------------------------------------------------------------------------ */
/* positional encoding: out (B, T, D), PE(t, c) per attn.h, in double.       */
/* The frequency of column pair i is computed as the tutorial does,          */
/*   exp(2i * -(log(base) / D)),  so the float64 numbers are the tutorial's. */
/* ------------------------------------------------------------------------ */
#define DEFINE_POSENC(T, SFX)                                                   \
static void posenc_##SFX(attn_mat out, size_t B, size_t Tn, size_t D,           \
                         double offset, const double *freq, int accumulate)     \
{                                                                               \
    for (size_t b = 0; b < B; b++) {                                            \
        T *o_b = (T *)out.data + OFF(out, b);                                   \
        for (size_t t = 0; t < Tn; t++) {                                       \
            T *o_bt = o_b + (ptrdiff_t)t * out.s0;                              \
            double pos = (double)t + offset;                                    \
            for (size_t c = 0; c < D; c++) {                                    \
                double angle = pos * freq[c / 2];                               \
                double pe = (c % 2 == 0) ? sin(angle) : cos(angle);             \
                T *dst = o_bt + (ptrdiff_t)c * out.s1;                          \
                *dst = accumulate ? (T)((double)*dst + pe) : (T)pe;             \
            }                                                                   \
        }                                                                       \
    }                                                                           \
}

DEFINE_POSENC(float, f32)
DEFINE_POSENC(double, f64)

attn_status attn_posenc(attn_dtype dtype, attn_mat out, size_t B, size_t T,
                        size_t D, double offset, double base, int accumulate)
{
    const attn_mat *ops[1] = {&out};
    if (attn__any16(dtype, ops, 1) != 0) /* no 16-bit encoding */
        return ATTN_EINVAL;
    size_t npairs = D / 2 + 1;
    if (npairs > SIZE_MAX / sizeof(double))
        return ATTN_ENOMEM;
    double *freq = malloc(npairs * sizeof(double));
    if (!freq)
        return ATTN_ENOMEM;
    const double step = -(log(base) / (double)D);
    for (size_t i = 0; i < npairs; i++)
        freq[i] = exp((double)(2 * i) * step);
    attn_status st = ATTN_OK;
    if (dtype == ATTN_F32)
        posenc_f32(out, B, T, D, offset, freq, accumulate);
    else if (dtype == ATTN_F64)
        posenc_f64(out, B, T, D, offset, freq, accumulate);
    else
        st = ATTN_EINVAL;
    free(freq);
    return st;
}
