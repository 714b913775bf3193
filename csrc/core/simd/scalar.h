/*
 * simd/scalar.h -- attnpy's elementary functions for scalar C code: the
 * one-lane instantiation (simd/vec_scalar.h) of the templates in
 * simd/math.h, so each gives the same bits as the vector kernels' copy of
 * the same function on every instruction set and operating system, and
 * none calls the C library's exp, log, sin, cos, erf, tanh or pow (whose
 * results differ between glibc, macOS and Windows).
 *
 * Accuracy: the largest error measured, in ulps of the result, against
 * mpmath references (tests/data/math_refs.txt, written by
 * tools/make_math_refs.py: random and hard points over each function's
 * range) and, for the float functions, against glibc's double functions
 * over every float input (tests/c/test_math.c --exhaustive). The figures
 * are those of tests/c/test_math.c's report (see the comment beside each
 * function in simd/math.h). "Results below the smallest normal number
 * are 0" means: where the exact result is below DBL_MIN / FLT_MIN, the
 * function returns +0 (no subnormal results, and no slow subnormal
 * arithmetic in the kernels).
 */
#ifndef ATTNPY_SIMD_SCALAR_H
#define ATTNPY_SIMD_SCALAR_H

/* e^x, every x. Overflow (x > 709.78 / 88.72) gives +inf; results below
 * the smallest normal number (x < -708.40 / -87.34) are +0, e^-inf = +0;
 * NaN gives NaN. Max error 1 ulp (double and float).                    */
double attn_exp(double x);
float attn_expf(float x);

/* the logistic function 1 / (1 + e^-x) (silu(x) = x sigmoid(x)), every
 * x: +1 for large x, +0 below the smallest normal number (x < -708.40 /
 * -87.34), NaN gives NaN. Max error 2 ulp.                              */
double attn_sigmoid(double x);
float attn_sigmoidf(float x);

/* tanh x, every x: +-1 for large |x|, tanh(+-0) = +-0, NaN gives NaN.
 * Max error 3 ulp (see simd/math.h).                                   */
double attn_tanh(double x);
float attn_tanhf(float x);

/* Phi(h) = (1 + erf(h / sqrt 2)) / 2, the standard normal distribution
 * function (gelu(h) = h Phi(h)), every h, accurate in relative terms for
 * negative h too (computed from the upper tail, never as 1 + erf): 1 for
 * large h, +0 below the smallest normal number (h < -37.5 / -13.2), NaN
 * gives NaN. Max error 2 ulp.                                           */
double attn_phi(double h);
float attn_phif(float h);

/* the standard normal density e^(-h^2/2) / sqrt(2 pi) (gelu's derivative
 * is Phi(h) + h pdf(h)), every h: +0 below the smallest normal number
 * (|h| > 37.5 / 13.2), NaN gives NaN. Max error 1 ulp.                  */
double attn_npdf(double h);
float attn_npdff(float h);

/* log x: x > 0 (subnormals too); log(+-0) = -inf, x < 0 gives NaN,
 * log(+inf) = +inf, log(1) = +0, NaN gives NaN. Max error 1 ulp.        */
double attn_log(double x);
float attn_logf(float x);

/* sin x and cos x together, every finite x (the reduction is exact for
 * all doubles: |x| < 2^32 by a three-part pi/2, beyond by 2/pi's bits);
 * sin(+-0) = +-0; inf and NaN give NaN for both. Max error 1 ulp.       */
void attn_sincos(double x, double *s, double *c);

/* x^y with C99's special cases (pow(x, +-0) = 1 and pow(1, y) = 1 for
 * any x, y, NaN too; a negative x only to an integer y, else NaN; zeros
 * and infinities as their limits). Results below the smallest normal
 * number are +0 (with the sign the parity gives), above the largest
 * inf. Max error 1 ulp where |y log x| <= 709.                          */
double attn_pow(double x, double y);

#endif /* ATTNPY_SIMD_SCALAR_H */
