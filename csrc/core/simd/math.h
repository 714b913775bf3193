/*
 * simd/math.h -- the numeric functions of attnpy's kernels, written once
 * over the SIMD primitives. NOT a normal header: a template included
 * after one simd/vec_<isa>.h (which sets the element type), once per
 * (instruction set, type); it defines, for SFX = _<isa>_<f32|f64>:
 *
 *   exp_neg<SFX>   VEXP(x)   e^x for x <= 0 (-inf and results below the
 *                            smallest normal number give 0, NaN stays NaN)
 *   tanh<SFX>      VTANH(x)  tanh(x) (+-1 for large |x|, NaN stays NaN)
 *   VSAFE(x)                 x == -inf ? 0 : x
 *
 * e.g. exp_neg_avx2_f32, exp_neg_portw_f64, tanh_neon_f32,
 * exp_neg_scalar_f64 (simd/vec_scalar.h: one lane, VT = T).
 *
 * THE NUMERIC RULE. Every function here, and every kernel template
 * written over the same primitives, performs one fixed sequence of IEEE
 * operations per lane, so its result is the same bits on every
 * instruction set (portable C, AVX2 + FMA, AVX-512, NEON) and operating
 * system. The primitives a simd/vec_<isa>.h defines, all lane-wise:
 *
 *   T VT W         element type, vector of W lanes, lane count
 *   VM             what a compare returns (a lane mask)
 *   SFX(name) ATTR the names' suffix; the functions' attributes
 *   VZERO() VSET1(x) VLOADU(p) VSTOREU(p, v)
 *   VADD VSUB VMUL VDIV        correctly rounded
 *   VFMA(a, b, c)  a * b + c, ONE rounding (a fused multiply-add)
 *   VFNMA(a, b, c) c - a * b, one rounding
 *   VMAX(a, b)     a > b ? a : b   (the second operand when either is
 *   VMIN(a, b)     a < b ? a : b    NaN: x86's rule, kept everywhere)
 *   VABS(a)        sign bit cleared;  VORSIGN(a, s): a | sign bit of s
 *   VLT VLE VEQ    ordered compares (false with NaN) -> VM
 *   VSEL(m, a, b)  m ? a : b
 *   VPOW2T(t)      2^n, for t = n + 1.5 * 2^23 (float) / 1.5 * 2^52
 *                  (double) with n in [-127, 127] / [-1023, 1023]: the
 *                  low bits of t are n; n = -127 / -1023 gives +0
 *   VRSUM(a)       the lanes' sum, any order: only ever tested against 0
 *   VTRANS(r)      optional: r[0 .. W-1] rows of a W x W block -> columns
 *   VLOAD_F16 VLOAD_BF16 VSTORE_F16 VSTORE_BF16 (float only): W 16-bit
 *                  values <-> W floats, exact / rounded to nearest even
 *                  with half.h's bits
 * Contraction is off everywhere (setup.py -ffp-contract=off): a * b + c
 * written apart is a multiply then an add on every path.
 *
 * exp(x) = 2^n p(r), n = round(x log2 e), r = x - n ln2_hi - n ln2_lo
 * (|r| <= ln2/2), p(r) = 1 + r (1 + r q(r)): q is a Chebyshev (near
 * minimax) fit of (e^r - 1 - r) / r^2 on [-1.01 ln2/2, 1.01 ln2/2]
 * (mpmath, 50 digits): p's relative error 1.1e-8 for float (degree 6),
 * 1.9e-17 for double (degree 11), below half an ulp, so the error is the
 * evaluation's rounding (tests/c/test_core.c measures it). Results below
 * the smallest normal number are 0 and never computed: an underflowing
 * multiply costs a microcode assist per element on Intel CPUs (every
 * masked -inf score goes through exp).
 */

#ifndef ATTNPY_SIMD_MATH_CONSTANTS
#define ATTNPY_SIMD_MATH_CONSTANTS
/* float */
#define AX_LOG2E_F 1.44269504088896341f
#define AX_MAGIC_F 12582912.0f          /* 1.5 * 2^23: t + MAGIC rounds t  */
#define AX_LN2HI_F 0.693359375f         /* 0x3f318000, 9 significant bits  */
#define AX_LN2LO_F (-2.12194440e-4f)
#define AX_MINX_F (-87.3365478515625f)  /* ~ln(FLT_MIN): below -> 0       */
#define AX_CLAMP_F (-88.0f)
#define AX_Q2_F 0.5f
#define AX_Q3_F 0.1666657338190084602f
#define AX_Q4_F 0.04166655011030512444f
#define AX_Q5_F 0.008363773874405573498f
#define AX_Q6_F 0.001392692661402190648f
/* double */
#define AX_LOG2E_D 1.4426950408889634074
#define AX_MAGIC_D 6755399441055744.0   /* 1.5 * 2^52 */
#define AX_LN2HI_D 6.93147180369123816490e-01 /* 32 significant bits */
#define AX_LN2LO_D 1.90821492927058770002e-10
#define AX_MINX_D (-708.39641853226408)  /* ~ln(DBL_MIN)                   */
#define AX_CLAMP_D (-709.0)
#define AX_Q2_D 0.5000000000000001127956642
#define AX_Q3_D 0.1666666666666666753413095
#define AX_Q4_D 0.0416666666666206385837434
#define AX_Q5_D 0.008333333333329793499595376
#define AX_Q6_D 0.001388888891893916778499382
#define AX_Q7_D 0.0001984126986438051329547047
#define AX_Q8_D 0.00002480151864139599358273917
#define AX_Q9_D 0.000002755726641861230370310895
#define AX_Q10_D 0.0000002762133866914292379999846
#define AX_Q11_D 2.510134692835034019792163e-8
#endif

#define MT_ static ATTN_INLINE ATTR

/* The steps exp and expm1 share, on xc >= CLAMP (or NaN): xc = n ln2 + r;
 * returns q1 = 1 + r q(r), so that e^xc = 2^n (1 + r q1) and
 * expm1(xc) = 2^n (r q1) + (2^n - 1); *r_ = r, *s_ = 2^n (+0 for the
 * clamped n = -127 / -1023)                                             */
MT_ VT SFX(expk)(VT xc, VT *r_, VT *s_)
{
#if SIMD_T_F64
    const VT magic = VSET1(AX_MAGIC_D);
    VT t = VFMA(xc, VSET1(AX_LOG2E_D), magic);
    VT n = VSUB(t, magic);
    VT r = VFNMA(n, VSET1(AX_LN2HI_D), xc);
    r = VFNMA(n, VSET1(AX_LN2LO_D), r);
    VT q = VSET1(AX_Q11_D);
    q = VFMA(q, r, VSET1(AX_Q10_D));
    q = VFMA(q, r, VSET1(AX_Q9_D));
    q = VFMA(q, r, VSET1(AX_Q8_D));
    q = VFMA(q, r, VSET1(AX_Q7_D));
    q = VFMA(q, r, VSET1(AX_Q6_D));
    q = VFMA(q, r, VSET1(AX_Q5_D));
    q = VFMA(q, r, VSET1(AX_Q4_D));
    q = VFMA(q, r, VSET1(AX_Q3_D));
    q = VFMA(q, r, VSET1(AX_Q2_D));
#else
    const VT magic = VSET1(AX_MAGIC_F);
    VT t = VFMA(xc, VSET1(AX_LOG2E_F), magic);
    VT n = VSUB(t, magic);
    VT r = VFNMA(n, VSET1(AX_LN2HI_F), xc);
    r = VFNMA(n, VSET1(AX_LN2LO_F), r);
    VT q = VSET1(AX_Q6_F);
    q = VFMA(q, r, VSET1(AX_Q5_F));
    q = VFMA(q, r, VSET1(AX_Q4_F));
    q = VFMA(q, r, VSET1(AX_Q3_F));
    q = VFMA(q, r, VSET1(AX_Q2_F));
#endif
    *r_ = r;
    *s_ = VPOW2T(t);
    return VFMA(q, r, VSET1((T)1));
}

/* e^x for x <= 0: x below ln(smallest normal) (and -inf) gives +0; NaN
 * propagates (VMAX's second operand)                                    */
MT_ VT SFX(exp_neg)(VT x)
{
#if SIMD_T_F64
    const VT c = VSET1(AX_CLAMP_D), minx = VSET1(AX_MINX_D);
#else
    const VT c = VSET1(AX_CLAMP_F), minx = VSET1(AX_MINX_F);
#endif
    VT r, s;
    VT q = SFX(expk)(VMAX(c, x), &r, &s);
    VT y = VMUL(VFMA(q, r, VSET1((T)1)), s);
    return VSEL(VLT(x, minx), VZERO(), y);
}

/* tanh(x) = sign(x) * -m / (2 + m), m = expm1(-2|x|) in [-1, 0]: no
 * cancellation near 0 (m = r q1 there), +-1 for large |x|, NaN stays NaN */
MT_ VT SFX(tanh)(VT x)
{
#if SIMD_T_F64
    const VT c = VSET1(AX_CLAMP_D);
#else
    const VT c = VSET1(AX_CLAMP_F);
#endif
    VT r, s;
    VT q = SFX(expk)(VMAX(c, VMUL(VABS(x), VSET1((T)-2))), &r, &s);
    VT m = VFMA(s, VMUL(q, r), VSUB(s, VSET1((T)1)));
    VT th = VDIV(VSUB(VZERO(), m), VADD(VSET1((T)2), m));
    return VORSIGN(th, x);
}

#undef MT_
#define VEXP(x) SFX(exp_neg)(x)
#define VTANH(x) SFX(tanh)(x)
#define VSAFE(x) VSEL(VEQ(x, VSET1((T)-INFINITY)), VZERO(), x)
