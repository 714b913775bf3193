/*
 * elementwise/softmax.c -- softmax along rows (the tutorial's softmax),
 * its backward pass and its Jacobian, on the row driver (rows/rows.h).
 * The softmax of a row is elementwise/softmax_tmpl.h's, the set's vector
 * code (the same bits on every set); the backward pass and the Jacobian
 * are plain C. Each sees unit-stride rows of the compute type whatever
 * the operands' strides and storage (the storage layer).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "isa/kernels.h"
#include "rows/rows.h"

/* rows [r0, r1) of the softmax (scratch: 2 staged rows)                 */
static void softmax_rows(void *ctx, size_t r0, size_t r1, double *acc,
                         void *scratch)
{
    (void)acc;
    const attn_softmax_args *a = ctx;
    const attn_dtype dt = a->dtype;
    const size_t n = a->n, rb = attn__row_bytes(dt, n);
    const attn_kernels *k = attn__kernels();
    void (*row)(size_t, void *, const void *) =
        attn__kernels_for(k->softmax_row[dt] != NULL)->softmax_row[dt];
    char *buf = scratch;
    for (size_t r = r0; r < r1; r++) {
        const void *x = attn__row_in(&a->in, dt, ROW(a->in, r), n, buf);
        void *y = attn__row_out(&a->out, dt, ROW(a->out, r), buf + rb);
        row(n, y, x);
        attn__row_done(&a->out, dt, ROW(a->out, r), n, y);
    }
}

attn_status attn_softmax(const attn_softmax_args *a, const attn_exec *ex)
{
    if (!a)
        return ATTN_EINVAL;
    const attn_rows_job job = {a->dtype, a->nrows, a->n, softmax_rows,
                               (void *)a, 4.0, 2, 0, {&a->out, &a->in}, {0}};
    return attn__rows_run(&job, ex);
}

/* ------------------------------------------------------------------------ */
/* backward: dx = y * (dy - sum_j dy_j * y_j), the sum in double; dy - s   */
/* first, then times y (one rounding less than y*dy - y*s). Rows read      */
/* before written: dx may be exactly dy or exactly y.                      */
/* ------------------------------------------------------------------------ */
#define DEFINE_SOFTMAX_BACKWARD(T, SFX)                                        \
static void softmax_bwd_##SFX(size_t n, T *dx, const T *dy, const T *y)        \
{                                                                              \
    double s = 0.0;                                                            \
    for (size_t j = 0; j < n; j++)                                             \
        s += (double)dy[j] * (double)y[j];                                     \
    const T ts = (T)s;                                                         \
    for (size_t j = 0; j < n; j++)                                             \
        dx[j] = y[j] * (dy[j] - ts);                                           \
}

DEFINE_SOFTMAX_BACKWARD(float, f32)
DEFINE_SOFTMAX_BACKWARD(double, f64)

/* rows [r0, r1) (scratch: 3 staged rows)                                */
static void softmax_bwd_rows(void *ctx, size_t r0, size_t r1, double *acc,
                             void *scratch)
{
    (void)acc;
    const attn_softmax_grad_args *a = ctx;
    const attn_dtype dt = a->dtype;
    const size_t n = a->n, rb = attn__row_bytes(dt, n);
    char *buf = scratch;
    for (size_t r = r0; r < r1; r++) {
        const void *dy = attn__row_in(&a->dy, dt, ROW(a->dy, r), n, buf);
        const void *y = attn__row_in(&a->y, dt, ROW(a->y, r), n, buf + rb);
        void *dx = attn__row_out(&a->dx, dt, ROW(a->dx, r), buf + 2 * rb);
        if (dt == ATTN_F64)
            softmax_bwd_f64(n, dx, dy, y);
        else
            softmax_bwd_f32(n, dx, dy, y);
        attn__row_done(&a->dx, dt, ROW(a->dx, r), n, dx);
    }
}

attn_status attn_softmax_backward(const attn_softmax_grad_args *a,
                                  const attn_exec *ex)
{
    if (!a)
        return ATTN_EINVAL;
    const attn_rows_job job = {a->dtype, a->nrows, a->n, softmax_bwd_rows,
                               (void *)a, 3.0, 3, 0,
                               {&a->dx, &a->dy, &a->y}, {0}};
    return attn__rows_run(&job, ex);
}

/* ------------------------------------------------------------------------ */
/* Jacobian: J(r, i, j) = y_i * ([i == j] - y_j) = diag(y) - y y^T          */
/* ------------------------------------------------------------------------ */
#define DEFINE_SOFTMAX_JACOBIAN(T, SFX)                                        \
static void softmax_jac_##SFX(const attn_softmax_jac_args *a, size_t r,        \
                              const T *y)                                      \
{                                                                              \
    T *j_r = (T *)a->jac.data + OFF(a->jac, r);                                \
    for (size_t i = 0; i < a->n; i++) {                                        \
        const T yi = y[i];                                                     \
        T *row = j_r + (ptrdiff_t)i * a->jac.s0;                               \
        for (size_t j = 0; j < a->n; j++)                                      \
            row[(ptrdiff_t)j * a->jac.s1] = yi * ((T)(i == j) - y[j]);         \
    }                                                                          \
}

DEFINE_SOFTMAX_JACOBIAN(float, f32)
DEFINE_SOFTMAX_JACOBIAN(double, f64)

/* rows [r0, r1) (scratch: 1 staged row)                                 */
static void softmax_jac_rows(void *ctx, size_t r0, size_t r1, double *acc,
                             void *scratch)
{
    (void)acc;
    const attn_softmax_jac_args *a = ctx;
    for (size_t r = r0; r < r1; r++) {
        const void *y = attn__row_in(&a->y, a->dtype, ROW(a->y, r), a->n,
                                     scratch);
        if (a->dtype == ATTN_F64)
            softmax_jac_f64(a, r, y);
        else
            softmax_jac_f32(a, r, y);
    }
}

attn_status attn_softmax_jacobian(const attn_softmax_jac_args *a,
                                  const attn_exec *ex)
{
    if (!a || a->jac.store != ATTN_ST_NATIVE || a->y.store != ATTN_ST_NATIVE)
        return ATTN_EINVAL; /* float16 / bfloat16: not for the Jacobian */
    if (a->n == 0)
        return ATTN_OK;
    /* chunks by the n x n elements a row writes; one staged row of n   */
    const size_t rb = attn__row_bytes(a->dtype, a->n);
    if (!rb || a->n > SIZE_MAX / a->n)
        return ATTN_ENOMEM;
    const attn_rows_job job = {a->dtype, a->nrows, a->n * a->n,
                               softmax_jac_rows, (void *)a, 1.0, 0, rb,
                               {&a->jac, &a->y}, {0}};
    return attn__rows_run(&job, ex);
}
