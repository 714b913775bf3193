/*
 * layer/act_vec.h -- the activations' constants, and the vector rows of
 * act_avx2.c (internal to the layer family).
 */
#ifndef ATTNPY_LAYER_ACT_VEC_H
#define ATTNPY_LAYER_ACT_VEC_H

#include <stddef.h>

#include "attn.h"
#include "runtime/platform.h"

#define GELU_SQRT1_2 0.70710678118654752440   /* 1 / sqrt(2)              */
#define GELU_INV_SQRT_2PI 0.39894228040143267794 /* 1 / sqrt(2 pi)        */
#define GELU_BETA 0.79788456080286535588      /* sqrt(2 / pi)             */
#define GELU_KAPPA 0.044715

/* 1 when attn__gelu_row_f32_avx2 may run (x86 with AVX2 + FMA)          */
int attn__gelu_avx2_ok(void);

/* One unit-stride float32 row of n elements, h = x + b (b may be NULL):
 * dy == NULL: out = gelu(h); else out = dy * gelu'(h) and, when acc is
 * not NULL, acc[j] += out[j]. tanh_form: the tanh approximation. out may
 * be x or dy (in place).                                                  */
void attn__gelu_row_f32_avx2(int tanh_form, size_t n, float *out,
                             const float *x, const float *b, const float *dy,
                             double *acc);

/* One unit-stride float32 row: y = silu(g) * u (u NULL: silu(g)), with
 * act_avx2.c's exp; y may be g or u (in place).                          */
void attn__swiglu_row_f32_avx2(size_t n, float *y, const float *g,
                               const float *u);

/* One unit-stride row whose operands may be float16 / bfloat16 (each
 * its own st; 16-bit lanes widened in registers, a 16-bit out rounded
 * once from the float result: the bits of the float32 row). gelu: out =
 * gelu(x + b) or dy * gelu'(x + b) (acc: as above); swiglu: out =
 * silu(x) [* b] (x the gate, b the up row). NULL: absent.               */
typedef struct {
    void *out;
    const void *x, *b, *dy;
    attn_store ost, xst, bst, dyst;
} attn_vrow;
void attn__gelu_row_avx2(int tanh_form, size_t n, const attn_vrow *r,
                         double *acc);
void attn__swiglu_row_avx2(size_t n, const attn_vrow *r);

#endif /* ATTNPY_LAYER_ACT_VEC_H */
