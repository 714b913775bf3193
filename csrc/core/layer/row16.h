/*
 * layer/row16.h -- 16-bit operands of the row kernels (not public): the
 * layer family, softmax, rope and merge read a float16 / bfloat16
 * operand one row at a time into a float scratch row, run their float32
 * code on it, and round a 16-bit result once from that code's float
 * result. So a 16-bit call gives exactly the bits of the float32 call on
 * the exactly widened inputs, rounded once, and never copies a whole
 * array.
 */
#ifndef ATTNPY_LAYER_ROW16_H
#define ATTNPY_LAYER_ROW16_H

#include <stddef.h>
#include <stdint.h>

#include "attn.h"

/* n elements of a row stored as st (ATTN_ST_F16 / ATTN_ST_BF16) at src,
 * column stride s (elements), widened exactly into dst[0 .. n)           */
void attn__row16_load(attn_store st, const void *src, ptrdiff_t s, size_t n,
                      float *dst);
/* src[0 .. n) rounded to nearest even into a row stored as st            */
void attn__row16_store(attn_store st, void *dst, ptrdiff_t s, size_t n,
                       const float *src);

/* 1 when a call's operands hold a 16-bit one; -1 when one is 16-bit but
 * the call's dtype is not ATTN_F32 or a store is unknown (ATTN_EINVAL)   */
int attn__any16(attn_dtype dtype, const attn_mat *const *ops, int nops);

/* The staging of one row kernel call. The kernel's context is copied;
 * each 16-bit operand of the copy is pointed at its own scratch row
 * (boff NULL, s0 0, s1 1, float), so the float32 code, run on row r of
 * the copy, reads the widened inputs and writes the outputs there.      */
enum { ATTN_ROW16_MAX = 8 };
typedef struct {
    int nops;
    size_t n;                       /* elements of a row                 */
    int rows_by_s0;                 /* row r at OFF + r * s0 (layer), or
                                       at OFF alone (softmax)            */
    attn_mat *op[ATTN_ROW16_MAX];   /* the 16-bit operands in the copy   */
    attn_mat orig[ATTN_ROW16_MAX];  /* ... as the caller gave them       */
    unsigned char out[ATTN_ROW16_MAX], vec[ATTN_ROW16_MAX];
} attn_row16;

/* Register operand *m of the copy (already copied from the caller's
 * context): out = written by the kernel, vec = one row shared by every
 * row (a weight or a bias). A native or absent operand is left alone.   */
void attn__row16_add(attn_row16 *s, attn_mat *m, int out, int vec);
/* floats of scratch the registered operands need                        */
size_t attn__row16_floats(const attn_row16 *s);
/* point the operands at scratch (attn__row16_floats() floats) and widen
 * the vectors once                                                       */
void attn__row16_begin(attn_row16 *s, float *scratch);
/* widen row r of every 16-bit row input                                  */
void attn__row16_in(const attn_row16 *s, size_t r);
/* round row r of every 16-bit row output from its scratch row            */
void attn__row16_out(const attn_row16 *s, size_t r);

#endif /* ATTNPY_LAYER_ROW16_H */
