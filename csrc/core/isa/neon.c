/*
 * isa/neon.c -- the kernels for AArch64 Advanced SIMD (4 floats / 2
 * doubles per register).
 *
 * Compiled on AArch64 only (Linux, macOS on Apple silicon, Windows on
 * Arm), where NEON is always present: picked without a run-time check.
 * Micro-kernels: S^T = K Q^T as 6 keys x 4 vectors and O += P V as 6
 * queries x 4 vectors: 24 accumulators, 4 loads and 1 broadcast, 29 of
 * the 32 vector registers; the backward's O += A B is the same shape.
 * Decoding transposes 4 x 4 blocks of K in registers (VTRANS) and uses
 * them at once, as AVX2 does.
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
/* decoding's scores: K blocks transposed in registers, as on AVX2
 * (attention/tile_dec.h)                                               */
#define QK_FEW_REG 1

#define SET_VEC_H "simd/vec_neon.h"
#include "isa/set_tmpl.h"

const attn_kernels attn__kernels_neon =
    ATTN_SET_KERNELS(neon, "neon", 4, 2, 64, 32, port);

#endif /* ATTN_ARCH_NEON */
