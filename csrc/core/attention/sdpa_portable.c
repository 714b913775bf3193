/*
 * attention/sdpa_portable.c -- the tiled kernel in plain C (any CPU).
 *
 * "Vectors" are small structs of W lanes operated on by loops the compiler
 * may vectorise with whatever the baseline target offers (SSE2 on x86-64).
 * Same algorithm, block structure and exp as the SIMD paths; only the
 * rounding of a*b+c (no FMA) differs.
 */
#include "attention/kern.h"

#define QK_MR 4
#define QK_NR 2
#define PV_MR 4
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
    {PW_F, PW_D},
    {32, 32},
    {128, 128},
    {item_portable_f32, item_portable_f64},
    exp_array_portable_f32,
    exp_array_portable_f64,
    {bwd_item_a_portable_f32, bwd_item_a_portable_f64},
    {bwd_item_b_portable_f32, bwd_item_b_portable_f64},
};
