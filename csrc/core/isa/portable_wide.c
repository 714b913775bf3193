/*
 * isa/portable_wide.c -- the portable kernels compiled for AVX2 + FMA
 * (x86 with gcc or clang): the code of isa/portable.c on 8 floats / 4
 * doubles, the fused multiply-add inline (simd/vec_portable.h's wide
 * variant). What "portable" runs where the CPU has AVX2 + FMA: the same
 * bits as the base build, much faster.
 */
#include "isa/kernels.h"

#if ATTN_HAVE_PORT_WIDE

#define QK_MR 6
#define QK_NR 2
#define PV_MR 6
#define PV_NR 2
#define SM_G 4

#define SIMD_PORT_WIDE 1
#define SET_VEC_H "simd/vec_portable.h"
#include "isa/set_tmpl.h"

const attn_kernels attn__kernels_portw =
    ATTN_SET_KERNELS(portw, "portable", 8, 4, 32, 32, port);

#endif /* ATTN_HAVE_PORT_WIDE */
