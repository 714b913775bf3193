/*
 * tests/c/test_half16_vec.c -- the 16-bit load/store primitives of every
 * simd/vec_<set>.h (VLOAD_F16, VLOAD_BF16, VSTORE_F16, VSTORE_BF16) against
 * half.h's exact conversions, bit for bit: every one of the 65,536 16-bit
 * patterns read, and a sweep of float bit patterns (plus zeros, the
 * rounding ties, the float16 overflow and subnormal edges, inf and NaN)
 * written. Each instruction set runs only where the CPU has it.
 *
 *   test_half16_vec [COUNT]    the float patterns every 79,784 / COUNT
 *                              (default 8: every 9,973th; more is denser)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "half.h"
#include "runtime/platform.h"

static uint32_t g_stride = 9973;

/* the float patterns a store is tried on: f(i) for i < n_store()         */
static const uint32_t edges[] = {
    0x00000000u, 0x80000000u, 0x3f800000u, 0x3f808000u, 0x3f818000u,
    0x3f80fffful, 0x477fe000u, 0x477fefffu, 0x477ff000u, 0x477ff001u,
    0x7f7fffffu, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00001u,
    0x7f800001u, 0x7fbfffffu, 0x38800000u, 0x387fffffu, 0x33800000u,
    0x33000000u, 0x33000001u, 0x32ffffffu, 0x00000001u, 0x807fffffu,
    0x3380c000u, 0x7f7f8000u, 0x7f7f7fffu, 0x477ff000u | 0x80000000u};
#define NEDGE (sizeof edges / sizeof edges[0])

static size_t n_store(void) { return NEDGE + (size_t)(0xffffffffu / g_stride); }

static float f_store(size_t i)
{
    return attn_bits_to_f32(i < NEDGE ? edges[i]
                                      : (uint32_t)((i - NEDGE) * g_stride));
}

/* The check of one instruction set: its primitives through the functions
 * CHECK_FNS defines, W lanes.                                             */
#define CHECK_FNS(NAME, W_, ATTR_)                                             \
    static ATTR_ void NAME##_ld(const uint16_t *p, float *y, int bf)           \
    {                                                                          \
        VSTOREU(y, bf ? VLOAD_BF16(p) : VLOAD_F16(p));                         \
    }                                                                          \
    static ATTR_ void NAME##_st(const float *x, uint16_t *p, int bf)           \
    {                                                                          \
        if (bf)                                                                \
            VSTORE_BF16(p, VLOADU(x));                                         \
        else                                                                   \
            VSTORE_F16(p, VLOADU(x));                                          \
    }                                                                          \
    static void NAME##_check(void)                                             \
    {                                                                          \
        uint16_t h[W_], got[W_];                                               \
        float y[W_], x[W_];                                                    \
        long bad = 0;                                                          \
        for (int bf = 0; bf < 2; bf++) {                                       \
            for (uint32_t u = 0; u < 65536u; u += (W_)) {                      \
                for (int i = 0; i < (W_); i++)                                 \
                    h[i] = (uint16_t)(u + (uint32_t)i);                        \
                NAME##_ld(h, y, bf);                                           \
                int ok = 1;                                                    \
                for (int i = 0; i < (W_); i++) {                               \
                    const float want = bf ? attn_bf16_to_f32(h[i])             \
                                          : attn_f16_to_f32(h[i]);             \
                    ok = ok && attn_f32_to_bits(y[i])                          \
                                   == attn_f32_to_bits(want);                  \
                }                                                              \
                CHECK(ok || bad++ > 5, "%s load %s from 0x%04x differs",       \
                      #NAME, bf ? "bf16" : "f16", h[0]);                       \
            }                                                                  \
            const size_t n = n_store();                                        \
            for (size_t i0 = 0; i0 < n; i0 += (W_)) {                          \
                for (int i = 0; i < (W_); i++)                                 \
                    x[i] = f_store(i0 + (size_t)i < n ? i0 + (size_t)i : 0);   \
                NAME##_st(x, got, bf);                                         \
                for (int i = 0; i < (W_); i++) {                               \
                    const uint16_t want = bf ? attn_f32_to_bf16(x[i])          \
                                             : attn_f32_to_f16(x[i]);          \
                    CHECK(got[i] == want || bad++ > 5,                         \
                          "%s store %s 0x%08x: 0x%04x, want 0x%04x", #NAME,    \
                          bf ? "bf16" : "f16", attn_f32_to_bits(x[i]),         \
                          got[i], want);                                       \
                }                                                              \
            }                                                                  \
        }                                                                      \
        CHECK(bad == 0, "%s: %ld conversions differ from half.h", #NAME, bad); \
        printf("%s: 16-bit loads and stores checked\n", #NAME);                \
    }

#define SIMD_F64 0
#include "simd/vec_portable.h"
CHECK_FNS(portable, W, )
#include "simd/undef.h"

#if ATTN_ARCH_X86 && (defined(__GNUC__) || defined(__clang__))
#define SIMD_PORT_WIDE 1
#define SIMD_F64 0
#include "simd/vec_portable.h"
CHECK_FNS(portable8, W, ATTR)
#include "simd/undef.h"

#define SIMD_F64 0
#include "simd/vec_avx2.h"
CHECK_FNS(avx2, W, ATTR)
#include "simd/undef.h"

#define SIMD_F64 0
#include "simd/vec_avx512.h"
CHECK_FNS(avx512, W, ATTR)
#include "simd/undef.h"
#define HAVE_X86_FNS 1
#endif

#if ATTN_ARCH_NEON
#define SIMD_F64 0
#include "simd/vec_neon.h"
CHECK_FNS(neon, W, )
#include "simd/undef.h"
#endif

int main(int argc, char **argv)
{
    const int count = argc > 1 ? atoi(argv[1]) : 8;
    if (count > 0) /* an odd stride: every residue of the low bits */
        g_stride = (uint32_t)(79784 / count) | 1u;
    clock_t t0 = clock();
    portable_check();
#ifdef HAVE_X86_FNS
    const int f = attn__x86_features();
    if (f & ATTN_X86_AVX2_FMA) {
        portable8_check();
        avx2_check();
    } else {
        printf("avx2: not on this CPU, not tested\n");
    }
    if (f & ATTN_X86_AVX512F)
        avx512_check();
    else
        printf("avx512: not on this CPU, not tested\n");
#endif
#if ATTN_ARCH_NEON
    neon_check();
#endif
    return check_summary(t0);
}
