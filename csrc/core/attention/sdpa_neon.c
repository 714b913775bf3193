/*
 * attention/sdpa_neon.c -- the tiled kernel for AArch64 NEON (4 floats / 2
 * doubles per register).
 *
 * Compiled on AArch64 only (Linux, macOS on Apple silicon, Windows on
 * Arm), where NEON is always present: the driver picks it without a
 * run-time check. Micro-kernels: S^T = K Q^T as 6 keys x 4 vectors and
 * O += P V as 6 queries x 4 vectors: 24 accumulators, 4 loads and 1
 * broadcast (ld1r), 29 of the 32 vector registers; the backward's
 * (bwd_tile.h) O += A B is the same 6 x 4 shape. Block sizes are those
 * of the AVX2 path scaled to the narrower vectors; they are unmeasured on
 * ARM hardware (tests run under qemu-user, which shows correctness only).
 */
#include "attention/kern.h"

#if ATTN_HAVE_NEON

#define QK_MR 6
#define QK_NR 4
#define PV_MR 6
#define PV_NR 4
#define SM_G 4

#define ATTN_VEC_F64 0
#include "attention/vec_neon.h"
#include "attention/tile.h"
#define ATTN_VEC_F64 0
#include "attention/vec_neon.h"
#include "attention/bwd_tile.h"

#define ATTN_VEC_F64 1
#include "attention/vec_neon.h"
#include "attention/tile.h"
#define ATTN_VEC_F64 1
#include "attention/vec_neon.h"
#include "attention/bwd_tile.h"

const attn_isa_desc attn__isa_neon = {
    "neon",
    {4, 2},
    {64, 32},
    {48, 48},
    {item_neon_f32, item_neon_f64},
    {merge_item_neon_f32, merge_item_neon_f64},
    {bwd_item_a_neon_f32, bwd_item_a_neon_f64},
    {bwd_item_b_neon_f32, bwd_item_b_neon_f64},
    NULL,
};

#endif /* ATTN_HAVE_NEON */
