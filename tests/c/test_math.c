/*
 * tests/c/test_math.c -- the elementary functions of simd/math.h and
 * simd/scalar.h:
 *
 *   1. accuracy: attn_exp ... attn_pow against tests/data/math_refs.txt
 *      (mpmath values, tools/make_math_refs.py: random and hard points),
 *      the largest error in ulps of each function and where, against its
 *      bound;
 *   2. the special values (zeros, infinities, NaN, the overflow and
 *      underflow thresholds, C99's pow cases), and symmetries;
 *   3. bit identity: every instantiation this build and CPU have (every
 *      set of runtime/isa.h's list, through its table's math rows; the
 *      scalar and portable ones built with the exact software fma:
 *      tests/c/math_arrays.h) against the scalar one, lane by
 *      lane, on edge values and random inputs (random bit patterns over
 *      the whole range, and uniform in each function's working range);
 *   4. with --exhaustive: every one of the 2^32 float inputs of each float
 *      function on the vector sets' instantiations (AVX-512, AVX2, NEON
 *      ...), bit for bit, and every 16th on the scalar, "portable" and
 *      "baseline" ones
 *      (10-50x slower: a C library fma call per lane and operation, or
 *      per-lane loops), the soft-fma ones only in 3.; and the results
 *      against glibc's double functions (the error in float ulps; the
 *      double functions err by < 1 double ulp, 2^-29 float ulp). Minutes
 *      on two threads: CI's full-counts step runs every 8th chunk of it
 *      (test_c_core.py).
 *
 *   test_math [N] [--exhaustive[=K]] [--refs FILE]
 *       N: the size of the random part (default 6: 6 x 4096 inputs a
 *       function and set; CI's full counts 60). FILE: default
 *       tests/data/math_refs.txt beside this source. K: every K-th chunk
 *       of 4096 inputs only (CI: 8, about a minute; all: about 9).
 *
 * NaN results compare equal to any NaN (the payload is the platform's).
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fbits.h"
#include "math_arrays.h"
#include "runtime/platform.h"
#include "simd/scalar.h"

/* ---- helpers ----------------------------------------------------------- */
/* |y - (hi + lo)| in ulps of the exact value (ulp: 2^(e - 52), e its
 * exponent, at least the smallest normal number's; float: 2^(e - 23))   */
static double ulps(double y, double hi, double lo, int f32)
{
    int e;
    frexp(hi, &e);
    e -= 1;
    const int emin = f32 ? -126 : -1022, p = f32 ? 23 : 52;
    if (e < emin)
        e = emin;
    return fabs((y - hi) - lo) / ldexp(1.0, e - p);
}

/* ---- 1. accuracy against the stored references ------------------------- */
typedef struct {
    const char *name;
    int f32;
    double bound; /* ulps */
    double worst, at, at_y;
    long n;
} acc_fn;

static acc_fn accs[] = {
    {"exp", 0, 2.0, 0, 0, 0, 0},      {"expf", 1, 2.0, 0, 0, 0, 0},
    {"sigmoid", 0, 2.0, 0, 0, 0, 0},  {"sigmoidf", 1, 2.0, 0, 0, 0, 0},
    {"tanh", 0, 2.0, 0, 0, 0, 0},     {"tanhf", 1, 2.0, 0, 0, 0, 0},
    {"phi", 0, 2.0, 0, 0, 0, 0},      {"phif", 1, 2.0, 0, 0, 0, 0},
    {"npdf", 0, 2.0, 0, 0, 0, 0},     {"npdff", 1, 2.0, 0, 0, 0, 0},
    {"log", 0, 2.0, 0, 0, 0, 0},      {"logf", 1, 2.0, 0, 0, 0, 0},
    {"sin", 0, 2.0, 0, 0, 0, 0},      {"cos", 0, 2.0, 0, 0, 0, 0},
    {"pow", 0, 2.0, 0, 0, 0, 0},
};
#define NACC ((int)(sizeof accs / sizeof accs[0]))

static double eval_named(const char *name, double x, double y)
{
    double s, c;
    if (!strcmp(name, "exp")) return attn_exp(x);
    if (!strcmp(name, "expf")) return attn_expf((float)x);
    if (!strcmp(name, "sigmoid")) return attn_sigmoid(x);
    if (!strcmp(name, "sigmoidf")) return attn_sigmoidf((float)x);
    if (!strcmp(name, "tanh")) return attn_tanh(x);
    if (!strcmp(name, "tanhf")) return attn_tanhf((float)x);
    if (!strcmp(name, "phi")) return attn_phi(x);
    if (!strcmp(name, "phif")) return attn_phif((float)x);
    if (!strcmp(name, "npdf")) return attn_npdf(x);
    if (!strcmp(name, "npdff")) return attn_npdff((float)x);
    if (!strcmp(name, "log")) return attn_log(x);
    if (!strcmp(name, "logf")) return attn_logf((float)x);
    if (!strcmp(name, "pow")) return attn_pow(x, y);
    attn_sincos(x, &s, &c);
    return !strcmp(name, "sin") ? s : c;
}

static void test_refs(const char *path)
{
    FILE *fh = fopen(path, "r");
    CHECK(fh != NULL, "cannot open %s (give --refs FILE)", path);
    if (!fh)
        return;
    char line[512];
    long lines = 0, unknown = 0;
    while (fgets(line, sizeof line, fh)) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        char name[32];
        double x, y = 0, hi, lo;
        char *p = line, *end;
        if (sscanf(p, "%31s", name) != 1)
            continue;
        p += strlen(name);
        x = strtod(p, &end);
        p = end;
        if (!strcmp(name, "pow")) {
            y = strtod(p, &end);
            p = end;
        }
        hi = strtod(p, &end);
        p = end;
        lo = strtod(p, &end);
        CHECK(end != p, "bad line in %s: %s", path, line);
        acc_fn *a = NULL;
        for (int i = 0; i < NACC; i++)
            if (!strcmp(accs[i].name, name))
                a = &accs[i];
        if (!a) {
            unknown++;
            continue;
        }
        lines++;
        const double v = eval_named(name, x, y);
        const double u = ulps(v, hi, lo, a->f32);
        a->n++;
        if (!(u <= a->worst)) { /* NaN counts as worst */
            a->worst = isnan(u) ? INFINITY : u;
            a->at = x;
            a->at_y = y;
        }
    }
    fclose(fh);
    CHECK(unknown == 0, "%ld reference lines name no function", unknown);
    printf("accuracy against %ld mpmath references (%s):\n", lines, path);
    for (int i = 0; i < NACC; i++) {
        acc_fn *a = &accs[i];
        printf("  %-9s %5ld points, max %.3f ulp at %a", a->name, a->n, a->worst,
               a->at);
        if (!strcmp(a->name, "pow"))
            printf(", %a", a->at_y);
        printf("\n");
        CHECK(a->n >= 300, "%s: only %ld reference points", a->name, a->n);
        CHECK(a->worst <= a->bound, "%s: %.3f ulp at %a > %.1f", a->name,
              a->worst, a->at, a->bound);
    }
}

/* ---- 2. special values --------------------------------------------------- */
#define EQ64(got, want, ...) CHECK(same64(got, want), __VA_ARGS__)
#define EQ32(got, want, ...) CHECK(same32(got, want), __VA_ARGS__)

static void test_specials(void)
{
    const double inf = INFINITY, nan_ = NAN;
    const float finf = INFINITY, fnan = NAN;
    /* exp */
    EQ64(attn_exp(0.0), 1.0, "exp(0)");
    EQ64(attn_exp(-0.0), 1.0, "exp(-0)");
    EQ64(attn_exp(-inf), 0.0, "exp(-inf)");
    EQ64(attn_exp(inf), inf, "exp(inf)");
    EQ64(attn_exp(nan_), nan_, "exp(NaN)");
    EQ64(attn_exp(709.79), inf, "exp(709.79) overflows");
    CHECK(isfinite(attn_exp(709.78)), "exp(709.78) is finite");
    EQ64(attn_exp(-708.5), 0.0, "exp(-708.5): below the normal range -> 0");
    CHECK(attn_exp(-708.39) >= DBL_MIN, "exp(-708.39) is normal");
    EQ64(attn_exp(-1000.0), 0.0, "exp(-1000)");
    EQ64(attn_exp(1e-300), 1.0, "exp(1e-300)");
    EQ32(attn_expf(0.0f), 1.0f, "expf(0)");
    EQ32(attn_expf(-finf), 0.0f, "expf(-inf)");
    EQ32(attn_expf(finf), finf, "expf(inf)");
    EQ32(attn_expf(fnan), fnan, "expf(NaN)");
    EQ32(attn_expf(88.73f), finf, "expf(88.73) overflows");
    CHECK(isfinite(attn_expf(88.72f)), "expf(88.72) is finite");
    EQ32(attn_expf(-87.5f), 0.0f, "expf(-87.5) -> 0");
    /* sigmoid */
    EQ64(attn_sigmoid(0.0), 0.5, "sigmoid(0)");
    EQ64(attn_sigmoid(-0.0), 0.5, "sigmoid(-0)");
    EQ64(attn_sigmoid(inf), 1.0, "sigmoid(inf)");
    EQ64(attn_sigmoid(-inf), 0.0, "sigmoid(-inf)");
    EQ64(attn_sigmoid(nan_), nan_, "sigmoid(NaN)");
    EQ64(attn_sigmoid(40.0), 1.0, "sigmoid(40)");
    EQ64(attn_sigmoid(-710.0), 0.0, "sigmoid(-710)");
    EQ32(attn_sigmoidf(20.0f), 1.0f, "sigmoidf(20)");
    EQ32(attn_sigmoidf(-finf), 0.0f, "sigmoidf(-inf)");
    EQ32(attn_sigmoidf(fnan), fnan, "sigmoidf(NaN)");
    EQ32(attn_sigmoidf(-90.0f), 0.0f, "sigmoidf(-90)");
    /* tanh */
    EQ64(attn_tanh(0.0), 0.0, "tanh(0)");
    EQ64(attn_tanh(-0.0), -0.0, "tanh(-0)");
    EQ64(attn_tanh(inf), 1.0, "tanh(inf)");
    EQ64(attn_tanh(-inf), -1.0, "tanh(-inf)");
    EQ64(attn_tanh(nan_), nan_, "tanh(NaN)");
    EQ64(attn_tanh(20.0), 1.0, "tanh(20)");
    EQ64(attn_tanh(1e-300), 1e-300, "tanh(1e-300)");
    EQ64(attn_tanh(DBL_TRUE_MIN), DBL_TRUE_MIN, "tanh(smallest subnormal)");
    EQ32(attn_tanhf(-0.0f), -0.0f, "tanhf(-0)");
    EQ32(attn_tanhf(-finf), -1.0f, "tanhf(-inf)");
    EQ32(attn_tanhf(1e-30f), 1e-30f, "tanhf(1e-30)");
    /* phi and the density */
    EQ64(attn_phi(0.0), 0.5, "phi(0)");
    EQ64(attn_phi(-0.0), 0.5, "phi(-0)");
    EQ64(attn_phi(inf), 1.0, "phi(inf)");
    EQ64(attn_phi(-inf), 0.0, "phi(-inf)");
    EQ64(attn_phi(nan_), nan_, "phi(NaN)");
    EQ64(attn_phi(9.0), 1.0, "phi(9)");
    EQ64(attn_phi(-38.5), 0.0, "phi(-38.5): below the normal range");
    CHECK(attn_phi(-37.5) >= DBL_MIN, "phi(-37.5) is normal: %a", attn_phi(-37.5));
    EQ32(attn_phif(-finf), 0.0f, "phif(-inf)");
    EQ32(attn_phif(6.0f), 1.0f, "phif(6)");
    EQ32(attn_phif(-13.5f), 0.0f, "phif(-13.5)");
    CHECK(attn_phif(-12.8f) >= FLT_MIN, "phif(-12.8) is normal");
    EQ64(attn_npdf(inf), 0.0, "npdf(inf)");
    EQ64(attn_npdf(-inf), 0.0, "npdf(-inf)");
    EQ64(attn_npdf(nan_), nan_, "npdf(NaN)");
    EQ64(attn_npdf(38.6), 0.0, "npdf(38.6)");
    EQ32(attn_npdff(14.0f), 0.0f, "npdff(14)");
    /* log */
    EQ64(attn_log(1.0), 0.0, "log(1) = +0");
    EQ64(attn_log(0.0), -inf, "log(0)");
    EQ64(attn_log(-0.0), -inf, "log(-0)");
    EQ64(attn_log(-1.0), nan_, "log(-1)");
    EQ64(attn_log(-inf), nan_, "log(-inf)");
    EQ64(attn_log(inf), inf, "log(inf)");
    EQ64(attn_log(nan_), nan_, "log(NaN)");
    CHECK(fabs(attn_log(DBL_TRUE_MIN) + 744.44007192138126) < 1e-12,
          "log(smallest subnormal) = %.17g", attn_log(DBL_TRUE_MIN));
    EQ32(attn_logf(1.0f), 0.0f, "logf(1)");
    EQ32(attn_logf(0.0f), -finf, "logf(0)");
    EQ32(attn_logf(-2.0f), fnan, "logf(-2)");
    EQ32(attn_logf(finf), finf, "logf(inf)");
    /* sincos */
    double s, c;
    attn_sincos(0.0, &s, &c);
    EQ64(s, 0.0, "sin(0)");
    EQ64(c, 1.0, "cos(0)");
    attn_sincos(-0.0, &s, &c);
    EQ64(s, -0.0, "sin(-0)");
    EQ64(c, 1.0, "cos(-0)");
    attn_sincos(inf, &s, &c);
    CHECK(isnan(s) && isnan(c), "sincos(inf)");
    attn_sincos(-inf, &s, &c);
    CHECK(isnan(s) && isnan(c), "sincos(-inf)");
    attn_sincos(nan_, &s, &c);
    CHECK(isnan(s) && isnan(c), "sincos(NaN)");
    attn_sincos(1e-300, &s, &c);
    EQ64(s, 1e-300, "sin(1e-300)");
    EQ64(c, 1.0, "cos(1e-300)");
    attn_sincos(DBL_TRUE_MIN, &s, &c);
    EQ64(s, DBL_TRUE_MIN, "sin(smallest subnormal)");
    /* pow: C99 Annex F */
    const double xs[] = {nan_, inf, -inf, -3.0, 0.0, -0.0, 1.0, -1.0, 0.5};
    for (int i = 0; i < 9; i++) {
        EQ64(attn_pow(xs[i], 0.0), 1.0, "pow(%g, 0)", xs[i]);
        EQ64(attn_pow(xs[i], -0.0), 1.0, "pow(%g, -0)", xs[i]);
    }
    EQ64(attn_pow(1.0, nan_), 1.0, "pow(1, NaN)");
    EQ64(attn_pow(1.0, inf), 1.0, "pow(1, inf)");
    EQ64(attn_pow(nan_, 1.0), nan_, "pow(NaN, 1)");
    EQ64(attn_pow(2.0, nan_), nan_, "pow(2, NaN)");
    EQ64(attn_pow(-8.0, 1.0 / 3), nan_, "pow(-8, 1/3)");
    EQ64(attn_pow(-2.0, 3.0), -8.0, "pow(-2, 3)");
    EQ64(attn_pow(-2.0, 2.0), 4.0, "pow(-2, 2)");
    EQ64(attn_pow(-2.0, -1.0), -0.5, "pow(-2, -1)");
    EQ64(attn_pow(-0.0, -1.0), -inf, "pow(-0, -1)");
    EQ64(attn_pow(0.0, -1.0), inf, "pow(+0, -1)");
    EQ64(attn_pow(-0.0, -2.0), inf, "pow(-0, -2)");
    EQ64(attn_pow(-0.0, -0.5), inf, "pow(-0, -0.5)");
    EQ64(attn_pow(-0.0, 3.0), -0.0, "pow(-0, 3)");
    EQ64(attn_pow(-0.0, 2.0), 0.0, "pow(-0, 2)");
    EQ64(attn_pow(-0.0, 0.5), 0.0, "pow(-0, 0.5)");
    EQ64(attn_pow(0.0, 3.0), 0.0, "pow(+0, 3)");
    EQ64(attn_pow(-1.0, inf), 1.0, "pow(-1, inf)");
    EQ64(attn_pow(-1.0, -inf), 1.0, "pow(-1, -inf)");
    EQ64(attn_pow(0.5, -inf), inf, "pow(0.5, -inf)");
    EQ64(attn_pow(2.0, -inf), 0.0, "pow(2, -inf)");
    EQ64(attn_pow(-0.5, inf), 0.0, "pow(-0.5, inf)");
    EQ64(attn_pow(-2.0, inf), inf, "pow(-2, inf)");
    EQ64(attn_pow(-inf, -3.0), -0.0, "pow(-inf, -3)");
    EQ64(attn_pow(-inf, -2.0), 0.0, "pow(-inf, -2)");
    EQ64(attn_pow(-inf, -0.5), 0.0, "pow(-inf, -0.5)");
    EQ64(attn_pow(-inf, 3.0), -inf, "pow(-inf, 3)");
    EQ64(attn_pow(-inf, 2.0), inf, "pow(-inf, 2)");
    EQ64(attn_pow(-inf, 0.5), inf, "pow(-inf, 0.5)");
    EQ64(attn_pow(inf, -1.0), 0.0, "pow(inf, -1)");
    EQ64(attn_pow(inf, 0.5), inf, "pow(inf, 0.5)");
    EQ64(attn_pow(2.0, 1024.0), inf, "pow(2, 1024)");
    EQ64(attn_pow(2.0, -1080.0), 0.0, "pow(2, -1080): below normal");
    EQ64(attn_pow(-2.0, 0x1p53), inf, "pow(-2, 2^53)");
    EQ64(attn_pow(-1.0, 0x1p53 + 2), 1.0, "pow(-1, 2^53 + 2)");
    EQ64(attn_pow(-1.0, 0x1p52 + 1), -1.0, "pow(-1, 2^52 + 1)");
    EQ64(attn_pow(-1.0, 0x1p52 + 0.5 * 0 + 2), 1.0, "pow(-1, 2^52 + 2)");
    EQ64(attn_pow(-1.0, 0x1p-1074), nan_, "pow(-1, tiny)");
    EQ64(attn_pow(-1.0, 0.5), nan_, "pow(-1, 0.5)");
    EQ64(attn_pow(-1.0, 1e300), 1.0, "pow(-1, 1e300)");
    /* symmetries, bitwise: sin odd, cos, npdf even, tanh odd, phi(-h) +
     * phi(h) = 1 within the rounding of the larger                       */
    for (int i = 0; i < 20000; i++) {
        const double x = (urand() - 0.5) * (i % 2 ? 100.0 : ldexp(1.0, (int)irand(80)));
        double s1, c1, s2, c2;
        attn_sincos(x, &s1, &c1);
        attn_sincos(-x, &s2, &c2);
        CHECK(same64(s2, -s1) && same64(c2, c1), "sincos(+-%a)", x);
        CHECK(same64(attn_npdf(-x), attn_npdf(x)), "npdf(+-%a)", x);
        CHECK(same64(attn_tanh(-x), -attn_tanh(x)), "tanh(+-%a)", x);
        const float xf = (float)x;
        CHECK(same32(attn_tanhf(-xf), -attn_tanhf(xf)), "tanhf(+-%a)", (double)xf);
        CHECK(same32(attn_npdff(-xf), attn_npdff(xf)), "npdff(+-%a)", (double)xf);
        if (fabs(x) < 30) {
            const double d = attn_phi(x) + attn_phi(-x) - 1;
            CHECK(fabs(d) <= 2 * DBL_EPSILON, "phi(%a) + phi(-x) - 1 = %g", x, d);
        }
    }
}

/* ---- 3. bit identity of every instantiation ----------------------------- */
static size_t fill64(double *x, size_t n, double lo, double hi)
{
    static const double edge[] = {
        0.0, -0.0, INFINITY, -INFINITY, NAN, 1.0, -1.0, 0.5, 2.0, DBL_MIN,
        -DBL_MIN, DBL_TRUE_MIN, -DBL_TRUE_MIN, DBL_MAX, -DBL_MAX, 709.78,
        709.79, 710.0, -708.39, -708.4, -709.0, -745.2, 0.671875, -0.671875,
        2.0, -2.0, 4.0, -4.0, 37.5, -37.5, 40.0, -40.0, 0x1p32, -0x1p32,
        0x1p32 - 1, 0x1p31, 1e300, 6381956970095103.0 * 0x1p797, 1.4142135623730951,
        0.7071067811865476, 1e-300, 0x1p-1070};
    size_t k = 0;
    const size_t ne = sizeof edge / sizeof edge[0];
    for (; k < ne && k < n; k++)
        x[k] = edge[k];
    for (; k < n; k++) {
        const uint64_t r = rnd();
        switch (k % 4) {
        case 0: x[k] = from64(r); break; /* any bit pattern */
        case 1: x[k] = lo + (hi - lo) * urand(); break;
        case 2: x[k] = (urand() - 0.5) * 8; break;
        default: x[k] = ldexp(urand(), (int)irand(40) - 20) * (r & 1 ? -1 : 1);
        }
    }
    return n;
}

static void fill32(float *x, size_t n, float lo, float hi)
{
    double *d = malloc(n * sizeof *d);
    if (!d)
        abort();
    fill64(d, n, lo, hi);
    for (size_t k = 0; k < n; k++)
        x[k] = (k % 4 == 0 && k > 64) ? from32((uint32_t)rnd()) : (float)d[k];
    free(d);
}

static const double ranges[MF_N][2] = {
    {-760, 760}, {-760, 0}, {-25, 25}, {-760, 60}, {-40, 10}, {-40, 40}, {0, 1e6}};

static void test_identity(size_t n)
{
    int nsets;
    const math_set *const *sets = math_sets(&nsets);
    const math_set *ref = &math_set_scalar;
    float *xf = malloc(n * sizeof *xf), *yf = malloc(n * sizeof *yf),
          *rf = malloc(n * sizeof *rf);
    double *xd = malloc(n * sizeof *xd), *yd = malloc(n * sizeof *yd),
           *rd = malloc(n * sizeof *rd), *x2 = malloc(n * sizeof *x2),
           *y2 = malloc(n * sizeof *y2), *r2 = malloc(n * sizeof *r2);
    if (!xf || !yf || !rf || !xd || !yd || !rd || !x2 || !y2 || !r2)
        abort();
    printf("bit identity with the scalar instantiation, %zu inputs a function:\n", n);
    for (int s = 0; s < nsets; s++) {
        const math_set *set = sets[s];
        if (!set->available) {
            printf("  %-18s not supported by this CPU, not tested\n", set->name);
            continue;
        }
        CHECK(set->r[0] && set->r[1],
              "%s: no math rows (the C tests build with -DATTN_MATH_ROWS=1)",
              set->name);
        if (!set->r[0] || !set->r[1])
            continue;
        const clock_t t0 = clock();
        long diff = 0, total = 0;
        for (int f = 0; f < MF_N; f++) {
            fill32(xf, n, (float)ranges[f][0], (float)ranges[f][1]);
            if (f == ATTN_MF_EXP_NEG) /* defined for x <= 0 only */
                for (size_t k = 0; k < n; k++)
                    xf[k] = -fabsf(xf[k]);
            ref->r[0]->fn[f](rf, xf, n);
            set->r[0]->fn[f](yf, xf, n);
            math_clean_upper();
            for (size_t k = 0; k < n; k++, total++)
                if (!same32(yf[k], rf[k]) && diff++ < 5)
                    printf("FAIL %s %sf(%a): %a, scalar %a\n", set->name,
                           math_fn_names[f], (double)xf[k], (double)yf[k],
                           (double)rf[k]);
            fill64(xd, n, ranges[f][0], ranges[f][1]);
            if (f == ATTN_MF_EXP_NEG)
                for (size_t k = 0; k < n; k++)
                    xd[k] = -fabs(xd[k]);
            ref->r[1]->fn[f](rd, xd, n);
            set->r[1]->fn[f](yd, xd, n);
            math_clean_upper();
            for (size_t k = 0; k < n; k++, total++)
                if (!same64(yd[k], rd[k]) && diff++ < 5)
                    printf("FAIL %s %s(%a): %a, scalar %a\n", set->name,
                           math_fn_names[f], xd[k], yd[k], rd[k]);
        }
        /* sincos: angles of every size; pow: positive bases of every size
         * and signed ones, exponents small and integral and of every size */
        fill64(xd, n, -1e4, 0x1p34);
        ref->r[1]->sincos(rd, r2, xd, n);
        set->r[1]->sincos(yd, y2, xd, n);
        math_clean_upper();
        for (size_t k = 0; k < n; k++, total += 2)
            if ((!same64(yd[k], rd[k]) || !same64(y2[k], r2[k])) && diff++ < 5)
                printf("FAIL %s sincos(%a): %a %a, scalar %a %a\n", set->name,
                       xd[k], yd[k], y2[k], rd[k], r2[k]);
        fill64(xd, n, 0, 1e6);
        fill64(x2, n, -1, 1);
        for (size_t k = 0; k < n; k++) {
            if (k % 5 == 1)
                x2[k] = (double)((int)irand(21) - 10);
            if (k % 7 == 3)
                xd[k] = -xd[k];
        }
        ref->r[1]->pow(rd, xd, x2, n);
        set->r[1]->pow(yd, xd, x2, n);
        math_clean_upper();
        for (size_t k = 0; k < n; k++, total++)
            if (!same64(yd[k], rd[k]) && diff++ < 5)
                printf("FAIL %s pow(%a, %a): %a, scalar %a\n", set->name, xd[k],
                       x2[k], yd[k], rd[k]);
        printf("  %-18s %ld results, %ld differ (%.2f s)\n", set->name, total,
               diff, (double)(clock() - t0) / CLOCKS_PER_SEC);
        CHECK(diff == 0, "%s: %ld results differ from the scalar ones", set->name,
              diff);
    }
    free(xf), free(yf), free(rf), free(xd), free(yd), free(rd), free(x2),
        free(y2), free(r2);
}

/* ---- 4. every float input ------------------------------------------------ */
static double ref_sigmoid(double x) { return 1 / (1 + exp(-x)); }
static double ref_phi(double x) { return 0.5 * erfc(-x / sqrt(2.0)); }
static double ref_npdf(double x) { return exp(-0.5 * x * x) / sqrt(2 * 3.14159265358979323846); }
static double ref_exp_neg(double x) { return exp(x); }

static double (*const ex_ref[MF_N])(double) = {exp,      ref_exp_neg, tanh, ref_sigmoid,
                                               ref_phi, ref_npdf,     log};

/* |x| beyond which each function is its limit in float: e^x inf / 0
 * (below the normal range), tanh +-1, sigmoid 1 / 0, Phi 1 / 0, the
 * density 0; log has none                                              */
static const float ex_far[MF_N] = {110, 110, 20, 110, 20, 20, INFINITY};
static float ex_limit(int f, float x)
{
    const int neg = x < 0;
    switch (f) {
    case ATTN_MF_EXP: return neg ? 0.0f : INFINITY;
    case ATTN_MF_EXP_NEG: return 0.0f;
    case ATTN_MF_TANH: return neg ? -1.0f : 1.0f;
    case ATTN_MF_SIGMOID: case ATTN_MF_PHI: return neg ? 0.0f : 1.0f;
    default: return 0.0f; /* npdf */
    }
}

typedef struct {
    int f;
    uint64_t lo, hi; /* bit patterns [lo, hi) */
    double worst, at;
    long diff, flush_bad;
} ex_job;

#define EX_CHUNK 4096
/* --exhaustive=K: every K-th chunk of EX_CHUNK consecutive bit patterns
 * (every exponent, sign and NaN range is still visited; CI's full-counts
 * step: K = 8); --exhaustive: all of them                               */
static uint64_t ex_part = 1;
#define EX_SLOW_STRIDE 16 /* the slow builds: every 16th input */

/* the instantiations the exhaustive run checks on every input (the
 * vector sets' own: *nfast in fast[], fast[0], the best, the reference)
 * and on every EX_SLOW_STRIDE-th (math_set.slow: scalar, portable,
 * baseline: a C library fma call per lane and fma, or per-lane fma loops
 * the test build does not vectorize, 10-50x slower); the soft-fma ones
 * only in 3.                                                            */
static int ex_sets(const math_set **fast, int *nfast, const math_set **slow,
                   int *nslow)
{
    int nsets;
    const math_set *const *sets = math_sets(&nsets);
    *nfast = *nslow = 0;
    slow[(*nslow)++] = &math_set_scalar;
    for (int s = 0; s < nsets; s++) { /* the best first */
        if (!sets[s]->available || sets[s]->soft || !sets[s]->r[0])
            continue;
        if (sets[s]->slow)
            slow[(*nslow)++] = sets[s];
        else
            fast[(*nfast)++] = sets[s];
    }
    if (*nfast == 0) { /* no vector set: the scalar one is the reference */
        fast[(*nfast)++] = slow[0];
        for (int s = 1; s < *nslow; s++)
            slow[s - 1] = slow[s];
        --*nslow;
    }
    return *nfast;
}

static void ex_run(ex_job *j)
{
    const math_set *fast[ATTN_ISA_COUNT + 1], *slow[ATTN_ISA_COUNT + 1];
    int nfast, nslow;
    ex_sets(fast, &nfast, slow, &nslow);
    float x[EX_CHUNK], r[EX_CHUNK], y[EX_CHUNK], xs[EX_CHUNK / EX_SLOW_STRIDE],
        rs[EX_CHUNK / EX_SLOW_STRIDE], ys[EX_CHUNK / EX_SLOW_STRIDE];
    for (uint64_t b = j->lo; b < j->hi; b += EX_CHUNK * ex_part) {
        size_t n = 0;
        for (; n < EX_CHUNK && b + n < j->hi; n++) {
            float v = from32((uint32_t)(b + n));
            if (j->f == ATTN_MF_EXP_NEG && !(v <= 0))
                v = -0.0f; /* exp_neg: x <= 0 only */
            x[n] = v;
        }
        fast[0]->r[0]->fn[j->f](r, x, n);
        for (int s = 1; s < nfast; s++) {
            fast[s]->r[0]->fn[j->f](y, x, n);
            for (size_t k = 0; k < n; k++)
                j->diff += !same32(y[k], r[k]);
        }
        math_clean_upper();
        size_t m = 0;
        for (size_t k = (b / EX_CHUNK) % EX_SLOW_STRIDE; k < n; k += EX_SLOW_STRIDE) {
            xs[m] = x[k];
            rs[m++] = r[k];
        }
        for (int s = 0; s < nslow; s++) {
            slow[s]->r[0]->fn[j->f](ys, xs, m);
            math_clean_upper();
            for (size_t k = 0; k < m; k++)
                j->diff += !same32(ys[k], rs[k]);
        }
        for (size_t k = 0; k < n; k++) {
            /* beyond ex_far the result is a known limit: checked without
             * calling the C library (whose overflow paths are slow)      */
            if (fabsf(x[k]) > ex_far[j->f]) {
                if (!same32(r[k], ex_limit(j->f, x[k])))
                    j->flush_bad++;
                continue;
            }
            const double want = ex_ref[j->f](x[k]);
            if (isnan(want) || isnan(r[k])) {
                if (isnan(want) != isnan(r[k]))
                    j->flush_bad++;
                continue;
            }
            if (isinf(want) || fabs(want) > FLT_MAX) {
                /* overflow: inf, or FLT_MAX where want rounds to it */
                if (!(isinf(r[k]) || fabs(want) < FLT_MAX * (1 + 0x1p-25)))
                    j->flush_bad++;
                continue;
            }
            if (fabs(want) < FLT_MIN && (r[k] == 0 || fabsf(r[k]) == FLT_MIN))
                continue; /* below the normal range: 0 (or rounded up) */
            const double u = ulps(r[k], want, 0, 1);
            if (u > j->worst) {
                j->worst = u;
                j->at = x[k];
            }
        }
    }
}

#if defined(_WIN32)
#define EX_THREADS 1
#else
#include <pthread.h>
#define EX_THREADS 2
static void *ex_thread(void *p)
{
    ex_run(p);
    return NULL;
}
#endif

static void test_exhaustive(void)
{
    static const double bound[MF_N] = {2, 2, 2, 2, 2, 2, 2};
    const math_set *fast[ATTN_ISA_COUNT + 1], *slow[ATTN_ISA_COUNT + 1];
    int nfast, nslow;
    ex_sets(fast, &nfast, slow, &nslow);
    if (ex_part > 1)
        printf("every float input in every %lluth chunk of %d (2^32 / %llu): %s",
               (unsigned long long)ex_part, EX_CHUNK,
               (unsigned long long)ex_part, fast[0]->name);
    else
        printf("every float input (2^32): %s", fast[0]->name);
    for (int s = 1; s < nfast; s++)
        printf(", %s", fast[s]->name);
    printf(" on all of them, bit for bit; ");
    for (int s = 0; s < nslow; s++)
        printf("%s%s", s ? ", " : "", slow[s]->name);
    printf(" on every %dth; %s's results against glibc's double functions:\n",
           EX_SLOW_STRIDE, fast[0]->name);
    for (int f = 0; f < MF_N; f++) {
        const long long t0 = attn__now_ns();
        ex_job jobs[EX_THREADS];
        for (int t = 0; t < EX_THREADS; t++) {
            memset(&jobs[t], 0, sizeof jobs[t]);
            jobs[t].f = f;
            jobs[t].lo = (1ull << 32) / EX_THREADS * (uint64_t)t;
            jobs[t].hi = (1ull << 32) / EX_THREADS * (uint64_t)(t + 1);
        }
#if EX_THREADS > 1
        pthread_t th[EX_THREADS];
        for (int t = 1; t < EX_THREADS; t++)
            if (pthread_create(&th[t], NULL, ex_thread, &jobs[t]) != 0)
                ex_run(&jobs[t]), th[t] = 0;
        ex_run(&jobs[0]);
        for (int t = 1; t < EX_THREADS; t++)
            if (th[t])
                pthread_join(th[t], NULL);
#else
        ex_run(&jobs[0]);
#endif
        double worst = 0, at = 0;
        long diff = 0, bad = 0;
        for (int t = 0; t < EX_THREADS; t++) {
            if (jobs[t].worst > worst) {
                worst = jobs[t].worst;
                at = jobs[t].at;
            }
            diff += jobs[t].diff;
            bad += jobs[t].flush_bad;
        }
        printf("  %-8s max %.3f ulp at %a; %ld differ between instantiations; "
               "%ld wrong special or edge results (%.1f s)\n",
               math_fn_names[f], worst, at, diff, bad,
               (double)(attn__now_ns() - t0) * 1e-9);
        fflush(stdout);
        CHECK(worst <= bound[f], "%sf: every float: %.3f ulp at %a", math_fn_names[f],
              worst, at);
        CHECK(diff == 0, "%sf: %ld results differ between instantiations",
              math_fn_names[f], diff);
        CHECK(bad == 0, "%sf: %ld wrong non-finite or underflow results",
              math_fn_names[f], bad);
    }
}

int main(int argc, char **argv)
{
    const clock_t t0 = clock();
    long count = 6;
    int exhaustive = 0;
    char refs[1024];
    /* tests/data/math_refs.txt beside this source file */
    snprintf(refs, sizeof refs, "%s", __FILE__);
    char *cut = strstr(refs, "tests/c/test_math.c");
    if (cut)
        snprintf(cut, sizeof refs - (size_t)(cut - refs), "tests/data/math_refs.txt");
    else
        snprintf(refs, sizeof refs, "tests/data/math_refs.txt");
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--exhaustive"))
            exhaustive = 1;
        else if (!strncmp(argv[i], "--exhaustive=", 13)) {
            exhaustive = 1;
            ex_part = strtoull(argv[i] + 13, NULL, 10);
            if (ex_part < 1)
                ex_part = 1;
        }
        else if (!strcmp(argv[i], "--refs") && i + 1 < argc)
            snprintf(refs, sizeof refs, "%s", argv[++i]);
        else
            count = atol(argv[i]);
    }
    if (count < 1)
        count = 1;
    test_refs(refs);
    test_specials();
    test_identity((size_t)count * 4096);
    if (exhaustive)
        test_exhaustive();
    return check_summary(t0);
}
