/*
 * layer/rows.h -- internal interface of the layer family (not public).
 *
 *   rows.c       the driver: rows in chunks over the thread pool, per-chunk
 *                column sums reduced in chunk order
 *   norm.c       layer normalisation, forward and backward
 *   norm_body.h  its per-row code, written once over the element type
 *   act.c        bias + activation (relu, gelu, gelu_tanh), forward and
 *                backward
 *   row16.c      16-bit operands, staged a row at a time in float scratch
 *
 * Chunk boundaries depend on (nrows, n) only, each chunk is computed by
 * one thread in a fixed order, and column sums are kept per chunk and
 * added chunk by chunk at the end: the same bits for any thread count.
 */
#ifndef ATTNPY_LAYER_ROWS_H
#define ATTNPY_LAYER_ROWS_H

#include <stddef.h>

#include "attn.h"
#include "layer/row16.h"
#include "util.h"

/* element (r, j) of a row operand (see attn.h) */
#define ROW(m, r) (OFF(m, r) + (ptrdiff_t)(r) * (m).s0)
/* where row r of an operand starts, for a float call whose operands may
 * be 16-bit (4 or 2 bytes an element)                                  */
static inline void *attn__row_at(attn_mat m, size_t r)
{
    return (char *)m.data
           + ROW(m, r) * (m.store == ATTN_ST_NATIVE ? 4 : 2);
}

/* Compute rows [r0, r1). acc: nacc * n doubles, zeroed, the chunk's own
 * column sums (NULL when nacc == 0).                                       */
typedef void (*attn_rows_fn)(void *ctx, size_t r0, size_t r1, double *acc);

/* Run fn over every row of an (nrows, n) problem. nacc > 0: the chunks'
 * column sums are reduced in chunk order into sums (nacc * n doubles,
 * written even when nrows == 0). work: rough cost of one element (1 for a
 * copy-like pass) to decide how many threads are worth waking. Returns
 * ATTN_OK, ATTN_ENOMEM (scratch for the column sums) or ATTN_EINTERRUPTED
 * (ex->poll asked to stop: runtime/sched.h).                              */
attn_status attn__rows_run(size_t nrows, size_t n, size_t nacc, double *sums,
                           attn_rows_fn fn, void *ctx, double work,
                           const attn_exec *ex);

/* A call with 16-bit operands (row16.h): fn is the float32 code, ctx its
 * context (ctx_bytes long); each chunk copies it into its thread's
 * scratch, reg() registers the copy's operands (attn__row16_add), and fn
 * runs one row at a time on the staged copy. ctx_bytes <= 1 KiB.       */
typedef struct {
    const void *ctx;
    size_t ctx_bytes;
    void (*reg)(void *copy, attn_row16 *s);
} attn_rows16;
/* whether a call has 16-bit operands: 1 (run it with h), 0 (no need),
 * -1 (ATTN_EINVAL: a 16-bit operand in a call whose dtype is not
 * ATTN_F32, or an unknown store)                                        */
int attn__rows16_need(const attn_rows16 *h, attn_dtype dtype);
/* attn__rows_run, with 16-bit operands when h is not NULL              */
attn_status attn__rows_run16(size_t nrows, size_t n, size_t nacc,
                             double *sums, attn_rows_fn fn, void *ctx,
                             const attn_rows16 *h, double work,
                             const attn_exec *ex);

/* Tunables (the C tests shrink them to get many chunks and threads on
 * small problems): elements per chunk (whole rows, at least one), and the
 * work (elements x work) below which one more thread is not woken.        */
extern size_t attn__rows_chunk_elems;
extern double attn__rows_min_work;

/* write a column-sum vector (double) into an optional output vector; a
 * 16-bit one gets the float32 value rounded once to its storage        */
void attn__store_vec(attn_dtype dtype, attn_mat out, const double *v,
                     size_t n);

#endif /* ATTNPY_LAYER_ROWS_H */
