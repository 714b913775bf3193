/*
 * isa/avx2.c -- the kernels for AVX2 + FMA (8 floats / 4 doubles).
 *
 * Every function carries __attribute__((target("avx2,fma,f16c"))) (the
 * primitives' ATTR), so the file is compiled with the module's generic
 * flags and only runs once runtime/isa.c has checked the CPU.
 * Micro-kernels: S^T = K Q^T as 6 keys x 2 vectors and O += P V as 6
 * queries x 2 vectors: 12 accumulators, 2 loads and 1 broadcast, 15 of
 * the 16 ymm registers. Query blocks of 48 floats / 24 doubles: 6
 * vectors, whole 6-row P V tiles, and a key block's working set (Q^T,
 * scores, the output tile) within L1 (measured 2-3% faster than 64 / 32
 * at E = 64; the bits do not depend on the query block).
 */
#include "isa/kernels.h"

#if ATTN_ARCH_X86

#define QK_MR 6
#define QK_NR 2
#define PV_MR 6
#define PV_NR 2
#define SM_G 2
/* decoding's scores: K blocks transposed in registers (tile_kern.h) */
#define QK_FEW_REG 1

#define SET_VEC_H "simd/vec_avx2.h"
#include "isa/set_tmpl.h"

const attn_kernels attn__kernels_avx2 =
    ATTN_SET_KERNELS(avx2, "avx2", 8, 4, 48, 24, avx2);

#endif /* ATTN_ARCH_X86 */
