/*
 * test_decode.c -- C tests of the decoding parts of the core, without
 * Python:
 *
 *   decode-shaped problems of attn_sdpa (L = 1 to 8, keys spanning many
 *     chunks) on every instruction set this CPU has, against the naive
 *     oracle: every layout, mask (also padding masks that leave whole
 *     chunks empty), bias, causal alignment, fully_masked policy, weights
 *     and raw scores; bitwise the same for 1, 2, 3 and 5 threads, and out
 *     the same bits with and without weights; a long single-head sequence
 *     (S = 65553); the poll / cancel protocol, whole and split calls
 *   batch-invariant bits: every row of random tile and decode problems
 *     alone (L = 1 at its own key position, 1 to 4 threads) gives the bits
 *     of the row in the whole call, out and lse; a token by token decode
 *     (row i against keys 0 .. i) gives the full causal pass
 *   attn_merge: attention over key ranges merged by lse equals attention
 *     over all keys; all -inf rows give 0 and -inf; NaN propagates
 *   attn_rope: both conventions against the formula, in place, strided
 *
 * It reuses test_core.c's random operands, oracle and checks by including
 * it (its main renamed). Build (tests/c/test_c_core.py does this):
 *   gcc -std=c11 -Wall -Wextra -Werror -O1 -g -pthread -Icsrc/core \
 *       tests/c/test_decode.c $(find csrc/core -name "*.c") -lm -o test_decode
 * Prints one line per failure and "N passed, M failed"; exit status 1 on
 * any failure.
 */
#undef main
#define main test_core_main
#include "test_core.c"
#undef main
#include "attention/variants.h"
#include "runtime/pool.h"
#ifdef TEST_DECODE_MAIN /* included by test_variants.c */
#define main TEST_DECODE_MAIN
#endif


/* ------------------------------------------------------------------------ */
/* the decode path against the oracle, bitwise over thread counts           */
/* ------------------------------------------------------------------------ */

/* a random decode problem: few rows, keys spanning many chunks            */
static void prob_decode(prob *t, size_t max_s)
{
    static const size_t Ls[] = {1, 1, 1, 2, 3, 4, 4, 5, 8};
    static const size_t Ss[] = {0,   1,   15,  16,   17,   100, 255,
                                256, 257, 700, 1500, 3000, 5000};
    static const size_t Es[] = {0, 1, 3, 8, 16, 17, 64, 128};
    memset(t, 0, sizeof *t);
    attn_problem *p = &t->p;
    p->dtype = irand(2) ? ATTN_F64 : ATTN_F32;
    p->B = 1 + irand(3);
    p->L = pick(Ls, sizeof Ls / sizeof *Ls);
    do
        p->S = pick(Ss, sizeof Ss / sizeof *Ss);
    while (p->S > max_s);
    p->E = pick(Es, sizeof Es / sizeof *Es);
    p->Ev = irand(3) ? p->E : pick(Es, sizeof Es / sizeof *Es);
    prob_features(t);
    if (p->mask.data && irand(2)) {
        /* a padding mask: batch item b sees its first len_b keys, often
         * leaving whole chunks without a visible key */
        for (size_t b = 0; b < p->B; b++) {
            size_t len = irand(p->S + 1);
            for (size_t r = 0; r < p->L; r++)
                for (size_t j = 0; j < p->S; j++)
                    op_set(&t->mask, b, r, j, j < len);
        }
        run_naive(t);
    }
}

static int same_bytes(const operand *o, const unsigned char *ref)
{
    return !o->buf || memcmp(o->buf, ref, o->nbytes) == 0;
}

/* check_fast at 1 thread, then at each of the n thread counts nts: the
 * same bits each time; and, when weights or scores were asked for, the
 * same output without them (d describes the problem)                     */
static void check_threads_bitwise(prob *t, const char *isa, const char *d,
                                  const int *nts, size_t n)
{
    check_fast(t, isa, 1);
    unsigned char *o1 = dup_buf(&t->out), *w1 = dup_buf(&t->w),
                  *s1 = dup_buf(&t->sc);
    for (size_t k = 0; k < n; k++) {
        check_fast(t, isa, nts[k]);
        if (t->st_naive == ATTN_OK)
            CHECK(same_bytes(&t->out, o1) && same_bytes(&t->w, w1)
                      && same_bytes(&t->sc, s1),
                  "[%s] 1 and %d threads differ bitwise: %s", isa, nts[k], d);
    }
    if (t->st_naive == ATTN_OK && (t->w.buf || t->sc.buf)) {
        attn_exec ex = {nts[0], NULL, NULL};
        memset(&t->p.weights, 0, sizeof t->p.weights);
        memset(&t->p.scores, 0, sizeof t->p.scores);
        op_fill_sentinel(&t->out, -12345.0);
        CHECK(attn_sdpa(&t->p, &ex) == ATTN_OK && same_bytes(&t->out, o1),
              "[%s] out differs with/without weights: %s", isa, d);
    }
    free(o1);
    free(w1);
    free(s1);
}

/* the decode problems at 1, 2, 3 and 5 threads                          */
static void check_threads(prob *t, const char *isa)
{
    static const int nts[] = {2, 3, 5};
    char d[400];
    describe(t, d, sizeof d);
    check_threads_bitwise(t, isa, d, nts, sizeof nts / sizeof *nts);
}

static void test_decode_random(const char *isa, int count)
{
    for (int it = 0; it < count; it++) {
        prob t;
        prob_decode(&t, it % 4 ? 1500 : 5000);
        check_threads(&t, isa);
        prob_free(&t);
    }
}

/* one query against a long sequence: many chunks, one batch item        */
static void test_decode_long(const char *isa)
{
    static const size_t shapes[][4] = {{1, 1, 65553, 128}, {2, 3, 20000, 64}};
    for (int s = 0; s < 2; s++) {
        prob t;
        attn_dtype dt = s ? ATTN_F64 : ATTN_F32;
        prob_simple(&t, dt, shapes[s][0], shapes[s][1], shapes[s][2],
                    shapes[s][3], shapes[s][3]);
        t.p.causal = s ? ATTN_CAUSAL_BOTTOM_RIGHT : ATTN_CAUSAL_NONE;
        prob_outputs(&t, 0, 0);
        run_naive(&t);
        check_threads(&t, isa);
        prob_free(&t);
    }
}

/* another caller holding the pool: a call then runs every item on its
 * own thread, the one that polls (runtime/pool.c), whatever the load,
 * so which items are followed by a poll does not depend on timing      */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int held, release;
    pthread_t th;
} pool_hold;

static void hold_task(void *arg, int t)
{
    pool_hold *h = arg;
    if (t != 0)
        return;
    pthread_mutex_lock(&h->mu);
    h->held = 1;
    pthread_cond_broadcast(&h->cv);
    while (!h->release)
        pthread_cond_wait(&h->cv, &h->mu);
    pthread_mutex_unlock(&h->mu);
}

static void *hold_thread(void *arg)
{
    attn_pool_run(hold_task, arg, 2);
    return NULL;
}

static int pool_hold_start(pool_hold *h)
{
    memset(h, 0, sizeof *h);
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    if (pthread_create(&h->th, NULL, hold_thread, h) != 0)
        return 0;
    pthread_mutex_lock(&h->mu);
    while (!h->held)
        pthread_cond_wait(&h->cv, &h->mu);
    pthread_mutex_unlock(&h->mu);
    return 1;
}

static void pool_hold_end(pool_hold *h)
{
    pthread_mutex_lock(&h->mu);
    h->release = 1;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    pthread_join(h->th, NULL);
    pthread_mutex_destroy(&h->mu);
    pthread_cond_destroy(&h->cv);
}

/* a split call's polls by pass: the one row's out is NaN (set before the
 * call) until its merge item writes it, so a poll that still sees NaN
 * follows a chunk item; the answer: stop at poll number `stop_at`     */
typedef struct {
    const float *out0;
    int chunk, merge, stop_at;
} pass_polls;

static int pass_poll_fn(void *ctx)
{
    pass_polls *c = ctx;
    if (isnan(*c->out0))
        c->chunk++;
    else
        c->merge++;
    return c->chunk + c->merge == c->stop_at;
}

/* the calling thread polls between items; a nonzero answer stops the call */
static void test_decode_poll(void)
{
    prob t;
    /* 8 one-row items, one thread: a poll after each of them           */
    prob_simple(&t, ATTN_F32, 8, 1, 20000, 16, 16);
    prob_outputs(&t, 1, 0); /* with weights: their pass polls too       */
    run_naive(&t);
    prob_target(&t, 0);
    long long saved = attn__poll_interval_ns;
    attn__poll_interval_ns = 0; /* poll after every work item */
    attn_exec ex = {1, poll_fn, NULL};
    poll_count = 0;
    poll_stop_after = 1000000;
    CHECK(attn_sdpa(&t.p, &ex) == ATTN_OK && poll_count >= 8,
          "decode: poll after every item (%d polls)", poll_count);
    poll_count = 0;
    poll_stop_after = 3;
    attn_status st = attn_sdpa(&t.p, &ex);
    CHECK(st == ATTN_EINTERRUPTED && poll_count == 4,
          "decode: a nonzero poll stops the call (status %d, %d polls)",
          (int)st, poll_count);
    prob_free(&t);
    /* one row, two threads: the keys split into chunk items, then a merge
     * item; with the pool held elsewhere the caller runs (and polls after)
     * every item: polls in both passes, and a stop in the first ends the
     * call before the merge                                             */
    prob_simple(&t, ATTN_F32, 1, 1, 20000, 16, 16);
    prob_outputs(&t, 1, 0);
    run_naive(&t);
    prob_target(&t, 0);
    float *out0 = (float *)t.p.out.data
                  + (t.p.out.boff ? t.p.out.boff[0] : 0);
    pass_polls pp = {out0, 0, 0, -1};
    attn_exec ex2 = {2, pass_poll_fn, &pp};
    pool_hold hold;
    const int held = pool_hold_start(&hold);
    CHECK(held, "decode, split call: could not start the pool holder");
    *out0 = NAN;
    st = attn_sdpa(&t.p, &ex2);
    CHECK(st == ATTN_OK && pp.chunk >= 2 && pp.merge == 1,
          "decode, split call: polls in both passes (status %d, %d polls "
          "after chunk items, %d after the merge item)", (int)st, pp.chunk,
          pp.merge);
    check_fast(&t, "split call", 2); /* and its results are the oracle's */
    pp = (pass_polls){out0, 0, 0, 1};
    *out0 = NAN;
    st = attn_sdpa(&t.p, &ex2);
    CHECK(st == ATTN_EINTERRUPTED && pp.chunk == 1 && pp.merge == 0
              && isnan(*out0),
          "decode, split call: a nonzero poll stops it in the chunk pass "
          "(status %d, %d + %d polls)", (int)st, pp.chunk, pp.merge);
    if (held)
        pool_hold_end(&hold);
    attn__poll_interval_ns = saved;
    prob_free(&t);
}

/* ------------------------------------------------------------------------ */
/* batch-invariant bits: a row alone is the row inside the call             */
/* ------------------------------------------------------------------------ */

static int same_elems(const void *a, const void *b, size_t n, size_t esz)
{
    return memcmp(a, b, n * esz) == 0;
}

/* Every row i of t computed alone (L = 1, pos_shift moved so that it keeps
 * its key position, its rows of mask and bias), at 1 + i % 4 threads,
 * against the whole call at 1 thread: the same bits of out and lse.      */
static void check_rows_alone(prob *t, const char *isa)
{
    const attn_problem *p = &t->p;
    const size_t esz = p->dtype == ATTN_F32 ? 4 : 8, B = p->B, L = p->L;
    const size_t Ev = p->Ev, one = Ev ? Ev : 1;
    if (B == 0 || L == 0 || p->fully_masked == ATTN_FM_RAISE)
        return;
    char d[400];
    describe(t, d, sizeof d);
    unsigned char *out_all = calloc(B * L * one, esz);
    unsigned char *lse_all = calloc(B * L, esz);
    unsigned char *out1 = calloc(B * one, esz), *lse1 = calloc(B, esz);
    ptrdiff_t *bo = malloc(4 * B * sizeof *bo);
    if (!out_all || !lse_all || !out1 || !lse1 || !bo) {
        CHECK(0, "rows alone: out of memory");
        goto done;
    }
    for (size_t b = 0; b < B; b++) {
        bo[b] = (ptrdiff_t)(b * L * Ev);   /* whole: out (b, i, c)       */
        bo[B + b] = (ptrdiff_t)(b * L);    /* whole: lse (b, i)          */
        bo[2 * B + b] = (ptrdiff_t)(b * Ev); /* alone: out (b, 0, c)    */
        bo[3 * B + b] = (ptrdiff_t)b;      /* alone: lse (b, 0)          */
    }
    attn_problem w = *p;
    memset(&w.weights, 0, sizeof w.weights);
    memset(&w.scores, 0, sizeof w.scores);
    w.out = (attn_mat){out_all, bo, (ptrdiff_t)Ev, 1, ATTN_ST_NATIVE};
    w.lse = (attn_mat){lse_all, bo + B, 1, 0, ATTN_ST_NATIVE};
    attn_exec ex = {1, NULL, NULL};
    if (attn_sdpa(&w, &ex) != ATTN_OK) {
        CHECK(0, "[%s] rows alone: the whole call failed: %s", isa, d);
        goto done;
    }
    const ptrdiff_t qpos = attn__var_qpos(p);
    const ptrdiff_t br = p->causal == ATTN_CAUSAL_BOTTOM_RIGHT;
    int ok = 1;
    for (size_t i = 0; i < L && ok; i++) {
        attn_problem r = w;
        r.L = 1;
        r.q.data = (char *)p->q.data + (ptrdiff_t)i * p->q.s0 * (ptrdiff_t)esz;
        if (p->mask.data)
            r.mask.data = (char *)p->mask.data + (ptrdiff_t)i * p->mask.s0;
        if (p->bias.data)
            r.bias.data = (char *)p->bias.data
                          + (ptrdiff_t)i * p->bias.s0 * (ptrdiff_t)esz;
        /* row 0 of r sits where row i of p does */
        r.pos_shift = (ptrdiff_t)i + qpos - (br ? (ptrdiff_t)p->S - 1 : 0);
        r.out = (attn_mat){out1, bo + 2 * B, (ptrdiff_t)Ev, 1, ATTN_ST_NATIVE};
        r.lse = (attn_mat){lse1, bo + 3 * B, 1, 0, ATTN_ST_NATIVE};
        attn_exec exr = {1 + (int)(i % 4), NULL, NULL};
        ok = attn_sdpa(&r, &exr) == ATTN_OK;
        for (size_t b = 0; b < B && ok; b++)
            ok = same_elems(out1 + b * Ev * esz,
                            out_all + (b * L + i) * Ev * esz, Ev, esz)
                 && same_elems(lse1 + b * esz, lse_all + (b * L + i) * esz,
                               1, esz);
        CHECK(ok, "[%s] row %zu alone (%d threads) differs bitwise: %s", isa,
              i, exr.nthreads, d);
    }
done:
    free(out_all);
    free(lse_all);
    free(out1);
    free(lse1);
    free(bo);
}

/* the rows of random tile and decode problems alone; a token by token
 * decode (row i against keys 0 .. i) against the full causal pass       */
static void test_rows_alone(const char *isa, int count)
{
    for (int it = 0; it < count; it++) {
        prob t;
        if (it % 2)
            prob_decode(&t, it % 4 == 1 ? 1500 : 5000);
        else
            prob_random(&t, it % 8 == 0);
        check_rows_alone(&t, isa);
        prob_free(&t);
    }
    for (int dt = 0; dt < 2; dt++) {
        prob t;
        const size_t n = 70 + 40 * (size_t)dt;
        prob_simple(&t, (attn_dtype)dt, 2, n, n, 16, 16);
        t.p.causal = ATTN_CAUSAL_TOP_LEFT;
        prob_outputs(&t, 0, 0);
        check_rows_alone(&t, isa); /* the cache is all of K: row i alone */
        /* ... and with the cache cut to keys 0 .. i: S = i + 1 */
        const size_t esz = dt ? 8 : 4;
        unsigned char *full = calloc(2 * n * 16, esz), *o1 = calloc(32, esz);
        ptrdiff_t bo[4] = {0, (ptrdiff_t)(n * 16), 0, 16};
        attn_problem w = t.p;
        w.out = (attn_mat){full, bo, 16, 1, ATTN_ST_NATIVE};
        attn_exec ex = {2, NULL, NULL};
        int ok = full && o1 && attn_sdpa(&w, &ex) == ATTN_OK;
        for (size_t i = 0; i < n && ok; i++) {
            attn_problem r = w;
            r.L = 1;
            r.S = i + 1;
            r.causal = ATTN_CAUSAL_BOTTOM_RIGHT;
            r.q.data = (char *)t.p.q.data
                       + (ptrdiff_t)i * t.p.q.s0 * (ptrdiff_t)esz;
            r.out = (attn_mat){o1, bo + 2, 16, 1, ATTN_ST_NATIVE};
            attn_exec exr = {1 + (int)(i % 4), NULL, NULL};
            ok = attn_sdpa(&r, &exr) == ATTN_OK
                 && same_elems(o1, full + i * 16 * esz, 16, esz)
                 && same_elems(o1 + 16 * esz, full + (n + i) * 16 * esz, 16,
                               esz);
            CHECK(ok, "[%s] decode step %zu differs from the causal pass",
                  isa, i);
        }
        free(full);
        free(o1);
        prob_free(&t);
    }
}

/* ------------------------------------------------------------------------ */
/* attn_merge                                                               */
/* ------------------------------------------------------------------------ */

/* lse(b, i) over keys [j0, j1), in double: -inf when no key is allowed   */
static double lse_range(const prob *t, size_t b, size_t i, size_t j0,
                        size_t j1)
{
    const attn_problem *p = &t->p;
    double m = -INFINITY, sum = 0, s[5000];
    for (size_t j = j0; j < j1; j++) {
        double dot = 0;
        for (size_t e = 0; e < p->E; e++)
            dot += op_get(&t->q, b, i, e) * op_get(&t->k, b, j, e);
        s[j - j0] = p->mask.data && !t->mask.buf[op_index(&t->mask, b, i, j)]
                        ? -INFINITY : p->scale * dot;
        m = s[j - j0] > m ? s[j - j0] : m;
    }
    if (m == -INFINITY)
        return m;
    for (size_t j = j0; j < j1; j++)
        sum += exp(s[j - j0] - m);
    return m + log(sum);
}

/* partials of the contiguous problem t over key ranges cut at cuts[]     */
static void test_merge_case(attn_dtype dt, size_t B, size_t L, size_t S,
                            size_t E, size_t Ev, size_t K, int masked)
{
    prob t;
    prob_simple(&t, dt, B, L, S, E, Ev);
    operand mask;
    if (masked) {
        op_make(&mask, B, L, S, 1, LAY_OUTPUT);
        for (size_t b = 0; b < B; b++)
            for (size_t i = 0; i < L; i++)
                for (size_t j = 0; j < S; j++) /* row 0 fully masked */
                    op_set(&mask, b, i, j, i > 0 && urand() < 0.3);
        t.mask = mask;
        t.p.mask = mask.m;
    }
    prob_outputs(&t, 0, 0);
    run_naive(&t); /* fully_masked = zero */
    const size_t esz = dt == ATTN_F32 ? 4 : 8;
    size_t cut[6] = {0};
    for (size_t k = 1; k < K; k++)
        cut[k] = cut[k - 1] + irand(S - cut[k - 1] + 1);
    cut[K] = S;
    attn_mat outs[5], lses[5];
    void *bufs[10];
    ptrdiff_t lboff[4] = {0, (ptrdiff_t)L, 2 * (ptrdiff_t)L, 3 * (ptrdiff_t)L};
    for (size_t k = 0; k < K; k++) {
        attn_problem sub = t.p;
        const size_t j0 = cut[k];
        sub.S = cut[k + 1] - j0;
        sub.k.data = (char *)t.k.m.data + (ptrdiff_t)j0 * t.k.m.s0 * (ptrdiff_t)esz;
        sub.v.data = (char *)t.v.m.data + (ptrdiff_t)j0 * t.v.m.s0 * (ptrdiff_t)esz;
        if (masked)
            sub.mask.data = (char *)mask.m.data + (ptrdiff_t)j0 * mask.m.s1;
        bufs[2 * k] = calloc(B * L * (Ev + 1), esz);
        bufs[2 * k + 1] = calloc(B * L, esz);
        ptrdiff_t *ob = malloc(B * sizeof *ob);
        for (size_t b = 0; b < B; b++)
            ob[b] = (ptrdiff_t)(b * L * Ev);
        sub.out = (attn_mat){bufs[2 * k], ob, (ptrdiff_t)Ev, 1, ATTN_ST_NATIVE};
        CHECK(attn_sdpa_naive(&sub) == ATTN_OK, "merge: partial status");
        outs[k] = sub.out;
        lses[k] = (attn_mat){bufs[2 * k + 1], lboff, 1, 0, ATTN_ST_NATIVE};
        for (size_t b = 0; b < B; b++)
            for (size_t i = 0; i < L; i++) {
                double x = lse_range(&t, b, i, j0, cut[k + 1]);
                if (dt == ATTN_F32)
                    ((float *)bufs[2 * k + 1])[b * L + i] = (float)x;
                else
                    ((double *)bufs[2 * k + 1])[b * L + i] = x;
            }
    }
    prob_target(&t, 0);
    op_fill_sentinel(&t.out, -12345.0);
    double lse_got[64];
    attn_mat lse = {lse_got, lboff, 1, 0, ATTN_ST_NATIVE};
    attn_status st = ca_merge(ATTN_F64, 0, 0, 0, 0, t.p.out, lse, outs,
                                lses); /* nothing to do */
    CHECK(st == ATTN_OK, "merge: empty status %d", (int)st);
    if (dt == ATTN_F32) { /* lse as float too */
        float lf[64];
        lse.data = lf;
        st = ca_merge(dt, K, B, L, Ev, t.p.out, lse, outs, lses);
        for (size_t x = 0; x < B * L; x++)
            lse_got[x] = lf[x];
    } else {
        st = ca_merge(dt, K, B, L, Ev, t.p.out, lse, outs, lses);
    }
    CHECK(st == ATTN_OK, "merge: status %d", (int)st);
    const double tol = dt == ATTN_F32 ? 2e-5 : 1e-12;
    double me = 0;
    size_t bad = cmp_buf(&t.out, &t.out_n, tol * (t.vmax + 1e-30), tol, &me);
    CHECK(bad == 0, "merge %s K=%zu B=%zu L=%zu S=%zu: %zu mismatches "
          "(worst %.3g x tol)", dt_name(dt), K, B, L, S, bad, me);
    int lse_ok = 1;
    for (size_t b = 0; b < B; b++)
        for (size_t i = 0; i < L; i++) {
            double want = lse_range(&t, b, i, 0, S), got = lse_got[b * L + i];
            lse_ok &= want == -INFINITY ? got == want
                                        : fabs(got - want) <= tol * (1 + fabs(want));
        }
    CHECK(lse_ok, "merge %s K=%zu S=%zu: lse differs", dt_name(dt), K, S);
    for (size_t k = 0; k < K; k++) {
        free(bufs[2 * k]);
        free(bufs[2 * k + 1]);
        free((void *)outs[k].boff);
    }
    prob_free(&t); /* frees the mask operand too */
}

static void test_merge(void)
{
    for (int it = 0; it < 40; it++) {
        attn_dtype dt = irand(2) ? ATTN_F32 : ATTN_F64;
        test_merge_case(dt, 1 + irand(3), 1 + irand(5), irand(300),
                        1 + irand(40), irand(20), 1 + irand(4), irand(2));
    }
    /* every partial -inf: out 0, lse -inf; a NaN lse: out NaN, lse NaN   */
    double o[2][3] = {{1, 2, 3}, {NAN, 5, 6}}, l[2][2] = {{-INFINITY, 0.5},
                                                           {-INFINITY, NAN}};
    double got[2][3], lg[2];
    ptrdiff_t z[1] = {0};
    attn_mat outs[2] = {{o[0], z, 0, 1, ATTN_ST_NATIVE}, {o[1], z, 0, 1, ATTN_ST_NATIVE}};
    attn_mat lses[2] = {{l[0], z, 1, 0, ATTN_ST_NATIVE}, {l[1], z, 1, 0, ATTN_ST_NATIVE}};
    attn_mat out = {got, z, 3, 1, ATTN_ST_NATIVE}, lse = {lg, z, 1, 0, ATTN_ST_NATIVE};
    CHECK(ca_merge(ATTN_F64, 2, 1, 2, 3, out, lse, outs, lses) == ATTN_OK,
          "merge special status");
    CHECK(lg[0] == -INFINITY && got[0][0] == 0 && got[0][1] == 0
              && got[0][2] == 0 && !signbit(got[0][0]),
          "merge: an all -inf row gives 0, -inf (got %g %g %g, %g)",
          got[0][0], got[0][1], got[0][2], lg[0]);
    CHECK(isnan(lg[1]) && isnan(got[1][0]) && isnan(got[1][2]),
          "merge: a NaN lse gives NaN");
    /* a partial of weight 0 is never read: its NaN does not spread      */
    double l2[2] = {-INFINITY, 0.25};
    double o2[2][3] = {{NAN, NAN, NAN}, {1, 2, 3}};
    attn_mat outs2[2] = {{o2[0], z, 0, 1, ATTN_ST_NATIVE}, {o2[1], z, 0, 1, ATTN_ST_NATIVE}};
    attn_mat lses2[2] = {{&l2[0], z, 1, 0, ATTN_ST_NATIVE}, {&l2[1], z, 1, 0, ATTN_ST_NATIVE}};
    CHECK(ca_merge(ATTN_F64, 2, 1, 1, 3, out, lse, outs2, lses2) == ATTN_OK
              && got[0][0] == 1 && got[0][2] == 3 && lg[0] == 0.25,
          "merge: weight-0 partial spread into the result");
}

/* ------------------------------------------------------------------------ */
/* attn_rope                                                                */
/* ------------------------------------------------------------------------ */
static void test_rope_case(attn_dtype dt, size_t E, int interleaved,
                           double offset, double base)
{
    enum { B = 3, T = 5 };
    const size_t n = B * T * E, esz = dt == ATTN_F32 ? 4 : 8;
    double *x = malloc(n * sizeof *x), *want = malloc(n * sizeof *want);
    unsigned char *in = malloc(n * esz), *tr = malloc(n * esz),
                  *out = malloc(n * esz);
    for (size_t a = 0; a < n; a++) {
        x[a] = urand() * 4 - 2;
        if (dt == ATTN_F32) {
            ((float *)in)[a] = (float)x[a];
            x[a] = ((float *)in)[a];
        } else {
            ((double *)in)[a] = x[a];
        }
    }
    /* the formula, written out directly */
    for (size_t b = 0; b < B; b++)
        for (size_t t = 0; t < T; t++)
            for (size_t i = 0; i < E / 2; i++) {
                size_t ia = interleaved ? 2 * i : i;
                size_t ib = interleaved ? 2 * i + 1 : i + E / 2;
                double th = (offset + (double)t)
                            * pow(base, -(double)(2 * i) / (double)E);
                const double *xr = x + (b * T + t) * E;
                want[(b * T + t) * E + ia] = xr[ia] * cos(th) - xr[ib] * sin(th);
                want[(b * T + t) * E + ib] = xr[ib] * cos(th) + xr[ia] * sin(th);
            }
    ptrdiff_t boff[B], tboff[B];
    for (size_t b = 0; b < B; b++) {
        boff[b] = (ptrdiff_t)(b * T * E);
        tboff[b] = (ptrdiff_t)b; /* transposed copy: (b, t, e) at e*B*T + t*B + b */
    }
    for (size_t a = 0; a < n; a++) {
        size_t b = a / (T * E), t = a / E % T, e = a % E;
        memcpy(tr + (e * B * T + t * B + b) * esz, in + a * esz, esz);
    }
    attn_mat mi = {in, boff, (ptrdiff_t)E, 1, ATTN_ST_NATIVE}, mo = {out, boff, (ptrdiff_t)E, 1, ATTN_ST_NATIVE};
    attn_mat mt = {tr, tboff, B, B * T, ATTN_ST_NATIVE};
    CHECK(ca_rope(dt, mo, mi, B, T, E, offset, base, interleaved) == ATTN_OK,
          "rope status");
    double worst = 0;
    for (size_t a = 0; a < n; a++) {
        double g = dt == ATTN_F32 ? ((float *)out)[a] : ((double *)out)[a];
        worst = fmax(worst, fabs(g - want[a]));
    }
    /* double: the angles' own rounding too: the C library's pow and
     * attnpy's differ by an ulp, which the position multiplies (|x| <= 2,
     * a few ulps of theta <= offset + T)                                */
    const double angle = 16.0 * (offset + (double)T) * 0x1p-53;
    CHECK(worst <= (dt == ATTN_F32 ? 1.2e-6 : 3e-14 + angle),
          "rope %s E=%zu interleaved=%d offset=%g: error %g", dt_name(dt), E,
          interleaved, offset, worst);
    /* in place on a transposed view: the same bits */
    CHECK(ca_rope(dt, mt, mt, B, T, E, offset, base, interleaved) == ATTN_OK,
          "rope in place status");
    int same = 1;
    for (size_t a = 0; a < n; a++) {
        size_t b = a / (T * E), t = a / E % T, e = a % E;
        same &= memcmp(tr + (e * B * T + t * B + b) * esz, out + a * esz,
                       esz) == 0;
    }
    CHECK(same, "rope in place on a strided view differs from out of place");
    free(x);
    free(want);
    free(in);
    free(tr);
    free(out);
}

static void test_rope(void)
{
    static const size_t Es[] = {2, 8, 10, 64};
    for (int dt = 0; dt < 2; dt++)
        for (size_t e = 0; e < 4; e++)
            for (int il = 0; il < 2; il++) {
                test_rope_case((attn_dtype)dt, Es[e], il, 0.0, 10000.0);
                test_rope_case((attn_dtype)dt, Es[e], il, 1000.0, 500.0);
            }
    float f[3];
    ptrdiff_t z = 0;
    attn_mat m = {f, &z, 3, 1, ATTN_ST_NATIVE};
    CHECK(ca_rope(ATTN_F32, m, m, 1, 1, 3, 0.0, 10000.0, 0) == ATTN_EINVAL,
          "rope: odd E accepted");
}

/* ------------------------------------------------------------------------ */
int main(int argc, char **argv)
{
    /* default: a quick run (tools/valgrind.sh and sanitize.sh run every
     * tests/c program without arguments); tests/c/test_c_core.py asks for
     * more problems */
    int count = argc > 1 ? atoi(argv[1]) : 6;
    rng_state = argc > 2 ? strtoull(argv[2], NULL, 10) : 777;
    clock_t t0 = clock();
    attn__min_flops_per_thread = 0; /* use threads even on tiny problems */
    test_rope();
    test_merge();
    test_decode_poll();
    for (int i = 0; i < CHECK_NISA; i++) {
        if (!check_use_isa(i))
            continue;
        const int cnt = check_count(i, count);
        test_decode_random(check_isa(i), cnt);
        test_rows_alone(check_isa(i), 2 * cnt);
        if (count >= 20)
            test_decode_long(check_isa(i));
        printf("  worst error / tolerance: f32 %.3f, f64 %.3f\n",
               max_err_seen[0], max_err_seen[1]);
        max_err_seen[0] = max_err_seen[1] = 0;
    }
    CHECK(attn_set_isa("auto") == 0, "set_isa(auto)");
    return check_summary(t0);
}
