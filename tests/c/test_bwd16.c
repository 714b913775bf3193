/*
 * test_bwd16.c -- C tests of the backward pass with 16-bit operands
 * (attn_mat.store = ATTN_ST_F16 / ATTN_ST_BF16), without Python:
 *
 *   on every instruction set this CPU has, random float problems (every
 *   layout, mask, bias, causal alignment, fully_masked policy, variants:
 *   window, ALiBi, softcap, positions; inf/NaN elements) whose inputs are
 *   exactly 16-bit numbers: each of q, k, v, out, dout read in 16 bits or
 *   in float, each of dq, dk, dv, dbias written in 16 bits or in float.
 *   The 16-bit gradients are bit for bit the float32 backward's on the
 *   same (upcast) inputs rounded once (half.h), the float ones bit for
 *   bit the float32 backward's, for 1, 2, 3 and 7 threads; statuses and
 *   the first fully masked row the same
 *   the naive oracle reading the same 16-bit operands: bit for bit its
 *   own float run on the upcast inputs; the fast 16-bit gradients
 *   within the 16-bit rounding of it
 *   ATTN_EINVAL for 16-bit operands the kernels do not read in 16 bits
 *   (any of a double problem, an unknown storage, bias, lse, mask; the
 *   oracle: the first two and the mask)
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
    }
}

typedef struct {
    bprob x;
    attn_store st;
    operand in16[5];   /* q, k, v, out, dout in 16 bits (buf NULL: float) */
    operand g16[4];    /* dq, dk, dv, dbias in 16 bits (buf NULL: float)  */
    unsigned char *ref[4]; /* the float32 backward's gradients           */
    attn_status ref_st;
    size_t ref_b, ref_row;
    char d[500];
} b16;

static void b16_free(b16 *y)
{
    for (int i = 0; i < 5; i++)
        free(y->in16[i].buf);
    for (int i = 0; i < 4; i++) {
        free(y->g16[i].buf);
        free(y->ref[i]);
    }
    bprob_free(&y->x);
}

/* a float problem with 16-bit inputs: out and dout rounded too; the
 * float32 backward (1 thread) as the reference                           */
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
    bprob_target(x, 0);
    attn_exec ex = {1, NULL, NULL};
    y->ref_st = attn_sdpa_backward(&x->bp, &ex);
    y->ref_b = x->bp.f.bad_b;
    y->ref_row = x->bp.f.bad_row;
    for (int i = 0; i < 4 && x->g[i].buf; i++)
        y->ref[i] = dup_buf(&x->g[i]);
    /* the 16-bit twins: each operand 16-bit with probability 3/4       */
    const operand *ins[5] = {&x->t.q, &x->t.k, &x->t.v, &out, &x->dout};
    int any = 0;
    for (int i = 0; i < 5; i++)
        if (irand(4)) {
            op_twin16(&y->in16[i], ins[i], y->st);
            any = 1;
        }
    for (int i = 0; i < 4 && x->g[i].buf; i++)
        if (irand(4) || (!any && i == 0))
            op_twin16(&y->g16[i], &x->g[i], y->st); /* sentinels, 16 bits */
}

/* point the backward problem at the 16-bit operands where there are     */
static void b16_target(b16 *y, int naive)
{
    bprob *x = &y->x;
    bprob_target(x, naive);
    attn_mat *in[5] = {&x->bp.f.q, &x->bp.f.k, &x->bp.f.v, &x->bp.f.out,
                       &x->bp.dout};
    for (int i = 0; i < 5; i++)
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
            for (int i = 0; st == ATTN_OK && i < 4 && x->g[i].buf; i++)
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
            bp.f.bias.store = ATTN_ST_BF16;
            what = "bias";
            break;
        }
        attn_exec ex = {2, NULL, NULL};
        const attn_status st = attn_sdpa_backward(&bp, &ex);
        CHECK(st == ATTN_EINVAL, "16-bit %s (%s): status %d, not EINVAL",
              what, f32 ? "f32" : "f64", (int)st);
        if (it % 4 == 0 || it % 4 == 2) { /* (the oracle reads a 16-bit
                                               bias or lse)             */
            const attn_status stn = attn_sdpa_backward_naive(&bp);
            CHECK(stn == ATTN_EINVAL, "naive: 16-bit %s (%s): status %d, "
                  "not EINVAL", what, f32 ? "f32" : "f64", (int)stn);
        }
        bprob_free(&x);
    }
}

/* instruction set i, when this CPU has it: small and big problems     */
static void test_b16_isa(int i, int count, uint64_t seed)
{
    if (!check_use_isa(i))
        return;
    rng_state = seed + (uint64_t)i;
    test_b16_random(check_isa(i), count, 0);
    test_b16_random(check_isa(i), count / 8 + 1, 1);
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
