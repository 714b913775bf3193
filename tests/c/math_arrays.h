/*
 * tests/c/math_arrays.h -- the functions of simd/math.h over arrays, once
 * per instantiation this build has (scalar, portable narrow and wide,
 * AVX2, AVX-512, NEON, and the scalar and portable ones built with the
 * exact software fma of platforms whose C library fma is not trusted),
 * for tests/c/test_math.c's bit-identity checks. Test code only: the
 * extension carries none of it.
 */
#ifndef ATTNPY_TEST_MATH_ARRAYS_H
#define ATTNPY_TEST_MATH_ARRAYS_H

#include <stddef.h>

/* the one-argument functions, float and double                          */
enum { MF_EXP, MF_EXP_NEG, MF_TANH, MF_SIGMOID, MF_PHI, MF_NPDF, MF_LOG, MF_N };
extern const char *const math_fn_names[MF_N];

typedef void (*mf32_fn)(float *y, const float *x, size_t n);
typedef void (*mf64_fn)(double *y, const double *x, size_t n);

typedef struct {
    const char *name;
    int (*available)(void); /* this CPU can run it */
    int soft;               /* built with the software fma (slow)       */
    mf32_fn f32[MF_N];
    mf64_fn f64[MF_N];
    void (*pow64)(double *r, const double *x, const double *y, size_t n);
    void (*sincos64)(double *s, double *c, const double *x, size_t n);
} math_set;

/* x86: vzeroupper, after a vector set's call. Without it the 256- and
 * 512-bit registers' upper halves stay dirty after the portable wide
 * build (gcc -O1 leaves them so) and every later non-VEX SSE instruction
 * (the scalar and portable narrow builds) was measured ~60x slower on a
 * Sapphire Rapids VM. Elsewhere nothing.                              */
void math_clean_upper(void);

/* the scalar instantiation (the reference of the bit-identity checks) */
extern const math_set math_set_scalar;
/* every other instantiation this build has: *n of them                 */
const math_set *const *math_sets(int *n);

#endif /* ATTNPY_TEST_MATH_ARRAYS_H */
