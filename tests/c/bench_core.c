/*
 * bench_core.c -- quick timer for attn_sdpa (not a test; for tuning).
 *
 *   make -C tests/c bench && tests/c/bench_core isa [threads [reps [cases]]]
 *
 * Prints the median time and GF/s (4*B*L*S*E flops, halved for causal) of
 * the shapes.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attn.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int with_weights;

static void bench(attn_dtype dt, size_t B, size_t L, size_t S, size_t E,
                  attn_causal causal, int nt, int reps, int tril_mask)
{
    size_t esz = dt == ATTN_F32 ? 4 : 8;
    size_t nq = B * L * E, nk = B * S * E;
    char *q = malloc(nq * esz), *k = malloc(nk * esz), *v = malloc(nk * esz),
         *o = malloc(nq * esz);
    for (size_t i = 0; i < nq; i++) {
        double x = sin((double)i * 0.37) * 1.5;
        if (dt == ATTN_F32)
            ((float *)q)[i] = (float)x;
        else
            ((double *)q)[i] = x;
    }
    for (size_t i = 0; i < nk; i++) {
        double x = cos((double)i * 0.73) * 1.5, y = sin((double)i * 0.11);
        if (dt == ATTN_F32) {
            ((float *)k)[i] = (float)x;
            ((float *)v)[i] = (float)y;
        } else {
            ((double *)k)[i] = x;
            ((double *)v)[i] = y;
        }
    }
    ptrdiff_t *bq = malloc(B * sizeof(ptrdiff_t)),
              *bk = malloc(B * sizeof(ptrdiff_t));
    for (size_t b = 0; b < B; b++) {
        bq[b] = (ptrdiff_t)(b * L * E);
        bk[b] = (ptrdiff_t)(b * S * E);
    }
    attn_problem p;
    memset(&p, 0, sizeof p);
    p.dtype = dt;
    p.B = B;
    p.L = L;
    p.S = S;
    p.E = E;
    p.Ev = E;
    p.q = (attn_mat){q, bq, (ptrdiff_t)E, 1, ATTN_ST_NATIVE};
    p.k = (attn_mat){k, bk, (ptrdiff_t)E, 1, ATTN_ST_NATIVE};
    p.v = (attn_mat){v, bk, (ptrdiff_t)E, 1, ATTN_ST_NATIVE};
    p.out = (attn_mat){o, bq, (ptrdiff_t)E, 1, ATTN_ST_NATIVE};
    p.scale = 1.0 / sqrt((double)E);
    p.causal = causal;
    unsigned char *mask = NULL;
    if (tril_mask) { /* the tutorial's np.tril mask, one (L, S) for all b */
        mask = malloc(L * S);
        for (size_t i = 0; i < L; i++)
            for (size_t j = 0; j < S; j++)
                mask[i * S + j] = j <= i;
        p.mask = (attn_mat){mask, NULL, (ptrdiff_t)S, 1, ATTN_ST_NATIVE};
    }
    char *w = NULL;
    ptrdiff_t *bw = NULL;
    if (with_weights) {
        w = malloc(B * L * S * esz);
        bw = malloc(B * sizeof(ptrdiff_t));
        for (size_t b = 0; b < B; b++)
            bw[b] = (ptrdiff_t)(b * L * S);
        p.weights = (attn_mat){w, bw, (ptrdiff_t)S, 1, ATTN_ST_NATIVE};
    }
    attn_exec ex = {nt, NULL, NULL};
    double t[64], tc[64];
    if (reps > 64)
        reps = 64;
    attn_sdpa(&p, &ex);
    for (int r = 0; r < reps; r++) {
        double t0 = now(), c0 = cpu_now();
        attn_sdpa(&p, &ex);
        t[r] = now() - t0;
        tc[r] = cpu_now() - c0;
    }
    qsort(t, (size_t)reps, sizeof *t, cmpd);
    qsort(tc, (size_t)reps, sizeof *tc, cmpd);
    double fl = 4.0 * (double)B * (double)L * (double)S * (double)E;
    if (causal || tril_mask)
        fl *= 0.5;
    printf("%s %-7s (%zu,%zu,%zu) %s t=%d: median %8.3f ms  %6.1f GF/s"
           "  (best %6.1f, best per cpu-second %6.1f GF/s)\n",
           attn_isa_name(), dt == ATTN_F32 ? "float32" : "float64", B, L, E,
           tril_mask ? "tril  " : causal ? "causal" : with_weights ? "+wts  " : "full  ", nt, t[reps / 2] * 1e3,
           fl / t[reps / 2] * 1e-9, fl / t[0] * 1e-9,
           fl / tc[0] * 1e-9);
    fflush(stdout);
    free(q);
    free(k);
    free(v);
    free(o);
    free(bq);
    free(bk);
    free(mask);
    free(w);
    free(bw);
}

int main(int argc, char **argv)
{
    if (argc < 2) { /* e.g. tools/valgrind.sh runs every tests/c program */
        printf("usage: bench_core ISA [threads [reps [cases]]]\n"
               "  ISA: auto | avx512 | avx2 | portable; cases: letters a-i "
               "(see main), w = with weights\n");
        return 0;
    }
    const char *isa = argv[1];
    int nt = argc > 2 ? atoi(argv[2]) : 2;
    int reps = argc > 3 ? atoi(argv[3]) : 7;
    const char *only = argc > 4 ? argv[4] : "";
    with_weights = strchr(only, 'w') != NULL;
    if (attn_set_isa(isa) != 0) {
        fprintf(stderr, "isa %s not supported\n", isa);
        return 1;
    }
    if (!*only || strchr(only, 'a'))
        bench(ATTN_F32, 12, 1024, 1024, 64, ATTN_CAUSAL_NONE, nt, reps, 0);
    if (!*only || strchr(only, 'b'))
        bench(ATTN_F32, 12, 2048, 2048, 64, ATTN_CAUSAL_TOP_LEFT, nt, reps, 0);
    if (!*only || strchr(only, 'c'))
        bench(ATTN_F64, 12, 1024, 1024, 64, ATTN_CAUSAL_NONE, nt, reps, 0);
    if (!*only || strchr(only, 'd'))
        bench(ATTN_F32, 12, 2048, 2048, 64, ATTN_CAUSAL_NONE, nt, reps, 0);
    if (!*only || strchr(only, 'e'))
        bench(ATTN_F32, 12, 4096, 4096, 64, ATTN_CAUSAL_NONE, nt, reps, 0);
    if (!*only || strchr(only, 'f'))
        bench(ATTN_F32, 12, 4096, 4096, 64, ATTN_CAUSAL_TOP_LEFT, nt, reps, 0);
    if (!*only || strchr(only, 'g'))
        bench(ATTN_F32, 1, 65536, 65536, 64, ATTN_CAUSAL_TOP_LEFT, nt, 1, 0);
    if (!*only || strchr(only, 'i'))
        bench(ATTN_F32, 12, 1024, 1024, 64, ATTN_CAUSAL_TOP_LEFT, nt, reps, 0);
    if (!*only || strchr(only, 'h'))
        bench(ATTN_F32, 12, 2048, 2048, 64, ATTN_CAUSAL_NONE, nt, reps, 1);
    return 0;
}
