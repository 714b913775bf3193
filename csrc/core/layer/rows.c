/*
 * layer/rows.c -- the layer family's driver: (nrows, n) row problems in
 * chunks over the private thread pool, with deterministic column sums.
 *
 *   1. chunks: about attn__rows_chunk_elems elements each (whole rows), at most
 *      MAX_SUM_CHUNKS of them when column sums are wanted (their scratch
 *      is chunks * nacc * n doubles); fixed by (nrows, n) alone
 *   2. the chunks are the scheduler's work items (runtime/sched.h); a
 *      chunk's column sums go to its own slot of the scratch
 *   3. the caller's thread adds the slots in chunk order
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "half.h"
#include "layer/row16.h"
#include "layer/rows.h"
#include "runtime/sched.h"

#define MAX_SUM_CHUNKS ((size_t)64)
/* tunables (rows.h) */
size_t attn__rows_chunk_elems = (size_t)1 << 14;
double attn__rows_min_work = 65536.0;

typedef struct {
    attn_rows_fn fn;
    void *ctx;
    size_t nrows, rows_per_chunk, slot; /* slot: doubles a chunk */
    double *scratch;                    /* nchunks * slot or NULL */
    const attn_rows16 *h;               /* 16-bit operands, or NULL */
    size_t n;
} rows_ctx;

/* the bytes of a context copy in a thread's scratch (64-byte multiple)  */
static size_t copy_bytes(const attn_rows16 *h)
{
    return (h->ctx_bytes + 63) & ~(size_t)63;
}

/* rows [r0, r1) of a call with 16-bit operands: the context copied into
 * the thread's scratch, its 16-bit operands staged row by row (row16.h) */
static void rows16_chunk(const rows_ctx *c, void *scratch, size_t r0,
                         size_t r1, double *acc)
{
    void *copy = scratch;
    memcpy(copy, c->h->ctx, c->h->ctx_bytes);
    attn_row16 s;
    memset(&s, 0, sizeof s);
    s.n = c->n;
    s.rows_by_s0 = 1;
    c->h->reg(copy, &s);
    attn__row16_begin(&s, (float *)((char *)scratch + copy_bytes(c->h)));
    for (size_t r = r0; r < r1; r++) {
        attn__row16_in(&s, r);
        c->fn(copy, r, r + 1, acc);
        attn__row16_out(&s, r);
    }
}

int attn__rows16_need(const attn_rows16 *h, attn_dtype dtype)
{
    _Alignas(64) unsigned char copy[1024];
    if (h->ctx_bytes > sizeof copy)
        return -1;
    memcpy(copy, h->ctx, h->ctx_bytes);
    attn_row16 s;
    memset(&s, 0, sizeof s);
    h->reg(copy, &s);
    const attn_mat *ops[ATTN_ROW16_MAX];
    for (int i = 0; i < s.nops; i++)
        ops[i] = &s.orig[i];
    return attn__any16(dtype, ops, s.nops);
}

static attn_status rows_item(void *arg, void *scratch, size_t k)
{
    rows_ctx *c = arg;
    size_t r0 = k * c->rows_per_chunk;
    size_t r1 = r0 + c->rows_per_chunk;
    if (r1 > c->nrows)
        r1 = c->nrows;
    double *acc = c->scratch ? c->scratch + k * c->slot : NULL;
    if (c->h)
        rows16_chunk(c, scratch, r0, r1, acc);
    else
        c->fn(c->ctx, r0, r1, acc);
    return ATTN_OK;
}

attn_status attn__rows_run(size_t nrows, size_t n, size_t nacc, double *sums,
                           attn_rows_fn fn, void *ctx, double work,
                           const attn_exec *ex)
{
    return attn__rows_run16(nrows, n, nacc, sums, fn, ctx, NULL, work, ex);
}

attn_status attn__rows_run16(size_t nrows, size_t n, size_t nacc,
                             double *sums, attn_rows_fn fn, void *ctx,
                             const attn_rows16 *h, double work,
                             const attn_exec *ex)
{
    size_t slot = 0;
    if (nacc) {
        if (n > SIZE_MAX / sizeof(double) / nacc)
            return ATTN_ENOMEM;
        slot = nacc * n;
        memset(sums, 0, slot * sizeof(double));
    }
    if (nrows == 0)
        return ATTN_OK;
    /* 1. chunks, from (nrows, n) only */
    size_t per = n ? attn__rows_chunk_elems / n : nrows;
    if (per == 0)
        per = 1;
    if (nacc && (nrows + per - 1) / per > MAX_SUM_CHUNKS)
        per = (nrows + MAX_SUM_CHUNKS - 1) / MAX_SUM_CHUNKS;
    rows_ctx c;
    memset(&c, 0, sizeof c);
    c.fn = fn;
    c.ctx = ctx;
    c.nrows = nrows;
    c.rows_per_chunk = per;
    c.slot = slot;
    c.h = h;
    c.n = n;
    size_t per_thread = 0;
    if (h) { /* a context copy and ATTN_ROW16_MAX rows of floats */
        if (n > (SIZE_MAX / 2 - copy_bytes(h)) / sizeof(float)
                    / ATTN_ROW16_MAX)
            return ATTN_ENOMEM;
        per_thread = copy_bytes(h) + ATTN_ROW16_MAX * n * sizeof(float);
    }
    const size_t nchunks = (nrows + per - 1) / per;
    if (nacc && slot) {
        if (nchunks > SIZE_MAX / sizeof(double) / slot)
            return ATTN_ENOMEM;
        c.scratch = calloc(nchunks * slot, sizeof(double));
        if (!c.scratch)
            return ATTN_ENOMEM;
    }
    /* 2. the scheduler (runtime/sched.h): one thread per
     * attn__rows_min_work of work, in its unit of flops                   */
    const double total = (double)nrows * (double)(n ? n : 1) * work;
    attn_job job = {rows_item, &c, nchunks, per_thread, NULL,
                    total / attn__rows_min_work * attn__min_flops_per_thread};
    const attn_status st = attn_sched_run(&job, ex);
    if (st != ATTN_OK) {
        free(c.scratch);
        return st;
    }
    /* 3. column sums, chunk by chunk */
    if (c.scratch) {
        for (size_t k = 0; k < nchunks; k++) {
            const double *a = c.scratch + k * slot;
            for (size_t j = 0; j < slot; j++)
                sums[j] += a[j];
        }
        free(c.scratch);
    }
    return ATTN_OK;
}

void attn__store_vec(attn_dtype dtype, attn_mat out, const double *v,
                     size_t n)
{
    if (!out.data)
        return;
    for (size_t j = 0; j < n; j++) {
        ptrdiff_t o = (ptrdiff_t)j * out.s1;
        if (out.store != ATTN_ST_NATIVE) /* the float32 result, rounded */
            attn_store_f32(out.store, out.data, o, (float)v[j]);
        else if (dtype == ATTN_F32)
            ((float *)out.data)[o] = (float)v[j];
        else
            ((double *)out.data)[o] = v[j];
    }
}
