/*
 * bench_half.c -- attn_sdpa with float16 / bfloat16 operands next to the
 * float call on the same values (not a test; timings for the benchmark
 * results). The storages are timed in turn, rep after rep, in one
 * process, so a load change hits them alike; prints medians and the
 * ratios float time / 16-bit time (> 1: the 16-bit call is faster).
 *
 * Build (the extension's flags) and run, from the repository root:
 *   cc -O3 -std=c11 -ffp-contract=off -pthread -Icsrc/core \
 *      tests/c/bench_half.c $(ls csrc/core/[a-z]*[a-z]/[a-z]*.c) -lm \
 *      -o /tmp/bench_half
 *   bench_half [isa [threads [reps [fwd|dec|causal]]]]   (fwd, dec:
 *                                  those shapes only; causal: fwd's, then
 *                                  causal (1,12,1024,64), (1,12,4096,64))
 *   bench_half mem [n [threads]]   peak memory of a float16 causal call
 *                                  over n tokens (default 65536)
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#if defined(__linux__)
#include <sys/resource.h>
#endif
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attn.h"
#include "half.h"

/* seconds on clock id: CLOCK_MONOTONIC (wall), or the process's CPU
 * time (with one thread, the call's own cost even when other programs
 * share the cores)                                                     */
static double secs(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
#define now() secs(CLOCK_MONOTONIC)
#define cpu_now() secs(CLOCK_PROCESS_CPUTIME_ID)

/* ascending doubles, for qsort (medians) */
static int by_value(const void *a, const void *b)
{
    const double d = *(const double *)a - *(const double *)b;
    return d > 0 ? 1 : d < 0 ? -1 : 0;
}

/* n values in storage st (0: float) */
static void *filled(size_t n, attn_store st, double f, double amp)
{
    void *buf = malloc(n * (st ? 2 : 4) + 64);
    if (!buf) {
        fprintf(stderr, "bench_half: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++) {
        const float x = (float)(sin((double)i * f) * amp);
        if (st)
            attn_store_f32(st, buf, (ptrdiff_t)i, x);
        else
            ((float *)buf)[i] = x;
    }
    return buf;
}

static void bench(size_t B, size_t H, size_t L, size_t S, size_t E,
                  attn_causal causal, int nt, int reps)
{
    const size_t BH = B * H;
#define NV_ 3
    const attn_store sts[NV_] = {ATTN_ST_NATIVE, ATTN_ST_F16, ATTN_ST_BF16};
    attn_problem p[NV_];
    void *bufs[NV_][4];
    ptrdiff_t *bq = malloc(BH * sizeof *bq), *bk = malloc(BH * sizeof *bk);
    for (size_t b = 0; b < BH; b++) {
        bq[b] = (ptrdiff_t)(b * L * E);
        bk[b] = (ptrdiff_t)(b * S * E);
    }
    for (int s = 0; s < NV_; s++) {
        bufs[s][0] = filled(BH * L * E, sts[s], 0.37, 1.5);
        bufs[s][1] = filled(BH * S * E, sts[s], 0.73, 1.5);
        bufs[s][2] = filled(BH * S * E, sts[s], 0.11, 1.0);
        bufs[s][3] = filled(BH * L * E, sts[s], 0.0, 0.0);
        memset(&p[s], 0, sizeof p[s]);
        p[s].dtype = ATTN_F32;
        p[s].B = BH, p[s].L = L, p[s].S = S, p[s].E = E, p[s].Ev = E;
        p[s].q = (attn_mat){bufs[s][0], bq, (ptrdiff_t)E, 1, sts[s]};
        p[s].k = (attn_mat){bufs[s][1], bk, (ptrdiff_t)E, 1, sts[s]};
        p[s].v = (attn_mat){bufs[s][2], bk, (ptrdiff_t)E, 1, sts[s]};
        p[s].out = (attn_mat){bufs[s][3], bq, (ptrdiff_t)E, 1, sts[s]};
        p[s].scale = 1.0 / sqrt((double)E);
        p[s].causal = causal;
    }
    attn_exec ex = {nt, NULL, NULL};
    double *t[NV_], *c[NV_];
    for (int s = 0; s < NV_; s++) {
        t[s] = malloc((size_t)reps * sizeof(double));
        c[s] = malloc((size_t)reps * sizeof(double));
    }
    for (int s = 0; s < NV_; s++) /* warm up */
        attn_sdpa(&p[s], &ex);
    for (int r = 0; r < reps; r++)
        for (int s = 0; s < NV_; s++) {
            const double t0 = now(), c0 = cpu_now();
            if (attn_sdpa(&p[s], &ex) != ATTN_OK) {
                fprintf(stderr, "bench_half: attn_sdpa failed\n");
                exit(1);
            }
            t[s][r] = now() - t0;
            c[s][r] = cpu_now() - c0;
        }
    double med[NV_], cmed[NV_];
    for (int s = 0; s < NV_; s++) {
        qsort(t[s], (size_t)reps, sizeof(double), by_value);
        qsort(c[s], (size_t)reps, sizeof(double), by_value);
        med[s] = t[s][reps / 2];
        cmed[s] = c[s][reps / 2];
    }
    printf("(B,H,L,E)=(%zu,%zu,%zu,%zu) S=%zu causal=%d threads=%d: "
           "f32 %.3f ms  f16 %.3f ms  bf16 %.3f ms\n    f32/f16 %.2fx  "
           "f32/bf16 %.2fx\n", B, H, L, E, S, (int)causal, nt, med[0] * 1e3,
           med[1] * 1e3, med[2] * 1e3, med[0] / med[1], med[0] / med[2]);
    printf("    cpu time: f32 %.3f ms  f16 %.3f ms  bf16 %.3f ms\n    cpu "
           "f32/f16 %.2fx  f32/bf16 %.2fx\n", cmed[0] * 1e3, cmed[1] * 1e3,
           cmed[2] * 1e3, cmed[0] / cmed[1], cmed[0] / cmed[2]);
    fflush(stdout);
    for (int s = 0; s < NV_; s++) {
        free(t[s]);
        free(c[s]);
        for (int i = 0; i < 4; i++)
            free(bufs[s][i]);
    }
    free(bq);
    free(bk);
}

/* peak resident memory of the process so far, bytes (Linux: KiB units;
 * elsewhere not measured: -1)                                           */
static double peak_bytes(void)
{
#if defined(__linux__)
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss * 1024.0;
#else
    return -1.0;
#endif
}

/* "no hidden copy": one float16 causal call over L = S = n tokens; the
 * peak memory it adds to the touched inputs and output                  */
static void memory_check(size_t n, size_t E, int nt)
{
    void *q = filled(n * E, ATTN_ST_F16, 0.37, 1.5);
    void *k = filled(n * E, ATTN_ST_F16, 0.73, 1.5);
    void *v = filled(n * E, ATTN_ST_F16, 0.11, 1.0);
    void *o = filled(n * E, ATTN_ST_F16, 0.0, 0.0);
    attn_problem p;
    memset(&p, 0, sizeof p);
    p.dtype = ATTN_F32;
    p.B = 1, p.L = n, p.S = n, p.E = E, p.Ev = E;
    p.q = (attn_mat){q, NULL, (ptrdiff_t)E, 1, ATTN_ST_F16};
    p.k = (attn_mat){k, NULL, (ptrdiff_t)E, 1, ATTN_ST_F16};
    p.v = (attn_mat){v, NULL, (ptrdiff_t)E, 1, ATTN_ST_F16};
    p.out = (attn_mat){o, NULL, (ptrdiff_t)E, 1, ATTN_ST_F16};
    p.scale = 1.0 / sqrt((double)E);
    p.causal = ATTN_CAUSAL_TOP_LEFT;
    attn_exec ex = {nt, NULL, NULL};
    const double before = peak_bytes(), t0 = now();
    const attn_status st = attn_sdpa(&p, &ex);
    const double t = now() - t0, added = peak_bytes() - before;
    printf("memory: float16 causal L=S=%zu E=%zu threads=%d: status %d, "
           "%.1f s, peak memory added by the call %.2f MB, its output "
           "%.2f MB (%s)\n", n, E, nt, (int)st, t, added / 1e6,
           (double)(n * E * 2) / 1e6,
           added <= (double)(n * E * 2) ? "no more than the output"
                                         : "MORE than the output");
    free(q), free(k), free(v), free(o);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "mem") == 0) {
        memory_check(argc > 2 ? (size_t)atol(argv[2]) : 65536, 64,
                     argc > 3 ? atoi(argv[3]) : 2);
        return 0;
    }
    const char *isa = argc > 1 ? argv[1] : "auto";
    const int nt = argc > 2 ? atoi(argv[2]) : 1;
    const int reps = argc > 3 ? atoi(argv[3]) : 21;
    if (attn_set_isa(isa) != 0) {
        fprintf(stderr, "bench_half: isa %s not available\n", isa);
        return 1;
    }
    const char *only = argc > 4 ? argv[4] : "";
    printf("isa %s\n", attn_isa_name());
    const int causal = strcmp(only, "causal") == 0;
    if (strcmp(only, "fwd") != 0 && !causal) {
        bench(1, 32, 1, 4096, 128, ATTN_CAUSAL_NONE, nt, reps);
        bench(1, 8, 1, 32768, 128, ATTN_CAUSAL_NONE, nt, reps);
    }
    if (strcmp(only, "dec") != 0)
        bench(1, 12, 1024, 1024, 64, ATTN_CAUSAL_NONE, nt,
              *only ? reps : reps / 3 + 1);
    if (causal) {
        bench(1, 12, 1024, 1024, 64, ATTN_CAUSAL_TOP_LEFT, nt, reps);
        bench(1, 12, 4096, 4096, 64, ATTN_CAUSAL_TOP_LEFT, nt, reps / 4 + 1);
    }
    return 0;
}
