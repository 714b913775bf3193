/*
 * simd/scalar.h -- attnpy's elementary functions for scalar C code: the
 * one-lane instantiation (simd/vec_scalar.h) of the templates in
 * simd/math.h, so each gives the same bits as the vector kernels' copy of
 * the same function on every instruction set and operating system, and
 * none calls the C library's exp, log, sin, cos, erf, tanh or pow (whose
 * results differ between glibc, macOS and Windows).
 *
 * "Max error": the largest error measured, in ulps of the exact result,
 *   double: against mpmath, on tests/data/math_refs.txt (~800 random and
 *           hard points a function, tests/c/test_math.c) and on 20000
 *           random points a function (tools/measure_math.py);
 *   float:  against glibc's double functions at every float input
 *           (tests/c/test_math.c --exhaustive).
 * "Below the smallest normal number ... +0": where the exact result is
 * below DBL_MIN / FLT_MIN the function returns +0 (no subnormal results,
 * and no slow subnormal arithmetic in the kernels).
 */
#ifndef ATTNPY_SIMD_SCALAR_H
#define ATTNPY_SIMD_SCALAR_H

/* e^x, every x. Overflow (x > 709.78 / 88.72) gives +inf; results below
 * the smallest normal number (x < -708.40 / -87.34) are +0, e^-inf = +0;
 * NaN gives NaN. Max error: double 0.99 ulp, float 1.09 ulp.            */
double attn_exp(double x);
float attn_expf(float x);

/* the logistic function 1 / (1 + e^-x) (silu(x) = x sigmoid(x)), every
 * x: +1 for large x, +0 below the smallest normal number (x < -708.40 /
 * -87.34), NaN gives NaN. Max error: double 1.47 ulp, float 1.77 ulp.     */
double attn_sigmoid(double x);
float attn_sigmoidf(float x);

/* tanh x, every x: +-1 for large |x|, tanh(+-0) = +-0 (tiny x: x, also
 * subnormal), NaN gives NaN. Max error: double 1.82 ulp, float 1.83 ulp.    */
double attn_tanh(double x);
float attn_tanhf(float x);

/* Phi(h) = (1 + erf(h / sqrt 2)) / 2, the standard normal distribution
 * function (gelu(h) = h Phi(h)), every h, accurate in relative terms for
 * negative h too (computed from the upper tail, never as 1 + erf): 1 for
 * large h, +0 below the smallest normal number (h < -37.52 / -12.95),
 * NaN gives NaN. Max error: double 1.30 ulp, float 1.71 ulp.             */
double attn_phi(double h);
float attn_phif(float h);

/* the standard normal density e^(-h^2/2) / sqrt(2 pi) (gelu's derivative
 * is Phi(h) + h pdf(h)), every h: +0 below the smallest normal number
 * (|h| > 37.75 / 13.15), NaN gives NaN. Max error: double 1.13 ulp,
 * float 1.26 ulp.                                                        */
double attn_npdf(double h);
float attn_npdff(float h);

/* log x: x > 0 (subnormals too); log(+-0) = -inf, x < 0 gives NaN,
 * log(+inf) = +inf, log(1) = +0, NaN gives NaN. Max error: double 0.50
 * ulp, float 0.50 ulp.                                                  */
double attn_log(double x);
float attn_logf(float x);

/* sin x and cos x together, every double x (the reduction is exact for
 * all of them: |x| < 2^32 by a three-part pi/2, beyond by 2/pi's bits);
 * sin(+-0) = +-0; inf and NaN give NaN for both. Max error: 0.67 ulp
 * (sin and cos).                                                        */
void attn_sincos(double x, double *s, double *c);

/* x^y with C99's special cases (pow(x, +-0) = 1 and pow(1, y) = 1 for
 * any x, y, NaN too; a negative x only to an integer y, else NaN; zeros
 * and infinities as their limits). Results below the smallest normal
 * number are +0 (-0 for a negative x to an odd y), above the largest
 * inf. Max error 1.20 ulp (base^(-2i/E) for bases up to 1e6 and e^(y log
 * x) up to |y log x| = 700 among the points measured).                  */
double attn_pow(double x, double y);

#endif /* ATTNPY_SIMD_SCALAR_H */
