/*
 * layer/rows.c -- the layer family's driver: (nrows, n) row problems in
 * chunks over the private thread pool, with deterministic column sums.
 *
 *   1. chunks: about attn__rows_chunk_elems elements each (whole rows), at most
 *      MAX_SUM_CHUNKS of them when column sums are wanted (their scratch
 *      is chunks * nacc * n doubles); fixed by (nrows, n) alone
 *   2. threads claim chunks from an atomic counter; a chunk's column sums
 *      go to its own slot of the scratch
 *   3. the caller's thread adds the slots in chunk order
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "layer/rows.h"
#include "runtime/pool.h"

#define MAX_SUM_CHUNKS ((size_t)64)
/* tunables (rows.h) */
size_t attn__rows_chunk_elems = (size_t)1 << 14;
double attn__rows_min_work = 65536.0;

typedef struct {
    attn_rows_fn fn;
    void *ctx;
    size_t nrows, rows_per_chunk, nchunks, slot; /* slot: doubles a chunk */
    double *scratch;                             /* nchunks * slot or NULL */
    atomic_size_t next;
} rows_ctx;

static void rows_task(void *arg, int tid)
{
    (void)tid;
    rows_ctx *c = arg;
    for (;;) {
        size_t k = atomic_fetch_add(&c->next, 1);
        if (k >= c->nchunks)
            return;
        size_t r0 = k * c->rows_per_chunk;
        size_t r1 = r0 + c->rows_per_chunk;
        if (r1 > c->nrows)
            r1 = c->nrows;
        double *acc = c->scratch ? c->scratch + k * c->slot : NULL;
        c->fn(c->ctx, r0, r1, acc);
    }
}

attn_status attn__rows_run(size_t nrows, size_t n, size_t nacc, double *sums,
                           attn_rows_fn fn, void *ctx, double work,
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
    c.nchunks = (nrows + per - 1) / per;
    c.slot = slot;
    atomic_init(&c.next, 0);
    if (nacc && slot) {
        if (c.nchunks > SIZE_MAX / sizeof(double) / slot)
            return ATTN_ENOMEM;
        c.scratch = calloc(c.nchunks * slot, sizeof(double));
        if (!c.scratch)
            return ATTN_ENOMEM;
    }
    /* 2. threads: as many as the work is worth, at most one per chunk */
    int nt = ex && ex->nthreads > 1 ? ex->nthreads : 1;
    double total = (double)nrows * (double)(n ? n : 1) * work;
    if ((double)nt * attn__rows_min_work > total) {
        double f = total / attn__rows_min_work;
        nt = f < 1 ? 1 : (int)f;
    }
    if ((size_t)nt > c.nchunks)
        nt = (int)c.nchunks;
    attn_pool_run(rows_task, &c, nt);
    /* 3. column sums, chunk by chunk */
    if (c.scratch) {
        for (size_t k = 0; k < c.nchunks; k++) {
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
        if (dtype == ATTN_F32)
            ((float *)out.data)[o] = (float)v[j];
        else
            ((double *)out.data)[o] = v[j];
    }
}
