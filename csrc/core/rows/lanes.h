/*
 * rows/lanes.h -- the fixed-order row sums of the norm kernels
 * (layer/norm_body.h): 8 interleaved partial sums in double, added
 * in a fixed tree, so that a row's sum has the same bits in the forward
 * and the backward pass, whatever its strides.
 */
#ifndef ATTNPY_ROWS_LANES_H
#define ATTNPY_ROWS_LANES_H

#include <stddef.h>

/* BODY for J = 0 .. n-1 with lane L = J mod 8 (the caller names both): whole blocks of 8 with a
 * constant inner trip count, so that the compiler unrolls them and keeps
 * the 8 lane sums in registers (a[j & 7] kept them in memory: a load, an
 * add and a store per element), then the tail. The same sums in the same
 * order as a plain loop over j.                                           */
#define LN_LANES(n, J, L, ...)                                                 \
    do {                                                                       \
        const size_t nb_ = (n) & ~(size_t)7;                                   \
        size_t J, L;                                                           \
        for (size_t j0_ = 0; j0_ < nb_; j0_ += 8)                              \
            for (L = 0; L < 8; L++) {                                          \
                J = j0_ + L;                                                   \
                __VA_ARGS__                                                    \
            }                                                                  \
        for (J = nb_, L = 0; J < (n); J++, L++) {                              \
            __VA_ARGS__                                                        \
        }                                                                      \
    } while (0)

/* the 8 partial sums, added in a fixed order */
static inline double attn__lanes_total(const double *a)
{
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

#endif /* ATTNPY_ROWS_LANES_H */
