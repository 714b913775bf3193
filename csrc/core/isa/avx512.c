/*
 * isa/avx512.c -- the kernels for AVX-512F (16 floats / 8 doubles).
 *
 * Every function carries __attribute__((target("avx512f,avx2,fma,f16c")))
 * (the primitives' ATTR), so the file is compiled with the module's
 * generic flags and only runs once runtime/isa.c has checked the CPU.
 * Micro-kernels: S^T = K Q^T as 6 keys x 4 vectors and O += P V as 6
 * queries x 4 vectors: 24 accumulators of the 32 zmm registers.
 */
#include "isa/kernels.h"

#if ATTN_ARCH_X86

#define QK_MR 6
#define QK_NR 4
#define PV_MR 6
#define PV_NR 4
#define SM_G 4

#define SET_VEC_H "simd/vec_avx512.h"
#include "isa/set_tmpl.h"

const attn_kernels attn__kernels_avx512 =
    ATTN_SET_KERNELS(avx512, "avx512", 16, 8, 64, 64, avx512);

#endif /* ATTN_ARCH_X86 */
