/*
 * tests/c/math_soft.c -- the scalar and portable (narrow) instantiations
 * of simd/math.h built with ATTN_FORCE_SOFT_FMA: their fused
 * multiply-adds are simd/fma.c's exact integer fma and fma.h's
 * round-to-odd fmaf, what MinGW and MSVC builds run, here on any machine
 * (tests/c/math_arrays.h).
 */
#define ATTN_FORCE_SOFT_FMA 1

#include "math_arrays.h"
#include "simd/fma.h"

#if ATTN_LIBM_FMA_OK
#error "math_soft.c: simd/fma.h was included before ATTN_FORCE_SOFT_FMA"
#endif

#define SIMD_F64 0
#include "simd/vec_scalar.h"
#include "simd/math.h"
#include "testing/math_rows_tmpl.h"
#include "simd/undef.h"
#define SIMD_F64 1
#include "simd/vec_scalar.h"
#include "simd/math.h"
#include "testing/math_rows_tmpl.h"
#include "simd/undef.h"
const math_set math_set_scalar_soft = {
    "scalar, soft fma", 1, 1, 1, {&math_rows_scalar_f32, &math_rows_scalar_f64}};

#define SIMD_F64 0
#include "simd/vec_portable.h"
#include "simd/math.h"
#include "testing/math_rows_tmpl.h"
#include "simd/undef.h"
#define SIMD_F64 1
#include "simd/vec_portable.h"
#include "simd/math.h"
#include "testing/math_rows_tmpl.h"
#include "simd/undef.h"
const math_set math_set_port_soft = {
    "portable, soft fma", 1, 1, 1, {&math_rows_port_f32, &math_rows_port_f64}};
