/*
 * attention/sdpa_avx2.c -- the tiled kernel for AVX2 + FMA (8 floats / 4 doubles).
 *
 * Every function here carries __attribute__((target("avx2,fma"))) (ATTR),
 * so the file is compiled with the same generic flags as the rest of the
 * module and only runs when the driver has checked the CPU
 * (__builtin_cpu_supports). Micro-kernels: S^T = K Q^T as 6 keys x 2
 * vectors and O += P V as 6 queries x 2 vectors: 12 accumulators, 2 loads
 * and 1 broadcast, 15 of the 16 ymm registers.
 */
#include "attention/kern.h"

#if ATTN_HAVE_X86

#define QK_MR 6
#define QK_NR 2
#define PV_MR 6
#define PV_NR 2
#define SM_G 2

#define ATTN_VEC_F64 0
#include "attention/vec_avx2.h"
#include "attention/tile.h"
#define ATTN_VEC_F64 0
#include "attention/vec_avx2.h"
#include "attention/bwd_tile.h"

#define ATTN_VEC_F64 1
#include "attention/vec_avx2.h"
#include "attention/tile.h"
#define ATTN_VEC_F64 1
#include "attention/vec_avx2.h"
#include "attention/bwd_tile.h"

const attn_isa_desc attn__isa_avx2 = {
    "avx2",
    {8, 4},
    {64, 32},
    {48, 48},
    {item_avx2_f32, item_avx2_f64},
    {merge_item_avx2_f32, merge_item_avx2_f64},
    {bwd_item_a_avx2_f32, bwd_item_a_avx2_f64},
    {bwd_item_b_avx2_f32, bwd_item_b_avx2_f64},
    NULL,
};

#endif /* ATTN_HAVE_X86 */
