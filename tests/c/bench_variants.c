/*
 * bench_variants.c -- what the attention variants cost in the tiled
 * kernels (not a test; prints figures).
 *
 *   cc -O2 -pthread -Icsrc/core tests/c/bench_variants.c \
 *       $(find csrc/core -name "*.c") -lm -o bench_variants
 *   ./bench_variants [isa [threads [reps]]]
 *
 * Each line times two calls interleaved (A B A B ..., reps pairs, after
 * one warm-up each) and prints their medians per query row, wall time
 * and process CPU time, and the ratios of those medians (A / B):
 *   window: a sliding window of 256 keys (causal, wleft = 256) over
 *     L = S = 8192 against a causal call of L = S = 512: the issue wants
 *     at most 2x per query (key blocks outside the window never touched);
 *     forward, then backward (attn_sdpa_backward)
 *   softcap / ALiBi / both against plain causal attention, same shape
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attn.h"

static double now(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* one float32 problem with its buffers (contiguous, B heads), and what
 * its backward needs (lse, dout, gradients)                             */
typedef struct {
    attn_bwd_problem bp;
    float *buf[9];
    ptrdiff_t *boff[2];
    float slopes[64];
} bprob;

static float *fill(size_t n, double f)
{
    float *x = malloc(n * sizeof *x);
    if (!x) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(sin((double)i * f) * 1.5);
    return x;
}

static void make(bprob *x, size_t B, size_t L, size_t S, size_t E)
{
    memset(x, 0, sizeof *x);
    attn_problem *p = &x->bp.f;
    p->dtype = ATTN_F32;
    p->B = B;
    p->L = L;
    p->S = S;
    p->E = p->Ev = E;
    const size_t nq = B * L * E, nk = B * S * E;
    const double fs[9] = {0.37, 0.73, 0.11, 0.5, 0.29, 0.3, 0.31, 0.17, 0.23};
    const size_t ns[9] = {nq, nk, nk, nq, B * L, nq, nq, nk, nk};
    for (int i = 0; i < 9; i++)
        x->buf[i] = fill(ns[i], fs[i]);
    x->boff[0] = malloc(B * sizeof(ptrdiff_t));
    x->boff[1] = malloc(B * sizeof(ptrdiff_t));
    for (size_t b = 0; b < B; b++) {
        x->boff[0][b] = (ptrdiff_t)(b * L * E);
        x->boff[1][b] = (ptrdiff_t)(b * S * E);
    }
    const ptrdiff_t e = (ptrdiff_t)E;
    p->q = (attn_mat){x->buf[0], x->boff[0], e, 1, ATTN_ST_NATIVE};
    p->k = (attn_mat){x->buf[1], x->boff[1], e, 1, ATTN_ST_NATIVE};
    p->v = (attn_mat){x->buf[2], x->boff[1], e, 1, ATTN_ST_NATIVE};
    p->out = (attn_mat){x->buf[3], x->boff[0], e, 1, ATTN_ST_NATIVE};
    p->scale = 1.0 / sqrt((double)E);
    p->causal = ATTN_CAUSAL_TOP_LEFT;
    /* lse: row b at b * L (its own boff: L per b) */
    ptrdiff_t *bl = malloc(B * sizeof(ptrdiff_t));
    for (size_t b = 0; b < B; b++)
        bl[b] = (ptrdiff_t)(b * L);
    x->bp.f.lse = (attn_mat){x->buf[4], bl, 1, 0, ATTN_ST_NATIVE};
    x->bp.dout = (attn_mat){x->buf[5], x->boff[0], e, 1, ATTN_ST_NATIVE};
    x->bp.dq = (attn_mat){x->buf[6], x->boff[0], e, 1, ATTN_ST_NATIVE};
    x->bp.dk = (attn_mat){x->buf[7], x->boff[1], e, 1, ATTN_ST_NATIVE};
    x->bp.dv = (attn_mat){x->buf[8], x->boff[1], e, 1, ATTN_ST_NATIVE};
    for (size_t b = 0; b < 64; b++)
        x->slopes[b] = (float)pow(2.0, -8.0 * (double)(b % 8 + 1) / 8.0);
}

static void drop(bprob *x)
{
    for (int i = 0; i < 9; i++)
        free(x->buf[i]);
    free(x->boff[0]);
    free(x->boff[1]);
    free((void *)x->bp.f.lse.boff);
}

/* wall time; *cpu = the process's CPU time (every thread): on a loaded
 * machine a long call is preempted more often than a short one, so its
 * wall time says less about its cost than its CPU time                 */
static double run(bprob *x, int bwd, const attn_exec *ex, double *cpu)
{
    double t0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);
    attn_status st = bwd ? attn_sdpa_backward(&x->bp, ex)
                         : attn_sdpa(&x->bp.f, ex);
    double t = now(CLOCK_MONOTONIC) - t0;
    *cpu = now(CLOCK_PROCESS_CPUTIME_ID) - c0;
    if (st != ATTN_OK) {
        fprintf(stderr, "status %d\n", (int)st);
        exit(1);
    }
    return t;
}

/* A and B interleaved; ratio of the medians per query row (A / B)      */
static void pair(const char *what, bprob *a, bprob *b, int bwd,
                 const attn_exec *ex, int reps)
{
    double ta[64], tb[64], ca[64], cb[64];
    if (reps > 64)
        reps = 64;
    run(a, bwd, ex, ca);
    run(b, bwd, ex, cb);
    for (int r = 0; r < reps; r++) {
        ta[r] = run(a, bwd, ex, &ca[r]);
        tb[r] = run(b, bwd, ex, &cb[r]);
    }
    double *v[4] = {ta, tb, ca, cb};
    for (int i = 0; i < 4; i++)
        qsort(v[i], (size_t)reps, sizeof *ta, cmpd);
    const int m = reps / 2;
    const double qa = (double)(a->bp.f.B * a->bp.f.L) * 1e-6;
    const double qb = (double)(b->bp.f.B * b->bp.f.L) * 1e-6;
    printf("%-42s %s: per query %.3f vs %.3f us wall (ratio %.2f), %.3f vs "
           "%.3f us cpu (ratio %.2f)\n", what, bwd ? "bwd" : "fwd",
           ta[m] / qa, tb[m] / qb, (ta[m] / qa) / (tb[m] / qb), ca[m] / qa,
           cb[m] / qb, (ca[m] / qa) / (cb[m] / qb));
    fflush(stdout);
}

int main(int argc, char **argv)
{
    const char *isa = argc > 1 ? argv[1] : "auto";
    int nt = argc > 2 ? atoi(argv[2]) : 2;
    int reps = argc > 3 ? atoi(argv[3]) : 9;
    if (attn_set_isa(isa) != 0) {
        fprintf(stderr, "isa %s not supported\n", isa);
        return 1;
    }
    attn_exec ex = {nt, NULL, NULL};
    printf("isa %s, %d threads, float32, E = 64, medians of %d interleaved "
           "pairs\n", attn_isa_name(), nt, reps);
    bprob win, c512, plain, var;
    make(&win, 4, 8192, 8192, 64);
    win.bp.f.window = 1;
    win.bp.f.wleft = 256;
    win.bp.f.wright = 0;
    make(&c512, 4, 512, 512, 64);
    for (int bwd = 0; bwd < 2; bwd++)
        pair("window 256 causal, L=S=8192 vs causal 512", &win, &c512, bwd,
             &ex, reps);
    win.bp.f.causal = ATTN_CAUSAL_NONE;
    win.bp.f.wleft = win.bp.f.wright = 128;
    pair("window (128, 128), L=S=8192 vs causal 512", &win, &c512, 0, &ex,
         reps);
    drop(&win);
    drop(&c512);
    make(&plain, 8, 1024, 1024, 64);
    make(&var, 8, 1024, 1024, 64);
    static const char *names[3] = {"softcap 30, (8,1024,1024) vs plain causal",
                                   "ALiBi, (8,1024,1024) vs plain causal",
                                   "both, (8,1024,1024) vs plain causal"};
    for (int v = 0; v < 3; v++) {
        var.bp.f.softcap = v != 1 ? 30.0 : 0.0;
        var.bp.f.alibi = v ? (attn_mat){var.slopes, NULL, 0, 0, ATTN_ST_NATIVE}
                           : (attn_mat){NULL, NULL, 0, 0, ATTN_ST_NATIVE};
        for (int bwd = 0; bwd < 2; bwd++)
            pair(names[v], &var, &plain, bwd, &ex, reps);
    }
    drop(&plain);
    drop(&var);
    return 0;
}
