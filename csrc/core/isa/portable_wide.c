/*
 * isa/portable_wide.c -- the portable kernels compiled for AVX2 + FMA
 * (x86 with gcc or clang): the code of isa/portable.c on 8 floats / 4
 * doubles, the fused multiply-add inline (simd/vec_portable.h's wide
 * variant). What "portable" runs where the CPU has AVX2 + FMA: the same
 * bits as the base build, much faster.
 */
#include "isa/kernels.h"

#if ATTN_HAVE_PORT_WIDE

#define QK_MR 6
#define QK_NR 2
#define PV_MR 6
#define PV_NR 2
#define SM_G 4

#define SIMD_F64 0
#define SIMD_PORT_WIDE 1
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
#define SIMD_PORT_WIDE 1
#include "simd/vec_portable.h"
#include "simd/math.h"
#include "testing/math_rows_tmpl.h"
#include "attention/tile.h"
#include "attention/bwd_tile.h"
#include "layer/act_tmpl.h"
#include "elementwise/softmax_tmpl.h"
#include "simd/undef.h"

const attn_kernels attn__kernels_portw = {
    "portable",
    NULL,
    {
        {8, 4},
        {32, 32},
        {item_portw_f32, item_portw_f64},
        {merge_item_portw_f32, merge_item_portw_f64},
        {bwd_item_a_portw_f32, bwd_item_a_portw_f64},
        {bwd_item_b_portw_f32, bwd_item_b_portw_f64},
        NULL,
    },
    {attn__qrows_q4_1_port, attn__qrows_q8_0_port},
    widen_portw_f32,
    narrow_portw_f32,
    {{act_fwd_portw_f32, act_bwd_portw_f32, glu_fwd_portw_f32, glu_bwd_portw_f32},
     {act_fwd_portw_f64, act_bwd_portw_f64, glu_fwd_portw_f64, glu_bwd_portw_f64}},
    {row_softmax_portw_f32, row_softmax_portw_f64},
    read_sum_portw_f32,
    ATTN_MATH_ROWS_OF(&math_rows_portw_f32, &math_rows_portw_f64),
};

#endif /* ATTN_HAVE_PORT_WIDE */
