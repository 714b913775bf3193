/*
 * isa/portable.c -- the portable kernels: plain C (simd/vec_portable.h),
 * 4 floats / 2 doubles, compiled for the build's base target. This is
 * the numeric rule every other set follows bit for bit. "baseline" runs
 * these; "portable" runs them, or their AVX2 + FMA build
 * (isa/portable_wide.c: the same code, the same bits) where the CPU has
 * it.
 */
#include "isa/kernels.h"

#define QK_MR 6
#define QK_NR 2
#define PV_MR 6
#define PV_NR 2
#define SM_G 4

#define SET_VEC_H "simd/vec_portable.h"
#include "isa/set_tmpl.h"

const attn_kernels attn__kernels_port =
    ATTN_SET_KERNELS(port, "baseline", 4, 2, 32, 32, port);
