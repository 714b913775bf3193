/*
 * tests/c/test_half16_vec.c -- the 16-bit load/store primitives of every
 * simd/vec_<set>.h (VLOAD_F16, VLOAD_BF16, VSTORE_F16, VSTORE_BF16) against
 * half.h's exact conversions, bit for bit: every one of the 65,536 16-bit
 * patterns read, and a sweep of float bit patterns (plus zeros, the
 * rounding ties, the float16 overflow and subnormal edges, inf and NaN)
 * written: through each instruction set's 16-bit rows (its table's
 * widen and narrow, isa/kernels.h), every set of runtime/isa.h's list,
 * each only where the CPU has it.
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
#include "isa/kernels.h"

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

/* The check of one instruction set: its table's 16-bit rows
 * (rows/cvt_tmpl.h over the set's VLOAD_F16 ... primitives), on rows
 * whose length is a multiple of every set's lane count, so every
 * element goes through the primitives and none through the scalar tail. */
#define HROW 4096 /* a multiple of 16 lanes; divides 65,536              */

static void check_set(const char *name, attn_widen_fn widen,
                      attn_narrow_fn narrow)
{
    static uint16_t h[HROW], got[HROW];
    static float y[HROW], x[HROW];
    long bad = 0;
    for (int bf = 0; bf < 2; bf++) {
        const attn_store st = bf ? ATTN_ST_BF16 : ATTN_ST_F16;
        for (uint32_t u = 0; u < 65536u; u += HROW) {
            for (int i = 0; i < HROW; i++)
                h[i] = (uint16_t)(u + (uint32_t)i);
            widen(y, h, HROW, st);
            for (int i = 0; i < HROW; i++) {
                const float want = bf ? attn_bf16_to_f32(h[i])
                                      : attn_f16_to_f32(h[i]);
                CHECK(attn_f32_to_bits(y[i]) == attn_f32_to_bits(want)
                          || bad++ > 5,
                      "%s load %s from 0x%04x differs", name,
                      bf ? "bf16" : "f16", h[i]);
            }
        }
        const size_t n = n_store();
        for (size_t i0 = 0; i0 < n; i0 += HROW) {
            for (size_t i = 0; i < HROW; i++)
                x[i] = f_store(i0 + i < n ? i0 + i : 0);
            narrow(got, x, HROW, st);
            for (int i = 0; i < HROW; i++) {
                const uint16_t want = bf ? attn_f32_to_bf16(x[i])
                                         : attn_f32_to_f16(x[i]);
                CHECK(got[i] == want || bad++ > 5,
                      "%s store %s 0x%08x: 0x%04x, want 0x%04x", name,
                      bf ? "bf16" : "f16", attn_f32_to_bits(x[i]), got[i],
                      want);
            }
        }
    }
    CHECK(bad == 0, "%s: %ld conversions differ from half.h", name, bad);
    printf("%s: 16-bit loads and stores checked\n", name);
}

/* every set of runtime/isa.h's list with rows of its own (amx has its
 * base's), each table once ("portable" is "baseline" where it runs the
 * base build)                                                          */
static int g_checked;
static const attn_kernels *g_done[ATTN_ISA_COUNT];
static int g_ndone;

static void half_check_isa(const char *name, const attn_kernels *k, int usable)
{
    if (!k || !k->widen)
        return;
    for (int i = 0; i < g_ndone; i++)
        if (g_done[i] == k)
            return;
    g_done[g_ndone++] = k;
    if (!usable) {
        printf("%s: not on this CPU, not tested\n", name);
        return;
    }
    check_set(k->name, k->widen, k->narrow);
    g_checked++;
}

int main(int argc, char **argv)
{
    const int count = argc > 1 ? atoi(argv[1]) : 8;
    if (count > 0) /* an odd stride: every residue of the low bits */
        g_stride = (uint32_t)(79784 / count) | 1u;
    clock_t t0 = clock();
#define X(id, name, kern, usable, opt_in) half_check_isa(name, kern, usable);
    ATTN_ISA_LIST(X)
#undef X
    /* "portable" and "baseline" run everywhere                           */
    CHECK(g_checked >= 1, "no set checked");
    return check_summary(t0);
}
