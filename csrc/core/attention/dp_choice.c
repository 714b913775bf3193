/*
 * attention/dp_choice.c -- which of the two bit-identical bfloat16 score
 * kernels query blocks use (kern.h: ATTN_DP_VDP, ATTN_DP_FMA), chosen once
 * per process by timing the two instructions on this CPU.
 *
 * vdpbf16ps does two multiply-adds per float lane, vfmadd231ps one; which
 * delivers more per second depends on the CPU (on some Intel cores
 * vdpbf16ps issues at a quarter of the FMA's rate, so it loses; cores
 * that issue it as fast as an FMA win twice over). The calibration runs
 * 24 independent accumulator chains of each (the score micro-kernel's 6 x
 * 4, so latency does not count, only issue rate), a few thousand rounds,
 * best of a few interleaved repeats (noise only ever adds time), well
 * under a millisecond in all. ATTNPY_BF16_DOT=vdp or =fma skips it.
 */
#include <stdlib.h>

#include "attention/kern.h"

#define DP_ROUNDS 2048 /* rounds of 24 instructions per timing */
#define DP_REPEATS 5

/* s is the word w (lower case) in any case */
static int dp_word(const char *s, const char *w)
{
    for (; *w != '\0'; s++, w++)
        if (*s != *w && *s != *w - 'a' + 'A')
            return 0;
    return *s == '\0';
}

int attn__dp_parse(const char *s)
{
    if (s == NULL)
        return 0;
    return dp_word(s, "vdp") ? ATTN_DP_VDP : dp_word(s, "fma") ? ATTN_DP_FMA : 0;
}

#if ATTN_HAVE_X86 && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define DP_ATTR ATTN_TARGET("avx512f,avx512bf16,avx2,fma")
/* zmm a (0 .. 23, the accumulators) += zmm28 with zmm x (24 .. 27) */
#define DP_I(op, a, x) op " %%zmm" #x ", %%zmm28, %%zmm" #a "\n\t"
#define DP_ROW(op, a, b, c, d)                                                 \
    DP_I(op, a, 24) DP_I(op, b, 25) DP_I(op, c, 26) DP_I(op, d, 27)
#define DP_MOV(r) "vmovaps %[y], %%zmm" #r "\n\t"
#define DP_MOV4(a, b, c, d) DP_MOV(a) DP_MOV(b) DP_MOV(c) DP_MOV(d)
#define DP_Z(r) "xmm" #r

/* nanoseconds for DP_ROUNDS rounds of 24 independent instructions op
 * (zmm0 .. 23 += zmm28 with zmm24 .. 27). Written in assembly, so that
 * what is timed is those instructions whatever the compiler and its
 * optimisation level (the C tests build at -O1, which keeps accumulators
 * on the stack). Every operand starts as y, an ordinary number (1 and a
 * little more in each float, 1 in each bfloat16 half): no subnormal
 * slows either instruction down, and nothing overflows.              */
#define DP_TIMER(name, op)                                                     \
    __attribute__((noinline)) DP_ATTR static long long name(void)             \
    {                                                                          \
        const __m512 y = _mm512_castsi512_ps(_mm512_set1_epi32(0x3f803f80));   \
        int n = DP_ROUNDS;                                                     \
        const long long t0 = attn__now_ns();                                   \
        __asm__ volatile(                                                      \
            DP_MOV4(0, 1, 2, 3) DP_MOV4(4, 5, 6, 7) DP_MOV4(8, 9, 10, 11)      \
            DP_MOV4(12, 13, 14, 15) DP_MOV4(16, 17, 18, 19)                    \
            DP_MOV4(20, 21, 22, 23) DP_MOV4(24, 25, 26, 27) DP_MOV(28)         \
            "1:\n\t"                                                           \
            DP_ROW(op, 0, 1, 2, 3) DP_ROW(op, 4, 5, 6, 7)                      \
            DP_ROW(op, 8, 9, 10, 11) DP_ROW(op, 12, 13, 14, 15)                \
            DP_ROW(op, 16, 17, 18, 19) DP_ROW(op, 20, 21, 22, 23)              \
            "dec %[n]\n\t"                                                     \
            "jnz 1b\n\t"                                                       \
            "vzeroupper\n\t"                                                   \
            : [n] "+r"(n)                                                      \
            : [y] "v"(y)                                                       \
            : DP_Z(0), DP_Z(1), DP_Z(2), DP_Z(3), DP_Z(4), DP_Z(5), DP_Z(6),   \
              DP_Z(7), DP_Z(8), DP_Z(9), DP_Z(10), DP_Z(11), DP_Z(12),         \
              DP_Z(13), DP_Z(14), DP_Z(15), DP_Z(16), DP_Z(17), DP_Z(18),      \
              DP_Z(19), DP_Z(20), DP_Z(21), DP_Z(22), DP_Z(23), DP_Z(24),      \
              DP_Z(25), DP_Z(26), DP_Z(27), DP_Z(28), "cc");                   \
        return attn__now_ns() - t0;                                            \
    }

DP_TIMER(dp_time_fma, "vfmadd231ps")
DP_TIMER(dp_time_vdp, "vdpbf16ps")

int attn__dp_measure(attn_dp_rates *r)
{
    if (!(attn__x86_features() & ATTN_X86_AVX512_BF16)) {
        if (r != NULL) /* nothing measured: the rates say so */
            r->fma_ns = r->vdp_ns = r->ratio = 0.0;
        return 0;
    }
    long long best_fma = -1, best_vdp = -1;
    /* one untimed round first: the core may need a moment to reach its
     * 512-bit speed; then the two interleaved, best of DP_REPEATS       */
    dp_time_fma();
    dp_time_vdp();
    for (int k = 0; k < DP_REPEATS; k++) {
        const long long f = dp_time_fma(), v = dp_time_vdp();
        if (f > 0 && (best_fma < 0 || f < best_fma))
            best_fma = f;
        if (v > 0 && (best_vdp < 0 || v < best_vdp))
            best_vdp = v;
    }
    const double n = 24.0 * DP_ROUNDS;
    attn_dp_rates got = {0.0, 0.0, 0.0};
    if (best_fma > 0 && best_vdp > 0) {
        got.fma_ns = (double)best_fma / n;
        got.vdp_ns = (double)best_vdp / n;
        /* multiply-adds per ns: 32 per vdpbf16ps, 16 per FMA (zmm) */
        got.ratio = (32.0 / got.vdp_ns) / (16.0 / got.fma_ns);
    }
    if (r != NULL)
        *r = got;
    return got.ratio > ATTN_DP_VDP_MIN_RATIO ? ATTN_DP_VDP : ATTN_DP_FMA;
}

#else

int attn__dp_measure(attn_dp_rates *r)
{
    if (r != NULL)
        r->fma_ns = r->vdp_ns = r->ratio = 0.0;
    return 0;
}

#endif

int attn__dp_choose(const char *env)
{
    const int forced = attn__dp_parse(env);
    if (forced)
        return forced;
    const int measured = attn__dp_measure(NULL);
    return measured ? measured : ATTN_DP_FMA;
}

/* 0 until the first plan asks; then what every later plan gets (two
 * threads asking at once may both measure: the first answer stored wins) */
static atomic_int g_choice;

int attn__dpbf16_choice(void)
{
    int c = atomic_load_explicit(&g_choice, memory_order_relaxed);
    if (c != 0)
        return c;
    c = attn__dp_choose(getenv("ATTNPY_BF16_DOT"));
    int none = 0;
    if (!atomic_compare_exchange_strong(&g_choice, &none, c))
        c = none; /* another thread's, already stored */
    return c;
}

void attn__dpbf16_choice_reset(void)
{
    atomic_store(&g_choice, 0);
}
