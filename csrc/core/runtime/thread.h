/*
 * runtime/thread.h -- the few thread primitives the pool needs, on POSIX
 * threads or on Win32 (Windows with MSVC or mingw-w64: no pthreads
 * library needed, and the same code whichever compiler builds it).
 *
 *   attn_mutex, ATTN_MUTEX_INIT, attn_mutex_{init,destroy,lock,unlock}
 *   attn_cond, attn_cond_{init,destroy,wait,signal,broadcast}
 *   ATTN_THREAD_FN(name, arg)  defines a thread's entry point; it ends
 *                              with ATTN_THREAD_RETURN
 *   attn_threads_start(fn, arg, n)  starts up to n detached threads
 *                              running fn(arg) with every signal blocked
 *                              (POSIX: signals go to the caller's
 *                              threads); returns how many started
 * init functions return 0 on success.
 */
#ifndef ATTNPY_THREAD_H
#define ATTNPY_THREAD_H

#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <process.h>

typedef SRWLOCK attn_mutex;
typedef CONDITION_VARIABLE attn_cond;
#define ATTN_MUTEX_INIT SRWLOCK_INIT
#define ATTN_THREAD_FN(name, arg) unsigned __stdcall name(void *arg)
#define ATTN_THREAD_RETURN return 0
typedef unsigned(__stdcall *attn_thread_fn)(void *);

static inline int attn_mutex_init(attn_mutex *m)
{
    InitializeSRWLock(m);
    return 0;
}
static inline void attn_mutex_destroy(attn_mutex *m) { (void)m; }
static inline void attn_mutex_lock(attn_mutex *m)
{
    AcquireSRWLockExclusive(m);
}
static inline void attn_mutex_unlock(attn_mutex *m)
{
    ReleaseSRWLockExclusive(m);
}
static inline int attn_cond_init(attn_cond *c)
{
    InitializeConditionVariable(c);
    return 0;
}
static inline void attn_cond_destroy(attn_cond *c) { (void)c; }
static inline void attn_cond_wait(attn_cond *c, attn_mutex *m)
{
    SleepConditionVariableSRW(c, m, INFINITE, 0);
}
static inline void attn_cond_signal(attn_cond *c) { WakeConditionVariable(c); }
static inline void attn_cond_broadcast(attn_cond *c)
{
    WakeAllConditionVariable(c);
}
static inline int attn_threads_start(attn_thread_fn fn, void *arg, int n)
{
    int k = 0;
    for (; k < n; k++) {
        /* _beginthreadex, not CreateThread: the C runtime's per-thread
         * state is set up (and freed at exit) */
        uintptr_t h = _beginthreadex(NULL, 0, fn, arg, 0, NULL);
        if (!h)
            break;
        CloseHandle((HANDLE)h); /* detached */
    }
    return k;
}

#else /* POSIX threads */
#include <pthread.h>
#include <signal.h>

typedef pthread_mutex_t attn_mutex;
typedef pthread_cond_t attn_cond;
#define ATTN_MUTEX_INIT PTHREAD_MUTEX_INITIALIZER
#define ATTN_THREAD_FN(name, arg) void *name(void *arg)
#define ATTN_THREAD_RETURN return NULL
typedef void *(*attn_thread_fn)(void *);

static inline int attn_mutex_init(attn_mutex *m)
{
    return pthread_mutex_init(m, NULL);
}
static inline void attn_mutex_destroy(attn_mutex *m)
{
    pthread_mutex_destroy(m);
}
static inline void attn_mutex_lock(attn_mutex *m) { pthread_mutex_lock(m); }
static inline void attn_mutex_unlock(attn_mutex *m)
{
    pthread_mutex_unlock(m);
}
static inline int attn_cond_init(attn_cond *c)
{
    return pthread_cond_init(c, NULL);
}
static inline void attn_cond_destroy(attn_cond *c) { pthread_cond_destroy(c); }
static inline void attn_cond_wait(attn_cond *c, attn_mutex *m)
{
    pthread_cond_wait(c, m);
}
static inline void attn_cond_signal(attn_cond *c) { pthread_cond_signal(c); }
static inline void attn_cond_broadcast(attn_cond *c)
{
    pthread_cond_broadcast(c);
}
static inline int attn_threads_start(attn_thread_fn fn, void *arg, int n)
{
    int k = 0;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* inherited by the threads */
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) == 0) {
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        for (; k < n; k++) {
            pthread_t tid;
            if (pthread_create(&tid, &attr, fn, arg) != 0)
                break;
        }
        pthread_attr_destroy(&attr);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return k;
}
#endif

#endif /* ATTNPY_THREAD_H */
