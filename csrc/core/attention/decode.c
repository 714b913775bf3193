/*
 * attention/decode.c -- the split-K decode path of attn_sdpa (decode.h).
 *
 * attn_sdpa hands a problem here when attn__decode_wanted (L small, and
 * for L >= 2 a row not tiny: decode.h). The key sequence of every batch
 * item is cut into chunks of CK keys, CK from the shape alone; only the
 * chunks holding a key that causality and the window let some row see
 * are work items (dec_chunk_span); work item (b, c) computes the partials
 * (out_c, lse_c) of every row of b over chunk c (decode_tile.h). Items are claimed from
 * an atomic counter by the pool's threads. Then, on the calling thread,
 * each row's partials are merged in chunk order (merge.c) and fully masked
 * rows get their policy; when weights or raw scores are wanted, a second
 * pass over the same items writes them. Every number is computed by one
 * item in a fixed order: the result is the same bits for any thread count.
 *
 * Batch items go in rounds whose partials take at most ROUND_BYTES, so a
 * huge B never needs a huge buffer.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "attention/decode.h"
#include "attention/variants.h"
#include "runtime/platform.h"
#include "util.h"

#define CHUNK_BYTES ((size_t)256 * 1024) /* K + V bytes of one chunk     */
#define CHUNK_BYTES_1 ((size_t)1 << 20) /* ... when L = 1 (chunk_keys)  */
#define MIN_ITEMS ((size_t)8)
#define MAX_CK ((size_t)4096)
#define MAX_CHUNKS ((size_t)4096)        /* per batch item; CK grows     */
#define ROUND_BYTES ((size_t)8 << 20)    /* partials of one round        */
/* scratch of a thread / the call's buffers this small live on the stack
 * (a tiny call costs no malloc)                                         */
#define STACK_SCRATCH 8192
#define STACK_BUFFERS 4096

/* decode_tile.h's dk_dots_nr has a case for each L up to 4              */
typedef char attn__decode_max_l_is_4[ATTN_DECODE_MAX_L == 4 ? 1 : -1];

int attn__decode_wanted(const attn_problem *p)
{
    if (p->L < 1 || p->L > ATTN_DECODE_MAX_L)
        return 0;
    if (p->L == 1)
        return 1;
    /* S (E + Ev) >= ATTN_DECODE_MIN_KV, without overflow */
    const size_t ev = p->E + p->Ev < p->E ? SIZE_MAX : p->E + p->Ev;
    return ev && p->S >= (ATTN_DECODE_MIN_KV + ev - 1) / ev;
}

static const attn_decode_desc *dec_desc(const attn_isa_desc *d)
{
#if ATTN_HAVE_X86
    if (d == &attn__isa_avx512)
        return &attn__dec_avx512;
    if (d == &attn__isa_avx2)
        return &attn__dec_avx2;
#endif
#if ATTN_HAVE_NEON
    if (d == &attn__isa_neon)
        return &attn__dec_neon;
#endif
#if ATTN_HAVE_PORT_WIDE
    if (d == &attn__isa_portable_wide)
        return &attn__dec_portable_wide;
#endif
    (void)d;
    return &attn__dec_portable;
}

/* ------------------------------------------------------------------------ */
/* plan                                                                     */
/* ------------------------------------------------------------------------ */

/* *r = a * b; 0 on overflow                                                */
static int mul_to(size_t a, size_t b, size_t *r)
{
    if (a && b > SIZE_MAX / a)
        return 0;
    *r = a * b;
    return 1;
}

/* *a += n * m bytes, rounded up to 64; 0 on overflow                       */
static int grab(size_t *a, size_t n, size_t m, size_t *off)
{
    if (m && n > (SIZE_MAX - 128 - *a) / m)
        return 0;
    *off = *a;
    *a += (n * m + 63) & ~(size_t)63;
    return 1;
}

/* keys per chunk, from the shape alone: about CHUNK_BYTES of K and V
 * rows when L >= 2 (they stay in L2 while the rows of the item go by);
 * with one row, which reads each key once, CHUNK_BYTES_1 (a longer run of
 * addresses per item streams faster from DRAM: 83-110% of a threaded
 * np.dot where 256 KiB gave 75-100%, AMD EPYC, 2 threads), halved down
 * to CHUNK_BYTES while that leaves fewer than MIN_ITEMS items (a short
 * cache of one head still goes to every thread). A multiple of 16 keys,
 * 16 .. MAX_CK, and more when S would need over MAX_CHUNKS chunks.      */
static size_t chunk_keys(const attn_problem *p)
{
    const size_t esz = p->dtype == ATTN_F64 ? sizeof(double) : sizeof(float);
    const size_t ev = p->E + p->Ev < p->E ? SIZE_MAX : p->E + p->Ev;
    size_t bytes = p->L == 1 ? CHUNK_BYTES_1 : CHUNK_BYTES;
    size_t ck;
    for (;;) {
        ck = ev < bytes / esz ? bytes / esz / (ev ? ev : 1) : 0;
        ck = ck > MAX_CK ? MAX_CK : ck < 16 ? 16 : ck & ~(size_t)15;
        const size_t nch = p->S / ck + (p->S % ck != 0);
        if (bytes <= CHUNK_BYTES || ck == 16
            || (p->B && nch > (MIN_ITEMS - 1) / p->B))
            break;
        bytes /= 2;
    }
    const size_t need = p->S / MAX_CHUNKS + 16;
    return ck > need ? ck : need & ~(size_t)15;
}

/* the chunks [c0, c0 + nch) holding a key that causality and the window
 * let some row see (the rows' intervals shift by one key per row, so
 * their union is one interval); weights and scores need every chunk     */
static void dec_chunk_span(attn_dplan *dp)
{
    const attn_problem *p = dp->p;
    if (!attn__var_limits_keys(p) || p->weights.data || p->scores.data)
        return;
    size_t lo = p->S, hi = 0;
    for (size_t r = 0; r < p->L; r++) {
        size_t l, h;
        attn__var_keys(p, (ptrdiff_t)r + dp->qpos, &l, &h);
        if (l >= h)
            continue;
        lo = l < lo ? l : lo;
        hi = h > hi ? h : hi;
    }
    if (lo >= hi) {
        dp->nch = 0;
        return;
    }
    dp->c0 = lo / dp->CK;
    dp->nch = (hi - 1) / dp->CK + 1 - dp->c0;
}

static attn_status make_dplan(attn_dplan *dp, const attn_problem *p)
{
    const size_t esz = p->dtype == ATTN_F64 ? sizeof(double) : sizeof(float);
    memset(dp, 0, sizeof *dp);
    dp->p = p;
    dp->CK = chunk_keys(p);
    dp->nch = p->S / dp->CK + (p->S % dp->CK != 0);
    /* a chunk holds at most min(CK, S) keys: a short sequence's score
     * row (and scratch) is short                                        */
    const size_t ckeys = dp->CK < p->S ? dp->CK : p->S;
    dp->SP = (ckeys + 15) & ~(size_t)15;
    dp->SR = dp->SP + 16; /* a row's scores may start anywhere in it and
                             are padded to the vector width             */
    dp->qpos = attn__var_qpos(p);
    dec_chunk_span(dp);
    dp->pack_k = p->E > 1 && p->k.s1 != 1;
    dp->pack_v = p->Ev > 1 && p->v.s1 != 1;
    size_t a = 0, n;
    int ok = mul_to(p->L, p->E, &n)
             && grab(&a, n, esz, &dp->off_q) && mul_to(p->L, dp->SR, &n)
             && grab(&a, n, esz, &dp->off_s)
             && mul_to(dp->pack_k ? ckeys : 0, p->E, &n)
             && grab(&a, n, esz, &dp->off_kp)
             && mul_to(dp->pack_v ? ckeys : 0, p->Ev, &n)
             && grab(&a, n, esz, &dp->off_vp);
    dp->scratch_bytes = a;
    switch (p->fully_masked) {
    case ATTN_FM_UNIFORM:
        dp->fm_weight = p->S ? 1.0 / (double)p->S : 0.0;
        break;
    case ATTN_FM_NAN:
        dp->fm_weight = NAN;
        break;
    default:
        dp->fm_weight = 0;
        break;
    }
    return ok ? ATTN_OK : ATTN_ENOMEM;
}

/* ------------------------------------------------------------------------ */
/* running the items of one round                                           */
/* ------------------------------------------------------------------------ */
typedef struct {
    const attn_dplan *dp;
    attn_dchunk_fn fn;
    const attn_exec *ex;
    size_t nitems;
    atomic_size_t next;
    atomic_int stop; /* 0, or the status that stopped the call */
    long long t_last;
} dec_run;

/* the calling thread asks exec->poll about every attn__poll_interval_ns  */
static void dec_poll(dec_run *c)
{
    if (!c->ex || !c->ex->poll)
        return;
    long long t = attn__now_ns();
    if (t - c->t_last < attn__poll_interval_ns)
        return;
    c->t_last = t;
    if (c->ex->poll(c->ex->poll_ctx))
        atomic_store(&c->stop, ATTN_EINTERRUPTED);
}

static void dec_task(void *arg, int tid)
{
    dec_run *c = arg;
    const attn_dplan *dp = c->dp;
    _Alignas(64) unsigned char stackbuf[STACK_SCRATCH];
    void *raw = NULL, *sb = stackbuf;
    if (dp->scratch_bytes > STACK_SCRATCH) {
        raw = malloc(dp->scratch_bytes + 64);
        if (!raw) {
            atomic_store(&c->stop, ATTN_ENOMEM);
            return;
        }
        sb = (void *)(((uintptr_t)raw + 63) & ~(uintptr_t)63);
    }
    while (!atomic_load_explicit(&c->stop, memory_order_relaxed)) {
        size_t k = atomic_fetch_add_explicit(&c->next, 1,
                                             memory_order_relaxed);
        if (k >= c->nitems)
            break;
        c->fn(dp, sb, dp->b0 + k / dp->nch, k % dp->nch);
        if (tid == 0)
            dec_poll(c);
    }
    free(raw);
}

static attn_status dec_run_items(const attn_dplan *dp, attn_dchunk_fn fn,
                                 const attn_exec *ex, size_t nb, int nt,
                                 long long *t_last)
{
    dec_run c;
    memset(&c, 0, sizeof c);
    c.dp = dp;
    c.fn = fn;
    c.ex = ex;
    c.nitems = nb * dp->nch;
    c.t_last = *t_last;
    atomic_init(&c.next, 0);
    atomic_init(&c.stop, ATTN_OK);
    if (c.nitems == 0)
        return ATTN_OK;
    if ((size_t)nt > c.nitems)
        nt = (int)c.nitems;
    attn_pool_run(dec_task, &c, nt);
    *t_last = c.t_last;
    return (attn_status)atomic_load(&c.stop);
}

/* ------------------------------------------------------------------------ */
/* merge of one round, fully masked rows                                    */
/* ------------------------------------------------------------------------ */
typedef struct {
    double *lse_k, *w, *vmean;
    ptrdiff_t *cs;
    const void **out_k;
} dec_merge_buf;

/* row r of batch item b: out(b, r, :) from the partials; returns its lse
 * (-inf: fully masked, out not written)                                   */
#define DEFINE_DEC_MERGE(T, SFX)                                                \
static double dec_merge_row_##SFX(const attn_dplan *dp, dec_merge_buf *mb,     \
                                  size_t b, size_t r)                           \
{                                                                               \
    const attn_problem *p = dp->p;                                              \
    const size_t L = p->L, Ev = p->Ev, nch = dp->nch;                           \
    const size_t bc = (b - dp->b0) * nch;                                       \
    for (size_t c = 0; c < nch; c++) {                                          \
        mb->lse_k[c] = dp->part_lse[(bc + c) * L + r];                          \
        mb->out_k[c] = (const T *)dp->part_out + ((bc + c) * L + r) * Ev;       \
        mb->cs[c] = 1;                                                          \
    }                                                                           \
    T *o = (T *)p->out.data + OFF(p->out, b) + (ptrdiff_t)r * p->out.s0;        \
    if (nch == 1 && isfinite(mb->lse_k[0])) { /* the merge would copy */       \
        const T *src = (const T *)mb->out_k[0];                                 \
        for (size_t c = 0; c < Ev; c++)                                         \
            o[(ptrdiff_t)c * p->out.s1] = src[c];                               \
        return mb->lse_k[0];                                                    \
    }                                                                           \
    const double m = attn__merge_weights(nch, mb->lse_k, mb->w);                \
    if (m != m)                                                                 \
        for (size_t c = 0; c < Ev; c++)                                         \
            o[(ptrdiff_t)c * p->out.s1] = (T)NAN;                               \
    else if (m != -INFINITY)                                                    \
        attn__merge_row_##SFX(o, p->out.s1, Ev, nch, mb->w,                     \
                              (const T *const *)mb->out_k, mb->cs);             \
    return m;                                                                   \
}                                                                               \
                                                                                \
/* a fully masked row by policy (not raise): 0, NaN or the mean of V_b    */    \
static void dec_masked_row_##SFX(const attn_problem *p, dec_merge_buf *mb,      \
                                 size_t b, size_t r, int *have_mean)            \
{                                                                               \
    T *o = (T *)p->out.data + OFF(p->out, b) + (ptrdiff_t)r * p->out.s0;        \
    const T *v_b = (const T *)p->v.data + OFF(p->v, b);                         \
    if (p->fully_masked == ATTN_FM_UNIFORM && !*have_mean) {                    \
        for (size_t c = 0; c < p->Ev; c++) {                                    \
            double acc = 0;                                                     \
            for (size_t j = 0; j < p->S; j++)                                   \
                acc += v_b[(ptrdiff_t)j * p->v.s0 + (ptrdiff_t)c * p->v.s1];    \
            mb->vmean[c] = p->S ? acc / (double)p->S : 0.0;                     \
        }                                                                       \
        *have_mean = 1;                                                         \
    }                                                                           \
    for (size_t c = 0; c < p->Ev; c++)                                          \
        o[(ptrdiff_t)c * p->out.s1] =                                           \
            p->fully_masked == ATTN_FM_UNIFORM ? (T)mb->vmean[c]                \
            : p->fully_masked == ATTN_FM_NAN   ? (T)NAN                         \
                                               : (T)0;                          \
}

DEFINE_DEC_MERGE(float, f32)
DEFINE_DEC_MERGE(double, f64)

/* the caller's lse(b, r) (attn_problem.lse), in its element type        */
static void dec_put_lse(const attn_problem *p, size_t b, size_t r, double m)
{
    const ptrdiff_t at = OFF(p->lse, b) + (ptrdiff_t)r * p->lse.s0;
    if (p->dtype == ATTN_F64)
        ((double *)p->lse.data)[at] = m;
    else
        ((float *)p->lse.data)[at] = (float)m;
}

/* merge batch items b0 .. b0+nb-1; lse[(b - b0) * L + r] = merged lse    */
static attn_status dec_merge(attn_problem *p, const attn_dplan *dp,
                             dec_merge_buf *mb, size_t nb, double *lse)
{
    const int f64 = p->dtype == ATTN_F64;
    for (size_t b = dp->b0; b < dp->b0 + nb; b++) {
        int have_mean = 0;
        for (size_t r = 0; r < p->L; r++) {
            double m = f64 ? dec_merge_row_f64(dp, mb, b, r)
                           : dec_merge_row_f32(dp, mb, b, r);
            lse[(b - dp->b0) * p->L + r] = m;
            if (p->lse.data)
                dec_put_lse(p, b, r, m);
            if (m != -INFINITY)
                continue;
            if (p->fully_masked == ATTN_FM_RAISE) {
                p->bad_b = b;
                p->bad_row = r;
                return ATTN_EFULLYMASKED;
            }
            if (f64)
                dec_masked_row_f64(p, mb, b, r, &have_mean);
            else
                dec_masked_row_f32(p, mb, b, r, &have_mean);
        }
    }
    return ATTN_OK;
}

/* ------------------------------------------------------------------------ */
/* the decode path                                                          */
/* ------------------------------------------------------------------------ */

/* threads: at most one per attn__min_flops_per_thread flops (over the
 * keys of the chunks of the items)                                       */
static int dec_threads(const attn_dplan *dp, const attn_exec *ex)
{
    const attn_problem *p = dp->p;
    int nt = ex && ex->nthreads > 1 ? ex->nthreads : 1;
    const double keys = (double)dp->nch * (double)dp->CK;
    double flops = 2.0 * (double)p->B * (double)p->L
                   * (keys < (double)p->S ? keys : (double)p->S)
                   * (double)(p->E + p->Ev);
    if ((double)nt * attn__min_flops_per_thread > flops) {
        double f = flops / attn__min_flops_per_thread;
        nt = f < 1 ? 1 : (int)f;
    }
    return nt;
}

/* batch items per round and the buffers: partials, merged lse, merge    */
static void *dec_buffers(attn_dplan *dp, size_t *nbr, dec_merge_buf *mb,
                         double **lse, unsigned char *stack)
{
    const attn_problem *p = dp->p;
    const size_t esz = p->dtype == ATTN_F64 ? sizeof(double) : sizeof(float);
    size_t rows, per_b, a = 0, o_out, o_lse, o_fin, o_m, o_vm, n;
    /* per batch item: nch * L rows of Ev values and one lse, L lse      */
    if (!mul_to(dp->nch, p->L, &rows)
        || !mul_to(p->Ev, esz, &n)
        || !mul_to(rows, n + sizeof(double), &per_b)
        || per_b > SIZE_MAX / 2)
        return NULL;
    per_b += p->L * sizeof(double);
    *nbr = ROUND_BYTES / per_b ? ROUND_BYTES / per_b : 1;
    if (*nbr > p->B)
        *nbr = p->B;
    if (mul_to(*nbr, rows, &rows)
        && grab(&a, rows, n, &o_out) && grab(&a, rows, sizeof(double), &o_lse)
        && grab(&a, *nbr * p->L, sizeof(double), &o_fin)
        && grab(&a, dp->nch + 1, 3 * sizeof(double) + sizeof(void *), &o_m)
        && grab(&a, p->Ev, sizeof(double), &o_vm)) {
        char *buf = a <= STACK_BUFFERS ? (char *)stack : malloc(a);
        if (!buf)
            return NULL;
        dp->part_out = buf + o_out;
        dp->part_lse = (double *)(buf + o_lse);
        *lse = (double *)(buf + o_fin);
        mb->lse_k = (double *)(buf + o_m);
        mb->w = mb->lse_k + dp->nch + 1;
        mb->cs = (ptrdiff_t *)(mb->w + dp->nch + 1);
        mb->out_k = (const void **)(mb->cs + dp->nch + 1);
        mb->vmean = (double *)(buf + o_vm);
        return buf;
    }
    return NULL;
}

attn_status attn__sdpa_decode(attn_problem *p, const attn_exec *ex,
                              const attn_isa_desc *d)
{
    const attn_decode_desc *dd = dec_desc(d);
    const int t = p->dtype == ATTN_F64;
    attn_dplan dp;
    attn_status st = make_dplan(&dp, p);
    if (st != ATTN_OK || p->B == 0)
        return st;
    size_t nbr;
    dec_merge_buf mb;
    double *lse;
    _Alignas(64) unsigned char stack[STACK_BUFFERS];
    void *buf = dec_buffers(&dp, &nbr, &mb, &lse, stack);
    if (!buf)
        return ATTN_ENOMEM;
    const int nt = dec_threads(&dp, ex);
    long long t_last = ex && ex->poll ? attn__now_ns() : 0;
    for (size_t b0 = 0; b0 < p->B && st == ATTN_OK; b0 += nbr) {
        const size_t nb = p->B - b0 < nbr ? p->B - b0 : nbr;
        dp.b0 = b0;
        st = dec_run_items(&dp, dd->chunk[t], ex, nb, nt, &t_last);
        if (st == ATTN_OK)
            st = dec_merge(p, &dp, &mb, nb, lse);
        dp.lse = lse;
        if (st == ATTN_OK && (p->weights.data || p->scores.data))
            st = dec_run_items(&dp, dd->weights[t], ex, nb, nt, &t_last);
    }
    if (buf != (void *)stack)
        free(buf);
    return st;
}
