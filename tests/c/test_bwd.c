/*
 * test_bwd.c -- C tests of the backward pass and the forward lse, without
 * Python:
 *
 *   lse of attn_sdpa (tile and decode paths) against the naive oracle's
 *   attn_sdpa_backward on every instruction set this CPU has (and its
 *     own kernels: bwd.c's fallback not taken) against
 *     attn_sdpa_backward_naive over random problems (every layout, mask,
 *     bias, causal alignment, fully_masked policy, batch-broadcast K/V,
 *     inf/NaN elements), bitwise the same for 1, 2, 3, 4 and 7 threads
 *     (7 > work items for the small problems); "portable" and "baseline"
 *     bitwise the same
 *   attn_sdpa_backward_naive against central finite differences of
 *     attn_sdpa_naive in double (every distinct memory element of Q, K, V
 *     and bias: broadcast elements get the sum of their uses)
 *
 * It reuses test_core.c's random problems by including it (its main
 * renamed), as test_decode.c does. Prints one line per failure and
 * "N passed, M failed"; exit status 1 on any failure.
 */
#undef main
#define main test_core_main
#include "test_core.c"
#undef main
#ifdef TEST_BWD_MAIN /* a program including this one renames its main */
#define main TEST_BWD_MAIN
#endif

/* a second buffer with the layout of o (for the oracle's result) */
static void op_twin(operand *twin, const operand *o)
{
    *twin = *o;
    twin->buf = malloc(o->nbytes);
    /* boff shared with o (freed once, with o) */
    twin->m.data = twin->buf + ((unsigned char *)o->m.data - o->buf);
}

typedef struct {
    prob t;
    operand lse, lse_n, dout;
    operand g[4], gn[4]; /* dq, dk, dv, dbias: fast, naive */
    attn_bwd_problem bp;
} bprob;

static const char *gname[4] = {"dq", "dk", "dv", "dbias"};

static void bprob_free(bprob *x)
{
    op_free(&x->lse);
    free(x->lse_n.buf);
    op_free(&x->dout);
    for (int i = 0; i < 4; i++) {
        free(x->gn[i].buf);
        op_free(&x->g[i]);
    }
    prob_free(&x->t);
}

/* a random problem as prob_random's, B up to 6 (bwd.c's fused items
 * from B = 4 on, split passes below)                                     */
static void prob_random_bwd(prob *t, int big)
{
    static const size_t Ls[] = {0, 1, 2, 3, 5, 16, 17, 33, 64, 65, 100, 150};
    static const size_t Ss[] = {0, 1, 2, 7, 16, 33, 64, 100, 200, 257};
    static const size_t Es[] = {0, 1, 3, 8, 16, 17, 32, 64};
    static const size_t Bs[] = {1, 1, 2, 3, 4, 5, 6};
    memset(t, 0, sizeof *t);
    attn_problem *p = &t->p;
    p->dtype = irand(2) ? ATTN_F64 : ATTN_F32;
    p->B = pick(Bs, sizeof Bs / sizeof *Bs);
    p->L = pick(Ls, sizeof Ls / sizeof *Ls);
    p->S = pick(Ss, sizeof Ss / sizeof *Ss);
    p->E = pick(Es, sizeof Es / sizeof *Es);
    p->Ev = irand(3) ? p->E : pick(Es, sizeof Es / sizeof *Es);
    if (big && !check_small()) {
        p->B = irand(2) ? 2 : 5;
        p->L = 130 + irand(200);
        p->S = 300 + irand(300);
        p->E = 64;
        p->Ev = 64;
    }
    prob_features(t);
}

/* the forward pass's lse (fast vs naive), then the gradients' buffers  */
static void bprob_make(bprob *x, int big, const char *isa)
{
    memset(x, 0, sizeof *x);
    prob *t = &x->t;
    prob_random_bwd(t, big);
    attn_problem *p = &t->p;
    const size_t esz = p->dtype == ATTN_F32 ? 4 : 8;
    char d[400];
    describe(t, d, sizeof d);
    /* forward with lse: naive (into out_n) and fast; "raise" problems
     * get the lse of "zero" (the backward must raise on them again)    */
    op_make(&x->lse, p->B, p->L, 1, esz, LAY_OUTPUT);
    op_fill_sentinel(&x->lse, -12345.0);
    op_twin(&x->lse_n, &x->lse);
    memcpy(x->lse_n.buf, x->lse.buf, x->lse.nbytes);
    const attn_fm fm = p->fully_masked;
    if (fm == ATTN_FM_RAISE)
        p->fully_masked = ATTN_FM_ZERO;
    memset(&p->weights, 0, sizeof p->weights);
    memset(&p->scores, 0, sizeof p->scores);
    prob_target(t, 0);
    p->out.data = t->out_n.buf + ((unsigned char *)t->out.m.data - t->out.buf);
    p->lse = x->lse_n.m;
    attn_status st = attn_sdpa_naive(p);
    CHECK(st == ATTN_OK, "naive forward with lse: status %d: %s", (int)st, d);
    p->out = t->out.m;
    p->lse = x->lse.m;
    attn_exec ex = {2, NULL, NULL};
    st = attn_sdpa(p, &ex);
    const double tol = p->dtype == ATTN_F32 ? 1e-5 : 1e-13;
    const double a = tol * (1 + p->scale * (double)p->E * t->qmax * t->kmax);
    size_t bad = cmp_buf(&x->lse, &x->lse_n, a, tol, NULL);
    CHECK(st == ATTN_OK && bad == 0, "[%s] lse: status %d, %zu mismatches: "
          "%s", isa, (int)st, bad, d);
    p->fully_masked = fm;
    /* dout (any layout, now and then an inf), gradients (own per b) */
    op_make(&x->dout, p->B, p->L, p->Ev, esz, LAY_ANY);
    fill_normalish(&x->dout, 1.0);
    if (irand(12) == 0 && p->B && p->L && p->Ev)
        op_set(&x->dout, irand(p->B), irand(p->L), irand(p->Ev), INFINITY);
    const size_t rows[4] = {p->L, p->S, p->S, p->L};
    const size_t cols[4] = {p->E, p->E, p->Ev, p->S};
    const int ng = p->bias.data && irand(2) ? 4 : 3;
    for (int i = 0; i < ng; i++) {
        op_make(&x->g[i], p->B, rows[i], cols[i], esz, LAY_OUTPUT);
        op_twin(&x->gn[i], &x->g[i]);
    }
    memset(&x->bp, 0, sizeof x->bp);
    x->bp.f = *p;
    x->bp.f.out = t->out.m; /* the naive forward's out */
    x->bp.f.out.data = t->out_n.buf
                       + ((unsigned char *)t->out.m.data - t->out.buf);
    x->bp.f.lse = x->lse_n.m;
    x->bp.dout = x->dout.m;
}

/* point the gradients at the fast (0) or naive (1) buffers, sentinel    */
static void bprob_target(bprob *x, int naive)
{
    attn_mat *m[4] = {&x->bp.dq, &x->bp.dk, &x->bp.dv, &x->bp.dbias};
    for (int i = 0; i < 4; i++) {
        operand *o = naive ? &x->gn[i] : &x->g[i];
        if (!x->g[i].buf) {
            memset(m[i], 0, sizeof *m[i]);
            continue;
        }
        op_fill_sentinel(o, -12345.0);
        *m[i] = o->m;
    }
    x->bp.f.bad_b = x->bp.f.bad_row = 999999;
}

static void test_bwd_random(const char *isa, int count, int big)
{
    static const int nts[] = {2, 3, 4, 7};
    for (int it = 0; it < count; it++) {
        bprob x;
        bprob_make(&x, big, isa);
        char d[400];
        describe(&x.t, d, sizeof d);
        bprob_target(&x, 1);
        attn_status stn = attn_sdpa_backward_naive(&x.bp);
        const size_t nb_b = x.bp.f.bad_b, nb_row = x.bp.f.bad_row;
        bprob_target(&x, 0);
        attn_exec ex = {1, NULL, NULL};
        attn_status st = attn_sdpa_backward(&x.bp, &ex);
        CHECK(st == stn, "[%s] backward status %d, naive %d: %s", isa,
              (int)st, (int)stn, d);
        if (st == ATTN_EFULLYMASKED)
            CHECK(x.bp.f.bad_b == nb_b && x.bp.f.bad_row == nb_row,
                  "[%s] backward first fully masked (%zu,%zu), naive "
                  "(%zu,%zu): %s", isa, x.bp.f.bad_b, x.bp.f.bad_row, nb_b,
                  nb_row, d);
        if (st != ATTN_OK || stn != ATTN_OK) {
            bprob_free(&x);
            continue;
        }
        const int f32 = x.t.p.dtype == ATTN_F32;
        const double tol = f32 ? 2e-5 : 1e-12;
        unsigned char *ref[4] = {0};
        for (int i = 0; i < 4 && x.g[i].buf; i++) {
            double me = 0, mag = max_abs(&x.gn[i]);
            size_t bad = cmp_buf(&x.g[i], &x.gn[i], tol * (1 + mag), tol, &me);
            CHECK(bad == 0, "[%s] %s: %zu mismatches (worst %.3g x tol): %s",
                  isa, gname[i], bad, me, d);
            if (bad && getenv("BWD_DEBUG"))
                for (size_t b = 0; b < x.g[i].B; b++)
                    for (size_t r = 0; r < x.g[i].R && r < 6; r++)
                        printf("  b%zu r%zu: %g vs %g  lse %g\n", b, r,
                               op_get(&x.g[i], b, r, 0), op_get(&x.gn[i], b, r, 0),
                               r < x.t.p.L ? op_get(&x.lse_n, b, r, 0) : 0.0);
            if (me > max_err_seen[f32 ? 0 : 1])
                max_err_seen[f32 ? 0 : 1] = me;
            ref[i] = dup_buf(&x.g[i]);
        }
        for (size_t n = 0; n < sizeof nts / sizeof *nts; n++) {
            bprob_target(&x, 0);
            ex.nthreads = nts[n];
            st = attn_sdpa_backward(&x.bp, &ex);
            int same = st == ATTN_OK;
            for (int i = 0; i < 4 && x.g[i].buf; i++)
                same = same && memcmp(ref[i], x.g[i].buf, x.g[i].nbytes) == 0;
            CHECK(same, "[%s] backward with %d threads differs bitwise from 1 "
                  "thread: %s", isa, nts[n], d);
        }
        for (int i = 0; i < 4; i++)
            free(ref[i]);
        bprob_free(&x);
    }
}

/* n bytes of elements of esz bytes: the same bits, but any NaN equals
 * any NaN (a NaN's sign and payload are the instructions' that made it:
 * MinGW's baseline and the AVX2 build make different ones)              */
static int same_but_nan(const unsigned char *a, const unsigned char *b,
                        size_t n, size_t esz)
{
    for (size_t i = 0; i < n; i += esz) {
        if (memcmp(a + i, b + i, esz) == 0)
            continue;
        double x, y;
        if (esz == sizeof(float)) {
            float fx, fy;
            memcpy(&fx, a + i, sizeof fx), memcpy(&fy, b + i, sizeof fy);
            x = fx, y = fy;
        } else {
            memcpy(&x, a + i, sizeof x), memcpy(&y, b + i, sizeof y);
        }
        if (!(isnan(x) && isnan(y)))
            return 0;
    }
    return 1;
}

/* "portable" and "baseline" give the same bits, as in the forward pass
 * (on x86 with AVX2 "portable" is the 8-lane build, "baseline" the 4-lane
 * one; elsewhere both are the 4-lane build), NaN bits aside            */
static void test_bwd_portable_bits(int count)
{
    for (int it = 0; it < count; it++) {
        CHECK(attn_set_isa("baseline") == 0, "set_isa(baseline)");
        bprob x;
        bprob_make(&x, 0, "baseline");
        char d[400];
        describe(&x.t, d, sizeof d);
        attn_exec ex = {2, NULL, NULL};
        bprob_target(&x, 0);
        const attn_status st = attn_sdpa_backward(&x.bp, &ex);
        unsigned char *ref[4] = {0};
        for (int i = 0; i < 4 && x.g[i].buf; i++)
            ref[i] = dup_buf(&x.g[i]);
        CHECK(attn_set_isa("portable") == 0, "set_isa(portable)");
        bprob_target(&x, 0);
        const attn_status st2 = attn_sdpa_backward(&x.bp, &ex);
        int same = st == st2;
        for (int i = 0; i < 4 && x.g[i].buf && st == ATTN_OK; i++)
            same = same && same_but_nan(ref[i], x.g[i].buf, x.g[i].nbytes,
                                        x.g[i].esz);
        CHECK(same, "backward: portable (%zu lanes) and baseline differ "
              "bitwise (status %d, %d): %s", attn__kernels()->sdpa.W[0],
              (int)st2, (int)st, d);
        for (int i = 0; i < 4; i++)
            free(ref[i]);
        bprob_free(&x);
    }
}

/* ------------------------------------------------------------------------ */
/* the naive backward against finite differences of the naive forward       */
/* ------------------------------------------------------------------------ */
/* no inf / NaN element (-inf allowed if ninf_ok: a bias that masks) */
static int op_finite(const operand *o, int ninf_ok)
{
    for (size_t b = 0; b < o->B; b++)
        for (size_t r = 0; r < o->R; r++)
            for (size_t c = 0; c < o->C; c++) {
                const double v = op_get(o, b, r, c);
                if (!isfinite(v) && !(ninf_ok && v == -INFINITY))
                    return 0;
            }
    return 1;
}

/* loss = sum dout * out of the naive forward */
static double fd_loss(bprob *x)
{
    attn_problem *p = &x->t.p;
    p->out = x->t.out.m;
    memset(&p->lse, 0, sizeof p->lse);
    if (attn_sdpa_naive(p) != ATTN_OK)
        return NAN;
    double s = 0;
    for (size_t b = 0; b < p->B; b++)
        for (size_t i = 0; i < p->L; i++)
            for (size_t c = 0; c < p->Ev; c++)
                s += op_get(&x->dout, b, i, c) * op_get(&x->t.out, b, i, c);
    return s;
}

/* every distinct element of operand o (gradient g, naive) by FD       */
static void fd_check(bprob *x, operand *o, const operand *g, const char *nm,
                     const char *d)
{
    const size_t n = o->nbytes / 8;
    double *an = calloc(n + 1, sizeof(double));
    unsigned char *used = calloc(n + 1, 1);
    for (size_t b = 0; b < o->B; b++)
        for (size_t r = 0; r < o->R; r++)
            for (size_t c = 0; c < o->C; c++) {
                size_t k = op_index(o, b, r, c);
                an[k] += op_get(g, b, r, c);
                used[k] = 1;
            }
    size_t bad = 0;
    double worst = 0;
    for (size_t k = 0; k < n; k++) {
        double *e = (double *)o->buf + k;
        if (!used[k] || !isfinite(*e))
            continue;
        const double x0 = *e, h = 1e-5 * (1 + fabs(x0));
        *e = x0 + h;
        double fp = fd_loss(x);
        *e = x0 - h;
        double fm = fd_loss(x);
        *e = x0;
        double fd = (fp - fm) / (2 * h), err = fabs(fd - an[k]);
        double lim = 1e-6 * (1 + fabs(an[k]));
        bad += !(err <= lim);
        if (err / lim > worst)
            worst = err / lim;
    }
    CHECK(bad == 0, "finite differences of %s: %zu mismatches (worst %.3g x "
          "tol): %s", nm, bad, worst, d);
    free(an);
    free(used);
}

static void test_bwd_fd(int count)
{
    int done = 0;
    for (int it = 0; done < count && it < 50 * count; it++) {
        bprob x;
        bprob_make(&x, 0, "naive");
        attn_problem *p = &x.t.p;
        const size_t work = p->B * (p->L + p->S) * (p->E + p->Ev + p->S);
        if (p->dtype != ATTN_F64 || p->fully_masked == ATTN_FM_RAISE
            || p->fully_masked == ATTN_FM_NAN || work > 4000 || !p->L
            || !op_finite(&x.t.q, 0) || !op_finite(&x.t.k, 0)
            || !op_finite(&x.t.v, 0) || !op_finite(&x.dout, 0)
            || (p->bias.data && !op_finite(&x.t.bias, 1))) {
            bprob_free(&x);
            continue;
        }
        done++;
        char d[400];
        describe(&x.t, d, sizeof d);
        bprob_target(&x, 1);
        attn_status st = attn_sdpa_backward_naive(&x.bp);
        CHECK(st == ATTN_OK, "naive backward: status %d: %s", (int)st, d);
        fd_check(&x, &x.t.q, &x.gn[0], "Q", d);
        fd_check(&x, &x.t.k, &x.gn[1], "K", d);
        fd_check(&x, &x.t.v, &x.gn[2], "V", d);
        if (x.g[3].buf)
            fd_check(&x, &x.t.bias, &x.gn[3], "bias", d);
        bprob_free(&x);
    }
    CHECK(done == count, "finite differences: only %d of %d problems", done,
          count);
}

int main(int argc, char **argv)
{
    int count = argc > 1 ? atoi(argv[1]) : 8;
    uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 10) : 4321;
    clock_t t0 = clock();
    attn__min_flops_per_thread = 0; /* use threads even on tiny problems */
    for (int i = 0; i < CHECK_NISA; i++) {
        if (!check_use_isa(i))
            continue;
        /* the set's own backward kernels run (its table's, or its base's:
         * the AVX-512 ones for "amx"'s double calls) */
        const attn_kernels *k = attn__kernels();
        attn_sdpa_kern kf, kd;
        attn__sdpa_kern(ATTN_F32, &kf);
        attn__sdpa_kern(ATTN_F64, &kd);
        const int port = k == &attn__kernels_port;
        CHECK(kf.bwd_a && kf.bwd_b && kd.bwd_a && kd.bwd_b
                  && (port || (kf.bwd_a != attn__kernels_port.sdpa.bwd_a[0]
                               && kd.bwd_b != attn__kernels_port.sdpa.bwd_b[1])),
              "[%s] backward: not the set's own kernels", check_isa(i));
        printf("isa %s (backward kernels: %s, %zu f32 lanes)\n", check_isa(i),
               k->name, kf.W);
        fflush(stdout);
        rng_state = seed + (uint64_t)i;
        const int cnt = check_count(i, count);
        /* a set whose count check_count cut (x86's "baseline", whose
         * fma is emulated in software): one small problem (its 8 and a
         * big one at CI's full count took two minutes); its bits are held
         * to "portable"'s below, and at 1-4 threads on every entry point,
         * big shapes included, by test_bits.c                          */
        const int cut = cnt < count;
        test_bwd_random(check_isa(i), cut ? 1 : cnt, 0);
        test_bwd_random(check_isa(i), cut ? 0 : cnt / 10 + 1, 1);
        printf("  worst error / tolerance: f32 %.3f, f64 %.3f\n",
               max_err_seen[0], max_err_seen[1]);
        max_err_seen[0] = max_err_seen[1] = 0;
    }
    rng_state = seed + 98;
    /* small problems, a quarter of the count: on "baseline" (emulated
     * fma) each big one took a minute, and CI's full count ran twenty;
     * test_bits.c holds the two sets' bits on big shapes                */
    test_bwd_portable_bits(count / 4 + 2);
    CHECK(attn_set_isa("auto") == 0, "set_isa(auto)");
    rng_state = seed + 99;
    test_bwd_fd(count / 4 + 2);
    return check_summary(t0);
}
