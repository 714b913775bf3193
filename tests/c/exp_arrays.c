/*
 * tests/c/exp_arrays.c -- see exp_arrays.h. Each block below includes one
 * instruction set's vector header for one element type, as the kernels'
 * files do (attention/sdpa_<isa>.c), and defines exp_array_<isa>_<type>
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

#define ATTN_VEC_F64 0
#include "attention/vec_portable.h"
EXP_ARRAY_DEF /* exp_array_portable_f32 */
#include "attention/vec_undef.h"
#define ATTN_VEC_F64 1
#include "attention/vec_portable.h"
EXP_ARRAY_DEF /* exp_array_portable_f64 */
#include "attention/vec_undef.h"

#if ATTN_HAVE_PORT_WIDE
#define ATTN_PORT_WIDE 1
#define ATTN_VEC_F64 0
#include "attention/vec_portable.h"
EXP_ARRAY_DEF /* exp_array_portable8_f32 */
#include "attention/vec_undef.h"
#define ATTN_PORT_WIDE 1
#define ATTN_VEC_F64 1
#include "attention/vec_portable.h"
EXP_ARRAY_DEF /* exp_array_portable8_f64 */
#include "attention/vec_undef.h"
#endif

#if ATTN_HAVE_X86
#undef ATTR /* each instruction set brings its own */
#define ATTN_VEC_F64 0
#include "attention/vec_avx2.h"
EXP_ARRAY_DEF /* exp_array_avx2_f32 */
#include "attention/vec_undef.h"
#define ATTN_VEC_F64 1
#include "attention/vec_avx2.h"
EXP_ARRAY_DEF /* exp_array_avx2_f64 */
#include "attention/vec_undef.h"
#undef ATTR
#define ATTN_VEC_F64 0
#include "attention/vec_avx512.h"
EXP_ARRAY_DEF /* exp_array_avx512_f32 */
#include "attention/vec_undef.h"
#define ATTN_VEC_F64 1
#include "attention/vec_avx512.h"
EXP_ARRAY_DEF /* exp_array_avx512_f64 */
#include "attention/vec_undef.h"
#endif

#if ATTN_HAVE_NEON
#undef ATTR
#define ATTN_VEC_F64 0
#include "attention/vec_neon.h"
EXP_ARRAY_DEF /* exp_array_neon_f32 */
#include "attention/vec_undef.h"
#define ATTN_VEC_F64 1
#include "attention/vec_neon.h"
EXP_ARRAY_DEF /* exp_array_neon_f64 */
#include "attention/vec_undef.h"
#endif

int exp_arrays_for(const attn_isa_desc *d, exp_array_f32_fn *f32,
                   exp_array_f64_fn *f64)
{
#define EXP_PAIR_(desc, isa)                                                   \
    if (d == &(desc)) {                                                        \
        *f32 = exp_array_##isa##_f32;                                          \
        *f64 = exp_array_##isa##_f64;                                          \
        return 1;                                                              \
    }
    EXP_PAIR_(attn__isa_portable, portable)
#if ATTN_HAVE_PORT_WIDE
    EXP_PAIR_(attn__isa_portable_wide, portable8)
#endif
#if ATTN_HAVE_X86
    EXP_PAIR_(attn__isa_avx2, avx2)
    EXP_PAIR_(attn__isa_avx512, avx512)
#endif
#if ATTN_HAVE_AMX
    EXP_PAIR_(attn__isa_amx, avx512) /* the AVX-512 kernels' exp */
#endif
#if ATTN_HAVE_NEON
    EXP_PAIR_(attn__isa_neon, neon)
#endif
#undef EXP_PAIR_
    return 0;
}
