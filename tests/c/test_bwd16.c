/*
 * test_bwd16.c -- C tests of the backward pass with 16-bit operands
 * (attn_mat.store = ATTN_ST_F16 / ATTN_ST_BF16), without Python:
 *
 *   on every instruction set this CPU has, random float problems (every
 *   layout, mask, bias, causal alignment, fully_masked policy, variants:
 *   window, ALiBi, softcap, positions; inf/NaN elements) whose inputs are
 *   exactly 16-bit numbers: each of q, k, v, bias, out, dout read in 16
 *   bits or in float, each of dq, dk, dv, dbias written in 16 bits or in
 *   float.
 *   The 16-bit gradients are bit for bit the float32 backward's on the
 *   same (upcast) inputs rounded once (half.h), the float ones bit for
 *   bit the float32 backward's, for 1, 2, 3 and 7 threads; statuses and
 *   the first fully masked row the same (on "amx" with bfloat16 Q and K,
 *   whose AMX scores no float call reproduces: the 1-thread run's bits
 *   for every thread count, and the oracle check below)
 *   the naive oracle reading the same 16-bit operands: bit for bit its
 *   own float run on the upcast inputs; the fast 16-bit gradients
 *   within the 16-bit rounding of it
 *   ATTN_EINVAL for 16-bit operands the kernels do not read in 16 bits
 *   (any of a double problem, an unknown storage, lse, mask, the ALiBi
 *   slopes; the oracle: all but lse)
 *
 * It reuses test_bwd.c's problems (and so test_core.c's) by including it.
 * Prints one line per failure and "N passed, M failed"; exit status 1 on
 * any failure.
 */
#define TEST_BWD_MAIN test_bwd_main
#include "test_bwd.c"
#undef main

#include "half.h"

/* the storage the drawn problem's inputs are rounded to (0: none)       */
static attn_store round_st;

static uint16_t to16(attn_store st, float x)
{
    return st == ATTN_ST_BF16 ? attn_f32_to_bf16(x) : attn_f32_to_f16(x);
}

static float from16(attn_store st, uint16_t h)
{
    return st == ATTN_ST_BF16 ? attn_bf16_to_f32(h) : attn_f16_to_f32(h);
}

/* every element of a float operand made an exact 16-bit number          */
static void op_round16(operand *o, attn_store st)
{
    for (size_t b = 0; b < o->B; b++)
        for (size_t r = 0; r < o->R; r++)
            for (size_t c = 0; c < o->C; c++)
                op_set(o, b, r, c,
                       from16(st, to16(st, (float)op_get(o, b, r, c))));
}

/* a 16-bit operand with the layout of float operand o (same element
 * strides and offsets; boff shared with o): every allocation slot the
 * 16 bits of o's                                                         */
static void op_twin16(operand *h, const operand *o, attn_store st)
{
    *h = *o;
    h->esz = 2;
    h->nbytes = o->nbytes / o->esz * 2;
    h->buf = calloc(h->nbytes + 2, 1);
    h->m.data = h->buf + ((unsigned char *)o->m.data - o->buf) / o->esz * 2;
    h->m.store = st;
    const float *src = (const float *)o->buf;
    for (size_t b = 0; b < o->B; b++)
        for (size_t r = 0; r < o->R; r++)
            for (size_t c = 0; c < o->C; c++) {
                const size_t k = op_index(o, b, r, c);
                ((uint16_t *)h->buf)[k] = to16(st, src[k]);
            }
}

/* the variants of attn.h now and then (test_variants.c's ranges for the
 * backward pass), then the inputs rounded to 16 bits                     */
static void hook16(prob *t)
{
    attn_problem *p = &t->p;
    if (p->dtype == ATTN_F32 && irand(2)) {
        const ptrdiff_t n = (ptrdiff_t)(p->L + p->S);
        p->pos_shift = irand(3) == 0 ? (ptrdiff_t)irand(2 * n + 1) - n : 0;
        p->window = irand(2);
        p->wleft = irand(4) ? (ptrdiff_t)irand(p->S / 2 + 3)
                            : n + (p->pos_shift < 0 ? -p->pos_shift
                                                    : p->pos_shift);
        p->wright = (ptrdiff_t)irand(p->S / 2 + 3);
        p->softcap = irand(3) == 0 ? (irand(2) ? 3.0 : 30.0) : 0.0;
        if (irand(3) == 0) {
            op_make(&t->alibi, p->B, 1, 1, 4, LAY_ANY);
            for (size_t b = 0; b < p->B; b++)
                op_set(&t->alibi, b, 0, 0, urand() * 0.04);
            p->alibi = t->alibi.m;
        }
    }
    if (p->dtype == ATTN_F32 && round_st) {
        op_round16(&t->q, round_st);
        op_round16(&t->k, round_st);
        op_round16(&t->v, round_st);
        if (t->bias.buf)
            op_round16(&t->bias, round_st);
    }
}

typedef struct {
    bprob x;
    attn_store st;
    operand in16[6];   /* q, k, v, out, dout, bias in 16 bits (buf NULL:
                          float)                                         */
    operand g16[4];    /* dq, dk, dv, dbias in 16 bits (buf NULL: float)  */
    unsigned char *ref[4]; /* the float32 backward's gradients           */
    int amx;               /* scores by AMX tiles: the reference is the
                              call's own 1-thread run (no float twin)     */
    unsigned char *ref16[4]; /* amx: that run's 16-bit gradients          */
    attn_status ref_st;
    size_t ref_b, ref_row;
    char d[500];
} b16;

static void b16_free(b16 *y)
{
    for (int i = 0; i < 6; i++)
        free(y->in16[i].buf);
    for (int i = 0; i < 4; i++) {
        free(y->g16[i].buf);
        free(y->ref[i]);
        free(y->ref16[i]);
    }
    bprob_free(&y->x);
}

/* bfloat16 q and k where the forward takes its scores from AMX tiles (the
 * opt-in "amx" set, E % 32 == 0, E <= 256: isa/amx.c): so does the
 * backward                                                              */
static int b16_amx(const b16 *y)
{
    const attn_problem *f = &y->x.bp.f;
    return strcmp(attn_isa_name(), "amx") == 0 && f->dtype == ATTN_F32
           && y->st == ATTN_ST_BF16 && y->in16[0].buf && y->in16[1].buf
           && f->E % 32 == 0 && f->E <= 256;
}

/* a float problem with 16-bit inputs: out and dout rounded too; the
 * float32 backward (1 thread) as the reference                          */
static void b16_make(b16 *y, int big, const char *isa)
{
    memset(y, 0, sizeof *y);
    y->st = irand(2) ? ATTN_ST_F16 : ATTN_ST_BF16;
    round_st = y->st;
    prob_hook = hook16;
    do {
        if (y->x.t.q.buf)
            bprob_free(&y->x);
        bprob_make(&y->x, big, isa);
    } while (y->x.t.p.dtype != ATTN_F32);
    prob_hook = NULL;
    bprob *x = &y->x;
    /* the out the backward reads is the naive forward's (bprob_make)   */
    operand out = x->t.out;
    out.buf = x->t.out_n.buf;
    out.m.data = (void *)x->bp.f.out.data;
    op_round16(&out, y->st);
    op_round16(&x->dout, y->st);
    describe(&x->t, y->d, sizeof y->d);
    size_t len = strlen(y->d);
    snprintf(y->d + len, sizeof y->d - len,
             " %s shift=%td window=%d(%td,%td) alibi=%d softcap=%g",
             y->st == ATTN_ST_BF16 ? "bf16" : "f16", x->bp.f.pos_shift,
             x->bp.f.window, x->bp.f.wleft, x->bp.f.wright,
             x->bp.f.alibi.data != NULL, x->bp.f.softcap);
    /* the 16-bit twins: each operand 16-bit with probability 3/4       */
    const operand *ins[6] = {&x->t.q, &x->t.k, &x->t.v, &out, &x->dout,
                             &x->t.bias};
    int any = 0;
    for (int i = 0; i < 6; i++)
        if (irand(4) && ins[i]->buf) {
            op_twin16(&y->in16[i], ins[i], y->st);
            any = 1;
        }
    bprob_target(x, 0); /* the sentinels, before their 16-bit twins */
    for (int i = 0; i < 4 && x->g[i].buf; i++)
        if (irand(4) || (!any && i == 0))
            op_twin16(&y->g16[i], &x->g[i], y->st); /* sentinels, 16 bits */
    y->amx = b16_amx(y);
    attn_exec ex = {1, NULL, NULL};
    y->ref_st = attn_sdpa_backward(&x->bp, &ex);
    y->ref_b = x->bp.f.bad_b;
    y->ref_row = x->bp.f.bad_row;
    for (int i = 0; i < 4 && x->g[i].buf; i++)
        y->ref[i] = dup_buf(&x->g[i]);
}

/* point the backward problem at the 16-bit operands where there are     */
static void b16_target(b16 *y, int naive)
{
    bprob *x = &y->x;
    bprob_target(x, naive);
    attn_mat *in[6] = {&x->bp.f.q, &x->bp.f.k, &x->bp.f.v, &x->bp.f.out,
                       &x->bp.dout, &x->bp.f.bias};
    for (int i = 0; i < 6; i++)
        if (y->in16[i].buf)
            *in[i] = y->in16[i].m;
    attn_mat *g[4] = {&x->bp.dq, &x->bp.dk, &x->bp.dv, &x->bp.dbias};
    for (int i = 0; i < 4; i++)
        if (y->g16[i].buf) {
            operand *h = &y->g16[i];
            const uint16_t sent = to16(y->st, -12345.0f);
            for (size_t k = 0; k < h->nbytes / 2; k++)
                ((uint16_t *)h->buf)[k] = sent;
            *g[i] = h->m;
        }
}

/* the float inputs back (the naive oracle's float run)                  */
static void b16_untarget(b16 *y)
{
    bprob *x = &y->x;
    x->bp.f.q = x->t.q.m;
    x->bp.f.k = x->t.k.m;
    x->bp.f.v = x->t.v.m;
    if (x->t.bias.buf)
        x->bp.f.bias = x->t.bias.m;
    x->bp.f.out.store = ATTN_ST_NATIVE;
    x->bp.f.out.data = x->t.out_n.buf
                       + ((unsigned char *)x->t.out.m.data - x->t.out.buf);
    x->bp.f.out.boff = x->t.out.m.boff;
    x->bp.f.out.s0 = x->t.out.m.s0;
    x->bp.f.out.s1 = x->t.out.m.s1;
    x->bp.dout = x->dout.m;
}

/* gradient i of the last run against float reference `want` (allocation
 * of operand o's layout): 16 bits = want rounded once, float = want      */
static int b16_same(const b16 *y, int i, const unsigned char *want,
                    const operand *o)
{
    if (!y->g16[i].buf)
        return memcmp(o->buf, want, o->nbytes) == 0;
    const uint16_t *h = (const uint16_t *)y->g16[i].buf;
    const float *f = (const float *)want;
    for (size_t k = 0; k < o->nbytes / 4; k++)
        if (h[k] != to16(y->st, f[k]))
            return 0;
    return 1;
}

static void test_b16_random(const char *isa, int count, int big)
{
    static const int nts[] = {1, 2, 3, 7};
    for (int it = 0; it < count; it++) {
        b16 y;
        b16_make(&y, big, isa);
        bprob *x = &y.x;
        for (size_t n = 0; n < sizeof nts / sizeof *nts; n++) {
            b16_target(&y, 0);
            attn_exec ex = {nts[n], NULL, NULL};
            const attn_status st = attn_sdpa_backward(&x->bp, &ex);
            CHECK(st == y.ref_st, "[%s] 16-bit backward (%d threads): status "
                  "%d, float32 %d: %s", isa, nts[n], (int)st, (int)y.ref_st,
                  y.d);
            if (st == ATTN_EFULLYMASKED)
                CHECK(x->bp.f.bad_b == y.ref_b && x->bp.f.bad_row == y.ref_row,
                      "[%s] 16-bit backward: first fully masked (%zu,%zu), "
                      "float32 (%zu,%zu): %s", isa, x->bp.f.bad_b,
                      x->bp.f.bad_row, y.ref_b, y.ref_row, y.d);
            if (y.amx && n == 0) /* the AMX run's own bits are the reference */
                for (int i = 0; st == ATTN_OK && i < 4 && x->g[i].buf; i++) {
                    if (y.g16[i].buf) {
                        y.ref16[i] = malloc(y.g16[i].nbytes);
                        CHECK(y.ref16[i] != NULL, "out of memory");
                        memcpy(y.ref16[i], y.g16[i].buf, y.g16[i].nbytes);
                    } else
                        memcpy(y.ref[i], x->g[i].buf, x->g[i].nbytes);
                }
            for (int i = 0; st == ATTN_OK && y.amx && i < 4 && x->g[i].buf;
                 i++)
                CHECK(y.g16[i].buf ? memcmp(y.g16[i].buf, y.ref16[i],
                                            y.g16[i].nbytes) == 0
                                   : memcmp(x->g[i].buf, y.ref[i],
                                            x->g[i].nbytes) == 0,
                      "[%s] %s (%s, %d threads): amx: not the 1-thread "
                      "run's bits: %s", isa, gname[i],
                      y.g16[i].buf ? "16-bit" : "float", nts[n], y.d);
            for (int i = 0; st == ATTN_OK && !y.amx && i < 4 && x->g[i].buf;
                 i++)
                CHECK(b16_same(&y, i, y.ref[i], &x->g[i]),
                      "[%s] %s (%s, %d threads): not the float32 backward's "
                      "bits rounded once: %s", isa, gname[i],
                      y.g16[i].buf ? "16-bit" : "float", nts[n], y.d);
        }
        /* the naive oracle: its 16-bit reading against its float run,
         * then the fast 16-bit gradients (still in g16) within 16-bit
         * rounding of its result                                         */
        b16_untarget(&y);
        bprob_target(x, 1);
        const attn_status stn = attn_sdpa_backward_naive(&x->bp);
        unsigned char *nref[4] = {0};
        for (int i = 0; i < 4 && x->g[i].buf; i++)
            nref[i] = dup_buf(&x->gn[i]);
        operand keep[4];
        memcpy(keep, y.g16, sizeof keep);
        for (int i = 0; i < 4; i++) /* the fast results stay in keep */
            if (keep[i].buf) {
                y.g16[i].buf = malloc(keep[i].nbytes + 2);
                y.g16[i].m.data = y.g16[i].buf + ((unsigned char *)keep[i].m.data
                                                  - keep[i].buf);
            }
        b16_target(&y, 1);
        const attn_status stn16 = attn_sdpa_backward_naive(&x->bp);
        CHECK(stn16 == stn && stn == y.ref_st, "[%s] naive 16-bit status %d, "
              "float %d, fast %d: %s", isa, (int)stn16, (int)stn,
              (int)y.ref_st, y.d);
        for (int i = 0; stn == ATTN_OK && i < 4 && x->g[i].buf; i++)
            CHECK(b16_same(&y, i, nref[i], &x->gn[i]), "[%s] naive %s: 16-bit "
                  "operands not the float run's bits: %s", isa, gname[i], y.d);
        for (int i = 0; i < 4; i++) {
            free(y.g16[i].buf);
            y.g16[i] = keep[i];
        }
        for (int i = 0; stn == ATTN_OK && y.ref_st == ATTN_OK && i < 4
                        && x->g[i].buf; i++) {
            /* the fast gradient, upcast, into g[i]'s float layout      */
            operand *o = &x->g[i];
            memcpy(x->gn[i].buf, nref[i], o->nbytes);
            if (y.g16[i].buf)
                for (size_t k = 0; k < o->nbytes / 4; k++)
                    ((float *)o->buf)[k] =
                        from16(y.st, ((uint16_t *)y.g16[i].buf)[k]);
            else
                memcpy(o->buf, y.ref[i], o->nbytes);
            const double u = y.st == ATTN_ST_BF16 ? 0x1p-8 : 0x1p-11;
            const double mag = max_abs(&x->gn[i]), tol = 2e-5;
            double me = 0;
            const size_t bad = cmp_buf(o, &x->gn[i], tol * (1 + mag),
                                       tol + (y.g16[i].buf ? u : 0), &me);
            CHECK(bad == 0, "[%s] %s: %zu mismatches against the naive "
                  "oracle (worst %.3g x tol): %s", isa, gname[i], bad, me,
                  y.d);
        }
        for (int i = 0; i < 4; i++)
            free(nref[i]);
        b16_free(&y);
    }
}

/* 16-bit operands nothing reads in 16 bits: ATTN_EINVAL, fast and naive */
static void test_b16_refused(void)
{
    for (int it = 0; it < 8; it++) {
        bprob x;
        bprob_make(&x, 0, "refused");
        bprob_target(&x, 0);
        attn_bwd_problem bp = x.bp;
        const int f32 = bp.f.dtype == ATTN_F32;
        const char *what;
        switch (it % 4) {
        case 0: /* q of a double problem (f32: an unknown storage) */
            bp.f.q.store = f32 ? (attn_store)7 : ATTN_ST_F16;
            what = "q";
            break;
        case 1:
            bp.f.lse.store = ATTN_ST_BF16;
            what = "lse";
            break;
        case 2:
            bp.f.mask.store = ATTN_ST_F16;
            what = "mask";
            break;
        default:
            bp.f.alibi.store = ATTN_ST_BF16;
            what = "alibi";
            break;
        }
        attn_exec ex = {2, NULL, NULL};
        const attn_status st = attn_sdpa_backward(&bp, &ex);
        CHECK(st == ATTN_EINVAL, "16-bit %s (%s): status %d, not EINVAL",
              what, f32 ? "f32" : "f64", (int)st);
        if (it % 4 != 1) { /* (the oracle reads a 16-bit lse) */
            const attn_status stn = attn_sdpa_backward_naive(&bp);
            CHECK(stn == ATTN_EINVAL, "naive: 16-bit %s (%s): status %d, "
                  "not EINVAL", what, f32 ? "f32" : "f64", (int)stn);
        }
        bprob_free(&x);
    }
}

/* B batch offsets of items of n elements each                          */
static ptrdiff_t *boffs(size_t B, size_t n)
{
    ptrdiff_t *o = malloc((B + 1) * sizeof *o);
    CHECK(o != NULL, "boffs: out of memory");
    for (size_t b = 0; o && b < B; b++)
        o[b] = (ptrdiff_t)(b * n);
    return o;
}

/* the backward's P = exp(s - lse) takes the forward's very scores s: a
 * backward on 16-bit q, k (v, dout float) against a float one with q = 0
 * and bias = the forward's raw scores times scale (0 + bias: exactly
 * those scores), the same lse, v, dout: dV = P^T dout the same bits. On
 * "amx" the forward's scores are the tiles' (test_amx.c), for few
 * rows too                                                              */
static void test_b16_scores(const char *isa, attn_store st, size_t B,
                            size_t L, size_t S, size_t E, int nt)
{
    const size_t Ev = 8 + irand(24);
    uint16_t *q16 = malloc(B * L * E * 2 + 2), *k16 = malloc(B * S * E * 2 + 2);
    float *qz = calloc(B * L * E + 1, 4), *kf = malloc(B * S * E * 4 + 4),
          *v = malloc(B * S * Ev * 4 + 4), *dout = malloc(B * L * Ev * 4 + 4),
          *out = malloc(B * L * Ev * 4 + 4), *lse = malloc(B * L * 4 + 4),
          *sc = malloc(B * L * S * 4 + 4), *dq = malloc(B * L * E * 4 + 4),
          *dk = malloc(B * S * E * 4 + 4), *dv = malloc(B * S * Ev * 4 + 4),
          *dv2 = malloc(B * S * Ev * 4 + 4);
    ptrdiff_t *oqe = boffs(B, L * E), *ose = boffs(B, S * E),
              *osv = boffs(B, S * Ev), *olv = boffs(B, L * Ev),
              *ol = boffs(B, L), *ols = boffs(B, L * S);
    CHECK(q16 && k16 && qz && kf && v && dout && out && lse && sc && dq && dk
              && dv && dv2 && oqe && ose && osv && olv && ol && ols,
          "scores: out of memory");
    for (size_t i = 0; q16 && i < B * L * E; i++)
        q16[i] = to16(st, (float)(urand() + urand() + urand() - 1.5));
    for (size_t i = 0; k16 && i < B * S * E; i++) {
        k16[i] = to16(st, (float)(urand() + urand() + urand() - 1.5));
        kf[i] = from16(st, k16[i]);
    }
    for (size_t i = 0; v && i < B * S * Ev; i++)
        v[i] = (float)(urand() - 0.5);
    for (size_t i = 0; dout && i < B * L * Ev; i++)
        dout[i] = (float)(urand() - 0.5);
    attn_problem f;
    memset(&f, 0, sizeof f);
    f.dtype = ATTN_F32;
    f.B = B, f.L = L, f.S = S, f.E = E, f.Ev = Ev;
    f.scale = 1.0 / sqrt((double)E);
    f.causal = (attn_causal)irand(2);
    f.q = (attn_mat){q16, oqe, (ptrdiff_t)E, 1, st};
    f.k = (attn_mat){k16, ose, (ptrdiff_t)E, 1, st};
    f.v = (attn_mat){v, osv, (ptrdiff_t)Ev, 1, ATTN_ST_NATIVE};
    f.out = (attn_mat){out, olv, (ptrdiff_t)Ev, 1, ATTN_ST_NATIVE};
    f.lse = (attn_mat){lse, ol, 1, 0, ATTN_ST_NATIVE};
    f.scores = (attn_mat){sc, ols, (ptrdiff_t)S, 1, ATTN_ST_NATIVE};
    attn_exec ex = {nt, NULL, NULL};
    const attn_status s1 = attn_sdpa(&f, &ex);
    f.scores = (attn_mat){0};
    attn_bwd_problem bp;
    memset(&bp, 0, sizeof bp);
    bp.f = f;
    bp.dout = (attn_mat){dout, olv, (ptrdiff_t)Ev, 1, ATTN_ST_NATIVE};
    bp.dq = (attn_mat){dq, oqe, (ptrdiff_t)E, 1, ATTN_ST_NATIVE};
    bp.dk = (attn_mat){dk, ose, (ptrdiff_t)E, 1, ATTN_ST_NATIVE};
    bp.dv = (attn_mat){dv, osv, (ptrdiff_t)Ev, 1, ATTN_ST_NATIVE};
    const attn_status s2 = attn_sdpa_backward(&bp, &ex);
    /* the float twin: scores 0 + bias */
    for (size_t i = 0; i < B * L * S; i++)
        sc[i] *= (float)f.scale;
    bp.f.q = (attn_mat){qz, oqe, (ptrdiff_t)E, 1, ATTN_ST_NATIVE};
    bp.f.k = (attn_mat){kf, ose, (ptrdiff_t)E, 1, ATTN_ST_NATIVE};
    bp.f.bias = (attn_mat){sc, ols, (ptrdiff_t)S, 1, ATTN_ST_NATIVE};
    bp.dv.data = dv2;
    const attn_status s3 = attn_sdpa_backward(&bp, &ex);
    size_t bad = 0;
    for (size_t i = 0; i < B * S * Ev; i++)
        bad += attn_f32_to_bits(dv[i]) != attn_f32_to_bits(dv2[i]);
    CHECK(s1 == ATTN_OK && s2 == ATTN_OK && s3 == ATTN_OK && bad == 0,
          "[%s] %s B=%zu L=%zu S=%zu E=%zu causal=%d threads=%d: "
          "statuses %d %d %d, %zu of dV not from the forward's scores", isa,
          st == ATTN_ST_BF16 ? "bf16" : "f16", B, L, S, E, (int)f.causal,
          nt, (int)s1, (int)s2, (int)s3, bad);
    free(q16), free(k16), free(qz), free(kf), free(v), free(dout);
    free(out), free(lse), free(sc), free(dq), free(dk), free(dv), free(dv2);
    free(oqe), free(ose), free(osv), free(olv), free(ol), free(ols);
}

/* instruction set i, when this CPU has it: small and big problems     */
static void test_b16_isa(int i, int count, uint64_t seed)
{
    if (!check_use_isa(i))
        return;
    rng_state = seed + (uint64_t)i;
    count = check_count(i, count);
    test_b16_random(check_isa(i), count, 0);
    test_b16_random(check_isa(i), count / 8 + 1, 1);
    /* split and fused items, decoding rows (L <= 4), E = 2 */
    static const size_t shapes[][4] = {
        {1, 37, 300, 64}, {5, 20, 150, 32}, {2, 3, 200, 64}, {1, 50, 70, 2}};
    for (size_t n = 0; n < sizeof shapes / sizeof *shapes; n++)
        for (int st = 0; st < 2; st++)
            test_b16_scores(check_isa(i), st ? ATTN_ST_BF16 : ATTN_ST_F16,
                            shapes[n][0], shapes[n][1], shapes[n][2],
                            shapes[n][3], 1 + (int)(n % 3));
}

int main(int argc, char **argv)
{
    const clock_t t0 = clock();
    const int count = argc > 1 ? atoi(argv[1]) : 8;
    const uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 10) : 1616;
    attn__min_flops_per_thread = 0; /* threads even for tiny problems */
    for (int i = 0; i < CHECK_NISA; i++)
        test_b16_isa(i, count, seed);
    CHECK(attn_set_isa("auto") == 0, "set_isa(auto)");
    rng_state = seed + 99;
    test_b16_refused();
    return check_summary(t0);
}
