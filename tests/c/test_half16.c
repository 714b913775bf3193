/*
 * tests/c/test_half16.c -- attn_sdpa with operands stored in 16 bits
 * (float16, bfloat16) in a float call, on every instruction set:
 *
 *   bits     a call with 16-bit operands gives exactly the float call on
 *            the exactly upcast operands, with each 16-bit result (out,
 *            weights, scores) rounded once to nearest even, and the same
 *            float lse: random shapes, strides, masks, causal, windows,
 *            softcap, ALiBi, biases, fully masked rows of every policy;
 *            bfloat16 Q and K scored by AVX512-BF16 pairs: close to it
 *   batch    a row's output (16-bit inputs) is the same bits whatever else is in
 *            the call: decoding it alone (L = 1) or inside a long Q, one
 *            thread or several, a split call or not (on AVX-512 with
 *            AVX512_BF16 the bfloat16 cases run the pair kernels)
 *   refused  a 16-bit operand the fast path cannot read (mask, lse,
 *            ALiBi slopes, a double call, an unknown storage) is
 *            ATTN_EINVAL and the output is untouched
 *
 *   test_half16 [COUNT [SEED]]   COUNT random problems per set (default 12)
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
#include "runtime/platform.h"
#include "runtime/sched.h"

/* One (B, R, C) operand in a random layout, stored as `st`, and its float
 * twin (the same values, upcast exactly; same layout).                  */
typedef struct {
    attn_store st;
    size_t B, R, C, n;  /* n: elements of the buffer                   */
    ptrdiff_t s0, s1;
    ptrdiff_t *boff;
    void *raw;          /* the operand's storage (2 or 4 bytes each)    */
    float *f;           /* float twin                                   */
} opnd;

static size_t esz(attn_store st) { return st ? 2 : 4; }

static void op_init(opnd *o, attn_store st, size_t B, size_t R, size_t C,
                    int layout)
{
    memset(o, 0, sizeof *o);
    o->st = st;
    o->B = B, o->R = R, o->C = C;
    const size_t pad = layout == 2 ? 3 : 0;
    if (layout == 1) { /* column-major rows: s1 = R */
        o->s0 = 1;
        o->s1 = (ptrdiff_t)R;
    } else {
        o->s0 = (ptrdiff_t)(C + pad);
        o->s1 = 1;
    }
    const size_t per = (R ? R : 1) * (C + pad) + 5;
    o->n = B * per;
    o->boff = malloc(B * sizeof *o->boff);
    for (size_t b = 0; b < B; b++) /* batch items in reverse order */
        o->boff[b] = (ptrdiff_t)((B - 1 - b) * per + 2);
    o->raw = calloc(o->n ? o->n : 1, esz(st));
    o->f = calloc(o->n ? o->n : 1, sizeof(float));
}

static size_t op_at(const opnd *o, size_t b, size_t r, size_t c)
{
    return (size_t)(o->boff[b] + (ptrdiff_t)r * o->s0 + (ptrdiff_t)c * o->s1);
}

/* a value as stored, the twin gets it upcast */
static void op_put(opnd *o, size_t x, float v)
{
    if (o->st == ATTN_ST_NATIVE) {
        ((float *)o->raw)[x] = v;
    } else {
        uint16_t *h = o->raw;
        h[x] = o->st == ATTN_ST_F16 ? attn_f32_to_f16(v) : attn_f32_to_bf16(v);
    }
    o->f[x] = attn_load_f32(o->st, o->raw, (ptrdiff_t)x);
}

static void op_fill(opnd *o, double amp)
{
    for (size_t b = 0; b < o->B; b++)
        for (size_t r = 0; r < o->R; r++)
            for (size_t c = 0; c < o->C; c++)
                op_put(o, op_at(o, b, r, c), (float)((urand() * 2 - 1) * amp));
}

/* a written operand: both buffers set to one sentinel pattern           */
static void op_sentinel(opnd *o)
{
    for (size_t x = 0; x < o->n; x++)
        op_put(o, x, -1234.5f);
}

static void op_free(opnd *o)
{
    free(o->boff);
    free(o->raw);
    free(o->f);
}

static attn_mat mat_raw(const opnd *o)
{
    attn_mat m = {o->raw, o->boff, o->s0, o->s1, o->st};
    return m;
}

static attn_mat mat_f(const opnd *o)
{
    attn_mat m = {o->f, o->boff, o->s0, o->s1, ATTN_ST_NATIVE};
    return m;
}

/* elements of `got` (as stored) that are not the float result `want`
 * rounded once; the first few printed                                    */
static size_t op_diff(const opnd *got, const opnd *want, const char *what,
                      const char *desc)
{
    size_t bad = 0;
    for (size_t x = 0; x < got->n; x++) {
        uint32_t g, w;
        if (got->st == ATTN_ST_NATIVE) {
            g = attn_f32_to_bits(((const float *)got->raw)[x]);
            w = attn_f32_to_bits(want->f[x]);
        } else {
            g = ((const uint16_t *)got->raw)[x];
            w = got->st == ATTN_ST_F16 ? attn_f32_to_f16(want->f[x])
                                       : attn_f32_to_bf16(want->f[x]);
        }
        if (g != w && bad++ < 3)
            printf("  %s [%zu]: 0x%x, want 0x%x (%s)\n", what, x, g, w, desc);
    }
    return bad;
}

static float op_val(const opnd *o, size_t x)
{
    return attn_load_f32(o->st, o->raw, (ptrdiff_t)x);
}

/* elements of `got` farther from the float result `want` than the
 * AVX512-BF16 scores allow: 2^-7 relative (a bfloat16 ulp of the
 * result) plus 1e-3 of the largest magnitude; NaN where want is NaN    */
static size_t op_far(const opnd *got, const opnd *want, const char *what,
                     const char *desc)
{
    double big = 0;
    for (size_t x = 0; x < want->n; x++)
        if (isfinite(want->f[x]) && fabs(want->f[x]) > big)
            big = fabs(want->f[x]);
    size_t bad = 0;
    for (size_t x = 0; x < got->n; x++) {
        const double g = op_val(got, x), w = want->f[x];
        const int ok = isnan(w) ? isnan(g)
                       : isinf(w) ? g == w
                                  : fabs(g - w) <= 1e-3 * big + 0x1p-7 * fabs(w);
        if (!ok && bad++ < 3)
            printf("  %s [%zu]: %.9g, want %.9g (%s)\n", what, x, g, w, desc);
    }
    return bad;
}

/* the scores of this call come from AMX tiles (the opt-in "amx" set:
 * bfloat16 Q and K, E % 32 == 0, E <= 256), or its P V (bfloat16 V, Ev
 * % 16 == 0, Ev <= 256): close to the float call's, not the same bits;
 * every other call on every set gives the float call's bits           */
static int dp_path(attn_store sq, attn_store sk, attn_store sv, size_t E,
                   size_t Ev)
{
    if (strcmp(attn_isa_name(), "amx") != 0)
        return 0;
    return (sq == ATTN_ST_BF16 && sk == ATTN_ST_BF16 && E % 32 == 0
            && E <= 256)
           || (sv == ATTN_ST_BF16 && Ev % 16 == 0 && Ev <= 256);
}

static attn_store pick_store(int native_ok)
{
    const int r = (int)irand(native_ok ? 3 : 2);
    return r == 0 ? ATTN_ST_F16 : r == 1 ? ATTN_ST_BF16 : ATTN_ST_NATIVE;
}

static const char *sname(attn_store s)
{
    return s == ATTN_ST_F16 ? "f16" : s == ATTN_ST_BF16 ? "bf16" : "f32";
}

/* ---- bits: 16-bit call == float call on the upcast inputs, rounded ---- */
static void test_bits_one(int big)
{
    const size_t B = 1 + irand(3);
    const size_t L = big ? 1 + irand(90) : 1 + irand(12);
    const size_t S = big ? irand(3000) : irand(40);
    const size_t E = 1 + irand(big ? 130 : 40);
    size_t Ev = 1 + irand(big ? 130 : 40);
    attn_store sq = pick_store(1), sk = pick_store(1), sv = pick_store(1);
    if (strcmp(attn_isa_name(), "amx") == 0 && irand(2)) {
        Ev = 16 * (1 + irand(4)); /* AMX's P V (bfloat16 V, Ev % 16 == 0) */
        sv = ATTN_ST_BF16;
    }
    const attn_store so = pick_store(1);
    if (!sq && !sk && !sv)
        sk = ATTN_ST_BF16;
    opnd q, k, v, out, outf, bias, w, wf, sc, scf, lse, lsef;
    op_init(&q, sq, B, L, E, (int)irand(3));
    op_init(&k, sk, B, S, E, (int)irand(3));
    op_init(&v, sv, B, S, Ev, (int)irand(3));
    const double amp = urand() < 0.3 ? 8.0 : 1.0;
    op_fill(&q, amp);
    op_fill(&k, 1.0);
    op_fill(&v, 1.0);
    const int lay = (int)irand(3);
    op_init(&out, so, B, L, Ev, lay);
    op_init(&outf, ATTN_ST_NATIVE, B, L, Ev, lay);
    attn_problem p, pf;
    memset(&p, 0, sizeof p);
    p.dtype = ATTN_F32;
    p.B = B, p.L = L, p.S = S, p.E = E, p.Ev = Ev;
    p.scale = 1.0 / sqrt((double)E) * (0.5 + urand());
    p.causal = (attn_causal)irand(3);
    p.fully_masked = (attn_fm)irand(3); /* zero, uniform, nan */
    const int want_bias = urand() < 0.3, want_w = urand() < 0.25,
              want_sc = urand() < 0.2, want_mask = urand() < 0.3,
              want_lse = urand() < 0.5;
    uint8_t *mask = NULL;
    ptrdiff_t *mboff = NULL;
    if (want_mask) {
        mask = malloc(B * L * S + 1);
        mboff = malloc(B * sizeof *mboff);
        for (size_t x = 0; x < B * L * S; x++)
            mask[x] = urand() < 0.8;
        for (size_t b = 0; b < B; b++)
            mboff[b] = (ptrdiff_t)(b * L * S);
        attn_mat m = {mask, mboff, (ptrdiff_t)S, 1, ATTN_ST_NATIVE};
        p.mask = m;
    }
    if (urand() < 0.2) {
        p.window = 1;
        p.wleft = (ptrdiff_t)irand(20);
        p.wright = (ptrdiff_t)irand(20);
    }
    if (urand() < 0.2)
        p.softcap = 2.0 + 10.0 * urand();
    float slopes[3] = {0.25f, 0.0625f, 0.5f};
    ptrdiff_t aboff[3] = {0, 1, 2};
    if (urand() < 0.2) {
        attn_mat a = {slopes, aboff, 0, 0, ATTN_ST_NATIVE};
        p.alibi = a;
    }
    const attn_store sb = pick_store(1), sw = pick_store(1),
                     ss = pick_store(1);
    op_init(&bias, sb, B, L, S, (int)irand(3));
    op_fill(&bias, 2.0);
    op_init(&w, sw, B, L, S, 0);
    op_init(&wf, ATTN_ST_NATIVE, B, L, S, 0);
    op_init(&sc, ss, B, L, S, 1);
    op_init(&scf, ATTN_ST_NATIVE, B, L, S, 1);
    op_init(&lse, ATTN_ST_NATIVE, B, L, 1, 0);
    op_init(&lsef, ATTN_ST_NATIVE, B, L, 1, 0);
    op_sentinel(&out), op_sentinel(&outf), op_sentinel(&w), op_sentinel(&wf);
    op_sentinel(&sc), op_sentinel(&scf), op_sentinel(&lse), op_sentinel(&lsef);
    pf = p;
    p.q = mat_raw(&q), p.k = mat_raw(&k), p.v = mat_raw(&v);
    p.out = mat_raw(&out);
    pf.q = mat_f(&q), pf.k = mat_f(&k), pf.v = mat_f(&v), pf.out = mat_f(&outf);
    if (want_bias)
        p.bias = mat_raw(&bias), pf.bias = mat_f(&bias);
    if (want_w)
        p.weights = mat_raw(&w), pf.weights = mat_f(&wf);
    if (want_sc)
        p.scores = mat_raw(&sc), pf.scores = mat_f(&scf);
    if (want_lse)
        p.lse = mat_raw(&lse), pf.lse = mat_f(&lsef);
    char desc[200];
    snprintf(desc, sizeof desc,
             "B%zu L%zu S%zu E%zu Ev%zu q %s k %s v %s out %s bias %s w %s "
             "sc %s causal %d win %d cap %d alibi %d mask %d", B, L, S, E, Ev,
             sname(sq), sname(sk), sname(sv), sname(so),
             want_bias ? sname(sb) : "-", want_w ? sname(sw) : "-",
             want_sc ? sname(ss) : "-", (int)p.causal, p.window,
             p.softcap > 0, p.alibi.data != NULL, want_mask);
    attn_exec ex = {1 + (int)irand(3), NULL, NULL};
    const attn_status st16 = attn_sdpa(&p, &ex);
    const attn_status st32 = attn_sdpa(&pf, &ex);
    CHECK(st16 == ATTN_OK && st32 == ATTN_OK, "status %d / %d: %s", st16,
          st32, desc);
    /* the float call wrote its results into the twins: compare rounded */
    size_t (*cmp)(const opnd *, const opnd *, const char *, const char *) =
        dp_path(sq, sk, sv, E, Ev) ? op_far : op_diff;
    CHECK(cmp(&out, &outf, "out", desc) == 0, "out: %s", desc);
    CHECK(cmp(&lse, &lsef, "lse", desc) == 0, "lse: %s", desc);
    if (want_w)
        CHECK(cmp(&w, &wf, "weights", desc) == 0, "weights: %s", desc);
    if (want_sc)
        CHECK(cmp(&sc, &scf, "scores", desc) == 0, "scores: %s", desc);
    opnd *all[] = {&q, &k, &v, &out, &outf, &bias, &w, &wf, &sc, &scf,
                   &lse, &lsef};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        op_free(all[i]);
    free(mask);
    free(mboff);
}

/* ---- batch invariance: a row's bits whatever the call around it ----- */
static void test_batch(attn_store st, size_t S, size_t E, size_t L,
                       int causal)
{
    const size_t B = 2;
    opnd q, k, v, out, row;
    op_init(&q, st, B, L, E, 0);
    op_init(&k, st, B, S, E, 0);
    op_init(&v, st, B, S, E, 0);
    op_fill(&q, 1.0), op_fill(&k, 1.0), op_fill(&v, 1.0);
    /* float outputs: the last bits of the sums show (a 16-bit out would
     * round most differences away)                                     */
    op_init(&out, ATTN_ST_NATIVE, B, L, E, 0);
    op_init(&row, ATTN_ST_NATIVE, B, 1, E, 0);
    attn_problem p;
    memset(&p, 0, sizeof p);
    p.dtype = ATTN_F32;
    p.B = B, p.L = L, p.S = S, p.E = E, p.Ev = E;
    p.scale = 1.0 / sqrt((double)E);
    p.causal = causal ? ATTN_CAUSAL_BOTTOM_RIGHT : ATTN_CAUSAL_NONE;
    p.q = mat_raw(&q), p.k = mat_raw(&k), p.v = mat_raw(&v);
    p.out = mat_raw(&out);
    attn_exec ex1 = {1, NULL, NULL}, ex3 = {3, NULL, NULL};
    CHECK(attn_sdpa(&p, &ex3) == ATTN_OK, "batch: long call");
    /* the last row alone, as a decode step: L = 1, and the S keys it sees
     * (bottom-right causal: the same keys)                             */
    const size_t i = L - 1;
    ptrdiff_t qoff[2], ooff[2];
    for (size_t b = 0; b < B; b++) {
        qoff[b] = q.boff[b] + (ptrdiff_t)i * q.s0;
        ooff[b] = row.boff[b];
    }
    attn_problem d = p;
    d.L = 1;
    d.q.boff = qoff;
    d.out = mat_raw(&row);
    d.out.boff = ooff;
    for (int t = 0; t < 2; t++) {
        op_sentinel(&row);
        CHECK(attn_sdpa(&d, t ? &ex3 : &ex1) == ATTN_OK, "batch: decode");
        size_t bad = 0;
        for (size_t b = 0; b < B; b++)
            for (size_t c = 0; c < E; c++) {
                const float g = ((float *)row.raw)[op_at(&row, b, 0, c)];
                const float w = ((float *)out.raw)[op_at(&out, b, i, c)];
                bad += attn_f32_to_bits(g) != attn_f32_to_bits(w);
            }
        CHECK(bad == 0, "batch %s S%zu E%zu L%zu causal %d threads %d: %zu "
              "elements of the decoded row differ", sname(st), S, E, L,
              causal, t ? 3 : 1, bad);
    }
    op_free(&q), op_free(&k), op_free(&v), op_free(&out), op_free(&row);
}

/* ---- refused operands ------------------------------------------------ */
static void test_refused(void)
{
    float qf[4] = {1, 2, 3, 4}, of[4] = {7, 7, 7, 7}, lse[2] = {0, 0};
    uint16_t qh[4] = {0x3c00, 0x3c00, 0x3c00, 0x3c00}, oh[4] = {1, 2, 3, 4};
    uint8_t mask[4] = {1, 1, 1, 1};
    double qd[4] = {1, 2, 3, 4};
    for (int which = 0; which < 6; which++) {
        attn_problem p;
        memset(&p, 0, sizeof p);
        p.dtype = ATTN_F32;
        p.B = 1, p.L = 2, p.S = 2, p.E = 2, p.Ev = 2;
        p.scale = 1.0;
        attn_mat mf = {qf, NULL, 2, 1, ATTN_ST_NATIVE};
        attn_mat mh = {qh, NULL, 2, 1, ATTN_ST_F16};
        attn_mat mo = {oh, NULL, 2, 1, ATTN_ST_BF16};
        p.q = mh, p.k = mf, p.v = mf, p.out = mo;
        switch (which) {
        case 0: { /* mask stored "in 16 bits" */
            attn_mat m = {mask, NULL, 2, 1, ATTN_ST_F16};
            p.mask = m;
            break;
        }
        case 1: { /* lse */
            attn_mat m = {lse, NULL, 1, 0, ATTN_ST_BF16};
            p.lse = m;
            break;
        }
        case 2: { /* alibi slopes */
            attn_mat m = {lse, NULL, 0, 0, ATTN_ST_F16};
            p.alibi = m;
            break;
        }
        case 3: /* a double call */
            p.dtype = ATTN_F64;
            p.k.data = qd, p.v.data = qd;
            break;
        case 4: /* unknown storage */
            p.k.store = (attn_store)7;
            break;
        default: { /* the float out untouched by a refused call */
            attn_mat m = {of, NULL, 2, 1, ATTN_ST_NATIVE};
            p.out = m;
            p.k.store = (attn_store)3;
            break;
        }
        }
        attn_exec ex = {1, NULL, NULL};
        CHECK(attn_sdpa(&p, &ex) == ATTN_EINVAL, "refused case %d accepted",
              which);
        CHECK(oh[0] == 1 && oh[3] == 4 && of[0] == 7,
              "refused case %d wrote the output", which);
    }
}

int main(int argc, char **argv)
{
    const int count = argc > 1 ? atoi(argv[1]) : 12;
    const uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 10) : 777;
    clock_t t0 = clock();
    attn__min_flops_per_thread = 0; /* threads (and splits) on small calls */
    test_refused();
    for (int i = 0; i < CHECK_NISA; i++) {
        if (!check_use_isa(i))
            continue;
        rng_state = seed + (uint64_t)i;
        for (int n = 0; n < count; n++)
            test_bits_one(0);
        for (int n = 0; n < count / 4 + 1; n++)
            test_bits_one(!check_small()); /* check.h: small under valgrind */
        for (int s = 0; s < 2; s++) {
            const attn_store st = s ? ATTN_ST_BF16 : ATTN_ST_F16;
            test_batch(st, 9000, 64, 19, 0);
            test_batch(st, 5000, 128, 7, 1);
            test_batch(st, 300, 40, 3, 0);
            test_batch(st, 700, 64, 200, 1); /* query blocks sharing the
                                                 converted K / V blocks */
        }
    }
    return check_summary(t0);
}
