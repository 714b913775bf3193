/*
 * simd/vec_scalar.h -- the portable primitives on one lane (W = 1, VT =
 * T): the same operations as simd/vec_portable.h, for code that works on
 * one value at a time (a row's log-sum-exp, an angle) and for the
 * functions of simd/math.h called from plain C (simd/scalar.c).
 *
 *     #define SIMD_F64 1
 *     #include "simd/vec_scalar.h"
 *     #include "simd/math.h"             (defines exp_neg_scalar_f64 ...)
 */
#ifndef ATTNPY_SIMD_VEC_SCALAR_H
#define ATTNPY_SIMD_VEC_SCALAR_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "half.h"
#include "runtime/platform.h"
#include "simd/fma.h"
#include "simd/lane.h"

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

#endif /* ATTNPY_SIMD_VEC_SCALAR_H */

/* ---- the template parameters of one element type (simd/undef.h) ---- */
#define ATTR
#define W 1
#define VM int
#define VZERO() ((T)0)
#define VSET1(x) ((T)(x))
#define VLOADU(p) (*(p))
#define VSTOREU(p, v) (*(p) = (v))
#define VADD(a, b) ((a) + (b))
#define VSUB(a, b) ((a) - (b))
#define VMUL(a, b) ((a) * (b))
#define VDIV(a, b) ((a) / (b))
#define VLT(a, b) ((a) < (b))
#define VLE(a, b) ((a) <= (b))
#define VEQ(a, b) ((a) == (b))
#define VSEL(m, a, b) ((m) ? (a) : (b))
#define VRSUM(a) (a)
#define VMAX(a, b) VFN_(max)(a, b)
#define VMIN(a, b) VFN_(min)(a, b)
#define VABS(a) VFN_(abs)(a)
#define VORSIGN(a, s) VFN_(orsign)(a, s)
#define VPOW2T(t) VFN_(pow2t)(t)
#define VGETEXP(a) VFN_(getexp)(a)
#define VGETMANT(a) VFN_(getmant)(a)
#if SIMD_F64
#define T double
#define SIMD_T_F64 1
#define VT double
#define SFX(name) name##_scalar_f64
#define VFN_(name) scld_##name /* SCL_DEFINE_'s functions of this type */
#define VFMA(a, b, c) attn_fma(a, b, c)
#define VFNMA(a, b, c) attn_fma(-(a), b, c)
#else
#define T float
#define SIMD_T_F64 0
#define VT float
#define SFX(name) name##_scalar_f32
#define VFN_(name) sclf_##name
#define VFMA(a, b, c) attn_fmaf(a, b, c)
#define VFNMA(a, b, c) attn_fmaf(-(a), b, c)
#define VLOAD_F16(p) attn_f16_to_f32(*(p))
#define VLOAD_BF16(p) attn_bf16_to_f32(*(p))
#define VSTORE_F16(p, v) (*(p) = attn_f32_to_f16(v))
#define VSTORE_BF16(p, v) (*(p) = attn_f32_to_bf16(v))
#endif
#undef SIMD_F64
