/*
 * tests/c/test_amx.c -- bfloat16 Q and K, and the opt-in "amx" set: the
 * raw scores of every row are
 *
 *   chain    on every set but "amx" (and on "amx" where E % 32 != 0):
 *            the float call's, bit for bit: acc = 0, then per feature e
 *            acc = fmaf(k[e], q[e], acc) on the widened values (exact;
 *            simd/fma.h's correctly rounded fmaf on every platform),
 *            on values from 2^-133 to 2^40 so that subnormal products and
 *            partial sums occur
 *   alone    the same bits for a row decoded alone (L = 1) as inside a
 *            long call, and the outputs too
 *   amx      on "amx" (E a multiple of 32, AMX tiles): every score within
 *            E * 2^-24 of the sum of its products' magnitudes from the
 *            exact sum (inputs below the normal range read as 0), and
 *            some differ from the chain (so the tiles made them); and
 *            what the set's batch invariance rests on: a tile's sum
 *            depends on its row of A and column of B alone (test_tile_sums)
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attn.h"
#include "check.h"
#include "half.h"
#include "runtime/isa.h"
#include "runtime/platform.h"
#include "simd/fma.h"

/* a bfloat16 pattern: mostly ordinary values, some tiny (subnormal
 * products, partial sums and inputs), some large; tiny only: every
 * product of two is subnormal or near it, so partial sums are too     */
static uint16_t rnd_bf16(int tiny)
{
    const uint16_t sign = (uint16_t)(irand(2) << 15), man = irand(128);
    size_t e;
    switch (tiny ? 1 : irand(8)) {
    case 0: e = irand(4); break;              /* subnormal or near it  */
    case 1: e = 60 + irand(10); break;        /* 2^-67 .. 2^-58         */
    case 2: e = 150 + irand(18); break;       /* large                  */
    default: e = 120 + irand(12); break;      /* about 2^-7 .. 2^4      */
    }
    return (uint16_t)(sign | e << 7 | man);
}

/* x with a subnormal read as (signed) 0: the AMX scores run under DAZ
 * and FTZ (tile_amx.h)                                                  */
static float ftz(float x)
{
    return fpclassify(x) == FP_SUBNORMAL ? copysignf(0.0f, x) : x;
}

static float bf(uint16_t h) { return attn_bf16_to_f32(h); }

/* the numeric rule's dot product: one fma chain over e, from 0       */
static float chain(const uint16_t *q, const uint16_t *k, size_t E)
{
    float acc = 0.0f;
    for (size_t e = 0; e < E; e++)
        acc = attn_fmaf(bf(k[e]), bf(q[e]), acc); /* MinGW's fmaf is not */
    return acc;
}

/* scores (and out) of rows [i0, i0 + L) of Q (L0 x E) with S keys */
static void run(const uint16_t *q, const uint16_t *k, const uint16_t *v,
                size_t i0, size_t L, size_t S, size_t E, float *sc,
                float *out)
{
    attn_problem p;
    memset(&p, 0, sizeof p);
    p.dtype = ATTN_F32;
    p.B = 1, p.L = L, p.S = S, p.E = E, p.Ev = E;
    p.scale = 1.0 / sqrt((double)E);
    p.q = (attn_mat){(void *)(q + i0 * E), NULL, (ptrdiff_t)E, 1,
                     ATTN_ST_BF16};
    p.k = (attn_mat){(void *)k, NULL, (ptrdiff_t)E, 1, ATTN_ST_BF16};
    p.v = (attn_mat){(void *)v, NULL, (ptrdiff_t)E, 1, ATTN_ST_BF16};
    p.out = (attn_mat){out, NULL, (ptrdiff_t)E, 1, ATTN_ST_NATIVE};
    p.scores = (attn_mat){sc, NULL, (ptrdiff_t)S, 1, ATTN_ST_NATIVE};
    attn_exec ex = {1, NULL, NULL};
    CHECK(attn_sdpa(&p, &ex) == ATTN_OK, "call L%zu S%zu E%zu", L, S, E);
}

static size_t differ(const float *a, const float *b, size_t n)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += attn_f32_to_bits(a[i]) != attn_f32_to_bits(b[i]);
    return bad;
}

/* "amx": scores near the exact sums; returns how many differ from the
 * chain                                                                */
static size_t amx_scores_ok(const uint16_t *q, const uint16_t *k,
                            const float *sc, size_t L, size_t S, size_t E)
{
    size_t off_chain = 0, bad = 0;
    for (size_t i = 0; i < L; i++)
        for (size_t j = 0; j < S; j++) {
            double sum = 0, mag = 0;
            for (size_t e = 0; e < E; e++) {
                const double x = (double)ftz(bf(q[i * E + e]))
                                 * (double)ftz(bf(k[j * E + e]));
                sum += x;
                mag += fabs(x);
            }
            const double got = sc[i * S + j];
            bad += !(fabs(got - sum) <= mag * (double)E * 0x1p-24 + 0x1p-100);
            off_chain += attn_f32_to_bits(sc[i * S + j])
                         != attn_f32_to_bits(
                             chain(q + i * E, k + j * E, E));
        }
    CHECK(bad == 0, "amx L%zu S%zu E%zu: %zu scores far from the exact sums",
          L, S, E, bad);
    return off_chain;
}

static size_t g_amx_off_chain; /* "amx": scores unlike the chain's */

static void test_one(size_t L, size_t S, size_t E)
{
    uint16_t *q = malloc(L * E * 2), *k = malloc(S * E * 2),
             *v = malloc(S * E * 2);
    float *sc = malloc(L * S * 4), *sc2 = malloc(L * S * 4),
          *out = malloc(L * E * 4), *out2 = malloc(L * E * 4),
          *row = malloc(S * 4), *orow = malloc(E * 4);
    for (size_t i = 0; i < L * E; i++)
        q[i] = rnd_bf16(i / E % 3 == 0);
    for (size_t i = 0; i < S * E; i++) {
        k[i] = rnd_bf16(i / E % 3 == 0);
        v[i] = attn_f32_to_bf16((float)(urand() - 0.5));
    }
    run(q, k, v, 0, L, S, E, sc, out);
    const int tiles = strcmp(attn_isa_name(), "amx") == 0 && E % 32 == 0
                      && E <= 256;
    if (!tiles) {
        size_t bad = 0;
        for (size_t i = 0; i < L; i++)
            for (size_t j = 0; j < S; j++) {
                const float w = chain(q + i * E, k + j * E, E);
                bad += attn_f32_to_bits(sc[i * S + j]) != attn_f32_to_bits(w);
            }
        CHECK(bad == 0, "chain L%zu S%zu E%zu: %zu scores differ", L, S, E,
              bad);
    } else {
        g_amx_off_chain += amx_scores_ok(q, k, sc, L, S, E);
    }
    memset(sc2, 0xff, L * S * 4), memset(out2, 0xff, L * E * 4); /* NaN */
    run(q, k, v, 0, L, S, E, sc2, out2);
    CHECK(differ(sc, sc2, L * S) == 0 && differ(out, out2, L * E) == 0,
          "kernels L%zu S%zu E%zu: a second call differs", L, S, E);
    for (size_t i = 0; i < L; i += L / 3 + 1) {
        run(q, k, v, i, 1, S, E, row, orow);
        CHECK(differ(row, sc + i * S, S) == 0
                  && differ(orow, out + i * E, E) == 0,
              "kernels L%zu S%zu E%zu: row %zu decoded alone differs", L, S,
              E, i);
    }
    free(q), free(k), free(v), free(sc), free(sc2), free(out), free(out2);
    free(row), free(orow);
}

#if ATTN_HAVE_AMX
#include <immintrin.h>

typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_cfg;

#define AMX_ATTR_ ATTN_TARGET("amx-tile,amx-bf16")

/* C (m x n) = A (m x 32 bfloat16) B (16 pairs x n), from zeros         */
static AMX_ATTR_ void tile_dot(const uint16_t *a, const uint32_t *b, float *c,
                              int m, int n)
{
    tile_cfg cfg __attribute__((aligned(64)));
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    cfg.rows[0] = (uint8_t)m, cfg.colsb[0] = (uint16_t)(4 * n);
    cfg.rows[1] = (uint8_t)m, cfg.colsb[1] = 64;
    cfg.rows[2] = 16, cfg.colsb[2] = (uint16_t)(4 * n);
    _tile_loadconfig(&cfg);
    _tile_zero(0);
    _tile_loadd(1, a, 64);
    _tile_loadd(2, b, 64);
    _tile_dpbf16ps(0, 1, 2);
    _tile_stored(0, c, 64);
    _tile_release();
}

/* what batch invariance on "amx" rests on (tile_amx.h): a sum depends on
 * its row of A and its column of B alone -- not on where they sit, the
 * tile's shape or the other rows and columns -- and not on which operand
 * is A (the P V kernels put P in A)                                     */
static void test_tile_sums(int count)
{
    static uint16_t a[16 * 32], a2[16 * 32], at[16 * 32];
    static uint32_t b[16 * 16], b2[16 * 16], bt[16 * 16];
    static float c[16 * 16], c2[16 * 16], ct[16 * 16];
    size_t moved = 0, swapped = 0;
    for (int it = 0; it < count * 50; it++) {
        const int tiny = it % 3 == 0;
        for (int i = 0; i < 16 * 32; i++)
            a[i] = rnd_bf16(tiny), a2[i] = rnd_bf16(tiny);
        for (int i = 0; i < 16 * 16; i++)
            b[i] = (uint32_t)rnd_bf16(tiny) | (uint32_t)rnd_bf16(tiny) << 16,
            b2[i] = (uint32_t)rnd_bf16(tiny) | (uint32_t)rnd_bf16(tiny) << 16;
        tile_dot(a, b, c, 16, 16);
        /* row r, column q into another tile of another shape          */
        const int r = (int)irand(16), q = (int)irand(16);
        const int m = 1 + (int)irand(16), n = 1 + (int)irand(16);
        const int r2 = (int)irand((size_t)m), q2 = (int)irand((size_t)n);
        memcpy(a2 + r2 * 32, a + r * 32, 64);
        for (int p = 0; p < 16; p++)
            b2[p * 16 + q2] = b[p * 16 + q];
        tile_dot(a2, b2, c2, m, n);
        moved += attn_f32_to_bits(c[r * 16 + q])
                 != attn_f32_to_bits(c2[r2 * 16 + q2]);
        /* (A B)^T = B^T A^T: B's columns as A's rows, A's rows as B's */
        for (int j = 0; j < 16; j++)
            for (int p = 0; p < 16; p++) {
                at[j * 32 + 2 * p] = (uint16_t)(b[p * 16 + j] & 0xffff);
                at[j * 32 + 2 * p + 1] = (uint16_t)(b[p * 16 + j] >> 16);
                bt[p * 16 + j] = (uint32_t)a[j * 32 + 2 * p]
                                 | (uint32_t)a[j * 32 + 2 * p + 1] << 16;
            }
        tile_dot(at, bt, ct, 16, 16);
        for (int i = 0; i < 16; i++)
            for (int j = 0; j < 16; j++)
                swapped += attn_f32_to_bits(c[i * 16 + j])
                           != attn_f32_to_bits(ct[j * 16 + i]);
    }
    CHECK(moved == 0, "amx tiles: %zu sums changed with their place or the "
          "tile's shape", moved);
    CHECK(swapped == 0, "amx tiles: %zu sums changed with A and B swapped",
          swapped);
    printf("amx tiles: %d sums moved, %d transposed: the same bits\n",
           count * 50, count * 50 * 256);
}
#endif

int main(int argc, char **argv)
{
    const int count = argc > 1 ? atoi(argv[1]) : 12;
    clock_t t0 = clock();
    for (int i = 0; i < CHECK_NISA; i++) {
        if (!check_use_isa(i))
            continue;
        const int amx = strcmp(check_isa(i), "amx") == 0;
        for (int n = 0; n < count; n++) {
            /* "amx": E a multiple of 32 every other call (the tiles) */
            const size_t E = amx && n % 2 ? 32 * (1 + irand(8))
                                          : 2 * (1 + irand(48)),
                         L = 1 + irand(150), S = 1 + irand(300);
            test_one(L, S, E);
        }
        test_one(130, 257, 64);
        test_one(70, 100, 128);
        test_one(5, 40, 3); /* odd E */
        if (amx) {
#if ATTN_HAVE_AMX
            test_tile_sums(count);
#endif
            CHECK(g_amx_off_chain > 0, "amx: every score is the chain's");
            printf("amx: %zu scores differ from the chain\n",
                   g_amx_off_chain);
        }
    }
    attn_set_isa("auto");
    return check_summary(t0);
}
