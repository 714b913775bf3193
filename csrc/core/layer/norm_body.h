/*
 * layer/norm_body.h -- the norms' per-row code (layer normalisation and
 * RMS normalisation), written once over the element type. norm.c
 * includes it twice:
 *
 *   #define T float
 *   #define SFX f32
 *   #include "layer/norm_body.h"      (defines ln_fwd_f32, rms_bwd_f32 ...)
 *
 * Rows come unit-stride in T from the storage layer (rows/rows.h). Every
 * sum over a row is in double, in 8 partial sums (lane = j mod 8) added
 * in a fixed tree at the end (rows/lanes.h), so the same row gives the
 * same bits in the forward and the backward pass (the backward passes
 * recompute the forward's statistics exactly).
 */
#define CAT2(a, b) a##_##b
#define CAT(a, b) CAT2(a, b)
#define FN(name) CAT(name, SFX)

/* sum_j (s_j - mean)^2 / n (RMS norm: mean 0, the mean of squares)     */
static double FN(row_var)(const T *s, size_t n, double mean)
{
    double a[8] = {0};
    LN_LANES(n, j, l, {
        double d = (double)s[j] - mean;
        a[l] += d * d;
    });
    return attn__lanes_total(a) / (double)n;
}

/* rstd and the backward's factor k (see attn.h) from mean and var        */
static void FN(row_scale)(double var, double eps, int eps_in_sqrt,
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
/* forward, rows [r0, r1) (scratch: 7 staged rows)                          */
/*   1. s = x + (res + shift) -> y (and sum), mean                          */
/*   2. var from y                                                          */
/*   3. y = (s - mean) * rstd * weight + bias                               */
/* ------------------------------------------------------------------------ */
static void FN(ln_fwd)(void *ctx, size_t r0, size_t r1, double *acc,
                       void *scratch)
{
    (void)acc;
    const attn_norm *p = ctx;
    const attn_dtype dt = p->dtype;
    const size_t n = p->n, rb = attn__row_bytes(dt, n);
    char *buf = scratch;
    /* the vectors, once per chunk */
    const T *shift = p->shift.data
        ? attn__row_in(&p->shift, dt, 0, n, buf + 4 * rb) : NULL;
    const T *w = p->weight.data
        ? attn__row_in(&p->weight, dt, 0, n, buf + 5 * rb) : NULL;
    const T *b = p->bias.data
        ? attn__row_in(&p->bias, dt, 0, n, buf + 6 * rb) : NULL;
    for (size_t r = r0; r < r1; r++) {
        const T *x = attn__row_in(&p->x, dt, ROW(p->x, r), n, buf);
        const T *res = p->res.data
            ? attn__row_in(&p->res, dt, ROW(p->res, r), n, buf + rb) : NULL;
        T *y = attn__row_out(&p->y, dt, ROW(p->y, r), buf + 2 * rb);
        T *sum = p->sum.data
            ? attn__row_out(&p->sum, dt, ROW(p->sum, r), buf + 3 * rb) : NULL;
        /* 1 */
        double a[8] = {0};
        LN_LANES(n, j, l, {
            T s = x[j];
            if (res && shift)
                s += res[j] + shift[j];
            else if (res)
                s += res[j];
            else if (shift)
                s += shift[j];
            y[j] = s;
            if (sum)
                sum[j] = s;
            a[l] += (double)s;
        });
        const double mean = attn__lanes_total(a) / (double)n;
        /* 2 */
        double rstd, k;
        FN(row_scale)(FN(row_var)(y, n, mean), p->eps, p->eps_in_sqrt, &rstd,
                      &k);
        /* 3 */
        for (size_t j = 0; j < n; j++) {
            double v = ((double)y[j] - mean) * rstd;
            if (w)
                v *= (double)w[j];
            if (b)
                v += (double)b[j];
            y[j] = (T)v;
        }
        if (sum)
            attn__row_done(&p->sum, dt, ROW(p->sum, r), n, sum);
        attn__row_done(&p->y, dt, ROW(p->y, r), n, y);
    }
}

/* ------------------------------------------------------------------------ */
/* backward, rows [r0, r1) (acc: dweight partial sums, then dbias;          */
/* scratch: 4 staged rows)                                                  */
/*   1. mean, var of s (the forward pass's sums, the same bits)             */
/*   2. mean(g), mean(g xhat); acc += dy xhat, dy                           */
/*   3. dx = rstd (g - mean(g)) - k xhat mean(g xhat)                       */
/* ------------------------------------------------------------------------ */
static void FN(ln_bwd)(void *ctx, size_t r0, size_t r1, double *acc,
                       void *scratch)
{
    const attn_norm_grad *p = ctx;
    const attn_dtype dt = p->dtype;
    const size_t n = p->n, rb = attn__row_bytes(dt, n);
    char *buf = scratch;
    const T *w = p->weight.data
        ? attn__row_in(&p->weight, dt, 0, n, buf + 3 * rb) : NULL;
    double *dw = acc, *db = acc ? acc + n : NULL;
    for (size_t r = r0; r < r1; r++) {
        const T *s = attn__row_in(&p->s, dt, ROW(p->s, r), n, buf);
        const T *dy = attn__row_in(&p->dy, dt, ROW(p->dy, r), n, buf + rb);
        T *dx = attn__row_out(&p->dx, dt, ROW(p->dx, r), buf + 2 * rb);
        /* 1 */
        double a[8] = {0};
        LN_LANES(n, j, l, a[l] += (double)s[j];);
        const double mean = attn__lanes_total(a) / (double)n;
        double rstd, k;
        FN(row_scale)(FN(row_var)(s, n, mean), p->eps, p->eps_in_sqrt, &rstd,
                      &k);
        /* 2 */
        double ag[8] = {0}, agx[8] = {0};
        LN_LANES(n, j, l, {
            double xh = ((double)s[j] - mean) * rstd;
            double d = (double)dy[j];
            double g = w ? d * (double)w[j] : d;
            ag[l] += g;
            agx[l] += g * xh;
            if (acc) {
                dw[j] += d * xh;
                db[j] += d;
            }
        });
        const double mg = attn__lanes_total(ag) / (double)n;
        const double mgx = attn__lanes_total(agx) / (double)n;
        /* 3 (dx may be the memory of dy or s: each read before written) */
        for (size_t j = 0; j < n; j++) {
            double xh = ((double)s[j] - mean) * rstd;
            double d = (double)dy[j];
            double g = w ? d * (double)w[j] : d;
            dx[j] = (T)(rstd * (g - mg) - k * xh * mgx);
        }
        attn__row_done(&p->dx, dt, ROW(p->dx, r), n, dx);
    }
}

/* ------------------------------------------------------------------------ */
/* RMS norm (Llama's RMSNorm)                                               */
/* ------------------------------------------------------------------------ */
/* forward, rows [r0, r1): y = x * rstd [* weight], in double, rounded
 * once (scratch: 3 staged rows)                                          */
static void FN(rms_fwd)(void *ctx, size_t r0, size_t r1, double *acc,
                        void *scratch)
{
    (void)acc;
    const attn_rms *p = ctx;
    const attn_dtype dt = p->dtype;
    const size_t n = p->n, rb = attn__row_bytes(dt, n);
    char *buf = scratch;
    const T *w = p->weight.data
        ? attn__row_in(&p->weight, dt, 0, n, buf + 2 * rb) : NULL;
    for (size_t r = r0; r < r1; r++) {
        const T *x = attn__row_in(&p->x, dt, ROW(p->x, r), n, buf);
        T *y = attn__row_out(&p->y, dt, ROW(p->y, r), buf + rb);
        /* 1 / sqrt(sum_j x_j^2 / n + eps) */
        const double rstd = 1.0 / sqrt(FN(row_var)(x, n, 0.0) + p->eps);
        if (w)
            for (size_t j = 0; j < n; j++)
                y[j] = (T)((double)x[j] * rstd * (double)w[j]);
        else
            for (size_t j = 0; j < n; j++)
                y[j] = (T)((double)x[j] * rstd);
        attn__row_done(&p->y, dt, ROW(p->y, r), n, y);
    }
}

/* backward, rows [r0, r1) (acc: the dweight partial sums or NULL;
 * scratch: 4 staged rows):
 *   xhat = x rstd,  g = dy [* weight],  dx = rstd (g - xhat mean(g xhat))
 *   acc_j += dy_j xhat_j                                                  */
static void FN(rms_bwd)(void *ctx, size_t r0, size_t r1, double *acc,
                        void *scratch)
{
    const attn_rms_grad *p = ctx;
    const attn_dtype dt = p->dtype;
    const size_t n = p->n, rb = attn__row_bytes(dt, n);
    char *buf = scratch;
    const T *w = p->weight.data
        ? attn__row_in(&p->weight, dt, 0, n, buf + 3 * rb) : NULL;
    for (size_t r = r0; r < r1; r++) {
        const T *x = attn__row_in(&p->x, dt, ROW(p->x, r), n, buf);
        const T *dy = attn__row_in(&p->dy, dt, ROW(p->dy, r), n, buf + rb);
        T *dx = attn__row_out(&p->dx, dt, ROW(p->dx, r), buf + 2 * rb);
        /* 1 / sqrt(sum_j x_j^2 / n + eps) */
        const double rstd = 1.0 / sqrt(FN(row_var)(x, n, 0.0) + p->eps);
        double a[8] = {0};
        LN_LANES(n, j, l, {
            double xh = (double)x[j] * rstd;
            double d = (double)dy[j];
            a[l] += (w ? d * (double)w[j] : d) * xh;
            if (acc)
                acc[j] += d * xh;
        });
        const double mgx = attn__lanes_total(a) / (double)n;
        for (size_t j = 0; j < n; j++) {
            double xh = (double)x[j] * rstd;
            double d = (double)dy[j];
            double g = w ? d * (double)w[j] : d;
            dx[j] = (T)(rstd * (g - xh * mgx));
        }
        attn__row_done(&p->dx, dt, ROW(p->dx, r), n, dx);
    }
}

#undef FN
#undef CAT
#undef CAT2
#undef T
#undef SFX
