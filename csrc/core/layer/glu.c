/*
 * layer/glu.c -- SiLU and the gated unit of Llama's feed-forward network,
 * silu(gate) * up, forward and backward, in one pass over the rows (the
 * driver of rows.c). Instantiated for float and double from one macro
 * body; computed in the precision of the element type (expf / exp), as
 * PyTorch computes F.silu(gate) * up. The float32 forward pass runs 8
 * lanes at a time on AVX2 + FMA (act_avx2.c, its own exp: within a few
 * ulp of expf's result; below -87.3, e^g is flushed to 0), for every
 * layout alike: strided rows go through unit-stride blocks. 16-bit
 * operands run the float code on rows staged in float scratch (row16.h).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "layer/act_vec.h"
#include "layer/rows.h"

typedef struct {
    size_t n;
    int vec;                   /* float32 forward rows by act_avx2.c      */
    attn_mat y, gate, up;      /* forward: y = silu(gate) [* up]           */
    attn_mat dgate, dup, dy;   /* backward                                 */
} glu_ctx;

#if defined(__GNUC__)
#define GLU_INLINE __attribute__((always_inline))
#else
#define GLU_INLINE
#endif

/* silu(g) = g sigmoid(g) = g / (1 + exp(-g)): -inf -> -0, +inf -> +inf;
 * silu'(g) = s (1 + g (1 - s)) with s = sigmoid(g).                      */
#define DEFINE_GLU(T, SFX, EXP)                                                \
static inline GLU_INLINE T silu_##SFX(T g)                                     \
{                                                                              \
    return g / ((T)1 + EXP(-g));                                               \
}                                                                              \
/* one row; `unit`: every stride 1 (a constant after inlining)          */    \
static inline GLU_INLINE void fwd_row_##SFX(const glu_ctx *c, size_t r,       \
                                            int unit)                         \
{                                                                              \
    const size_t n = c->n;                                                     \
    const T *g = (const T *)c->gate.data + ROW(c->gate, r);                    \
    T *y = (T *)c->y.data + ROW(c->y, r);                                      \
    const ptrdiff_t sg = unit ? 1 : c->gate.s1, sy = unit ? 1 : c->y.s1,       \
                    su = unit ? 1 : c->up.s1;                                  \
    if (c->up.data) {                                                          \
        const T *u = (const T *)c->up.data + ROW(c->up, r);                    \
        for (size_t j = 0; j < n; j++)                                         \
            y[(ptrdiff_t)j * sy] =                                             \
                silu_##SFX(g[(ptrdiff_t)j * sg]) * u[(ptrdiff_t)j * su];       \
    } else {                                                                   \
        for (size_t j = 0; j < n; j++)                                         \
            y[(ptrdiff_t)j * sy] = silu_##SFX(g[(ptrdiff_t)j * sg]);           \
    }                                                                          \
}                                                                              \
static void fwd_##SFX(void *ctx, size_t r0, size_t r1, double *acc)            \
{                                                                              \
    (void)acc;                                                                 \
    const glu_ctx *c = ctx;                                                    \
    if (vec_rows_##SFX(c, r0, r1))                                             \
        return;                                                                \
    int unit = c->gate.s1 == 1 && c->y.s1 == 1                                 \
               && (!c->up.data || c->up.s1 == 1);                              \
    for (size_t r = r0; r < r1; r++) {                                         \
        if (unit)                                                              \
            fwd_row_##SFX(c, r, 1);                                            \
        else                                                                   \
            fwd_row_##SFX(c, r, 0);                                            \
    }                                                                          \
}                                                                              \
/* dgate = dy [* up] * silu'(gate), dup = dy * silu(gate); every input  */    \
/* read before an output of the same element is written (in place)      */    \
static void bwd_##SFX(void *ctx, size_t r0, size_t r1, double *acc)            \
{                                                                              \
    (void)acc;                                                                 \
    const glu_ctx *c = ctx;                                                    \
    for (size_t r = r0; r < r1; r++) {                                         \
        const T *g = (const T *)c->gate.data + ROW(c->gate, r);                \
        const T *dy = (const T *)c->dy.data + ROW(c->dy, r);                   \
        const T *u = c->up.data ? (const T *)c->up.data + ROW(c->up, r)        \
                                : NULL;                                        \
        T *dg = (T *)c->dgate.data + ROW(c->dgate, r);                         \
        T *du = c->dup.data ? (T *)c->dup.data + ROW(c->dup, r) : NULL;        \
        for (size_t j = 0; j < c->n; j++) {                                    \
            T gj = g[(ptrdiff_t)j * c->gate.s1];                               \
            T d = dy[(ptrdiff_t)j * c->dy.s1];                                 \
            T s = (T)1 / ((T)1 + EXP(-gj));                                    \
            T ds = s * ((T)1 + gj * ((T)1 - s));                               \
            T uj = u ? u[(ptrdiff_t)j * c->up.s1] : (T)1;                      \
            dg[(ptrdiff_t)j * c->dgate.s1] = d * uj * ds;                      \
            if (du)                                                            \
                du[(ptrdiff_t)j * c->dup.s1] = d * (gj * s);                   \
        }                                                                      \
    }                                                                          \
}

/* one row of vec_rows_f32 with any strides, in unit-stride blocks       */
static void vec_row_strided(const glu_ctx *c, size_t r)
{
    enum { BLK = 256 };
    float gb[BLK], ub[BLK];
    const float *g = (const float *)c->gate.data + ROW(c->gate, r);
    const float *u = c->up.data ? (const float *)c->up.data + ROW(c->up, r)
                                : NULL;
    float *y = (float *)c->y.data + ROW(c->y, r);
    for (size_t j0 = 0; j0 < c->n; j0 += BLK) {
        size_t m = c->n - j0 < BLK ? c->n - j0 : BLK;
        for (size_t j = 0; j < m; j++) {
            gb[j] = g[(ptrdiff_t)(j0 + j) * c->gate.s1];
            if (u)
                ub[j] = u[(ptrdiff_t)(j0 + j) * c->up.s1];
        }
        attn__swiglu_row_f32_avx2(m, gb, gb, u ? ub : NULL);
        for (size_t j = 0; j < m; j++)
            y[(ptrdiff_t)(j0 + j) * c->y.s1] = gb[j];
    }
}

/* every forward operand unit-stride (its 16-bit ones are then read and
 * written in registers, not staged)                                      */
static int vec_unit(const glu_ctx *c)
{
    return c->gate.s1 == 1 && c->y.s1 == 1
           && (!c->up.data || c->up.s1 == 1);
}

/* rows [r0, r1) of the forward pass by act_avx2.c when c->vec; 1 if done */
static int vec_rows_f32(const glu_ctx *c, size_t r0, size_t r1)
{
    if (!c->vec)
        return 0;
    int unit = vec_unit(c);
    for (size_t r = r0; r < r1; r++) {
        if (!unit) {
            vec_row_strided(c, r);
            continue;
        }
        const attn_vrow v = {attn__row_at(c->y, r), attn__row_at(c->gate, r),
                             c->up.data ? attn__row_at(c->up, r) : NULL,
                             NULL, c->y.store, c->gate.store, c->up.store,
                             ATTN_ST_NATIVE};
        attn__swiglu_row_avx2(c->n, &v);
    }
    return 1;
}

static int vec_rows_f64(const glu_ctx *c, size_t r0, size_t r1)
{
    (void)c, (void)r0, (void)r1;
    return 0;
}

DEFINE_GLU(float, f32, expf)
DEFINE_GLU(double, f64, exp)

/* the operands of a context copy, for 16-bit staging (rows.h): forward
 * (y, gate, up) or backward (dgate, dup, dy, gate, up)                 */
static void glu_reg(void *copy, attn_row16 *s)
{
    glu_ctx *c = copy;
    attn__row16_add(s, &c->y, 1, 0);
    attn__row16_add(s, &c->dgate, 1, 0);
    attn__row16_add(s, &c->dup, 1, 0);
    attn__row16_add(s, &c->gate, 0, 0);
    attn__row16_add(s, &c->up, 0, 0);
    attn__row16_add(s, &c->dy, 0, 0);
}

attn_status attn_swiglu(attn_dtype dtype, size_t nrows, size_t n, attn_mat y,
                        attn_mat gate, attn_mat up, const attn_exec *ex)
{
    if (dtype != ATTN_F32 && dtype != ATTN_F64)
        return ATTN_EINVAL;
    if (n == 0)
        return ATTN_OK;
    glu_ctx c = {.n = n, .y = y, .gate = gate, .up = up,
                 .vec = dtype == ATTN_F32 && attn__gelu_avx2_ok()};
    const attn_rows16 h = {&c, sizeof c, glu_reg};
    int h16 = attn__rows16_need(&h, dtype);
    if (h16 < 0)
        return ATTN_EINVAL;
    if (c.vec && vec_unit(&c)) /* 16-bit lanes converted in registers */
        h16 = 0;
    return attn__rows_run16(nrows, n, 0, NULL,
                            dtype == ATTN_F32 ? fwd_f32 : fwd_f64, &c,
                            h16 ? &h : NULL, 8.0, ex);
}

attn_status attn_swiglu_backward(attn_dtype dtype, size_t nrows, size_t n,
                                 attn_mat dgate, attn_mat dup, attn_mat dy,
                                 attn_mat gate, attn_mat up,
                                 const attn_exec *ex)
{
    if (dtype != ATTN_F32 && dtype != ATTN_F64)
        return ATTN_EINVAL;
    if (n == 0)
        return ATTN_OK;
    glu_ctx c = {.n = n, .gate = gate, .up = up, .dgate = dgate, .dup = dup,
                 .dy = dy};
    const attn_rows16 h = {&c, sizeof c, glu_reg};
    const int h16 = attn__rows16_need(&h, dtype);
    if (h16 < 0)
        return ATTN_EINVAL;
    return attn__rows_run16(nrows, n, 0, NULL,
                            dtype == ATTN_F32 ? bwd_f32 : bwd_f64, &c,
                            h16 ? &h : NULL, 12.0, ex);
}
