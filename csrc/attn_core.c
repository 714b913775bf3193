/*
 * attn_core.c -- the small kernels of the attnpy core and the naive attention
 * oracle (row by row, the formula exactly as written in attn.h).
 *
 * Every kernel is written once as a macro body instantiated for float (f32)
 * and double (f64), so the two precisions cannot drift apart.
 */
#define _GNU_SOURCE  /* sched_getaffinity, CPU_COUNT */
#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "attn.h"

#define OFF(m, b) ((m).boff ? (m).boff[(b)] : 0)

/* ------------------------------------------------------------------------ */
/* Naive scaled dot-product attention.                                       */
/*   Q (B, L, E), K (B, S, E), V (B, S, Ev), mask/bias (B, L, S)             */
/*   -> out (B, L, Ev), optional weights (B, L, S) and raw scores (B, L, S)  */
/* Per row i, in three passes:                                               */
/*   1. s_j = scale * Q_i.K_j + bias_ij where allowed, else -inf; row max    */
/*   2. fully masked rows -> policy; else e_j = exp(s_j - max), sum          */
/*   3. w_j = e_j / sum; out_i = sum_j w_j V_j                               */
/* ------------------------------------------------------------------------ */

static int causal_allows(attn_causal c, size_t i, size_t j, size_t L, size_t S)
{
    switch (c) {
    case ATTN_CAUSAL_TOP_LEFT:
        return j <= i;
    case ATTN_CAUSAL_BOTTOM_RIGHT:
        /* j <= i + S - L, written without negative intermediates */
        return j + L <= i + S;
    default:
        return 1;
    }
}

#define DEFINE_NAIVE(T, SFX, EXP)                                               \
static attn_status sdpa_naive_##SFX(attn_problem *p)                            \
{                                                                               \
    const size_t L = p->L, S = p->S, E = p->E, Ev = p->Ev;                      \
    const T scale = (T)p->scale;                                                \
    const T ninf = (T)-INFINITY;                                                \
    T *s_row = NULL, *acc = NULL;                                               \
    if (S > SIZE_MAX / sizeof(T) - 1 || Ev > SIZE_MAX / sizeof(T) - 1)          \
        return ATTN_ENOMEM;                                                     \
    s_row = malloc((S + 1) * sizeof(T));                                        \
    acc = malloc((Ev + 1) * sizeof(T));                                         \
    if (!s_row || !acc) {                                                       \
        free(s_row);                                                            \
        free(acc);                                                              \
        return ATTN_ENOMEM;                                                     \
    }                                                                           \
    for (size_t b = 0; b < p->B; b++) {                                         \
        const T *q_b = (const T *)p->q.data + OFF(p->q, b);                     \
        const T *k_b = (const T *)p->k.data + OFF(p->k, b);                     \
        const T *v_b = (const T *)p->v.data + OFF(p->v, b);                     \
        T *o_b = (T *)p->out.data + OFF(p->out, b);                             \
        for (size_t i = 0; i < L; i++) {                                        \
            const T *q_bi = q_b + (ptrdiff_t)i * p->q.s0;                       \
            T *o_bi = o_b + (ptrdiff_t)i * p->out.s0;                           \
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
                int allowed = causal_allows(p->causal, i, j, L, S);             \
                if (allowed && p->mask.data) {                                  \
                    const uint8_t *m_b = (const uint8_t *)p->mask.data          \
                                         + OFF(p->mask, b);                     \
                    allowed = m_b[(ptrdiff_t)i * p->mask.s0                     \
                                  + (ptrdiff_t)j * p->mask.s1] != 0;            \
                }                                                               \
                T s = ninf;                                                     \
                if (allowed) {                                                  \
                    s = scale * dot;                                            \
                    if (p->bias.data) {                                         \
                        const T *bias_b = (const T *)p->bias.data               \
                                          + OFF(p->bias, b);                    \
                        s += bias_b[(ptrdiff_t)i * p->bias.s0                   \
                                    + (ptrdiff_t)j * p->bias.s1];               \
                    }                                                           \
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
            for (size_t e = 0; e < Ev; e++)                                     \
                o_bi[(ptrdiff_t)e * p->out.s1] = acc[e];                        \
        }                                                                       \
    }                                                                           \
    free(s_row);                                                                \
    free(acc);                                                                  \
    return ATTN_OK;                                                             \
}

DEFINE_NAIVE(float, f32, expf)
DEFINE_NAIVE(double, f64, exp)

attn_status attn_sdpa_naive(attn_problem *p)
{
    if (p->dtype == ATTN_F32)
        return sdpa_naive_f32(p);
    if (p->dtype == ATTN_F64)
        return sdpa_naive_f64(p);
    return ATTN_EINVAL;
}

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

/* ------------------------------------------------------------------------ */
/* batched strided copy: out (B, rows, cols) = in (B, rows, cols)            */
/* ------------------------------------------------------------------------ */
#define DEFINE_COPY2D(T, SFX)                                                   \
static void copy2d_##SFX(attn_mat out, attn_mat in, size_t B, size_t rows,      \
                         size_t cols)                                           \
{                                                                               \
    for (size_t b = 0; b < B; b++) {                                            \
        const T *x_b = (const T *)in.data + OFF(in, b);                         \
        T *y_b = (T *)out.data + OFF(out, b);                                   \
        for (size_t i = 0; i < rows; i++) {                                     \
            const T *x_bi = x_b + (ptrdiff_t)i * in.s0;                         \
            T *y_bi = y_b + (ptrdiff_t)i * out.s0;                              \
            for (size_t j = 0; j < cols; j++)                                   \
                y_bi[(ptrdiff_t)j * out.s1] = x_bi[(ptrdiff_t)j * in.s1];       \
        }                                                                       \
    }                                                                           \
}

DEFINE_COPY2D(float, f32)
DEFINE_COPY2D(double, f64)

attn_status attn_copy2d(attn_dtype dtype, attn_mat out, attn_mat in, size_t B,
                        size_t rows, size_t cols)
{
    if (dtype == ATTN_F32)
        copy2d_f32(out, in, B, rows, cols);
    else if (dtype == ATTN_F64)
        copy2d_f64(out, in, B, rows, cols);
    else
        return ATTN_EINVAL;
    return ATTN_OK;
}

int attn_available_cpus(void)
{
#ifdef CPU_COUNT
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n >= 1)
            return n;
    }
#endif
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n >= 1 ? (int)n : 1;
}
