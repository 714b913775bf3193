/*
 * bench_dpbf16.c -- the issue rate of vdpbf16ps next to vfmadd231ps on
 * this CPU (not a test): 24 independent accumulators (the score
 * micro-kernel's 6 x 4), zmm and ymm, CPU-time per instruction. One
 * vdpbf16ps does 2 multiply-adds per float lane, an FMA 1: vdpbf16ps
 * beats FMA on scores only if it issues at more than half FMA's rate.
 *
 *   cc -O3 -std=c11 -o /tmp/bench_dpbf16 tests/c/bench_dpbf16.c
 *   /tmp/bench_dpbf16      (needs AVX512-BF16 and AVX512VL)
 */
#define _POSIX_C_SOURCE 200809L
#if defined(__x86_64__) || defined(_M_X64) /* an x86 probe: elsewhere a stub (the cross builds compile every tests/c file) */
#include <immintrin.h>
#include <stdio.h>
#include <time.h>

#define N 100000000L
#define NA 24
#define TGT __attribute__((target("avx512f,avx512vl,avx512bf16,fma"), noinline))

static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* NA chains of OP over N / NA rounds; y passes through an empty asm each
 * round, so nothing is hoisted or folded                                */
#define CHAINS_(name, VT, ZERO, SET, OP, HSUM)                                 \
    TGT static float name(unsigned bits)                                       \
    {                                                                          \
        VT a[NA], x[4], y = SET(bits);                                         \
        for (int i = 0; i < NA; i++)                                           \
            a[i] = ZERO;                                                       \
        for (int i = 0; i < 4; i++)                                            \
            x[i] = SET(bits + (unsigned)i);                                    \
        for (long i = 0; i < N / NA; i++) {                                    \
            __asm__ volatile("" : "+v"(y));                                    \
            _Pragma("GCC unroll 6") for (int r = 0; r < 6; r++)                \
                _Pragma("GCC unroll 4") for (int v = 0; v < 4; v++)            \
                    a[r * 4 + v] = OP(a[r * 4 + v], y, x[v]);                  \
        }                                                                      \
        VT s = a[0];                                                           \
        for (int i = 1; i < NA; i++)                                           \
            s = s + a[i];                                                      \
        return HSUM(s);                                                        \
    }

#define SETZ(b) _mm512_castsi512_ps(_mm512_set1_epi32((int)(b)))
#define SETY(b) _mm256_castsi256_ps(_mm256_set1_epi32((int)(b)))
#define BHZ(v) ((__m512bh)_mm512_castps_si512(v))
#define BHY(v) ((__m256bh)_mm256_castps_si256(v))
#define DPZ(a, y, x) _mm512_dpbf16_ps(a, BHZ(y), BHZ(x))
#define DPY(a, y, x) _mm256_dpbf16_ps(a, BHY(y), BHY(x))
#define FMZ(a, y, x) _mm512_fmadd_ps(y, x, a)
#define FMY(a, y, x) _mm256_fmadd_ps(y, x, a)
#define HZ(s) _mm512_reduce_add_ps(s)
#define HY(s) ((s)[0])

CHAINS_(fma_zmm, __m512, _mm512_setzero_ps(), SETZ, FMZ, HZ)
CHAINS_(dp_zmm, __m512, _mm512_setzero_ps(), SETZ, DPZ, HZ)
CHAINS_(fma_ymm, __m256, _mm256_setzero_ps(), SETY, FMY, HY)
CHAINS_(dp_ymm, __m256, _mm256_setzero_ps(), SETY, DPY, HY)

int main(void)
{
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512bf16")
        || !__builtin_cpu_supports("avx512vl")) {
        printf("bench_dpbf16: this CPU has no AVX512-BF16 / AVX512VL\n");
        return 0;
    }
    float sink = 0;
    double t[4];
    float (*const fn[4])(unsigned) = {fma_zmm, dp_zmm, fma_ymm, dp_ymm};
    const char *name[4] = {"vfmadd231ps zmm", "vdpbf16ps zmm",
                           "vfmadd231ps ymm", "vdpbf16ps ymm"};
    const int macs[4] = {16, 32, 8, 16}; /* multiply-adds per instruction */
    for (int i = 0; i < 4; i++) {
        const double c0 = cpu_now();
        sink += fn[i](0x3f803f80u); /* 1.0039 in every float / pair half */
        t[i] = (cpu_now() - c0) / (double)N;
    }
    for (int i = 0; i < 4; i++)
        printf("%-16s %.4f ns/instruction  %.1f multiply-adds/ns  (%.2fx "
               "the FMA's time per instruction)\n", name[i], t[i] * 1e9,
               macs[i] / (t[i] * 1e9), t[i] / t[i & 2]);
    return sink == 12345.0f;
}

#else
#include <stdio.h>
int main(void)
{
    puts("bench_dpbf16.c: x86-64 only");
    return 0;
}
#endif
