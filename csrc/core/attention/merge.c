/*
 * attention/merge.c -- merge partial attention results over disjoint key
 * sets by their log-sum-exp (attn_merge, attn.h).
 *
 * Per row, for K partials (out_k, lse_k), in double, k in order:
 *   1. M = max_k lse_k (NaN if any is NaN); M == -inf: fully masked row
 *   2. e_k = exp(lse_k - M), sum = sum_k e_k, lse = M + log(sum)
 *   3. out = sum over k with e_k != 0 of (e_k / sum) out_k
 * exp and log are simd/scalar.h's (the same bits on every system). A
 * partial of weight 0 (lse_k = -inf) is skipped, never multiplied: its
 * out_k may hold anything (0, NaN from a "nan" policy). On the row driver
 * (rows/rows.h): row r = b * L + i; each out_k row comes unit-stride in
 * the compute type (the storage layer: a 16-bit one widened).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "half.h"
#include "rows/rows.h"
#include "simd/scalar.h"

/* steps 1-2: the weights e_k / sum into w[k]; returns the row's lse
 * (-inf: fully masked, then w is not written)                           */
static double merge_weights(size_t K, const double *lse_k, double *w)
{
    double M = -INFINITY;
    for (size_t k = 0; k < K; k++) {
        const double x = lse_k[k];
        if (x != x)
            return x;
        M = x > M ? x : M;
    }
    if (M == -INFINITY)
        return M;
    double sum = 0;
    for (size_t k = 0; k < K; k++) {
        w[k] = attn_exp(lse_k[k] - M);
        sum += w[k];
    }
    for (size_t k = 0; k < K; k++)
        w[k] /= sum;
    return M + attn_log(sum);
}

/* step 3 for one row: out[c] = sum over k with w[k] != 0 of w[k] x_k[c] */
#define DEFINE_MERGE_ROW(T, SFX)                                                \
static void merge_row_##SFX(T *out, size_t Ev, size_t K, const double *w,      \
                            const void *const *x_k, double m)                  \
{                                                                               \
    if (m == -INFINITY || m != m) { /* fully masked: 0; a NaN lse: NaN */    \
        for (size_t c = 0; c < Ev; c++)                                         \
            out[c] = m == -INFINITY ? (T)0 : (T)NAN;                            \
        return;                                                                 \
    }                                                                           \
    for (size_t c = 0; c < Ev; c++) {                                           \
        double acc = 0;                                                         \
        for (size_t k = 0; k < K; k++)                                          \
            if (w[k] != 0)                                                      \
                acc += w[k] * (double)((const T *)x_k[k])[c];                   \
        out[c] = (T)acc;                                                        \
    }                                                                           \
}
DEFINE_MERGE_ROW(float, f32)
DEFINE_MERGE_ROW(double, f64)

/* an lse element as a double (16 bits widened)                          */
static double lse_at(const attn_mat *m, attn_dtype dt, ptrdiff_t o)
{
    if (m->store != ATTN_ST_NATIVE)
        return (double)attn_load_f32(m->store, m->data, o);
    return dt == ATTN_F64 ? ((const double *)m->data)[o]
                          : (double)((const float *)m->data)[o];
}

/* rows [r0, r1) (scratch: lse_k and w, K doubles each, K row pointers,
 * then K + 1 staged rows)                                               */
static void merge_rows(void *ctx, size_t r0, size_t r1, double *acc,
                       void *scratch)
{
    (void)acc;
    const attn_merge_args *a = ctx;
    const attn_dtype dt = a->dtype;
    const size_t K = a->K, Ev = a->Ev, rb = attn__row_bytes(dt, Ev);
    double *lse_k = scratch, *w = lse_k + K;
    const void **x_k = (const void **)(w + K);
    char *buf = (char *)scratch
                + ((K * (2 * sizeof(double) + sizeof(void *)) + 63) & ~63u);
    for (size_t r = r0; r < r1; r++) {
        const size_t b = r / a->L, i = r % a->L;
        for (size_t k = 0; k < K; k++) {
            const attn_mat *lk = &a->lses[k], *ok = &a->outs[k];
            lse_k[k] = lse_at(lk, dt, OFF(*lk, b) + (ptrdiff_t)i * lk->s0);
            x_k[k] = attn__row_in(ok, dt, OFF(*ok, b) + (ptrdiff_t)i * ok->s0,
                                  Ev, buf + k * rb);
        }
        const double m = merge_weights(K, lse_k, w);
        if (a->lse.data) {
            const ptrdiff_t ol = OFF(a->lse, b) + (ptrdiff_t)i * a->lse.s0;
            if (a->lse.store != ATTN_ST_NATIVE)
                attn_store_f32(a->lse.store, a->lse.data, ol, (float)m);
            else if (dt == ATTN_F64)
                ((double *)a->lse.data)[ol] = m;
            else
                ((float *)a->lse.data)[ol] = (float)m;
        }
        const ptrdiff_t oo = OFF(a->out, b) + (ptrdiff_t)i * a->out.s0;
        void *y = attn__row_out(&a->out, dt, oo, buf + K * rb);
        if (dt == ATTN_F64)
            merge_row_f64(y, Ev, K, w, x_k, m);
        else
            merge_row_f32(y, Ev, K, w, x_k, m);
        attn__row_done(&a->out, dt, oo, Ev, y);
    }
}

attn_status attn_merge(const attn_merge_args *a, const attn_exec *ex)
{
    if (!a || (a->K && (!a->outs || !a->lses)))
        return ATTN_EINVAL;
    for (size_t k = 0; k < a->K; k++) {
        const attn_mat *pk[] = {&a->outs[k], &a->lses[k]};
        if (!attn__stores_ok(a->dtype, pk, 2))
            return ATTN_EINVAL;
    }
    if (a->B == 0 || a->L == 0)
        return ATTN_OK;
    const size_t rb = attn__row_bytes(a->dtype, a->Ev ? a->Ev : 1);
    const size_t head = 2 * sizeof(double) + sizeof(void *);
    if (!rb || a->K > (SIZE_MAX / 2 - 64) / head
        || a->K + 1 > SIZE_MAX / 2 / rb || a->L > SIZE_MAX / a->B)
        return ATTN_ENOMEM;
    const size_t bytes = ((a->K * head + 63) & ~(size_t)63) + (a->K + 1) * rb;
    const attn_rows_job job = {a->dtype, a->B * a->L, a->Ev * (a->K + 1),
                               merge_rows, (void *)a, 2.0, 0, bytes,
                               {&a->out, &a->lse}, {0}};
    return attn__rows_run(&job, ex);
}
