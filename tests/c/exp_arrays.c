/*
 * tests/c/exp_arrays.c -- see exp_arrays.h. Each block below includes one
 * instruction set's primitives and simd/math.h for one element type, as
 * the kernels' files do (isa/<set>.c), and defines exp_array_<set>_<type>
 * from the same VEXP.
 */
#include "exp_arrays.h"

#include <string.h>

/* y = exp(x), W lanes at a time; a short tail through a padded buffer  */
#define EXP_ARRAY_DEF                                                          \
    static ATTR void SFX(exp_array)(T *y, const T *x, size_t n)                \
    {                                                                          \
        size_t i = 0;                                                          \
        for (; i + W <= n; i += W)                                             \
            VSTOREU(y + i, VEXP(VLOADU(x + i)));                               \
        if (i < n) {                                                           \
            T buf[W];                                                          \
            for (size_t t = 0; t < (size_t)W; t++)                             \
                buf[t] = i + t < n ? x[i + t] : (T)0;                          \
            VSTOREU(buf, VEXP(VLOADU(buf)));                                   \
            for (size_t t = 0; i + t < n; t++)                                 \
                y[i + t] = buf[t];                                             \
        }                                                                      \
    }

#define SIMD_F64 0
#include "simd/vec_portable.h"
#include "simd/math.h"
EXP_ARRAY_DEF /* exp_array_port_f32 */
#include "simd/undef.h"
#define SIMD_F64 1
#include "simd/vec_portable.h"
#include "simd/math.h"
EXP_ARRAY_DEF /* exp_array_port_f64 */
#include "simd/undef.h"

#if ATTN_HAVE_PORT_WIDE
#define SIMD_PORT_WIDE 1
#define SIMD_F64 0
#include "simd/vec_portable.h"
#include "simd/math.h"
EXP_ARRAY_DEF /* exp_array_portw_f32 */
#include "simd/undef.h"
#define SIMD_PORT_WIDE 1
#define SIMD_F64 1
#include "simd/vec_portable.h"
#include "simd/math.h"
EXP_ARRAY_DEF /* exp_array_portw_f64 */
#include "simd/undef.h"
#endif

#if ATTN_ARCH_X86
#define SIMD_F64 0
#include "simd/vec_avx2.h"
#include "simd/math.h"
EXP_ARRAY_DEF /* exp_array_avx2_f32 */
#include "simd/undef.h"
#define SIMD_F64 1
#include "simd/vec_avx2.h"
#include "simd/math.h"
EXP_ARRAY_DEF /* exp_array_avx2_f64 */
#include "simd/undef.h"
#define SIMD_F64 0
#include "simd/vec_avx512.h"
#include "simd/math.h"
EXP_ARRAY_DEF /* exp_array_avx512_f32 */
#include "simd/undef.h"
#define SIMD_F64 1
#include "simd/vec_avx512.h"
#include "simd/math.h"
EXP_ARRAY_DEF /* exp_array_avx512_f64 */
#include "simd/undef.h"
#endif

#if ATTN_ARCH_NEON
#define SIMD_F64 0
#include "simd/vec_neon.h"
#include "simd/math.h"
EXP_ARRAY_DEF /* exp_array_neon_f32 */
#include "simd/undef.h"
#define SIMD_F64 1
#include "simd/vec_neon.h"
#include "simd/math.h"
EXP_ARRAY_DEF /* exp_array_neon_f64 */
#include "simd/undef.h"
#endif

int exp_arrays_for(const attn_kernels *k, exp_array_f32_fn *f32,
                   exp_array_f64_fn *f64)
{
#define EXP_PAIR_(table, isa)                                                  \
    if (k == &(table)) {                                                       \
        *f32 = exp_array_##isa##_f32;                                          \
        *f64 = exp_array_##isa##_f64;                                          \
        return 1;                                                              \
    }
    EXP_PAIR_(attn__kernels_port, port)
#if ATTN_HAVE_PORT_WIDE
    EXP_PAIR_(attn__kernels_portw, portw)
#endif
#if ATTN_ARCH_X86
    EXP_PAIR_(attn__kernels_avx2, avx2)
    EXP_PAIR_(attn__kernels_avx512, avx512)
#endif
#if ATTN_HAVE_AMX
    EXP_PAIR_(attn__kernels_amx, avx512) /* the AVX-512 primitives' exp */
#endif
#if ATTN_ARCH_NEON
    EXP_PAIR_(attn__kernels_neon, neon)
#endif
#undef EXP_PAIR_
    return 0;
}
