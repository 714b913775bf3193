/*
 * tests/c/math_arrays_body.h -- included after one simd/vec_<set>.h and
 * simd/math.h (tests/c/math_arrays.c, math_soft.c): the array functions
 * of tests/c/math_arrays.h for that set, and its math_set table named
 * MA_SET. Not include-guarded.
 */
#define MA_UNARY(fn)                                                           \
    static ATTR void SFX(ma_##fn)(T *y, const T *x, size_t n)                  \
    {                                                                          \
        size_t i = 0;                                                          \
        for (; i + W <= n; i += W)                                             \
            VSTOREU(y + i, SFX(fn)(VLOADU(x + i)));                            \
        if (i < n) {                                                           \
            T a[W], b[W];                                                      \
            for (int k = 0; k < W; k++)                                        \
                a[k] = i + k < n ? x[i + k] : 0;                               \
            VSTOREU(b, SFX(fn)(VLOADU(a)));                                    \
            memcpy(y + i, b, (n - i) * sizeof(T));                             \
        }                                                                      \
    }
MA_UNARY(exp)
MA_UNARY(exp_neg)
MA_UNARY(tanh)
MA_UNARY(sigmoid)
MA_UNARY(phi)
MA_UNARY(npdf)
MA_UNARY(log)
#undef MA_UNARY

#if SIMD_T_F64
static ATTR void SFX(ma_pow)(T *r, const T *x, const T *y, size_t n)
{
    size_t i = 0;
    for (; i + W <= n; i += W)
        VSTOREU(r + i, SFX(pow)(VLOADU(x + i), VLOADU(y + i)));
    if (i < n) {
        T a[W], b[W], c[W];
        for (int k = 0; k < W; k++) {
            a[k] = i + k < n ? x[i + k] : 1;
            b[k] = i + k < n ? y[i + k] : 1;
        }
        VSTOREU(c, SFX(pow)(VLOADU(a), VLOADU(b)));
        memcpy(r + i, c, (n - i) * sizeof(T));
    }
}
static ATTR void SFX(ma_sincos)(T *s, T *c, const T *x, size_t n)
{
    size_t i = 0;
    VT vs, vc;
    for (; i + W <= n; i += W) {
        SFX(sincos)(VLOADU(x + i), &vs, &vc);
        VSTOREU(s + i, vs);
        VSTOREU(c + i, vc);
    }
    if (i < n) {
        T a[W], b[W], d[W];
        for (int k = 0; k < W; k++)
            a[k] = i + k < n ? x[i + k] : 0;
        SFX(sincos)(VLOADU(a), &vs, &vc);
        VSTOREU(b, vs);
        VSTOREU(d, vc);
        memcpy(s + i, b, (n - i) * sizeof(T));
        memcpy(c + i, d, (n - i) * sizeof(T));
    }
}
#endif
