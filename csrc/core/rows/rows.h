/*
 * rows/rows.h -- what every row kernel shares (not public): the one
 * storage layer and the one row driver.
 *
 *   rows.c       both: rows in chunks over the scheduler, column sums in
 *                chunk order; a row of any operand as unit-stride T
 *   cvt_tmpl.h   16-bit rows widened and rounded, written once over the
 *                SIMD primitives (isa/<set>.c instantiates it)
 *
 * THE STORAGE LAYER. A row kernel computes on unit-stride rows of its
 * compute type T (float or double) and never sees a stride or a storage:
 *   x = attn__row_in(&p->x, dt, off, n, buf)    row at element offset off,
 *       as n unit-stride T: in place (native, unit stride) or widened /
 *       gathered into buf (exact);
 *   y = attn__row_out(&p->y, dt, off, buf)      where to compute a row:
 *       in place, or buf;
 *   attn__row_done(&p->y, dt, off, n, y)        y written back when it was
 *       computed in buf: gathered back, or rounded once to 16 bits.
 * So a call with 16-bit or strided operands computes exactly the float
 * call's operations on the exactly widened, unit-stride rows, and a
 * 16-bit output is that result rounded once (nearest even: half.h). An
 * output may be the memory of an input with the same layout (in place):
 * the kernels read a row before they write it.
 *
 * THE ROW DRIVER. attn__rows_run cuts rows [0, nrows) into chunks fixed
 * by (nrows, n) alone, runs them as the scheduler's items (threads, the
 * Ctrl-C poll, per-thread scratch), and reduces per-chunk column sums in
 * chunk order, in double: the same bits for any thread count.
 */
#ifndef ATTNPY_ROWS_ROWS_H
#define ATTNPY_ROWS_ROWS_H

#include <stddef.h>
#include <stdint.h>

#include "attn.h"
#include "util.h"

/* element (r, j) of a row operand (attn.h): OFF(m, r) + r * s0 + j * s1 */
#define ROW(m, r) (OFF(m, r) + (ptrdiff_t)(r) * (m).s0)
/* row r = b * T + t of a batched (B, T, n) operand: element (b, t, j) at
 * OFF(m, b) + t * m.s0 + j * m.s1                                        */
static inline ptrdiff_t attn__row_bt(const attn_mat *m, size_t r, size_t T)
{
    return OFF(*m, r / T) + (ptrdiff_t)(r % T) * m->s0;
}

/* bytes of one staged row of n elements of dtype (64-byte multiple); 0
 * on overflow                                                           */
size_t attn__row_bytes(attn_dtype dt, size_t n);

const void *attn__row_in(const attn_mat *m, attn_dtype dt, ptrdiff_t off,
                         size_t n, void *buf);
void *attn__row_out(const attn_mat *m, attn_dtype dt, ptrdiff_t off,
                    void *buf);
void attn__row_done(const attn_mat *m, attn_dtype dt, ptrdiff_t off, size_t n,
                    const void *row);

/* 1 when the operands' storages fit dtype: 16-bit only in an ATTN_F32
 * call, and known; absent operands (data NULL) pass                     */
int attn__stores_ok(attn_dtype dt, const attn_mat *const *ops, int nops);

/* rows [r0, r1) of a job; acc: nacc * n doubles, zeroed, the chunk's own
 * column sums (NULL without sums); scratch: the job's per-thread bytes  */
typedef void (*attn_rows_fn)(void *ctx, size_t r0, size_t r1, double *acc,
                             void *scratch);

#define ATTN_ROWS_MAXOPS 8
typedef struct {
    attn_dtype dtype;
    size_t nrows, n;       /* rows, and elements of a row (for chunks)  */
    attn_rows_fn fn;
    void *ctx;
    double work;           /* rough cost of one element (1: a copy)     */
    size_t staged;         /* staged rows of n per thread (scratch)     */
    size_t extra;          /* more scratch bytes per thread             */
    /* the operands, for their storages (attn__stores_ok; absent: data
     * NULL), and the vectors the column sums go to: nacc = 1 or 2 slots
     * of n when any of them is wanted (data not NULL), each written
     * rounded once when wanted; no slot (acc NULL) otherwise          */
    const attn_mat *ops[ATTN_ROWS_MAXOPS];
    const attn_mat *sums[2];
} attn_rows_job;

/* A row kernel's entry point after its own checks: the storages
 * (ATTN_EINVAL), nothing to do without rows -- or, with staged rows,
 * without elements --, scratch and column sums sized with overflow
 * checks (ATTN_ENOMEM); then the rows in chunks on the scheduler, and the
 * column sums into job->sums[]. ATTN_EINTERRUPTED when polled.          */
attn_status attn__rows_run(const attn_rows_job *job, const attn_exec *ex);

/* Tunables (the C tests shrink them to get many chunks and threads on
 * small problems): elements per chunk (whole rows, at least one), and the
 * work (elements x work) below which one more thread is not woken.        */
extern size_t attn__rows_chunk_elems;
extern double attn__rows_min_work;

/* the 16-bit conversions of the set in use (cvt_tmpl.h): n elements    */
typedef void (*attn_widen_fn)(float *dst, const uint16_t *src, size_t n,
                              attn_store st);
typedef void (*attn_narrow_fn)(uint16_t *dst, const float *src, size_t n,
                               attn_store st);

#endif /* ATTNPY_ROWS_ROWS_H */
