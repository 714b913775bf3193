/*
 * runtime/sched.h -- the one scheduler of the core's parallel kernels
 * (runtime/sched.c): work items claimed from a shared counter by the
 * pool's threads, one thread-count rule, one cancellation poll, one
 * first-error path. Every parallel kernel (attention forward and backward,
 * the layer family's rows) runs its items through attn_sched_run.
 */
#ifndef ATTNPY_SCHED_H
#define ATTNPY_SCHED_H

#include <stddef.h>

#include "attn.h"

/* One work item, with the calling thread's scratch (scratch_bytes, 64-byte
 * aligned, or NULL when the job asks for none). Anything but ATTN_OK stops
 * the job: items not yet started are not run, and attn_sched_run returns
 * the first such status.                                                 */
typedef attn_status (*attn_item_run_fn)(void *ctx, void *scratch,
                                        size_t item);

typedef struct {
    attn_item_run_fn fn;
    void *ctx;
    size_t nitems;
    size_t scratch_bytes; /* per thread; up to 16 KiB lives on its stack    */
    /* called once on each thread's fresh scratch (may be NULL)            */
    void (*scratch_init)(void *ctx, void *scratch);
    double flops;         /* the job's work, for the thread count          */
} attn_job;

/* Run every item (each exactly once, in any order, on up to
 * attn_sched_threads(ex, job->flops, job->nitems) threads). The calling
 * thread asks ex->poll about every attn__poll_interval_ns between items;
 * a nonzero answer stops the job with ATTN_EINTERRUPTED. Out of memory
 * for a thread's scratch: ATTN_ENOMEM.                                   */
attn_status attn_sched_run(const attn_job *job, const attn_exec *ex);

/* The thread-count rule: ex->nthreads, but at most one per
 * attn__min_flops_per_thread flops and one per item.                     */
int attn_sched_threads(const attn_exec *ex, double flops, size_t nitems);

/* Tuning knobs, exposed for the C tests (set before calling, not while a
 * call runs): the poll interval (default 100 ms) and the flops a thread
 * must have before a call uses one more.                                 */
extern long long attn__poll_interval_ns;
extern double attn__min_flops_per_thread;
long long attn__now_ns(void); /* CLOCK_MONOTONIC (runtime/clock.c)      */

#endif /* ATTNPY_SCHED_H */
