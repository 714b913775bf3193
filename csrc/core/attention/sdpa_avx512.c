/*
 * attention/sdpa_avx512.c -- the tiled kernel for AVX-512F (16 floats / 8 doubles).
 *
 * Every function carries __attribute__((target("avx512f,avx2,fma"))), so the
 * file is compiled with the module's generic flags and only runs when the
 * driver has checked the CPU. Micro-kernels: S^T = K Q^T as 6 keys x 4
 * vectors and O += P V as 6 queries x 4 vectors: 24 accumulators of the 32
 * zmm registers. exp scales by 2^n with vscalefps.
 */
#include "attention/kern.h"

#if ATTN_HAVE_X86

#define QK_MR 6
#define QK_NR 4
#define PV_MR 6
#define PV_NR 4
#define SM_G 4

#define ATTN_VEC_F64 0
#if defined(__GNUC__) || defined(__clang__)
#define ATTN_DPBF16 1 /* bfloat16 scores by vdpbf16ps (tile_dpbf16.h) */
#endif
#include "attention/vec_avx512.h"
#include "attention/tile.h"
#define ATTN_VEC_F64 0
#if defined(__GNUC__) || defined(__clang__)
#define ATTN_DPBF16 1 /* and the backward's scores (bwd_tile.h) */
#endif
#include "attention/vec_avx512.h"
#include "attention/bwd_tile.h"

#define ATTN_VEC_F64 1
#include "attention/vec_avx512.h"
#include "attention/tile.h"
#define ATTN_VEC_F64 1
#include "attention/vec_avx512.h"
#include "attention/bwd_tile.h"

/* the AVX-512 kernels under a name; "amx" is the same kernels, whose
 * plan (attn__dpbf16_plan, attn__pv_amx_plan) picks AMX tiles          */
#define AVX512_DESC_(name, plan_as)                                            \
    {                                                                          \
        name, {16, 8}, {64, 64}, {48, 24},                                     \
            {item_avx512_f32, item_avx512_f64},                                \
            {merge_item_avx512_f32, merge_item_avx512_f64},                    \
            {bwd_item_a_avx512_f32, bwd_item_a_avx512_f64},                    \
            {bwd_item_b_avx512_f32, bwd_item_b_avx512_f64}, plan_as            \
    }

const attn_isa_desc attn__isa_avx512 = AVX512_DESC_("avx512", NULL);
#if ATTN_HAVE_AMX
const attn_isa_desc attn__isa_amx = AVX512_DESC_("amx", &attn__isa_avx512);
#endif

#endif /* ATTN_HAVE_X86 */
