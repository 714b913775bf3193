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

/* The helpers of one element type T_ (prefix P: neonf, neond), vector
 * VT_, its same-size unsigned integer UT_, the intrinsics' suffixes of
 * T_ and the signed and unsigned integers (F S U: f32 s32 u32), the
 * exponent bias and the fraction bits. getexp: the exponent field less
 * the bias; getmant: |a| with the field set to the bias; rsum: the
 * lanes' sum, pairwise (tested against 0 only).                         */
#define NEON_OPS(P, T_, VT_, UT_, F, S, U, BIAS, MBITS)                        \
    A_ VT_ P##_max(VT_ a, VT_ b) { return vbslq_##F(vcgtq_##F(a, b), a, b); }  \
    A_ VT_ P##_min(VT_ a, VT_ b) { return vbslq_##F(vcltq_##F(a, b), a, b); }  \
    A_ VT_ P##_pow2t(VT_ t)                                                    \
    {                                                                          \
        return vreinterpretq_##F##_##S(vshlq_n_##S(                            \
            vaddq_##S(vreinterpretq_##S##_##F(t), vdupq_n_##S(BIAS)), MBITS)); \
    }                                                                          \
    A_ VT_ P##_orsign(VT_ a, VT_ s)                                            \
    {                                                                          \
        const UT_ sg = (UT_)1 << (8 * sizeof(UT_) - 1);                        \
        return vreinterpretq_##F##_##U(vorrq_##U(vreinterpretq_##U##_##F(a),   \
            vandq_##U(vdupq_n_##U(sg), vreinterpretq_##U##_##F(s))));          \
    }                                                                          \
    A_ VT_ P##_getexp(VT_ a)                                                   \
    {                                                                          \
        return vsubq_##F(vcvtq_##F##_##S(vandq_##S(                            \
            vreinterpretq_##S##_##U(vshrq_n_##U(vreinterpretq_##U##_##F(a),    \
                                                MBITS)),                       \
            vdupq_n_##S(2 * BIAS + 1))), vdupq_n_##F(BIAS));                   \
    }                                                                          \
    A_ VT_ P##_getmant(VT_ a)                                                  \
    {                                                                          \
        return vreinterpretq_##F##_##U(vorrq_##U(                             \
            vandq_##U(vreinterpretq_##U##_##F(a),                              \
                      vdupq_n_##U(((UT_)1 << MBITS) - 1)),                     \
            vdupq_n_##U((UT_)BIAS << MBITS)));                                 \
    }                                                                          \
    A_ T_ P##_rsum(VT_ v) { return vaddvq_##F(v); }

NEON_OPS(neonf, float, float32x4_t, uint32_t, f32, s32, u32, 127, 23)
NEON_OPS(neond, double, float64x2_t, uint64_t, f64, s64, u64, 1023, 52)
#undef NEON_OPS

/* r[i] = row i of a W x W block -> r[c] = column c (VTRANS): trn1 / trn2
 * pair the rows' lanes, then the 64-bit halves are paired              */
A_ void neonf_trans(float32x4_t *r)
{
    const float32x4_t a0 = vtrn1q_f32(r[0], r[1]), a1 = vtrn2q_f32(r[0], r[1]);
    const float32x4_t b0 = vtrn1q_f32(r[2], r[3]), b1 = vtrn2q_f32(r[2], r[3]);
#define NEON_D_(x) vreinterpretq_f64_f32(x)
#define NEON_F_(x) vreinterpretq_f32_f64(x)
    r[0] = NEON_F_(vtrn1q_f64(NEON_D_(a0), NEON_D_(b0)));
    r[1] = NEON_F_(vtrn1q_f64(NEON_D_(a1), NEON_D_(b1)));
    r[2] = NEON_F_(vtrn2q_f64(NEON_D_(a0), NEON_D_(b0)));
    r[3] = NEON_F_(vtrn2q_f64(NEON_D_(a1), NEON_D_(b1)));
#undef NEON_D_
#undef NEON_F_
}
A_ void neond_trans(float64x2_t *r)
{
    const float64x2_t c0 = vtrn1q_f64(r[0], r[1]);
    r[1] = vtrn2q_f64(r[0], r[1]);
    r[0] = c0;
}

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
#define VTRANS(r) VFN_(trans)(r)
#undef SIMD_F64
