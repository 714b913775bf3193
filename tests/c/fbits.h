/*
 * tests/c/fbits.h -- a float's or double's bits and back, and "the same
 * result" (the same bits, or both NaN: a NaN's payload is the
 * platform's), for the C programs that compare results bit for bit.
 */
#ifndef ATTNPY_TEST_FBITS_H
#define ATTNPY_TEST_FBITS_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "half.h" /* attn_f32_to_bits, attn_bits_to_f32 */

static inline uint64_t bits64(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}
static inline double from64(uint64_t u)
{
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}
static inline uint32_t bits32(float x) { return attn_f32_to_bits(x); }
static inline float from32(uint32_t u) { return attn_bits_to_f32(u); }
static inline int same64(double x, double y)
{
    return (isnan(x) && isnan(y)) || bits64(x) == bits64(y);
}
static inline int same32(float x, float y)
{
    return (isnan(x) && isnan(y)) || bits32(x) == bits32(y);
}

#endif /* ATTNPY_TEST_FBITS_H */
