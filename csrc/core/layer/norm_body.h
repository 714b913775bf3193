/*
 * layer/norm_body.h -- layer normalisation's per-row code, written once
 * over the element type. norm.c includes it twice:
 *
 *   #define T float
 *   #define SFX f32
 *   #include "layer/norm_body.h"      (defines ln_fwd_f32, ln_bwd_f32)
 *
 * Every sum over a row is in double, in 8 partial sums (lane = j mod 8)
 * added in a fixed tree at the end (lanes.h), so the same row gives the
 * same bits in the forward and the backward pass, whatever its strides.
 */
#define CAT2(a, b) a##_##b
#define CAT(a, b) CAT2(a, b)
#define FN(name) CAT(name, SFX)

/* sum_j (s_j - mean)^2 / n                                                */
static inline LN_INLINE double FN(row_var)(const T *s, ptrdiff_t st, size_t n,
                                           double mean)
{
    double a[8] = {0};
    LN_LANES(n, {
        double d = (double)s[(ptrdiff_t)j * st] - mean;
        a[l] += d * d;
    });
    return attn__lanes_total(a) / (double)n;
}

/* rstd and the backward's factor k (see attn.h) from mean and var        */
static inline void FN(row_scale)(double var, double eps, int eps_in_sqrt,
                                 double *rstd, double *k)
{
    if (eps_in_sqrt) {
        *rstd = 1.0 / sqrt(var + eps);
        *k = *rstd;
    } else {
        double sd = sqrt(var);
        *rstd = 1.0 / (sd + eps);
        *k = sd > 0 ? 1.0 / sd : 0.0;
    }
}

/* ------------------------------------------------------------------------ */
/* forward, one row; `unit`: every operand has column stride 1 (a constant  */
/* after inlining, so that loop is the contiguous one)                      */
/*   1. s = x + (res + shift) -> y (and sum), mean                          */
/*   2. var from y                                                          */
/*   3. y = (s - mean) * rstd * weight + bias                               */
/* ------------------------------------------------------------------------ */
static inline LN_INLINE void FN(ln_fwd_row)(const attn_norm *p, size_t r,
                                            int unit)
{
    const size_t n = p->n;
#define ST(m) (unit ? (ptrdiff_t)1 : (m).s1)
    const ptrdiff_t sx = ST(p->x), sr = ST(p->res), sc = ST(p->shift),
                    ss = ST(p->sum), sy = ST(p->y), sw = ST(p->weight),
                    sb = ST(p->bias);
#undef ST
    const T *x = (const T *)p->x.data + ROW(p->x, r);
    const T *res = p->res.data ? (const T *)p->res.data + ROW(p->res, r)
                               : NULL;
    const T *shift = p->shift.data;
    T *sum = p->sum.data ? (T *)p->sum.data + ROW(p->sum, r) : NULL;
    T *y = (T *)p->y.data + ROW(p->y, r);
    const T *w = p->weight.data, *b = p->bias.data;
    /* 1 */
    double a[8] = {0};
    LN_LANES(n, {
        T s = x[(ptrdiff_t)j * sx];
        if (res && shift)
            s += res[(ptrdiff_t)j * sr] + shift[(ptrdiff_t)j * sc];
        else if (res)
            s += res[(ptrdiff_t)j * sr];
        else if (shift)
            s += shift[(ptrdiff_t)j * sc];
        y[(ptrdiff_t)j * sy] = s;
        if (sum)
            sum[(ptrdiff_t)j * ss] = s;
        a[l] += (double)s;
    });
    double mean = attn__lanes_total(a) / (double)n;
    /* 2 */
    double var = FN(row_var)(y, sy, n, mean), rstd, k;
    FN(row_scale)(var, p->eps, p->eps_in_sqrt, &rstd, &k);
    /* 3 */
    for (size_t j = 0; j < n; j++) {
        double v = ((double)y[(ptrdiff_t)j * sy] - mean) * rstd;
        if (w)
            v *= (double)w[(ptrdiff_t)j * sw];
        if (b)
            v += (double)b[(ptrdiff_t)j * sb];
        y[(ptrdiff_t)j * sy] = (T)v;
    }
}

static void FN(ln_fwd)(void *ctx, size_t r0, size_t r1, double *acc)
{
    (void)acc;
    const attn_norm *p = ctx;
    int unit = p->x.s1 == 1 && p->y.s1 == 1
               && (!p->res.data || p->res.s1 == 1)
               && (!p->shift.data || p->shift.s1 == 1)
               && (!p->sum.data || p->sum.s1 == 1)
               && (!p->weight.data || p->weight.s1 == 1)
               && (!p->bias.data || p->bias.s1 == 1);
    for (size_t r = r0; r < r1; r++) {
        if (unit)
            FN(ln_fwd_row)(p, r, 1);
        else
            FN(ln_fwd_row)(p, r, 0);
    }
}

/* ------------------------------------------------------------------------ */
/* backward, one row (acc: dweight partial sums, then dbias)                */
/*   1. mean, var of s (the forward pass's sums, the same bits)             */
/*   2. mean(g), mean(g xhat); acc += dy xhat, dy                           */
/*   3. dx = rstd (g - mean(g)) - k xhat mean(g xhat)                       */
/* ------------------------------------------------------------------------ */
static inline LN_INLINE void FN(ln_bwd_row)(const attn_norm_grad *p,
                                            size_t r, double *acc, int unit)
{
    const size_t n = p->n;
#define ST(m) (unit ? (ptrdiff_t)1 : (m).s1)
    const ptrdiff_t sdx = ST(p->dx), sdy = ST(p->dy), ss = ST(p->s),
                    sw = ST(p->weight);
#undef ST
    const T *s = (const T *)p->s.data + ROW(p->s, r);
    const T *dy = (const T *)p->dy.data + ROW(p->dy, r);
    const T *w = p->weight.data;
    T *dx = (T *)p->dx.data + ROW(p->dx, r);
    /* 1 */
    double a[8] = {0};
    LN_LANES(n, a[l] += (double)s[(ptrdiff_t)j * ss];);
    double mean = attn__lanes_total(a) / (double)n;
    double var = FN(row_var)(s, ss, n, mean), rstd, k;
    FN(row_scale)(var, p->eps, p->eps_in_sqrt, &rstd, &k);
    /* 2 */
    double ag[8] = {0}, agx[8] = {0};
    double *dw = acc, *db = acc ? acc + n : NULL;
    LN_LANES(n, {
        double xh = ((double)s[(ptrdiff_t)j * ss] - mean) * rstd;
        double d = (double)dy[(ptrdiff_t)j * sdy];
        double g = w ? d * (double)w[(ptrdiff_t)j * sw] : d;
        ag[l] += g;
        agx[l] += g * xh;
        if (acc) {
            dw[j] += d * xh;
            db[j] += d;
        }
    });
    double mg = attn__lanes_total(ag) / (double)n;
    double mgx = attn__lanes_total(agx) / (double)n;
    /* 3 */
    for (size_t j = 0; j < n; j++) {
        double xh = ((double)s[(ptrdiff_t)j * ss] - mean) * rstd;
        double d = (double)dy[(ptrdiff_t)j * sdy];
        double g = w ? d * (double)w[(ptrdiff_t)j * sw] : d;
        dx[(ptrdiff_t)j * sdx] = (T)(rstd * (g - mg) - k * xh * mgx);
    }
}

static void FN(ln_bwd)(void *ctx, size_t r0, size_t r1, double *acc)
{
    const attn_norm_grad *p = ctx;
    int unit = p->dx.s1 == 1 && p->dy.s1 == 1 && p->s.s1 == 1
               && (!p->weight.data || p->weight.s1 == 1);
    for (size_t r = r0; r < r1; r++) {
        if (unit)
            FN(ln_bwd_row)(p, r, acc, 1);
        else
            FN(ln_bwd_row)(p, r, acc, 0);
    }
}

#undef FN
#undef CAT
#undef CAT2
#undef T
#undef SFX
