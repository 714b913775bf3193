/*
 * test_variants_tile.c -- the attention variants of attn.h (pos_shift,
 * window, ALiBi, softcap) in the tiled kernels, without Python:
 *
 *   attn_sdpa (tile path, every instruction set this CPU has) against
 *     attn_sdpa_naive: out, weights, raw scores, status and the first
 *     fully masked row; 1 and 2 threads bitwise equal
 *   attn_sdpa_backward against attn_sdpa_backward_naive: dq, dk, dv,
 *     dbias; 1, 2, 3 and 7 threads bitwise equal
 *   window block skipping: a window's result does not depend on the keys
 *     outside every window (they are NaN here: touching them would show)
 *
 * The random problems are test_core.c's and test_bwd.c's (every layout,
 * mask, bias, causal alignment, fully_masked policy, inf/NaN elements):
 * this file includes test_bwd.c (which includes test_core.c) and routes
 * their oracle calls through var_inject, which first gives the problem
 * random variant fields (each on about half the time, all off about one
 * problem in six), so the fast path and the oracle see the same problem.
 * Problems of at most ATTN_DECODE_MAX_L query rows go to the decode kernel
 * (attention/decode.c), not the tile: they are left plain here.
 */
#define _GNU_SOURCE
#include "attn.h"

static void var_inject(attn_problem *p);
/* the oracles of the included programs: variants first, then the oracle
 * (a function-like macro does not expand inside itself)                 */
#define attn_sdpa_naive(p) (var_inject(p), attn_sdpa_naive(p))

#define TEST_BWD_MAIN test_bwd_main
#include "test_bwd.c"
#undef main

/* problems of at most this many rows are test_variants.c's (decoding) */
#define SHORT_L 4

static float slopes_f32[8];
static double slopes_f64[8];
static const ptrdiff_t slope_boff[8] = {0, 1, 2, 3, 4, 5, 6, 7};
static int in_bwd; /* 1: backward problems */

/* random variant fields for p (kept if p has some already: the second
 * oracle call of test_bwd.c's bprob_make sees the first one's problem)  */
static void var_inject(attn_problem *p)
{
    if (p->L <= SHORT_L || p->B > 8)
        return;
    if (p->pos_shift || p->window || p->alibi.data || p->softcap > 0)
        return;
    const ptrdiff_t L = (ptrdiff_t)p->L, S = (ptrdiff_t)p->S;
    if (irand(3) == 0)
        p->pos_shift = (ptrdiff_t)irand((size_t)(2 * (L + S) + 1)) - (L + S);
    const ptrdiff_t ps = p->pos_shift < 0 ? -p->pos_shift : p->pos_shift;
    const ptrdiff_t unb = L + S + ps;
    if (irand(2)) {
        p->window = 1;
        p->wleft = irand(4) == 0 ? unb : (ptrdiff_t)irand((size_t)S + 40);
        p->wright = irand(3) == 0 ? unb : (ptrdiff_t)irand((size_t)S / 2 + 5);
    }
    if (irand(3) == 0) {
        for (int b = 0; b < 8; b++) {
            /* backward: slopes that keep every weight above FLT_MIN (the
             * kernels' exp flushes below it, libm's goes subnormal: with
             * an inf in dout that is inf * tiny against a skipped 0) */
            slopes_f64[b] = irand(4) == 0 ? 0.0
                            : urand() * (irand(2) && !in_bwd ? 1 : 0.04);
            slopes_f32[b] = (float)slopes_f64[b];
        }
        p->alibi.data = p->dtype == ATTN_F32 ? (void *)slopes_f32
                                             : (void *)slopes_f64;
        p->alibi.boff = irand(3) ? slope_boff : NULL;
    }
    /* backward: no cap under which these scores saturate (tanh within an
     * ulp of 1: the factor 1 - tanh^2 is 0 or an ulp by rounding, and an
     * inf in dout (test_bwd.c) turns it into NaN or inf: ill-posed) */
    if (irand(3) == 0)
        p->softcap = (double[]){0.3, 2.0, 5.0, 30.0}[irand(3) + in_bwd];
    if (getenv("VAR_DEBUG"))
        printf("variants: L=%zu S=%zu pos_shift=%td window=%d (%td, %td) "
               "alibi=%d softcap=%g\n", p->L, p->S, p->pos_shift, p->window,
               p->wleft, p->wright, p->alibi.data != NULL, p->softcap);
}

/* Windows of 12 keys (8 left, 3 right; causal: 8 left) for 100 query
 * rows at key positions 250 .. 349 (pos_shift) over S = 600 keys: the
 * oracle runs on finite keys, then every key no window reaches (K and V
 * rows) is set to NaN: a kernel that touched one would return NaN.      */
static void test_window_skips(const char *isa)
{
    for (int it = 0; it < 4; it++) {
        prob t;
        prob_simple(&t, it & 1 ? ATTN_F64 : ATTN_F32, 2, 100, 600, 16, 16);
        attn_problem *p = &t.p;
        p->causal = it & 2 ? ATTN_CAUSAL_TOP_LEFT : ATTN_CAUSAL_NONE;
        p->window = 1;
        p->wleft = 8;
        p->wright = 3;
        p->pos_shift = 250;
        prob_outputs(&t, 0, 0);
        run_naive(&t);
        for (size_t b = 0; b < p->B; b++)
            for (size_t j = 0; j < p->S; j++)
                for (size_t e = 0; j + 8 < 250 || j > 352 ? e < 16 : 0; e++) {
                    op_set(&t.k, b, j, e, NAN);
                    op_set(&t.v, b, j, e, NAN);
                }
        check_fast(&t, isa, 2);
        prob_free(&t);
    }
}

int main(int argc, char **argv)
{
    int count = argc > 1 ? atoi(argv[1]) : 8;
    uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 10) : 777;
    clock_t t0 = clock();
    attn__min_flops_per_thread = 0; /* use threads even on tiny problems */
    for (int i = 0; i < CHECK_NISA; i++) {
        if (!check_use_isa(i))
            continue;
        rng_state = seed + (uint64_t)i;
        const int cnt = check_count(i, count);
        test_random_problems(check_isa(i), 2 * cnt, 0);
        test_random_problems(check_isa(i), cnt / 5 + 1, 1);
        in_bwd = 1;
        test_bwd_random(check_isa(i), cnt, 0);
        test_bwd_random(check_isa(i), cnt / 10 + 1, 1);
        in_bwd = 0;
        test_window_skips(check_isa(i));
        printf("  worst error / tolerance: f32 %.3f, f64 %.3f\n",
               max_err_seen[0], max_err_seen[1]);
        max_err_seen[0] = max_err_seen[1] = 0;
    }
    CHECK(attn_set_isa("auto") == 0, "set_isa(auto)");
    return check_summary(t0);
}
