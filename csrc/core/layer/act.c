/*
 * layer/act.c -- bias + activation, forward and backward: the feed-forward
 * network's relu(x W1 + b1) (and gelu, gelu_tanh) in one pass after the
 * matrix product; gelu alone is the same kernel without a bias.
 * Instantiated for float and double from one macro body.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "layer/rows.h"

#define GELU_SQRT1_2 0.70710678118654752440   /* 1 / sqrt(2)              */
#define GELU_INV_SQRT_2PI 0.39894228040143267794 /* 1 / sqrt(2 pi)        */
#define GELU_BETA 0.79788456080286535588      /* sqrt(2 / pi)             */
#define GELU_KAPPA 0.044715

typedef struct {
    attn_act act;
    size_t n;
    attn_mat y, x, bias;       /* forward                                  */
    attn_mat dx, dy;           /* backward (y unused)                      */
} act_ctx;

/* act(h) and act'(h) in the precision of T (ERF, TANH, EXP: its libm)    */
#define DEFINE_ACT(T, SFX, ERF, TANH, EXP)                                      \
static inline T act_##SFX(attn_act act, T h)                                    \
{                                                                               \
    switch (act) {                                                              \
    case ATTN_ACT_RELU:                                                         \
        return h < 0 ? (T)0 : h;                                                \
    case ATTN_ACT_GELU:                                                         \
        return (T)0.5 * h * ((T)1 + ERF(h * (T)GELU_SQRT1_2));                  \
    case ATTN_ACT_GELU_TANH: {                                                  \
        T inner = (T)GELU_BETA * (h + (T)GELU_KAPPA * (h * h * h));             \
        return (T)0.5 * h * ((T)1 + TANH(inner));                               \
    }                                                                           \
    default:                                                                    \
        return h;                                                               \
    }                                                                           \
}                                                                               \
static inline T dact_##SFX(attn_act act, T h)                                   \
{                                                                               \
    switch (act) {                                                              \
    case ATTN_ACT_RELU:                                                         \
        return h > 0 ? (T)1 : (T)0;                                             \
    case ATTN_ACT_GELU: {                                                       \
        T cdf = (T)0.5 * ((T)1 + ERF(h * (T)GELU_SQRT1_2));                     \
        T pdf = EXP((T)-0.5 * h * h) * (T)GELU_INV_SQRT_2PI;                    \
        return cdf + h * pdf;                                                   \
    }                                                                           \
    case ATTN_ACT_GELU_TANH: {                                                  \
        T h2 = h * h;                                                           \
        T t = TANH((T)GELU_BETA * (h + (T)GELU_KAPPA * (h2 * h)));              \
        T dinner = (T)GELU_BETA * ((T)1 + (T)(3 * GELU_KAPPA) * h2);            \
        return (T)0.5 * ((T)1 + t) + (T)0.5 * h * ((T)1 - t * t) * dinner;     \
    }                                                                           \
    default:                                                                    \
        return (T)1;                                                            \
    }                                                                           \
}                                                                               \
/* rows [r0, r1): y = act(x + bias)                                         */ \
static void fwd_##SFX(void *ctx, size_t r0, size_t r1, double *acc)             \
{                                                                               \
    (void)acc;                                                                  \
    const act_ctx *c = ctx;                                                     \
    const T *b = c->bias.data;                                                  \
    for (size_t r = r0; r < r1; r++) {                                          \
        const T *x = (const T *)c->x.data + ROW(c->x, r);                       \
        T *y = (T *)c->y.data + ROW(c->y, r);                                   \
        for (size_t j = 0; j < c->n; j++) {                                     \
            T h = x[(ptrdiff_t)j * c->x.s1];                                    \
            if (b)                                                              \
                h += b[(ptrdiff_t)j * c->bias.s1];                              \
            y[(ptrdiff_t)j * c->y.s1] = act_##SFX(c->act, h);                   \
        }                                                                       \
    }                                                                           \
}                                                                               \
/* rows [r0, r1): dx = dy * act'(x + bias); acc (dbias) += dx               */ \
static void bwd_##SFX(void *ctx, size_t r0, size_t r1, double *acc)             \
{                                                                               \
    const act_ctx *c = ctx;                                                     \
    const T *b = c->bias.data;                                                  \
    for (size_t r = r0; r < r1; r++) {                                          \
        const T *x = (const T *)c->x.data + ROW(c->x, r);                       \
        const T *dy = (const T *)c->dy.data + ROW(c->dy, r);                    \
        T *dx = (T *)c->dx.data + ROW(c->dx, r);                                \
        for (size_t j = 0; j < c->n; j++) {                                     \
            T h = x[(ptrdiff_t)j * c->x.s1];                                    \
            if (b)                                                              \
                h += b[(ptrdiff_t)j * c->bias.s1];                              \
            T d = dy[(ptrdiff_t)j * c->dy.s1];                                  \
            T g = c->act == ATTN_ACT_RELU ? (h > 0 ? d : (T)0)                  \
                                          : d * dact_##SFX(c->act, h);          \
            dx[(ptrdiff_t)j * c->dx.s1] = g;                                    \
            if (acc)                                                            \
                acc[j] += (double)g;                                            \
        }                                                                       \
    }                                                                           \
}

DEFINE_ACT(float, f32, erff, tanhf, expf)
DEFINE_ACT(double, f64, erf, tanh, exp)

/* cost of one element, for the thread count */
static double act_work(attn_act act)
{
    return act == ATTN_ACT_GELU || act == ATTN_ACT_GELU_TANH ? 8.0 : 1.0;
}

attn_status attn_bias_act(attn_dtype dtype, attn_act act, size_t nrows,
                          size_t n, attn_mat y, attn_mat x, attn_mat bias,
                          const attn_exec *ex)
{
    if ((dtype != ATTN_F32 && dtype != ATTN_F64) || (unsigned)act > 3)
        return ATTN_EINVAL;
    if (n == 0)
        return ATTN_OK;
    act_ctx c = {.act = act, .n = n, .y = y, .x = x, .bias = bias};
    return attn__rows_run(nrows, n, 0, NULL,
                          dtype == ATTN_F32 ? fwd_f32 : fwd_f64, &c,
                          act_work(act), ex);
}

attn_status attn_bias_act_backward(attn_dtype dtype, attn_act act,
                                   size_t nrows, size_t n, attn_mat dx,
                                   attn_mat dbias, attn_mat dy, attn_mat x,
                                   attn_mat bias, const attn_exec *ex)
{
    if ((dtype != ATTN_F32 && dtype != ATTN_F64) || (unsigned)act > 3)
        return ATTN_EINVAL;
    if (n == 0)
        return ATTN_OK;
    act_ctx c = {.act = act, .n = n, .x = x, .bias = bias, .dx = dx,
                 .dy = dy};
    double *sums = NULL;
    if (dbias.data) {
        if (n > SIZE_MAX / sizeof(double))
            return ATTN_ENOMEM;
        if (!(sums = malloc(n * sizeof(double))))
            return ATTN_ENOMEM;
    }
    attn_status st = attn__rows_run(nrows, n, sums ? 1 : 0, sums,
                                    dtype == ATTN_F32 ? bwd_f32 : bwd_f64, &c,
                                    act_work(act) * 1.5, ex);
    if (st == ATTN_OK)
        attn__store_vec(dtype, dbias, sums, n);
    free(sums);
    return st;
}
