/*
 * tests/c/test_fma.c -- the exact fused multiply-adds of simd/fma.h and
 * simd/fma.c (attn__fma_soft: integer arithmetic; attn__fmaf_soft: a
 * round-to-odd double sum), the fallbacks of platforms whose C library
 * fma is not trusted, against the CPU's fma instruction, bit for bit:
 *
 *   - an edge-case table (signed zeros, infinities, NaN, the largest and
 *     smallest normal and subnormal numbers, exact cancellation, halfway
 *     cases, overflow, products below the subnormal range);
 *   - random triples of five kinds: any exponent and significand (the
 *     whole double range, subnormals included); a product cancelling c
 *     to a few ulps (c = -RN(a b) moved by 0-3 ulps, and a b + c tiny);
 *     exact products of short significands put at c's last bit and
 *     below (exact ties and near ties); a product and c around the
 *     overflow threshold; results around and in the subnormal range.
 *
 *   test_fma [N]   N: the size of the run (default 6; CI's full counts
 *                  60): 60000 N triples of each kind for double, as many
 *                  for float
 *
 * The reference is the FMA instruction (x86 with FMA: a function built
 * for target "fma"; AArch64: fmadd), except where the product or c is
 * zero: there IEEE's fma is a * b + c exactly, or a * b rounded once
 * (valgrind's emulation of the instruction gets the sign of such zero
 * results wrong); where there is no instruction
 * the program says so and checks only the IEEE values it knows by heart.
 * NaN results are compared as NaN (their payload is the platform's).
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fbits.h"
#include "runtime/isa.h"
#include "runtime/platform.h"
#include "simd/fma.h"

#if ATTN_ARCH_X86 && (defined(__GNUC__) || defined(__clang__))
#define HAVE_REF 1
ATTN_TARGET("fma") static double ref_fma(double a, double b, double c)
{
    return __builtin_fma(a, b, c);
}
ATTN_TARGET("fma") static float ref_fmaf(float a, float b, float c)
{
    return __builtin_fmaf(a, b, c);
}
static int ref_ok(void) { return (attn__x86_features() & ATTN_X86_AVX2_FMA) != 0; }
#elif defined(__aarch64__)
#define HAVE_REF 1
static double ref_fma(double a, double b, double c) { return __builtin_fma(a, b, c); }
static float ref_fmaf(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
static int ref_ok(void) { return 1; }
#else
#define HAVE_REF 0
#endif



static long n_d, bad_d, n_f, bad_f;
/* coverage: results that are subnormal, and those where the fma differs
 * from a * b + c rounded twice (so the test could tell the two apart)  */
static long sub_d, twice_d, sub_f, twice_f;

static void one_d(double a, double b, double c, const char *kind)
{
#if HAVE_REF
    /* a zero product or c: IEEE's fma is a * b + c exactly, or a * b
     * rounded once (valgrind's emulation of the instruction gives +0
     * for -0 * 1 + -0 and for -tiny * tiny + 0)                         */
    const int fin = isfinite(a) && isfinite(b);
    const double want = fin && (a == 0 || b == 0) ? a * b + c
                        : fin && c == 0           ? a * b
                                                  : ref_fma(a, b, c);
    const double got = attn__fma_soft(a, b, c);
    n_d++;
    sub_d += want != 0 && fabs(want) < DBL_MIN;
    twice_d += !same64(want, a * b + c);
    if (same64(want, got)) {
        n_pass++;
    } else {
        n_fail++;
        if (bad_d++ < 10)
            printf("FAIL fma(%a, %a, %a) [%s]: %a, the instruction %a\n", a, b,
                   c, kind, got, want);
    }
#else
    (void)a, (void)b, (void)c, (void)kind;
#endif
}

static void one_f(float a, float b, float c, const char *kind)
{
#if HAVE_REF
    const int fin = isfinite(a) && isfinite(b);
    const float want = fin && (a == 0 || b == 0) ? a * b + c
                       : fin && c == 0           ? a * b
                                                 : ref_fmaf(a, b, c);
    const float got = attn__fmaf_soft(a, b, c);
    n_f++;
    sub_f += want != 0 && fabsf(want) < FLT_MIN;
    twice_f += !same32(want, a * b + c);
    if (same32(want, got)) {
        n_pass++;
    } else {
        n_fail++;
        if (bad_f++ < 10)
            printf("FAIL fmaf(%a, %a, %a) [%s]: %a, the instruction %a\n",
                   (double)a, (double)b, (double)c, kind, (double)got,
                   (double)want);
    }
#else
    (void)a, (void)b, (void)c, (void)kind;
#endif
}

/* a double with the given sign, biased exponent field and fraction     */
static double mk64(int neg, int be, uint64_t frac)
{
    return from64(((uint64_t)neg << 63) | ((uint64_t)be << 52)
                  | (frac & 0xfffffffffffffull));
}
static float mk32(int neg, int be, uint32_t frac)
{
    return from32(((uint32_t)neg << 31) | ((uint32_t)be << 23)
                  | (frac & 0x7fffffu));
}

/* any finite double: uniform exponent field (0: subnormal), random bits  */
static double any64(void)
{
    return mk64((int)(rnd() & 1), (int)irand(2047), rnd());
}
static float any32(void)
{
    return mk32((int)(rnd() & 1), (int)irand(255), (uint32_t)rnd());
}

/* x moved k ulps (k may be negative) along the bit patterns             */
static double walk64(double x, int k) { return from64(bits64(x) + (uint64_t)(int64_t)k); }
static float walk32(float x, int k) { return from32(bits32(x) + (uint32_t)k); }

/* a short odd significand (1 .. 2^bits - 1) times 2^e, random sign    */
static double short64(int bits, int e)
{
    const double m = (double)((rnd() & ((1ull << bits) - 1)) | 1);
    return ldexp(rnd() & 1 ? -m : m, e);
}
static float short32(int bits, int e)
{
    const float m = (float)((rnd() & ((1u << bits) - 1)) | 1);
    return ldexpf(rnd() & 1 ? -m : m, e);
}

static void table(void)
{
    const double inf = INFINITY, nan_ = NAN, mx = DBL_MAX, mn = DBL_MIN,
                 tmin = DBL_TRUE_MIN, eps = DBL_EPSILON;
    const double v[] = {0.0,  -0.0, 1.0,  -1.0,       inf,         -inf,
                        nan_, mx,   -mx,  mn,         -mn,         tmin,
                        -tmin, 0.5, 2.0,  1.0 + eps,  1.0 - eps / 2, 3.0,
                        0x1p-537, 0x1p512, -0x1p-1022 * 1.5, 0x1.fffffffffffffp-1023};
    const int nv = (int)(sizeof v / sizeof v[0]);
    for (int i = 0; i < nv; i++)
        for (int j = 0; j < nv; j++)
            for (int k = 0; k < nv; k++)
                one_d(v[i], v[j], v[k], "table");
    const float fv[] = {0.0f, -0.0f, 1.0f, -1.0f, (float)inf, (float)-inf,
                        (float)nan_, FLT_MAX, -FLT_MAX, FLT_MIN, -FLT_MIN,
                        0x1p-149f, -0x1p-149f, 0.5f, 2.0f, 1.0f + FLT_EPSILON,
                        1.0f - FLT_EPSILON / 2, 3.0f, 0x1p-75f, 0x1p64f};
    const int nf = (int)(sizeof fv / sizeof fv[0]);
    for (int i = 0; i < nf; i++)
        for (int j = 0; j < nf; j++)
            for (int k = 0; k < nf; k++)
                one_f(fv[i], fv[j], fv[k], "table");

    /* IEEE's values by heart: these hold with or without a reference   */
    CHECK(bits64(attn__fma_soft(1.0, -0.0, 0.0)) == bits64(0.0), "+0 - 0");
    CHECK(bits64(attn__fma_soft(-0.0, 1.0, -0.0)) == bits64(-0.0), "-0 - 0");
    CHECK(bits64(attn__fma_soft(1.0, 1.0, -1.0)) == bits64(0.0), "1 - 1 = +0");
    CHECK(isnan(attn__fma_soft(inf, 0.0, 1.0)), "inf * 0");
    CHECK(isnan(attn__fma_soft(inf, 1.0, -inf)), "inf - inf");
    CHECK(attn__fma_soft(mx, 2.0, -inf) == -inf, "huge product + -inf");
    CHECK(attn__fma_soft(mx, 2.0, -mx) == mx, "2 max - max: no overflow");
    CHECK(attn__fma_soft(mx, 1.0 + eps, 0x1p970) == inf, "overflow");
    CHECK(bits64(attn__fma_soft(tmin, 0.5, -0.0)) == bits64(0.0),
          "half the smallest subnormal rounds to even +0");
    CHECK(bits64(attn__fma_soft(-tmin, 0.5, 0.0)) == bits64(-0.0),
          "a product rounding to zero keeps its sign");
    CHECK(attn__fma_soft(tmin, 0.75, 0.0) == tmin, "0.75 tmin -> tmin");
    CHECK(attn__fma_soft(1.0 + eps, 1.0 - eps, -1.0) == -eps * eps,
          "exact cancellation to -eps^2");
    CHECK(attn__fma_soft(0x1p-1074, 0x1p-1, 0x1p-1074) == 0x1p-1073,
          "1.5 tmin ties to 2 tmin");
    CHECK(attn__fma_soft(0x1p-600, 0x1p-600, 1.0) == 1.0, "tiny product");
    CHECK(attn__fma_soft(0x1p-600, 0x1p-600, -0x1p-1074) == -0x1p-1074,
          "tiny product, tiny c");
    CHECK(attn__fmaf_soft(FLT_MAX, 2.0f, -FLT_MAX) == FLT_MAX, "fmaf: 2 max - max");
    CHECK(attn__fmaf_soft(1.0f + FLT_EPSILON, 1.0f - FLT_EPSILON, -1.0f)
              == -FLT_EPSILON * FLT_EPSILON, "fmaf: exact cancellation");
    CHECK(attn__fmaf_soft(0x1p-149f, 0.5f, 0.0f) == 0.0f, "fmaf: tie to +0");
}

static void random_double(long n)
{
    for (long i = 0; i < n; i++)
        one_d(any64(), any64(), any64(), "any");
    for (long i = 0; i < n; i++) { /* a b + c cancelling */
        double a = any64(), b = ldexp(1.0 + urand(), (int)irand(200) - 100);
        double p = a * b;
        if (!isfinite(p) || p == 0)
            continue;
        const int k = (int)irand(7) - 3;
        one_d(a, b, -walk64(p, k), "cancel");
        one_d(a, b, walk64(-p, k) * (1.0 + 0x1p-52 * (double)irand(4)), "cancel2");
    }
    for (long i = 0; i < n; i++) { /* exact short products near c's last bit */
        const int ba = 1 + (int)irand(26), bb = 1 + (int)irand(26);
        const int ec = (int)irand(1800) - 900;
        const double c = mk64((int)(rnd() & 1), ec + 1023, rnd());
        /* the product's top bit from 60 below c's last bit to 2 above */
        const int top = ec - 52 - 60 + (int)irand(63);
        const double a = short64(ba, top - ba + 1 - (int)irand(2));
        const double b = short64(bb, -bb + 1);
        one_d(a, b, c, "ties");
    }
    for (long i = 0; i < n; i++) { /* around the overflow threshold */
        const double a = mk64((int)(rnd() & 1), 2046 - (int)irand(4), rnd());
        const double b = ldexp(1.0 + urand(), -(int)irand(3));
        const double c = mk64((int)(rnd() & 1), 2046 - (int)irand(3), rnd());
        one_d(a, b, c, "overflow");
        one_d(a, walk64(1.0, (int)irand(5)), -walk64(a, (int)irand(9) - 4), "overflow2");
    }
    for (long i = 0; i < n; i++) { /* results around and in the subnormals */
        const double a = mk64((int)(rnd() & 1), 1 + (int)irand(60), rnd());
        const double b = ldexp(1.0 + urand(), -(int)irand(60));
        const double c = mk64((int)(rnd() & 1), (int)irand(3), rnd());
        one_d(a, b, c, "subnormal");
        one_d(a, b, -walk64(a * b, (int)irand(5) - 2), "subnormal2");
        one_d(short64(20, -1074 + (int)irand(30)), short64(20, -20 - (int)irand(20)),
              short64(8, -1074 + (int)irand(10)), "below");
    }
}

static void random_float(long n)
{
    for (long i = 0; i < n; i++)
        one_f(any32(), any32(), any32(), "any");
    for (long i = 0; i < n; i++) {
        float a = any32(), b = ldexpf(1.0f + (float)urand(), (int)irand(40) - 20);
        float p = a * b;
        if (!isfinite(p) || p == 0)
            continue;
        one_f(a, b, -walk32(p, (int)irand(7) - 3), "cancel");
    }
    for (long i = 0; i < n; i++) {
        const int ba = 1 + (int)irand(12), bb = 1 + (int)irand(12);
        const int ec = (int)irand(200) - 100;
        const float c = mk32((int)(rnd() & 1), ec + 127, (uint32_t)rnd());
        const int top = ec - 23 - 30 + (int)irand(33);
        one_f(short32(ba, top - ba + 1 - (int)irand(2)), short32(bb, -bb + 1), c,
              "ties");
    }
    for (long i = 0; i < n; i++) {
        const float a = mk32((int)(rnd() & 1), 254 - (int)irand(4), (uint32_t)rnd());
        const float c = mk32((int)(rnd() & 1), 254 - (int)irand(3), (uint32_t)rnd());
        one_f(a, ldexpf(1.0f + (float)urand(), -(int)irand(3)), c, "overflow");
        const float s = mk32((int)(rnd() & 1), 1 + (int)irand(30), (uint32_t)rnd());
        const float t = ldexpf(1.0f + (float)urand(), -(int)irand(30));
        one_f(s, t, mk32((int)(rnd() & 1), (int)irand(3), (uint32_t)rnd()),
              "subnormal");
        one_f(s, t, -walk32(s * t, (int)irand(5) - 2), "subnormal2");
    }
}

int main(int argc, char **argv)
{
    const clock_t t0 = clock();
    const long count = argc > 1 ? atol(argv[1]) : 6;
    const long n = 60000 * (count > 0 ? count : 1);
    int ref = HAVE_REF;
#if HAVE_REF
    ref = ref_ok();
#endif
    if (!ref) {
        printf("no FMA instruction or reference here: the soft fma is checked "
               "only against the IEEE values it must give\n");
        table();
        return check_summary(t0);
    }
    table();
    random_double(n);
    random_float(n);
    printf("fma double: %ld triples (%ld subnormal results, %ld where a * b "
           "+ c rounded twice differs), %ld differ from the instruction\n",
           n_d, sub_d, twice_d, bad_d);
    printf("fma float: %ld triples (%ld subnormal results, %ld where a * b + "
           "c rounded twice differs), %ld differ from the instruction\n", n_f,
           sub_f, twice_f, bad_f);
    CHECK(n_d > 5 * n && n_f > 3 * n, "too few triples ran");
    return check_summary(t0);
}
