/*
 * isa/amx.c -- the "amx" set (opt-in: runtime/isa.h): the AVX-512
 * kernels, with AMX tiles for bfloat16 scores and P V where its plan hook
 * (amx_plan) says so, from (storage, E, Ev) alone:
 *   bfloat16 Q and K, E % 32 == 0, E <= 256: every score by tiles;
 *   bfloat16 V, Ev % 16 == 0, Ev <= 256 (forward): P V by tiles on key
 *   blocks of ATTN_AMX_PV_KEYS.
 * Every other call runs code identical to isa/avx512.c's (the same
 * template, the same primitives): the same bits. Only float is
 * instantiated here; double calls take isa/avx512.c's kernels (base).
 * The tiles' bits and why they keep batch invariance:
 * attention/tile_amx.h.
 */
#include "isa/kernels.h"

#if ATTN_HAVE_AMX

#include <immintrin.h>

#define QK_MR 6
#define QK_NR 4
#define PV_MR 6
#define PV_NR 4
#define SM_G 4

#define SIMD_F64 0
#include "simd/vec_avx512.h"
#undef SFX
#define SFX(name) name##_amx_f32
#include "simd/math.h"
#include "attention/amx_hooks.h"
#include "attention/tile.h"
#include "attention/bwd_tile.h"
#include "attention/tile_amx.h"
#include "simd/undef.h"

/* the plan hook (kern.h: attn_isa_desc.plan)                            */
static void amx_plan(attn_plan *pl, const attn_problem *p, int fwd)
{
    const int f32 = p->dtype == ATTN_F32;
    pl->own_qk = f32 && p->q.store == ATTN_ST_BF16
                 && p->k.store == ATTN_ST_BF16 && p->E % 32 == 0
                 && p->E <= ATTN_AMX_MAX_E;
    pl->own_pv = fwd && f32 && p->v.store == ATTN_ST_BF16 && p->Ev > 0
                 && p->Ev % 16 == 0 && p->Ev <= ATTN_AMX_MAX_E;
    if (pl->own_pv) {
        /* whole 32-key groups of tdpbf16ps, few tile setups per decoded
         * row; halved for wide rows as the rule's blocks are, and V's
         * pairs fill whole groups of the packed block                  */
        size_t BK = attn__key_block_from(p, ATTN_AMX_PV_KEYS);
        pl->BK = BK > ATTN_AMX_PV_KEYS ? ATTN_AMX_PV_KEYS : BK;
        pl->vp_align = 32;
    }
}

const attn_kernels attn__kernels_amx = {
    "amx",
    &attn__kernels_avx512,
    {
        {16, 8},
        {64, 64},
        {item_amx_f32, NULL},
        {merge_item_amx_f32, NULL},
        {bwd_item_a_amx_f32, NULL},
        {bwd_item_b_amx_f32, NULL},
        amx_plan,
    },
    {attn__qrows_q4_1_avx512, attn__qrows_q8_0_avx512},
    NULL, /* the rest: AVX-512's (base) */
    NULL,
    {{NULL, NULL, NULL, NULL}, {NULL, NULL, NULL, NULL}},
    {NULL, NULL},
    NULL,
    {NULL, NULL},
};

#endif /* ATTN_HAVE_AMX */
