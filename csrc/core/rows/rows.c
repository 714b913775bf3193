/*
 * rows/rows.c -- the storage layer and the row driver (rows.h).
 *
 * The driver:
 *   1. chunks: about attn__rows_chunk_elems elements each (whole rows), at
 *      most MAX_SUM_CHUNKS of them when column sums are wanted (their
 *      scratch is chunks * nacc * n doubles); fixed by (nrows, n) alone
 *   2. the chunks are the scheduler's work items (runtime/sched.h); a
 *      chunk's column sums go to its own slot of the scratch
 *   3. the caller's thread adds the slots in chunk order
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "half.h"
#include "isa/kernels.h"
#include "rows/rows.h"
#include "runtime/sched.h"

#define MAX_SUM_CHUNKS ((size_t)64)
size_t attn__rows_chunk_elems = (size_t)1 << 14;
double attn__rows_min_work = 65536.0;

/* ------------------------------------------------------------------------ */
/* the storage layer                                                        */
/* ------------------------------------------------------------------------ */
static size_t esz_of(attn_dtype dt)
{
    return dt == ATTN_F64 ? sizeof(double) : sizeof(float);
}

/* the element size of m's storage in a dt call (offsets and strides
 * count these)                                                         */
static size_t store_esz(const attn_mat *m, attn_dtype dt)
{
    return m->store != ATTN_ST_NATIVE ? 2 : esz_of(dt);
}

size_t attn__row_bytes(attn_dtype dt, size_t n)
{
    const size_t e = esz_of(dt);
    if (n > (SIZE_MAX - 64) / e)
        return 0;
    return (n * e + 63) & ~(size_t)63;
}

const void *attn__row_in(const attn_mat *m, attn_dtype dt, ptrdiff_t off,
                         size_t n, void *buf)
{
    const char *p = (const char *)m->data
                    + off * (ptrdiff_t)store_esz(m, dt);
    if (m->store == ATTN_ST_NATIVE && (m->s1 == 1 || n <= 1))
        return p;
    if (m->store != ATTN_ST_NATIVE) { /* widened, exactly */
        float *d = buf;
        if (m->s1 == 1)
            attn__widen()((float *)buf, (const uint16_t *)p, n,
                                   m->store);
        else
            for (size_t j = 0; j < n; j++)
                d[j] = attn_load_f32(m->store, p, (ptrdiff_t)j * m->s1);
        return buf;
    }
    if (dt == ATTN_F64)
        for (size_t j = 0; j < n; j++)
            ((double *)buf)[j] = ((const double *)p)[(ptrdiff_t)j * m->s1];
    else
        for (size_t j = 0; j < n; j++)
            ((float *)buf)[j] = ((const float *)p)[(ptrdiff_t)j * m->s1];
    return buf;
}

void *attn__row_out(const attn_mat *m, attn_dtype dt, ptrdiff_t off,
                    void *buf)
{
    if (m->store == ATTN_ST_NATIVE && m->s1 == 1)
        return (char *)m->data + off * (ptrdiff_t)esz_of(dt);
    return buf;
}

void attn__row_done(const attn_mat *m, attn_dtype dt, ptrdiff_t off, size_t n,
                    const void *row)
{
    char *p = (char *)m->data + off * (ptrdiff_t)store_esz(m, dt);
    if ((const char *)row == p)
        return; /* computed in place */
    if (m->store != ATTN_ST_NATIVE) { /* rounded once */
        if (m->s1 == 1)
            attn__narrow()((uint16_t *)p, (const float *)row, n,
                                    m->store);
        else
            for (size_t j = 0; j < n; j++)
                attn_store_f32(m->store, p, (ptrdiff_t)j * m->s1,
                               ((const float *)row)[j]);
        return;
    }
    if (dt == ATTN_F64)
        for (size_t j = 0; j < n; j++)
            ((double *)p)[(ptrdiff_t)j * m->s1] = ((const double *)row)[j];
    else
        for (size_t j = 0; j < n; j++)
            ((float *)p)[(ptrdiff_t)j * m->s1] = ((const float *)row)[j];
}

int attn__stores_ok(attn_dtype dt, const attn_mat *const *ops, int nops)
{
    if (dt != ATTN_F32 && dt != ATTN_F64)
        return 0;
    for (int i = 0; i < nops; i++) {
        const attn_store st = ops[i]->store;
        if (!ops[i]->data || st == ATTN_ST_NATIVE)
            continue;
        if ((st != ATTN_ST_F16 && st != ATTN_ST_BF16) || dt != ATTN_F32)
            return 0;
    }
    return 1;
}

/* a column-sum vector (double) into an optional output vector, rounded
 * once to its storage                                                   */
static void store_vec(attn_dtype dt, const attn_mat *out, const double *v,
                      size_t n)
{
    if (!out->data)
        return;
    for (size_t j = 0; j < n; j++) {
        const ptrdiff_t o = (ptrdiff_t)j * out->s1;
        if (out->store != ATTN_ST_NATIVE) /* the float32 result, rounded */
            attn_store_f32(out->store, out->data, o, (float)v[j]);
        else if (dt == ATTN_F32)
            ((float *)out->data)[o] = (float)v[j];
        else
            ((double *)out->data)[o] = v[j];
    }
}

/* ------------------------------------------------------------------------ */
/* the driver                                                               */
/* ------------------------------------------------------------------------ */
typedef struct {
    const attn_rows_job *job;
    size_t rows_per_chunk, slot;        /* slot: doubles a chunk          */
    double *part;                       /* nchunks * slot, or NULL        */
} rows_ctx;

static attn_status rows_item(void *arg, void *scratch, size_t k)
{
    const rows_ctx *c = arg;
    const size_t r0 = k * c->rows_per_chunk;
    size_t r1 = r0 + c->rows_per_chunk;
    if (r1 > c->job->nrows)
        r1 = c->job->nrows;
    c->job->fn(c->job->ctx, r0, r1, c->part ? c->part + k * c->slot : NULL,
               scratch);
    return ATTN_OK;
}

attn_status attn__rows_run(const attn_rows_job *job, const attn_exec *ex)
{
    const size_t nrows = job->nrows, n = job->n;
    /* the sums' slots, when any vector is wanted (acc NULL otherwise)   */
    const int want = (job->sums[0] && job->sums[0]->data)
                     || (job->sums[1] && job->sums[1]->data);
    const size_t nacc = want ? (job->sums[1] ? 2 : 1) : 0;
    size_t nops = 0;
    while (nops < ATTN_ROWS_MAXOPS && job->ops[nops])
        nops++;
    if (!attn__stores_ok(job->dtype, job->ops, (int)nops))
        return ATTN_EINVAL;
    if (job->staged && n == 0)
        return ATTN_OK; /* nothing to compute, no sum to write */
    const size_t rb = attn__row_bytes(job->dtype, n);
    if ((job->staged && !rb) || (rb && job->staged > SIZE_MAX / rb)
        || job->extra > SIZE_MAX - job->staged * rb
        || (nacc && n > SIZE_MAX / sizeof(double) / nacc))
        return ATTN_ENOMEM;
    /* 1. chunks, from (nrows, n) only */
    size_t per = n ? attn__rows_chunk_elems / n : nrows;
    if (per == 0)
        per = 1;
    if (nacc && (nrows + per - 1) / per > MAX_SUM_CHUNKS)
        per = (nrows + MAX_SUM_CHUNKS - 1) / MAX_SUM_CHUNKS;
    const size_t nchunks = (nrows + per - 1) / per, slot = nacc * n;
    rows_ctx c = {job, per, slot, NULL};
    if (slot) {
        if (nchunks + 1 > SIZE_MAX / sizeof(double) / slot)
            return ATTN_ENOMEM;
        /* one slot a chunk, then the total                               */
        c.part = calloc((nchunks + 1) * slot, sizeof(double));
        if (!c.part)
            return ATTN_ENOMEM;
    }
    /* 2. the scheduler (runtime/sched.h): one thread per
     * attn__rows_min_work of work, in its unit of flops                   */
    const double total = (double)nrows * (double)(n ? n : 1) * job->work;
    attn_job sj = {rows_item, &c, nchunks, job->staged * rb + job->extra,
                   NULL,
                   total / attn__rows_min_work * attn__min_flops_per_thread};
    /* no rows: zero sums */
    const attn_status st = nrows ? attn_sched_run(&sj, ex) : ATTN_OK;
    /* 3. column sums, chunk by chunk, rounded once into their vectors */
    if (st == ATTN_OK && c.part) {
        double *sum = c.part + nchunks * slot;
        for (size_t k = 0; k < nchunks; k++) {
            const double *a = c.part + k * slot;
            for (size_t j = 0; j < slot; j++)
                sum[j] += a[j];
        }
        for (size_t v = 0; v < nacc; v++)
            store_vec(job->dtype, job->sums[v], sum + v * n, n);
    }
    free(c.part);
    return st;
}
