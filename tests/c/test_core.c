/*
 * test_core.c -- C tests of the attnpy core, without Python.
 *
 *   attn_sdpa (every instruction set this CPU has, 1 and 2 threads)
 *     against attn_sdpa_naive over many random problems: float32/float64,
 *     L != S, Ev != E, strided / transposed / negative-stride / broadcast
 *     operands, uint8 mask, bias with -inf, causal (both alignments), every
 *     fully_masked policy, S == 0, L == 0, weights and raw scores;
 *     bitwise: threads 1 == 2, out with weights == out without
 *   exp: ulp error of each path's vector exp against libm over a dense sweep
 *   threads: concurrent callers, fork() after a threaded call, poll/cancel
 *   small kernels: softmax, posenc, copy2d
 *
 * Build (tests/c/test_c_core.py does this):
 *   gcc -std=c11 -Wall -Wextra -Werror -O1 -g -pthread -Icsrc/core \
 *       tests/c/test_core.c $(find csrc/core -name "*.c") -lm -o test_core
 * Prints one line per failure and "N passed, M failed"; exit status 1 on
 * any failure.
 */
#ifndef ATTNPY_TEST_CORE_C /* test_variants.c includes it twice, indirectly */
#define ATTNPY_TEST_CORE_C
#define _GNU_SOURCE
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifndef _WIN32 /* Windows has no fork() */
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#define HAVE_FORK 1
#endif

#include "attn.h"
#include "calls.h"
#include "attention/kern.h"

#define TEST_RNG_SEED 0x9E3779B97F4A7C15ULL
#include "check.h"
#include "isa/kernels.h"
static size_t pick(const size_t *v, size_t n) { return v[irand(n)]; }

/* ------------------------------------------------------------------------ */
/* batched 2-D operands with random layouts                                 */
/* ------------------------------------------------------------------------ */
typedef struct {
    size_t B, R, C, esz;
    unsigned char *buf; /* whole allocation                        */
    size_t nbytes;
    ptrdiff_t *boff;    /* NULL when batch-broadcast               */
    attn_mat m;
} operand;

enum { LAY_ANY = 0, LAY_OUTPUT = 1 };

/* kind: LAY_OUTPUT = no broadcasting (every element written once) */
static void op_make(operand *o, size_t B, size_t R, size_t C, size_t esz,
                    int kind)
{
    memset(o, 0, sizeof *o);
    o->B = B;
    o->R = R;
    o->C = C;
    o->esz = esz;
    ptrdiff_t u = irand(4) == 0 ? 2 : 1;
    ptrdiff_t s0, s1;
    if (irand(3) == 0) { /* column-major */
        s0 = u;
        s1 = u * (ptrdiff_t)(R + irand(3));
    } else {
        s1 = u;
        s0 = u * (ptrdiff_t)(C + irand(3));
    }
    if (irand(4) == 0)
        s0 = -s0;
    if (irand(6) == 0)
        s1 = -s1;
    if (kind == LAY_ANY && irand(8) == 0)
        s0 = 0; /* every row the same */
    ptrdiff_t span = (ptrdiff_t)(R + 1) * (s0 < 0 ? -s0 : s0)
                     + (ptrdiff_t)(C + 1) * (s1 < 0 ? -s1 : s1) + 1;
    ptrdiff_t sb = span + (ptrdiff_t)irand(5);
    int bcast = kind == LAY_ANY && irand(6) == 0;
    if (irand(4) == 0)
        sb = -sb;
    /* offsets: lowest corner -> 0 */
    ptrdiff_t lo = 0, hi = 0;
    ptrdiff_t cb[2] = {0, bcast ? 0 : (ptrdiff_t)(B ? B - 1 : 0) * sb};
    ptrdiff_t cr[2] = {0, (ptrdiff_t)(R ? R - 1 : 0) * s0};
    ptrdiff_t cc[2] = {0, (ptrdiff_t)(C ? C - 1 : 0) * s1};
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++)
            for (int c = 0; c < 2; c++) {
                ptrdiff_t x = cb[a] + cr[b] + cc[c];
                lo = x < lo ? x : lo;
                hi = x > hi ? x : hi;
            }
    size_t n = (size_t)(hi - lo + 1) + 7;
    o->nbytes = n * esz;
    o->buf = malloc(o->nbytes);
    if (!bcast || irand(2)) {
        o->boff = malloc((B + 1) * sizeof(ptrdiff_t));
        for (size_t b = 0; b < B; b++)
            o->boff[b] = (bcast ? 0 : (ptrdiff_t)b * sb) - lo + 3;
        o->m.data = o->buf;
    } else {
        o->boff = NULL;
        o->m.data = o->buf + (size_t)(-lo + 3) * esz;
    }
    o->m.boff = o->boff;
    o->m.s0 = s0;
    o->m.s1 = s1;
}

static void op_free(operand *o)
{
    free(o->buf);
    free(o->boff);
    memset(o, 0, sizeof *o);
}

static size_t op_index(const operand *o, size_t b, size_t r, size_t c)
{
    ptrdiff_t base = (o->boff ? o->boff[b]
                              : ((unsigned char *)o->m.data - o->buf)
                                    / (ptrdiff_t)o->esz);
    return (size_t)(base + (ptrdiff_t)r * o->m.s0 + (ptrdiff_t)c * o->m.s1);
}

static double op_get(const operand *o, size_t b, size_t r, size_t c)
{
    size_t i = op_index(o, b, r, c);
    if (o->esz == 4)
        return ((float *)o->buf)[i];
    return ((double *)o->buf)[i];
}

static void op_set(operand *o, size_t b, size_t r, size_t c, double v)
{
    size_t i = op_index(o, b, r, c);
    if (o->esz == 4)
        ((float *)o->buf)[i] = (float)v;
    else if (o->esz == 8)
        ((double *)o->buf)[i] = v;
    else
        o->buf[i] = (unsigned char)v;
}

/* fill the whole allocation with a sentinel, then the elements */
static void op_fill_sentinel(operand *o, double v)
{
    size_t n = o->nbytes / o->esz;
    for (size_t i = 0; i < n; i++) {
        if (o->esz == 4)
            ((float *)o->buf)[i] = (float)v;
        else if (o->esz == 8)
            ((double *)o->buf)[i] = v;
        else
            o->buf[i] = (unsigned char)v;
    }
}

/* ------------------------------------------------------------------------ */
/* comparing results                                                        */
/* ------------------------------------------------------------------------ */

/* whole allocations: NaN matches NaN, inf matches inf, else
 * |a - b| <= atol + rtol |b| ; returns the number of mismatches */
static size_t cmp_buf(const operand *got, const operand *want, double atol,
                      double rtol, double *maxerr)
{
    size_t n = got->nbytes / got->esz, bad = 0;
    for (size_t i = 0; i < n; i++) {
        double a = got->esz == 4 ? ((float *)got->buf)[i]
                                 : ((double *)got->buf)[i];
        double b = want->esz == 4 ? ((float *)want->buf)[i]
                                  : ((double *)want->buf)[i];
        if (isnan(b) || isnan(a)) {
            bad += !(isnan(a) && isnan(b));
            continue;
        }
        if (isinf(b) || isinf(a)) {
            bad += a != b;
            continue;
        }
        double e = fabs(a - b);
        double lim = atol + rtol * fabs(b);
        if (e > lim)
            bad++;
        if (maxerr && e / (atol + rtol * fabs(b)) > *maxerr)
            *maxerr = e / (atol + rtol * fabs(b));
    }
    return bad;
}

/* ------------------------------------------------------------------------ */
/* random attention problems                                                */
/* ------------------------------------------------------------------------ */
typedef struct {
    attn_problem p;
    operand q, k, v, mask, bias;
    operand alibi;                    /* (B, 1, 1) slopes: test_variants.c */
    operand out, w, sc;               /* the fast path's outputs   */
    operand out_n, w_n, sc_n;         /* the naive oracle's        */
    double vmax, qmax, kmax;
    attn_status st_naive;
    size_t nb_b, nb_row;
} prob;

static void fill_normalish(operand *o, double amp)
{
    for (size_t b = 0; b < o->B; b++)
        for (size_t r = 0; r < o->R; r++)
            for (size_t c = 0; c < o->C; c++)
                op_set(o, b, r, c, amp * (urand() + urand() + urand() - 1.5));
}

static double max_abs(const operand *o)
{
    double m = 0;
    for (size_t b = 0; b < o->B; b++)
        for (size_t r = 0; r < o->R; r++)
            for (size_t c = 0; c < o->C; c++) {
                double x = fabs(op_get(o, b, r, c));
                if (x > m && !isinf(x))
                    m = x;
            }
    return m;
}

static void prob_outputs(prob *t, int want_w, int want_sc)
{
    const attn_problem *p = &t->p;
    size_t esz = p->dtype == ATTN_F32 ? 4 : 8;
    op_make(&t->out, p->B, p->L, p->Ev, esz, LAY_OUTPUT);
    t->out_n = t->out;
    t->out_n.buf = malloc(t->out.nbytes);
    t->out_n.boff = NULL; /* boff shared with out; freed once */
    if (want_w) {
        op_make(&t->w, p->B, p->L, p->S, esz, LAY_OUTPUT);
        t->w_n = t->w;
        t->w_n.buf = malloc(t->w.nbytes);
        t->w_n.boff = NULL;
    }
    if (want_sc) {
        op_make(&t->sc, p->B, p->L, p->S, esz, LAY_OUTPUT);
        t->sc_n = t->sc;
        t->sc_n.buf = malloc(t->sc.nbytes);
        t->sc_n.boff = NULL;
    }
}

/* point the problem's outputs at the fast (0) or naive (1) buffers */
static void prob_target(prob *t, int naive)
{
    operand *o = naive ? &t->out_n : &t->out;
    operand *w = naive ? &t->w_n : &t->w;
    operand *s = naive ? &t->sc_n : &t->sc;
    t->p.out = o->m;
    t->p.out.data = o->buf + ((unsigned char *)t->out.m.data - t->out.buf);
    memset(&t->p.weights, 0, sizeof t->p.weights);
    memset(&t->p.scores, 0, sizeof t->p.scores);
    if (t->w.buf) {
        t->p.weights = w->m;
        t->p.weights.data = w->buf + ((unsigned char *)t->w.m.data - t->w.buf);
    }
    if (t->sc.buf) {
        t->p.scores = s->m;
        t->p.scores.data = s->buf
                           + ((unsigned char *)t->sc.m.data - t->sc.buf);
    }
}

static void prob_sentinel(prob *t)
{
    double sent = -12345.0;
    op_fill_sentinel(&t->out, sent);
    memcpy(t->out_n.buf, t->out.buf, t->out.nbytes);
    if (t->w.buf) {
        op_fill_sentinel(&t->w, sent);
        memcpy(t->w_n.buf, t->w.buf, t->w.nbytes);
    }
    if (t->sc.buf) {
        op_fill_sentinel(&t->sc, sent);
        memcpy(t->sc_n.buf, t->sc.buf, t->sc.nbytes);
    }
}

static void prob_free(prob *t)
{
    op_free(&t->q);
    op_free(&t->k);
    op_free(&t->v);
    op_free(&t->mask);
    op_free(&t->bias);
    op_free(&t->alibi);
    free(t->out_n.buf);
    free(t->w_n.buf);
    free(t->sc_n.buf);
    op_free(&t->out);
    op_free(&t->w);
    op_free(&t->sc);
}

static void prob_features(prob *t);

/* called by prob_features before the oracle runs (test_variants.c adds
 * the attention variants to every random problem)                       */
static void (*prob_hook)(prob *t);

static void prob_random(prob *t, int big)
{
    static const size_t Ls[] = {0, 1, 2, 3, 5, 16, 17, 33, 64, 65, 100};
    static const size_t Ss[] = {0, 1, 2, 7, 16, 33, 64, 100, 200, 257};
    static const size_t Es[] = {0, 1, 3, 8, 16, 17, 32, 64};
    static const size_t Bs[] = {1, 1, 2, 3};
    memset(t, 0, sizeof *t);
    attn_problem *p = &t->p;
    p->dtype = irand(2) ? ATTN_F64 : ATTN_F32;
    p->B = pick(Bs, 4);
    p->L = pick(Ls, sizeof Ls / sizeof *Ls);
    p->S = pick(Ss, sizeof Ss / sizeof *Ss);
    p->E = pick(Es, sizeof Es / sizeof *Es);
    p->Ev = irand(3) ? p->E : pick(Es, sizeof Es / sizeof *Es);
    if (big && !check_small()) {
        p->B = 2;
        p->L = 130 + irand(100);
        p->S = 300 + irand(300);
        p->E = 64;
        p->Ev = 64;
    }
    prob_features(t);
}

/* the rest of a random problem of the shape in t->p (dtype, B, L, S, E,
 * Ev): random layouts and values, mask, bias, causal, policy, scale,
 * outputs; then the naive oracle's result (test_decode.c uses it too)    */
static void prob_features(prob *t)
{
    attn_problem *p = &t->p;
    size_t esz = p->dtype == ATTN_F32 ? 4 : 8;
    op_make(&t->q, p->B, p->L, p->E, esz, LAY_ANY);
    op_make(&t->k, p->B, p->S, p->E, esz, LAY_ANY);
    op_make(&t->v, p->B, p->S, p->Ev, esz, LAY_ANY);
    double amp = irand(3) ? 1.0 : 3.0;
    fill_normalish(&t->q, amp);
    fill_normalish(&t->k, amp);
    fill_normalish(&t->v, 1.0);
    p->q = t->q.m;
    p->k = t->k.m;
    p->v = t->v.m;
    if (irand(3) == 0) {
        op_make(&t->mask, p->B, p->L, p->S, 1, LAY_ANY);
        double dens = (double[]){0.0, 0.05, 0.5, 0.9, 1.0}[irand(5)];
        for (size_t b = 0; b < p->B; b++)
            for (size_t r = 0; r < p->L; r++) {
                int row_off = irand(10) == 0;
                for (size_t c = 0; c < p->S; c++)
                    op_set(&t->mask, b, r, c,
                           (!row_off && urand() < dens) ? 1 + irand(255) : 0);
            }
        p->mask = t->mask.m;
    }
    if (irand(3) == 0) {
        op_make(&t->bias, p->B, p->L, p->S, esz, LAY_ANY);
        fill_normalish(&t->bias, 2.0);
        double ninf_dens = (double[]){0.0, 0.2, 0.7}[irand(3)];
        for (size_t b = 0; b < p->B; b++)
            for (size_t r = 0; r < p->L; r++)
                for (size_t c = 0; c < p->S; c++)
                    if (urand() < ninf_dens)
                        op_set(&t->bias, b, r, c, -INFINITY);
        p->bias = t->bias.m;
    }
    /* now and then an inf / NaN value element (a key of weight 0 must
     * not spread it: attn.h), a NaN query element or a +inf / NaN bias */
    if (irand(6) == 0 && p->B && p->S && p->Ev)
        op_set(&t->v, irand(p->B), irand(p->S), irand(p->Ev),
               (double[]){INFINITY, -INFINITY, NAN}[irand(3)]);
    if (irand(10) == 0 && p->B && p->L && p->E)
        op_set(&t->q, irand(p->B), irand(p->L), irand(p->E), NAN);
    if (irand(6) == 0 && p->bias.data && p->B && p->L && p->S)
        op_set(&t->bias, irand(p->B), irand(p->L), irand(p->S),
               irand(2) ? INFINITY : NAN);
    p->causal = (attn_causal)irand(3);
    p->fully_masked = (attn_fm)irand(4);
    p->scale = irand(3) ? (p->E ? 1.0 / sqrt((double)p->E) : 1.0)
                        : 0.1 + urand();
    if (prob_hook)
        prob_hook(t);
    t->vmax = max_abs(&t->v);
    t->qmax = max_abs(&t->q);
    t->kmax = max_abs(&t->k);
    prob_outputs(t, irand(2), irand(3) == 0);
    prob_sentinel(t);
    prob_target(t, 1);
    t->st_naive = attn_sdpa_naive(p);
    t->nb_b = p->bad_b;
    t->nb_row = p->bad_row;
}

static const char *dt_name(attn_dtype d) { return d == ATTN_F32 ? "f32" : "f64"; }

static void describe(const prob *t, char *buf, size_t n)
{
    const attn_problem *p = &t->p;
    snprintf(buf, n,
             "%s B=%zu L=%zu S=%zu E=%zu Ev=%zu mask=%d bias=%d causal=%d "
             "fm=%d w=%d sc=%d q(%td,%td) k(%td,%td) v(%td,%td) o(%td,%td)",
             dt_name(p->dtype), p->B, p->L, p->S, p->E, p->Ev,
             p->mask.data != NULL, p->bias.data != NULL, (int)p->causal,
             (int)p->fully_masked, t->w.buf != NULL, t->sc.buf != NULL,
             p->q.s0, p->q.s1, p->k.s0, p->k.s1, p->v.s0, p->v.s1,
             t->out.m.s0, t->out.m.s1);
}

static double max_err_seen[2];

/* run the fast path and compare with the naive result */
static void check_fast(prob *t, const char *isa, int nthreads)
{
    char d[400];
    describe(t, d, sizeof d);
    attn_problem *p = &t->p;
    attn_exec ex = {nthreads, NULL, NULL};
    prob_target(t, 0);
    /* reset fast outputs to the sentinel state the naive run started from */
    double sent = -12345.0;
    op_fill_sentinel(&t->out, sent);
    if (t->w.buf)
        op_fill_sentinel(&t->w, sent);
    if (t->sc.buf)
        op_fill_sentinel(&t->sc, sent);
    p->bad_b = p->bad_row = 999999;
    attn_status st = attn_sdpa(p, &ex);
    CHECK(st == t->st_naive, "[%s t=%d] status %d, naive %d: %s", isa,
          nthreads, (int)st, (int)t->st_naive, d);
    if (st != t->st_naive)
        return;
    if (st == ATTN_EFULLYMASKED) {
        CHECK(p->bad_b == t->nb_b && p->bad_row == t->nb_row,
              "[%s t=%d] first fully masked (%zu,%zu), naive (%zu,%zu): %s",
              isa, nthreads, p->bad_b, p->bad_row, t->nb_b, t->nb_row, d);
        return;
    }
    const int f32 = p->dtype == ATTN_F32;
    const double rtol = f32 ? 2e-5 : 1e-12;
    double me = 0;
    size_t bad = cmp_buf(&t->out, &t->out_n, rtol * (t->vmax + 1e-30), rtol,
                         &me);
    CHECK(bad == 0, "[%s t=%d] out: %zu mismatches (worst %.3g x tol): %s",
          isa, nthreads, bad, me, d);
    if (me > max_err_seen[f32 ? 0 : 1])
        max_err_seen[f32 ? 0 : 1] = me;
    if (t->w.buf) {
        bad = cmp_buf(&t->w, &t->w_n, rtol, rtol, &me);
        CHECK(bad == 0, "[%s t=%d] weights: %zu mismatches: %s", isa,
              nthreads, bad, d);
    }
    if (t->sc.buf) {
        double a = rtol * 0.1 * (double)p->E * t->qmax * t->kmax + 1e-30;
        bad = cmp_buf(&t->sc, &t->sc_n, a, rtol, NULL);
        CHECK(bad == 0, "[%s t=%d] scores: %zu mismatches: %s", isa,
              nthreads, bad, d);
    }
}

/* copy of the fast outputs */
static unsigned char *dup_buf(const operand *o)
{
    if (!o->buf)
        return NULL;
    unsigned char *x = malloc(o->nbytes);
    memcpy(x, o->buf, o->nbytes);
    return x;
}

static void test_random_problems(const char *isa, int count, int big)
{
    for (int it = 0; it < count; it++) {
        prob t;
        prob_random(&t, big);
        check_fast(&t, isa, 1);
        unsigned char *o1 = dup_buf(&t.out), *w1 = dup_buf(&t.w),
                      *s1 = dup_buf(&t.sc);
        check_fast(&t, isa, 2);
        if (t.st_naive == ATTN_OK) {
            char d[400];
            describe(&t, d, sizeof d);
            CHECK(memcmp(o1, t.out.buf, t.out.nbytes) == 0
                      && (!w1 || memcmp(w1, t.w.buf, t.w.nbytes) == 0)
                      && (!s1 || memcmp(s1, t.sc.buf, t.sc.nbytes) == 0),
                  "[%s] 1 and 2 threads differ bitwise: %s", isa, d);
            if (t.w.buf || t.sc.buf) {
                /* out alone must be bitwise the out of the weights call */
                attn_exec ex = {1, NULL, NULL};
                memset(&t.p.weights, 0, sizeof t.p.weights);
                memset(&t.p.scores, 0, sizeof t.p.scores);
                op_fill_sentinel(&t.out, -12345.0);
                attn_status st = attn_sdpa(&t.p, &ex);
                CHECK(st == ATTN_OK && memcmp(o1, t.out.buf, t.out.nbytes) == 0,
                      "[%s] out differs with/without weights: %s", isa, d);
            }
        }
        free(o1);
        free(w1);
        free(s1);
        prob_free(&t);
    }
}

/* ------------------------------------------------------------------------ */
/* hand-made edge cases                                                     */
/* ------------------------------------------------------------------------ */

/* contiguous problem with optional features */
static void prob_simple(prob *t, attn_dtype dt, size_t B, size_t L, size_t S,
                        size_t E, size_t Ev)
{
    memset(t, 0, sizeof *t);
    attn_problem *p = &t->p;
    size_t esz = dt == ATTN_F32 ? 4 : 8;
    p->dtype = dt;
    p->B = B;
    p->L = L;
    p->S = S;
    p->E = E;
    p->Ev = Ev;
    uint64_t save = rng_state;
    /* contiguous layouts: draw until op_make picks row-major (cheap) */
    operand *ops[3] = {&t->q, &t->k, &t->v};
    size_t rows[3] = {L, S, S}, cols[3] = {E, E, Ev};
    for (int i = 0; i < 3; i++) {
        ops[i]->B = B;
        ops[i]->R = rows[i];
        ops[i]->C = cols[i];
        ops[i]->esz = esz;
        ops[i]->nbytes = (B * rows[i] * cols[i] + 1) * esz;
        ops[i]->buf = calloc(1, ops[i]->nbytes);
        ops[i]->boff = malloc((B + 1) * sizeof(ptrdiff_t));
        for (size_t b = 0; b < B; b++)
            ops[i]->boff[b] = (ptrdiff_t)(b * rows[i] * cols[i]);
        ops[i]->m.data = ops[i]->buf;
        ops[i]->m.boff = ops[i]->boff;
        ops[i]->m.s0 = (ptrdiff_t)cols[i];
        ops[i]->m.s1 = 1;
        fill_normalish(ops[i], 1.0);
    }
    rng_state = save + 1;
    p->q = t->q.m;
    p->k = t->k.m;
    p->v = t->v.m;
    p->scale = E ? 1.0 / sqrt((double)E) : 1.0;
    t->vmax = max_abs(&t->v);
    t->qmax = max_abs(&t->q);
    t->kmax = max_abs(&t->k);
}

static void run_naive(prob *t)
{
    prob_sentinel(t);
    prob_target(t, 1);
    t->st_naive = attn_sdpa_naive(&t->p);
    t->nb_b = t->p.bad_b;
    t->nb_row = t->p.bad_row;
}

static void test_edges(const char *isa)
{
    static const attn_dtype dts[2] = {ATTN_F32, ATTN_F64};
    for (int di = 0; di < 2; di++) {
        attn_dtype dt = dts[di];
        /* S == 0 under every policy, L == 0, B == 0, E == 0, Ev == 0 */
        for (int fm = 0; fm < 4; fm++) {
            size_t shapes[][5] = {{2, 5, 0, 8, 8}, {2, 0, 5, 8, 8},
                                  {0, 5, 5, 8, 8}, {2, 5, 7, 0, 3},
                                  {2, 5, 7, 4, 0}};
            for (size_t s = 0; s < 5; s++) {
                prob t;
                prob_simple(&t, dt, shapes[s][0], shapes[s][1], shapes[s][2],
                            shapes[s][3], shapes[s][4]);
                t.p.fully_masked = (attn_fm)fm;
                prob_outputs(&t, 1, 1);
                run_naive(&t);
                check_fast(&t, isa, 2);
                prob_free(&t);
            }
        }
        /* bottom-right with L > S: the first L - S rows see no key */
        for (int fm = 0; fm < 4; fm++) {
            prob t;
            prob_simple(&t, dt, 3, 70, 20, 16, 16);
            t.p.causal = ATTN_CAUSAL_BOTTOM_RIGHT;
            t.p.fully_masked = (attn_fm)fm;
            prob_outputs(&t, 1, 0);
            run_naive(&t);
            check_fast(&t, isa, 2);
            prob_free(&t);
        }
        /* raise: the first fully masked row is in a late item of batch 0,
         * an earlier row of batch 1 too: (0, 150) must be reported */
        {
            prob t;
            prob_simple(&t, dt, 2, 200, 40, 8, 8);
            op_make(&t.mask, 2, 200, 40, 1, LAY_OUTPUT);
            op_fill_sentinel(&t.mask, 1);
            for (size_t c = 0; c < 40; c++) {
                op_set(&t.mask, 0, 150, c, 0);
                op_set(&t.mask, 0, 190, c, 0);
                op_set(&t.mask, 1, 3, c, 0);
            }
            t.p.mask = t.mask.m;
            t.p.fully_masked = ATTN_FM_RAISE;
            prob_outputs(&t, 0, 0);
            run_naive(&t);
            CHECK(t.st_naive == ATTN_EFULLYMASKED && t.nb_b == 0
                      && t.nb_row == 150,
                  "naive raise reports (%zu,%zu)", t.nb_b, t.nb_row);
            for (int rep = 0; rep < 5; rep++)
                check_fast(&t, isa, 2);
            prob_free(&t);
        }
        /* special values: NaN in Q, +inf / NaN in the bias, -inf rows */
        for (int kind = 0; kind < 4; kind++) {
            prob t;
            prob_simple(&t, dt, 2, 40, 90, 16, 12);
            op_make(&t.bias, 2, 40, 90, dt == ATTN_F32 ? 4 : 8, LAY_OUTPUT);
            fill_normalish(&t.bias, 1.0);
            if (kind == 0)
                op_set(&t.q, 1, 7, 3, NAN);
            if (kind == 1)
                op_set(&t.bias, 0, 5, 80, INFINITY);
            if (kind == 2)
                op_set(&t.bias, 1, 9, 2, NAN);
            if (kind == 3) /* a row all -inf but one NaN: NaN row, not masked */
                for (size_t c = 0; c < 90; c++)
                    op_set(&t.bias, 0, 11, c, c == 70 ? NAN : -INFINITY);
            t.p.bias = t.bias.m;
            t.p.causal = kind == 3 ? ATTN_CAUSAL_NONE : ATTN_CAUSAL_TOP_LEFT;
            t.p.fully_masked = ATTN_FM_ZERO;
            prob_outputs(&t, 1, 0);
            run_naive(&t);
            check_fast(&t, isa, 2);
            prob_free(&t);
        }
        /* all scores huge and equal / huge magnitudes: no overflow */
        {
            prob t;
            prob_simple(&t, dt, 1, 33, 70, 8, 8);
            for (size_t r = 0; r < 33; r++)
                for (size_t c = 0; c < 8; c++)
                    op_set(&t.q, 0, r, c, 300.0 * (c + 1) * (r % 3 ? 1 : -1));
            t.p.scale = 1.0;
            prob_outputs(&t, 1, 0);
            run_naive(&t);
            check_fast(&t, isa, 1);
            prob_free(&t);
        }
    }
}

/* ------------------------------------------------------------------------ */
/* exp accuracy                                                             */
/* ------------------------------------------------------------------------ */
static double ulp_f(float y) /* ulp of a positive normal float */
{
    int e;
    frexpf(y, &e);
    return ldexp(1.0, e - 24);
}

static long double ulp_d(double y)
{
    int e;
    frexp(y, &e);
    return ldexpl(1.0L, e - 53);
}

static uint32_t exp_stride = 97;

static void test_exp(const attn_kernels *d)
{
    /* the kernels' exp (VEXP: exp_neg, x <= 0) over rows, from the
     * table's math rows (isa/kernels.h; the C tests' build has them)   */
    const attn_math_rows *r32 = attn__math_rows(d, ATTN_F32),
                         *r64 = attn__math_rows(d, ATTN_F64);
    CHECK(r32 && r64, "[%s] no exp to test (built without ATTN_MATH_ROWS)",
          d->name);
    if (!r32 || !r64)
        return;
    void (*const exp_f32)(void *, const void *, size_t) =
        r32->fn[ATTN_MF_EXP_NEG];
    void (*const exp_f64)(void *, const void *, size_t) =
        r64->fn[ATTN_MF_EXP_NEG];
    const size_t N = exp_stride > 1000 ? 1 << 12 : 1 << 20;
    float *xf = malloc(N * sizeof(float)), *yf = malloc(N * sizeof(float));
    double *xd = malloc(N * sizeof(double)), *yd = malloc(N * sizeof(double));
    /* float: every exp_stride-th bit pattern from -0 down to ln(FLT_MIN) */
    double worst_f = 0, worst_x = 0;
    size_t nf = 0;
    uint32_t lo_bits = 0x80000000u, hi_bits;
    {
        float lim = -87.33f;
        memcpy(&hi_bits, &lim, 4);
    }
    for (uint32_t bits = lo_bits; bits <= hi_bits;) {
        size_t n = 0;
        for (; n < N && bits <= hi_bits; n++, bits += exp_stride)
            memcpy(&xf[n], &bits, 4);
        exp_f32(yf, xf, n);
        for (size_t i = 0; i < n; i++) {
            double ref = exp((double)xf[i]);
            double u = fabs((double)yf[i] - ref) / ulp_f((float)ref);
            if (u > worst_f) {
                worst_f = u;
                worst_x = xf[i];
            }
        }
        nf += n;
        if (bits < lo_bits)
            break; /* wrapped */
    }
    printf("  exp f32 [%s]: %zu points in [-87.33, 0], max error %.3f ulp "
           "(at x=%.9g)\n", d->name, nf, worst_f, worst_x);
    CHECK(worst_f <= 2.0, "[%s] exp f32 error %.3f ulp > 2", d->name,
          worst_f);
    /* double: 3M points, uniform and near 0, against expl when long
     * double is wider than double (x87); under valgrind it is not (its
     * x87 is 64-bit), then against libm's exp, whose own error (< 0.55 ulp
     * for glibc) is added to the bound */
    volatile long double one = 1.0L, tiny = 0x1p-60L;
    const int have_ext = one + tiny != one;
    const double bound_d = have_ext ? 1.5 : 1.5 + 0.55;
    double worst_d = 0;
    worst_x = 0;
    for (int round = 0; round < 3; round++) {
        for (size_t i = 0; i < N; i++) {
            double u = urand();
            xd[i] = round == 0 ? -708.0 * u
                  : round == 1 ? -u * u * u * 2.0
                               : -(double)(i % 1416) * 0.5 * u;
        }
        exp_f64(yd, xd, N);
        for (size_t i = 0; i < N; i++) {
            long double ref = have_ext ? expl((long double)xd[i])
                                       : (long double)exp(xd[i]);
            long double u = fabsl((long double)yd[i] - ref)
                            / ulp_d((double)ref);
            if ((double)u > worst_d) {
                worst_d = (double)u;
                worst_x = xd[i];
            }
        }
    }
    printf("  exp f64 [%s]: %zu points in [-708, 0], max error %.3f ulp "
           "(at x=%.17g)\n", d->name, 3 * N, worst_d, worst_x);
    CHECK(worst_d <= bound_d, "[%s] exp f64 error %.3f ulp > %.2f%s",
          d->name, worst_d, bound_d, have_ext ? "" : " (vs libm exp)");
    /* special values and the underflow range */
    float sf[] = {-INFINITY, NAN, 0.0f, -0.0f, -87.5f, -90.0f, -103.0f,
                  -104.5f, -200.0f, -1e30f, -FLT_MAX};
    float of[sizeof sf / sizeof *sf];
    size_t ns = sizeof sf / sizeof *sf;
    exp_f32(of, sf, ns);
    CHECK(of[0] == 0.0f, "[%s] exp(-inf) = %g", d->name, of[0]);
    CHECK(isnan(of[1]), "[%s] exp(NaN) = %g", d->name, of[1]);
    CHECK(of[2] == 1.0f && of[3] == 1.0f, "[%s] exp(0) = %g, exp(-0) = %g",
          d->name, of[2], of[3]);
    for (size_t i = 4; i < ns; i++)
        CHECK(of[i] >= 0 && fabs(of[i] - exp((double)sf[i])) <= FLT_MIN,
              "[%s] exp(%g) = %g (underflow range)", d->name, sf[i], of[i]);
    double sd[] = {-INFINITY, NAN, 0.0, -0.0, -708.5, -720.0, -744.0,
                   -746.0, -800.0, -1e300, -DBL_MAX};
    double od[sizeof sd / sizeof *sd];
    ns = sizeof sd / sizeof *sd;
    exp_f64(od, sd, ns);
    CHECK(od[0] == 0.0, "[%s] exp(-inf) = %g", d->name, od[0]);
    CHECK(isnan(od[1]), "[%s] exp(NaN) = %g", d->name, od[1]);
    CHECK(od[2] == 1.0 && od[3] == 1.0, "[%s] exp(0) = %g", d->name, od[2]);
    for (size_t i = 4; i < ns; i++)
        CHECK(od[i] >= 0 && fabs(od[i] - exp(sd[i])) <= DBL_MIN,
              "[%s] exp(%g) = %g (underflow range)", d->name, sd[i], od[i]);
    free(xf);
    free(yf);
    free(xd);
    free(yd);
}

/* ------------------------------------------------------------------------ */
/* threads: concurrent callers, poll / cancel, fork                        */
/* ------------------------------------------------------------------------ */
typedef struct {
    prob *t;
    int reps, ok;
} conc_arg;

static void *conc_main(void *a)
{
    conc_arg *c = a;
    c->ok = 1;
    for (int r = 0; r < c->reps; r++) {
        prob_target(c->t, 0);
        attn_exec ex = {2, NULL, NULL};
        op_fill_sentinel(&c->t->out, -12345.0);
        if (attn_sdpa(&c->t->p, &ex) != ATTN_OK)
            c->ok = 0;
        double rtol = c->t->p.dtype == ATTN_F32 ? 2e-5 : 1e-12;
        if (cmp_buf(&c->t->out, &c->t->out_n, rtol * c->t->vmax, rtol, NULL))
            c->ok = 0;
    }
    return NULL;
}

static int conc_reps = 20;

static void test_concurrent(void)
{
    prob t[3];
    pthread_t th[3];
    conc_arg ca[3];
    for (int i = 0; i < 3; i++) {
        prob_simple(&t[i], i == 1 ? ATTN_F64 : ATTN_F32, 2, 96 + 32 * i,
                    150, 32, 32);
        t[i].p.causal = (attn_causal)i;
        prob_outputs(&t[i], 0, 0);
        run_naive(&t[i]);
        ca[i].t = &t[i];
        ca[i].reps = conc_reps;
        pthread_create(&th[i], NULL, conc_main, &ca[i]);
    }
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        CHECK(ca[i].ok, "concurrent caller %d got a wrong result", i);
        prob_free(&t[i]);
    }
}

static int poll_count;
static int poll_stop_after;
static int poll_fn(void *ctx)
{
    (void)ctx;
    poll_count++;
    return poll_count > poll_stop_after;
}

static void test_poll(void)
{
    prob t;
    prob_simple(&t, ATTN_F32, 4, 256, 300, 32, 32);
    prob_outputs(&t, 0, 0);
    run_naive(&t);
    prob_target(&t, 0);
    long long saved = attn__poll_interval_ns;
    attn__poll_interval_ns = 0; /* poll after every work item */
    for (int nt = 1; nt <= 2; nt++) {
        attn_exec ex = {nt, poll_fn, NULL};
        /* The caller polls between the items it computes. With 2 threads
         * on a busy machine the worker may take every item while the
         * caller is descheduled, so only the 1-thread counts are exact;
         * with 2 threads: a nonzero poll always stops the call, and of a
         * few attempts at least one must get to poll. */
        int any_polled = 0, any_stopped = 0, wrong = 0;
        for (int attempt = 0; attempt < 5; attempt++) {
            poll_count = 0;
            poll_stop_after = 1000000;
            attn_status st = attn_sdpa(&t.p, &ex);
            double rtol = 2e-5;
            CHECK(st == ATTN_OK
                      && cmp_buf(&t.out, &t.out_n, rtol * t.vmax, rtol, NULL)
                             == 0,
                  "poll returning 0: status %d (t=%d)", (int)st, nt);
            any_polled |= poll_count > 0;
            poll_count = 0;
            poll_stop_after = 1;
            st = attn_sdpa(&t.p, &ex);
            if (poll_count >= 2) {
                any_stopped = 1;
                wrong |= st != ATTN_EINTERRUPTED || poll_count != 2;
            } else {
                wrong |= st != ATTN_OK;
            }
            if (nt == 1)
                break;
        }
        CHECK(any_polled, "poll never called (t=%d)", nt);
        CHECK(any_stopped && !wrong,
              "poll returning 1 did not stop the call right away (t=%d)",
              nt);
    }
    attn__poll_interval_ns = saved;
    prob_free(&t);
}

#ifdef HAVE_FORK
static void test_fork(void)
{
    prob t;
    prob_simple(&t, ATTN_F32, 4, 200, 200, 32, 32);
    prob_outputs(&t, 0, 0);
    run_naive(&t);
    prob_target(&t, 0);
    attn_exec ex = {2, NULL, NULL};
    attn_status st = attn_sdpa(&t.p, &ex); /* starts the pool */
    CHECK(st == ATTN_OK, "threaded call before fork: %d", (int)st);
    unsigned char *ref = dup_buf(&t.out);
    /* qemu-user (7.2) aborts with its own assertion in cpu_exec when a
     * forked child of a threaded process creates a thread (a 12-line
     * program without attnpy does the same): under qemu
     * (tools/cross_aarch64.sh sets ATTNPY_TEST_QEMU_USER) the child's
     * calls use one thread, and only the new pool is left untested. */
    const int qemu = getenv("ATTNPY_TEST_QEMU_USER") != NULL;
    attn_exec ex_child = {qemu ? 1 : 2, NULL, NULL};
    if (qemu)
        printf("fork: under qemu-user, the child's threaded call is not "
               "tested (qemu's own bug)\n");
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int ok = 1;
        for (int r = 0; r < 3; r++) {
            op_fill_sentinel(&t.out, -12345.0);
            ok &= attn_sdpa(&t.p, &ex_child) == ATTN_OK;
            ok &= memcmp(ref, t.out.buf, t.out.nbytes) == 0;
        }
        free(ref);
        prob_free(&t);
        _exit(ok ? 0 : 3);
    }
    CHECK(pid > 0, "fork failed");
    if (pid > 0) {
        int status = -1, done = 0;
        for (int i = 0; i < 1000 && !done; i++) { /* 10 s */
            pid_t r = waitpid(pid, &status, WNOHANG);
            if (r == pid)
                done = 1;
            else
                usleep(10000);
        }
        if (!done) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
        }
        CHECK(done && WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "threaded call in a forked child: %s",
              done ? "wrong result or status" : "hung (killed after 10 s)");
    }
    /* and the parent's pool still works */
    op_fill_sentinel(&t.out, -12345.0);
    st = attn_sdpa(&t.p, &ex);
    CHECK(st == ATTN_OK && memcmp(ref, t.out.buf, t.out.nbytes) == 0,
          "threaded call in the parent after fork");
    free(ref);
    prob_free(&t);
}
#endif

/* ------------------------------------------------------------------------ */
/* small kernels                                                            */
/* ------------------------------------------------------------------------ */
static void test_small_kernels(void)
{
    /* softmax: rows of (3, 5) f64, in place on a transposed view */
    double buf[15] = {1, 2, 3, 4, 5, -INFINITY, 0, 0, -INFINITY, 1,
                      -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    double want[15];
    for (int r = 0; r < 3; r++) {
        double m = -INFINITY, s = 0;
        for (int j = 0; j < 5; j++)
            m = buf[r * 5 + j] > m ? buf[r * 5 + j] : m;
        for (int j = 0; j < 5; j++)
            s += exp(buf[r * 5 + j] - m);
        for (int j = 0; j < 5; j++)
            want[r * 5 + j] = exp(buf[r * 5 + j] - m) / s;
    }
    double tr[15]; /* column-major copy: row r, col j at j*3 + r */
    for (int r = 0; r < 3; r++)
        for (int j = 0; j < 5; j++)
            tr[j * 3 + r] = buf[r * 5 + j];
    ptrdiff_t boff[3] = {0, 1, 2};
    attn_mat m = {tr, boff, 0, 3, ATTN_ST_NATIVE};
    CHECK(ca_softmax(ATTN_F64, m, m, 3, 5) == ATTN_OK, "softmax status");
    int ok = 1;
    for (int r = 0; r < 2; r++)
        for (int j = 0; j < 5; j++)
            ok &= fabs(tr[j * 3 + r] - want[r * 5 + j]) < 1e-15;
    for (int j = 0; j < 5; j++)
        ok &= isnan(tr[j * 3 + 2]); /* all -inf row -> NaN, as NumPy */
    CHECK(ok, "softmax values");
    /* f32 softmax, n = 0 rows are fine */
    float f[4] = {0.5f, 0.25f, -1.0f, 2.0f};
    ptrdiff_t b0 = 0;
    attn_mat mf = {f, &b0, 0, 1, ATTN_ST_NATIVE};
    CHECK(ca_softmax(ATTN_F32, mf, mf, 1, 4) == ATTN_OK, "softmax f32");
    float s = f[0] + f[1] + f[2] + f[3];
    CHECK(fabsf(s - 1.0f) < 1e-6f && f[3] > f[0] && f[0] > f[1],
          "softmax f32 values");
    /* posenc: (1, 6, 5) f64 against the formula */
    double pe[30];
    ptrdiff_t z = 0;
    attn_mat mp = {pe, &z, 5, 1, ATTN_ST_NATIVE};
    CHECK(ca_posenc(ATTN_F64, mp, 1, 6, 5, 0.0, 10000.0, 0) == ATTN_OK,
          "posenc status");
    ok = 1;
    for (int t = 0; t < 6; t++)
        for (int c = 0; c < 5; c++) {
            double w = exp(-(double)(2 * (c / 2)) * log(10000.0) / 5.0);
            double v = c % 2 ? cos(t * w) : sin(t * w);
            ok &= fabs(pe[t * 5 + c] - v) < 1e-14;
        }
    CHECK(ok, "posenc values");
    /* accumulate with an offset */
    CHECK(ca_posenc(ATTN_F64, mp, 1, 6, 5, 3.0, 10000.0, 1) == ATTN_OK,
          "posenc accumulate status");
    ok = 1;
    for (int t = 0; t < 6; t++)
        for (int c = 0; c < 5; c++) {
            double w = exp(-(double)(2 * (c / 2)) * log(10000.0) / 5.0);
            double v = (c % 2 ? cos(t * w) : sin(t * w))
                       + (c % 2 ? cos((t + 3) * w) : sin((t + 3) * w));
            ok &= fabs(pe[t * 5 + c] - v) < 1e-14;
        }
    CHECK(ok, "posenc accumulate values");
    /* copy2d: (2, 3, 4) f32 transposed source into a contiguous out */
    float src[24], dst[24];
    for (int i = 0; i < 24; i++)
        src[i] = (float)i;
    ptrdiff_t sboff[2] = {0, 12}, dboff[2] = {0, 12};
    attn_mat ms = {src, sboff, 1, 3, ATTN_ST_NATIVE}; /* element (b, i, j) at b*12 + j*3 + i */
    attn_mat md = {dst, dboff, 4, 1, ATTN_ST_NATIVE};
    CHECK(ca_copy2d(ATTN_F32, md, ms, 2, 3, 4) == ATTN_OK, "copy2d status");
    ok = 1;
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 4; j++)
                ok &= dst[b * 12 + i * 4 + j] == src[b * 12 + j * 3 + i];
    CHECK(ok, "copy2d values");
    CHECK(attn_available_cpus() >= 1, "available cpus");
}

/* ------------------------------------------------------------------------ */
int main(int argc, char **argv)
{
    /* default: a quick run (tools/valgrind.sh and sanitize.sh run every
     * tests/c program without arguments); tests/c/test_c_core.py asks for
     * more problems and the dense exp sweep */
    int count = argc > 1 ? atoi(argv[1]) : 8;
    exp_stride = count >= 40 ? 97 : 100003;
    conc_reps = count >= 40 ? 20 : 3;
    uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 10) : 12345;
    clock_t t0 = clock();
    attn__min_flops_per_thread = 0; /* use threads even on tiny problems */
    test_small_kernels();
    for (int i = 0; i < CHECK_NISA; i++) {
        if (!check_use_isa(i))
            continue;
        CHECK(strcmp(attn_isa_name(), check_isa(i)) == 0, "isa name %s after "
              "set_isa(%s)", attn_isa_name(), check_isa(i));
        test_exp(attn__kernels());
        rng_state = seed + (uint64_t)i;
        const int cnt = check_count(i, count);
        test_random_problems(check_isa(i), cnt, 0);
        test_random_problems(check_isa(i), cnt / 10 + 1, 1);
        test_edges(check_isa(i));
        test_concurrent();
        printf("  worst error / tolerance: f32 %.3f, f64 %.3f\n",
               max_err_seen[0], max_err_seen[1]);
        max_err_seen[0] = max_err_seen[1] = 0;
    }
    CHECK(attn_set_isa("auto") == 0, "set_isa(auto)");
    CHECK(attn_set_isa("nonsense") == -1, "set_isa(nonsense) accepted");
    test_poll();
#ifdef HAVE_FORK
    test_fork();
#else
    printf("fork: not on this system, not tested\n");
#endif
    return check_summary(t0);
}
#endif /* ATTNPY_TEST_CORE_C */
