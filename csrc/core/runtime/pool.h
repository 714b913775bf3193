/*
 * runtime/pool.h -- the core's private thread pool (runtime/pool.c), shared
 * by every kernel family that spreads work items over threads.
 */
#ifndef ATTNPY_POOL_H
#define ATTNPY_POOL_H

/* ---- thread pool (runtime/pool.c) -----------------------------------------
 * attn_pool_run: run fn(arg, t) for t = 1 .. n-1 on pool threads and
 * fn(arg, 0) on the caller, return when all have returned. If the pool is
 * in use by another caller, or threads cannot be created, fewer threads
 * (possibly only the caller) run: fn must cope with that (work is claimed
 * from a shared counter). Safe after fork() in the child.               */
typedef void (*attn_task_fn)(void *arg, int t);
void attn_pool_run(attn_task_fn fn, void *arg, int n);

#endif /* ATTNPY_POOL_H */
