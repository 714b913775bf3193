/*
 * tests/c/math_arrays.c -- tests/c/math_arrays.h for the scalar, portable
 * (narrow; wide on x86), AVX2, AVX-512 and NEON instantiations.
 */
#include "math_arrays.h"

#include <string.h>

#include "runtime/platform.h"

const char *const math_fn_names[MF_N] = {"exp",     "exp_neg", "tanh", "sigmoid",
                                         "phi",     "npdf",    "log"};

static int always(void) { return 1; }

#if ATTN_ARCH_X86 && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
ATTN_TARGET("avx") void math_clean_upper(void) { _mm256_zeroupper(); }
#else
void math_clean_upper(void) {}
#endif
#if ATTN_ARCH_X86
static int has_avx2(void) { return (attn__x86_features() & ATTN_X86_AVX2_FMA) != 0; }
static int has_avx512(void) { return (attn__x86_features() & ATTN_X86_AVX512F) != 0; }
#endif

/* MA_TABLE(name, suffix, available): the math_set of one instantiation  */
#define MA_FNS(P, SUF)                                                         \
    {P##exp_##SUF, P##exp_neg_##SUF, P##tanh_##SUF, P##sigmoid_##SUF,          \
     P##phi_##SUF, P##npdf_##SUF, P##log_##SUF}
#define MA_TABLE(var, name, S, avail)                                          \
    static const math_set var = {name, avail, 0, MA_FNS(ma_, S##_f32),         \
                                 MA_FNS(ma_, S##_f64), ma_pow_##S##_f64,       \
                                 ma_sincos_##S##_f64};

#define SIMD_F64 0
#include "simd/vec_scalar.h"
#include "simd/math.h"
#include "math_arrays_body.h"
#include "simd/undef.h"
#define SIMD_F64 1
#include "simd/vec_scalar.h"
#include "simd/math.h"
#include "math_arrays_body.h"
#include "simd/undef.h"
const math_set math_set_scalar = {"scalar", always, 0, MA_FNS(ma_, scalar_f32),
                                  MA_FNS(ma_, scalar_f64), ma_pow_scalar_f64,
                                  ma_sincos_scalar_f64};

#define SIMD_F64 0
#include "simd/vec_portable.h"
#include "simd/math.h"
#include "math_arrays_body.h"
#include "simd/undef.h"
#define SIMD_F64 1
#include "simd/vec_portable.h"
#include "simd/math.h"
#include "math_arrays_body.h"
#include "simd/undef.h"
MA_TABLE(set_port, "portable", port, always)

#ifdef SIMD_PORT_HAVE_WIDE
#define SIMD_F64 0
#define SIMD_PORT_WIDE 1
#include "simd/vec_portable.h"
#include "simd/math.h"
#include "math_arrays_body.h"
#include "simd/undef.h"
#define SIMD_F64 1
#define SIMD_PORT_WIDE 1
#include "simd/vec_portable.h"
#include "simd/math.h"
#include "math_arrays_body.h"
#include "simd/undef.h"
MA_TABLE(set_portw, "portable wide", portw, has_avx2)
#endif

#if ATTN_ARCH_X86
#define SIMD_F64 0
#include "simd/vec_avx2.h"
#include "simd/math.h"
#include "math_arrays_body.h"
#include "simd/undef.h"
#define SIMD_F64 1
#include "simd/vec_avx2.h"
#include "simd/math.h"
#include "math_arrays_body.h"
#include "simd/undef.h"
MA_TABLE(set_avx2, "avx2", avx2, has_avx2)

#define SIMD_F64 0
#include "simd/vec_avx512.h"
#include "simd/math.h"
#include "math_arrays_body.h"
#include "simd/undef.h"
#define SIMD_F64 1
#include "simd/vec_avx512.h"
#include "simd/math.h"
#include "math_arrays_body.h"
#include "simd/undef.h"
MA_TABLE(set_avx512, "avx512", avx512, has_avx512)
#endif

#if ATTN_ARCH_NEON
#define SIMD_F64 0
#include "simd/vec_neon.h"
#include "simd/math.h"
#include "math_arrays_body.h"
#include "simd/undef.h"
#define SIMD_F64 1
#include "simd/vec_neon.h"
#include "simd/math.h"
#include "math_arrays_body.h"
#include "simd/undef.h"
MA_TABLE(set_neon, "neon", neon, always)
#endif

extern const math_set math_set_scalar_soft, math_set_port_soft; /* math_soft.c */

const math_set *const *math_sets(int *n)
{
    static const math_set *const sets[] = {
        &set_port,
#ifdef SIMD_PORT_HAVE_WIDE
        &set_portw,
#endif
#if ATTN_ARCH_X86
        &set_avx2,
        &set_avx512,
#endif
#if ATTN_ARCH_NEON
        &set_neon,
#endif
        &math_set_scalar_soft,
        &math_set_port_soft,
    };
    *n = (int)(sizeof sets / sizeof sets[0]);
    return sets;
}
