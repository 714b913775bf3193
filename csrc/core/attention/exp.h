/*
 * attention/exp.h -- constants of exp(x) for x <= 0, shared by every path.
 *
 *   n = round(x * log2(e)),  r = x - n*ln2_hi - n*ln2_lo   (|r| <= ln2/2)
 *   exp(x) = 2^n * p(r),     p(r) = 1 + r + r^2 * q(r) = 1 + r (1 + r q(r))
 *
 * q is a Chebyshev (near-minimax) fit of (e^r - 1 - r) / r^2 on
 * [-1.01 ln2/2, +1.01 ln2/2], computed with mpmath (50 digits): relative
 * error of p 1.1e-8 for float (degree 6) and 1.9e-17 for double
 * (degree 11), well below half an ulp, so the measured error is set by the
 * rounding of the evaluation (see tests/c/test_core.c).
 * Results below the smallest normal number are returned as 0 on every path
 * and are never computed: an underflowing multiply would cost a microcode
 * assist per element on Intel CPUs (every masked -inf score goes through
 * exp), and weights below 1e-38 of the row's largest do not matter.
 */
#ifndef ATTNPY_ATTN_EXP_H
#define ATTNPY_ATTN_EXP_H

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


#endif /* ATTNPY_ATTN_EXP_H */
