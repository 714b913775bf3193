/*
 * simd/fma.c -- attn__fma_soft: a * b + c with one rounding to nearest
 * even, from exact integer arithmetic, for the platforms whose C library
 * fma cannot be trusted (simd/fma.h). No floating-point operation here
 * rounds an inexact value except where IEEE already gives the fma's
 * result (the special cases below), so the bits are the same on every
 * compiler and CPU.
 *
 * The finite, nonzero case: a = (-1)^sa ma 2^ea with ma in [2^52, 2^53)
 * (subnormals normalized), likewise b and c. The product ma mb (106 bits)
 * and mc are each placed in a 128-bit window with their top bit at bit
 * 125 (two spare bits for a carry); the one with the smaller exponent is
 * shifted right, the bits shifted out kept as a sticky bit in bit 0;
 * then one add or subtract, and one round to nearest even at the
 * position the result's exponent (or the subnormal range) asks for.
 * The sticky bit gives the right rounding because the rounding position
 * is at least 2 bits above it whenever bits were shifted out (shifts of
 * 0 or 1 lose nothing: the window's low 20 bits are zero), so the
 * rounded value is decided by which pair of consecutive even integers
 * the exact sum lies between, and the jammed sum lies between the same
 * pair.
 */
#include "simd/fma.h"

#include "simd/u128.h"

static attn__u128 fma_shl(attn__u128 x, int s) /* 0 <= s < 128 */
{
    attn__u128 r;
    if (s == 0)
        return x;
    if (s >= 64) {
        r.hi = x.lo << (s - 64);
        r.lo = 0;
    } else {
        r.hi = (x.hi << s) | (x.lo >> (64 - s));
        r.lo = x.lo << s;
    }
    return r;
}

static attn__u128 fma_shr(attn__u128 x, int s) /* 0 <= s < 128 */
{
    attn__u128 r;
    if (s == 0)
        return x;
    if (s >= 64) {
        r.lo = x.hi >> (s - 64);
        r.hi = 0;
    } else {
        r.lo = (x.lo >> s) | (x.hi << (64 - s));
        r.hi = x.hi >> s;
    }
    return r;
}

/* x >> s, any s >= 0, with bit 0 set when a nonzero bit was shifted out */
static attn__u128 fma_shr_sticky(attn__u128 x, int s)
{
    attn__u128 r = {0, 0};
    int lost;
    if (s == 0)
        return x;
    if (s >= 128) {
        r.lo = (x.hi | x.lo) != 0;
        return r;
    }
    r = fma_shr(x, s);
    const attn__u128 back = fma_shl(r, s);
    lost = back.hi != x.hi || back.lo != x.lo;
    r.lo |= (uint64_t)lost;
    return r;
}

static int fma_lt(attn__u128 a, attn__u128 b)
{
    return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo);
}

static attn__u128 fma_add(attn__u128 a, attn__u128 b)
{
    attn__u128 r;
    r.lo = a.lo + b.lo;
    r.hi = a.hi + b.hi + (r.lo < a.lo);
    return r;
}

static attn__u128 fma_sub(attn__u128 a, attn__u128 b) /* a >= b */
{
    attn__u128 r;
    r.lo = a.lo - b.lo;
    r.hi = a.hi - b.hi - (a.lo < b.lo);
    return r;
}

/* x = (-1)^sign m 2^e, m in [2^52, 2^53); x finite and nonzero          */
static void fma_unpack(double x, uint64_t *m, int *e, int *sign)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    *sign = (int)(u >> 63);
    const int be = (int)((u >> 52) & 0x7ff);
    const uint64_t f = u & 0xfffffffffffffull;
    if (be == 0) { /* subnormal: f 2^-1074 */
        const int sh = 52 - attn__msb64(f);
        *m = f << sh;
        *e = -1074 - sh;
    } else {
        *m = f | (1ull << 52);
        *e = be - 1075;
    }
}

double attn__fma_soft(double a, double b, double c)
{
    /* IEEE gives these exactly: an infinite or NaN product (inf * 0 is
     * NaN) plus c; c infinite or NaN with a finite product (a * b might
     * overflow, so not a * b + c); a zero product (exact) plus c; a zero
     * c (the product rounded once, its sign the exact product's)        */
    if (!isfinite(a) || !isfinite(b))
        return a * b + c;
    if (!isfinite(c))
        return c + c;
    if (a == 0 || b == 0)
        return a * b + c;
    if (c == 0)
        return a * b;

    uint64_t ma, mb, mc;
    int ea, eb, ec, sa, sb, sc;
    fma_unpack(a, &ma, &ea, &sa);
    fma_unpack(b, &mb, &eb, &sb);
    fma_unpack(c, &mc, &ec, &sc);

    /* both in the window, top bit at 125: value = X 2^xe               */
    attn__u128 x = attn__mul64(ma, mb);
    const int psh = 125 - attn__msb128(x); /* 20 or 21 */
    x = fma_shl(x, psh);
    int xe = ea + eb - psh;
    const int sx = sa ^ sb;
    attn__u128 y = {mc << 9, 0}; /* mc << 73 */
    int ye = ec - 73;

    attn__u128 big = x, small = y;
    int e = xe, sbig = sx, ssmall = sc;
    if (ye > xe) {
        big = y;
        small = x;
        e = ye;
        sbig = sc;
        ssmall = sx;
    }
    small = fma_shr_sticky(small, e - (ye > xe ? xe : ye));

    attn__u128 r;
    int sign = sbig;
    if (sbig == ssmall) {
        r = fma_add(big, small);
    } else if (fma_lt(big, small)) { /* equal exponents only */
        r = fma_sub(small, big);
        sign = ssmall;
    } else {
        r = fma_sub(big, small);
    }
    if (r.hi == 0 && r.lo == 0)
        return 0.0; /* exact cancellation: +0 when rounding to nearest */

    /* round r 2^e to 53 bits, or to the subnormal grid 2^-1074          */
    const int p = attn__msb128(r);
    int s = p - 52;
    if (p + e < -1022)
        s = -1074 - e;
    uint64_t m;
    if (s <= 0) {
        m = fma_shl(r, -s).lo; /* exact: at most 53 bits */
    } else if (s >= 128) {
        m = 0; /* below half the smallest subnormal: p <= 126 < s - 1 */
    } else {
        const attn__u128 q = fma_shr(r, s);
        const attn__u128 rem = fma_sub(r, fma_shl(q, s));
        const attn__u128 half = fma_shl((attn__u128){0, 1}, s - 1);
        m = q.lo;
        if (fma_lt(half, rem) || (rem.hi == half.hi && rem.lo == half.lo
                                  && (m & 1)))
            m++;
    }
    int qe = e + s; /* the result is m 2^qe */
    if (m >> 53) {  /* rounded up to 2^53 */
        m >>= 1;
        qe++;
    }
    uint64_t u;
    if (m >> 52) {
        const int biased = qe + 1075;
        u = biased >= 2047 ? 0x7ff0000000000000ull
                           : ((uint64_t)biased << 52) | (m & 0xfffffffffffffull);
    } else {
        u = m; /* subnormal or zero: qe is -1074 */
    }
    u |= (uint64_t)sign << 63;
    double out;
    memcpy(&out, &u, sizeof out);
    return out;
}
