/*
 * layer/act_avx2.c -- float32 gelu (erf and tanh forms) and its derivative,
 * 8 lanes at a time with AVX2 + FMA: one row of bias + activation, forward
 * or backward. act.c calls these for unit-stride float32 rows when the CPU
 * has AVX2 + FMA; every other case keeps act.c's scalar libm code. Also
 * silu(g) [* u] (glu.c's float32 forward rows), from the same exp.
 *
 * No libm in a vector: erf and exp are computed here.
 *
 *   Phi(h) = (1 + erf(h / sqrt 2)) / 2 = 1 - erfc(a) / 2 (h >= 0) or
 *            erfc(a) / 2 (h < 0), a = |h| / sqrt 2; from erfc(a) no
 *            1 + erf cancels for negative h.
 *   erfc(a), a < 1:   1 - a P(a^2), P of degree 5 (least squares fit of
 *                     erf(a)/a in a^2 on Chebyshev nodes of [0, 1],
 *                     relative weights)
 *            1 <= a:  exp(-a^2) / (a sqrt(pi)) H(1/a - 1/2) (the form of
 *                     erfc's asymptotic series), H of degree 11 fitted
 *                     to H = erfc(a) a sqrt(pi) exp(a^2) the same way on
 *                     1/a in (0, 1] (error 1e-7 relative); a^2 = p + p_err
 *                     exactly (FMA), exp(-a^2) = exp(-p) (1 - p_err)
 *   exp(y), y <= 0:   y = k ln2 + r, |r| <= ln2/2 (ln2 split in two,
 *                     Cody and Waite), e^r by its Taylor series to r^7
 *                     (error < 5e-9 relative), times 2^k through the
 *                     exponent bits; y < -87.3 gives 0 (as expf underflows)
 *   tanh form:        (1 + tanh z) / 2 = 1 / (1 + e^(-2z)): the logistic
 *                     function of 2z, from e = exp(-2|z|) <= 1 only
 *
 * Measured against float64 erf on 2e6 points of [-14, 9]: gelu's error is
 * below 4e-7 absolute, 1.1e-5 relative where |gelu| > 1e-30 (libm's erff
 * path, 1 + erff(z), is 0 from z = -3.9 on); the tanh form 5.2e-7 absolute
 * (tests/layer/test_gelu_float32.py). NaN in, NaN out; inf as the
 * scalar formula (gelu(-inf) is NaN there too: -inf * 0).
 */
#include <stddef.h>

#include "layer/act_vec.h"

#if ATTN_ARCH_X86
#include <immintrin.h>

#define ATTR ATTN_TARGET("avx2,fma,f16c") /* F16C comes with AVX2 + FMA */
#define V __m256
#define S(c) _mm256_set1_ps((float)(c))
#define H16_ATTR ATTR
#include "half.h"
#include "layer/half_avx2.h"

/* element j of a row stored as st (4 or 2 bytes an element)            */
#define AT(p, st, j)                                                           \
    ((const char *)(p) + (ptrdiff_t)(j) * ((st) == ATTN_ST_NATIVE ? 4 : 2))

static const float P_ERF[6] = {
    1.128379121e+00f, -3.761231973e-01f, 1.128013026e-01f,
    -2.670994955e-02f, 4.916023389e-03f, -5.625395974e-04f};
/* H(u), u = 1/a - 1/2: erfc(a) = exp(-a^2) / (a sqrt(pi)) * H           */
static const float H_ERFC[12] = {
    9.053541289e-01f, -2.963736217e-01f, -6.493956236e-02f,
    2.108407389e-01f, -1.923260575e-01f, 7.565363531e-02f,
    6.391704834e-02f, -1.871587019e-01f, 2.851831449e-01f,
    -1.558750301e-01f, -2.820747981e-01f, 3.486622128e-01f};

/* c[0] + c[1] x + ... + c[n-1] x^(n-1) */
static ATTR inline V horner(const float *c, int n, V x)
{
    V r = S(c[n - 1]);
    for (int i = n - 2; i >= 0; i--)
        r = _mm256_fmadd_ps(r, x, S(c[i]));
    return r;
}

/* e^y for y <= 0 (0 below -87.3; NaN lanes are garbage: callers blend) */
static ATTR inline V exp_neg(V y)
{
    const V lo = S(-87.3);
    V under = _mm256_cmp_ps(y, lo, _CMP_LT_OQ);
    y = _mm256_max_ps(y, lo);
    V k = _mm256_round_ps(_mm256_mul_ps(y, S(1.44269504088896341)),
                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    V r = _mm256_fnmadd_ps(k, S(0.693359375), y);     /* ln2 = 355/512   */
    r = _mm256_fnmadd_ps(k, S(-2.12194440054690583e-4), r); /* + rest    */
    V p = S(1.0 / 5040);
    p = _mm256_fmadd_ps(p, r, S(1.0 / 720));
    p = _mm256_fmadd_ps(p, r, S(1.0 / 120));
    p = _mm256_fmadd_ps(p, r, S(1.0 / 24));
    p = _mm256_fmadd_ps(p, r, S(1.0 / 6));
    p = _mm256_fmadd_ps(p, r, S(0.5));
    p = _mm256_fmadd_ps(p, r, S(1));
    p = _mm256_fmadd_ps(p, r, S(1));
    __m256i e = _mm256_slli_epi32(
        _mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23);
    return _mm256_andnot_ps(under, _mm256_mul_ps(p, _mm256_castsi256_ps(e)));
}

/* Phi(h), the normal distribution function */
static ATTR inline V phi(V h)
{
    V z = _mm256_mul_ps(h, S(0.70710678118654752440));
    V a = _mm256_andnot_ps(S(-0.0), z);
    V c1 = _mm256_fnmadd_ps(a, horner(P_ERF, 6, _mm256_mul_ps(a, a)), S(1));
    V ac = _mm256_min_ps(_mm256_max_ps(a, S(1)), S(10)); /* e^-100: 0   */
    V t = _mm256_div_ps(S(1), ac);
    V p = _mm256_mul_ps(ac, ac);
    V p_err = _mm256_fmsub_ps(ac, ac, p); /* a^2 = p + p_err exactly      */
    V g = exp_neg(_mm256_sub_ps(_mm256_setzero_ps(), p));
    g = _mm256_mul_ps(g, _mm256_sub_ps(S(1), p_err)); /* exp(-p - p_err) */
    V hh = horner(H_ERFC, 12, _mm256_sub_ps(t, S(0.5)));
    V c2 = _mm256_mul_ps(_mm256_mul_ps(g, t),
                         _mm256_mul_ps(hh, S(0.56418958354775628695)));
    V c = _mm256_blendv_ps(c2, c1, _mm256_cmp_ps(a, S(1), _CMP_LT_OQ));
    V half = _mm256_mul_ps(c, S(0.5));
    return _mm256_blendv_ps(_mm256_sub_ps(S(1), half), half,
                            _mm256_cmp_ps(z, _mm256_setzero_ps(),
                                          _CMP_LT_OQ));
}

/* the tanh form: s = 1 / (1 + e^(-2u)) and s (1 - s), u = beta (h +
 * kappa h^3), from e = exp(-2 |u|)                                         */
static ATTR inline V logistic(V h, V *s1s)
{
    V h2 = _mm256_mul_ps(h, h);
    V u = _mm256_mul_ps(S(GELU_BETA),
                        _mm256_fmadd_ps(_mm256_mul_ps(S(GELU_KAPPA), h2), h,
                                        h));
    V e = exp_neg(_mm256_mul_ps(S(-2), _mm256_andnot_ps(S(-0.0), u)));
    V inv = _mm256_div_ps(S(1), _mm256_add_ps(S(1), e));
    if (s1s)
        *s1s = _mm256_mul_ps(e, _mm256_mul_ps(inv, inv));
    return _mm256_blendv_ps(inv, _mm256_mul_ps(e, inv),
                            _mm256_cmp_ps(u, _mm256_setzero_ps(),
                                          _CMP_LT_OQ));
}

/* act(h) (dy == NULL) or dy * act'(h), NaN lanes of h passed through */
static ATTR inline V gelu_lanes(int tanh_form, V h, const V *dy)
{
    V r;
    if (tanh_form) {
        V s1s, s = logistic(h, &s1s);
        if (!dy) {
            r = _mm256_mul_ps(h, s);
        } else { /* s + 2 h s (1 - s) u'(h), u' = beta (1 + 3 kappa h^2) */
            V du = _mm256_mul_ps(
                S(GELU_BETA), _mm256_fmadd_ps(S(3 * GELU_KAPPA),
                                              _mm256_mul_ps(h, h), S(1)));
            V d = _mm256_fmadd_ps(_mm256_mul_ps(S(2), h),
                                  _mm256_mul_ps(s1s, du), s);
            r = _mm256_mul_ps(*dy, d);
        }
    } else {
        V p = phi(h);
        if (!dy) {
            r = _mm256_mul_ps(h, p);
        } else { /* Phi(h) + h exp(-h^2 / 2) / sqrt(2 pi) */
            V pdf = _mm256_mul_ps(
                exp_neg(_mm256_mul_ps(S(-0.5), _mm256_mul_ps(h, h))),
                S(GELU_INV_SQRT_2PI));
            r = _mm256_mul_ps(*dy, _mm256_fmadd_ps(h, pdf, p));
        }
    }
    return _mm256_blendv_ps(r, h, _mm256_cmp_ps(h, h, _CMP_UNORD_Q));
}

/* lanes [j, j + m) of a row, m <= 8: the mask of the first m lanes */
static ATTR inline __m256i first_lanes(size_t m)
{
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)m), idx);
}

/* lanes [j, j + m) of one row, m <= 8 (full: plain loads and stores; the
 * tail: masked ones, which are slow on some CPUs)                         */
static ATTR inline void gelu_block(int tanh_form, size_t m, float *out,
                                   const float *x, const float *b,
                                   const float *dy, double *acc)
{
    __m256i mask = first_lanes(m);
    int full = m == 8;
    V h = full ? _mm256_loadu_ps(x) : _mm256_maskload_ps(x, mask);
    if (b)
        h = _mm256_add_ps(h, full ? _mm256_loadu_ps(b)
                                  : _mm256_maskload_ps(b, mask));
    V g;
    if (dy) {
        V d = full ? _mm256_loadu_ps(dy) : _mm256_maskload_ps(dy, mask);
        g = gelu_lanes(tanh_form, h, &d);
    } else {
        g = gelu_lanes(tanh_form, h, NULL);
    }
    if (full)
        _mm256_storeu_ps(out, g);
    else
        _mm256_maskstore_ps(out, mask, g);
    if (acc) { /* column sums in double, as the scalar path */
        float t[8];
        _mm256_storeu_ps(t, g);
        for (size_t i = 0; i < m; i++)
            acc[i] += (double)t[i];
    }
}

ATTR void attn__gelu_row_avx2(int tanh_form, size_t n, const attn_vrow *r,
                              double *acc)
{
    size_t j = 0;
    for (; j + 8 <= n; j += 8) { /* 16-bit lanes widened in registers */
        V h = h16_load8(r->xst, AT(r->x, r->xst, j));
        if (r->b)
            h = _mm256_add_ps(h, h16_load8(r->bst, AT(r->b, r->bst, j)));
        V g;
        if (r->dy) {
            V d = h16_load8(r->dyst, AT(r->dy, r->dyst, j));
            g = gelu_lanes(tanh_form, h, &d);
        } else {
            g = gelu_lanes(tanh_form, h, NULL);
        }
        h16_store8(r->ost, (void *)AT(r->out, r->ost, j), g);
        if (acc) { /* column sums in double, as the scalar path */
            float t[8];
            _mm256_storeu_ps(t, g);
            for (size_t i = 0; i < 8; i++)
                acc[j + i] += (double)t[i];
        }
    }
    if (j == n)
        return;
    /* the tail, m < 8 lanes, through float lanes                       */
    float tx[8], tb[8], td[8];
    const size_t m = n - j;
    for (size_t i = 0; i < m; i++) {
        tx[i] = attn_load_f32(r->xst, r->x, (ptrdiff_t)(j + i));
        if (r->b)
            tb[i] = attn_load_f32(r->bst, r->b, (ptrdiff_t)(j + i));
        if (r->dy)
            td[i] = attn_load_f32(r->dyst, r->dy, (ptrdiff_t)(j + i));
    }
    gelu_block(tanh_form, m, tx, tx, r->b ? tb : NULL, r->dy ? td : NULL,
               acc ? acc + j : NULL);
    for (size_t i = 0; i < m; i++)
        attn_store_f32(r->ost, r->out, (ptrdiff_t)(j + i), tx[i]);
}

ATTR void attn__gelu_row_f32_avx2(int tanh_form, size_t n, float *out,
                                  const float *x, const float *b,
                                  const float *dy, double *acc)
{
    const attn_vrow r = {.out = out, .x = x, .b = b, .dy = dy};
    attn__gelu_row_avx2(tanh_form, n, &r, acc);
}

/* silu(x) = x sigmoid(x), the sigmoid from e = exp(-|x|) <= 1 as the
 * tanh form's logistic (x < -87.3: e^x is flushed to 0, silu to -0;
 * -inf gives NaN, as x / (1 + exp(-x)))                                 */
static ATTR inline V silu_lanes(V x)
{
    V e = exp_neg(_mm256_sub_ps(_mm256_setzero_ps(),
                                _mm256_andnot_ps(S(-0.0), x)));
    V inv = _mm256_div_ps(S(1), _mm256_add_ps(S(1), e));
    V s = _mm256_blendv_ps(inv, _mm256_mul_ps(e, inv),
                           _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ));
    return _mm256_mul_ps(x, s);
}

/* silu(g) [* u] of lanes [0, m), m < 8 (a row's float tail)             */
static ATTR inline void silu_tail(size_t m, float *y, const float *g,
                                  const float *u)
{
    __m256i mask = first_lanes(m);
    V r = silu_lanes(_mm256_maskload_ps(g, mask));
    if (u)
        r = _mm256_mul_ps(r, _mm256_maskload_ps(u, mask));
    _mm256_maskstore_ps(y, mask, r);
}

ATTR void attn__swiglu_row_avx2(size_t n, const attn_vrow *r)
{
    size_t j = 0;
    for (; j + 8 <= n; j += 8) { /* r->x: gate, r->b: up */
        V y = silu_lanes(h16_load8(r->xst, AT(r->x, r->xst, j)));
        if (r->b)
            y = _mm256_mul_ps(y, h16_load8(r->bst, AT(r->b, r->bst, j)));
        h16_store8(r->ost, (void *)AT(r->out, r->ost, j), y);
    }
    if (j == n)
        return;
    float tg[8], tu[8];
    const size_t m = n - j;
    for (size_t i = 0; i < m; i++) {
        tg[i] = attn_load_f32(r->xst, r->x, (ptrdiff_t)(j + i));
        if (r->b)
            tu[i] = attn_load_f32(r->bst, r->b, (ptrdiff_t)(j + i));
    }
    silu_tail(m, tg, tg, r->b ? tu : NULL);
    for (size_t i = 0; i < m; i++)
        attn_store_f32(r->ost, r->out, (ptrdiff_t)(j + i), tg[i]);
}

ATTR void attn__swiglu_row_f32_avx2(size_t n, float *y, const float *g,
                                    const float *u)
{
    const attn_vrow r = {.out = y, .x = g, .b = u};
    attn__swiglu_row_avx2(n, &r);
}

int attn__gelu_avx2_ok(void)
{
    return (attn__x86_features() & ATTN_X86_AVX2_FMA) != 0;
}

#else

int attn__gelu_avx2_ok(void) { return 0; }

void attn__gelu_row_f32_avx2(int tanh_form, size_t n, float *out,
                             const float *x, const float *b, const float *dy,
                             double *acc)
{
    (void)tanh_form, (void)n, (void)out, (void)x, (void)b, (void)dy;
    (void)acc;
}

void attn__swiglu_row_f32_avx2(size_t n, float *y, const float *g,
                               const float *u)
{
    (void)n, (void)y, (void)g, (void)u;
}

void attn__gelu_row_avx2(int tanh_form, size_t n, const attn_vrow *r,
                         double *acc)
{
    (void)tanh_form, (void)n, (void)r, (void)acc;
}

void attn__swiglu_row_avx2(size_t n, const attn_vrow *r)
{
    (void)n, (void)r;
}

#endif
