/*
 * attention/merge.c -- merge partial attention results over disjoint key
 * sets by their log-sum-exp (attn_merge, attn.h).
 *
 * Per row, for K partials (out_k, lse_k), in double, k in order:
 *   1. M = max_k lse_k (NaN if any is NaN); M == -inf: fully masked row
 *   2. e_k = exp(lse_k - M), sum = sum_k e_k, lse = M + log(sum)
 *   3. out = sum over k with e_k != 0 of (e_k / sum) out_k
 * A partial of weight 0 (lse_k = -inf) is skipped, never multiplied: its
 * out_k may hold anything (0, NaN from a "nan" policy). A float16 /
 * bfloat16 operand (float32 calls) is read a row at a time into float
 * scratch, and a 16-bit result is the float32 result rounded once.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "attn.h"
#include "attention/merge.h"
#include "half.h"
#include "layer/row16.h"
#include "util.h"

/* steps 1-2: the weights e_k / sum into w[k]; returns the row's lse
 * (-inf: fully masked, then w is not written)                           */
double attn__merge_weights(size_t K, const double *lse_k, double *w)
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
        w[k] = exp(lse_k[k] - M);
        sum += w[k];
    }
    for (size_t k = 0; k < K; k++)
        w[k] /= sum;
    return M + log(sum);
}

/* step 3 for one row: out[c * os1] = sum_k w[k] out_k[k][c * cs[k]]     */
#define DEFINE_MERGE_ROW(T, SFX)                                                \
void attn__merge_row_##SFX(T *out, ptrdiff_t os1, size_t Ev, size_t K,          \
                           const double *w, const T *const *out_k,             \
                           const ptrdiff_t *cs)                                \
{                                                                               \
    for (size_t c = 0; c < Ev; c++) {                                           \
        double acc = 0;                                                         \
        for (size_t k = 0; k < K; k++)                                          \
            if (w[k] != 0)                                                      \
                acc += w[k] * (double)out_k[k][(ptrdiff_t)c * cs[k]];           \
        out[(ptrdiff_t)c * os1] = (T)acc;                                       \
    }                                                                           \
}

DEFINE_MERGE_ROW(float, f32)
DEFINE_MERGE_ROW(double, f64)

/* element o of an lse operand, as a double (a 16-bit one widened)      */
#define LSE_AT(T, m, o)                                                         \
    ((m).store != ATTN_ST_NATIVE ? (double)attn_load_f32((m).store, (m).data, o) \
                                 : (double)((const T *)(m).data)[o])

/* the public merge: gather each row's K partials, then the row routine.
 * stage (float calls with a 16-bit operand, else unused): (K + 1) Ev
 * floats, partial k's row widened at stage + k Ev, a 16-bit output row
 * computed at stage + K Ev and rounded once from there                  */
#define DEFINE_MERGE(T, SFX)                                                    \
static void merge_##SFX(size_t K, size_t B, size_t L, size_t Ev,                \
                        attn_mat out, attn_mat lse, const attn_mat *outs,       \
                        const attn_mat *lses, double *lse_k, double *w,         \
                        const T **out_k, ptrdiff_t *cs, T *stage)               \
{                                                                               \
    const int out16 = out.store != ATTN_ST_NATIVE;                              \
    for (size_t b = 0; b < B; b++)                                              \
        for (size_t i = 0; i < L; i++) {                                        \
            for (size_t k = 0; k < K; k++) {                                    \
                lse_k[k] = LSE_AT(T, lses[k],                                   \
                                  OFF(lses[k], b) + (ptrdiff_t)i * lses[k].s0); \
                const ptrdiff_t o = OFF(outs[k], b) + (ptrdiff_t)i * outs[k].s0; \
                out_k[k] = (const T *)outs[k].data + o;                         \
                cs[k] = outs[k].s1;                                             \
                if (outs[k].store != ATTN_ST_NATIVE) {                          \
                    attn__row16_load(outs[k].store,                             \
                                     (const uint16_t *)outs[k].data + o,        \
                                     outs[k].s1, Ev, (float *)(stage + k * Ev)); \
                    out_k[k] = stage + k * Ev;                                  \
                    cs[k] = 1;                                                  \
                }                                                               \
            }                                                                   \
            const double m = attn__merge_weights(K, lse_k, w);                  \
            const ptrdiff_t oo = OFF(out, b) + (ptrdiff_t)i * out.s0;           \
            T *o_bi = out16 ? stage + K * Ev : (T *)out.data + oo;              \
            const ptrdiff_t os1 = out16 ? 1 : out.s1;                           \
            if (lse.data) {                                                     \
                const ptrdiff_t ol = OFF(lse, b) + (ptrdiff_t)i * lse.s0;       \
                if (lse.store != ATTN_ST_NATIVE)                                \
                    attn_store_f32(lse.store, lse.data, ol, (float)m);          \
                else                                                            \
                    ((T *)lse.data)[ol] = (T)m;                                 \
            }                                                                   \
            if (m == -INFINITY)                                                 \
                for (size_t c = 0; c < Ev; c++)                                 \
                    o_bi[(ptrdiff_t)c * os1] = 0;                               \
            else if (m != m)                                                    \
                for (size_t c = 0; c < Ev; c++)                                 \
                    o_bi[(ptrdiff_t)c * os1] = (T)NAN;                          \
            else                                                                \
                attn__merge_row_##SFX(o_bi, os1, Ev, K, w, out_k, cs);          \
            if (out16)                                                          \
                attn__row16_store(out.store, (uint16_t *)out.data + oo,         \
                                  out.s1, Ev, (const float *)o_bi);             \
        }                                                                       \
}

DEFINE_MERGE(float, f32)
DEFINE_MERGE(double, f64)

attn_status attn_merge(attn_dtype dtype, size_t K, size_t B, size_t L,
                       size_t Ev, attn_mat out, attn_mat lse,
                       const attn_mat *outs, const attn_mat *lses)
{
    if (dtype != ATTN_F32 && dtype != ATTN_F64)
        return ATTN_EINVAL;
    /* 16-bit operands: float32 calls only; the stage's size             */
    const attn_mat *ops[2] = {&out, &lse};
    int any16 = attn__any16(dtype, ops, 2);
    for (size_t k = 0; k < K && any16 >= 0; k++) {
        const attn_mat *pk[2] = {&outs[k], &lses[k]};
        const int a = attn__any16(dtype, pk, 2);
        any16 = a < 0 ? a : any16 | a;
    }
    if (any16 < 0)
        return ATTN_EINVAL;
    if (any16 && (K + 1 > SIZE_MAX / sizeof(float) / (Ev ? Ev : 1)))
        return ATTN_ENOMEM;
    const size_t nstage = any16 ? (K + 1) * Ev : 0;
    /* lse_k[K], w[K], cs[K], out_k[K], in one block, then the stage */
    const size_t item = 3 * sizeof(double) + sizeof(void *);
    if (K > SIZE_MAX / item - 1
        || nstage > (SIZE_MAX - (K + 1) * item) / sizeof(float))
        return ATTN_ENOMEM;
    double *buf = malloc((K + 1) * item + nstage * sizeof(float));
    if (!buf)
        return ATTN_ENOMEM;
    double *lse_k = buf, *w = buf + K + 1;
    ptrdiff_t *cs = (ptrdiff_t *)(w + K + 1);
    void *ptrs = cs + K + 1;
    float *stage = (float *)((char *)buf + (K + 1) * item);
    if (dtype == ATTN_F32)
        merge_f32(K, B, L, Ev, out, lse, outs, lses, lse_k, w,
                  (const float **)ptrs, cs, stage);
    else
        merge_f64(K, B, L, Ev, out, lse, outs, lses, lse_k, w,
                  (const double **)ptrs, cs, NULL);
    free(buf);
    return ATTN_OK;
}
