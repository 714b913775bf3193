/*
 * c_smoke.c -- a memory-checker workout for the attnpy C core (csrc/core/attn.h).
 *
 * Built with the .c files under csrc/core/ only (no Python) by tools/valgrind.sh and
 * tools/sanitize.sh, it calls every core entry point on many small problems
 * whose buffers are allocated to the exact byte, so that valgrind memcheck
 * and AddressSanitizer see any read or write outside them:
 *
 *   - attn_sdpa (fast path; each ISA the CPU has, 1..4 threads, with and
 *     without weights/scores) against attn_sdpa_naive, float and double;
 *   - layouts: row-major, transposed, reversed (negative strides), padded
 *     rows, broadcast (stride-0 batch, boff NULL);
 *   - masks, bias with -inf, causal top-left / bottom-right, every
 *     fully_masked policy (raise: same first row from both kernels);
 *   - zero sizes (L, S, E, Ev = 0);
 *   - attn_softmax (in place too, NaN/inf rows), attn_softmax_backward (in
 *     place too), attn_softmax_jacobian, attn_posenc, attn_copy2d;
 *   - several POSIX threads calling attn_sdpa at once.
 *
 * Exit status 0 when every comparison holds; it prints "c_smoke: OK".
 * This complements the kernel's own tests (tests/c); it is not a copy.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "calls.h"

static atomic_int failures;
static atomic_ullong checks;

#define CHECK(cond, ...)                                                      \
    do {                                                                      \
        checks++;                                                             \
        if (!(cond)) {                                                        \
            failures++;                                                       \
            if (failures <= 20) {                                             \
                fprintf(stderr, "c_smoke: FAIL %s:%d: ", __FILE__, __LINE__); \
                fprintf(stderr, __VA_ARGS__);                                 \
                fputc('\n', stderr);                                          \
            }                                                                 \
        }                                                                     \
    } while (0)

/* ---- deterministic values ------------------------------------------------ */
static _Thread_local uint64_t rng_state = 88172645463325252ULL;
static double urand(void) /* [0, 1) */
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}
static double nrand(void) { return 4.0 * urand() - 2.0; }

/* ---- batched matrices with exact-size buffers ----------------------------- */
enum { LAY_C, LAY_T, LAY_NEG, LAY_PAD, LAY_BCAST, N_LAY };
static const char *const lay_names[N_LAY] = {"C", "T", "neg", "pad", "bcast"};

typedef struct {
    void *alloc;      /* what malloc returned (exactly nbytes)          */
    size_t nbytes;
    attn_mat m;
    ptrdiff_t *boff;  /* owned, or NULL                                 */
    size_t B, R, C, esize;
} bmat;

static void bmat_free(bmat *x)
{
    free(x->alloc);
    free(x->boff);
    memset(x, 0, sizeof *x);
}

/* a (B, R, C) matrix of esize-byte elements laid out as `lay` */
static bmat bmat_new(size_t B, size_t R, size_t C, size_t esize, int lay)
{
    bmat x;
    memset(&x, 0, sizeof x);
    x.B = B;
    x.R = R;
    x.C = C;
    x.esize = esize;
    size_t items = lay == LAY_BCAST ? 1 : B;
    size_t rowlen = lay == LAY_PAD ? C + 3 : C;
    size_t n = items * R * rowlen;
    x.nbytes = n * esize;
    x.alloc = malloc(x.nbytes ? x.nbytes : 1);
    if (!x.alloc) {
        fprintf(stderr, "c_smoke: out of memory\n");
        exit(2);
    }
    memset(x.alloc, 0xA5, x.nbytes); /* garbage: must be overwritten */
    ptrdiff_t per = (ptrdiff_t)(R * rowlen);
    if (lay != LAY_BCAST) {
        x.boff = malloc((B ? B : 1) * sizeof(ptrdiff_t));
        if (!x.boff)
            exit(2);
    }
    x.m.data = x.alloc;
    switch (lay) {
    case LAY_C:
    case LAY_PAD:
        x.m.s0 = (ptrdiff_t)rowlen;
        x.m.s1 = 1;
        for (size_t b = 0; b < B; b++)
            x.boff[b] = (ptrdiff_t)b * per;
        break;
    case LAY_T:
        x.m.s0 = 1;
        x.m.s1 = (ptrdiff_t)R;
        for (size_t b = 0; b < B; b++)
            x.boff[b] = (ptrdiff_t)b * per;
        break;
    case LAY_NEG: /* data points at the last element, everything reversed */
        if (n)
            x.m.data = (char *)x.alloc + (n - 1) * esize;
        x.m.s0 = -(ptrdiff_t)C;
        x.m.s1 = -1;
        for (size_t b = 0; b < B; b++)
            x.boff[b] = -(ptrdiff_t)b * per;
        break;
    case LAY_BCAST:
        x.m.s0 = (ptrdiff_t)C;
        x.m.s1 = 1;
        break;
    }
    x.m.boff = x.boff;
    return x;
}

static void *at(const bmat *x, size_t b, size_t i, size_t j)
{
    ptrdiff_t off = (x->m.boff ? x->m.boff[b] : 0) + (ptrdiff_t)i * x->m.s0 +
                    (ptrdiff_t)j * x->m.s1;
    return (char *)x->m.data + off * (ptrdiff_t)x->esize;
}

static double get(const bmat *x, attn_dtype dt, size_t b, size_t i, size_t j)
{
    void *p = at(x, b, i, j);
    return dt == ATTN_F32 ? (double)*(float *)p : *(double *)p;
}

static void put(bmat *x, attn_dtype dt, size_t b, size_t i, size_t j, double v)
{
    void *p = at(x, b, i, j);
    if (dt == ATTN_F32)
        *(float *)p = (float)v;
    else
        *(double *)p = v;
}

static void fill(bmat *x, attn_dtype dt, double p_ninf)
{
    size_t items = x->m.boff ? x->B : (x->B ? 1 : 0);
    for (size_t b = 0; b < items; b++)
        for (size_t i = 0; i < x->R; i++)
            for (size_t j = 0; j < x->C; j++)
                put(x, dt, b, i, j,
                    urand() < p_ninf ? -INFINITY : nrand());
}

static void fill_mask(bmat *x, double p_keep)
{
    size_t items = x->m.boff ? x->B : (x->B ? 1 : 0);
    for (size_t b = 0; b < items; b++)
        for (size_t i = 0; i < x->R; i++)
            for (size_t j = 0; j < x->C; j++)
                *(uint8_t *)at(x, b, i, j) = urand() < p_keep ? 7 : 0;
}

/* a and b agree: same NaN pattern, same infinities, close otherwise */
static int agree(double a, double b, attn_dtype dt)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    if (isinf(a) || isinf(b))
        return a == b;
    double tol = dt == ATTN_F32 ? 1e-4 : 1e-10;
    return fabs(a - b) <= tol * (1.0 + fabs(b));
}

static int compare(const bmat *x, const bmat *y, attn_dtype dt, const char *what,
                   const char *ctx)
{
    for (size_t b = 0; b < x->B; b++)
        for (size_t i = 0; i < x->R; i++)
            for (size_t j = 0; j < x->C; j++) {
                double u = get(x, dt, b, i, j), v = get(y, dt, b, i, j);
                if (!agree(u, v, dt)) {
                    CHECK(0, "%s differs at (%zu,%zu,%zu): %.17g vs %.17g [%s]",
                          what, b, i, j, u, v, ctx);
                    return 0;
                }
            }
    checks++;
    return 1;
}

/* ---- one attention problem, both kernels ---------------------------------- */
typedef struct {
    attn_dtype dt;
    size_t B, L, S, E, Ev;
    int lay_in, lay_out, with_mask, with_bias, nthreads;
    attn_causal causal;
    attn_fm fm;
    double p_keep, p_ninf, scale;
} case_t;

static void run_case(const case_t *c)
{
    size_t es = c->dt == ATTN_F32 ? sizeof(float) : sizeof(double);
    char ctx[200];
    snprintf(ctx, sizeof ctx,
             "dt=%d B=%zu L=%zu S=%zu E=%zu Ev=%zu in=%s out=%s mask=%d "
             "bias=%d causal=%d fm=%d threads=%d isa=%s",
             (int)c->dt, c->B, c->L, c->S, c->E, c->Ev, lay_names[c->lay_in],
             lay_names[c->lay_out], c->with_mask, c->with_bias, (int)c->causal,
             (int)c->fm, c->nthreads, attn_isa_name());
    bmat q = bmat_new(c->B, c->L, c->E, es, c->lay_in);
    bmat k = bmat_new(c->B, c->S, c->E, es, c->lay_in == LAY_T ? LAY_C
                                                                : c->lay_in);
    bmat v = bmat_new(c->B, c->S, c->Ev, es, c->lay_in == LAY_NEG ? LAY_T
                                                                   : c->lay_in);
    bmat mask = bmat_new(c->B, c->L, c->S, 1, c->lay_in);
    bmat bias = bmat_new(c->B, c->L, c->S, es, c->lay_in);
    fill(&q, c->dt, 0);
    fill(&k, c->dt, 0);
    fill(&v, c->dt, 0);
    fill_mask(&mask, c->p_keep);
    fill(&bias, c->dt, c->p_ninf);
    int lo = c->lay_out == LAY_BCAST ? LAY_C : c->lay_out;
    bmat o_ref = bmat_new(c->B, c->L, c->Ev, es, LAY_C);
    bmat w_ref = bmat_new(c->B, c->L, c->S, es, LAY_C);
    bmat s_ref = bmat_new(c->B, c->L, c->S, es, LAY_C);
    bmat o1 = bmat_new(c->B, c->L, c->Ev, es, lo);
    bmat o2 = bmat_new(c->B, c->L, c->Ev, es, lo);
    bmat w2 = bmat_new(c->B, c->L, c->S, es, lo);
    bmat s2 = bmat_new(c->B, c->L, c->S, es, lo);

    attn_problem p;
    memset(&p, 0, sizeof p);
    p.dtype = c->dt;
    p.B = c->B;
    p.L = c->L;
    p.S = c->S;
    p.E = c->E;
    p.Ev = c->Ev;
    p.q = q.m;
    p.k = k.m;
    p.v = v.m;
    if (c->with_mask)
        p.mask = mask.m;
    if (c->with_bias)
        p.bias = bias.m;
    p.scale = c->scale;
    p.causal = c->causal;
    p.fully_masked = c->fm;

    /* oracle: naive, with weights and scores */
    attn_problem pr = p;
    pr.out = o_ref.m;
    pr.weights = w_ref.m;
    pr.scores = s_ref.m;
    attn_status st_ref = attn_sdpa_naive(&pr);

    /* fast path, output only (what attnpy.attention does) */
    attn_exec ex = {c->nthreads, NULL, NULL};
    attn_problem p1 = p;
    p1.out = o1.m;
    attn_status st1 = attn_sdpa(&p1, &ex);

    /* fast path with weights and scores (scaled_dot_product_attention) */
    attn_problem p2 = p;
    p2.out = o2.m;
    p2.weights = w2.m;
    p2.scores = s2.m;
    attn_status st2 = attn_sdpa(&p2, &ex);

    CHECK(st_ref == ATTN_OK || st_ref == ATTN_EFULLYMASKED,
          "naive status %d [%s]", (int)st_ref, ctx);
    CHECK(st1 == st_ref && st2 == st_ref, "status naive %d fast %d/%d [%s]",
          (int)st_ref, (int)st1, (int)st2, ctx);
    if (st_ref == ATTN_EFULLYMASKED && st1 == st_ref && st2 == st_ref) {
        CHECK(p1.bad_b == pr.bad_b && p1.bad_row == pr.bad_row &&
                  p2.bad_b == pr.bad_b && p2.bad_row == pr.bad_row,
              "first fully masked row: naive (%zu,%zu) fast (%zu,%zu) [%s]",
              pr.bad_b, pr.bad_row, p1.bad_b, p1.bad_row, ctx);
    }
    else if (st_ref == ATTN_OK && st1 == ATTN_OK && st2 == ATTN_OK) {
        compare(&o1, &o_ref, c->dt, "out (fast, no weights)", ctx);
        compare(&o2, &o_ref, c->dt, "out (fast, weights)", ctx);
        compare(&w2, &w_ref, c->dt, "weights", ctx);
        compare(&s2, &s_ref, c->dt, "scores", ctx);
        /* the output does not depend on whether weights were asked for */
        for (size_t b = 0; b < c->B; b++)
            for (size_t i = 0; i < c->L; i++)
                for (size_t e = 0; e < c->Ev; e++) {
                    double u = get(&o1, c->dt, b, i, e),
                           w = get(&o2, c->dt, b, i, e);
                    CHECK(memcmp(&u, &w, sizeof u) == 0 ||
                              (isnan(u) && isnan(w)),
                          "out with/without weights not bitwise equal [%s]",
                          ctx);
                }
        /* weight rows: sum 1, or the policy */
        for (size_t b = 0; b < c->B; b++)
            for (size_t i = 0; i < c->L; i++) {
                double sum = 0;
                int nan = 0;
                for (size_t j = 0; j < c->S; j++) {
                    double w = get(&w_ref, c->dt, b, i, j);
                    nan |= isnan(w);
                    sum += w;
                }
                if (nan)
                    CHECK(c->fm == ATTN_FM_NAN, "NaN weights [%s]", ctx);
                else if (sum != 0)
                    CHECK(fabs(sum - 1) < 1e-4, "row sum %g [%s]", sum, ctx);
                else
                    CHECK(c->fm == ATTN_FM_ZERO || c->S == 0,
                          "zero row under policy %d [%s]", (int)c->fm, ctx);
            }
    }
    bmat *all[] = {&q, &k, &v, &mask, &bias, &o_ref, &w_ref, &s_ref,
                   &o1, &o2, &w2, &s2};
    for (size_t n = 0; n < sizeof all / sizeof *all; n++)
        bmat_free(all[n]);
}

static void sweep_attention(void)
{
    static const size_t dims[][5] = {
        /* B, L, S, E, Ev */
        {1, 1, 1, 1, 1},   {2, 3, 5, 4, 6},   {3, 7, 2, 3, 1},
        {1, 33, 70, 9, 5}, {2, 65, 17, 16, 8}, {1, 4, 0, 3, 2},
        {2, 0, 4, 3, 2},   {2, 3, 4, 0, 2},   {2, 3, 4, 3, 0},
        {0, 3, 4, 3, 2},   {1, 130, 129, 33, 31},
    };
    static const double keeps[] = {1.0, 0.6, 0.0};
    int n = 0;
    for (size_t d = 0; d < sizeof dims / sizeof *dims; d++)
        for (int dt = 0; dt < 2; dt++)
            for (int lay = 0; lay < N_LAY; lay++) {
                case_t c;
                memset(&c, 0, sizeof c);
                c.dt = (attn_dtype)dt;
                c.B = dims[d][0];
                c.L = dims[d][1];
                c.S = dims[d][2];
                c.E = dims[d][3];
                c.Ev = dims[d][4];
                c.lay_in = lay;
                c.lay_out = (lay + d) % N_LAY;
                c.with_mask = (n % 3) != 0;
                c.with_bias = (n % 4) == 1;
                c.p_keep = keeps[n % 3];
                c.p_ninf = (n % 5 == 0) ? 0.3 : 0.0;
                c.causal = (attn_causal)(n % 3);
                c.fm = (attn_fm)(n % 4);
                c.nthreads = 1 + n % 4;
                c.scale = (n % 6 == 0) ? -0.7 : 1.0 / sqrt(c.E ? c.E : 1);
                run_case(&c);
                n++;
            }
}

/* ---- small kernels --------------------------------------------------------- */
static void check_softmax(void)
{
    for (int dt = 0; dt < 2; dt++) {
        size_t es = dt == ATTN_F32 ? 4 : 8;
        const size_t R = 6, N = 9;
        bmat x = bmat_new(1, R, N, es, LAY_C);
        /* rows as separate "batches" of the softmax's row offsets */
        ptrdiff_t offs[6];
        for (size_t r = 0; r < R; r++)
            offs[r] = (ptrdiff_t)(r * N);
        fill(&x, (attn_dtype)dt, 0);
        put(&x, (attn_dtype)dt, 0, 1, 3, NAN);
        put(&x, (attn_dtype)dt, 0, 2, 0, INFINITY);
        for (size_t j = 0; j < N; j++)
            put(&x, (attn_dtype)dt, 0, 3, j, -INFINITY);
        put(&x, (attn_dtype)dt, 0, 4, 5, -INFINITY);
        bmat y = bmat_new(1, R, N, es, LAY_C);
        attn_mat in = {x.m.data, offs, 0, 1, ATTN_ST_NATIVE}, out = {y.m.data, offs, 0, 1, ATTN_ST_NATIVE};
        CHECK(ca_softmax((attn_dtype)dt, out, in, R, N) == ATTN_OK,
              "softmax status");
        for (size_t r = 0; r < R; r++) {
            double m = -INFINITY, s = 0;
            int nan = 0;
            for (size_t j = 0; j < N; j++) {
                double v = get(&x, (attn_dtype)dt, 0, r, j);
                nan |= isnan(v);
                if (v > m)
                    m = v;
            }
            for (size_t j = 0; j < N; j++)
                s += exp(get(&x, (attn_dtype)dt, 0, r, j) - m);
            for (size_t j = 0; j < N; j++) {
                double want = nan ? NAN
                                  : exp(get(&x, (attn_dtype)dt, 0, r, j) - m) / s;
                double got = get(&y, (attn_dtype)dt, 0, r, j);
                CHECK(agree(got, want, (attn_dtype)dt),
                      "softmax row %zu col %zu: %g vs %g", r, j, got, want);
            }
        }
        /* in place, reversed */
        attn_mat inr = {x.m.data, offs, 0, 1, ATTN_ST_NATIVE};
        CHECK(ca_softmax((attn_dtype)dt, inr, inr, R, N) == ATTN_OK,
              "softmax in place");
        compare(&x, &y, (attn_dtype)dt, "softmax in place", "softmax");
        bmat_free(&x);
        bmat_free(&y);
    }
}

/* softmax_backward (also in place over dy) and softmax_jacobian, whose
 * J^T dy must be the backward pass; columns read through negative strides */
static void check_softmax_grad(void)
{
    for (int dt = 0; dt < 2; dt++) {
        size_t es = dt == ATTN_F32 ? 4 : 8;
        const size_t R = 5, N = 7;
        bmat x = bmat_new(1, R, N, es, LAY_C), g = bmat_new(1, R, N, es, LAY_C);
        bmat y = bmat_new(1, R, N, es, LAY_C), d = bmat_new(1, R, N, es, LAY_C);
        bmat jac = bmat_new(1, R * N, N, es, LAY_C);
        ptrdiff_t offs[5], joffs[5];
        for (size_t r = 0; r < R; r++) {
            offs[r] = (ptrdiff_t)(r * N + N - 1);   /* last column: s1 = -1 */
            joffs[r] = (ptrdiff_t)(r * N * N);
        }
        fill(&x, (attn_dtype)dt, 0);
        fill(&g, (attn_dtype)dt, 0);
        attn_mat mx = {x.m.data, offs, 0, -1, ATTN_ST_NATIVE}, my = {y.m.data, offs, 0, -1, ATTN_ST_NATIVE};
        attn_mat mg = {g.m.data, offs, 0, -1, ATTN_ST_NATIVE}, md = {d.m.data, offs, 0, -1, ATTN_ST_NATIVE};
        attn_mat mj = {jac.m.data, joffs, (ptrdiff_t)N, 1, ATTN_ST_NATIVE};
        CHECK(ca_softmax((attn_dtype)dt, my, mx, R, N) == ATTN_OK &&
                  ca_softmax_backward((attn_dtype)dt, md, mg, my, R, N) ==
                      ATTN_OK &&
                  ca_softmax_jacobian((attn_dtype)dt, mj, my, R, N) ==
                      ATTN_OK,
              "softmax grad status");
        for (size_t r = 0; r < R; r++) {
            double s = 0;
            for (size_t j = 0; j < N; j++)
                s += get(&g, (attn_dtype)dt, 0, r, j) *
                     get(&y, (attn_dtype)dt, 0, r, j);
            for (size_t j = 0; j < N; j++) {
                /* stored reversed: memory column j is element N-1-j */
                double yj = get(&y, (attn_dtype)dt, 0, r, j), jt = 0;
                double want = yj * (get(&g, (attn_dtype)dt, 0, r, j) - s);
                for (size_t i = 0; i < N; i++)
                    jt += get(&jac, (attn_dtype)dt, 0, r * N + N - 1 - i,
                              N - 1 - j) * get(&g, (attn_dtype)dt, 0, r, i);
                CHECK(agree(get(&d, (attn_dtype)dt, 0, r, j), want,
                            (attn_dtype)dt) && agree(jt, want, (attn_dtype)dt),
                      "softmax_backward row %zu col %zu", r, j);
            }
        }
        CHECK(ca_softmax_backward((attn_dtype)dt, mg, mg, my, R, N) ==
                  ATTN_OK, "softmax_backward in place");
        compare(&g, &d, (attn_dtype)dt, "softmax_backward in place", "out");
        bmat *all[] = {&x, &g, &y, &d, &jac};
        for (size_t i = 0; i < 5; i++)
            bmat_free(all[i]);
    }
}

static void check_posenc_copy(void)
{
    for (int dt = 0; dt < 2; dt++) {
        size_t es = dt == ATTN_F32 ? 4 : 8;
        for (int lay = 0; lay < N_LAY - 1; lay++) {
            const size_t B = 2, T = 5, D = 7;
            bmat x = bmat_new(B, T, D, es, lay);
            CHECK(ca_posenc((attn_dtype)dt, x.m, B, T, D, 3.0, 10000.0, 0) ==
                      ATTN_OK,
                  "posenc");
            for (size_t b = 0; b < B; b++)
                for (size_t t = 0; t < T; t++)
                    for (size_t cc = 0; cc < D; cc++) {
                        double w = exp(-(double)(2 * (cc / 2)) * log(10000.0) /
                                       (double)D);
                        double want = cc % 2 ? cos((t + 3.0) * w)
                                             : sin((t + 3.0) * w);
                        CHECK(agree(get(&x, (attn_dtype)dt, b, t, cc), want,
                                    (attn_dtype)dt),
                              "posenc (%zu,%zu,%zu)", b, t, cc);
                    }
            CHECK(ca_posenc((attn_dtype)dt, x.m, B, T, D, 0.0, 2.0, 1) ==
                      ATTN_OK,
                  "posenc accumulate");
            bmat y = bmat_new(B, T, D, es, (lay + 1) % (N_LAY - 1));
            CHECK(ca_copy2d((attn_dtype)dt, y.m, x.m, B, T, D) == ATTN_OK,
                  "copy2d");
            compare(&y, &x, (attn_dtype)dt, "copy2d", lay_names[lay]);
            bmat_free(&x);
            bmat_free(&y);
        }
    }
}

/* ---- concurrency ------------------------------------------------------------ */
static void *thread_body(void *arg)
{
    (void)arg;
    /* each thread runs its own problems; shared read-only inputs would be
     * the same for the core, which never writes them */
    for (int rep = 0; rep < 3; rep++) {
        case_t c;
        memset(&c, 0, sizeof c);
        c.dt = rep % 2 ? ATTN_F32 : ATTN_F64;
        c.B = 2;
        c.L = 40;
        c.S = 50;
        c.E = 8;
        c.Ev = 6;
        c.lay_in = rep % N_LAY;
        c.lay_out = LAY_T;
        c.with_mask = 1;
        c.p_keep = 0.7;
        c.causal = ATTN_CAUSAL_BOTTOM_RIGHT;
        c.fm = ATTN_FM_UNIFORM;
        c.nthreads = 2;
        c.scale = 0.3;
        run_case(&c);
    }
    return NULL;
}

static void check_threads(void)
{
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        CHECK(pthread_create(&th[i], NULL, thread_body, NULL) == 0,
              "pthread_create");
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
}

int main(void)
{
    static const char *const isas[] = {"portable", "avx2", "avx512", "amx", "neon",
                                       "baseline", "auto"};
    CHECK(attn_set_isa("no-such-isa") == -1, "unknown ISA accepted");
    CHECK(attn_available_cpus() >= 1, "available_cpus");
    for (size_t n = 0; n < sizeof isas / sizeof *isas; n++) {
        if (attn_set_isa(isas[n]) != 0)
            continue; /* this CPU / build does not have it */
        printf("c_smoke: isa %s (%s)\n", isas[n], attn_isa_name());
        sweep_attention();
    }
    attn_set_isa("auto");
    check_softmax();
    check_softmax_grad();
    check_posenc_copy();
    check_threads(); /* each thread has its own random stream */
    if (atomic_load(&failures)) {
        printf("c_smoke: %d of %llu checks FAILED\n", atomic_load(&failures),
               atomic_load(&checks));
        return 1;
    }
    printf("c_smoke: OK (%llu checks)\n", atomic_load(&checks));
    return 0;
}
