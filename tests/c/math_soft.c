/*
 * tests/c/math_soft.c -- the scalar and portable (narrow) instantiations
 * of simd/math.h built with ATTN_FORCE_SOFT_FMA: their fused
 * multiply-adds are simd/fma.c's exact integer fma and fma.h's
 * round-to-odd fmaf, what MinGW and MSVC builds run, here on any machine
 * (tests/c/math_arrays.h).
 */
#define ATTN_FORCE_SOFT_FMA 1

#include <string.h>

#include "math_arrays.h"
#include "simd/fma.h"

#if ATTN_LIBM_FMA_OK
#error "math_soft.c: simd/fma.h was included before ATTN_FORCE_SOFT_FMA"
#endif

static int always(void) { return 1; }

#define MA_FNS(P, SUF)                                                         \
    {P##exp_##SUF, P##exp_neg_##SUF, P##tanh_##SUF, P##sigmoid_##SUF,          \
     P##phi_##SUF, P##npdf_##SUF, P##log_##SUF}

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
const math_set math_set_scalar_soft = {
    "scalar, soft fma", always, 1, MA_FNS(ma_, scalar_f32), MA_FNS(ma_, scalar_f64),
    ma_pow_scalar_f64, ma_sincos_scalar_f64};

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
const math_set math_set_port_soft = {
    "portable, soft fma", always, 1, MA_FNS(ma_, port_f32), MA_FNS(ma_, port_f64),
    ma_pow_port_f64, ma_sincos_port_f64};
