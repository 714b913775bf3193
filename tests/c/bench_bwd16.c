/*
 * bench_bwd16.c -- the backward pass with 16-bit operands against float32,
 * side by side (not a test: a timer).
 *
 *   cc -std=c11 -O3 -pthread -Icsrc/core tests/c/bench_bwd16.c \
 *       csrc/core/(every subdirectory)/(every .c) -lm -o /tmp/bench_bwd16
 *   /tmp/bench_bwd16 ISA [threads [reps [cases]]]     (cases: letters a-e,
 *   see main; e: with a float bias and dbias written)
 *
 * Per shape (B, L = S, E = Ev, causal; B < 4 runs the split passes A
 * and B, larger B one fused item per b) one float32 problem and the
 * same inputs in float16 and bfloat16 (q, k, v, out, dout read, dq, dk,
 * dv written in 16 bits; lse float). Each repetition runs the three
 * back to back, in a rotating order; prints each one's median time and
 * the medians of the per-repetition ratios float32 time / 16-bit time
 * (> 1: the 16-bit call is faster), for wall-clock and CPU time.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attn.h"
#include "half.h"

/* wall clock, or this process's CPU time (every thread): on a shared
 * machine the wall times stretch with the load, the CPU times much less */
static double now(clockid_t clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *x, int n)
{
    qsort(x, (size_t)n, sizeof *x, cmpd);
    return x[n / 2];
}

/* n floats of a smooth pattern, exactly representable in bfloat16 (hence
 * in float16 at these magnitudes too: 8 significant bits)                */
static float *pattern(size_t n, double f, double amp)
{
    float *x = malloc(n * sizeof *x + 4);
    for (size_t i = 0; x && i < n; i++)
        x[i] = attn_bf16_to_f32(
            attn_f32_to_bf16((float)(amp * sin((double)i * f + 0.3))));
    return x;
}

static uint16_t *to16(const float *x, size_t n, attn_store st)
{
    uint16_t *h = malloc(n * sizeof *h + 2);
    for (size_t i = 0; h && i < n; i++)
        h[i] = st == ATTN_ST_F16 ? attn_f32_to_f16(x[i])
                                 : attn_f32_to_bf16(x[i]);
    return h;
}

static attn_mat mat(void *d, const ptrdiff_t *boff, size_t s0, attn_store st)
{
    return (attn_mat){d, boff, (ptrdiff_t)s0, 1, st};
}

static void bench(size_t B, size_t L, size_t E, attn_causal causal, int nt,
                  int reps, int bias)
{
    const size_t n = B * L * E;
    float *q = pattern(n, 0.37, 1.5), *k = pattern(n, 0.73, 1.5),
          *v = pattern(n, 0.11, 1.0), *dout = pattern(n, 0.19, 1.0);
    float *out = malloc(n * sizeof(float)), *lse = malloc(B * L * 4 + 4);
    ptrdiff_t *bo = malloc(B * sizeof(ptrdiff_t)),
              *bl = malloc(B * sizeof(ptrdiff_t));
    for (size_t b = 0; b < B; b++) {
        bo[b] = (ptrdiff_t)(b * L * E);
        bl[b] = (ptrdiff_t)(b * L);
    }
    attn_bwd_problem bp;
    memset(&bp, 0, sizeof bp);
    attn_problem *p = &bp.f;
    p->dtype = ATTN_F32;
    p->B = B;
    p->L = p->S = L;
    p->E = p->Ev = E;
    p->scale = 1.0 / sqrt((double)E);
    p->causal = causal;
    p->q = mat(q, bo, E, 0);
    p->k = mat(k, bo, E, 0);
    p->v = mat(v, bo, E, 0);
    p->out = mat(out, bo, E, 0);
    p->lse = (attn_mat){lse, bl, 1, 0, 0};
    /* bias: one float (L, S) row pattern for every b; dbias per b      */
    float *bs = bias ? pattern(L * L, 0.05, 0.5) : NULL;
    if (bias)
        p->bias = mat(bs, NULL, L, 0);
    attn_exec ex = {nt, NULL, NULL};
    if (attn_sdpa(p, &ex) != ATTN_OK) {
        printf("forward failed\n");
        exit(1);
    }
    /* out rounded to 16 bits too: every call reads the same numbers */
    for (size_t i = 0; i < n; i++)
        out[i] = attn_bf16_to_f32(attn_f32_to_bf16(out[i]));
    const attn_store sts[3] = {ATTN_ST_NATIVE, ATTN_ST_F16, ATTN_ST_BF16};
    void *in[3][5], *g[3][4];
    ptrdiff_t *bb = malloc(B * sizeof(ptrdiff_t));
    for (size_t b = 0; b < B; b++)
        bb[b] = (ptrdiff_t)(b * L * L);
    float *src[5] = {q, k, v, out, dout};
    for (int s = 0; s < 3; s++) {
        for (int i = 0; i < 5; i++)
            in[s][i] = s ? (void *)to16(src[i], n, sts[s]) : (void *)src[i];
        for (int i = 0; i < 3; i++)
            g[s][i] = malloc(n * (s ? 2 : 4) + 4);
        g[s][3] = bias ? malloc(B * L * L * (s ? 2 : 4) + 4) : NULL;
    }
    double t[3][64], ratio[2][64], cpu[3][64], cratio[2][64];
    if (reps > 64)
        reps = 64;
    for (int r = -1; r < reps; r++) { /* r = -1: warm-up */
        double tr[3], cr[3];
        for (int o = 0; o < 3; o++) {
            const int s = (o + (r < 0 ? 0 : r)) % 3;
            p->q = mat(in[s][0], bo, E, sts[s]);
            p->k = mat(in[s][1], bo, E, sts[s]);
            p->v = mat(in[s][2], bo, E, sts[s]);
            p->out = mat(in[s][3], bo, E, sts[s]);
            bp.dout = mat(in[s][4], bo, E, sts[s]);
            bp.dq = mat(g[s][0], bo, E, sts[s]);
            bp.dk = mat(g[s][1], bo, E, sts[s]);
            bp.dv = mat(g[s][2], bo, E, sts[s]);
            bp.dbias = mat(g[s][3], bb, L, sts[s]);
            const double t0 = now(CLOCK_MONOTONIC),
                         c0 = now(CLOCK_PROCESS_CPUTIME_ID);
            const attn_status st = attn_sdpa_backward(&bp, &ex);
            tr[s] = now(CLOCK_MONOTONIC) - t0;
            cr[s] = now(CLOCK_PROCESS_CPUTIME_ID) - c0;
            if (st != ATTN_OK) {
                printf("backward failed: %d\n", (int)st);
                exit(1);
            }
        }
        if (r < 0)
            continue;
        for (int s = 0; s < 3; s++) {
            t[s][r] = tr[s];
            cpu[s][r] = cr[s];
        }
        for (int s = 0; s < 2; s++) {
            ratio[s][r] = tr[0] / tr[s + 1];
            cratio[s][r] = cr[0] / cr[s + 1];
        }
    }
    printf("%s (%zu,%zu,%zu) %s%s t=%d reps=%d\n"
           "  wall: median float32 %8.2f ms, float16 %8.2f ms, bfloat16 "
           "%8.2f ms; float32/16-bit (median of per-rep ratios): float16 "
           "%.3f, bfloat16 %.3f\n"
           "  cpu:  median float32 %8.2f ms, float16 %8.2f ms, bfloat16 "
           "%8.2f ms; float32/16-bit (median of per-rep ratios): float16 "
           "%.3f, bfloat16 %.3f\n",
           attn_isa_name(), B, L, E, causal ? "causal" : "full  ",
           bias ? "+dbias" : "", nt, reps, median(t[0], reps) * 1e3,
           median(t[1], reps) * 1e3, median(t[2], reps) * 1e3,
           median(ratio[0], reps), median(ratio[1], reps),
           median(cpu[0], reps) * 1e3, median(cpu[1], reps) * 1e3,
           median(cpu[2], reps) * 1e3, median(cratio[0], reps),
           median(cratio[1], reps));
    fflush(stdout);
    for (int s = 0; s < 3; s++) {
        for (int i = 0; s && i < 5; i++)
            free(in[s][i]);
        for (int i = 0; i < 4; i++)
            free(g[s][i]);
    }
    free(bs);
    free(bb);
    for (int i = 0; i < 5; i++)
        free(src[i]);
    free(lse);
    free(bo);
    free(bl);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        printf("usage: bench_bwd16 ISA [threads [reps [cases a-e]]]\n");
        return 0;
    }
    if (attn_set_isa(argv[1]) != 0) {
        fprintf(stderr, "isa %s not supported\n", argv[1]);
        return 1;
    }
    const int nt = argc > 2 ? atoi(argv[2]) : 2;
    const int reps = argc > 3 ? atoi(argv[3]) : 7;
    const char *only = argc > 4 ? argv[4] : "abcde";
    if (strchr(only, 'a'))
        bench(12, 1024, 64, ATTN_CAUSAL_NONE, nt, reps, 0);
    if (strchr(only, 'b'))
        bench(12, 1024, 64, ATTN_CAUSAL_TOP_LEFT, nt, reps, 0);
    if (strchr(only, 'c'))
        bench(8, 2048, 64, ATTN_CAUSAL_TOP_LEFT, nt, reps, 0);
    if (strchr(only, 'd')) /* B < 4: the split passes */
        bench(2, 2048, 64, ATTN_CAUSAL_TOP_LEFT, nt, reps, 0);
    if (strchr(only, 'e'))
        bench(12, 1024, 64, ATTN_CAUSAL_TOP_LEFT, nt, reps, 1);
    return 0;
}
