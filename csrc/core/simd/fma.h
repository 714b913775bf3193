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

/* the C library's fma is correctly rounded (or the target has the
 * instruction, which the compiler then emits inline); ATTN_FORCE_SOFT_FMA
 * builds the exact fallbacks instead, so the C tests try them anywhere  */
#if defined(ATTN_FORCE_SOFT_FMA)
#define ATTN_LIBM_FMA_OK 0
#elif defined(__FMA__) || defined(__aarch64__) || defined(_M_ARM64)            \
    || defined(__GLIBC__) || defined(__APPLE__)
#define ATTN_LIBM_FMA_OK 1
#else
#define ATTN_LIBM_FMA_OK 0
#endif

/* round-to-odd helpers: s = RN(x + y) made round-to-odd: when the sum was
 * inexact and s's last bit is even, s moves one ulp toward the exact sum
 * (Boldo and Melquiond: a round-to-odd result with enough spare bits
 * rounds once, right, to the narrower format)                            */
static inline double attn__add_odd(double x, double y)
{
    double s = x + y;
    if (!isfinite(s))
        return s;
    const double t = s - x, err = (x - (s - t)) + (y - t);
    uint64_t u;
    memcpy(&u, &s, sizeof u);
    if (err != 0 && (u & 1) == 0) {
        u += (err > 0) == (s > 0) ? 1 : (uint64_t)-1;
        memcpy(&s, &u, sizeof s);
    }
    return s;
}

/* fmaf: a * b is exact in double (24 + 24 bits), the double sum is made
 * round-to-odd, which then rounds once, right, to float                  */
static inline float attn__fmaf_soft(float a, float b, float c)
{
    return (float)attn__add_odd((double)a * (double)b, (double)c);
}

static inline float attn_fmaf(float a, float b, float c)
{
#if ATTN_LIBM_FMA_OK
    return fmaf(a, b, c);
#else
    return attn__fmaf_soft(a, b, c);
#endif
}

/* exact integer arithmetic (simd/fma.c); always built, so that the C
 * tests compare it with the hardware's fma on every machine             */
double attn__fma_soft(double a, double b, double c);

static inline double attn_fma(double a, double b, double c)
{
#if ATTN_LIBM_FMA_OK
    return fma(a, b, c);
#else
    return attn__fma_soft(a, b, c);
#endif
}

#endif /* ATTNPY_SIMD_FMA_H */
