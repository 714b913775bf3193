/*
 * elementwise/softmax.c -- softmax along rows (the tutorial's softmax).
 * Instantiated for float and double from one macro body. float16 and
 * bfloat16 operands (float32 calls only) run the float code one row at a
 * time on rows staged in float scratch (layer/row16.h): the float32
 * result of the widened inputs, rounded once.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "attn.h"
#include "layer/row16.h"
#include "util.h"

/* rows [r0, r1) of a float32 kernel over operands m[0..) (outputs first) */
typedef void (*rows_f32_fn)(const attn_mat *m, size_t r0, size_t r1,
                            size_t n);

/* a float32 call with 16-bit operands: m[0 .. nout) are written, the
 * rest read; each row staged in float scratch, fn run on it            */
static attn_status staged(rows_f32_fn fn, const attn_mat *m, int nops,
                          int nout, size_t nrows, size_t n)
{
    attn_mat loc[ATTN_ROW16_MAX];
    attn_row16 s = {0};
    s.n = n;
    for (int i = 0; i < nops; i++) {
        loc[i] = m[i];
        attn__row16_add(&s, &loc[i], i < nout, 0);
    }
    if (n > SIZE_MAX / sizeof(float) / ATTN_ROW16_MAX)
        return ATTN_ENOMEM;
    float *buf = malloc(attn__row16_floats(&s) * sizeof(float) + 1);
    if (!buf)
        return ATTN_ENOMEM;
    attn__row16_begin(&s, buf);
    for (size_t r = 0; r < nrows; r++) {
        attn__row16_in(&s, r);
        fn(loc, r, r + 1, n);
        attn__row16_out(&s, r);
    }
    free(buf);
    return ATTN_OK;
}

/* a float32 call of fn over m[0 .. nops): native, or staged (16-bit)   */
static attn_status run_f32(rows_f32_fn fn, const attn_mat *m, int nops,
                           int nout, size_t nrows, size_t n)
{
    const attn_mat *ops[ATTN_ROW16_MAX];
    for (int i = 0; i < nops; i++)
        ops[i] = &m[i];
    const int h16 = attn__any16(ATTN_F32, ops, nops);
    if (h16 < 0)
        return ATTN_EINVAL;
    if (h16)
        return staged(fn, m, nops, nout, nrows, n);
    fn(m, 0, nrows, n);
    return ATTN_OK;
}

/* 1 when no operand is 16-bit (a float64 call, or the jacobian)       */
static int no16(attn_dtype dtype, const attn_mat *m, int nops)
{
    const attn_mat *ops[ATTN_ROW16_MAX];
    for (int i = 0; i < nops; i++)
        ops[i] = &m[i];
    return attn__any16(dtype, ops, nops) == 0;
}

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
static void softmax_##SFX(attn_mat out, attn_mat in, size_t r0, size_t r1,      \
                          size_t n)                                             \
{                                                                               \
    for (size_t r = r0; r < r1; r++) {                                          \
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

static void softmax_ops(const attn_mat *m, size_t r0, size_t r1, size_t n)
{
    softmax_f32(m[0], m[1], r0, r1, n);
}

attn_status attn_softmax(attn_dtype dtype, attn_mat out, attn_mat in,
                         size_t nrows, size_t n)
{
    const attn_mat m[2] = {out, in};
    if (dtype == ATTN_F32)
        return run_f32(softmax_ops, m, 2, 1, nrows, n);
    if (dtype != ATTN_F64 || !no16(dtype, m, 2))
        return ATTN_EINVAL;
    softmax_f64(out, in, 0, nrows, n);
    return ATTN_OK;
}

/* ------------------------------------------------------------------------ */
/* softmax backward along rows: dx = y * (dy - sum_j dy_j * y_j)             */
/*   the sum in double; dy - s first, then times y (one rounding less than  */
/*   y*dy - y*s). Reads dy_j, y_j before writing dx_j: dx may be exactly dy */
/*   or exactly y (same memory, same strides).                              */
/* ------------------------------------------------------------------------ */
#define DEFINE_SOFTMAX_BACKWARD(T, SFX)                                        \
static void softmax_backward_##SFX(attn_mat dx, attn_mat dy, attn_mat y,       \
                                   size_t r0, size_t r1, size_t n)             \
{                                                                              \
    for (size_t r = r0; r < r1; r++) {                                         \
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

static void softmax_backward_ops(const attn_mat *m, size_t r0, size_t r1,
                                 size_t n)
{
    softmax_backward_f32(m[0], m[1], m[2], r0, r1, n);
}

attn_status attn_softmax_backward(attn_dtype dtype, attn_mat dx, attn_mat dy,
                                  attn_mat y, size_t nrows, size_t n)
{
    const attn_mat m[3] = {dx, dy, y};
    if (dtype == ATTN_F32)
        return run_f32(softmax_backward_ops, m, 3, 1, nrows, n);
    if (dtype != ATTN_F64 || !no16(dtype, m, 3))
        return ATTN_EINVAL;
    softmax_backward_f64(dx, dy, y, 0, nrows, n);
    return ATTN_OK;
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
    const attn_mat m[2] = {jac, y};
    if (!no16(dtype, m, 2)) /* float16 / bfloat16: not for the jacobian */
        return ATTN_EINVAL;
    DISPATCH(dtype, softmax_jacobian_f32(jac, y, nrows, n), softmax_jacobian_f64(jac, y, nrows, n));
}
