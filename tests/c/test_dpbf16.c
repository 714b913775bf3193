/*
 * tests/c/test_dpbf16.c -- bfloat16 Q and K on AVX-512 (with AVX512-BF16
 * the pair chain of tile_dpbf16.h): the raw scores of every row are
 *
 *   chain    the pair chain, bit for bit: acc = 0, then per pair p
 *            acc = fma(k[2p], q[2p], fma(k[2p+1], q[2p+1], acc)), with
 *            subnormal inputs read as 0 and subnormal sums flushed to 0
 *            (vdpbf16ps's arithmetic), on values from 2^-133 to 2^40 so
 *            that subnormal products and partial sums occur
 *   kernels  the same bits from vdpbf16ps in every kernel, from its
 *            FMA twin in query blocks and from the one of the two this
 *            process chose (attn__dpbf16_mode 0: dp_choice.c), and from
 *            a row decoded alone (L = 1: qk_few_dp) as inside a long call
 *
 * On "amx" (E a multiple of 32) the scores come from AMX tiles, whose
 * rounding is their own: "kernels" holds them to one set of bits, and
 *
 *   amx      every score is within E * 2^-24 of the sum of its products'
 *            magnitudes from the exact sum (inputs below the normal range
 *            read as 0), and some differ from the pair chain (so the
 *            tiles, not the chain, made them)
 *
 * Without AVX512-BF16, and on every other instruction set the CPU runs,
 * the pair chain is not used and only "kernels" (the float path's batch
 * invariance with bfloat16 operands) is checked.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attention/kern.h"
#include "attn.h"
#include "check.h"
#include "half.h"
#include "runtime/platform.h"

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

/* x with a subnormal read as (signed) 0: vdpbf16ps's DAZ / FTZ */
static float ftz(float x)
{
    return fpclassify(x) == FP_SUBNORMAL ? copysignf(0.0f, x) : x;
}

static float bf(uint16_t h) { return attn_bf16_to_f32(h); }

static float pair_chain(const uint16_t *q, const uint16_t *k, size_t E)
{
    float acc = 0.0f;
    for (size_t e = 0; e < E; e += 2) {
        acc = ftz(fmaf(ftz(bf(k[e + 1])), ftz(bf(q[e + 1])), acc));
        acc = ftz(fmaf(ftz(bf(k[e])), ftz(bf(q[e])), acc));
    }
    return acc;
}

/* scores (and out) of rows [i0, i0 + L) of Q (L0 x E) with S keys */
static void run(const uint16_t *q, const uint16_t *k, const uint16_t *v,
                size_t i0, size_t L, size_t S, size_t E, float *sc,
                float *out, int mode)
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
    attn__dpbf16_mode = mode;
    CHECK(attn_sdpa(&p, &ex) == ATTN_OK, "call L%zu S%zu E%zu", L, S, E);
    attn__dpbf16_mode = 0;
}

static size_t differ(const float *a, const float *b, size_t n)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += attn_f32_to_bits(a[i]) != attn_f32_to_bits(b[i]);
    return bad;
}

/* "amx": scores near the exact sums; returns how many differ from the
 * pair chain                                                           */
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
                             pair_chain(q + i * E, k + j * E, E));
        }
    CHECK(bad == 0, "amx L%zu S%zu E%zu: %zu scores far from the exact sums",
          L, S, E, bad);
    return off_chain;
}

static size_t g_amx_off_chain; /* "amx": scores unlike the pair chain's */

static void test_one(size_t L, size_t S, size_t E, int pairs)
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
    run(q, k, v, 0, L, S, E, sc, out, ATTN_DP_FMA);
    if (pairs) {
        size_t bad = 0;
        for (size_t i = 0; i < L; i++)
            for (size_t j = 0; j < S; j++) {
                const float w = pair_chain(q + i * E, k + j * E, E);
                bad += attn_f32_to_bits(sc[i * S + j]) != attn_f32_to_bits(w);
            }
        CHECK(bad == 0, "chain L%zu S%zu E%zu: %zu scores differ", L, S, E,
              bad);
    }
    if (strcmp(attn_isa_name(), "amx") == 0 && E % 32 == 0
        && E <= ATTN_AMX_MAX_E)
        g_amx_off_chain += amx_scores_ok(q, k, sc, L, S, E);
    run(q, k, v, 0, L, S, E, sc2, out2, ATTN_DP_VDP);
    CHECK(differ(sc, sc2, L * S) == 0 && differ(out, out2, L * E) == 0,
          "kernels L%zu S%zu E%zu: the FMA twin and vdpbf16ps differ", L, S,
          E);
    memset(sc2, 0xff, L * S * 4), memset(out2, 0xff, L * E * 4); /* NaN */
    run(q, k, v, 0, L, S, E, sc2, out2, 0);
    CHECK(differ(sc, sc2, L * S) == 0 && differ(out, out2, L * E) == 0,
          "kernels L%zu S%zu E%zu: the chosen kernel differs", L, S, E);
    for (size_t i = 0; i < L; i += L / 3 + 1) {
        run(q, k, v, i, 1, S, E, row, orow, ATTN_DP_FMA);
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
#if ATTN_HAVE_X86
    const int has_bf16 = (attn__x86_features() & ATTN_X86_AVX512_BF16) != 0;
#else
    const int has_bf16 = 0;
#endif
    /* every path this CPU runs: the pair chain on AVX-512 with
     * AVX512-BF16; elsewhere the same checks hold bfloat16 calls to one
     * set of bits whatever the mode and wherever a row sits             */
    static const char *const isas[] = {"amx",      "avx512",  "avx2",
                                       "neon",     "portable", "baseline"};
    for (size_t n_isa = 0; n_isa < sizeof isas / sizeof *isas; n_isa++) {
        if (attn_set_isa(isas[n_isa]) != 0) {
            printf("isa %s: not supported by this CPU, not tested\n",
                   isas[n_isa]);
            continue;
        }
        const int pairs = has_bf16 && strcmp(isas[n_isa], "avx512") == 0;
        const int amx = strcmp(isas[n_isa], "amx") == 0;
        printf("isa %s, AVX512-BF16 pair chain: %s\n", isas[n_isa],
               pairs ? "yes" : "no");
        for (int n = 0; n < count; n++) {
            /* "amx": E a multiple of 32 every other call (the tiles) */
            const size_t E = amx && n % 2 ? 32 * (1 + irand(8))
                                          : 2 * (1 + irand(48)),
                         L = 1 + irand(150), S = 1 + irand(300);
            test_one(L, S, E, pairs);
        }
        test_one(130, 257, 64, pairs);
        test_one(70, 100, 128, pairs);
        if (amx) {
#if ATTN_HAVE_AMX
            test_tile_sums(count);
#endif
            CHECK(g_amx_off_chain > 0, "amx: every score is the pair chain's");
            printf("amx: %zu scores differ from the pair chain\n",
                   g_amx_off_chain);
        }
    }
    attn_set_isa("auto");
    return check_summary(t0);
}
