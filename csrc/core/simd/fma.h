/*
 * simd/fma.h -- a * b + c with one rounding, the same bits on every
 * platform (not public).
 *
 * The portable kernels' dot products and polynomials are fma chains, and
 * the SIMD paths compute the very same chains with their fused
 * multiply-add instructions; so the portable build needs a correctly
 * rounded fma wherever it runs. The C library's is, except where it is
 * emulated badly (MinGW's fmaf was seen wrong in 2574 of 17119 checks of
 * the Windows cross run): there attn_fmaf / attn_fma compute it from
 * exact pieces instead.
 */
#ifndef ATTNPY_SIMD_FMA_H
#define ATTNPY_SIMD_FMA_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* the target has the instruction: the compiler emits fma / fmaf inline  */
#if defined(__FMA__) || defined(__aarch64__) || defined(_M_ARM64)            \
    || defined(__ARM_FEATURE_FMA)
#define ATTN_HW_FMA 1
#else
#define ATTN_HW_FMA 0
#endif
/* the C library's fma is correctly rounded                              */
#if ATTN_HW_FMA || defined(__GLIBC__) || defined(__APPLE__)
#define ATTN_LIBM_FMA_OK 1
#else
#define ATTN_LIBM_FMA_OK 0
#endif

#if !ATTN_LIBM_FMA_OK
/* round-to-odd helpers: s = RN(x + y) made round-to-odd: when the sum was
 * inexact and s's last bit is even, s moves one ulp toward the exact sum
 * (Boldo and Melquiond: a round-to-odd result with enough spare bits
 * rounds once, right, to the narrower format). No branch (the portable
 * kernels call it in their inner loops); an infinite or NaN s is kept. */
static inline double attn__add_odd(double x, double y)
{
    double s = x + y;
    const double t = s - x, err = (x - (s - t)) + (y - t);
    uint64_t u;
    memcpy(&u, &s, sizeof u);
    const uint64_t adj = (uint64_t)((err != 0) & ((u & 1) == 0) & (s - s == 0));
    const uint64_t up = (uint64_t)((err > 0) == (s > 0));
    u += adj & (up ? (uint64_t)1 : ~(uint64_t)0);
    memcpy(&s, &u, sizeof s);
    return s;
}
#endif

/* fmaf: the C library's where it is right (the instruction, inline, where
 * the target has it); else a * b is exact in double (24 + 24 bits), the
 * double sum is made round-to-odd, which then rounds once, right, to
 * float. (Without the instruction either costs 20-50x the FMA builds'
 * time in the portable kernels: "baseline" on x86-64 is slow.)          */
static inline float attn_fmaf(float a, float b, float c)
{
#if ATTN_LIBM_FMA_OK
    return fmaf(a, b, c);
#else
    return (float)attn__add_odd((double)a * (double)b, (double)c);
#endif
}

#if !ATTN_LIBM_FMA_OK
double attn__fma_soft(double a, double b, double c); /* simd/fma.c */
#endif

static inline double attn_fma(double a, double b, double c)
{
#if ATTN_LIBM_FMA_OK
    return fma(a, b, c);
#else
    return attn__fma_soft(a, b, c);
#endif
}

#endif /* ATTNPY_SIMD_FMA_H */
