/*
 * isa/neon.c -- the kernels for AArch64 Advanced SIMD (4 floats / 2
 * doubles per register).
 *
 * Compiled on AArch64 only (Linux, macOS on Apple silicon, Windows on
 * Arm), where NEON is always present: picked without a run-time check.
 * Micro-kernels: S^T = K Q^T as 6 keys x 4 vectors and O += P V as 6
 * queries x 4 vectors: 24 accumulators, 4 loads and 1 broadcast, 29 of
 * the 32 vector registers; the backward's O += A B is the same shape.
 * The blocks are unmeasured on ARM hardware (the tests run under
 * qemu-user, which shows correctness only).
 */
#include "isa/kernels.h"

#if ATTN_ARCH_NEON

#define QK_MR 6
#define QK_NR 4
#define PV_MR 6
#define PV_NR 4
#define SM_G 4

#define SIMD_F64 0
#include "simd/vec_neon.h"
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
#include "simd/vec_neon.h"
#include "simd/math.h"
#include "testing/math_rows_tmpl.h"
#include "attention/tile.h"
#include "attention/bwd_tile.h"
#include "layer/act_tmpl.h"
#include "elementwise/softmax_tmpl.h"
#include "simd/undef.h"

const attn_kernels attn__kernels_neon = {
    "neon",
    NULL,
    {
        {4, 2},
        {64, 32},
        {item_neon_f32, item_neon_f64},
        {merge_item_neon_f32, merge_item_neon_f64},
        {bwd_item_a_neon_f32, bwd_item_a_neon_f64},
        {bwd_item_b_neon_f32, bwd_item_b_neon_f64},
        NULL,
    },
    {attn__qrows_q4_1_port, attn__qrows_q8_0_port},
    widen_neon_f32,
    narrow_neon_f32,
    {{act_fwd_neon_f32, act_bwd_neon_f32, glu_fwd_neon_f32, glu_bwd_neon_f32},
     {act_fwd_neon_f64, act_bwd_neon_f64, glu_fwd_neon_f64, glu_bwd_neon_f64}},
    {row_softmax_neon_f32, row_softmax_neon_f64},
    read_sum_neon_f32,
    ATTN_MATH_ROWS_OF(&math_rows_neon_f32, &math_rows_neon_f64),
};

#endif /* ATTN_ARCH_NEON */
