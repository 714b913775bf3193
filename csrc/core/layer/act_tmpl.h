/*
 * layer/act_tmpl.h -- the activations on unit-stride rows, written once
 * over the SIMD primitives and simd/math.h (a template: isa/<set>.c
 * includes it per element type; it defines act_fwd<SFX>, act_bwd<SFX>,
 * glu_fwd<SFX>, glu_bwd<SFX>, e.g. act_fwd_avx2_f32, glu_bwd_port_f64).
 * The activations' formulas are layer/acts.h's list, expanded here.
 *
 * Every element is the same fixed sequence of operations, W at a time,
 * the last n % W in zero-padded lanes (VLOADN / VSTOREN): the same bits
 * on every set and for any n, as the rule asks (simd/math.h).
 *
 *   h = x + b (b absent: x)
 *   relu       h < 0 ? +0 : h (NaN stays NaN)          ' : h > 0 ? 1 : 0
 *   gelu       h Phi(h)                                ' : Phi(h) + h pdf(h)
 *   gelu_tanh  h s, s = sigmoid(2 z) = (1 + tanh z) / 2 = 1 / (1 + e^-2z),
 *              z = beta (h + kappa h^3), as h / (1 + e^-2z) (h e^2z / (1 +
 *              e^2z) for z < 0: e^-2|z| <= 1 only)    ' : s + 2 h s (1 - s) z'
 *   identity   h                                       ' : 1
 *   silu(g)    g sigmoid(g); swiglu: silu(g) u;  dsilu = s (1 + g (1 - s))
 * sigmoid(2 z), not 1 + tanh z: no cancellation for negative h.
 */
#define GELU_BETA_ 0.79788456080286535588  /* sqrt(2 / pi)             */
#define GELU_KAPPA_ 0.044715

#define AT_ static ATTN_INLINE ATTR

/* gelu_tanh of W lanes: h / (1 + e^-2z), e^-2|z| <= 1 only            */
AT_ VT SFX(gelu_tanh_v)(VT h)
{
    const VT z = VMUL(VSET1((T)GELU_BETA_),
                      VFMA(VMUL(VSET1((T)GELU_KAPPA_), h), VMUL(h, h), h));
    const VT e = SFX(exp_neg)(VMUL(VSET1((T)-2), VABS(z)));
    const VT num = VSEL(VLT(z, VZERO()), VMUL(h, e), h);
    return VDIV(num, VADD(VSET1((T)1), e));
}

/* its derivative                                                        */
AT_ VT SFX(dgelu_tanh_v)(VT h)
{
    const VT one = VSET1((T)1);
    const VT h2 = VMUL(h, h);
    const VT z = VMUL(VSET1((T)GELU_BETA_),
                      VFMA(VMUL(VSET1((T)GELU_KAPPA_), h), h2, h));
    const VT dz = VMUL(VSET1((T)GELU_BETA_),
                       VFMA(VSET1((T)(3 * GELU_KAPPA_)), h2, one));
    /* s and s (1 - s) = e / (1 + e)^2 from e = e^-2|z| <= 1: no 1 - s
     * cancels where s is near 1                                        */
    const VT e = SFX(exp_neg)(VMUL(VSET1((T)-2), VABS(z)));
    const VT q = VDIV(one, VADD(one, e));
    const VT s = VSEL(VLT(z, VZERO()), VMUL(e, q), q);
    const VT t = VMUL(VMUL(VADD(h, h), VMUL(VMUL(e, q), q)), dz);
    return VADD(s, t);
}

/* the activation a of W lanes (layer/acts.h's y); dact: the gradient
 * from d (its dx). An unknown a: the identity (attn_bias_act refuses
 * it before).                                                          */
#define ACT_Y_(id, name, cost, y, dx)                                       \
    case ATTN_ACT_##id:                                                     \
        return y;
#define ACT_DX_(id, name, cost, y, dx)                                      \
    case ATTN_ACT_##id:                                                     \
        return dx;

AT_ VT SFX(act_v)(attn_act a, VT h)
{
    const VT one = VSET1((T)1);
    (void)one;
    switch (a) {
        ATTN_ACT_LIST(ACT_Y_)
    default:
        return h;
    }
}

AT_ VT SFX(dact_v)(attn_act a, VT h, VT d)
{
    const VT one = VSET1((T)1);
    switch (a) {
        ATTN_ACT_LIST(ACT_DX_)
    default:
        return VMUL(d, one);
    }
}
#undef ACT_Y_
#undef ACT_DX_

/* W lanes of x [+ b] at j; the last n - j < W zero padded (VLOADN)     */
AT_ VT SFX(act_ld)(const T *x, size_t j, size_t n)
{
    return j + W <= n ? VLOADU(x + j) : VLOADN(x + j, n - j);
}

AT_ void SFX(act_st)(T *y, size_t j, size_t n, VT v)
{
    if (j + W <= n)
        VSTOREU(y + j, v);
    else
        VSTOREN(y + j, n - j, v);
}

AT_ VT SFX(act_h)(const T *x, const T *b, size_t j, size_t n)
{
    const VT h = SFX(act_ld)(x, j, n);
    return b ? VADD(h, SFX(act_ld)(b, j, n)) : h;
}

/* y = act(x + b); y may be x (in place)                                  */
static ATTR void SFX(act_fwd)(attn_act a, size_t n, void *y_, const void *x_,
                              const void *b_)
{
    T *y = y_;
    const T *x = x_, *b = b_;
    for (size_t j = 0; j < n; j += W)
        SFX(act_st)(y, j, n, SFX(act_v)(a, SFX(act_h)(x, b, j, n)));
}

/* dx = dy act'(x + b); dx may be dy or x                                 */
static ATTR void SFX(act_bwd)(attn_act a, size_t n, void *dx_,
                              const void *dy_, const void *x_, const void *b_)
{
    T *dx = dx_;
    const T *dy = dy_, *x = x_, *b = b_;
    for (size_t j = 0; j < n; j += W) {
        const VT h = SFX(act_h)(x, b, j, n), d = SFX(act_ld)(dy, j, n);
        SFX(act_st)(dx, j, n, SFX(dact_v)(a, h, d));
    }
}

/* y = silu(g) [* u]; y may be g or u                                    */
static ATTR void SFX(glu_fwd)(size_t n, void *y_, const void *g_,
                              const void *u_)
{
    T *y = y_;
    const T *g = g_, *u = u_;
    for (size_t j = 0; j < n; j += W) {
        const VT gv = SFX(act_ld)(g, j, n);
        VT s = VMUL(gv, SFX(sigmoid)(gv));
        if (u)
            s = VMUL(s, SFX(act_ld)(u, j, n));
        SFX(act_st)(y, j, n, s);
    }
}

/* dg = dy [* u] dsilu(g), du = dy silu(g) (du optional); every input of
 * an element read before its outputs are written (in place)            */
static ATTR void SFX(glu_bwd)(size_t n, void *dg_, void *du_, const void *dy_,
                              const void *g_, const void *u_)
{
    T *dg = dg_, *du = du_;
    const T *dy = dy_, *g = g_, *u = u_;
    const VT one = VSET1((T)1);
    for (size_t j = 0; j < n; j += W) {
        const VT gv = SFX(act_ld)(g, j, n), d = SFX(act_ld)(dy, j, n);
        const VT s = SFX(sigmoid)(gv);
        const VT ds = VMUL(s, VFMA(gv, VSUB(one, s), one));
        const VT du_v = VMUL(d, VMUL(gv, s));
        const VT dg_v = u ? VMUL(VMUL(d, SFX(act_ld)(u, j, n)), ds)
                          : VMUL(d, ds);
        SFX(act_st)(dg, j, n, dg_v);
        if (du)
            SFX(act_st)(du, j, n, du_v);
    }
}

#undef AT_
#undef GELU_BETA_
#undef GELU_KAPPA_
