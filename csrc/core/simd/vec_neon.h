/*
 * simd/vec_neon.h -- the SIMD primitives for AArch64 Advanced SIMD (4
 * floats / 2 doubles per register), and the template parameters of one
 * element type; used as simd/vec_avx2.h is. The primitives and their
 * semantics: simd/math.h.
 *
 * NEON is part of the AArch64 base ISA: no target attribute, no run-time
 * check. VMAX / VMIN follow the rule of every path (the first operand
 * where it compares greater / less, else the second), which vmaxq does
 * not (NaN if either is NaN): they are a compare and a select here.
 * fcvtn rounds float16 by FPCR: nearest even, what every C program runs
 * with (the build never changes FPCR).
 */
#ifndef ATTNPY_SIMD_VEC_NEON_H
#define ATTNPY_SIMD_VEC_NEON_H

#include <arm_neon.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "runtime/platform.h"

#define A_ static ATTN_INLINE

/* float: 4 lanes */
A_ float32x4_t neonf_max(float32x4_t a, float32x4_t b)
{
    return vbslq_f32(vcgtq_f32(a, b), a, b);
}
A_ float32x4_t neonf_min(float32x4_t a, float32x4_t b)
{
    return vbslq_f32(vcltq_f32(a, b), a, b);
}
A_ float32x4_t neonf_pow2t(float32x4_t t)
{
    return vreinterpretq_f32_s32(vshlq_n_s32(
        vaddq_s32(vreinterpretq_s32_f32(t), vdupq_n_s32(127)), 23));
}
A_ float32x4_t neonf_orsign(float32x4_t a, float32x4_t s)
{
    const uint32x4_t sg = vdupq_n_u32(0x80000000u);
    return vreinterpretq_f32_u32(vorrq_u32(
        vreinterpretq_u32_f32(a), vandq_u32(sg, vreinterpretq_u32_f32(s))));
}
/* the exponent field less the bias; |a| with the field set to the bias */
A_ float32x4_t neonf_getexp(float32x4_t a)
{
    const int32x4_t e = vandq_s32(
        vreinterpretq_s32_u32(vshrq_n_u32(vreinterpretq_u32_f32(a), 23)),
        vdupq_n_s32(0xff));
    return vsubq_f32(vcvtq_f32_s32(e), vdupq_n_f32(127.0f));
}
A_ float32x4_t neonf_getmant(float32x4_t a)
{
    return vreinterpretq_f32_u32(vorrq_u32(
        vandq_u32(vreinterpretq_u32_f32(a), vdupq_n_u32(0x7fffffu)),
        vdupq_n_u32(127u << 23)));
}
/* the lanes' sum, pairwise (tested against 0 only)                     */
A_ float neonf_rsum(float32x4_t v) { return vaddvq_f32(v); }

/* double: 2 lanes */
A_ float64x2_t neond_max(float64x2_t a, float64x2_t b)
{
    return vbslq_f64(vcgtq_f64(a, b), a, b);
}
A_ float64x2_t neond_min(float64x2_t a, float64x2_t b)
{
    return vbslq_f64(vcltq_f64(a, b), a, b);
}
A_ float64x2_t neond_pow2t(float64x2_t t)
{
    return vreinterpretq_f64_s64(vshlq_n_s64(
        vaddq_s64(vreinterpretq_s64_f64(t), vdupq_n_s64(1023)), 52));
}
A_ float64x2_t neond_orsign(float64x2_t a, float64x2_t s)
{
    const uint64x2_t sg = vdupq_n_u64(0x8000000000000000ull);
    return vreinterpretq_f64_u64(vorrq_u64(
        vreinterpretq_u64_f64(a), vandq_u64(sg, vreinterpretq_u64_f64(s))));
}
A_ float64x2_t neond_getexp(float64x2_t a)
{
    const int64x2_t e = vandq_s64(
        vreinterpretq_s64_u64(vshrq_n_u64(vreinterpretq_u64_f64(a), 52)),
        vdupq_n_s64(0x7ff));
    return vsubq_f64(vcvtq_f64_s64(e), vdupq_n_f64(1023.0));
}
A_ float64x2_t neond_getmant(float64x2_t a)
{
    return vreinterpretq_f64_u64(vorrq_u64(
        vandq_u64(vreinterpretq_u64_f64(a), vdupq_n_u64(0xfffffffffffffull)),
        vdupq_n_u64(1023ull << 52)));
}
A_ double neond_rsum(float64x2_t v) { return vaddvq_f64(v); }

/* 16-bit storage (half.h's rules): fcvtl / fcvtn for float16 (nearest
 * even under the default FPCR); bfloat16 by integer shifts and rounding,
 * NaN kept quiet                                                        */
A_ float32x4_t neonf_ld_f16(const uint16_t *p)
{
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p)));
}
A_ float32x4_t neonf_ld_bf16(const uint16_t *p)
{
    return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16));
}
A_ void neonf_st_f16(uint16_t *p, float32x4_t v)
{
    vst1_u16(p, vreinterpret_u16_f16(vcvt_f16_f32(v)));
}
A_ void neonf_st_bf16(uint16_t *p, float32x4_t v)
{
    const uint32x4_t u = vreinterpretq_u32_f32(v);
    const uint32x4_t hi = vshrq_n_u32(u, 16);
    const uint32x4_t lsb = vandq_u32(hi, vdupq_n_u32(1));
    const uint32x4_t r = vshrq_n_u32(
        vaddq_u32(vaddq_u32(u, vdupq_n_u32(0x7fff)), lsb), 16);
    const uint32x4_t nan = vcgtq_u32(vandq_u32(u, vdupq_n_u32(0x7fffffff)),
                                     vdupq_n_u32(0x7f800000));
    const uint32x4_t qn = vorrq_u32(hi, vdupq_n_u32(0x40));
    vst1_u16(p, vmovn_u32(vbslq_u32(nan, qn, r)));
}
#undef A_

#endif /* ATTNPY_SIMD_VEC_NEON_H */

/* ---- the template parameters of one element type (simd/undef.h) ---- */
#define ATTR
#if SIMD_F64
#define T double
#define SIMD_T_F64 1
#define VT float64x2_t
#define VM uint64x2_t
#define W 2
#define SFX(name) name##_neon_f64
#define VI_(op) op##_f64 /* the intrinsic, and this file's helper */
#define VFN_(name) neond_##name
#else
#define T float
#define SIMD_T_F64 0
#define VT float32x4_t
#define VM uint32x4_t
#define W 4
#define SFX(name) name##_neon_f32
#define VI_(op) op##_f32
#define VFN_(name) neonf_##name
#define VLOAD_F16(p) neonf_ld_f16(p)
#define VLOAD_BF16(p) neonf_ld_bf16(p)
#define VSTORE_F16(p, v) neonf_st_f16(p, v)
#define VSTORE_BF16(p, v) neonf_st_bf16(p, v)
#endif
#define VZERO() VI_(vdupq_n)((T)0)
#define VSET1(x) VI_(vdupq_n)(x)
#define VLOADU(p) VI_(vld1q)(p)
#define VSTOREU(p, v) VI_(vst1q)(p, v)
#define VADD(a, b) VI_(vaddq)(a, b)
#define VSUB(a, b) VI_(vsubq)(a, b)
#define VMUL(a, b) VI_(vmulq)(a, b)
#define VDIV(a, b) VI_(vdivq)(a, b)
#define VFMA(a, b, c) VI_(vfmaq)(c, a, b)
#define VFNMA(a, b, c) VI_(vfmsq)(c, a, b)
#define VMAX(a, b) VFN_(max)(a, b)
#define VMIN(a, b) VFN_(min)(a, b)
#define VABS(a) VI_(vabsq)(a)
#define VORSIGN(a, s) VFN_(orsign)(a, s)
#define VLT(a, b) VI_(vcltq)(a, b)
#define VLE(a, b) VI_(vcleq)(a, b)
#define VEQ(a, b) VI_(vceqq)(a, b)
#define VSEL(m, a, b) VI_(vbslq)(m, a, b)
#define VPOW2T(t) VFN_(pow2t)(t)
#define VGETEXP(a) VFN_(getexp)(a)
#define VGETMANT(a) VFN_(getmant)(a)
#define VRSUM(a) VFN_(rsum)(a)
#undef SIMD_F64
