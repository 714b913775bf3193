/*
 * runtime/pool.c -- a small private thread pool for the core's kernels
 * (POSIX threads, or Win32 threads on Windows: runtime/thread.h).
 *
 * No OpenMP (mixing OpenMP runtimes in one process is undefined, libgomp
 * hangs in forked children). One pool per process, created on first use,
 * grown on demand, owned by one caller at a time: a caller that finds it
 * busy (another Python thread inside attn_sdpa with the GIL released) runs
 * its work on its own thread instead. Pool threads block every signal, so
 * SIGINT reaches the interpreter's thread. After fork() the child starts
 * from a fresh, empty pool (the parent's threads do not exist there).
 * Workers run each job in the caller's floating-point environment
 * (rounding mode, flush-to-zero, x87 precision on mingw-w64, whose
 * libm's log() uses the x87 unit and whose new threads start at 53-bit
 * precision while the main thread has 64): results never depend on
 * which thread computed them. On x86-64 the SSE control register (MXCSR)
 * is copied explicitly as well: mingw-w64's fesetenv does not restore it.
 */
#ifndef _WIN32
#define _POSIX_C_SOURCE 200809L
#endif
#include <fenv.h>
#include <stdlib.h>

#include "runtime/pool.h"
#include "runtime/thread.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <xmmintrin.h>
#define HAVE_MXCSR 1
#endif

/* the caller's floating-point environment, and setting it on a worker */
typedef struct {
    fenv_t env;
#ifdef HAVE_MXCSR
    unsigned int mxcsr;
#endif
} fp_state;

static void fp_get(fp_state *s)
{
    fegetenv(&s->env);
#ifdef HAVE_MXCSR
    s->mxcsr = _mm_getcsr();
#endif
}

static void fp_set(const fp_state *s)
{
    fesetenv(&s->env);
#ifdef HAVE_MXCSR
    _mm_setcsr(s->mxcsr);
#endif
}

#define POOL_MAX_THREADS 255

typedef struct {
    attn_mutex mu;
    attn_cond wake;       /* workers: a new job was posted            */
    attn_cond done;       /* owner: the last running worker finished  */
    int nthreads;         /* workers started                          */
    int busy;             /* a caller owns the pool                   */
    unsigned long gen;    /* job generation, bumped per job           */
    attn_task_fn fn;
    void *arg;
    fp_state fp;          /* the caller's floating-point environment  */
    int want;             /* worker slots of the current job          */
    int taken;            /* slots taken                              */
    int running;          /* workers inside fn                        */
} attn_pool;

static attn_pool *g_pool;
static attn_mutex g_pool_mu = ATTN_MUTEX_INIT;

#ifdef _WIN32
#define REGISTER_ATFORK() ((void)0) /* no fork() */
#else
/* the parent's pool, in a forked child: kept reachable (volatile: the
 * store must not be optimised away) */
static attn_pool *volatile g_pool_forked;
static pthread_once_t g_atfork_once = PTHREAD_ONCE_INIT;
#define REGISTER_ATFORK() pthread_once(&g_atfork_once, register_atfork)

static void atfork_prepare(void) { attn_mutex_lock(&g_pool_mu); }
static void atfork_parent(void) { attn_mutex_unlock(&g_pool_mu); }
static void atfork_child(void)
{
    /* The parent's workers are gone and its pool mutex may be held by a
     * thread that does not exist here: set the pool aside (a few hundred
     * bytes per fork, never freed: its mutex may be locked) and start a
     * new one on first use. */
    if (g_pool)
        g_pool_forked = g_pool;
    g_pool = NULL;
    attn_mutex_unlock(&g_pool_mu);
}

static void register_atfork(void)
{
    (void)pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}
#endif

static ATTN_THREAD_FN(worker_main, a)
{
    attn_pool *pl = a;
    unsigned long seen = 0;
    attn_mutex_lock(&pl->mu);
    for (;;) {
        while (pl->gen == seen)
            attn_cond_wait(&pl->wake, &pl->mu);
        seen = pl->gen;
        if (pl->taken < pl->want) {
            int t = ++pl->taken;
            attn_task_fn fn = pl->fn;
            void *arg = pl->arg;
            fp_state fp = pl->fp;
            pl->running++;
            attn_mutex_unlock(&pl->mu);
            fp_set(&fp);
            fn(arg, t);
            attn_mutex_lock(&pl->mu);
            if (--pl->running == 0)
                attn_cond_signal(&pl->done);
        }
    }
    ATTN_THREAD_RETURN;
}

static attn_pool *get_pool(void)
{
    REGISTER_ATFORK();
    attn_mutex_lock(&g_pool_mu);
    attn_pool *pl = g_pool;
    if (!pl) {
        pl = calloc(1, sizeof *pl);
        if (pl) {
            if (attn_mutex_init(&pl->mu) != 0) {
                free(pl);
                pl = NULL;
            } else if (attn_cond_init(&pl->wake) != 0) {
                attn_mutex_destroy(&pl->mu);
                free(pl);
                pl = NULL;
            } else if (attn_cond_init(&pl->done) != 0) {
                attn_cond_destroy(&pl->wake);
                attn_mutex_destroy(&pl->mu);
                free(pl);
                pl = NULL;
            }
        }
        g_pool = pl;
    }
    attn_mutex_unlock(&g_pool_mu);
    return pl;
}

/* start workers until there are n (called with pl->mu held) */
static void grow(attn_pool *pl, int n)
{
    if (n > POOL_MAX_THREADS)
        n = POOL_MAX_THREADS;
    if (pl->nthreads >= n)
        return;
    pl->nthreads += attn_threads_start(worker_main, pl, n - pl->nthreads);
}

void attn_pool_run(attn_task_fn fn, void *arg, int n)
{
    attn_pool *pl = n > 1 ? get_pool() : NULL;
    if (!pl) {
        fn(arg, 0);
        return;
    }
    attn_mutex_lock(&pl->mu);
    if (pl->busy) {
        attn_mutex_unlock(&pl->mu);
        fn(arg, 0);
        return;
    }
    pl->busy = 1;
    grow(pl, n - 1);
    pl->fn = fn;
    pl->arg = arg;
    fp_get(&pl->fp);
    pl->want = n - 1 < pl->nthreads ? n - 1 : pl->nthreads;
    pl->taken = 0;
    pl->gen++;
    attn_cond_broadcast(&pl->wake);
    attn_mutex_unlock(&pl->mu);

    fn(arg, 0);

    attn_mutex_lock(&pl->mu);
    pl->want = pl->taken; /* close the job: late wakers take nothing */
    while (pl->running > 0)
        attn_cond_wait(&pl->done, &pl->mu);
    pl->fn = NULL;
    pl->arg = NULL;
    pl->busy = 0;
    attn_mutex_unlock(&pl->mu);
}
