/*
 * elementwise/softmax.c -- softmax along rows (the tutorial's softmax).
 * Instantiated for float and double from one macro body.
 */
#include <math.h>
#include <stdint.h>

#include "attn.h"
#include "util.h"

/* body of a public entry: the float or double instance, else EINVAL */
#define DISPATCH(dtype, call_f32, call_f64)                                    \
    do {                                                                       \
        if ((dtype) == ATTN_F32)                                               \
            call_f32;                                                          \
        else if ((dtype) == ATTN_F64)                                          \
            call_f64;                                                          \
        else                                                                   \
            return ATTN_EINVAL;                                                \
        return ATTN_OK;                                                        \
    } while (0)

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
    DISPATCH(dtype, softmax_f32(out, in, nrows, n), softmax_f64(out, in, nrows, n));
}

/* ------------------------------------------------------------------------ */
/* softmax backward along rows: dx = y * (dy - sum_j dy_j * y_j)             */
/*   the sum in double; dy - s first, then times y (one rounding less than  */
/*   y*dy - y*s). Reads dy_j, y_j before writing dx_j: dx may be exactly dy */
/*   or exactly y (same memory, same strides).                              */
/* ------------------------------------------------------------------------ */
#define DEFINE_SOFTMAX_BACKWARD(T, SFX)                                        \
static void softmax_backward_##SFX(attn_mat dx, attn_mat dy, attn_mat y,       \
                                   size_t nrows, size_t n)                     \
{                                                                              \
    for (size_t r = 0; r < nrows; r++) {                                       \
        const T *dy_r = (const T *)dy.data + OFF(dy, r);                       \
        const T *y_r = (const T *)y.data + OFF(y, r);                          \
        T *dx_r = (T *)dx.data + OFF(dx, r);                                   \
        double s = 0.0;                                                        \
        for (size_t j = 0; j < n; j++)                                         \
            s += (double)dy_r[(ptrdiff_t)j * dy.s1] *                          \
                 (double)y_r[(ptrdiff_t)j * y.s1];                             \
        const T ts = (T)s;                                                     \
        for (size_t j = 0; j < n; j++) {                                       \
            const T yj = y_r[(ptrdiff_t)j * y.s1];                             \
            const T gj = dy_r[(ptrdiff_t)j * dy.s1];                           \
            dx_r[(ptrdiff_t)j * dx.s1] = yj * (gj - ts);                       \
        }                                                                      \
    }                                                                          \
}

DEFINE_SOFTMAX_BACKWARD(float, f32)
DEFINE_SOFTMAX_BACKWARD(double, f64)

attn_status attn_softmax_backward(attn_dtype dtype, attn_mat dx, attn_mat dy,
                                  attn_mat y, size_t nrows, size_t n)
{
    DISPATCH(dtype, softmax_backward_f32(dx, dy, y, nrows, n), softmax_backward_f64(dx, dy, y, nrows, n));
}

/* ------------------------------------------------------------------------ */
/* softmax Jacobian: J(r, i, j) = y_i * ([i == j] - y_j) = diag(y) - y y^T   */
/* ------------------------------------------------------------------------ */
#define DEFINE_SOFTMAX_JACOBIAN(T, SFX)                                        \
static void softmax_jacobian_##SFX(attn_mat jac, attn_mat y, size_t nrows,     \
                                   size_t n)                                   \
{                                                                              \
    for (size_t r = 0; r < nrows; r++) {                                       \
        const T *y_r = (const T *)y.data + OFF(y, r);                          \
        T *j_r = (T *)jac.data + OFF(jac, r);                                  \
        for (size_t i = 0; i < n; i++) {                                       \
            const T yi = y_r[(ptrdiff_t)i * y.s1];                             \
            T *row = j_r + (ptrdiff_t)i * jac.s0;                              \
            for (size_t j = 0; j < n; j++)                                     \
                row[(ptrdiff_t)j * jac.s1] =                                   \
                    yi * ((T)(i == j) - y_r[(ptrdiff_t)j * y.s1]);             \
        }                                                                      \
    }                                                                          \
}

DEFINE_SOFTMAX_JACOBIAN(float, f32)
DEFINE_SOFTMAX_JACOBIAN(double, f64)

attn_status attn_softmax_jacobian(attn_dtype dtype, attn_mat jac, attn_mat y,
                                  size_t nrows, size_t n)
{
    DISPATCH(dtype, softmax_jacobian_f32(jac, y, nrows, n), softmax_jacobian_f64(jac, y, nrows, n));
}
