/*
 * testing/naive_bwd.c -- the naive backward oracle: the formulas of
 * attn_bwd_problem (attn.h) row by row, everything accumulated in double.
 * Single-threaded; the C tests' reference for the fused backward (bwd.c).
 * Built into the C test programs only, as testing/naive.c.
 *
 * Written once as a macro body instantiated for float and double.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "attn.h"
#include "attention/variants.h"
#include "half.h"
#include "util.h"

/* element (b, i, j) of a batched view, as a pointer of type T */
#define AT(T, m, b, i, j)                                                      \
    ((T *)(m).data + OFF(m, b) + (ptrdiff_t)(i) * (m).s0                        \
     + (ptrdiff_t)(j) * (m).s1)

/* element (b, i, j) of a view stored as m.store (16-bit only with float
 * problems: read exactly, written through float)                       */
#define IDX(m, b, i, j)                                                        \
    (OFF(m, b) + (ptrdiff_t)(i) * (m).s0 + (ptrdiff_t)(j) * (m).s1)
#define GET(T, m, b, i, j)                                                     \
    ((m).store ? (double)attn_load_f32((m).store, (m).data, IDX(m, b, i, j))  \
               : (double)*AT(T, m, b, i, j))
#define PUT(T, m, b, i, j, x)                                                  \
    ((m).store ? attn_store_f32((m).store, (m).data, IDX(m, b, i, j),         \
                                (float)(x))                                    \
               : (void)(*AT(T, m, b, i, j) = (T)(x)))

/* Per batch item b (shapes as in attn.h):
 *   1. per row i: D_i; fully masked rows (lse -inf) by policy
 *   2. per row i, key j: s (softcap, bias, ALiBi), P = exp(s - lse)
 *      (0 below the element type's smallest normal, as the kernels' exp),
 *      dP = dout_i . V_j, dS = P (dP - D), dbias = dS, g = dS times the
 *      softcap factor 1 - (capped / softcap)^2 (or dS);
 *      dq_i += g K_j, dk_j += g Q_i, dv_j += P dout_i
 *   3. write dk, dv (NaN policy: NaN when a row was fully masked)       */
#define DEFINE_NAIVE_BWD(T, SFX)                                                \
static attn_status bwd_naive_##SFX(attn_bwd_problem *bp, double *buf)           \
{                                                                               \
    const attn_problem *f = &bp->f;                                             \
    const size_t L = f->L, S = f->S, E = f->E, Ev = f->Ev;                      \
    double *dk = buf, *dv = dk + S * E, *dq = dv + S * Ev;                      \
    const double cap = f->softcap;                                              \
    const ptrdiff_t qpos = attn__var_qpos(f);                                   \
    for (size_t b = 0; b < f->B; b++) {                                         \
        int nan_b = 0;                                                          \
        const double slope = attn__var_slope(f, b);                             \
        for (size_t x = 0; x < S * (E + Ev); x++)                               \
            dk[x] = 0;                                                          \
        for (size_t i = 0; i < L; i++) {                                        \
            const double lse = GET(T, f->lse, b, i, 0);                 \
            double D = 0;                                                       \
            for (size_t c = 0; c < Ev; c++)                                     \
                D += GET(T, bp->dout, b, i, c)                          \
                     * GET(T, f->out, b, i, c);                         \
            for (size_t e = 0; e < E; e++)                                      \
                dq[e] = 0;                                                      \
            const int fm = lse == -INFINITY;                                    \
            const ptrdiff_t ip = (ptrdiff_t)i + qpos;                           \
            size_t klo, khi;                                                    \
            attn__var_keys(f, ip, &klo, &khi);                                  \
            if (fm && f->fully_masked == ATTN_FM_RAISE) {                       \
                bp->f.bad_b = b;                                                \
                bp->f.bad_row = i;                                              \
                return ATTN_EFULLYMASKED;                                       \
            }                                                                   \
            if (fm && f->fully_masked == ATTN_FM_NAN) {                         \
                nan_b = 1;                                                      \
                for (size_t e = 0; e < E; e++)                                  \
                    dq[e] = NAN;                                                \
            }                                                                   \
            for (size_t j = 0; j < S; j++) {                                    \
                double ds = 0;                                                  \
                if (fm && f->fully_masked == ATTN_FM_UNIFORM)                   \
                    for (size_t c = 0; c < Ev; c++)                             \
                        dv[j * Ev + c] += GET(T, bp->dout, b, i, c)     \
                                          / (double)S;                          \
                int allowed = !fm && j >= klo && j < khi;                       \
                if (allowed && f->mask.data)                                    \
                    allowed = *AT(const uint8_t, f->mask, b, i, j) != 0;        \
                if (fm && f->fully_masked == ATTN_FM_NAN)                       \
                    ds = NAN;                                                   \
                if (allowed) {                                                  \
                    double s = 0, dp = 0;                                       \
                    for (size_t e = 0; e < E; e++)                              \
                        s += GET(T, f->q, b, i, e)                      \
                             * GET(T, f->k, b, j, e);                   \
                    s *= f->scale;                                              \
                    double dcap = 1;                                            \
                    if (cap > 0) {                                              \
                        s = cap * tanh(s / cap);                                \
                        dcap = 1 - (s / cap) * (s / cap);                       \
                    }                                                           \
                    if (f->bias.data)                                           \
                        s += GET(T, f->bias, b, i, j);                  \
                    if (f->alibi.data)                                          \
                        s -= slope * (double)attn__var_dist(ip, j);             \
                    double P = s == -INFINITY ? 0 : exp(s - lse);               \
                    if (P < (sizeof(T) == sizeof(float) ? FLT_MIN : DBL_MIN))   \
                        P = 0; /* below the type's normals: 0, as the       */ \
                               /* kernels' exp gives (matters with an inf) */ \
                    if (P != 0) {                                               \
                        for (size_t c = 0; c < Ev; c++) {                       \
                            const double g = GET(T, bp->dout, b, i, c);         \
                            dp += g * GET(T, f->v, b, j, c);            \
                            dv[j * Ev + c] += P * g;                            \
                        }                                                       \
                        ds = P * (dp - D);                                      \
                        const double gs = ds * dcap;                            \
                        for (size_t e = 0; e < E; e++) {                        \
                            dq[e] += gs * GET(T, f->k, b, j, e);        \
                            dk[j * E + e] += gs * GET(T, f->q, b, i, e);\
                        }                                                       \
                    }                                                           \
                }                                                               \
                if (bp->dbias.data)                                             \
                    PUT(T, bp->dbias, b, i, j, ds);                         \
            }                                                                   \
            for (size_t e = 0; e < E; e++)                                      \
                PUT(T, bp->dq, b, i, e, dq[e] * f->scale);                \
        }                                                                       \
        for (size_t j = 0; j < S; j++) {                                        \
            for (size_t e = 0; e < E; e++)                                      \
                PUT(T, bp->dk, b, j, e,                                         \
                    nan_b ? (double)NAN : dk[j * E + e] * f->scale);            \
            for (size_t c = 0; c < Ev; c++)                                     \
                PUT(T, bp->dv, b, j, c, nan_b ? (double)NAN : dv[j * Ev + c]);  \
        }                                                                       \
    }                                                                           \
    return ATTN_OK;                                                             \
}

DEFINE_NAIVE_BWD(float, f32)
DEFINE_NAIVE_BWD(double, f64)

attn_status attn_sdpa_backward_naive(attn_bwd_problem *bp)
{
    const attn_problem *f = &bp->f;
    size_t n;
    if (f->dtype != ATTN_F32 && f->dtype != ATTN_F64)
        return ATTN_EINVAL;
    /* 16-bit storage: float problems only, never the uint8 mask or the
     * slopes (variants.h reads them)                                     */
    const attn_mat *all[] = {&f->q, &f->k, &f->v, &f->bias, &f->out,
                             &f->lse, &bp->dout, &bp->dq,
                             &bp->dk, &bp->dv, &bp->dbias};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        if (all[i]->store != ATTN_ST_NATIVE
            && (f->dtype != ATTN_F32 || (all[i]->store != ATTN_ST_F16
                                         && all[i]->store != ATTN_ST_BF16)))
            return ATTN_EINVAL;
    if (f->mask.store != ATTN_ST_NATIVE || f->alibi.store != ATTN_ST_NATIVE)
        return ATTN_EINVAL;
    /* S (E + Ev) + E doubles */
    if (f->E + f->Ev < f->E || (f->S && (f->E + f->Ev) > SIZE_MAX / f->S)
        || f->S * (f->E + f->Ev) > SIZE_MAX / sizeof(double) - f->E - 1)
        return ATTN_ENOMEM;
    n = f->S * (f->E + f->Ev) + f->E + 1;
    double *buf = malloc(n * sizeof(double));
    if (!buf)
        return ATTN_ENOMEM;
    attn_status st = f->dtype == ATTN_F32 ? bwd_naive_f32(bp, buf)
                                          : bwd_naive_f64(bp, buf);
    free(buf);
    return st;
}
