/*
 * layer/rms_body.h -- RMS normalisation's per-row code, written once over
 * the element type. rms.c includes it twice (T float / SFX f32, then
 * double / f64), defining rms_fwd_<SFX> and rms_bwd_<SFX>.
 *
 * Rows come unit-stride in T from the storage layer (rows/rows.h). The
 * mean of squares is summed in double in rows/lanes.h's fixed order, so
 * the backward pass recomputes exactly the forward pass's rstd.
 */
#define CAT2(a, b) a##_##b
#define CAT(a, b) CAT2(a, b)
#define FN(name) CAT(name, SFX)

/* 1 / sqrt(sum_j x_j^2 / n + eps)                                        */
static double FN(rms_rstd)(const T *x, size_t n, double eps)
{
    double a[8] = {0};
    LN_LANES(n, j, l, {
        double v = (double)x[j];
        a[l] += v * v;
    });
    return 1.0 / sqrt(attn__lanes_total(a) / (double)n + eps);
}

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
        const double rstd = FN(rms_rstd)(x, n, p->eps);
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
        const double rstd = FN(rms_rstd)(x, n, p->eps);
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
