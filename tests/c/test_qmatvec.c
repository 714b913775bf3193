/*
 * test_qmatvec.c -- C tests of the quant family (quant/qmatvec.c,
 * quant/qmatvec_x86.c), without Python:
 *
 *   attn_qmatmul on random Q4_1 and Q8_0 blocks (float16 d and m from
 *     random floats, random nibbles / int8), random M, N, K and row
 *     strides: bit for bit against an oracle written here (each weight
 *     decoded first, then the documented order: 32 fmaf chains, the
 *     tree 16, 8, 4, 2, 1) on every instruction set, and within a bound
 *     of a long double dot product;
 *   the same bits for 1, 2 and 3 threads;
 *   edges: M = 0, N = 0, K = 0 (zeros), and the arguments it refuses
 *     (K not a multiple of 32, rows too short, unknown type).
 *
 * Build (tests/c/test_c_core.py does this):
 *   gcc -std=c11 -Wall -Wextra -Werror -O1 -g -pthread -Icsrc/core \
 *       tests/c/test_qmatvec.c $(find csrc/core -name "*.c") -lm
 * Prints one line per failure and "N passed, M failed"; exit status 1 on
 * any failure. An optional argument: the number of random cases.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "half.h"
#include "calls.h"
#include "quant/qmatvec.h"

static const attn_exec EX1 = {1, NULL, NULL};

static size_t bytes_of(attn_qtype q) { return q == ATTN_Q4_1 ? 20 : 34; }

static void put_f16(uint8_t *p, float f)
{
    const uint16_t h = attn_f32_to_f16(f);
    memcpy(p, &h, 2);
}

static float get_f16(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return attn_f16_to_f32(h);
}

/* N rows of K / 32 random blocks, ldw bytes apart                       */
static void fill_blocks(uint8_t *w, attn_qtype q, size_t N, size_t K,
                        size_t ldw)
{
    const size_t bs = bytes_of(q);
    for (size_t n = 0; n < N; n++)
        for (size_t b = 0; b < K / 32; b++) {
            uint8_t *p = w + n * ldw + b * bs;
            put_f16(p, (float)(urand() - 0.5) * 0.05f);
            if (q == ATTN_Q4_1)
                put_f16(p + 2, (float)(urand() - 0.5) * 0.05f);
            for (size_t j = (q == ATTN_Q4_1 ? 4 : 2); j < bs; j++)
                p[j] = (uint8_t)rnd();
        }
}

/* weight k (< K) of row p, decoded as gguf does                          */
static float weight(const uint8_t *row, attn_qtype q, size_t k)
{
    const uint8_t *p = row + k / 32 * bytes_of(q);
    const size_t j = k % 32;
    if (q == ATTN_Q8_0)
        return get_f16(p) * (float)(int8_t)p[2 + j];
    const uint8_t byte = p[4 + j % 16];
    return get_f16(p) * (float)(j < 16 ? byte & 15 : byte >> 4)
           + get_f16(p + 2);
}

/* the documented order; *ld: the long double dot and its bound          */
static float oracle(const float *x, const uint8_t *row, attn_qtype q,
                    size_t K, long double *exact, long double *mag)
{
    float acc[32] = {0};
    *exact = 0, *mag = 0;
    for (size_t k = 0; k < K; k++) {
        const float w = weight(row, q, k);
        acc[k % 32] = attn_fmaf(x[k], w, acc[k % 32]);
        *exact += (long double)x[k] * w;
        *mag += fabsl((long double)x[k] * w);
    }
    for (int h = 16; h >= 1; h /= 2)
        for (int l = 0; l < h; l++)
            acc[l] = acc[l] + acc[l + h];
    return acc[0];
}

static void random_case(attn_qtype q)
{
    const size_t M = 1 + irand(3), N = 1 + irand(70), K = 32 * irand(9);
    const size_t ldx = K + irand(5), ldo = N + irand(3);
    const size_t ldw = K / 32 * bytes_of(q) + irand(7);
    float *x = malloc((M * ldx + 1) * sizeof(float));
    float *out = malloc(M * ldo * sizeof(float));
    float *out2 = malloc(M * ldo * sizeof(float));
    uint8_t *w = malloc(N * ldw + 1);
    if (!x || !out || !out2 || !w) {
        CHECK(0, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < M * ldx; i++)
        x[i] = (float)(2 * urand() - 1);
    fill_blocks(w, q, N, K, ldw);
    CHECK(ca_qmatmul(out, ldo, x, ldx, w, ldw, M, N, K, q, &EX1)
              == ATTN_OK, "status");
    for (size_t i = 0; i < M; i++)
        for (size_t n = 0; n < N; n++) {
            long double ex, mag;
            const float want = oracle(x + i * ldx, w + n * ldw, q, K, &ex,
                                      &mag);
            const float got = out[i * ldo + n];
            CHECK(memcmp(&got, &want, sizeof got) == 0,
                  "q%d M=%zu N=%zu K=%zu (%zu, %zu): %a != %a", (int)q, M,
                  N, K, i, n, got, want);
            CHECK(fabsl(got - ex) <= 1e-6L * (mag + 1e-30L) * (K + 1),
                  "q%d K=%zu: %g far from %Lg", (int)q, K, got, ex);
        }
    for (int t = 2; t <= 3; t++) {
        attn_exec ex = {t, NULL, NULL};
        CHECK(ca_qmatmul(out2, ldo, x, ldx, w, ldw, M, N, K, q, &ex)
                  == ATTN_OK, "status");
        for (size_t i = 0; i < M; i++)
            CHECK(memcmp(out + i * ldo, out2 + i * ldo, N * sizeof(float))
                      == 0, "q%d: %d threads change row %zu", (int)q, t, i);
    }
done:
    free(x), free(out), free(out2), free(w);
}

static void edges(void)
{
    float x[64] = {0}, out[8];
    uint8_t w[8 * 68] = {0};
    CHECK(ca_qmatmul(out, 8, x, 48, w, 68, 1, 2, 48, ATTN_Q8_0, &EX1)
              == ATTN_EINVAL, "K = 48 accepted");
    CHECK(ca_qmatmul(out, 8, x, 64, w, 67, 1, 2, 64, ATTN_Q8_0, &EX1)
              == ATTN_EINVAL, "short rows accepted");
    CHECK(ca_qmatmul(out, 8, x, 64, w, 68, 1, 2, 64, (attn_qtype)7, &EX1)
              == ATTN_EINVAL, "unknown type accepted");
    CHECK(attn_qblock_bytes((attn_qtype)7) == 0, "block bytes");
    CHECK(ca_qmatmul(out, 8, x, 64, w, 68, 0, 2, 64, ATTN_Q8_0, &EX1)
              == ATTN_OK, "M = 0");
    for (int i = 0; i < 8; i++)
        out[i] = 1.0f;
    CHECK(ca_qmatmul(out, 4, x, 0, w, 0, 2, 3, 0, ATTN_Q4_1, &EX1)
              == ATTN_OK, "K = 0");
    CHECK(out[0] == 0 && out[2] == 0 && out[4] == 0 && out[6] == 0
              && out[3] == 1.0f, "K = 0 gives zeros, leaves the rest");
}

int main(int argc, char **argv)
{
    const clock_t t0 = clock();
    const int count = argc > 1 ? atoi(argv[1]) : 12;
    for (int i = 0; i < CHECK_NISA; i++) {
        if (!check_use_isa(i))
            continue;
        rng_state = TEST_RNG_SEED;       /* the same cases on every ISA */
        for (int c = 0; c < count; c++) {
            random_case(ATTN_Q4_1);
            random_case(ATTN_Q8_0);
        }
    }
    attn_set_isa("auto");
    edges();
    return check_summary(t0);
}
