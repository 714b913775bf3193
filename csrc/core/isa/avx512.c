/*
 * isa/avx512.c -- the kernels for AVX-512F (16 floats / 8 doubles).
 *
 * Every function carries __attribute__((target("avx512f,avx2,fma,f16c")))
 * (the primitives' ATTR), so the file is compiled with the module's
 * generic flags and only runs once runtime/isa.c has checked the CPU.
 * Micro-kernels: S^T = K Q^T as 6 keys x 4 vectors and O += P V as 6
 * queries x 4 vectors: 24 accumulators of the 32 zmm registers.
 */
#include "isa/kernels.h"

#if ATTN_ARCH_X86

#define QK_MR 6
#define QK_NR 4
#define PV_MR 6
#define PV_NR 4
#define SM_G 4

#define SIMD_F64 0
#include "simd/vec_avx512.h"
#include "simd/math.h"
#include "testing/math_rows_tmpl.h"
#include "attention/tile.h"
#include "attention/bwd_tile.h"
#include "rows/cvt_tmpl.h"
#include "runtime/read_tmpl.h"
#include "layer/act_tmpl.h"
#include "elementwise/softmax_tmpl.h"
#include "simd/undef.h"

#define SIMD_F64 1
#include "simd/vec_avx512.h"
#include "simd/math.h"
#include "testing/math_rows_tmpl.h"
#include "attention/tile.h"
#include "attention/bwd_tile.h"
#include "layer/act_tmpl.h"
#include "elementwise/softmax_tmpl.h"
#include "simd/undef.h"

const attn_kernels attn__kernels_avx512 = {
    "avx512",
    NULL,
    {
        {16, 8},
        {64, 64},
        {item_avx512_f32, item_avx512_f64},
        {merge_item_avx512_f32, merge_item_avx512_f64},
        {bwd_item_a_avx512_f32, bwd_item_a_avx512_f64},
        {bwd_item_b_avx512_f32, bwd_item_b_avx512_f64},
        NULL,
    },
    {attn__qrows_q4_1_avx512, attn__qrows_q8_0_avx512},
    widen_avx512_f32,
    narrow_avx512_f32,
    {{act_fwd_avx512_f32, act_bwd_avx512_f32, glu_fwd_avx512_f32, glu_bwd_avx512_f32},
     {act_fwd_avx512_f64, act_bwd_avx512_f64, glu_fwd_avx512_f64, glu_bwd_avx512_f64}},
    {row_softmax_avx512_f32, row_softmax_avx512_f64},
    read_sum_avx512_f32,
    ATTN_MATH_ROWS_OF(&math_rows_avx512_f32, &math_rows_avx512_f64),
};

#endif /* ATTN_ARCH_X86 */
