/*
 * testing/naive.c -- the naive attention oracle: row by row, the formula
 * exactly as written in attn.h. Single-threaded; the C tests' reference for
 * the fast path (sdpa.c). Built into the C test programs only (setup.py
 * leaves csrc/core/testing/ out of the extension).
 *
 * Written once as a macro body instantiated for float (f32) and double
 * (f64), so the two precisions cannot drift apart.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "attn.h"
#include "attention/kern.h"
#include "attention/variants.h"
#include "util.h"

/* ------------------------------------------------------------------------ */
/* Naive scaled dot-product attention.                                       */
/*   Q (B, L, E), K (B, S, E), V (B, S, Ev), mask/bias (B, L, S)             */
/*   -> out (B, L, Ev), optional weights (B, L, S) and raw scores (B, L, S)  */
/* Per row i (at key position i' = i + qpos), in three passes:              */
/*   1. s_j = the score of attn.h (scale, softcap, bias, ALiBi) where        */
/*      allowed (mask, causal, window), else -inf; row max                   */
/*   2. fully masked rows -> policy; else e_j = exp(s_j - max), sum          */
/*   3. w_j = e_j / sum; out_i = sum_j w_j V_j                               */
/* ------------------------------------------------------------------------ */

#define DEFINE_NAIVE(T, SFX, EXP, TANH)                                         \
static attn_status sdpa_naive_##SFX(attn_problem *p)                            \
{                                                                               \
    const size_t L = p->L, S = p->S, E = p->E, Ev = p->Ev;                      \
    const T scale = (T)p->scale;                                                \
    const T ninf = (T)-INFINITY;                                                \
    const T cap = (T)p->softcap;                                                \
    const ptrdiff_t qpos = attn__var_qpos(p);                                   \
    T *s_row = NULL, *acc = NULL;                                               \
    double *mean = NULL; /* the uniform policy's row (kern.h)  */               \
    if (S > SIZE_MAX / sizeof(T) - 1 || Ev > SIZE_MAX / sizeof(double) - 1)     \
        return ATTN_ENOMEM;                                                     \
    s_row = malloc((S + 1) * sizeof(T));                                        \
    acc = malloc((Ev + 1) * sizeof(T));                                         \
    mean = malloc((Ev + 1) * sizeof(double));                                   \
    if (!s_row || !acc || !mean) {                                              \
        free(s_row);                                                            \
        free(acc);                                                              \
        free(mean);                                                             \
        return ATTN_ENOMEM;                                                     \
    }                                                                           \
    for (size_t b = 0; b < p->B; b++) {                                         \
        const T *q_b = (const T *)p->q.data + OFF(p->q, b);                     \
        const T *k_b = (const T *)p->k.data + OFF(p->k, b);                     \
        const T *v_b = (const T *)p->v.data + OFF(p->v, b);                     \
        T *o_b = (T *)p->out.data + OFF(p->out, b);                             \
        const T slope = (T)attn__var_slope(p, b);                               \
        for (size_t i = 0; i < L; i++) {                                        \
            const T *q_bi = q_b + (ptrdiff_t)i * p->q.s0;                       \
            T *o_bi = o_b + (ptrdiff_t)i * p->out.s0;                           \
            const ptrdiff_t ip = (ptrdiff_t)i + qpos;                           \
            size_t klo, khi;                                                    \
            attn__var_keys(p, ip, &klo, &khi);                                  \
            T *w_bi = p->weights.data ? (T *)p->weights.data                    \
                          + OFF(p->weights, b) + (ptrdiff_t)i * p->weights.s0   \
                                      : NULL;                                   \
            T *sc_bi = p->scores.data ? (T *)p->scores.data                     \
                           + OFF(p->scores, b) + (ptrdiff_t)i * p->scores.s0    \
                                      : NULL;                                   \
            /* pass 1: scores, mask, row max */                                 \
            T m = ninf;                                                         \
            int any_nan = 0, fully = 1;                                         \
            for (size_t j = 0; j < S; j++) {                                    \
                const T *k_bj = k_b + (ptrdiff_t)j * p->k.s0;                   \
                T dot = 0;                                                      \
                for (size_t e = 0; e < E; e++)                                  \
                    dot += q_bi[(ptrdiff_t)e * p->q.s1]                         \
                           * k_bj[(ptrdiff_t)e * p->k.s1];                      \
                if (sc_bi)                                                      \
                    sc_bi[(ptrdiff_t)j * p->scores.s1] = dot;                   \
                int allowed = j >= klo && j < khi;                              \
                if (allowed && p->mask.data) {                                  \
                    const uint8_t *m_b = (const uint8_t *)p->mask.data          \
                                         + OFF(p->mask, b);                     \
                    allowed = m_b[(ptrdiff_t)i * p->mask.s0                     \
                                  + (ptrdiff_t)j * p->mask.s1] != 0;            \
                }                                                               \
                T s = ninf;                                                     \
                if (allowed) {                                                  \
                    s = scale * dot;                                            \
                    if (cap > 0)                                                \
                        s = cap * TANH(s / cap);                                \
                    if (p->bias.data) {                                         \
                        const T *bias_b = (const T *)p->bias.data               \
                                          + OFF(p->bias, b);                    \
                        s += bias_b[(ptrdiff_t)i * p->bias.s0                   \
                                    + (ptrdiff_t)j * p->bias.s1];               \
                    }                                                           \
                    if (p->alibi.data)                                          \
                        s -= slope * (T)attn__var_dist(ip, j);                  \
                }                                                               \
                s_row[j] = s;                                                   \
                if (isnan(s))                                                   \
                    any_nan = 1;                                                \
                else if (s > m)                                                 \
                    m = s;                                                      \
                if (!(s == ninf))                                               \
                    fully = 0;                                                  \
            }                                                                   \
            if (any_nan)                                                        \
                m = (T)NAN;                                                     \
            /* pass 2: fully masked policy, or exp and sum */                   \
            T fill_w = 0;                                                       \
            int fill = fully;                                                   \
            if (fully) {                                                        \
                switch (p->fully_masked) {                                      \
                case ATTN_FM_RAISE:                                             \
                    p->bad_b = b;                                               \
                    p->bad_row = i;                                             \
                    free(s_row);                                                \
                    free(acc);                                                  \
                    free(mean);                                                 \
                    return ATTN_EFULLYMASKED;                                   \
                case ATTN_FM_UNIFORM:                                           \
                    fill_w = S ? (T)1 / (T)S : (T)0;                            \
                    break;                                                      \
                case ATTN_FM_NAN:                                               \
                    fill_w = (T)NAN;                                            \
                    break;                                                      \
                default:                                                        \
                    fill_w = 0;                                                 \
                }                                                               \
            }                                                                   \
            T sum = 0;                                                          \
            for (size_t j = 0; j < S; j++) {                                    \
                s_row[j] = fill ? fill_w : EXP(s_row[j] - m);                   \
                sum += s_row[j];                                                \
            }                                                                   \
            if (p->lse.data)                                                    \
                ((T *)p->lse.data + OFF(p->lse, b))[(ptrdiff_t)i * p->lse.s0] = \
                    fill ? ninf : (T)((double)m + log((double)sum));            \
            /* pass 3: normalise, weights, out = w @ V */                       \
            for (size_t e = 0; e < Ev; e++)                                     \
                acc[e] = (fill && p->fully_masked == ATTN_FM_NAN) ? (T)NAN : 0; \
            for (size_t j = 0; j < S; j++) {                                    \
                T w = fill ? s_row[j] : s_row[j] / sum;                         \
                if (w_bi)                                                       \
                    w_bi[(ptrdiff_t)j * p->weights.s1] = w;                     \
                if (fill && p->fully_masked != ATTN_FM_UNIFORM)                 \
                    continue; /* row is all 0 or all NaN: no V needed */        \
                if (w == 0)                                                     \
                    continue; /* weight 0: V_j contributes nothing */           \
                const T *v_bj = v_b + (ptrdiff_t)j * p->v.s0;                   \
                for (size_t e = 0; e < Ev; e++)                                 \
                    acc[e] += w * v_bj[(ptrdiff_t)e * p->v.s1];                 \
            }                                                                   \
            if (fill && p->fully_masked == ATTN_FM_UNIFORM) {                   \
                attn__uniform_mean(p, b, mean);                                 \
                for (size_t e = 0; e < Ev; e++)                                 \
                    acc[e] = (T)mean[e];                                        \
            }                                                                   \
            for (size_t e = 0; e < Ev; e++)                                     \
                o_bi[(ptrdiff_t)e * p->out.s1] = acc[e];                        \
        }                                                                       \
    }                                                                           \
    free(s_row);                                                                \
    free(acc);                                                                  \
    free(mean);                                                                 \
    return ATTN_OK;                                                             \
}

DEFINE_NAIVE(float, f32, expf, tanhf)
DEFINE_NAIVE(double, f64, exp, tanh)

attn_status attn_sdpa_naive(attn_problem *p)
{
    if (p->dtype == ATTN_F32)
        return sdpa_naive_f32(p);
    if (p->dtype == ATTN_F64)
        return sdpa_naive_f64(p);
    return ATTN_EINVAL;
}
