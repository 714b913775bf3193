/*
 * runtime/clock.c -- a monotonic clock (the kernels' poll interval).
 */
#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#include <windows.h>

#include "runtime/platform.h"

long long attn__now_ns(void)
{
    LARGE_INTEGER f, c;
    QueryPerformanceFrequency(&f); /* never fails on Windows XP and later */
    QueryPerformanceCounter(&c);
    const long long hz = f.QuadPart, t = c.QuadPart;
    return t / hz * 1000000000LL + t % hz * 1000000000LL / hz;
}

#else
#define _POSIX_C_SOURCE 200809L
#include <time.h>

#include "runtime/platform.h"

long long attn__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
#endif
