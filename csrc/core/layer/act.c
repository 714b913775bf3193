/*
 * layer/act.c -- bias + activation, forward and backward (the
 * feed-forward network's relu(x W1 + b1), gelu, gelu_tanh, in one pass
 * after the matrix product; gelu alone is the same kernel without a
 * bias), and SiLU and the gated unit of Llama's feed-forward network,
 * silu(gate) * up, forward and backward. On the row driver
 * (rows/rows.h); each row's arithmetic is layer/act_tmpl.h's, the set's
 * vector code on unit-stride rows of the compute type (the storage
 * layer): the same bits on every set and layout.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "isa/kernels.h"
#include "rows/rows.h"

/* ------------------------------------------------------------------------ */
/* bias + activation                                                         */
/* ------------------------------------------------------------------------ */
/* rows [r0, r1): y = act(x + bias) (scratch: 3 staged rows)              */
static void act_fwd_rows(void *ctx, size_t r0, size_t r1, double *acc,
                         void *scratch)
{
    (void)acc;
    const attn_act_args *a = ctx;
    const attn_dtype dt = a->dtype;
    const size_t n = a->n, rb = attn__row_bytes(dt, n);
    const attn_act_kernels *k = attn__act_kernels(dt);
    char *buf = scratch;
    const void *b = a->bias.data
        ? attn__row_in(&a->bias, dt, 0, n, buf + 2 * rb) : NULL;
    for (size_t r = r0; r < r1; r++) {
        const void *x = attn__row_in(&a->x, dt, ROW(a->x, r), n, buf);
        void *y = attn__row_out(&a->y, dt, ROW(a->y, r), buf + rb);
        k->fwd(a->act, n, y, x, b);
        attn__row_done(&a->y, dt, ROW(a->y, r), n, y);
    }
}

/* rows [r0, r1): dx = dy act'(x + bias); acc (dbias) += dx, in double
 * (scratch: 4 staged rows)                                               */
static void act_bwd_rows(void *ctx, size_t r0, size_t r1, double *acc,
                         void *scratch)
{
    const attn_act_grad_args *a = ctx;
    const attn_dtype dt = a->dtype;
    const size_t n = a->n, rb = attn__row_bytes(dt, n);
    const attn_act_kernels *k = attn__act_kernels(dt);
    char *buf = scratch;
    const void *b = a->bias.data
        ? attn__row_in(&a->bias, dt, 0, n, buf + 3 * rb) : NULL;
    for (size_t r = r0; r < r1; r++) {
        const void *x = attn__row_in(&a->x, dt, ROW(a->x, r), n, buf);
        const void *dy = attn__row_in(&a->dy, dt, ROW(a->dy, r), n,
                                      buf + rb);
        void *dx = attn__row_out(&a->dx, dt, ROW(a->dx, r), buf + 2 * rb);
        k->bwd(a->act, n, dx, dy, x, b);
        if (acc && dt == ATTN_F32)
            for (size_t j = 0; j < n; j++)
                acc[j] += (double)((const float *)dx)[j];
        else if (acc)
            for (size_t j = 0; j < n; j++)
                acc[j] += ((const double *)dx)[j];
        attn__row_done(&a->dx, dt, ROW(a->dx, r), n, dx);
    }
}

/* cost of one element, for the thread count (layer/acts.h) */
static double act_work(attn_act act)
{
    static const double cost[ATTN_ACT_COUNT] = {
#define ACT_COST_(id, name, cost, y, dx) cost,
        ATTN_ACT_LIST(ACT_COST_)
#undef ACT_COST_
    };
    return cost[act];
}

attn_status attn_bias_act(const attn_act_args *a, const attn_exec *ex)
{
    if (!a || (unsigned)a->act >= ATTN_ACT_COUNT)
        return ATTN_EINVAL;
    const attn_rows_job job = {a->dtype, a->nrows, a->n, act_fwd_rows,
                               (void *)a, act_work(a->act), 3, 0,
                               {&a->y, &a->x, &a->bias}, {0}};
    return attn__rows_run(&job, ex);
}

attn_status attn_bias_act_backward(const attn_act_grad_args *a,
                                   const attn_exec *ex)
{
    if (!a || (unsigned)a->act >= ATTN_ACT_COUNT)
        return ATTN_EINVAL;
    const attn_rows_job job = {a->dtype, a->nrows, a->n, act_bwd_rows,
                               (void *)a, act_work(a->act) * 1.5, 4, 0,
                               {&a->dx, &a->dbias, &a->dy, &a->x, &a->bias},
                               {&a->dbias}};
    return attn__rows_run(&job, ex);
}

/* ------------------------------------------------------------------------ */
/* silu, swiglu                                                              */
/* ------------------------------------------------------------------------ */
/* rows [r0, r1): y = silu(gate) [* up] (scratch: 3 staged rows)          */
static void glu_fwd_rows(void *ctx, size_t r0, size_t r1, double *acc,
                         void *scratch)
{
    (void)acc;
    const attn_glu_args *a = ctx;
    const attn_dtype dt = a->dtype;
    const size_t n = a->n, rb = attn__row_bytes(dt, n);
    const attn_act_kernels *k = attn__act_kernels(dt);
    char *buf = scratch;
    for (size_t r = r0; r < r1; r++) {
        const void *g = attn__row_in(&a->gate, dt, ROW(a->gate, r), n, buf);
        const void *u = a->up.data
            ? attn__row_in(&a->up, dt, ROW(a->up, r), n, buf + rb) : NULL;
        void *y = attn__row_out(&a->y, dt, ROW(a->y, r), buf + 2 * rb);
        k->glu(n, y, g, u);
        attn__row_done(&a->y, dt, ROW(a->y, r), n, y);
    }
}

/* rows [r0, r1): dgate, dup (scratch: 5 staged rows)                     */
static void glu_bwd_rows(void *ctx, size_t r0, size_t r1, double *acc,
                         void *scratch)
{
    (void)acc;
    const attn_glu_grad_args *a = ctx;
    const attn_dtype dt = a->dtype;
    const size_t n = a->n, rb = attn__row_bytes(dt, n);
    const attn_act_kernels *k = attn__act_kernels(dt);
    char *buf = scratch;
    for (size_t r = r0; r < r1; r++) {
        const void *g = attn__row_in(&a->gate, dt, ROW(a->gate, r), n, buf);
        const void *dy = attn__row_in(&a->dy, dt, ROW(a->dy, r), n,
                                      buf + rb);
        const void *u = a->up.data
            ? attn__row_in(&a->up, dt, ROW(a->up, r), n, buf + 2 * rb)
            : NULL;
        void *dg = attn__row_out(&a->dgate, dt, ROW(a->dgate, r),
                                 buf + 3 * rb);
        void *du = a->dup.data
            ? attn__row_out(&a->dup, dt, ROW(a->dup, r), buf + 4 * rb) : NULL;
        k->glu_bwd(n, dg, du, dy, g, u);
        attn__row_done(&a->dgate, dt, ROW(a->dgate, r), n, dg);
        if (du)
            attn__row_done(&a->dup, dt, ROW(a->dup, r), n, du);
    }
}

attn_status attn_swiglu(const attn_glu_args *a, const attn_exec *ex)
{
    if (!a)
        return ATTN_EINVAL;
    const attn_rows_job job = {a->dtype, a->nrows, a->n, glu_fwd_rows,
                               (void *)a, 8.0, 3, 0,
                               {&a->y, &a->gate, &a->up}, {0}};
    return attn__rows_run(&job, ex);
}

attn_status attn_swiglu_backward(const attn_glu_grad_args *a,
                                 const attn_exec *ex)
{
    if (!a)
        return ATTN_EINVAL;
    const attn_rows_job job = {a->dtype, a->nrows, a->n, glu_bwd_rows,
                               (void *)a, 12.0, 5, 0,
                               {&a->dgate, &a->dup, &a->dy, &a->gate, &a->up},
                               {0}};
    return attn__rows_run(&job, ex);
}
