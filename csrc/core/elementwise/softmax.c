/*
 * elementwise/softmax.c -- softmax along rows (the tutorial's softmax).
 * Instantiated for float and double from one macro body.
 */
#include <math.h>
#include <stdint.h>

#include "attn.h"
#include "util.h"

/* ------------------------------------------------------------------------ */
/* softmax along rows: in (nrows, n) -> out (nrows, n), in place allowed.    */
/*   1. m = max(x) (NaN if any x is NaN, as np.max)                          */
/*   2. out = exp(x - m), sum                                                */
/*   3. out /= sum                                                           */
/* ------------------------------------------------------------------------ */
#define DEFINE_SOFTMAX(T, SFX, EXP)                                             \
static void softmax_##SFX(attn_mat out, attn_mat in, size_t nrows, size_t n)    \
{                                                                               \
    for (size_t r = 0; r < nrows; r++) {                                        \
        const T *x_r = (const T *)in.data + OFF(in, r);                         \
        T *y_r = (T *)out.data + OFF(out, r);                                   \
        T m = (T)-INFINITY;                                                     \
        for (size_t j = 0; j < n; j++) {                                        \
            T x = x_r[(ptrdiff_t)j * in.s1];                                    \
            if (isnan(x)) {                                                     \
                m = x;                                                          \
                break;                                                          \
            }                                                                   \
            if (x > m)                                                          \
                m = x;                                                          \
        }                                                                       \
        T sum = 0;                                                              \
        for (size_t j = 0; j < n; j++) {                                        \
            T e = EXP(x_r[(ptrdiff_t)j * in.s1] - m);                           \
            y_r[(ptrdiff_t)j * out.s1] = e;                                     \
            sum += e;                                                           \
        }                                                                       \
        for (size_t j = 0; j < n; j++)                                          \
            y_r[(ptrdiff_t)j * out.s1] /= sum;                                  \
    }                                                                           \
}

DEFINE_SOFTMAX(float, f32, expf)
DEFINE_SOFTMAX(double, f64, exp)

attn_status attn_softmax(attn_dtype dtype, attn_mat out, attn_mat in,
                         size_t nrows, size_t n)
{
    if (dtype == ATTN_F32)
        softmax_f32(out, in, nrows, n);
    else if (dtype == ATTN_F64)
        softmax_f64(out, in, nrows, n);
    else
        return ATTN_EINVAL;
    return ATTN_OK;
}
