/*
 * runtime/cpuid.c -- which x86 vector extensions this process may use.
 *
 * One implementation for every compiler (gcc, clang and mingw-w64 through
 * <cpuid.h> and the xgetbv instruction, MSVC through __cpuidex and
 * _xgetbv), so the bit logic that runs on Windows is the one tested on
 * Linux (tests/c/test_platform.c compares it with gcc's
 * __builtin_cpu_supports). An extension counts only if the CPU has it AND
 * the operating system saves its registers on a context switch (the XCR0
 * bits), except on macOS, whose kernel enables the AVX-512 state on a
 * thread's first use of it (XCR0 does not show it before). AMX counts
 * only on Linux, after the kernel grants this process the tile data
 * (arch_prctl ARCH_REQ_XCOMP_PERM): its 8 KiB state is off by default.
 */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* syscall() */
#endif
#include <stdatomic.h>
#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "runtime/isa.h"
#include "runtime/platform.h"

#if ATTN_ARCH_X86

#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
static void cpuid(unsigned leaf, unsigned sub, unsigned r[4])
{
    int x[4];
    __cpuidex(x, (int)leaf, (int)sub);
    for (int i = 0; i < 4; i++)
        r[i] = (unsigned)x[i];
}
static unsigned long long xcr0(void) { return _xgetbv(0); }
#else
#include <cpuid.h>
static void cpuid(unsigned leaf, unsigned sub, unsigned r[4])
{
    __cpuid_count(leaf, sub, r[0], r[1], r[2], r[3]);
}
static unsigned long long xcr0(void)
{
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}
#endif

/* ask Linux for the AMX tile data (XFEATURE_XTILEDATA = 18); once per
 * process, the permission holds for every thread                       */
static int amx_granted(void)
{
#if defined(__linux__) && defined(__x86_64__)
    return syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18) == 0;
#else
    return 0;
#endif
}

static int detect(void)
{
    unsigned r[4]; /* eax, ebx, ecx, edx */
    cpuid(0, 0, r);
    const unsigned max_leaf = r[0];
    if (max_leaf < 7)
        return 0;
    cpuid(1, 0, r);
    const int fma = (r[2] >> 12) & 1, osxsave = (r[2] >> 27) & 1,
              avx = (r[2] >> 28) & 1, f16c = (r[2] >> 29) & 1;
    /* the AVX2 path converts float16 with F16C: every AVX2 CPU has it */
    if (!osxsave || !avx || !fma || !f16c)
        return 0;
    const unsigned long long x = xcr0();
    if ((x & 0x6) != 0x6) /* SSE and AVX (ymm) state */
        return 0;
    cpuid(7, 0, r);
    const int avx2 = (r[1] >> 5) & 1, avx512f = (r[1] >> 16) & 1;
    const int amx = ((r[3] >> 22) & 1) && ((r[3] >> 24) & 1); /* BF16, TILE */
    if (!avx2)
        return 0;
    const unsigned max_sub7 = r[0];
    int f = ATTN_X86_AVX2_FMA | ATTN_X86_F16C;
    int avx512bf16 = 0;
    if (max_sub7 >= 1) {
        cpuid(7, 1, r);
        avx512bf16 = (r[0] >> 5) & 1;
    }
#if defined(__APPLE__)
    const int zmm_state = 1; /* enabled on first use */
#else
    const int zmm_state = (x & 0xe0) == 0xe0; /* opmask, zmm0-15, zmm16-31 */
#endif
    if (avx512f && zmm_state)
        f |= ATTN_X86_AVX512F;
    if (avx512f && zmm_state && avx512bf16)
        f |= ATTN_X86_AVX512_BF16;
    if (avx512f && zmm_state && amx && ((x >> 17) & 3) == 3 && amx_granted())
        f |= ATTN_X86_AMX_BF16;
    return f;
}

/* cpuid is slow in a virtual machine (it traps): asked once */
static atomic_int g_features = -1;

int attn__x86_features(void)
{
    int f = atomic_load_explicit(&g_features, memory_order_relaxed);
    if (f < 0) {
        f = detect();
        atomic_store_explicit(&g_features, f, memory_order_relaxed);
    }
    return f;
}

#else

int attn__x86_features(void) { return 0; }

#endif
