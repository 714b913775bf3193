/*
 * attention/sdpa_portable_wide.c -- the plain C kernel of sdpa_portable.c
 * compiled for AVX2 with 8 floats / 4 doubles ("portable" on CPUs with
 * AVX2; the same bits as the baseline build). A file of its own so that a
 * parallel build compiles the two variants side by side.
 */
#include "attention/kern.h"

#if ATTN_HAVE_PORT_WIDE

#define QK_MR 6
#define QK_NR 2
#define PV_MR 6
#define PV_NR 2
#define SM_G 2

#define ATTN_PORT_WIDE 1
#define ATTN_VEC_F64 0
#include "attention/vec_portable.h"
#include "attention/tile.h"
#define ATTN_PORT_WIDE 1
#define ATTN_VEC_F64 0
#include "attention/vec_portable.h"
#include "attention/bwd_tile.h"

#define ATTN_PORT_WIDE 1
#define ATTN_VEC_F64 1
#include "attention/vec_portable.h"
#include "attention/tile.h"
#define ATTN_PORT_WIDE 1
#define ATTN_VEC_F64 1
#include "attention/vec_portable.h"
#include "attention/bwd_tile.h"

const attn_isa_desc attn__isa_portable_wide = {
    "portable",
    {8, 4},
    {64, 32},
    {128, 128},
    {item_portable8_f32, item_portable8_f64},
    {merge_item_portable8_f32, merge_item_portable8_f64},
    {bwd_item_a_portable8_f32, bwd_item_a_portable8_f64},
    {bwd_item_b_portable8_f32, bwd_item_b_portable8_f64},
    &attn__isa_portable, /* its key blocks (and the backward's query
                            blocks, bwd.c): the same bits */
};

#endif
