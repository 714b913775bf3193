/*
 * tests/c/check.h -- what every C test program of the core shares: the
 * CHECK counter macro and a small deterministic random generator
 * (splitmix64), the instruction sets every program runs its checks on,
 * and the summary line tests/c/test_c_core.py parses. Header-only (static
 * inline); a program may set TEST_RNG_SEED before including it.
 */
#ifndef ATTNPY_TEST_CHECK_H
#define ATTNPY_TEST_CHECK_H

#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "attn.h"
#include "runtime/isa.h"

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

/* The instruction sets the programs try: the core's list (attn.h:
 * attn_isa_info), name i for i < CHECK_NISA                              */
static inline int check_nisa(void)
{
    int n = 0;
    while (attn_isa_info((size_t)n, NULL, NULL, NULL) == 0)
        n++;
    return n;
}
#define CHECK_NISA check_nisa()
static inline const char *check_isa(int i)
{
    const char *name = "?";
    attn_isa_info((size_t)i, &name, NULL, NULL);
    return name;
}

/* 1 when ATTN_CHECK_SMALL is set (and not "0"): the "big" random problems
 * are drawn at the small problems' sizes. tools/valgrind.sh sets it: a big
 * problem takes the small ones' code paths at a size (hundreds of rows and
 * keys) that costs minutes at valgrind's ~50x; the native runs, the
 * sanitizers, qemu and wine keep the big sizes. test_bits then runs its
 * battery at 1 and 3 threads (not 1..4).                                 */
static inline int check_small(void)
{
    const char *s = getenv("ATTN_CHECK_SMALL");
    return s && *s && strcmp(s, "0") != 0;
}

/* The random problems a program tries on set i: count, but an eighth of
 * it on "baseline" of an x86-64 build, whose fused multiply-adds are
 * emulated (no fma instruction in x86-64's base: simd/fma_sse2.h, and
 * the C library's fma for double) and cost 30-100x the other sets' time;
 * its bits are held to every other set's by the same checks, and by
 * tests/c/test_math.c and the digest battery in full.                  */
static inline int check_count(int i, int count)
{
#if defined(__x86_64__) || defined(_M_X64)
    if (strcmp(check_isa(i), "baseline") == 0)
        return (count + 7) / 8;
#else
    (void)i;
#endif
    return count;
}

/* Select instruction set i and announce it; 0 (and say so) when this CPU
 * or build lacks it, or when its kernels are an earlier set's (AArch64's
 * "portable" and "baseline": one table, the base architecture's).       */
static inline int check_use_isa(int i)
{
    if (attn_set_isa(check_isa(i)) != 0) {
        printf("isa %s: not supported by this CPU, not tested\n", check_isa(i));
        return 0;
    }
    for (int j = 0; j < i; j++)
        if (attn__kernels_of((attn_isa_id)j) == attn__kernels_of((attn_isa_id)i)) {
            printf("isa %s: the kernels of %s in this build, tested there\n",
                   check_isa(i), check_isa(j));
            return 0;
        }
    printf("isa %s\n", check_isa(i));
    fflush(stdout);
    return 1;
}

/* The last line of every program (test_c_core.py reads it); the exit
 * status. t0: clock() at the start.                                       */
static inline int check_summary(clock_t t0)
{
    printf("%d passed, %d failed (%.1f s cpu)\n", n_pass, n_fail,
           (double)(clock() - t0) / CLOCKS_PER_SEC);
    return n_fail ? 1 : 0;
}

#endif /* ATTNPY_TEST_CHECK_H */
