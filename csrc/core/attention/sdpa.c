/*
 * attention/sdpa.c -- the attention fast path: instruction-set dispatch, plan
 * (block sizes, scratch layout), and work items spread over threads.
 *
 * The kernel itself is tile.h, instantiated per instruction set in
 * isa/<set>.c.
 *
 * Work item = (b, query block). Items are claimed from an atomic counter
 * (dynamic balance: causal items are uneven, so those are handed out
 * largest first). Each item writes only its own rows, computed in a fixed
 * order, so the result does not depend on the number of threads. The
 * calling thread polls exec->poll about every 100 ms between items; a
 * nonzero answer sets a flag every thread checks between items.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "attention/kern.h"
#include "attention/variants.h"
#include "isa/kernels.h"
#include "runtime/platform.h"
#include "runtime/sched.h"

/* ------------------------------------------------------------------------ */
/* the kernels of the set in use (runtime/isa.h)                            */
/* ------------------------------------------------------------------------ */
void attn__sdpa_kern(attn_dtype dtype, attn_sdpa_kern *k)
{
    const int t = dtype == ATTN_F64;
    const attn_kernels *kt = attn__kernels();
    const attn_isa_desc *d = &kt->sdpa;
    const attn_isa_desc *b = kt->base ? &kt->base->sdpa : d;
    k->d = d;
    k->item = d->item[t] ? d->item[t] : b->item[t];
    k->merge = d->merge[t] ? d->merge[t] : b->merge[t];
    k->bwd_a = d->bwd_a[t] ? d->bwd_a[t] : b->bwd_a[t];
    k->bwd_b = d->bwd_b[t] ? d->bwd_b[t] : b->bwd_b[t];
    k->W = d->W[t];
    k->BQ = d->BQ[t];
}

/* ------------------------------------------------------------------------ */
/* plan                                                                     */
/* ------------------------------------------------------------------------ */

#define SCRATCH_TARGET ((size_t)256 * 1024) /* st + K/V blocks, per thread */
/* keys per chunk: about CHUNK_BYTES of K and V rows (a split call's work
 * item streams them from DRAM), at most MAX_CHUNK_KEYS                   */
#define CHUNK_BYTES ((size_t)1 << 20)
#define MAX_CHUNK_KEYS ((size_t)4096)
/* a split call's chunk states take at most this many bytes (else: whole
 * items)                                                                 */
#define MAX_PART_BYTES ((size_t)256 << 20)
/* a thread's converted 16-bit K / V blocks (kv_cache): at most this many
 * bytes, from key 0 on; the blocks past it are converted per use        */
#define KV_CACHE_BYTES ((size_t)512 * 1024)

/* query block: the set's choice, smaller for huge E; capped at L rounded
 * up to the vector width when short_l (speed only: a row's bits never
 * depend on its query block)                                           */
static size_t query_block(const attn_problem *p, const attn_sdpa_kern *k,
                          int short_l)
{
    const size_t esz = p->dtype == ATTN_F64 ? sizeof(double) : sizeof(float);
    const size_t W = k->W;
    size_t BQ = k->BQ;
#ifdef ATTN_TUNE_ENV /* tests/c/bench_core: try other block sizes */
    if (getenv("TUNE_BQ"))
        BQ = round_up((size_t)atoi(getenv("TUNE_BQ")), W);
#endif
    if (short_l && BQ > round_up(p->L, W))
        BQ = round_up(p->L, W);
    while (BQ > W && BQ * p->E * esz > SCRATCH_TARGET)
        BQ -= W;
    return BQ ? BQ : W;
}

/* keys per block, by the rule every set follows (kern.h): KEY_BLOCK_F32 /
 * _F64, halved while a block's scratch (scores of a nominal 64-row query
 * block, K and V rows padded to 16) passes SCRATCH_TARGET               */
#define KEY_BLOCK_F32 ((size_t)48)
#define KEY_BLOCK_F64 ((size_t)32)
size_t attn__key_block(const attn_problem *p)
{
    size_t BK = p->dtype == ATTN_F64 ? KEY_BLOCK_F64 : KEY_BLOCK_F32;
#ifdef ATTN_TUNE_ENV
    if (getenv("TUNE_BK"))
        BK = (size_t)atoi(getenv("TUNE_BK"));
#endif
    return attn__key_block_from(p, BK);
}

size_t attn__key_block_from(const attn_problem *p, size_t BK)
{
    const size_t esz = p->dtype == ATTN_F64 ? sizeof(double) : sizeof(float);
    const size_t e = p->E < SIZE_MAX / 4 ? p->E : SIZE_MAX / 4;
    const size_t ev = p->Ev < SIZE_MAX / 4 ? round_up(p->Ev, 16) : SIZE_MAX / 4;
    const double row = (64.0 + (double)e + (double)ev) * (double)esz;
    while (BK > 8 && (double)BK * row > (double)SCRATCH_TARGET)
        BK /= 2;
    return BK;
}

/* keys per chunk: a multiple of BK from (BK, E, Ev, dtype) alone         */
static size_t chunk_keys(const attn_problem *p, size_t BK)
{
    const size_t esz = p->dtype == ATTN_F64 ? sizeof(double) : sizeof(float);
    const size_t ev = p->E + p->Ev < p->E ? SIZE_MAX : p->E + p->Ev;
    const size_t per_key = ev && ev <= SIZE_MAX / esz ? ev * esz : SIZE_MAX;
    size_t n = CHUNK_BYTES / per_key / BK;
    if (n * BK > MAX_CHUNK_KEYS)
        n = MAX_CHUNK_KEYS / BK;
    return (n ? n : 1) * BK;
}

void attn__limits(attn_plan *pl, const attn_problem *p)
{
    const attn_band band = attn__var_band(p); /* variants.h */
    pl->qpos = attn__var_qpos(p);
    pl->windowed = band.windowed;
    pl->look_back = band.back;
    pl->look_ahead = band.ahead;
    pl->limited = band.limited;
    pl->edits_scores = p->softcap > 0 || p->alibi.data != NULL;
}

/* The thread's cache of converted 16-bit K / V blocks: with several
 * query blocks per batch item, a thread converts each key block of an
 * item once, not once per query block (tile_half.h: kv_cached); the
 * blocks of the first KV_CACHE_BYTES only, so a long call adds a bounded
 * amount per thread. K is cached as the floats its scores read. Returns
 * 0 on overflow.                                                         */
static int kv_cache(attn_plan *pl, size_t *a)
{
    const attn_problem *p = pl->p;
    /* a set's own score kernel reads 16-bit K in place; its own P V
     * caches what it reads (tile_amx.h: V's pairs, room for them in a
     * float slot of BK x EvP when BK >= 16)                            */
    const int ck = p->k.store != ATTN_ST_NATIVE && !pl->own_qk;
    const int cv = p->v.store != ATTN_ST_NATIVE
                   && (!pl->own_pv || pl->BK >= 16);
    const size_t row = (ck ? p->E : 0) + (cv ? pl->EvP : 0);
    const size_t nkb = (p->S + pl->BK - 1) / pl->BK;
    if (pl->nqb < 2 || row == 0 || p->dtype != ATTN_F32 || p->L <= ATTN_QK_FEW)
        return 1;
    size_t per, n;
    if (!mul_ok(row, pl->BK * sizeof(float), &per))
        return 1; /* a block larger than memory: none cached */
    pl->kvc_blocks = KV_CACHE_BYTES / per < nkb ? KV_CACHE_BYTES / per : nkb;
    if (pl->kvc_blocks == 0)
        return 1;
    const size_t keys = pl->kvc_blocks * pl->BK; /* <= S + BK: no overflow */
    return (!ck || (mul_ok(keys, p->E, &n)
                    && take(a, n, sizeof(float), &pl->off_kc)))
           && (!cv || (mul_ok(keys, pl->EvP, &n)
                       && take(a, n, sizeof(float), &pl->off_vc)))
           && take(a, 2 * pl->kvc_blocks, sizeof(attn_kvmark),
                   &pl->off_kvmark);
}

static attn_status make_plan(attn_plan *pl, const attn_problem *p,
                             const attn_sdpa_kern *k)
{
    const int t = p->dtype == ATTN_F64;
    const size_t esz = t ? sizeof(double) : sizeof(float);
    const size_t W = k->W;
    memset(pl, 0, sizeof *pl);
    pl->p = p;
    const size_t BQ = query_block(p, k, 1);
    pl->BQ = BQ;
    pl->EvP = round_up(p->Ev, W);
    pl->BK = attn__key_block(p);
    if (k->d->plan) /* the set's own kernels: their flags, maybe the BK */
        k->d->plan(pl, p, 1);
    const size_t BK = pl->BK;
    pl->CK = chunk_keys(p, BK);
    /* a block never holds more than S keys: scratch for min(BK, S) */
    const size_t bk = BK < p->S ? BK : p->S ? p->S : 1;

    pl->nqb = (p->L + BQ - 1) / BQ;
    attn__limits(pl, p);
    /* 16-bit K / V: every block is converted into the packed block */
    pl->pack_k = (p->E > 1 && p->k.s1 != 1) || p->k.store != ATTN_ST_NATIVE;
    pl->pack_v = p->Ev > 0 && ((p->Ev > 1 && p->v.s1 != 1) || p->Ev % W
                               || p->v.store != ATTN_ST_NATIVE);

    size_t n, a = 0;
    int ok = 1;
    ok = ok && mul_ok(p->E, pl->BQ, &n) && take(&a, n, esz, &pl->off_qt);
    ok = ok && mul_ok(bk, pl->BQ, &n) && take(&a, n, esz, &pl->off_st);
    ok = ok && mul_ok(BQ, pl->EvP, &n) && take(&a, n, esz, &pl->off_o);
    ok = ok && mul_ok(BQ, pl->EvP, &n) && take(&a, n, esz, &pl->off_oc);
    ok = ok && take(&a, ROW_COUNT * pl->BQ, esz, &pl->off_row);
    ok = ok && mul_ok(bk, pl->pack_k ? p->E : 0, &n)
         && take(&a, n, esz, &pl->off_kp);
    ok = ok && mul_ok(pl->vp_align > 1 ? (bk + pl->vp_align - 1)
                                             / pl->vp_align * pl->vp_align
                                       : bk,
                      pl->pack_v ? pl->EvP : 0, &n)
         && take(&a, n, esz, &pl->off_vp);
    /* K^T of a block for qk_few (one-vector query blocks); offset 0: none */
    if (p->L <= ATTN_QK_FEW && ok) {
        ok = mul_ok(round_up(bk, W), p->E, &n) && take(&a, n, esz, &pl->off_kt);
        if (ok && pl->off_kt == 0) /* 0 means none: move it up */
            ok = take(&a, n, esz, &pl->off_kt);
        ok = ok && take(&a, round_up(bk, W), esz, &pl->off_srow);
    }
    ok = ok && take(&a, p->fully_masked == ATTN_FM_UNIFORM ? p->Ev : 0,
                    sizeof(double), &pl->off_vmean);
    ok = ok && take(&a, pl->BQ, 1, &pl->off_fm);
    ok = ok && take(&a, 1, sizeof(attn_mkey), &pl->off_mkey);
    const int mask = p->mask.data != NULL;
    ok = ok && take(&a, mask ? (p->S + BK - 1) / BK : 0, 1, &pl->off_mcls);
    ok = ok && take(&a, mask ? p->S : 0, 2, &pl->off_macc);
    ok = ok && kv_cache(pl, &a);
    if (!ok)
        return ATTN_ENOMEM;
    /* a chunk state: m, l, and the item's rows (at most min(BQ, L))     */
    pl->part_bytes = round_up((2 * pl->BQ + (BQ < p->L ? BQ : p->L)
                               * pl->EvP) * esz, 64);
    pl->scratch_bytes = a;
    pl->nkb = (p->S + BK - 1) / BK;
    pl->nch = (p->S + pl->CK - 1) / pl->CK;
    return ATTN_OK;
}

/* ------------------------------------------------------------------------ */
/* running the work items                                                   */
/* ------------------------------------------------------------------------ */

typedef struct {
    const attn_plan *pl;
    attn_item_fn item;
    attn_merge_fn merge;
    int largest_first; /* 1: query blocks largest first, 2: per b too */
    int split; /* phase 1 of a split call: items (b, qb, chunk)           */
    /* first fully masked row seen, as (b * nqb + qb) * BQ + row within
     * the item: (b, row) order; SIZE_MAX: none                            */
    atomic_size_t bad;
} sdpa_ctx;

static void sdpa_scratch_init(void *ctx, void *scratch)
{
    const sdpa_ctx *c = ctx;
    memset((char *)scratch + c->pl->off_mkey, 0, sizeof(attn_mkey));
    memset((char *)scratch + c->pl->off_kvmark, 0,
           2 * c->pl->kvc_blocks * sizeof(attn_kvmark));
}

static attn_status sdpa_item(void *ctx, void *scratch, size_t k)
{
    sdpa_ctx *c = ctx;
    const attn_plan *pl = c->pl;
    const size_t B = pl->p->B, nqb = pl->nqb;
    size_t b, qb, chunk = ATTN_ALL_CHUNKS;
    if (c->split) {
        chunk = k % pl->nch;
        b = k / pl->nch / nqb;
        qb = k / pl->nch % nqb;
        return c->item(pl, scratch, b, qb, chunk, NULL);
    }
    if (c->largest_first == 2) { /* per batch item (kv_cache) */
        b = k / nqb;
        qb = nqb - 1 - k % nqb;
    } else if (c->largest_first) {
        qb = nqb - 1 - k / B;
        b = k % B;
    } else {
        b = k / nqb;
        qb = k % nqb;
    }
    const size_t idx = b * nqb + qb; /* (b, row) order of the item */
    if (idx > atomic_load_explicit(&c->bad, memory_order_relaxed) / pl->BQ)
        return ATTN_OK; /* an earlier row already failed */
    size_t bad_row = 0;
    const attn_status st = c->merge
        ? c->merge(pl, scratch, b, qb, &bad_row)
        : c->item(pl, scratch, b, qb, ATTN_ALL_CHUNKS, &bad_row);
    if (st == ATTN_EFULLYMASKED) {
        const size_t code = idx * pl->BQ + (bad_row - qb * pl->BQ);
        size_t cur = atomic_load(&c->bad);
        while (code < cur
               && !atomic_compare_exchange_weak(&c->bad, &cur, code))
            ;
        return ATTN_OK;
    }
    return st;
}

/* the multiply-adds of a call of `products` (L x S x (E + Ev)) per batch
 * item: halved when causal; a window cuts S to the window's width       */
double attn__sdpa_flops(const attn_problem *p, double products)
{
    double flops = products * (double)p->B * (double)p->L * (double)p->S
                   * (double)(p->E + p->Ev);
    if (p->window) { /* each row sees at most its window's keys */
        attn_plan w;
        w.p = p;
        attn__limits(&w, p);
        const double span = (double)w.look_back + (double)w.look_ahead + 1.0;
        if (span < (double)p->S)
            flops *= span / (double)p->S;
    } else if (p->causal != ATTN_CAUSAL_NONE) {
        flops *= 0.5;
    }
    return flops;
}

/* Split the keys of every item into chunk items (then merge items) when
 * the items alone would leave threads idle: decoding, a few long rows.
 * A row's bits are the same either way (tile.h), so this may look at the
 * threads. Returns the chunk-state buffer, or NULL: whole items.         */
static char *split_buffer(attn_plan *pl, const attn_exec *ex, double flops,
                          size_t nitems)
{
    const int nt = attn_sched_threads(ex, flops, SIZE_MAX);
    size_t n, bytes;
    if (nt < 2 || pl->nch < 2 || nitems >= 2 * (size_t)nt
        || !mul_ok(nitems, pl->nch, &n) || !mul_ok(n, pl->part_bytes, &bytes)
        || bytes > MAX_PART_BYTES)
        return NULL;
    void *raw = malloc(bytes + 64);
    if (!raw)
        return NULL; /* whole items need no buffer */
    pl->part = (char *)(((uintptr_t)raw + 63) & ~(uintptr_t)63);
    return raw;
}

/* the whole call: plan, then the work items (b, query block) over the
 * scheduler's threads -- or, when too few for the threads, every key
 * chunk of every item as an item, then merge items folding them (the
 * same bits: tile.h); the first fully masked row of a "raise" call in
 * (b, row) order                                                         */
attn_status attn_sdpa(attn_problem *p, const attn_exec *ex)
{
    if (!p)
        return ATTN_EINVAL;
    /* the operands the kernel reads or writes in 16 bits (attn.h), in a
     * float call only; never a 16-bit mask, lse or slopes               */
    const attn_mat *half[] = {&p->q,    &p->k,       &p->v,     &p->out,
                              &p->bias, &p->weights, &p->scores};
    if (!attn__stores_ok(p->dtype, half, (int)(sizeof half / sizeof *half))
        || p->mask.store != ATTN_ST_NATIVE || p->lse.store != ATTN_ST_NATIVE
        || p->alibi.store != ATTN_ST_NATIVE)
        return ATTN_EINVAL;
    attn_sdpa_kern k;
    attn__sdpa_kern(p->dtype, &k);
    attn_plan pl;
    attn_status st = make_plan(&pl, p, &k);
    if (st != ATTN_OK)
        return st;
    size_t nitems, ncodes;
    if (!mul_ok(p->B, pl.nqb, &nitems) || !mul_ok(nitems, pl.BQ, &ncodes)
        || ncodes == SIZE_MAX)
        return ATTN_ENOMEM;
    if (nitems == 0)
        return ATTN_OK;
    sdpa_ctx c;
    memset(&c, 0, sizeof c);
    c.pl = &pl;
    c.item = k.item;
    /* causal: the items of the last query blocks are the largest, hand
     * them out first. With a mask, items of one query block in a row let
     * a thread reuse the mask's block classes across b (mask_classes). */
    c.largest_first = (p->causal != ATTN_CAUSAL_NONE && !p->window)
                      || p->mask.data != NULL;
    /* causal 16-bit K / V without a mask: a batch item's blocks largest
     * first, one item after the other, so a thread's cached key blocks
     * (kv_cache) serve its next items                                   */
    if (c.largest_first && !p->mask.data && pl.kvc_blocks)
        c.largest_first = 2;
    atomic_init(&c.bad, SIZE_MAX);
    attn_job job = {sdpa_item, &c, nitems, pl.scratch_bytes,
                    sdpa_scratch_init, attn__sdpa_flops(p, 2.0)};
    char *raw = split_buffer(&pl, ex, job.flops, nitems);
    if (raw) { /* phase 1: chunk items; phase 2: merge items */
        c.split = 1;
        job.nitems = nitems * pl.nch;
        st = attn_sched_run(&job, ex);
        c.split = 0;
        c.merge = k.merge;
        job.nitems = nitems;
        job.flops = (double)nitems * (double)pl.nch * (double)pl.BQ
                    * (double)pl.EvP * 4.0;
    }
    if (st == ATTN_OK)
        st = attn_sched_run(&job, ex);
    free(raw);
    if (st != ATTN_OK)
        return st;
    const size_t bad = atomic_load(&c.bad);
    if (bad != SIZE_MAX) {
        const size_t idx = bad / pl.BQ;
        p->bad_b = idx / pl.nqb;
        p->bad_row = (idx % pl.nqb) * pl.BQ + bad % pl.BQ;
        return ATTN_EFULLYMASKED;
    }
    return ATTN_OK;
}
