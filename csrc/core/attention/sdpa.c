/*
 * attention/sdpa.c -- the attention fast path: instruction-set dispatch, plan
 * (block sizes, scratch layout), and work items spread over threads.
 *
 * The kernel itself is tile.h, instantiated per instruction set in
 * sdpa_portable.c / sdpa_avx2.c / sdpa_avx512.c / sdpa_neon.c.
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
#include "attention/decode.h"
#include "attention/kern.h"
#include "attention/variants.h"
#include "runtime/platform.h"

/* ------------------------------------------------------------------------ */
/* instruction-set dispatch                                                 */
/* ------------------------------------------------------------------------ */

enum {
    ISA_PORTABLE = 0,
    ISA_AVX2 = 1,
    ISA_AVX512 = 2,
    ISA_NEON = 3,
    ISA_BASELINE = 4,
    ISA_COUNT = 5,
    ISA_UNSET = -1
};
/* "portable": the plain C kernel, compiled for the widest target this
 * build has it for and the CPU runs (x86: AVX2 when present);
 * "baseline": the same code compiled for the architecture's baseline
 * (x86-64: SSE2) -- what "portable" is on CPUs without AVX2 */
static const char *const isa_names[ISA_COUNT] = {
    "portable", "avx2", "avx512", "neon", "baseline"};

static atomic_int g_isa = ISA_UNSET;

static const attn_isa_desc *isa_desc(int isa)
{
#if ATTN_HAVE_X86
    if (isa == ISA_AVX512)
        return &attn__isa_avx512;
    if (isa == ISA_AVX2)
        return &attn__isa_avx2;
#endif
#if ATTN_HAVE_NEON
    if (isa == ISA_NEON)
        return &attn__isa_neon;
#endif
#if ATTN_HAVE_PORT_WIDE
    if (isa == ISA_PORTABLE && (attn__x86_features() & ATTN_X86_AVX2_FMA))
        return &attn__isa_portable_wide;
#endif
    return &attn__isa_portable;
}

/* compiled in, and usable on this CPU and OS (runtime/cpuid.c) */
static int isa_supported(int isa)
{
    switch (isa) {
    case ISA_PORTABLE:
    case ISA_BASELINE:
        return 1;
#if ATTN_HAVE_X86
    case ISA_AVX2:
        return (attn__x86_features() & ATTN_X86_AVX2_FMA) != 0;
    case ISA_AVX512:
        return (attn__x86_features() & ATTN_X86_AVX512F) != 0;
#endif
#if ATTN_HAVE_NEON
    case ISA_NEON: /* part of the AArch64 base ISA */
        return 1;
#endif
    default:
        return 0;
    }
}

static int isa_best(void)
{
    static const int order[] = {ISA_AVX512, ISA_AVX2, ISA_NEON};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
        if (isa_supported(order[i]))
            return order[i];
    return ISA_PORTABLE;
}

static int isa_get(void)
{
    int isa = atomic_load_explicit(&g_isa, memory_order_acquire);
    if (isa != ISA_UNSET)
        return isa;
    const char *env = getenv("ATTNPY_FORCE_PORTABLE");
    int want = (env && env[0] && strcmp(env, "0") != 0) ? ISA_PORTABLE
                                                        : isa_best();
    int expected = ISA_UNSET;
    /* a concurrent attn_set_isa wins over the initial choice */
    atomic_compare_exchange_strong(&g_isa, &expected, want);
    return atomic_load_explicit(&g_isa, memory_order_acquire);
}

const char *attn_isa_name(void) { return isa_names[isa_get()]; }

const attn_isa_desc *attn__isa_current(void) { return isa_desc(isa_get()); }

int attn_set_isa(const char *name)
{
    if (!name)
        return -1;
    int isa = -1;
    if (strcmp(name, "auto") == 0)
        isa = isa_best();
    for (int i = 0; i < ISA_COUNT; i++)
        if (strcmp(name, isa_names[i]) == 0)
            isa = i;
    if (isa < 0 || !isa_supported(isa))
        return -1;
    atomic_store_explicit(&g_isa, isa, memory_order_release);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* plan                                                                     */
/* ------------------------------------------------------------------------ */

#define SCRATCH_TARGET ((size_t)256 * 1024) /* st + K/V blocks, per thread */

/* query block of desc d: the ISA's choice, smaller for short L or huge E */
static size_t query_block(const attn_problem *p, const attn_isa_desc *d)
{
    const int t = p->dtype == ATTN_F64;
    const size_t esz = t ? sizeof(double) : sizeof(float);
    const size_t W = d->W[t];
    size_t BQ = d->BQ[t];
#ifdef ATTN_TUNE_ENV /* tests/c/bench_core: try other block sizes */
    if (getenv("TUNE_BQ"))
        BQ = round_up((size_t)atoi(getenv("TUNE_BQ")), W);
#endif
    if (BQ > round_up(p->L, W))
        BQ = round_up(p->L, W);
    while (BQ > W && BQ * p->E * esz > SCRATCH_TARGET)
        BQ -= W;
    return BQ ? BQ : W;
}

/* key block of desc d: the ISA's choice, smaller for short S or wide rows.
 * It sets the online softmax's blocking, hence the rounding: a desc with
 * plan_as takes that desc's key block (same bits, "portable").         */
static size_t key_block(const attn_problem *p, const attn_isa_desc *d)
{
    if (d->plan_as)
        d = d->plan_as;
    const int t = p->dtype == ATTN_F64;
    const size_t esz = t ? sizeof(double) : sizeof(float);
    size_t BK = d->BK[t];
#ifdef ATTN_TUNE_ENV
    if (getenv("TUNE_BK"))
        BK = (size_t)atoi(getenv("TUNE_BK"));
#endif
    const size_t row = (query_block(p, d) + p->E + round_up(p->Ev, d->W[t]))
                       * esz;
    while (BK > 8 && BK * row > SCRATCH_TARGET)
        BK /= 2;
    if (BK > p->S)
        BK = p->S ? p->S : 1;
    return BK;
}

void attn__limits(attn_plan *pl, const attn_problem *p)
{
    const ptrdiff_t ps = p->pos_shift;
    /* the "unbounded" of attn.h: no row's limit ever cuts                */
    const ptrdiff_t unb = (ptrdiff_t)(p->L + p->S) + (ps < 0 ? -ps : ps) + 1;
    pl->coff = attn__var_qpos(p);
    pl->win = p->window != 0;
    pl->llim = pl->win ? p->wleft : unb;
    pl->rlim = pl->win ? p->wright : unb;
    if (p->causal != ATTN_CAUSAL_NONE && pl->rlim > 0)
        pl->rlim = 0;
    pl->lim = pl->win || p->causal != ATTN_CAUSAL_NONE;
    pl->fx = p->softcap > 0 || p->alibi.data != NULL;
}

static attn_status make_plan(attn_plan *pl, const attn_problem *p,
                             const attn_isa_desc *d)
{
    const int t = p->dtype == ATTN_F64;
    const size_t esz = t ? sizeof(double) : sizeof(float);
    const size_t W = d->W[t];
    memset(pl, 0, sizeof *pl);
    pl->p = p;
    const size_t BQ = query_block(p, d), BK = key_block(p, d);
    pl->BQ = BQ;
    pl->BQP = BQ;
    pl->EvP = round_up(p->Ev, W);
    pl->BK = BK;

    pl->nqb = (p->L + BQ - 1) / BQ;
    attn__limits(pl, p);
    pl->pack_k = p->E > 1 && p->k.s1 != 1;
    pl->pack_v = p->Ev > 0 && ((p->Ev > 1 && p->v.s1 != 1) || p->Ev % W);

    size_t n, a = 0;
    int ok = 1;
    ok = ok && mul_ok(p->E, pl->BQP, &n) && take(&a, n, esz, &pl->off_qt);
    ok = ok && mul_ok(BK, pl->BQP, &n) && take(&a, n, esz, &pl->off_st);
    ok = ok && mul_ok(BQ, pl->EvP, &n) && take(&a, n, esz, &pl->off_o);
    ok = ok && take(&a, 6 * pl->BQP, esz, &pl->off_row);
    ok = ok && mul_ok(BK, pl->pack_k ? p->E : 0, &n)
         && take(&a, n, esz, &pl->off_kp);
    ok = ok && mul_ok(BK, pl->pack_v ? pl->EvP : 0, &n)
         && take(&a, n, esz, &pl->off_vp);
    ok = ok && take(&a, pl->EvP, esz, &pl->off_vmean);
    ok = ok && take(&a, pl->BQP, 1, &pl->off_fm);
    ok = ok && take(&a, 1, sizeof(attn_mkey), &pl->off_mkey);
    const int mask = p->mask.data != NULL;
    ok = ok && take(&a, mask ? (p->S + BK - 1) / BK : 0, 1, &pl->off_mcls);
    ok = ok && take(&a, mask ? p->S : 0, 2, &pl->off_macc);
    if (!ok)
        return ATTN_ENOMEM;
    pl->scratch_bytes = a;
    pl->nkb = (p->S + BK - 1) / BK;
    return ATTN_OK;
}

/* ------------------------------------------------------------------------ */
/* running the work items                                                   */
/* ------------------------------------------------------------------------ */

long long attn__poll_interval_ns = 100000000LL; /* 100 ms */
#define STACK_SCRATCH 8192

typedef struct {
    const attn_plan *pl;
    attn_item_fn fn;
    const attn_exec *ex;
    size_t nitems;
    int largest_first;
    atomic_size_t next;
    atomic_int cancel;
    atomic_int err;             /* ATTN_ENOMEM / ATTN_EINTERRUPTED      */
    /* first fully masked row seen, as item * BQ + row within the item
     * (item = b * nqb + qb, so this is (b, row) order); SIZE_MAX: none   */
    atomic_size_t bad;
    long long t_last;           /* caller only */
} run_ctx;

static void run_task(void *arg, int tid)
{
    run_ctx *c = arg;
    const attn_plan *pl = c->pl;
    const attn_problem *p = pl->p;
    const size_t B = p->B, nqb = pl->nqb;
    _Alignas(64) unsigned char stackbuf[STACK_SCRATCH];
    void *raw = NULL, *scratch = stackbuf;
    if (pl->scratch_bytes > STACK_SCRATCH) {
        raw = malloc(pl->scratch_bytes + 64);
        if (!raw) {
            atomic_store(&c->err, ATTN_ENOMEM);
            atomic_store(&c->cancel, 1);
            return;
        }
        scratch = (void *)(((uintptr_t)raw + 63) & ~(uintptr_t)63);
    }
    memset((char *)scratch + pl->off_mkey, 0, sizeof(attn_mkey));
    for (;;) {
        if (atomic_load_explicit(&c->cancel, memory_order_relaxed))
            break;
        size_t k = atomic_fetch_add_explicit(&c->next, 1,
                                             memory_order_relaxed);
        if (k >= c->nitems)
            break;
        size_t b, qb;
        if (c->largest_first) {
            qb = nqb - 1 - k / B;
            b = k % B;
        } else {
            b = k / nqb;
            qb = k % nqb;
        }
        const size_t idx = b * nqb + qb; /* (b, row) order of the item */
        if (idx > atomic_load_explicit(&c->bad, memory_order_relaxed)
                      / pl->BQ)
            continue; /* an earlier row already failed */
        size_t bad_row = 0;
        attn_status st = c->fn(pl, scratch, b, qb, &bad_row);
        if (st == ATTN_EFULLYMASKED) {
            size_t code = idx * pl->BQ + (bad_row - qb * pl->BQ);
            size_t cur = atomic_load(&c->bad);
            while (code < cur
                   && !atomic_compare_exchange_weak(&c->bad, &cur, code))
                ;
        }
        if (tid == 0 && c->ex && c->ex->poll) {
            long long t = attn__now_ns();
            if (t - c->t_last >= attn__poll_interval_ns) {
                c->t_last = t;
                if (c->ex->poll(c->ex->poll_ctx)) {
                    atomic_store(&c->err, ATTN_EINTERRUPTED);
                    atomic_store(&c->cancel, 1);
                }
            }
        }
    }
    free(raw);
}

/* a call uses at most one thread per this many flops */
double attn__min_flops_per_thread = 2.0e6;

int attn__threads_for(const attn_problem *p, const attn_exec *ex,
                      double products)
{
    int nt = ex && ex->nthreads > 1 ? ex->nthreads : 1;
    double flops = products * (double)p->B * (double)p->L * (double)p->S
                   * (double)(p->E + p->Ev);
    if (p->window) { /* each row sees at most its window's keys */
        attn_plan w;
        w.p = p;
        attn__limits(&w, p);
        const double span = (double)w.llim + (double)w.rlim + 1.0;
        if (span < (double)p->S)
            flops *= span / (double)p->S;
    } else if (p->causal != ATTN_CAUSAL_NONE) {
        flops *= 0.5;
    }
    if ((double)nt * attn__min_flops_per_thread > flops) {
        double f = flops / attn__min_flops_per_thread;
        nt = f < 1 ? 1 : (int)f;
    }
    return nt;
}

attn_status attn_sdpa(attn_problem *p, const attn_exec *ex)
{
    if (!p || (p->dtype != ATTN_F32 && p->dtype != ATTN_F64))
        return ATTN_EINVAL;
    const attn_isa_desc *d = attn__isa_current();
    if (attn__decode_wanted(p)) /* a few query rows: split the keys */
        return attn__sdpa_decode(p, ex, d);
    attn_plan pl;
    attn_status st = make_plan(&pl, p, d);
    if (st != ATTN_OK)
        return st;
    size_t nitems, ncodes;
    if (!mul_ok(p->B, pl.nqb, &nitems) || !mul_ok(nitems, pl.BQ, &ncodes)
        || ncodes == SIZE_MAX)
        return ATTN_ENOMEM;
    if (nitems == 0)
        return ATTN_OK;

    run_ctx c;
    memset(&c, 0, sizeof c);
    c.pl = &pl;
    c.fn = d->item[p->dtype == ATTN_F64];
    c.ex = ex;
    c.nitems = nitems;
    /* causal: the items of the last query blocks are the largest, hand
     * them out first. With a mask, items of one query block in a row let
     * a thread reuse the mask's block classes across b (mask_classes). */
    c.largest_first = (p->causal != ATTN_CAUSAL_NONE && !p->window)
                      || p->mask.data != NULL;
    atomic_init(&c.next, 0);
    atomic_init(&c.cancel, 0);
    atomic_init(&c.err, ATTN_OK);
    atomic_init(&c.bad, SIZE_MAX);
    if (ex && ex->poll)
        c.t_last = attn__now_ns();

    int nt = attn__threads_for(p, ex, 2.0);
    if ((size_t)nt > nitems)
        nt = (int)nitems;
    /* which value blocks hold inf/NaN, found out once per call (without
     * the table every work item would test its blocks again) */
    size_t nvfin;
    if (p->Ev && mul_ok(p->B, pl.nkb, &nvfin) && nvfin)
        pl.vfin = calloc(nvfin, sizeof *pl.vfin);
    attn_pool_run(run_task, &c, nt);
    free((void *)pl.vfin);

    int err = atomic_load(&c.err);
    if (err != ATTN_OK)
        return (attn_status)err;
    size_t bad = atomic_load(&c.bad);
    if (bad != SIZE_MAX) {
        size_t idx = bad / pl.BQ;
        p->bad_b = idx / pl.nqb;
        p->bad_row = (idx % pl.nqb) * pl.BQ + bad % pl.BQ;
        return ATTN_EFULLYMASKED;
    }
    return ATTN_OK;
}
