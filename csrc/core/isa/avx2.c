/*
 * isa/avx2.c -- the kernels for AVX2 + FMA (8 floats / 4 doubles).
 *
 * Every function carries __attribute__((target("avx2,fma,f16c"))) (the
 * primitives' ATTR), so the file is compiled with the module's generic
 * flags and only runs once runtime/isa.c has checked the CPU.
 * Micro-kernels: S^T = K Q^T as 6 keys x 2 vectors and O += P V as 6
 * queries x 2 vectors: 12 accumulators, 2 loads and 1 broadcast, 15 of
 * the 16 ymm registers.
 */
#include "isa/kernels.h"

#if ATTN_ARCH_X86

#define QK_MR 6
#define QK_NR 2
#define PV_MR 6
#define PV_NR 2
#define SM_G 2
/* decoding's scores: K blocks transposed in registers (tile_kern.h) */
#define QK_FEW_REG 1
/* one-row decoding asks for the next K / V block ahead (tile.h)      */
#define TILE_PREFETCH_NEXT 1

#define SIMD_F64 0
#include "simd/vec_avx2.h"
#include "simd/math.h"
#include "simd/math_rows_tmpl.h"
#include "attention/tile.h"
#include "attention/bwd_tile.h"
#include "rows/cvt_tmpl.h"
#include "runtime/read_tmpl.h"
#include "layer/act_tmpl.h"
#include "elementwise/softmax_tmpl.h"
#include "simd/undef.h"

#define SIMD_F64 1
#include "simd/vec_avx2.h"
#include "simd/math.h"
#include "simd/math_rows_tmpl.h"
#include "attention/tile.h"
#include "attention/bwd_tile.h"
#include "layer/act_tmpl.h"
#include "elementwise/softmax_tmpl.h"
#include "simd/undef.h"

const attn_kernels attn__kernels_avx2 = {
    "avx2",
    NULL,
    {
        {8, 4},
        {64, 32},
        {item_avx2_f32, item_avx2_f64},
        {merge_item_avx2_f32, merge_item_avx2_f64},
        {bwd_item_a_avx2_f32, bwd_item_a_avx2_f64},
        {bwd_item_b_avx2_f32, bwd_item_b_avx2_f64},
        NULL,
    },
    {attn__qrows_q4_1_avx2, attn__qrows_q8_0_avx2},
    widen_avx2_f32,
    narrow_avx2_f32,
    {{act_fwd_avx2_f32, act_bwd_avx2_f32, glu_fwd_avx2_f32, glu_bwd_avx2_f32},
     {act_fwd_avx2_f64, act_bwd_avx2_f64, glu_fwd_avx2_f64, glu_bwd_avx2_f64}},
    {row_softmax_avx2_f32, row_softmax_avx2_f64},
    read_sum_avx2_f32,
    ATTN_MATH_ROWS_OF(&math_rows_avx2_f32, &math_rows_avx2_f64),
};

#endif /* ATTN_ARCH_X86 */
