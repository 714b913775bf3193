/*
 * isa/portable.c -- the portable kernels: plain C (simd/vec_portable.h),
 * 4 floats / 2 doubles, compiled for the build's base target. This is
 * the numeric rule every other set follows bit for bit. "baseline" runs
 * these; "portable" runs them, or their AVX2 + FMA build
 * (isa/portable_wide.c: the same code, the same bits) where the CPU has
 * it.
 */
#include "isa/kernels.h"

#define QK_MR 6
#define QK_NR 2
#define PV_MR 6
#define PV_NR 2
#define SM_G 4

#define SIMD_F64 0
#include "simd/vec_portable.h"
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
#include "simd/vec_portable.h"
#include "simd/math.h"
#include "testing/math_rows_tmpl.h"
#include "attention/tile.h"
#include "attention/bwd_tile.h"
#include "layer/act_tmpl.h"
#include "elementwise/softmax_tmpl.h"
#include "simd/undef.h"

const attn_kernels attn__kernels_port = {
    "baseline",
    NULL,
    {
        {4, 2},
        {32, 32},
        {item_port_f32, item_port_f64},
        {merge_item_port_f32, merge_item_port_f64},
        {bwd_item_a_port_f32, bwd_item_a_port_f64},
        {bwd_item_b_port_f32, bwd_item_b_port_f64},
        NULL,
    },
    {attn__qrows_q4_1_port, attn__qrows_q8_0_port},
    widen_port_f32,
    narrow_port_f32,
    {{act_fwd_port_f32, act_bwd_port_f32, glu_fwd_port_f32, glu_bwd_port_f32},
     {act_fwd_port_f64, act_bwd_port_f64, glu_fwd_port_f64, glu_bwd_port_f64}},
    {row_softmax_port_f32, row_softmax_port_f64},
    read_sum_port_f32,
    ATTN_MATH_ROWS_OF(&math_rows_port_f32, &math_rows_port_f64),
};
