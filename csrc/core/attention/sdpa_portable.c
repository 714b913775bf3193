/*
 * attention/sdpa_portable.c -- the tiled kernel in plain C (any CPU).
 *
 * No intrinsics: vectors of 4 floats / 2 doubles on which the compiler
 * emits the target's SIMD (attention/vec_portable.h). On x86 built with
 * gcc or clang the same code is also compiled for AVX2 with 8 floats /
 * 4 doubles ("portable" runs that one when the CPU has AVX2; "baseline"
 * always the first). Same algorithm, block structure and exp as the SIMD
 * paths; a*b+c is a multiply and an add (never fused), so both variants
 * give the same bits, and differ from the FMA paths in rounding only.
 */
#include "attention/kern.h"

#define QK_MR 6
#define QK_NR 2
#define PV_MR 6
#define PV_NR 2
#define SM_G 4

#define ATTN_VEC_F64 0
#include "attention/vec_portable.h"
#include "attention/tile.h"
#define ATTN_VEC_F64 0
#include "attention/vec_portable.h"
#include "attention/bwd_tile.h"

#define ATTN_VEC_F64 1
#include "attention/vec_portable.h"
#include "attention/tile.h"
#define ATTN_VEC_F64 1
#include "attention/vec_portable.h"
#include "attention/bwd_tile.h"

const attn_isa_desc attn__isa_portable = {
    "portable",
    {4, 2},
    {32, 32},
    {128, 128},
    {item_portable_f32, item_portable_f64},
    {merge_item_portable_f32, merge_item_portable_f64},
    {bwd_item_a_portable_f32, bwd_item_a_portable_f64},
    {bwd_item_b_portable_f32, bwd_item_b_portable_f64},
    NULL,
};
