/*
 * test_variants.c -- C tests of the attention variants of attn.h (the
 * fields at the end of attn_problem: pos_shift, window, ALiBi, softcap),
 * without Python:
 *
 *   the naive oracle against plain attention given the equivalent explicit
 *     mask and bias (computed here from attn.h's formulas, in double):
 *     out, weights, raw scores and lse
 *   the naive backward against finite differences of the naive forward
 *     (softcap's factor in dQ/dK, dbias = dS)
 *   attn_sdpa (tile path, and the split-K decode path for L <= 4) against
 *     the oracle on every instruction set this CPU has, bitwise the same
 *     for 1, 2, 3 and 4 threads and with / without weights
 *   attn_sdpa_backward against the naive backward, bitwise over threads
 *   the decode path with a window over a long sequence: right against the
 *     oracle, and (Linux) never touching a key outside the window: K and V
 *     outside it are unreadable pages
 *
 * Every random problem of test_core.c's generators gets random variants
 * (both window sides or one, both causal alignments, pos_shift, per-b
 * ALiBi slopes, softcap) on top of its layouts, mask, bias, policies.
 * Build as the other programs (tests/c/test_c_core.py); prints one line per
 * failure and "N passed, M failed"; exit status 1 on any failure.
 */
#define TEST_DECODE_MAIN test_decode_main
#include "test_decode.c"
#undef main
#define TEST_BWD_MAIN test_bwd_main
#include "test_bwd.c"
#undef main

#ifdef __linux__
#include <sys/mman.h>
#endif

/* ------------------------------------------------------------------------ */
/* random variants                                                          */
/* ------------------------------------------------------------------------ */

/* |x| for the unbounded side of a window (attn.h)                        */
static ptrdiff_t pabs(ptrdiff_t x) { return x < 0 ? -x : x; }

/* 1 while backward problems are drawn: ALiBi slopes that keep every
 * weight above FLT_MIN (the kernels' exp flushes below it, libm's goes
 * subnormal: against an inf in dout that is inf * tiny against a skipped
 * 0) and no cap under which the scores saturate (1 - tanh^2 rounds to 0
 * or an ulp: times an inf in dout, NaN or inf either way)               */
static int in_bwd;

/* the prob_hook: random variants, at least one of them on               */
static void add_variants(prob *t)
{
    attn_problem *p = &t->p;
    const ptrdiff_t n = (ptrdiff_t)(p->L + p->S);
    do {
        p->pos_shift = irand(3) == 0 ? (ptrdiff_t)irand(2 * n + 1) - n : 0;
        p->window = irand(2);
        p->softcap = irand(3) == 0
                         ? (double[]){0.5, 3.0, 30.0}[in_bwd + irand(3 - in_bwd)]
                         : 0.0;
        if (irand(3) == 0 && !t->alibi.buf) {
            const size_t esz = p->dtype == ATTN_F32 ? 4 : 8;
            op_make(&t->alibi, p->B, 1, 1, esz, LAY_ANY);
            for (size_t b = 0; b < p->B; b++)
                op_set(&t->alibi, b, 0, 0,
                       irand(5) ? urand() * (in_bwd ? 0.04 : 0.6)
                       : irand(2) ? 0.0 : -0.01);
            p->alibi = t->alibi.m;
        }
    } while (!p->pos_shift && !p->window && !p->softcap && !p->alibi.data);
    const ptrdiff_t unb = n + pabs(p->pos_shift);
    const int side = (int)irand(3); /* 0 both, 1 left only, 2 right only */
    p->wleft = side == 2 ? unb : (ptrdiff_t)irand(p->S / 2 + 3);
    p->wright = side == 1 ? unb : (ptrdiff_t)irand(p->S / 2 + 3);
}

static void describe_v(const prob *t, char *d, size_t n)
{
    const attn_problem *p = &t->p;
    char base[400];
    describe(t, base, sizeof base);
    snprintf(d, n, "%s shift=%td window=%d(%td,%td) alibi=%d softcap=%g",
             base, p->pos_shift, p->window, p->wleft, p->wright,
             p->alibi.data != NULL, p->softcap);
}

/* ------------------------------------------------------------------------ */
/* the oracle against the equivalent plain problem                          */
/* ------------------------------------------------------------------------ */

/* may query i see key j (causality and window, attn.h, written here
 * without variants.h), and the final score given the raw dot product    */
static int v_allowed(const attn_problem *p, size_t i, size_t j)
{
    ptrdiff_t ip = (ptrdiff_t)i + p->pos_shift, jj = (ptrdiff_t)j;
    if (p->causal == ATTN_CAUSAL_BOTTOM_RIGHT)
        ip += (ptrdiff_t)p->S - (ptrdiff_t)p->L;
    if (p->causal != ATTN_CAUSAL_NONE && jj > ip)
        return 0;
    return !p->window || (jj >= ip - p->wleft && jj <= ip + p->wright);
}

static double v_extra(const prob *t, size_t b, size_t i, size_t j, double dot)
{
    const attn_problem *p = &t->p;
    double s = p->scale * dot, x = 0;
    if (p->softcap > 0)
        x = p->softcap * tanh(s / p->softcap); /* replaces the scaled dot */
    if (p->bias.data)
        x += op_get(&t->bias, b, i, j);
    if (p->alibi.data) {
        ptrdiff_t ip = (ptrdiff_t)i + p->pos_shift;
        if (p->causal == ATTN_CAUSAL_BOTTOM_RIGHT)
            ip += (ptrdiff_t)p->S - (ptrdiff_t)p->L;
        x -= op_get(&t->alibi, b, 0, 0) * (double)pabs(ip - (ptrdiff_t)j);
    }
    return x;
}

static void oracle_equiv_one(void)
{
    prob t;
    prob_random(&t, 0);
    attn_problem *p = &t.p;
    char d[600];
    describe_v(&t, d, sizeof d);
    const size_t esz = p->dtype == ATTN_F32 ? 4 : 8;
    operand lse, lse2, m2, b2;
    op_make(&lse, p->B, p->L, 1, esz, LAY_OUTPUT);
    op_fill_sentinel(&lse, -12345.0);
    op_twin(&lse2, &lse);
    memcpy(lse2.buf, lse.buf, lse.nbytes);
    /* the same problem, plain: explicit mask and bias; with softcap the
     * capped score goes into the bias and the scale is 0              */
    op_make(&m2, p->B, p->L, p->S, 1, LAY_OUTPUT);
    op_make(&b2, p->B, p->L, p->S, esz, LAY_OUTPUT);
    for (size_t b = 0; b < p->B; b++)
        for (size_t i = 0; i < p->L; i++)
            for (size_t j = 0; j < p->S; j++) {
                double dot = 0;
                for (size_t e = 0; e < p->E; e++)
                    dot += op_get(&t.q, b, i, e) * op_get(&t.k, b, j, e);
                int ok = v_allowed(p, i, j)
                         && (!p->mask.data
                             || t.mask.buf[op_index(&t.mask, b, i, j)]);
                op_set(&m2, b, i, j, ok);
                op_set(&b2, b, i, j, v_extra(&t, b, i, j, dot));
            }
    prob_sentinel(&t);
    prob_target(&t, 1);
    p->lse = lse.m;
    attn_status st = attn_sdpa_naive(p);
    attn_problem q = *p;
    q.pos_shift = q.wleft = q.wright = 0;
    q.window = 0;
    q.softcap = 0;
    memset(&q.alibi, 0, sizeof q.alibi);
    q.causal = ATTN_CAUSAL_NONE;
    q.mask = m2.m;
    q.bias = b2.m;
    if (p->softcap > 0)
        q.scale = 0;
    prob_target(&t, 0);
    q.out = t.p.out;
    q.weights = t.p.weights;
    q.scores = t.p.scores;
    q.lse = lse2.m;
    attn_status st2 = attn_sdpa_naive(&q);
    CHECK(st == st2, "oracle status %d, equivalent plain %d: %s", (int)st,
          (int)st2, d);
    if (st == ATTN_OK && st2 == ATTN_OK) {
        const double tol = esz == 4 ? 1e-4 : 1e-10;
        double me = 0;
        size_t bad = cmp_buf(&t.out_n, &t.out, tol * (t.vmax + 1), tol, &me)
                     + cmp_buf(&lse, &lse2, tol * 10, tol, &me);
        if (t.w.buf)
            bad += cmp_buf(&t.w_n, &t.w, tol, tol, &me);
        if (t.sc.buf)
            bad += cmp_buf(&t.sc_n, &t.sc, 0, 0, NULL);
        CHECK(bad == 0, "oracle vs the equivalent plain problem: %zu "
              "mismatches (worst %.3g x tol): %s", bad, me, d);
    }
    op_free(&m2);
    op_free(&b2);
    free(lse2.buf);
    op_free(&lse);
    prob_free(&t);
}

/* ------------------------------------------------------------------------ */
/* the fast forward against the oracle, bitwise over 1..4 threads          */
/* ------------------------------------------------------------------------ */
static void check_fwd_threads(prob *t, const char *isa)
{
    static const int nts[] = {2, 3, 4};
    char d[600];
    describe_v(t, d, sizeof d);
    check_threads_bitwise(t, isa, d, nts, sizeof nts / sizeof *nts);
}

static void test_fwd_variants(const char *isa, int count)
{
    for (int it = 0; it < count; it++) {
        prob t;
        if (it % 2)
            prob_decode(&t, it % 8 == 1 ? 5000 : 1500);
        else
            prob_random(&t, it % 20 == 0);
        check_fwd_threads(&t, isa);
        prob_free(&t);
    }
}

/* ------------------------------------------------------------------------ */
/* decode with a window over a long sequence                                */
/* ------------------------------------------------------------------------ */

/* L rows against S keys, window (wl, wr) around the bottom-right
 * aligned rows, each variant in turn                                    */
static void test_decode_window_long(const char *isa)
{
    static const size_t Ls[] = {1, 3, 4};
    for (int s = 0; s < 3; s++) {
        prob t;
        prob_simple(&t, s == 1 ? ATTN_F64 : ATTN_F32, 2, Ls[s], 12000, 64,
                    64);
        attn_problem *p = &t.p;
        p->causal = s == 2 ? ATTN_CAUSAL_NONE : ATTN_CAUSAL_BOTTOM_RIGHT;
        p->window = 1;
        p->wleft = 300 + 77 * s;
        p->wright = s == 2 ? 5 : 0;
        p->pos_shift = s == 2 ? -1000 : 0;
        p->softcap = s == 1 ? 5.0 : 0.0;
        if (s == 0) {
            op_make(&t.alibi, p->B, 1, 1, 4, LAY_ANY);
            op_set(&t.alibi, 0, 0, 0, 0.01);
            op_set(&t.alibi, 1, 0, 0, 0.3);
            p->alibi = t.alibi.m;
        }
        prob_outputs(&t, s == 2, 0);
        run_naive(&t);
        check_fwd_threads(&t, isa);
        prob_free(&t);
    }
}

#ifdef __linux__
/* K and V of one long sequence in pages that cannot be read, but for
 * the rows of a window: a decode that reads outside it crashes         */
static void test_window_reads(void)
{
    const size_t S = 65536, E = 128, W = 256, page = 4096;
    const size_t bytes = S * E * sizeof(float);
    float *kv[2];
    for (int x = 0; x < 2; x++) {
        kv[x] = mmap(NULL, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
        CHECK(kv[x] != MAP_FAILED, "mmap");
        if (kv[x] == MAP_FAILED)
            return;
    }
    /* the window: keys S - W .. S - 1 (rows are 512 bytes, page aligned) */
    const size_t first = (S - W) * E * sizeof(float) / page * page;
    for (int x = 0; x < 2; x++) {
        mprotect((char *)kv[x] + first, bytes - first, PROT_READ | PROT_WRITE);
        for (size_t j = S - W; j < S; j++)
            for (size_t e = 0; e < E; e++)
                kv[x][j * E + e] = (float)sin((double)(j * 7 + e * (x + 3)));
    }
    float q[128], out[128], out_n[128];
    for (size_t e = 0; e < E; e++)
        q[e] = (float)cos((double)e);
    attn_problem p;
    memset(&p, 0, sizeof p);
    p.dtype = ATTN_F32;
    p.B = 1;
    p.L = 1;
    p.S = S;
    p.E = p.Ev = E;
    p.q = (attn_mat){q, NULL, (ptrdiff_t)E, 1, ATTN_ST_NATIVE};
    p.k = (attn_mat){kv[0], NULL, (ptrdiff_t)E, 1, ATTN_ST_NATIVE};
    p.v = (attn_mat){kv[1], NULL, (ptrdiff_t)E, 1, ATTN_ST_NATIVE};
    p.scale = 1.0 / sqrt((double)E);
    p.causal = ATTN_CAUSAL_BOTTOM_RIGHT;
    p.window = 1;
    p.wleft = (ptrdiff_t)W - 1;
    p.wright = 0;
    p.out = (attn_mat){out_n, NULL, (ptrdiff_t)E, 1, ATTN_ST_NATIVE};
    /* the oracle reads every key: give it the window's keys only */
    attn_problem pn = p;
    pn.S = W;
    pn.k.data = kv[0] + (S - W) * E;
    pn.v.data = kv[1] + (S - W) * E;
    pn.window = 0;
    CHECK(attn_sdpa_naive(&pn) == ATTN_OK, "naive");
    p.out.data = out;
    for (int nt = 1; nt <= 4; nt++) {
        attn_exec ex = {nt, NULL, NULL};
        CHECK(attn_sdpa(&p, &ex) == ATTN_OK, "decode with a window");
        double err = 0;
        for (size_t e = 0; e < E; e++)
            err = fmax(err, fabs((double)out[e] - (double)out_n[e]));
        CHECK(err < 1e-5, "windowed decode over unreadable keys: error %g "
              "(%d threads)", err, nt);
    }
    munmap(kv[0], bytes);
    munmap(kv[1], bytes);
}
#endif

int main(int argc, char **argv)
{
    int count = argc > 1 ? atoi(argv[1]) : 8;
    uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 10) : 777;
    clock_t t0 = clock();
    attn__min_flops_per_thread = 0; /* use threads even on tiny problems */
    prob_hook = add_variants;
    rng_state = seed;
    for (int it = 0; it < 4 * count; it++)
        oracle_equiv_one();
    rng_state = seed + 99;
    in_bwd = 1;
    test_bwd_fd(count / 4 + 2);
    in_bwd = 0;
    for (int i = 0; i < CHECK_NISA; i++) {
        if (!check_use_isa(i))
            continue;
        rng_state = seed + (uint64_t)i;
        const int cnt = check_count(i, count);
        test_fwd_variants(check_isa(i), 2 * cnt);
        test_decode_window_long(check_isa(i));
        in_bwd = 1;
        test_bwd_random(check_isa(i), cnt, 0);
        test_bwd_random(check_isa(i), cnt / 10 + 1, 1);
        in_bwd = 0;
        printf("  worst error / tolerance: f32 %.3f, f64 %.3f\n",
               max_err_seen[0], max_err_seen[1]);
        max_err_seen[0] = max_err_seen[1] = 0;
    }
    CHECK(attn_set_isa("auto") == 0, "set_isa(auto)");
#ifdef __linux__
    test_window_reads();
#else
    printf("unreadable pages: not on this system, not tested\n");
#endif
    return check_summary(t0);
}
