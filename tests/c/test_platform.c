/*
 * test_platform.c -- C tests of the core's portability layer (runtime/),
 * without Python:
 *
 *   attn__x86_features (cpuid + XCR0, the code MSVC builds use) agrees
 *     with the compiler's __builtin_cpu_supports (gcc / clang, x86 only),
 *     and attn_set_isa accepts exactly the instruction sets it reports
 *   the pool runs every worker in the caller's floating-point environment:
 *     a task sees the caller's rounding mode on every thread, and
 *     attn_sdpa gives the same bits with 1 and 3 threads on every
 *     instruction set, rounding upward and then to nearest (different
 *     bits between the modes: the mode did reach the kernels)
 *   the portable kernel's variants ("portable": on x86 compiled for AVX2
 *     with 8 lanes; "baseline": for SSE2 with 4) give the same bits on the
 *     tiled path (a multiply then an add per lane, in the same order)
 *   attn__now_ns is monotonic and advances; attn_available_cpus >= 1
 *
 * It reuses test_core.c's operands by including it (its main renamed).
 * Build (tests/c/test_c_core.py does this):
 *   gcc -std=c11 -Wall -Wextra -Werror -O1 -g -pthread -Icsrc/core \
 *       tests/c/test_platform.c $(find csrc/core -name "*.c") -lm \
 *       -o test_platform
 * Prints one line per failure and "N passed, M failed"; exit status 1 on
 * any failure.
 */
#undef main
#define main test_core_main
#include "test_core.c"
#undef main

#include <fenv.h>
#include <stdatomic.h>

#include "runtime/platform.h"
#include "runtime/pool.h"

/* ------------------------------------------------------------------------ */
/* x86 feature detection                                                    */
/* ------------------------------------------------------------------------ */
static void test_features(void)
{
    const int f = attn__x86_features();
#if ATTN_ARCH_X86 && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    const int avx2 = __builtin_cpu_supports("avx2")
                     && __builtin_cpu_supports("fma");
    const int avx512 = avx2 && __builtin_cpu_supports("avx512f");
    printf("x86 features: avx2+fma %d, avx512f %d\n",
           !!(f & ATTN_X86_AVX2_FMA), !!(f & ATTN_X86_AVX512F));
    CHECK(!!(f & ATTN_X86_AVX2_FMA) == avx2,
          "cpuid says avx2+fma %d, the compiler %d",
          !!(f & ATTN_X86_AVX2_FMA), avx2);
    CHECK(!!(f & ATTN_X86_AVX512F) == avx512,
          "cpuid says avx512f %d, the compiler %d",
          !!(f & ATTN_X86_AVX512F), avx512);
#elif !ATTN_ARCH_X86
    CHECK(f == 0, "x86 features %d on another architecture", f);
#endif
    CHECK((attn_set_isa("avx2") == 0) == !!(f & ATTN_X86_AVX2_FMA),
          "set_isa(avx2) disagrees with the features");
    CHECK((attn_set_isa("avx512") == 0) == !!(f & ATTN_X86_AVX512F),
          "set_isa(avx512) disagrees with the features");
    CHECK((attn_set_isa("amx") == 0)
              == (ATTN_HAVE_AMX && (f & ATTN_X86_AMX_BF16) != 0),
          "set_isa(amx) disagrees with the features");
#if ATTN_HAVE_AMX
    CHECK(!(f & ATTN_X86_AMX_BF16) || (f & ATTN_X86_AVX512_BF16),
          "AMX-BF16 without AVX512-BF16");
#endif
    CHECK((attn_set_isa("neon") == 0) == ATTN_ARCH_NEON,
          "set_isa(neon) on %s", ATTN_ARCH_NEON ? "AArch64" : "not AArch64");
    CHECK(attn_set_isa("auto") == 0, "set_isa(auto)");
    /* "amx" is opt-in: auto never picks it */
    const char *best = (f & ATTN_X86_AVX512F)   ? "avx512"
                       : (f & ATTN_X86_AVX2_FMA) ? "avx2"
                       : ATTN_ARCH_NEON ? "neon" : "portable";
    CHECK(strcmp(attn_isa_name(), best) == 0, "auto chose %s, not %s",
          attn_isa_name(), best);
}

/* ------------------------------------------------------------------------ */
/* the caller's floating-point environment on every thread                 */
/* ------------------------------------------------------------------------ */
typedef struct {
    atomic_int ran[4];   /* task t ran                                 */
    atomic_int mode[4];  /* fegetround() seen by task t                */
    atomic_int workers;  /* tasks t > 0 that ran                      */
} fe_probe;

static void fe_task(void *arg, int t)
{
    fe_probe *pr = arg;
    if (t > 3)
        return;
    atomic_store(&pr->mode[t], fegetround());
    atomic_store(&pr->ran[t], 1);
    if (t > 0) {
        atomic_fetch_add(&pr->workers, 1);
        return;
    }
    /* the caller waits (up to ~2 s) for a worker to take part */
    long long t0 = attn__now_ns();
    while (atomic_load(&pr->workers) == 0
           && attn__now_ns() - t0 < 2000000000LL)
        ;
}

static void test_fenv_pool(void)
{
    int any_worker = 0, wrong = 0;
    for (int rep = 0; rep < 3; rep++) {
        const int mode = rep % 2 ? FE_DOWNWARD : FE_UPWARD;
        fe_probe pr;
        memset(&pr, 0, sizeof pr);
        fesetround(mode);
        attn_pool_run(fe_task, &pr, 4);
        fesetround(FE_TONEAREST);
        for (int t = 0; t < 4; t++)
            if (atomic_load(&pr.ran[t]) && atomic_load(&pr.mode[t]) != mode)
                wrong = 1;
        any_worker |= atomic_load(&pr.workers) > 0;
    }
    CHECK(any_worker, "no pool worker ran a task");
    CHECK(!wrong, "a pool worker ran in another rounding mode");
    /* and the workers go back to the caller's environment next time */
    fe_probe pr;
    memset(&pr, 0, sizeof pr);
    attn_pool_run(fe_task, &pr, 4);
    int ok = 1;
    for (int t = 0; t < 4; t++)
        if (atomic_load(&pr.ran[t]) && atomic_load(&pr.mode[t]) != FE_TONEAREST)
            ok = 0;
    CHECK(ok, "a pool worker kept an old rounding mode");
}

static void test_fenv_sdpa(const char *isa)
{
    /* prefill (L = 200: the tile path) and decode (L = 3) shapes */
    static const size_t Ls[2] = {200, 3};
    for (int dt = 0; dt < 2; dt++)
        for (int s = 0; s < 2; s++) {
            prob t;
            prob_simple(&t, dt ? ATTN_F64 : ATTN_F32, 2, Ls[s], 300, 32, 32);
            prob_outputs(&t, 0, 0);
            prob_target(&t, 0);
            /* (threads, mode): new threads may inherit the creator's mode
             * (Linux): both modes on 3 threads, after each other */
            unsigned char *res[4];
            static const int nts[4] = {1, 1, 3, 3};
            static const int modes[4] = {FE_TONEAREST, FE_UPWARD, FE_UPWARD,
                                         FE_TONEAREST};
            int ok = 1;
            for (int r = 0; r < 4; r++) {
                attn_exec ex = {nts[r], NULL, NULL};
                op_fill_sentinel(&t.out, -12345.0);
                fesetround(modes[r]);
                ok &= attn_sdpa(&t.p, &ex) == ATTN_OK;
                fesetround(FE_TONEAREST);
                res[r] = dup_buf(&t.out);
            }
            const size_t nb = t.out.nbytes;
            CHECK(ok, "[%s] status", isa);
            CHECK(memcmp(res[0], res[1], nb) != 0,
                  "[%s] %s L=%zu: rounding upward changed nothing (the mode "
                  "did not reach the kernel?)", isa, dt ? "f64" : "f32",
                  Ls[s]);
            CHECK(memcmp(res[1], res[2], nb) == 0,
                  "[%s] %s L=%zu: rounding upward, 1 and 3 threads differ",
                  isa, dt ? "f64" : "f32", Ls[s]);
            CHECK(memcmp(res[0], res[3], nb) == 0,
                  "[%s] %s L=%zu: to nearest, 1 and 3 threads differ", isa,
                  dt ? "f64" : "f32", Ls[s]);
            for (int r = 0; r < 4; r++)
                free(res[r]);
            prob_free(&t);
        }
}

/* ------------------------------------------------------------------------ */
/* portable == baseline, bitwise (the tiled path: L > ATTN_QK_FEW)         */
/* ------------------------------------------------------------------------ */
static void test_portable_variants(void)
{
    /* under valgrind (check_small) fewer rows and keys: still several
     * query and key blocks, the same row widths ("baseline" emulates its
     * fma: these six problems took ~45 s of valgrind's time at full size) */
    const int small = check_small();
    for (int it = 0; it < 6; it++) {
        prob t;
        /* the last two: rows wide enough to shrink the key block */
        const size_t E = it < 4 ? 8 + 9 * (size_t)it : 150 * (size_t)it;
        const size_t L = small ? 9 + 7 * (size_t)it : 60 + 37 * (size_t)it;
        const size_t S = small ? 30 + 23 * (size_t)it : 50 + 61 * (size_t)it;
        prob_simple(&t, it % 2 ? ATTN_F64 : ATTN_F32, 2, L, S, E,
                    5 + 13 * (size_t)it);
        t.p.causal = (attn_causal)(it % 3);
        prob_outputs(&t, 1, 0);
        prob_target(&t, 0);
        unsigned char *o[2], *w[2];
        static const char *names[2] = {"portable", "baseline"};
        int ok = 1;
        for (int v = 0; v < 2; v++) {
            ok &= attn_set_isa(names[v]) == 0;
            attn_exec ex = {2, NULL, NULL};
            op_fill_sentinel(&t.out, -12345.0);
            op_fill_sentinel(&t.w, -12345.0);
            ok &= attn_sdpa(&t.p, &ex) == ATTN_OK;
            o[v] = dup_buf(&t.out);
            w[v] = dup_buf(&t.w);
        }
        char d[400];
        describe(&t, d, sizeof d);
        CHECK(ok && memcmp(o[0], o[1], t.out.nbytes) == 0
                  && memcmp(w[0], w[1], t.w.nbytes) == 0,
              "portable and baseline differ: %s", d);
        for (int v = 0; v < 2; v++) {
            free(o[v]);
            free(w[v]);
        }
        prob_free(&t);
    }
    CHECK(attn_set_isa("auto") == 0, "set_isa(auto)");
}

/* ------------------------------------------------------------------------ */
int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    clock_t t0 = clock();
    attn__min_flops_per_thread = 0; /* use threads even on tiny problems */
    long long a = attn__now_ns(), b = a;
    for (int i = 0; i < 100000000 && b == a; i++)
        b = attn__now_ns();
    CHECK(b > a, "attn__now_ns does not advance");
    CHECK(attn_available_cpus() >= 1, "available cpus");
    test_features();
    test_fenv_pool();
    test_portable_variants();
    for (int i = 0; i < CHECK_NISA; i++) {
        if (attn_set_isa(check_isa(i)) != 0)
            continue;
        test_fenv_sdpa(check_isa(i));
    }
    CHECK(attn_set_isa("auto") == 0, "set_isa(auto)");
    return check_summary(t0);
}
