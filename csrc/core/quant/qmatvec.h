/*
 * quant/qmatvec.h -- the quant family's private pieces: block sizes and
 * the per-ISA row kernels of qmatvec.c (not public).
 *
 * Every path computes a dot product x . w of K = 32 nb values in ONE
 * order, so that the AVX-512, AVX2 and portable paths give the same bits:
 * 32 float accumulators, acc[j] for j = 0..31 (the position inside a
 * block), each an fmaf chain (attn_fmaf, simd/fma.h) over the blocks in order (acc[j] =
 * fmaf(x[32 b + j], w[32 b + j], acc[j]), from +0); then acc[l] +=
 * acc[l + 16] (l < 16), acc[l] += acc[l + 8] (l < 8), then + 4, + 2,
 * + 1: the sum is acc[0]. The weights are exactly gguf's dequantized
 * floats: Q4_1 w = d q + m (d q is exact: d has 11 significant bits,
 * q <= 15), Q8_0 w = d q (exact: q has 8 bits).
 */
#ifndef ATTNPY_QMATVEC_H
#define ATTNPY_QMATVEC_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "attn.h"
#include "simd/fma.h"

#define QK 32             /* weights per block (both types)               */
#define Q4_1_BYTES 20     /* f16 d, f16 m, 16 bytes: weight j < 16 is the
                             low nibble of byte j, weight 16 + j its high  */
#define Q8_0_BYTES 34     /* f16 d, 32 int8                               */

/* y[r] = x . row r of w, r = 0..nrows-1 (w rows ldw bytes apart, nb blocks
 * each): one ISA's kernel, in the order above                            */
typedef void attn__qrows(float *y, const float *x, const uint8_t *w,
                         size_t ldw, size_t nrows, size_t nb);
typedef attn__qrows *attn__qrows_fn;

/* the kernels (qmatvec.c, qmatvec_x86.c), declared by their type        */
attn__qrows attn__qrows_q4_1_port, attn__qrows_q8_0_port;
attn__qrows attn__qrows_q4_1_avx512, attn__qrows_q8_0_avx512;
attn__qrows attn__qrows_q4_1_avx2, attn__qrows_q8_0_avx2;

#endif /* ATTNPY_QMATVEC_H */
