/*
 * tests/c/check.h -- what every C test program of the core shares: the
 * CHECK counter macro and a small deterministic random generator
 * (splitmix64). Header-only (static inline); a program may set
 * TEST_RNG_SEED before including it.
 */
#ifndef ATTNPY_TEST_CHECK_H
#define ATTNPY_TEST_CHECK_H

#include <stdint.h>
#include <stdio.h>

#ifndef TEST_RNG_SEED
#define TEST_RNG_SEED 0x9E3779B97F4A7C15ULL
#endif

static int n_pass, n_fail;

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (cond) {                                                            \
            n_pass++;                                                          \
        } else {                                                               \
            n_fail++;                                                          \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                        \
            printf(__VA_ARGS__);                                               \
            printf("\n");                                                      \
            fflush(stdout);                                                    \
        }                                                                      \
    } while (0)

static uint64_t rng_state = TEST_RNG_SEED;

static inline uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}
static inline double urand(void) { return (double)(rnd() >> 11) * 0x1.0p-53; }
static inline size_t irand(size_t n) { return n ? (size_t)(rnd() % n) : 0; }

#endif /* ATTNPY_TEST_CHECK_H */
