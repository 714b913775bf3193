/*
 * tests/c/test_dp_choice.c -- which bfloat16 score kernel query blocks
 * use (attention/dp_choice.c): vdpbf16ps or its FMA twin, the same bits,
 * chosen once per process by timing the two instructions, or forced by
 * ATTNPY_BF16_DOT=vdp|fma.
 *
 *   parse      "vdp" and "fma" in any case, nothing else
 *   measure    on a CPU with AVX512-BF16: both rates positive, the choice
 *              the one the ratio implies (printed: this CPU's figures);
 *              elsewhere 0 (no measurement)
 *   once       three threads asking at once get one answer, and later
 *              calls the same
 *   env        ATTNPY_BF16_DOT set to the answer the measurement did NOT
 *              give wins over it; a plan of bfloat16 Q and K on AVX-512
 *              takes it, and attn__dpbf16_mode set by a test wins over
 *              both; anything else is measured
 *   bits       bfloat16 calls give the same bits with either kernel
 *              chosen through the variable as with either forced
 */
#if defined(_WIN32)
#include <stdlib.h>
#define set_env(name, value) _putenv_s(name, value)
#else
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#define set_env(name, value) setenv(name, value, 1)
#endif
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "attention/kern.h"
#include "attn.h"
#include "check.h"
#include "half.h"
#include "runtime/thread.h"

static int bf16_cpu(void)
{
    return (attn__x86_features() & ATTN_X86_AVX512_BF16) != 0;
}

static void test_parse(void)
{
    static const struct {
        const char *s;
        int mode;
    } cases[] = {{"vdp", ATTN_DP_VDP}, {"VDP", ATTN_DP_VDP},
                 {"vDp", ATTN_DP_VDP}, {"fma", ATTN_DP_FMA},
                 {"FMA", ATTN_DP_FMA}, {"Fma", ATTN_DP_FMA},
                 {"", 0},              {"auto", 0},
                 {"vd", 0},            {"vdpx", 0},
                 {"fma ", 0},          {" fma", 0},
                 {"1", 0},             {NULL, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        CHECK(attn__dp_parse(cases[i].s) == cases[i].mode,
              "parse \"%s\": %d, not %d", cases[i].s ? cases[i].s : "(null)",
              attn__dp_parse(cases[i].s), cases[i].mode);
    CHECK(attn__dp_choose("vdp") == ATTN_DP_VDP
              && attn__dp_choose("FMA") == ATTN_DP_FMA,
          "choose: a forced kernel not taken");
}

static int one_of_two(int c) { return c == ATTN_DP_VDP || c == ATTN_DP_FMA; }

/* the calibration; returns its choice (FMA where it cannot measure) */
static int test_measure(void)
{
    attn_dp_rates r;
    const long long t0 = attn__now_ns();
    const int c = attn__dp_measure(&r);
    const double us = (double)(attn__now_ns() - t0) * 1e-3;
    if (!bf16_cpu()) {
        CHECK(c == 0 && r.ratio == 0.0, "measure without AVX512-BF16: %d", c);
        printf("measure: no AVX512-BF16, no measurement\n");
        return ATTN_DP_FMA;
    }
    printf("measure: vfmadd231ps zmm %.4f ns, vdpbf16ps zmm %.4f ns per "
           "instruction: vdpbf16ps %.2fx the FMA's multiply-adds -> %s "
           "(%.0f us)\n", r.fma_ns, r.vdp_ns, r.ratio,
           c == ATTN_DP_VDP ? "vdp" : "fma", us);
    CHECK(one_of_two(c), "measure: %d", c);
    CHECK(r.fma_ns > 0 && r.vdp_ns > 0 && isfinite(r.ratio),
          "measure: rates %g %g", r.fma_ns, r.vdp_ns);
    CHECK((c == ATTN_DP_VDP) == (r.ratio > ATTN_DP_VDP_MIN_RATIO),
          "measure: ratio %.3f but choice %d", r.ratio, c);
    CHECK(one_of_two(attn__dp_choose(NULL))
              && one_of_two(attn__dp_choose("auto")),
          "choose: a measured choice is neither kernel");
    return c;
}

static struct {
    attn_mutex mu;
    attn_cond cv;
    int done, got[2];
} g_race;

static ATTN_THREAD_FN(race_main, arg)
{
    (void)arg;
    const int c = attn__dpbf16_choice();
    attn_mutex_lock(&g_race.mu);
    g_race.got[g_race.done++] = c;
    attn_cond_broadcast(&g_race.cv);
    attn_mutex_unlock(&g_race.mu);
    ATTN_THREAD_RETURN;
}

/* three threads (two started, and this one) ask for the first time */
static void test_once(void)
{
    set_env("ATTNPY_BF16_DOT", "");
    attn__dpbf16_choice_reset();
    CHECK(attn_mutex_init(&g_race.mu) == 0 && attn_cond_init(&g_race.cv) == 0,
          "once: mutex / condition");
    const int started = attn_threads_start(race_main, NULL, 2);
    CHECK(started == 2, "once: %d threads started", started);
    const int mine = attn__dpbf16_choice();
    attn_mutex_lock(&g_race.mu);
    while (g_race.done < started)
        attn_cond_wait(&g_race.cv, &g_race.mu);
    attn_mutex_unlock(&g_race.mu);
    CHECK(one_of_two(mine), "once: %d", mine);
    for (int i = 0; i < started; i++)
        CHECK(g_race.got[i] == mine, "once: thread %d got %d, not %d", i,
              g_race.got[i], mine);
    CHECK(attn__dpbf16_choice() == mine && attn__dpbf16_choice() == mine,
          "once: a later call differs");
}

/* a problem of bfloat16 Q, K, V (L x E, S x E) */
static attn_problem bf16_problem(const uint16_t *q, const uint16_t *k,
                                 const uint16_t *v, float *out, size_t L,
                                 size_t S, size_t E)
{
    attn_problem p;
    memset(&p, 0, sizeof p);
    p.dtype = ATTN_F32;
    p.B = 1, p.L = L, p.S = S, p.E = E, p.Ev = E;
    p.scale = 1.0 / sqrt((double)E);
    p.q = (attn_mat){(void *)q, NULL, (ptrdiff_t)E, 1, ATTN_ST_BF16};
    p.k = (attn_mat){(void *)k, NULL, (ptrdiff_t)E, 1, ATTN_ST_BF16};
    p.v = (attn_mat){(void *)v, NULL, (ptrdiff_t)E, 1, ATTN_ST_BF16};
    p.out = (attn_mat){out, NULL, (ptrdiff_t)E, 1, ATTN_ST_NATIVE};
    return p;
}

/* ATTNPY_BF16_DOT = value, read afresh: the choice and a plan's kernel */
static int choice_with_env(const char *value)
{
    set_env("ATTNPY_BF16_DOT", value);
    attn__dpbf16_choice_reset();
    return attn__dpbf16_choice();
}

static void test_env(int measured)
{
    const int other = measured == ATTN_DP_VDP ? ATTN_DP_FMA : ATTN_DP_VDP;
    const char *name = other == ATTN_DP_VDP ? "Vdp" : "fMa";
    CHECK(choice_with_env(name) == other && attn__dpbf16_choice() == other,
          "env %s: choice %d", name, attn__dpbf16_choice());
    CHECK(one_of_two(choice_with_env("neither")), "env neither: %d",
          attn__dpbf16_choice());
    if (!bf16_cpu() || attn_set_isa("avx512") != 0)
        return;
    uint16_t q[4 * 8] = {0}, k[4 * 8] = {0}, v[4 * 8] = {0};
    float out[4 * 8];
    const attn_problem p = bf16_problem(q, k, v, out, 4, 4, 8);
    const attn_isa_desc *d = attn__isa_current();
    attn__dpbf16_mode = 0;
    CHECK(choice_with_env(name) == other && attn__dpbf16_plan(&p, d) == other,
          "env %s: the plan takes %d", name, attn__dpbf16_plan(&p, d));
    attn__dpbf16_mode = measured;
    CHECK(attn__dpbf16_plan(&p, d) == measured,
          "a test's attn__dpbf16_mode %d: the plan takes %d", measured,
          attn__dpbf16_plan(&p, d));
    attn__dpbf16_mode = 0;
    attn_set_isa("auto");
}

/* out of one call, the kernel chosen through the variable (mode 0) or
 * forced by attn__dpbf16_mode                                          */
static void run(const attn_problem *p0, float *out, const char *env, int mode)
{
    attn_problem p = *p0;
    p.out.data = out;
    choice_with_env(env);
    attn__dpbf16_mode = mode;
    attn_exec ex = {1 + (int)irand(2), NULL, NULL};
    CHECK(attn_sdpa(&p, &ex) == ATTN_OK, "bits: call L%zu S%zu E%zu", p.L,
          p.S, p.E);
    attn__dpbf16_mode = 0;
}

static void test_bits(size_t L, size_t S, size_t E)
{
    uint16_t *q = malloc(L * E * 2), *k = malloc(S * E * 2),
             *v = malloc(S * E * 2);
    float *out[4];
    for (int i = 0; i < 4; i++)
        out[i] = malloc(L * E * sizeof(float));
    CHECK(q && k && v && out[0] && out[1] && out[2] && out[3], "malloc");
    for (size_t i = 0; i < L * E; i++)
        q[i] = attn_f32_to_bf16((float)(4 * urand() - 2));
    for (size_t i = 0; i < S * E; i++) {
        k[i] = attn_f32_to_bf16((float)(4 * urand() - 2));
        v[i] = attn_f32_to_bf16((float)(urand() - 0.5));
    }
    const attn_problem p = bf16_problem(q, k, v, out[0], L, S, E);
    run(&p, out[0], "vdp", 0);
    run(&p, out[1], "fma", 0);
    run(&p, out[2], "", ATTN_DP_VDP);
    run(&p, out[3], "", ATTN_DP_FMA);
    for (int i = 1; i < 4; i++)
        CHECK(memcmp(out[0], out[i], L * E * sizeof(float)) == 0,
              "bits L%zu S%zu E%zu: way %d differs from vdp", L, S, E, i);
    free(q), free(k), free(v);
    for (int i = 0; i < 4; i++)
        free(out[i]);
}

int main(int argc, char **argv)
{
    const int count = argc > 1 ? atoi(argv[1]) : 8;
    const clock_t t0 = clock();
    printf("AVX512-BF16: %s\n", bf16_cpu() ? "yes" : "no");
    test_parse();
    const int measured = test_measure();
    test_once();
    test_env(measured);
    /* the pair chain where the CPU has it; elsewhere the default set */
    if (bf16_cpu())
        CHECK(attn_set_isa("avx512") == 0, "isa avx512");
    for (int n = 0; n < count; n++)
        test_bits(1 + irand(150), 1 + irand(300), 2 * (1 + irand(48)));
    test_bits(130, 257, 64);
    attn_set_isa("auto");
    return check_summary(t0);
}
