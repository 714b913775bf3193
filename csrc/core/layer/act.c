/*
 * layer/act.c -- bias + activation, forward and backward: the feed-forward
 * network's relu(x W1 + b1) (and gelu, gelu_tanh) in one pass after the
 * matrix product; gelu alone is the same kernel without a bias.
 * Instantiated for float and double from one macro body; 16-bit operands
 * run the float code on rows staged in float scratch (row16.h).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "layer/act_vec.h"
#include "layer/rows.h"

typedef struct {
    attn_act act;
    size_t n;
    attn_mat y, x, bias;       /* forward                                  */
    attn_mat dx, dy;           /* backward (y unused)                      */
    int vec;                   /* float32 gelu rows by act_avx2.c          */
} act_ctx;

#if defined(__GNUC__)
#define ACT_INLINE __attribute__((always_inline))
#else
#define ACT_INLINE
#endif

/* CALL with ACT, UNIT replaced by constants: the activation c->act and
 * whether every stride is 1 (`unit`), so each combination is its own loop */
#define ACT_CASE(CALL, A)                                                      \
    case A:                                                                    \
        if (unit) {                                                            \
            enum { ACT = A, UNIT = 1 };                                        \
            CALL;                                                              \
        } else {                                                               \
            enum { ACT = A, UNIT = 0 };                                        \
            CALL;                                                              \
        }                                                                      \
        break;
#define ACT_DISPATCH(CALL)                                                     \
    switch (c->act) {                                                          \
        ACT_CASE(CALL, ATTN_ACT_NONE)                                          \
        ACT_CASE(CALL, ATTN_ACT_RELU)                                          \
        ACT_CASE(CALL, ATTN_ACT_GELU)                                          \
        ACT_CASE(CALL, ATTN_ACT_GELU_TANH)                                     \
    }

/* act(h) and act'(h) in the precision of T (ERF, TANH, EXP: its libm);   */
/* keep(v, k): v where k, else +0, without a branch (relu's choice on real */
/* activations would be mispredicted half the time); NaN is kept          */
#define DEFINE_ACT(T, U, SFX, ERF, TANH, EXP)                                  \
static inline ACT_INLINE T keep_##SFX(T v, int k)                              \
{                                                                              \
    U bits;                                                                    \
    memcpy(&bits, &v, sizeof bits);                                            \
    bits &= (U)0 - (U)(k != 0);                                                \
    memcpy(&v, &bits, sizeof v);                                               \
    return v;                                                                  \
}                                                                              \
static inline ACT_INLINE T act_##SFX(attn_act act, T h)                        \
{                                                                              \
    switch (act) {                                                             \
    case ATTN_ACT_RELU:                                                        \
        return keep_##SFX(h, !(h < 0));                                     \
    case ATTN_ACT_GELU:                                                        \
        return (T)0.5 * h * ((T)1 + ERF(h * (T)GELU_SQRT1_2));                 \
    case ATTN_ACT_GELU_TANH: {                                                 \
        T inner = (T)GELU_BETA * (h + (T)GELU_KAPPA * (h * h * h));            \
        return (T)0.5 * h * ((T)1 + TANH(inner));                              \
    }                                                                          \
    default:                                                                   \
        return h;                                                              \
    }                                                                          \
}                                                                              \
static inline ACT_INLINE T dact_##SFX(attn_act act, T h)                       \
{                                                                              \
    switch (act) {                                                             \
    case ATTN_ACT_RELU:                                                        \
        return h > 0 ? (T)1 : (T)0;                                            \
    case ATTN_ACT_GELU: {                                                      \
        T cdf = (T)0.5 * ((T)1 + ERF(h * (T)GELU_SQRT1_2));                    \
        T pdf = EXP((T)-0.5 * h * h) * (T)GELU_INV_SQRT_2PI;                   \
        return cdf + h * pdf;                                                  \
    }                                                                          \
    case ATTN_ACT_GELU_TANH: {                                                 \
        T h2 = h * h;                                                          \
        T t = TANH((T)GELU_BETA * (h + (T)GELU_KAPPA * (h2 * h)));             \
        T dinner = (T)GELU_BETA * ((T)1 + (T)(3 * GELU_KAPPA) * h2);           \
        return (T)0.5 * ((T)1 + t) + (T)0.5 * h * ((T)1 - t * t) * dinner;     \
    }                                                                          \
    default:                                                                   \
        return (T)1;                                                           \
    }                                                                          \
}                                                                              \
/* one row, activation A fixed (a constant after inlining: one loop per  */ \
/* activation, branch-free relu), unit: every column stride 1            */ \
static inline ACT_INLINE void fwd_row_##SFX(const act_ctx *c, size_t r,       \
                                            attn_act A, int unit)             \
{                                                                              \
    const size_t n = c->n; /* a local: stores to y cannot change it */        \
    const T *b = c->bias.data;                                                 \
    const T *x = (const T *)c->x.data + ROW(c->x, r);                          \
    T *y = (T *)c->y.data + ROW(c->y, r);                                      \
    const ptrdiff_t sx = unit ? 1 : c->x.s1, sy = unit ? 1 : c->y.s1,          \
                    sb = unit ? 1 : c->bias.s1;                                \
    if (b) /* two loops: no branch in either (relu's vectorises)      */ \
        for (size_t j = 0; j < n; j++)                                      \
            y[(ptrdiff_t)j * sy] =                                             \
                act_##SFX(A, x[(ptrdiff_t)j * sx] + b[(ptrdiff_t)j * sb]);     \
    else                                                                       \
        for (size_t j = 0; j < n; j++)                                      \
            y[(ptrdiff_t)j * sy] = act_##SFX(A, x[(ptrdiff_t)j * sx]);         \
}                                                                              \
static inline ACT_INLINE void bwd_row_##SFX(const act_ctx *c, size_t r,       \
                                            double *acc, attn_act A,          \
                                            int unit)                         \
{                                                                              \
    const size_t n = c->n;                                                     \
    const T *b = c->bias.data;                                                 \
    const T *x = (const T *)c->x.data + ROW(c->x, r);                          \
    const T *dy = (const T *)c->dy.data + ROW(c->dy, r);                       \
    T *dx = (T *)c->dx.data + ROW(c->dx, r);                                   \
    const ptrdiff_t sx = unit ? 1 : c->x.s1, sdy = unit ? 1 : c->dy.s1,        \
                    sdx = unit ? 1 : c->dx.s1, sb = unit ? 1 : c->bias.s1;     \
    for (size_t j = 0; j < n; j++) {                                        \
        T h = x[(ptrdiff_t)j * sx];                                            \
        if (b)                                                                 \
            h += b[(ptrdiff_t)j * sb];                                         \
        T d = dy[(ptrdiff_t)j * sdy];                                          \
        T g = A == ATTN_ACT_RELU ? keep_##SFX(d, h > 0)                        \
                                 : d * dact_##SFX(A, h);                       \
        dx[(ptrdiff_t)j * sdx] = g;                                            \
        if (acc)                                                               \
            acc[j] += (double)g;                                               \
    }                                                                          \
}                                                                              \
/* rows [r0, r1): y = act(x + bias)                                         */ \
static void fwd_##SFX(void *ctx, size_t r0, size_t r1, double *acc)            \
{                                                                              \
    (void)acc;                                                                 \
    const act_ctx *c = ctx;                                                    \
    int unit = c->x.s1 == 1 && c->y.s1 == 1                                    \
               && (!c->bias.data || c->bias.s1 == 1);                          \
    if (vec_rows_##SFX(c, r0, r1, NULL))                                       \
        return;                                                                \
    for (size_t r = r0; r < r1; r++)                                           \
        ACT_DISPATCH(fwd_row_##SFX(c, r, (attn_act)ACT, UNIT));                \
}                                                                              \
/* rows [r0, r1): dx = dy * act'(x + bias); acc (dbias) += dx               */ \
static void bwd_##SFX(void *ctx, size_t r0, size_t r1, double *acc)            \
{                                                                              \
    const act_ctx *c = ctx;                                                    \
    int unit = c->x.s1 == 1 && c->dy.s1 == 1 && c->dx.s1 == 1                  \
               && (!c->bias.data || c->bias.s1 == 1);                          \
    if (vec_rows_##SFX(c, r0, r1, acc))                                        \
        return;                                                                \
    for (size_t r = r0; r < r1; r++)                                           \
        ACT_DISPATCH(bwd_row_##SFX(c, r, acc, (attn_act)ACT, UNIT));           \
}

/* one row of vec_rows_f32 with any strides: in blocks gathered into unit
 * stride buffers, so that every layout gets the same bits               */
static void vec_row_strided(const act_ctx *c, size_t r, double *acc)
{
    enum { BLK = 256 };
    float xb[BLK], bb[BLK], db[BLK];
    const float *x = (const float *)c->x.data + ROW(c->x, r);
    const float *b = c->bias.data;
    const float *dy = c->dy.data
                          ? (const float *)c->dy.data + ROW(c->dy, r) : NULL;
    attn_mat o = dy ? c->dx : c->y;
    float *out = (float *)o.data + ROW(o, r);
    for (size_t j0 = 0; j0 < c->n; j0 += BLK) {
        size_t m = c->n - j0 < BLK ? c->n - j0 : BLK;
        for (size_t j = 0; j < m; j++) {
            xb[j] = x[(ptrdiff_t)(j0 + j) * c->x.s1];
            if (b)
                bb[j] = b[(ptrdiff_t)(j0 + j) * c->bias.s1];
            if (dy)
                db[j] = dy[(ptrdiff_t)(j0 + j) * c->dy.s1];
        }
        attn__gelu_row_f32_avx2(c->act == ATTN_ACT_GELU_TANH, m, xb, xb,
                                b ? bb : NULL, dy ? db : NULL,
                                acc ? acc + j0 : NULL);
        for (size_t j = 0; j < m; j++)
            out[(ptrdiff_t)(j0 + j) * o.s1] = xb[j];
    }
}

/* every operand of the vector code unit-stride (its 16-bit ones are
 * then read and written in registers, not staged)                       */
static int vec_unit(const act_ctx *c)
{
    return c->x.s1 == 1 && (!c->bias.data || c->bias.s1 == 1)
           && (c->dy.data ? c->dy.s1 == 1 && c->dx.s1 == 1 : c->y.s1 == 1);
}

/* rows [r0, r1) by the vector code when c->vec (float32 gelu): forward
 * when c->dy is empty, else backward; 1 if done                          */
static int vec_rows_f32(const act_ctx *c, size_t r0, size_t r1, double *acc)
{
    if (!c->vec)
        return 0;
    int tanh_form = c->act == ATTN_ACT_GELU_TANH;
    int unit = vec_unit(c);
    attn_mat o = c->dy.data ? c->dx : c->y;
    for (size_t r = r0; r < r1; r++) {
        if (!unit) {
            vec_row_strided(c, r, acc);
            continue;
        }
        attn_vrow v = {attn__row_at(o, r), attn__row_at(c->x, r),
                       c->bias.data, NULL, o.store, c->x.store,
                       c->bias.store, ATTN_ST_NATIVE};
        if (c->dy.data) {
            v.dy = attn__row_at(c->dy, r);
            v.dyst = c->dy.store;
        }
        attn__gelu_row_avx2(tanh_form, c->n, &v, c->dy.data ? acc : NULL);
    }
    return 1;
}

static int vec_rows_f64(const act_ctx *c, size_t r0, size_t r1, double *acc)
{
    (void)c, (void)r0, (void)r1, (void)acc;
    return 0;
}

/* whether float32 gelu rows go to act_avx2.c                            */
static int use_vec(attn_dtype dtype, attn_act act)
{
    return dtype == ATTN_F32
           && (act == ATTN_ACT_GELU || act == ATTN_ACT_GELU_TANH)
           && attn__gelu_avx2_ok();
}

DEFINE_ACT(float, uint32_t, f32, erff, tanhf, expf)
DEFINE_ACT(double, uint64_t, f64, erf, tanh, exp)

/* the operands of a context copy, for 16-bit staging (rows.h): forward
 * (y, x, bias) or backward (dx, dy, x, bias), the others absent        */
static void act_reg(void *copy, attn_row16 *s)
{
    act_ctx *c = copy;
    attn__row16_add(s, &c->y, 1, 0);
    attn__row16_add(s, &c->dx, 1, 0);
    attn__row16_add(s, &c->x, 0, 0);
    attn__row16_add(s, &c->dy, 0, 0);
    attn__row16_add(s, &c->bias, 0, 1);
}

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
    act_ctx c = {.act = act, .n = n, .y = y, .x = x, .bias = bias,
                 .vec = use_vec(dtype, act)};
    const attn_rows16 h = {&c, sizeof c, act_reg};
    int h16 = attn__rows16_need(&h, dtype);
    if (h16 < 0)
        return ATTN_EINVAL;
    if (c.vec && vec_unit(&c)) /* 16-bit lanes converted in registers */
        h16 = 0;
    return attn__rows_run16(nrows, n, 0, NULL,
                            dtype == ATTN_F32 ? fwd_f32 : fwd_f64, &c,
                            h16 ? &h : NULL, act_work(act), ex);
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
                 .dy = dy, .vec = use_vec(dtype, act)};
    const attn_rows16 h = {&c, sizeof c, act_reg};
    int h16 = attn__rows16_need(&h, dtype);
    const attn_mat *vecs[] = {&dbias};
    if (h16 < 0 || attn__any16(dtype, vecs, 1) < 0)
        return ATTN_EINVAL;
    if (c.vec && vec_unit(&c)) /* 16-bit lanes converted in registers */
        h16 = 0;
    double *sums = NULL;
    if (dbias.data) {
        if (n > SIZE_MAX / sizeof(double))
            return ATTN_ENOMEM;
        if (!(sums = malloc(n * sizeof(double))))
            return ATTN_ENOMEM;
    }
    attn_status st = attn__rows_run16(nrows, n, sums ? 1 : 0, sums,
                                      dtype == ATTN_F32 ? bwd_f32 : bwd_f64,
                                      &c, h16 ? &h : NULL,
                                      act_work(act) * 1.5, ex);
    if (st == ATTN_OK)
        attn__store_vec(dtype, dbias, sums, n);
    free(sums);
    return st;
}
