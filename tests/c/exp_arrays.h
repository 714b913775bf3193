/*
 * tests/c/exp_arrays.h -- each instruction set's vector exp over an array,
 * for test_core's accuracy sweep. Built into the C test programs only
 * (exp_arrays.c instantiates the vec_<isa>.h headers the kernels use), so
 * the extension carries no test hook.
 */
#ifndef ATTNPY_TEST_EXP_ARRAYS_H
#define ATTNPY_TEST_EXP_ARRAYS_H

#include <stddef.h>

#include "isa/kernels.h"

typedef void (*exp_array_f32_fn)(float *y, const float *x, size_t n);
typedef void (*exp_array_f64_fn)(double *y, const double *x, size_t n);

/* y[i] = exp(x[i]) for x <= 0 with the exp the kernel table k
 * (isa/kernels.h) instantiates; 0 when this build has none for k (never
 * for a table it has)                                                   */
int exp_arrays_for(const attn_kernels *k, exp_array_f32_fn *f32,
                   exp_array_f64_fn *f64);

#endif
