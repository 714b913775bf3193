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
 *   exp sigmoid npdf phi log (x)   e^x over the whole range, 1/(1+e^-x),
 *                  the normal density and distribution function, log x
 *   log_dd(x, &lo)           log x as a double-double
 *   pow(x, y) sincos(x, &s, &c)    (double only)
 *
 * e.g. exp_neg_avx2_f32, exp_neg_portw_f64, tanh_neon_f32,
 * exp_neg_scalar_f64 (simd/vec_scalar.h: one lane, VT = T). The one-lane
 * instantiation is exported as plain C functions by simd/scalar.c
 * (simd/scalar.h: attn_exp, attn_phif, attn_sincos, ...), where each
 * function's domain, special values and measured accuracy are listed.
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
 *   VGETEXP(a)     a's exponent field less the bias (127 / 1023), as a
 *                  T: floor(log2 |a|) for normal a (for 0 and subnormals
 *                  -127 / -1023; for inf and NaN 128 / 1024)
 *   VGETMANT(a)    |a| with its exponent field set to the bias: in [1, 2)
 *                  for normal a (bits, defined for every a)
 *   VRSUM(a)       the lanes' sum, any order: only ever tested against 0
 *   VMASKN(k) VLOADN(p, k) VSTOREN(p, k, v)   optional (else below,
 *                  through a buffer): the lanes i < k <= W as a VM, loaded
 *                  (the others 0, their memory not read) and stored: a
 *                  row's last n % W elements without a scalar loop
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
 *
 * The other polynomials (math_poly.h) are fitted by tools/fit_math.py
 * (Chebyshev fits in mpmath at 60 digits, rounded to the type; the
 * script prints each rounded polynomial's relative error). The accuracy
 * noted beside each function is tests/c/test_math.c's measurement: the
 * largest error in ulps against mpmath (tests/data/math_refs.txt, ~800
 * random and hard points a function) and, for float, over every float
 * input against glibc's double functions (--exhaustive).
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
/* the functions below */
#define AX_XHI_F 89.0f                  /* > ln(FLT_MAX): e^x -> inf      */
#define AX_XHI_D 710.0                  /* > ln(DBL_MAX)                  */
#define AX_TMIN_F 0x1p-126f             /* the smallest normal numbers    */
#define AX_TMIN_D 0x1p-1022
#define AX_SIGHI_F 88.0f                /* sigmoid's clamp of -x: n <= 127 */
#define AX_SIGHI_D 709.0                /*                        n <= 1023 */
#define AX_HMAX_F 16.0f                 /* |h| clamp of npdf and phi: far */
#define AX_HMAX_D 40.0                  /* into the range where they are 0 */
#define AX_SUBUP_F 0x1p25f              /* log: subnormals scaled by this */
#define AX_SUBUP_D 0x1p54
#define AX_SUBUPK_F 25.0f
#define AX_SUBUPK_D 54.0
#define AX_INTMIN_F 0x1p23f             /* from here on every T is an     */
#define AX_INTMIN_D 0x1p52              /* integer                        */
#define AX_LNSQ2PI_F 0.9189385175704956f    /* ln(sqrt(2 pi)) in two parts */
#define AX_LNSQ2PI_LO_F 1.563417661998301e-08f
#define AX_LNSQ2PI_D 0x1.d67f1c864beb5p-1
#define AX_LNSQ2PI_LO_D (-0x1.65b5a1b7ff5dfp-55)
#define AX_SQRT2 1.4142135623730951
#define AX_TWOOPI_D 0.63661977236758138      /* 2/pi */
#define AX_PHI_U0 0.671875              /* Phi's pieces: math_poly.h      */
#define AX_PHI_U1 2.0
#define AX_PHI_U2 4.0
#include "simd/math_poly.h"
/* x >= 2^32 (finite: else anything) = n pi/2 + *rh + *rl, |rh| <= pi/4;
 * returns n mod 4 (simd/scalar.c: exact integer arithmetic)            */
int attn__rem_pio2_big(double x, double *rh, double *rl);
#endif

#define MT_ static ATTN_INLINE ATTR
/* the name <n>_D<s> or <n>_F<s> of this element type (math_poly.h's
 * TANH_D, TANH_D_N ...), and the constant AX_<n>_D or AX_<n>_F          */
#if SIMD_T_F64
#define AXC_(n, s) n##_D##s
#else
#define AXC_(n, s) n##_F##s
#endif
#define AXT_(n) ((T)AXC_(AX_##n, ))

/* The steps every exp shares, on xc >= CLAMP (or NaN): xc = n ln2 + r,
 * |r| <= ln2 / 2; returns r, *t_ = n + MAGIC (VPOW2T(t) = 2^n)          */
MT_ VT SFX(expr)(VT xc, VT *t_)
{
    const VT magic = VSET1(AXT_(MAGIC));
    VT t = VFMA(xc, VSET1(AXT_(LOG2E)), magic);
    VT n = VSUB(t, magic);
    VT r = VFNMA(n, VSET1(AXT_(LN2HI)), xc);
    r = VFNMA(n, VSET1(AXT_(LN2LO)), r);
    *t_ = t;
    return r;
}

/* q(r) = (e^r - 1 - r) / r^2                                           */
MT_ VT SFX(expq0)(VT r)
{
#if SIMD_T_F64
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
    VT q = VSET1(AX_Q6_F);
    q = VFMA(q, r, VSET1(AX_Q5_F));
    q = VFMA(q, r, VSET1(AX_Q4_F));
    q = VFMA(q, r, VSET1(AX_Q3_F));
    q = VFMA(q, r, VSET1(AX_Q2_F));
#endif
    return q;
}

/* q1 = 1 + r q(r): e^r = 1 + r q1                                        */
MT_ VT SFX(expq)(VT r) { return VFMA(SFX(expq0)(r), r, VSET1((T)1)); }

/* expr's reduction with its rounding kept: xc + xl = n ln2 + r + *d_,
 * *d_ = r's rounding error (recovered: r1 - n ln2_lo - r, r1 = xc -
 * n ln2_hi exact) + xl; e^(xc + xl) = 2^n e^r (1 + d + d^2/2 ...)    */
MT_ VT SFX(expr2)(VT xc, VT xl, VT *t_, VT *d_)
{
    const VT r = SFX(expr)(xc, t_);
    const VT n = VSUB(*t_, VSET1(AXT_(MAGIC)));
    const VT r1 = VFNMA(n, VSET1(AXT_(LN2HI)), xc);
    *d_ = VADD(VFNMA(n, VSET1(AXT_(LN2LO)), VSUB(r1, r)), xl);
    return r;
}

/* The steps exp and expm1 share, on xc >= CLAMP (or NaN): xc = n ln2 + r;
 * returns q1 = 1 + r q(r), so that e^xc = 2^n (1 + r q1) and
 * expm1(xc) = 2^n (r q1) + (2^n - 1); *r_ = r, *s_ = 2^n (+0 for the
 * clamped n = -127 / -1023)                                             */
MT_ VT SFX(expk)(VT xc, VT *r_, VT *s_)
{
    VT t;
    *r_ = SFX(expr)(xc, &t);
    *s_ = VPOW2T(t);
    return SFX(expq)(*r_);
}

/* e^x for x <= 0: x below ln(smallest normal) (and -inf) gives +0; NaN
 * propagates (VMAX's second operand)                                    */
MT_ VT SFX(exp_neg)(VT x)
{
    const VT c = VSET1(AXT_(CLAMP)), minx = VSET1(AXT_(MINX));
    VT r, s;
    VT q = SFX(expk)(VMAX(c, x), &r, &s);
    VT y = VMUL(VFMA(q, r, VSET1((T)1)), s);
    return VSEL(VLT(x, minx), VZERO(), y);
}

/* c[0] + x (c[1] + x (... + x c[n])): Horner, one fma a step            */
MT_ VT SFX(horner)(VT x, const T *c, int n)
{
    VT y = VSET1(c[n]);
    for (int i = n - 1; i >= 0; i--)
        y = VFMA(y, x, VSET1(c[i]));
    return y;
}

/* a + b = *s + *e exactly (Knuth's TwoSum: any magnitudes)              */
MT_ void SFX(two_sum)(VT a, VT b, VT *s, VT *e)
{
    const VT t = VADD(a, b), bb = VSUB(t, a);
    *e = VADD(VSUB(a, VSUB(t, bb)), VSUB(b, bb));
    *s = t;
}

/* tanh(x) = sign(x) * t(|x|). |x| < 3/4: t = x + x (z T(z)), z = x^2, an
 * odd polynomial (tools/fit_math.py), one rounding at the end. Beyond:
 * -m / (2 + m), m = expm1(-2|x|) in [-1, 0]: with u = e^(r + rl) - 1 =
 * r + (r (r q(r)) + rl) (rl: r's rounding error, recovered) and s = 2^n,
 * m = s u + (s - 1) and 2 + m = s u + (1 + s) are one fma each (s - 1
 * and 1 + s exact but where s is below 2^-52 / 2^-23 and m is -1
 * anyway): one division. +-1 for large |x|, NaN stays NaN. (Both forms
 * are computed; the polynomial was added for float's 2.0 ulp of the
 * exp form near x = 1/8 and 1/2.)                                              */
/* measured: double 1.82 ulp (at 18.2; mpmath, 20000 random points of
 * [-19, 19], tools/measure_math.py), float 1.83 ulp (at 0x1.049f94p+3;
 * every float, against glibc's double tanh, test_math --exhaustive)    */
MT_ VT SFX(tanh)(VT x)
{
    static const T pt[] = AXC_(TANH, );
    const int nt = AXC_(TANH, _N);
    const VT c = VSET1(AXT_(CLAMP)), one = VSET1((T)1), ax = VABS(x);
    const VT xc = VMAX(c, VMUL(ax, VSET1((T)-2)));
    VT t, rl, r = SFX(expr2)(xc, VZERO(), &t, &rl);
    const VT s = VPOW2T(t);
    const VT u = VADD(r, VFMA(r, VMUL(r, SFX(expq0)(r)), rl));
    const VT m = VFMA(s, u, VSUB(s, one));
    const VT d = VFMA(s, u, VADD(one, s));
    const VT te = VDIV(VSUB(VZERO(), m), d);
    /* the polynomial on |x| (< 2^-64 as 0: no slow subnormal x^2)       */
    const VT xp = VSEL(VLT(ax, VSET1((T)0x1p-64f)), VZERO(), ax);
    const VT z = VMUL(xp, xp);
    const VT tp = VFMA(ax, VMUL(z, SFX(horner)(z, pt, nt)), ax);
    return VORSIGN(VSEL(VLT(ax, VSET1((T)0.75)), tp, te), x);
}

/* ---- the functions of simd/scalar.h (and any kernel's), written once -- */

/* (fh + fl) e^(xh + xl), xl a small correction to xh (|xl| <= ulp(xh)),
 * fh in (0, 1], |fl| <= ulp(fh): with u = e^(r + d) - 1 (expr2: d holds
 * r's rounding and xl), the one rounding is fh + (fh u + fl (1 + u))
 * before the exact scaling by 2^n. Results below the smallest normal
 * number are 0 (as exp_neg's)                                           */
MT_ VT SFX(expmul)(VT xh, VT xl, VT fh, VT fl)
{
    const VT c = VSET1(AXT_(CLAMP)), tiny = VSET1(AXT_(TMIN));
    VT t, d, r = SFX(expr2)(VMAX(c, xh), xl, &t, &d);
    const VT q1 = SFX(expq)(r);
    /* e^(r + d) - 1 = r q1 + d + d r q1 (d^2 / 2 is below 2^-80)         */
    const VT u = VFMA(d, VMUL(r, q1), VFMA(r, q1, d));
    VT y = VMUL(VADD(fh, VFMA(fh, u, VFMA(fl, u, fl))), VPOW2T(t));
    y = VSEL(VLT(xh, c), VZERO(), y);
    return VSEL(VLT(y, tiny), VZERO(), y);
}

/* e^(xh + xl) over the whole range, xl a small correction (0 for plain
 * exp): 2^n (1 + u), u = e^(r + d) - 1 as in expmul. x > ~ln(max) gives
 * +inf, x < ln(smallest normal) +0 (and -inf), NaN stays NaN. x is
 * clamped to [CLAMP, XHI]; n reaches 1024 / 128 for x > 0, past
 * VPOW2T's range, so there 2^n = 2^(n - 1) * 2 (both exact; the last
 * multiply overflows to inf when the result does)                       */
MT_ VT SFX(exp_dd)(VT xh, VT xl)
{
    const VT c = VSET1(AXT_(CLAMP)), hi = VSET1(AXT_(XHI)),
             minx = VSET1(AXT_(MINX)), one = VSET1((T)1);
    VT t, d, r = SFX(expr2)(VMAX(c, VMIN(hi, xh)), xl, &t, &d);
    const VT q1 = SFX(expq)(r);
    /* e^(r + d) - 1 = r q1 + d + d r q1 (d^2 / 2 is below 2^-80)         */
    const VT u = VFMA(d, VMUL(r, q1), VFMA(r, q1, d));
    const VM pos = VLT(VZERO(), xh);
    const VT s = VPOW2T(VSUB(t, VSEL(pos, one, VZERO())));
    VT y = VMUL(VMUL(VADD(one, u), s), VSEL(pos, VSET1((T)2), one));
    return VSEL(VLT(xh, minx), VZERO(), y);
}

/* e^x, every x: exp_neg's steps with r's rounding error recovered
 * (expr2), so not always exp_neg's bits for x <= 0                     */
/* measured: double 0.99 ulp (at -697.6; mpmath, 20000 random points of
 * [-708.3, 709.7]), float 1.09 ulp (at 0x1.dcee4ep+3; every float,
 * against glibc's double exp)                                          */
MT_ VT SFX(exp)(VT x) { return SFX(exp_dd)(x, VZERO()); }

/* 1 / (1 + e^-x): with e^-x = s (1 + u) (s = 2^n, u = e^(r + d) - 1 as
 * in expmul), 1 + e^-x is one fma (below), then one division: two
 * roundings in all (and u + 1/s's, small). -x is clamped to
 * [CLAMP, SIGHI] (2^n stays in VPOW2T's range; beyond, the result is 1,
 * or below the smallest normal number, where it is 0: x < ~-87.3 /
 * -708.4)                                                               */
/* measured: double 1.47 ulp (at 18.7; mpmath, 20000 random points of
 * [-708, 37]), float 1.77 ulp (at -0x1.1b7f04p+0; every float, against
 * 1 / (1 + exp(-x)) in glibc's double)                                 */
MT_ VT SFX(sigmoid)(VT x)
{
    const VT c = VSET1(AXT_(CLAMP)), one = VSET1((T)1);
    const VT a = VMIN(VSET1(AXT_(SIGHI)), VMAX(c, VSUB(VZERO(), x)));
    VT t, d, r = SFX(expr2)(a, VZERO(), &t, &d);
    const VT q1 = SFX(expq)(r);
    const VT u = VFMA(d, VMUL(r, q1), VFMA(r, q1, d));
    const VT s = VPOW2T(t);
    /* s <= 1: s u + (1 + s), 1 + s exact; s > 1 (x < 0), where 1 + s is
     * not exact from 2^24 / 2^53 on: s (u + 1/s) + s, 1/s = 2^-n exact  */
    const VT is = VPOW2T(VSUB(VSET1(2 * AXT_(MAGIC)), t));
    const VM big = VLT(one, s);
    const VT den = VFMA(s, VSEL(big, VADD(u, is), u),
                        VSEL(big, s, VADD(one, s)));
    const VT y = VDIV(one, den);
    return VSEL(VLT(y, VSET1(AXT_(TMIN))), VZERO(), y);
}

/* the exponent -h^2/2 - ln(sqrt(2 pi)) as *xh + *xl, h^2 exact (fma) and
 * the constant in two parts                                             */
MT_ void SFX(npdf_arg)(VT h, VT *xh, VT *xl)
{
    const VT ch = VSET1(AXT_(LNSQ2PI)), cl = VSET1(AXT_(LNSQ2PI_LO));
    const VT zh = VMUL(h, h), zl = VFMA(h, h, VSUB(VZERO(), zh));
    const VT mh = VSET1((T)-0.5);
    VT e;
    SFX(two_sum)(VMUL(mh, zh), VSUB(VZERO(), ch), xh, &e);
    *xl = VSUB(VFMA(mh, zl, e), cl);
}

/* the normal density e^(-h^2/2) / sqrt(2 pi); 0 below the smallest
 * normal number (|h| > ~13.2 / 37.5), NaN stays NaN                    */
/* measured: double 1.13 ulp (at -6.68; mpmath, 20000 random points of
 * [-37.7, 37.7]), float 1.26 ulp (at 0x1.8ff7ecp+2; every float,
 * against exp(-h^2/2) / sqrt(2 pi) in glibc's double)                  */
MT_ VT SFX(npdf)(VT h)
{
    const VT hmax = VSET1(AXT_(HMAX)), u = VMIN(hmax, VABS(h));
    VT xh, xl;
    /* |h| < 2^-64: as h = 0 (the same bits; no subnormal h^2, whose
     * arithmetic is slow)                                               */
    SFX(npdf_arg)(VSEL(VLT(u, VSET1((T)0x1p-64f)), VZERO(), u), &xh, &xl);
    const VT y = SFX(expmul)(xh, xl, VSET1((T)1), VZERO());
    return VSEL(VEQ(h, h), y, h);
}

/* Phi(h) = (1 + erf(h / sqrt 2)) / 2, the normal distribution function,
 * accurate in relative terms for negative h too (no 1 + erf):
 *   |h| < U0:  1/2 + h A(h^2)
 *   else:      Q(u) = 1 - Phi(u), u = |h|, as e^(-u^2/2) / sqrt(2 pi) *
 *              g(u) / u, g(u) = u Q(u) / pdf(u) (u times Mills' ratio):
 *              a polynomial in u - X0 on [U0, 2) and [2, 4), in 1/u^2
 *              from 4 on (its coefficients picked per lane), its
 *              constant term in two parts, its last sum and g / u kept
 *              as double-doubles into expmul's one rounding; Phi = Q(u)
 *              for h < 0, 1 - Q for h > 0. 0 below the smallest normal
 *              number                                                  */
/* measured: double 1.30 ulp (at -28.46; mpmath, 20000 random points of
 * [-37.5, 8.2]), float 1.71 ulp (at -0x1.8ff7ecp+2; every float,
 * against erfc(-h / sqrt 2) / 2 in glibc's double)                     */
MT_ VT SFX(phi)(VT h)
{
    static const T pa[] = AXC_(PHA, ), pb[] = AXC_(PHB, ),
                   pc[] = AXC_(PHC, ), pd[] = AXC_(PHD, );
    const int na = AXC_(PHA, _N), n = AXC_(PHB, _N);
    const T la = AXC_(PHA, _LO), lb = AXC_(PHB, _LO), lc = AXC_(PHC, _LO),
            ld = AXC_(PHD, _LO);
    const T xb = AXC_(PHB, _X0), xc = AXC_(PHC, _X0);
    const VT one = VSET1((T)1), u0 = VSET1((T)AX_PHI_U0);
    /* the middle; |h| < 2^-64 as 0 (the same bits, 1/2, and no slow
     * subnormal h^2)                                                     */
    const VT hm = VSEL(VLT(VABS(h), VSET1((T)0x1p-64f)), VZERO(), h);
    const VT z = VMUL(hm, hm);
    VT a = VFMA(SFX(horner)(z, pa + 1, na - 1), z, VSET1(la));
    a = VADD(a, VSET1(pa[0]));
    const VT ym = VFMA(hm, a, VSET1((T)0.5));
    /* the tails, on u in [U0, HMAX]                                      */
    const VT u = VMAX(u0, VMIN(VSET1(AXT_(HMAX)), VABS(h)));
    const VM m1 = VLT(u, VSET1((T)AX_PHI_U1)), m2 = VLT(u, VSET1((T)AX_PHI_U2));
    const VT iu = VDIV(one, u), w = VMUL(iu, iu);
    const VT v = VSEL(m1, VSUB(u, VSET1(xb)),
                      VSEL(m2, VSUB(u, VSET1(xc)), w));
    VT g = VSEL(m1, VSET1(pb[n]), VSEL(m2, VSET1(pc[n]), VSET1(pd[n])));
    for (int i = n - 1; i >= 1; i--)
        g = VFMA(g, v, VSEL(m1, VSET1(pb[i]),
                            VSEL(m2, VSET1(pc[i]), VSET1(pd[i]))));
    g = VFMA(g, v, VSEL(m1, VSET1(lb), VSEL(m2, VSET1(lc), VSET1(ld))));
    /* g = gh + gl exactly, g / u = Gh + Gl (1 - u iu exact by fma)      */
    VT gh, gl;
    SFX(two_sum)(VSEL(m1, VSET1(pb[0]), VSEL(m2, VSET1(pc[0]), VSET1(pd[0]))),
                 g, &gh, &gl);
    const VT Gh = VMUL(gh, iu);
    const VT Gl = VFMA(gl, iu, VFMA(Gh, VFNMA(u, iu, one),
                                    VFMA(gh, iu, VSUB(VZERO(), Gh))));
    VT xh, xl;
    SFX(npdf_arg)(u, &xh, &xl);
    const VT q = SFX(expmul)(xh, xl, Gh, Gl);
    VT y = VSEL(VLT(h, VZERO()), q, VSUB(one, q));
    y = VSEL(VLT(VABS(h), u0), ym, y);
    return VSEL(VEQ(h, h), y, h);
}

/* log(x) = *lo + the result, a double-double to ~2^-65 relative (float:
 * ~2^-35). x = 2^k m, m in [sqrt(1/2), sqrt 2) (subnormals scaled by
 * 2^54 / 2^25 first), f = m - 1 exact, s = f / (2 + f) as a
 * double-double (its division's remainder by fma), log(m) = 2 atanh(s)
 * = 2 s + s^3 P(s^2), k ln2 in two parts (k ln2_hi exact). log(+-0) =
 * -inf, x < 0 NaN, log(+inf) = +inf, NaN stays NaN; *lo = 0 for those  */
MT_ VT SFX(log_dd)(VT x, VT *lo)
{
    static const T pl[] = AXC_(LOG, );
    const int n = AXC_(LOG, _N);
    const T lo0 = AXC_(LOG, _LO);
    const VT tiny = VSET1(AXT_(TMIN)), up = VSET1(AXT_(SUBUP)),
             kup = VSET1(AXT_(SUBUPK));
    const VT ln2h = VSET1(AXT_(LN2HI)), ln2l = VSET1(AXT_(LN2LO));
    const VT one = VSET1((T)1), two = VSET1((T)2), inf = VSET1((T)INFINITY);
    const VM sub = VLT(x, tiny);
    const VT xs = VSEL(sub, VMUL(x, up), x);
    VT k = VSUB(VGETEXP(xs), VSEL(sub, kup, VZERO()));
    VT m = VGETMANT(xs);
    const VM big = VLT(VSET1((T)AX_SQRT2), m);
    m = VSEL(big, VMUL(m, VSET1((T)0.5)), m);
    k = VSEL(big, VADD(k, one), k);
    const VT f = VSUB(m, one);
    /* s = f / (2 + f): 2 + f = dh + dl exactly, sh + sl                 */
    const VT dh = VADD(two, f), dl = VSUB(f, VSUB(dh, two));
    const VT sh = VDIV(f, dh);
    VT e = VFNMA(sh, dh, f);
    e = VFNMA(sh, dl, e);
    const VT sl = VDIV(e, dh);
    /* s^3 P(s^2) to ~2^-60 of itself: s^3 = a + al (sh^3 from exact
     * products, plus 3 sh^2 sl), P = c0 + z P1(z) = ph + pl (c0 in two
     * parts), the product a ph's rounding kept                          */
    const VT zh = VMUL(sh, sh), zl = VFMA(sh, sh, VSUB(VZERO(), zh));
    const VT a = VMUL(sh, zh);
    const VT al = VADD(VFMA(sh, zh, VSUB(VZERO(), a)),
                       VFMA(sh, zl, VMUL(VMUL(VSET1((T)3), zh), sl)));
    const VT w = VMUL(zh, SFX(horner)(zh, pl + 1, n - 1));
    VT ph, pe;
    SFX(two_sum)(VSET1(pl[0]), w, &ph, &pe);
    const VT th = VMUL(a, ph);
    const VT tl = VADD(VFMA(a, ph, VSUB(VZERO(), th)),
                       VFMA(a, VADD(pe, VSET1(lo0)), VMUL(al, ph)));
    /* k ln2_hi + 2 sh + th + (2 sl + tl + k ln2_lo), the first three
     * summed exactly                                                    */
    VT s1, e1, s2, e2;
    SFX(two_sum)(VMUL(k, ln2h), VMUL(two, sh), &s1, &e1);
    SFX(two_sum)(s1, th, &s2, &e2);
    const VT l = VADD(VADD(e1, e2), VADD(VFMA(two, sl, tl), VMUL(k, ln2l)));
    VT y = VADD(s2, l);
    VT yl = VSUB(l, VSUB(y, s2));
    /* the special values                                                */
    const VM bad = VLT(x, VZERO());
    y = VSEL(bad, VSET1((T)NAN), y);
    y = VSEL(VEQ(x, VZERO()), VSUB(VZERO(), inf), y);
    y = VSEL(VEQ(x, inf), inf, y);
    y = VSEL(VEQ(x, x), y, x);
    yl = VSEL(VLT(VABS(y), inf), yl, VZERO());
    *lo = VSEL(VEQ(y, y), yl, VZERO());
    return y;
}

/* measured: double 0.50 ulp (mpmath, 20000 random points, half of them
 * over the whole range, subnormals too), float 0.501 ulp (every float,
 * against glibc's double log)                                          */
MT_ VT SFX(log)(VT x)
{
    VT lo;
    return SFX(log_dd)(x, &lo);
}

/* round(v) for |v| <= 2^52 / 2^23 (to nearest, ties to even)           */
MT_ VT SFX(rint_small)(VT v)
{
    const VT magic = VSET1(AXT_(MAGIC));
    return VSUB(VADD(v, magic), magic);
}

#if SIMD_T_F64 /* pow, sincos: double only (what scalar code needs) */
/* x^y, with C99's special cases (Annex F: pow(x, +-0) = 1 and pow(1, y)
 * = 1 even for NaN; a negative x only to an integer y, the sign from y's
 * parity; pow(-1, +-inf) = 1; zeros and infinities by the limits). x > 0:
 * e^(y log x) with log x a double-double and y log x formed exactly
 * (fma) before the exp, so log's rounding is not magnified by y log x
 * (up to 709): the error is exp's plus ~2^-65 |y log x| relative.
 * Results below the smallest normal number are 0, above the largest inf */
/* measured: 1.20 ulp (at 975894.47^-0.677; mpmath, 20000 random points:
 * base^(-2i/E) for bases in [1, 1e6] and E up to 4096, and x^y for x in
 * [e^-700, e^700], |y| <= 1)                                           */
MT_ VT SFX(pow)(VT x, VT y)
{
    const VT big = VSET1(AXT_(INTMIN));
    const VT one = VSET1((T)1), inf = VSET1((T)INFINITY);
    const VT ax = VABS(x), ay = VABS(y);
    VT ll;
    const VT lh = SFX(log_dd)(ax, &ll);
    const VT ph = VMUL(y, lh);
    VT pl = VFMA(y, ll, VFMA(y, lh, VSUB(VZERO(), ph)));
    pl = VSEL(VLT(VABS(ph), inf), pl, VZERO());
    VT r = SFX(exp_dd)(ph, pl);
    /* y's integer part and parity: every |y| >= 2^52 is an integer, and
     * even from 2^53 on                                                 */
    const VT yc = VMIN(ay, big);
    const VM isint = VEQ(SFX(rint_small)(yc), yc);
    const VT hy = VMUL(VMIN(ay, VADD(big, big)), VSET1((T)0.5));
    const VM odd = VEQ(VABS(VSUB(hy, SFX(rint_small)(hy))), VSET1((T)0.5));
    const VT neg = VORSIGN(one, x); /* -1 where x's sign bit is set */
    const VT sg = VSEL(VLT(neg, VZERO()),
                       VSEL(isint, VSEL(odd, VSET1((T)-1), one), one), one);
    r = VMUL(r, sg);
    /* a finite nonzero negative x to a non-integer y: NaN              */
    const VT badv = VMUL(VSEL(VLT(x, VZERO()), one, VZERO()),
                         VMUL(VSEL(VLT(VSUB(VZERO(), inf), x), one, VZERO()),
                              VSEL(isint, VZERO(), one)));
    r = VSEL(VEQ(badv, one), VSET1((T)NAN), r);
    r = VSEL(VEQ(ax, one), VSEL(VEQ(ay, inf), one, r), r);
    r = VSEL(VEQ(x, one), one, r);
    return VSEL(VEQ(y, VZERO()), one, r);
}

/* sin and cos of rh + rl (|rh| <= ~pi/4, |rl| <= ulp(rh)):
 * sin = rh + (rh z S(z) + rl (1 - z/2)), cos = w + ((1 - w) - z/2 +
 * (z^2 C(z) - rh rl - zl/2)), z + zl = rh^2 exactly, w = 1 - z/2: the
 * small parts summed before the one last rounding                      */
MT_ void SFX(sincos_k)(VT rh, VT rl, VT *s, VT *c)
{
    static const T ps[] = SIN_D, pc[] = COS_D;
    const int ns = SIN_D_N, nc = COS_D_N;
    const VT one = VSET1((T)1), half = VSET1((T)0.5);
    const VT z = VMUL(rh, rh), zl = VFMA(rh, rh, VSUB(VZERO(), z));
    const VT hz = VMUL(half, z), w = VSUB(one, hz);
    const VT ss = VFMA(VMUL(rh, z), SFX(horner)(z, ps, ns),
                       VMUL(rl, VSUB(one, hz)));
    *s = VADD(rh, ss);
    VT cs = VFNMA(half, zl, VFNMA(rh, rl, VMUL(VMUL(z, z),
                                               SFX(horner)(z, pc, nc))));
    cs = VADD(VSUB(VSUB(one, w), hz), cs);
    *c = VADD(w, cs);
}

/* sin x and cos x, every x. |x| < 2^32 (every angle position * frequency
 * for positions up to 2^31 and frequencies up to 1): x = n pi/2 + r with
 * n = round(x 2/pi) and pi/2 in three doubles, n P1 exact (fma), n P2 as
 * an exact product, r as a double-double (error ~2^-125 absolute, far
 * below the closest any double of this range comes to a multiple of
 * pi/2). Larger |x|: lane by lane, the exact integer reduction of
 * attn__rem_pio2_big (simd/scalar.c: 2/pi's bits times x's significand,
 * no rounding before the last step), so every set gets its bits. Then
 * sin / cos of r by quadrant; sin(-x) = -sin x. inf and NaN give NaN. */
/* measured: sin 0.67 ulp, cos 0.67 ulp (mpmath, 20000 random points of
 * [-8, 8] and [-2^31, 2^31]; tests/data/math_refs.txt adds huge x up to
 * DBL_MAX and the doubles nearest multiples of pi/2: 0.59 / 0.58)     */
MT_ void SFX(sincos)(VT x, VT *sn, VT *cs)
{
    const VT magic = VSET1(AX_MAGIC_D);
    const VT medmax = VSET1((T)0x1p32), one = VSET1((T)1);
    const VT ax = VABS(x);
    const VT axc = VMIN(ax, medmax);
    const VT n = VSUB(VFMA(axc, VSET1((T)AX_TWOOPI_D), magic), magic);
    const VT r0 = VFNMA(n, VSET1((T)ATTN_PIO2_1), axc);
    const VT p2 = VMUL(n, VSET1((T)ATTN_PIO2_2));
    const VT p2l = VFMA(n, VSET1((T)ATTN_PIO2_2), VSUB(VZERO(), p2));
    VT s1, e1;
    SFX(two_sum)(r0, VSUB(VZERO(), p2), &s1, &e1);
    const VT tail = VFNMA(n, VSET1((T)ATTN_PIO2_3), VSUB(e1, p2l));
    VT rh = VADD(s1, tail);
    VT rl = VSUB(tail, VSUB(rh, s1));
    /* n mod 4, from n / 4's fraction (exact: n < 2^31)                   */
    const VT n4 = VMUL(n, VSET1((T)0.25));
    VT fl = SFX(rint_small)(n4);
    fl = VSEL(VLT(n4, fl), VSUB(fl, one), fl);
    VT qd = VMUL(VSUB(n4, fl), VSET1((T)4));
    /* the large (and non-finite) lanes                                   */
    const VT large = VSEL(VLT(ax, medmax), VZERO(), one);
    if (VRSUM(large) != 0) {
        T a_[W], h_[W], l_[W], q_[W], b_[W];
        VSTOREU(a_, ax);
        VSTOREU(h_, rh);
        VSTOREU(l_, rl);
        VSTOREU(q_, qd);
        VSTOREU(b_, large);
        for (int i = 0; i < W; i++)
            if (b_[i] != 0) {
                double hh, ll;
                q_[i] = (T)attn__rem_pio2_big((double)a_[i], &hh, &ll);
                h_[i] = (T)hh;
                l_[i] = (T)ll;
            }
        rh = VLOADU(h_);
        rl = VLOADU(l_);
        qd = VLOADU(q_);
    }
    VT s, c;
    SFX(sincos_k)(rh, rl, &s, &c);
    /* quadrant q: (sin, cos) = (s, c), (c, -s), (-s, -c), (-c, s)       */
    const VT mone = VSET1((T)-1);
    const VM odd = VEQ(VABS(VSUB(qd, VSET1((T)2))), one); /* 1 or 3 */
    const VT so = VSEL(odd, c, s), co = VSEL(odd, s, c);
    const VT ssg = VSEL(VLT(qd, VSET1((T)1.5)), one, mone);   /* q 2, 3 */
    const VT csg = VSEL(VEQ(VABS(VSUB(qd, VSET1((T)1.5))), VSET1((T)0.5)),
                        mone, one);                           /* q 1, 2 */
    const VT nan_ = VSUB(x, x); /* 0, or NaN for inf and NaN */
    const VM fin = VEQ(nan_, nan_);
    *sn = VSEL(fin, VMUL(VMUL(so, ssg), VORSIGN(one, x)), nan_);
    *cs = VSEL(fin, VMUL(co, csg), nan_);
}
#endif /* SIMD_T_F64 */

#ifndef VLOADN
/* Sets without masked loads and stores (NEON, portable, one lane): the
 * lanes i < k (0 <= k <= W) through a W-lane buffer, the others 0      */
#define SIMD_LOADN_BUF_ 1
MT_ VT SFX(loadn_)(const T *p, size_t k)
{
    T b[W];
    for (size_t i = 0; i < (size_t)W; i++)
        b[i] = i < k ? p[i] : (T)0;
    return VLOADU(b);
}
MT_ void SFX(storen_)(T *p, size_t k, VT v)
{
    T b[W];
    VSTOREU(b, v);
    for (size_t i = 0; i < k; i++)
        p[i] = b[i];
}
MT_ VM SFX(maskn_)(size_t k)
{
    T b[W];
    for (size_t i = 0; i < (size_t)W; i++)
        b[i] = (T)i;
    return VLT(VLOADU(b), VSET1((T)k));
}
#define VLOADN(p, k) SFX(loadn_)(p, k)
#define VSTOREN(p, k, v) SFX(storen_)(p, k, v)
#define VMASKN(k) SFX(maskn_)(k)
#endif

#undef MT_
#undef AXC_
#undef AXT_
#define VEXP(x) SFX(exp_neg)(x)
#define VTANH(x) SFX(tanh)(x)
#define VSAFE(x) VSEL(VEQ(x, VSET1((T)-INFINITY)), VZERO(), x)
