/*
 * runtime/cpus.c -- how many CPUs this process may run on.
 */
#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#include <windows.h>

#include "attn.h"

int attn_available_cpus(void)
{
    /* more than one processor group (over 64 CPUs): threads may run in
     * any group (Windows 11), count them all; else the affinity mask */
    if (GetActiveProcessorGroupCount() > 1) {
        DWORD n = GetActiveProcessorCount(ALL_PROCESSOR_GROUPS);
        return n >= 1 ? (int)n : 1;
    }
    DWORD_PTR proc, sys;
    if (GetProcessAffinityMask(GetCurrentProcess(), &proc, &sys)) {
        int n = 0;
        for (; proc; proc &= proc - 1)
            n++;
        if (n >= 1)
            return n;
    }
    SYSTEM_INFO si;
    GetSystemInfo(&si);
    return si.dwNumberOfProcessors >= 1 ? (int)si.dwNumberOfProcessors : 1;
}

#else
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT (Linux) */
#include <sched.h>
#include <unistd.h>

#include "attn.h"

int attn_available_cpus(void)
{
#ifdef CPU_COUNT
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n >= 1)
            return n;
    }
#endif
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n >= 1 ? (int)n : 1;
}
#endif
