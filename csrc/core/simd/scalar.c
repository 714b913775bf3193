/*
 * simd/scalar.c -- the elementary functions of simd/scalar.h: the
 * templates of simd/math.h on one lane (simd/vec_scalar.h), and the
 * exact reduction of large sin / cos arguments the templates call.
 */
#include "simd/scalar.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "simd/fma.h"
#include "simd/math_twoopi.h"
#include "simd/u128.h"

#define SIMD_F64 1
#include "simd/vec_scalar.h"
#include "simd/math.h"
#include "simd/undef.h"

#define SIMD_F64 0
#include "simd/vec_scalar.h"
#include "simd/math.h"
#include "simd/undef.h"

/* 2/pi's bits of weights 2^-(pos + 1) .. 2^-(pos + 64), pos >= -63 (the
 * bits of weight 1 and above are 0)                                    */
static uint64_t twoopi_bits(int pos)
{
    if (pos < 0)
        return attn__twoopi[0] >> -pos;
    const int j = pos / 64, sh = pos % 64;
    return sh ? (attn__twoopi[j] << sh) | (attn__twoopi[j + 1] >> (64 - sh))
              : attn__twoopi[j];
}

/* Payne and Hanek's reduction in integers. x = M 2^E (M < 2^53, E >= -20
 * as x >= 2^32); the bits of 2/pi of weight 2^(E-2) and above give
 * multiples of 4 in x 2/pi and are skipped, the next 192 bits W give
 * x 2/pi = M W 2^-190 (mod 4) up to M 2^(E - (E-2) - 192) < 2^-137: the
 * product's bits 190-191 are n mod 4, bits 0-189 the fraction F. Rounded
 * to the nearest n (F >= 1/2: n + 1, F - 1), F's leading 106 bits become
 * fh + fl (exact conversions) and r = (fh + fl) pi/2 a double-double.
 * The closest a double comes to a multiple of pi/2 is ~2^-61 (Muller's
 * worst cases), so F has at least 190 - 62 significant bits: plenty.   */
int attn__rem_pio2_big(double x, double *rh, double *rl)
{
    if (!isfinite(x) || x < 0x1p32) {
        *rh = x - x;
        *rl = 0;
        return 0;
    }
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    const uint64_t m = (u & 0xfffffffffffffull) | (1ull << 52);
    const int e = (int)((u >> 52) & 0x7ff) - 1075;
    const int k0 = e - 2;
    const uint64_t w[3] = {twoopi_bits(k0 + 128), twoopi_bits(k0 + 64),
                           twoopi_bits(k0)}; /* least significant first */
    uint64_t p[3]; /* m * w mod 2^192 */
    uint64_t carry = 0;
    for (int i = 0; i < 3; i++) {
        const attn__u128 t = attn__mul64(m, w[i]);
        p[i] = t.lo + carry;
        carry = t.hi + (p[i] < t.lo);
    }
    int q = (int)(p[2] >> 62);
    uint64_t f2 = p[2] & 0x3fffffffffffffffull, f1 = p[1], f0 = p[0];
    int neg = 0;
    if (f2 >> 61) { /* F >= 1/2: F - 1 = -(2^190 - F) */
        q = (q + 1) & 3;
        neg = 1;
        f0 = ~f0 + 1;
        f1 = ~f1 + (f0 == 0);
        f2 = (~f2 + (f0 == 0 && f1 == 0)) & 0x3fffffffffffffffull;
    }
    /* the leading bit to bit 191 of (f2, f1, f0)                         */
    int lead;
    if (f2)
        lead = 128 + attn__msb64(f2);
    else if (f1)
        lead = 64 + attn__msb64(f1);
    else if (f0)
        lead = attn__msb64(f0);
    else {
        *rh = *rl = 0;
        return q;
    }
    int sh = 191 - lead;
    while (sh >= 64) {
        f2 = f1;
        f1 = f0;
        f0 = 0;
        sh -= 64;
    }
    if (sh) {
        f2 = (f2 << sh) | (f1 >> (64 - sh));
        f1 = (f1 << sh) | (f0 >> (64 - sh));
    }
    /* F 2^-190 = (f2 : f1) 2^(lead - 381) + less: 53 + 53 bits          */
    const double fh = ldexp((double)(int64_t)(f2 >> 11), lead - 242);
    const double fl = ldexp(
        (double)(int64_t)(((f2 & 0x7ff) << 42) | (f1 >> 22)), lead - 295);
    const double h = fh * ATTN_PIO2_1;
    const double l = attn_fma(fh, ATTN_PIO2_1, -h)
                     + (fh * ATTN_PIO2_2 + fl * ATTN_PIO2_1);
    double s = h + l, t = l - (s - h);
    if (neg) {
        s = -s;
        t = -t;
    }
    *rh = s;
    *rl = t;
    return q;
}

double attn_exp(double x) { return exp_scalar_f64(x); }
float attn_expf(float x) { return exp_scalar_f32(x); }
double attn_sigmoid(double x) { return sigmoid_scalar_f64(x); }
float attn_sigmoidf(float x) { return sigmoid_scalar_f32(x); }
double attn_tanh(double x) { return tanh_scalar_f64(x); }
float attn_tanhf(float x) { return tanh_scalar_f32(x); }
double attn_phi(double h) { return phi_scalar_f64(h); }
float attn_phif(float h) { return phi_scalar_f32(h); }
double attn_npdf(double h) { return npdf_scalar_f64(h); }
float attn_npdff(float h) { return npdf_scalar_f32(h); }
double attn_log(double x) { return log_scalar_f64(x); }
float attn_logf(float x) { return log_scalar_f32(x); }
double attn_pow(double x, double y) { return pow_scalar_f64(x, y); }
void attn_sincos(double x, double *s, double *c) { sincos_scalar_f64(x, s, c); }
