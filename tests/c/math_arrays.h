/*
 * tests/c/math_arrays.h -- the functions of simd/math.h over arrays, once
 * per instantiation this build has, for tests/c/test_math.c's
 * bit-identity checks: the scalar one and the scalar and portable ones
 * built with the exact software fma of platforms whose C library fma is
 * not trusted (test code: math_arrays.c, math_soft.c), and every
 * instruction set of runtime/isa.h's list, through its table's math rows
 * (isa/kernels.h; the C tests build them with ATTN_MATH_ROWS). A new set
 * needs nothing here.
 */
#ifndef ATTNPY_TEST_MATH_ARRAYS_H
#define ATTNPY_TEST_MATH_ARRAYS_H

#include <stddef.h>

#include "isa/kernels.h"

/* the one-argument functions, float and double (ATTN_MF_*)             */
#define MF_N ATTN_MF_N
extern const char *const math_fn_names[MF_N];

typedef struct {
    const char *name;
    int available; /* this CPU can run it                                */
    int soft;      /* built with the software fma (slow)                 */
    int slow;      /* scalar C per lane (the scalar, portable, baseline
                    * builds: a C library fma call per lane, or per-lane
                    * loops the test build does not vectorize)            */
    /* [ATTN_F32], [ATTN_F64]; NULL: the build has no rows (test_math
     * fails on it)                                                       */
    const attn_math_rows *r[2];
} math_set;

/* x86: vzeroupper, after a vector set's call. Without it the 256- and
 * 512-bit registers' upper halves stay dirty after the portable wide
 * build (gcc -O1 leaves them so) and every later non-VEX SSE instruction
 * (the scalar and portable narrow builds) was measured ~60x slower on a
 * Sapphire Rapids VM. Elsewhere nothing.                              */
void math_clean_upper(void);

/* the scalar instantiation (the reference of the bit-identity checks) */
extern const math_set math_set_scalar;
/* every other instantiation this build has, *n of them: the sets of
 * runtime/isa.h's list with a table of their own (best first; one entry
 * a table: "portable" is "baseline" where it runs the base build), then
 * the soft-fma ones. The first call fills the list: make it before
 * starting threads.                                                    */
const math_set *const *math_sets(int *n);

#endif /* ATTNPY_TEST_MATH_ARRAYS_H */
