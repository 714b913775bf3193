/*
 * runtime/sched.c -- the core's scheduler (sched.h).
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "runtime/pool.h"
#include "runtime/sched.h"

long long attn__poll_interval_ns = 100000000LL; /* 100 ms */
double attn__min_flops_per_thread = 2.0e6;

#define STACK_SCRATCH 16384

typedef struct {
    const attn_job *job;
    const attn_exec *ex;
    atomic_size_t next;
    atomic_int stop;  /* ATTN_OK, or the first status that stopped the job */
    long long t_last; /* calling thread only */
} sched_run;

static void stop_with(sched_run *c, attn_status st)
{
    int expected = ATTN_OK;
    atomic_compare_exchange_strong(&c->stop, &expected, (int)st);
}

/* the calling thread: ask ex->poll about every attn__poll_interval_ns    */
static void poll_now(sched_run *c)
{
    if (!c->ex || !c->ex->poll)
        return;
    const long long t = attn__now_ns();
    if (t - c->t_last < attn__poll_interval_ns)
        return;
    c->t_last = t;
    if (c->ex->poll(c->ex->poll_ctx))
        stop_with(c, ATTN_EINTERRUPTED);
}

static void sched_task(void *arg, int tid)
{
    sched_run *c = arg;
    const attn_job *job = c->job;
    _Alignas(64) unsigned char stackbuf[STACK_SCRATCH];
    void *raw = NULL, *scratch = job->scratch_bytes ? stackbuf : NULL;
    if (job->scratch_bytes > STACK_SCRATCH) {
        raw = malloc(job->scratch_bytes + 64);
        if (!raw) {
            stop_with(c, ATTN_ENOMEM);
            return;
        }
        scratch = (void *)(((uintptr_t)raw + 63) & ~(uintptr_t)63);
    }
    if (scratch && job->scratch_init)
        job->scratch_init(job->ctx, scratch);
    while (atomic_load_explicit(&c->stop, memory_order_relaxed) == ATTN_OK) {
        const size_t k = atomic_fetch_add_explicit(&c->next, 1,
                                                   memory_order_relaxed);
        if (k >= job->nitems)
            break;
        const attn_status st = job->fn(job->ctx, scratch, k);
        if (st != ATTN_OK)
            stop_with(c, st);
        if (tid == 0)
            poll_now(c);
    }
    free(raw);
}

int attn_sched_threads(const attn_exec *ex, double flops, size_t nitems)
{
    int nt = ex && ex->nthreads > 1 ? ex->nthreads : 1;
    if ((double)nt * attn__min_flops_per_thread > flops) {
        const double f = flops / attn__min_flops_per_thread;
        nt = f < 1 ? 1 : (int)f;
    }
    if ((size_t)nt > nitems)
        nt = nitems ? (int)nitems : 1;
    return nt;
}

attn_status attn_sched_run(const attn_job *job, const attn_exec *ex)
{
    if (job->nitems == 0)
        return ATTN_OK;
    sched_run c;
    c.job = job;
    c.ex = ex;
    atomic_init(&c.next, 0);
    atomic_init(&c.stop, ATTN_OK);
    c.t_last = ex && ex->poll ? attn__now_ns() : 0;
    attn_pool_run(sched_task, &c,
                  attn_sched_threads(ex, job->flops, job->nitems));
    return (attn_status)atomic_load(&c.stop);
}
