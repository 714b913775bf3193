/*
 * bench_dp_choice.c -- the calibration that picks the bfloat16 score
 * kernel (attention/dp_choice.c), run many times (not a test): medians
 * and extremes of its figures, how often it chose each kernel, and how
 * long it takes. Compare with bench_dpbf16.c's long measurement.
 *
 *   cc -O3 -std=c11 -ffp-contract=off -pthread -Icsrc/core \
 *      tests/c/bench_dp_choice.c $(ls csrc/core/[a-z]*[a-z]/[a-z]*.c) \
 *      -lm -o /tmp/bench_dp_choice
 *   /tmp/bench_dp_choice [runs]        (default 21)
 */
#include <stdio.h>
#include <stdlib.h>

#include "attention/kern.h"

static int by_value(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void show(const char *what, double *v, int n, const char *unit)
{
    qsort(v, (size_t)n, sizeof *v, by_value);
    printf("  %-30s median %8.4f  min %8.4f  max %8.4f %s\n", what,
           v[n / 2], v[0], v[n - 1], unit);
}

int main(int argc, char **argv)
{
    const int runs = argc > 1 && atoi(argv[1]) > 0 ? atoi(argv[1]) : 21;
    if (!(attn__x86_features() & ATTN_X86_AVX512_BF16)) {
        printf("bench_dp_choice: no AVX512-BF16 here: nothing to choose\n");
        return 0;
    }
    double *v[4];
    for (int i = 0; i < 4; i++)
        if (!(v[i] = malloc((size_t)runs * sizeof(double))))
            return 1;
    int n_vdp = 0;
    for (int r = 0; r < runs; r++) {
        attn_dp_rates d;
        const long long t0 = attn__now_ns();
        n_vdp += attn__dp_measure(&d) == ATTN_DP_VDP;
        v[3][r] = (double)(attn__now_ns() - t0) * 1e-3;
        v[0][r] = d.fma_ns, v[1][r] = d.vdp_ns, v[2][r] = d.ratio;
    }
    printf("calibration, %d runs (each: 24 chains x %s, best of repeats)\n",
           runs, "2048 rounds");
    show("vfmadd231ps zmm", v[0], runs, "ns/instruction");
    show("vdpbf16ps zmm", v[1], runs, "ns/instruction");
    show("vdpbf16ps / FMA multiply-adds", v[2], runs, "x");
    show("time per calibration", v[3], runs, "us");
    printf("  chose vdp %d, fma %d times (vdp if the ratio > %.2f)\n", n_vdp,
           runs - n_vdp, ATTN_DP_VDP_MIN_RATIO);
    for (int i = 0; i < 4; i++)
        free(v[i]);
    return 0;
}
