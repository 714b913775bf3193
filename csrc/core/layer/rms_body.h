/*
 * layer/rms_body.h -- RMS normalisation's per-row code, written once over
 * the element type. rms.c includes it twice (T float / SFX f32, then
 * double / f64), defining rms_fwd_<SFX> and rms_bwd_<SFX>.
 *
 * The mean of squares is summed in double in lanes.h's fixed order, so
 * the backward pass recomputes exactly the forward pass's rstd.
 */
#define CAT2(a, b) a##_##b
#define CAT(a, b) CAT2(a, b)
#define FN(name) CAT(name, SFX)

/* 1 / sqrt(sum_j x_j^2 / n + eps)                                        */
static inline RMS_INLINE double FN(rms_rstd)(const T *x, ptrdiff_t sx,
                                             size_t n, double eps)
{
    double a[8] = {0};
    LN_LANES(n, {
        double v = (double)x[(ptrdiff_t)j * sx];
        a[l] += v * v;
    });
    return 1.0 / sqrt(attn__lanes_total(a) / (double)n + eps);
}

/* forward, one row: y = x * rstd [* weight], in double, rounded once;
 * `unit`: every stride 1 (a constant after inlining)                      */
static inline RMS_INLINE void FN(rms_fwd_row)(const attn_rms *p, size_t r,
                                              int unit)
{
    const size_t n = p->n;
    const ptrdiff_t sx = unit ? 1 : p->x.s1, sy = unit ? 1 : p->y.s1,
                    sw = unit ? 1 : p->weight.s1;
    const T *x = (const T *)p->x.data + ROW(p->x, r);
    const T *w = p->weight.data;
    T *y = (T *)p->y.data + ROW(p->y, r);
    double rstd = FN(rms_rstd)(x, sx, n, p->eps);
    if (w)
        for (size_t j = 0; j < n; j++)
            y[(ptrdiff_t)j * sy] = (T)((double)x[(ptrdiff_t)j * sx] * rstd
                                       * (double)w[(ptrdiff_t)j * sw]);
    else
        for (size_t j = 0; j < n; j++)
            y[(ptrdiff_t)j * sy] = (T)((double)x[(ptrdiff_t)j * sx] * rstd);
}

static void FN(rms_fwd)(void *ctx, size_t r0, size_t r1, double *acc)
{
    (void)acc;
    const attn_rms *p = ctx;
    int unit = p->x.s1 == 1 && p->y.s1 == 1
               && (!p->weight.data || p->weight.s1 == 1);
    for (size_t r = r0; r < r1; r++) {
        if (unit)
            FN(rms_fwd_row)(p, r, 1);
        else
            FN(rms_fwd_row)(p, r, 0);
    }
}

/* backward, one row (acc: the dweight partial sums or NULL):
 *   xhat = x rstd,  g = dy [* weight],  dx = rstd (g - xhat mean(g xhat))
 *   acc_j += dy_j xhat_j                                                  */
static inline RMS_INLINE void FN(rms_bwd_row)(const attn_rms_grad *p,
                                              size_t r, double *acc,
                                              int unit)
{
    const size_t n = p->n;
    const ptrdiff_t sx = unit ? 1 : p->x.s1, sdy = unit ? 1 : p->dy.s1,
                    sdx = unit ? 1 : p->dx.s1, sw = unit ? 1 : p->weight.s1;
    const T *x = (const T *)p->x.data + ROW(p->x, r);
    const T *dy = (const T *)p->dy.data + ROW(p->dy, r);
    const T *w = p->weight.data;
    T *dx = (T *)p->dx.data + ROW(p->dx, r);
    double rstd = FN(rms_rstd)(x, sx, n, p->eps);
    double a[8] = {0};
    LN_LANES(n, {
        double xh = (double)x[(ptrdiff_t)j * sx] * rstd;
        double d = (double)dy[(ptrdiff_t)j * sdy];
        a[l] += (w ? d * (double)w[(ptrdiff_t)j * sw] : d) * xh;
        if (acc)
            acc[j] += d * xh;
    });
    double mgx = attn__lanes_total(a) / (double)n;
    for (size_t j = 0; j < n; j++) {
        double xh = (double)x[(ptrdiff_t)j * sx] * rstd;
        double d = (double)dy[(ptrdiff_t)j * sdy];
        double g = w ? d * (double)w[(ptrdiff_t)j * sw] : d;
        dx[(ptrdiff_t)j * sdx] = (T)(rstd * (g - xh * mgx));
    }
}

static void FN(rms_bwd)(void *ctx, size_t r0, size_t r1, double *acc)
{
    const attn_rms_grad *p = ctx;
    int unit = p->dx.s1 == 1 && p->dy.s1 == 1 && p->x.s1 == 1
               && (!p->weight.data || p->weight.s1 == 1);
    for (size_t r = r0; r < r1; r++) {
        if (unit)
            FN(rms_bwd_row)(p, r, acc, 1);
        else
            FN(rms_bwd_row)(p, r, acc, 0);
    }
}

#undef FN
#undef CAT
#undef CAT2
#undef T
#undef SFX
