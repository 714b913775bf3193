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

#define SET_VEC_H "simd/vec_neon.h"
#include "isa/set_tmpl.h"

const attn_kernels attn__kernels_neon =
    ATTN_SET_KERNELS(neon, "neon", 4, 2, 64, 32, port);

#endif /* ATTN_ARCH_NEON */
