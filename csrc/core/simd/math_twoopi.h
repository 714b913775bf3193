/*
 * simd/math_twoopi.h -- written by tools/fit_math.py (do not edit: run it):
 * the bits of 2/pi after the binary point, 64 a word, most significant
 * first (attn__twoopi[0] >> 63 is the bit of weight 1/2), for the
 * exact reduction of large sin / cos arguments (simd/scalar.c).
 */
#ifndef ATTNPY_SIMD_MATH_TWOOPI_H
#define ATTNPY_SIMD_MATH_TWOOPI_H

#include <stdint.h>

#define ATTN_TWOOPI_WORDS 24
static const uint64_t attn__twoopi[ATTN_TWOOPI_WORDS] = {
    0xa2f9836e4e441529ull, 0xfc2757d1f534ddc0ull, 0xdb6295993c439041ull,
    0xfe5163abdebbc561ull, 0xb7246e3a424dd2e0ull, 0x06492eea09d1921cull,
    0xfe1deb1cb129a73eull, 0xe88235f52ebb4484ull, 0xe99c7026b45f7e41ull,
    0x3991d639835339f4ull, 0x9c845f8bbdf9283bull, 0x1ff897ffde05980full,
    0xef2f118b5a0a6d1full, 0x6d367ecf27cb09b7ull, 0x4f463f669e5fea2dull,
    0x7527bac7ebe5f17bull, 0x3d0739f78a5292eaull, 0x6bfb5fb11f8d5d08ull,
    0x56033046fc7b6babull, 0xf0cfbc209af4361dull, 0xa9e391615ee61b08ull,
    0x6599855f14a06840ull, 0x8dffd8804d732731ull, 0x06061556ca73a8c9ull,
};

#endif /* ATTNPY_SIMD_MATH_TWOOPI_H */
