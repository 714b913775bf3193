/*
 * attention/bwd.c -- the fused backward pass: plan, the three passes, work
 * items over the thread pool. The block kernels are bwd_tile.h,
 * instantiated per instruction set next to the forward tile.
 *
 *   pass 0  item b:                 D_i = rowsum(dout * out) in double, the
 *                                   fully masked rows (lse == -inf), whether
 *                                   b's Q, K or dout hold inf/NaN (then the
 *                                   products of every b skip zeros)
 *   pass A  item (b, key block):    owns dK, dV rows; loops over the query
 *                                   blocks that see the keys
 *   pass B  item (b, query block):  owns dQ and dbias rows; loops over the
 *                                   key blocks the queries see
 *
 * P is rebuilt from lse in both A and B (7 block products per block pair
 * instead of 5): no item ever adds into rows another item owns, so no
 * atomics and no per-thread partial sums, and every row is computed by one
 * item in a fixed order: the same bits for any number of threads.
 * Memory: one scratch of O((BQ + BK)(E + Ev)) per thread, plus D (B x L)
 * and small per-b tables; never an L x S array.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "attention/kern.h"
#include "half.h"
#include "isa/kernels.h"
#include "rows/rows.h"
#include "util.h"

/* keys per block of pass A, pass B and the fused items: one size, so a
 * row's dQ (summed block by block) has the same bits in either mode     */
#define BWD_BK 128
#define BWD_BKA BWD_BK
#define BWD_BQ 64 /* query rows per block, whatever the vector width   */
#define BWD_FUSED_B 4 /* fused items from this many batch items on       */
#define BWD_FUSED_BYTES ((size_t)16 << 20) /* packed queries of one b   */

/* ------------------------------------------------------------------------ */
/* pass 0 (per b) and the input scan                                        */
/* ------------------------------------------------------------------------ */
/* element x (counted from b's base) of m, as a double: T, or 16 bits    */
#define BWD_AT_(T, m, b, x)                                                     \
    ((m).store ? (double)attn_load_f32((m).store, (m).data, OFF(m, b) + (x))  \
               : (double)((const T *)(m).data)[OFF(m, b) + (x)])
#define BWD_CHUNK 128 /* row elements fetched at a time                   */

/* every element of b's rows x cols of a 16-bit m finite? From the bits:
 * all exponent bits set is inf or NaN                                    */
static int bwd_finite16(const attn_mat *m, size_t b, size_t rows, size_t cols)
{
    const uint16_t e = m->store == ATTN_ST_BF16 ? 0x7f80u : 0x7c00u;
    const uint16_t *h = m->data;
    for (size_t r = 0; r < rows; r++) {
        const ptrdiff_t at = OFF(*m, b) + (ptrdiff_t)r * m->s0;
        unsigned bad = 0;
        for (size_t c = 0; c < cols; c++)
            bad |= (h[at + (ptrdiff_t)c * m->s1] & e) == e;
        if (bad)
            return 0;
    }
    return 1;
}

#define DEFINE_BWD_ROWS(T, SFX)                                                 \
/* x[c] = element (b, r, c0 + c) of m, c < n: T, or 16 bits (exact)     */    \
static void bwd_fetch_##SFX(const attn_mat *m, size_t b, size_t r, size_t c0,   \
                            size_t n, T *x)                                     \
{                                                                               \
    const ptrdiff_t s1 = m->s1,                                                 \
                    at = OFF(*m, b) + (ptrdiff_t)r * m->s0 + (ptrdiff_t)c0 * s1;\
    if (m->store && s1 == 1 && sizeof(T) == sizeof(float))                      \
        /* contiguous 16-bit rows (float problems only): the set's        */   \
        /* vector widening, exact as the loop below                       */   \
        attn__widen()((float *)(void *)x, (const uint16_t *)m->data + at, n,    \
                      m->store);                                                \
    else if (m->store)                                                          \
        for (size_t c = 0; c < n; c++)                                          \
            x[c] = (T)attn_load_f32(m->store, m->data, at + (ptrdiff_t)c * s1); \
    else                                                                        \
        for (size_t c = 0; c < n; c++)                                          \
            x[c] = ((const T *)m->data)[at + (ptrdiff_t)c * s1];                \
}                                                                               \
                                                                                \
static void bwd_rows_##SFX(const attn_bwd_plan *bpl, size_t b, size_t *bad)     \
{                                                                               \
    const attn_bwd_problem *bp = bpl->bp;                                       \
    const attn_problem *p = &bp->f;                                             \
    const size_t L = p->L, S = p->S, Ev = p->Ev, EvP = bpl->fp.EvP;             \
    T *d_b = (T *)bpl->dvec + b * L;                                            \
    T *u_b = (T *)bpl->uvec + b * EvP;                                          \
    const T *lse_b = (const T *)p->lse.data + OFF(p->lse, b);                   \
    const attn_mat g = bp->dout;                                                \
    T gx[4][BWD_CHUNK], ox[4][BWD_CHUNK];                                       \
    size_t nfm = 0;                                                             \
    *bad = SIZE_MAX;                                                            \
    size_t i = 0;                                                               \
    /* rows side by side: 4 rows' sums, each the same chain in the same  */    \
    /* order, run as independent chains (latency, not throughput);       */    \
    /* contiguous rows of T read in place, others fetched (16 bits:      */    \
    /* widened, exactly) a chunk at a time                               */    \
    const int inplace = !g.store && !p->out.store && g.s1 == 1                  \
                        && p->out.s1 == 1;                                      \
    for (; i + 4 <= L; i += 4) {                                                \
        double D4[4] = {0, 0, 0, 0};                                            \
        if (inplace) {                                                          \
            const T *gr[4], *orow[4];                                           \
            for (int r = 0; r < 4; r++) {                                       \
                gr[r] = (const T *)g.data + OFF(g, b)                           \
                        + (ptrdiff_t)(i + (size_t)r) * g.s0;                    \
                orow[r] = (const T *)p->out.data + OFF(p->out, b)               \
                          + (ptrdiff_t)(i + (size_t)r) * p->out.s0;             \
            }                                                                   \
            for (size_t c = 0; c < Ev; c++)                                     \
                for (int r = 0; r < 4; r++)                                     \
                    D4[r] += (double)gr[r][c] * (double)orow[r][c];             \
        } else                                                                  \
            for (size_t c0 = 0; c0 < Ev; c0 += BWD_CHUNK) {                     \
                const size_t n = Ev - c0 < BWD_CHUNK ? Ev - c0 : BWD_CHUNK;     \
                for (size_t r = 0; r < 4; r++) {                                \
                    bwd_fetch_##SFX(&g, b, i + r, c0, n, gx[r]);                \
                    bwd_fetch_##SFX(&p->out, b, i + r, c0, n, ox[r]);           \
                }                                                               \
                for (size_t c = 0; c < n; c++)                                  \
                    for (int r = 0; r < 4; r++)                                 \
                        D4[r] += (double)gx[r][c] * (double)ox[r][c];           \
            }                                                                   \
        for (size_t r = 0; r < 4; r++) {                                        \
            d_b[i + r] = (T)D4[r];                                              \
            if (lse_b[(ptrdiff_t)(i + r) * p->lse.s0] == (T)-INFINITY           \
                && !nfm++)                                                      \
                *bad = i + r;                                                   \
        }                                                                       \
    }                                                                           \
    for (; i < L; i++) {                                                        \
        double D = 0;                                                           \
        for (size_t c0 = 0; c0 < Ev; c0 += BWD_CHUNK) {                         \
            const size_t n = Ev - c0 < BWD_CHUNK ? Ev - c0 : BWD_CHUNK;         \
            bwd_fetch_##SFX(&g, b, i, c0, n, gx[0]);                            \
            bwd_fetch_##SFX(&p->out, b, i, c0, n, ox[0]);                       \
            for (size_t c = 0; c < n; c++)                                      \
                D += (double)gx[0][c] * (double)ox[0][c];                       \
        }                                                                       \
        d_b[i] = (T)D;                                                          \
        if (lse_b[(ptrdiff_t)i * p->lse.s0] == (T)-INFINITY && !nfm++)          \
            *bad = i;                                                           \
    }                                                                           \
    ((unsigned char *)bpl->bnan)[b] = nfm && p->fully_masked == ATTN_FM_NAN;    \
    for (size_t c = 0; c < EvP; c++) {                                          \
        double acc = 0;                                                         \
        for (size_t i = 0; nfm && c < Ev && i < L; i++)                         \
            if (lse_b[(ptrdiff_t)i * p->lse.s0] == (T)-INFINITY)                \
                acc += BWD_AT_(T, g, b, (ptrdiff_t)i * g.s0                     \
                                        + (ptrdiff_t)c * g.s1);                 \
        u_b[c] = (T)(S ? acc / (double)S : 0.0);                                \
    }                                                                           \
}                                                                               \
                                                                                \
/* every element of b's rows x cols of m finite? (0 * x is NaN just for */    \
/* inf and NaN: 8 independent products, so the loop is not one chain;    */    \
/* contiguous rows read in place, vectorized)                            */    \
static int bwd_finite_##SFX(attn_mat m, size_t b, size_t rows, size_t cols)     \
{                                                                               \
    T x[BWD_CHUNK], acc[8] = {0};                                               \
    if (m.store)                                                                \
        return bwd_finite16(&m, b, rows, cols);                                 \
    for (size_t r = 0; r < rows; r++) {                                         \
        const T *row = (const T *)m.data + OFF(m, b) + (ptrdiff_t)r * m.s0;     \
        size_t c = 0;                                                           \
        for (; m.s1 == 1 && c + 8 <= cols; c += 8)                              \
            for (int l = 0; l < 8; l++)                                         \
                acc[l] *= row[c + (size_t)l];                                   \
        for (size_t c0 = c; c0 < cols; c0 += BWD_CHUNK) {                       \
            const size_t n = cols - c0 < BWD_CHUNK ? cols - c0 : BWD_CHUNK;     \
            bwd_fetch_##SFX(&m, b, r, c0, n, x);                                \
            for (size_t i = 0; i < n; i++)                                      \
                acc[i % 8] *= x[i];                                             \
        }                                                                       \
        for (int l = 0; l < 8; l++)                                             \
            if (acc[l] != acc[l])                                               \
                return 0;                                                       \
    }                                                                           \
    return 1;                                                                   \
}

DEFINE_BWD_ROWS(float, f32)
DEFINE_BWD_ROWS(double, f64)

/* ------------------------------------------------------------------------ */
/* plan                                                                     */
/* ------------------------------------------------------------------------ */
/* a bound of b's packed queries and dQ rows (fused items), in bytes, that
 * does not depend on the vector width: E and Ev padded to 16, the widest
 * W (qt, dot, qr, dor, dq, lse, D, flag per row); SIZE_MAX on overflow */
static size_t bwd_qbytes(const attn_problem *p, size_t esz)
{
    const size_t E16 = round_up(p->E, 16), Ev16 = round_up(p->Ev, 16);
    size_t n;
    if (E16 < p->E || Ev16 < p->Ev || E16 > SIZE_MAX / 8
        || Ev16 > SIZE_MAX / 8 || !mul_ok(p->L, 3 * E16 + 2 * Ev16 + 3, &n)
        || !mul_ok(n, esz, &n))
        return SIZE_MAX;
    return n;
}

static attn_status bwd_plan(attn_bwd_plan *bpl, const attn_bwd_problem *bp,
                            const attn_sdpa_kern *k)
{
    const attn_problem *p = &bp->f;
    const int t = p->dtype == ATTN_F64;
    const size_t esz = t ? sizeof(double) : sizeof(float), W = k->W;
    attn_plan *pl = &bpl->fp;
    memset(bpl, 0, sizeof *bpl);
    bpl->bp = bp;
    pl->p = p;
    /* the query block sets how dK and dV are summed (block by block): one
     * size for every set, a multiple of every vector width              */
    size_t BQ = BWD_BQ;
    if (BQ > round_up(p->L, W))
        BQ = round_up(p->L, W);
    if (BQ == 0)
        BQ = W;
    pl->BQ = BQ;
    pl->BK = p->S < BWD_BK ? (p->S ? p->S : 1) : BWD_BK;
    pl->EvP = round_up(p->Ev, W);
    bpl->EP = round_up(p->E, W);
    pl->nqb = (p->L + BQ - 1) / BQ;
    pl->nkb = (p->S + pl->BK - 1) / pl->BK;
    attn__limits(pl, p);
    /* the set's own score kernel, as the forward's, so that P = exp(s -
     * lse) sees the very scores lse came from                           */
    if (k->d->plan)
        k->d->plan(pl, p, 0);
    pl->pack_v = p->Ev > 1 && p->v.s1 != 1;
    const size_t BK = pl->BK, EP = bpl->EP, EvP = pl->EvP;
    bpl->BKA = p->S < BWD_BKA ? (p->S ? p->S : 1) : BWD_BKA;
    const size_t BKA = bpl->BKA, BKM = BKA > BK ? BKA : BK;
    size_t n, a = 0;
    int ok = 1;
    /* one query block's slot */
    ok = ok && mul_ok(p->E, BQ, &n) && take(&a, n, esz, &bpl->off_qt);
    ok = ok && mul_ok(p->Ev, BQ, &n) && take(&a, n, esz, &bpl->off_dot);
    ok = ok && mul_ok(BQ, EP, &n) && take(&a, n, esz, &bpl->off_qr);
    ok = ok && mul_ok(BQ, EvP, &n) && take(&a, n, esz, &bpl->off_dor);
    ok = ok && take(&a, 2 * BQ, esz, &bpl->off_row);
    ok = ok && take(&a, BQ, 1, &bpl->off_lnan);
    bpl->qstride = a;
    /* fused: B large enough to keep the threads busy with one item per b,
     * and the packed queries of b small enough (shape only: the choice,
     * hence the bits, never depend on the thread count or, as the bound
     * pads E and Ev to 16 whatever the vector width, on the build of
     * "portable" that runs)                                              */
    size_t all = SIZE_MAX;
    if (ok && mul_ok(pl->nqb, a + BQ * EP * esz, &all) && p->B >= BWD_FUSED_B
        && bwd_qbytes(p, esz) <= BWD_FUSED_BYTES) {
        bpl->fused = 1;
        a = all - pl->nqb * BQ * EP * esz;
        ok = ok && take(&a, pl->nqb * BQ * EP, esz, &bpl->off_dqall);
    }
    ok = ok && mul_ok(BKM, BQ, &n) && take(&a, n, esz, &bpl->off_st);
    ok = ok && mul_ok(BKM, BQ, &n) && take(&a, n, esz, &bpl->off_dp);
    ok = ok && mul_ok(BKM, EP, &n) && take(&a, n, esz, &bpl->off_kr);
    /* a set's own score kernel: K's rows as it reads them (tile_amx.h) */
    ok = ok && mul_ok(BKM, pl->own_qk ? p->E : 0, &n)
         && take(&a, n, esz, &pl->off_kp);
    ok = ok && mul_ok(BKM, pl->pack_v || p->v.store ? EvP : 0, &n)
         && take(&a, n, esz, &bpl->off_vp);
    ok = ok && mul_ok(BKM > BQ ? BKM : BQ, EP, &n)
         && take(&a, n, esz, &bpl->off_acc1);
    ok = ok && mul_ok(BKM, EvP, &n) && take(&a, n, esz, &bpl->off_acc2);
    ok = ok && take(&a, BQ, 1, &bpl->off_nan);
    ok = ok && mul_ok(BKM, p->softcap > 0 ? BQ : 0, &n)
         && take(&a, n, esz, &bpl->off_cap);
    bpl->scratch_bytes = a;
    return ok ? ATTN_OK : ATTN_ENOMEM;
}

/* ------------------------------------------------------------------------ */
/* running one pass                                                         */
/* ------------------------------------------------------------------------ */
typedef struct {
    const attn_bwd_plan *bpl;
    attn_bwd_fn fn;          /* NULL: pass 0 */
    size_t nblk;
    int blk_outer;           /* item k -> (b = k % B, blk from the end)   */
    size_t *bad;             /* pass 0: first fully masked row per b      */
    unsigned char *bguard;   /* pass 0: b's Q, K or dout not finite       */
} bwd_run;

/* Q, K or dout of b hold inf or NaN? (pass 0, per b: in parallel)       */
static int bwd_guarded(const attn_bwd_problem *bp, size_t b)
{
    const attn_problem *p = &bp->f;
    if (p->dtype == ATTN_F64)
        return !bwd_finite_f64(p->q, b, p->L, p->E)
               || !bwd_finite_f64(p->k, b, p->S, p->E)
               || !bwd_finite_f64(bp->dout, b, p->L, p->Ev);
    return !bwd_finite_f32(p->q, b, p->L, p->E)
           || !bwd_finite_f32(p->k, b, p->S, p->E)
           || !bwd_finite_f32(bp->dout, b, p->L, p->Ev);
}

static attn_status bwd_item(void *ctx, void *scratch, size_t k)
{
    const bwd_run *c = ctx;
    const attn_bwd_plan *bpl = c->bpl;
    const size_t B = bpl->bp->f.B;
    size_t b = k / c->nblk, blk = k % c->nblk;
    if (c->blk_outer) {
        b = k % B;
        blk = c->nblk - 1 - k / B;
    }
    if (!c->fn && bpl->bp->f.dtype == ATTN_F64)
        bwd_rows_f64(bpl, b, &c->bad[b]);
    else if (!c->fn)
        bwd_rows_f32(bpl, b, &c->bad[b]);
    else
        c->fn(bpl, scratch, b, blk);
    if (!c->fn)
        c->bguard[b] = (unsigned char)bwd_guarded(bpl->bp, b);
    return ATTN_OK;
}

/* one pass: B x nblk items (runtime/sched.h)                             */
static attn_status bwd_pass(const attn_bwd_plan *bpl, attn_bwd_fn fn,
                            size_t nblk, int blk_outer, size_t *bad,
                            unsigned char *bguard, const attn_exec *ex,
                            double flops)
{
    bwd_run c = {bpl, fn, nblk ? nblk : 1, blk_outer, bad, bguard};
    attn_job job = {bwd_item, &c, nblk ? bpl->bp->f.B * nblk : 0,
                    fn ? bpl->scratch_bytes : 0, NULL, flops};
    return attn_sched_run(&job, ex);
}

/* ------------------------------------------------------------------------ */
/* entry point                                                              */
/* ------------------------------------------------------------------------ */

attn_status attn_sdpa_backward(attn_bwd_problem *bp, const attn_exec *ex)
{
    if (!bp)
        return ATTN_EINVAL;
    const attn_problem *p = &bp->f;
    /* 16-bit storage (attn.h): these of a float problem (the bias read by
     * tile_masks.h); mask, lse and the slopes in the call's dtype        */
    const attn_mat *half[] = {&p->q,    &p->k,    &p->v,  &p->bias,
                              &p->out,  &bp->dout, &bp->dq, &bp->dk,
                              &bp->dv,  &bp->dbias};
    if (!attn__stores_ok(p->dtype, half, (int)(sizeof half / sizeof *half))
        || p->mask.store != ATTN_ST_NATIVE || p->lse.store != ATTN_ST_NATIVE
        || p->alibi.store != ATTN_ST_NATIVE || !p->lse.data || !p->out.data
        || !bp->dout.data || !bp->dq.data || !bp->dk.data || !bp->dv.data)
        return ATTN_EINVAL;
    attn_sdpa_kern k;
    attn__sdpa_kern(p->dtype, &k);
    const int t = p->dtype == ATTN_F64;
    attn_bwd_plan bpl;
    attn_status st = bwd_plan(&bpl, bp, &k);
    size_t nd, nu, n1, n2, esz = t ? sizeof(double) : sizeof(float);
    if (st != ATTN_OK || !mul_ok(p->B, p->L, &nd) || !mul_ok(nd, esz, &nd)
        || !mul_ok(p->B, bpl.fp.EvP, &nu) || !mul_ok(nu, esz, &nu)
        || !mul_ok(p->B, bpl.fp.nkb, &n1) || !mul_ok(p->B, bpl.fp.nqb, &n2)
        || !mul_ok(p->B, sizeof(size_t) + 1, &n1))
        return ATTN_ENOMEM;
    void *dvec = malloc(nd + 1), *uvec = malloc(nu + 1);
    size_t *bad = malloc(p->B * sizeof(size_t) + 1);
    unsigned char *bnan = malloc(p->B + 1), *bguard = malloc(p->B + 1);
    st = ATTN_ENOMEM;
    if (!dvec || !uvec || !bad || !bnan || !bguard)
        goto done;
    bpl.dvec = dvec;
    bpl.uvec = uvec;
    bpl.bnan = bnan;
    const double flops = attn__sdpa_flops(p, 3.5);
    st = bwd_pass(&bpl, NULL, 1, 0, bad, bguard, ex, flops);
    bpl.guarded = 0;
    for (size_t b = 0; st == ATTN_OK && b < p->B; b++)
        bpl.guarded |= bguard[b];
    for (size_t b = 0; st == ATTN_OK && b < p->B; b++)
        if (bad[b] != SIZE_MAX && p->fully_masked == ATTN_FM_RAISE) {
            bp->f.bad_b = b;
            bp->f.bad_row = bad[b];
            st = ATTN_EFULLYMASKED;
        }
    /* causal: the first key blocks and the last query blocks are the
     * largest items: hand them out first */
    const int causal = p->causal != ATTN_CAUSAL_NONE;
    const size_t nka = (p->S + bpl.BKA - 1) / bpl.BKA;
    if (st == ATTN_OK)
        st = bwd_pass(&bpl, k.bwd_a, bpl.fused ? 1 : nka, 0, NULL, NULL, ex,
                      flops);
    if (st == ATTN_OK && !bpl.fused)
        st = bwd_pass(&bpl, k.bwd_b, bpl.fp.nqb, causal, NULL, NULL, ex,
                      flops);
done:
    free(dvec);
    free(uvec);
    free(bad);
    free(bnan);
    free(bguard);
    return st;
}
