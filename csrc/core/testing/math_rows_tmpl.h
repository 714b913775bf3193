/*
 * testing/math_rows_tmpl.h -- simd/math.h's functions over rows, once per
 * set and element type: what the C tests (tests/c/test_math.c,
 * test_core.c) compare lane by lane, each set against the scalar rule,
 * reached through the set's table (isa/kernels.h: attn_kernels.math), so
 * the tests iterate over runtime/isa.h's list and need no code of their
 * own per set. A template: included after simd/vec_<set>.h and
 * simd/math.h (isa/<set>.c; tests/c/math_arrays.c, math_soft.c for the
 * scalar and soft-fma builds); defines the table math_rows<SFX>. Not
 * include-guarded.
 *
 * Only in builds with ATTN_MATH_ROWS (the C tests' build,
 * tools/c_tests.sh, and the sanitized extension whose objects they link):
 * the extension leaves the rows out (about 190 KB of code on x86-64).
 */
#if ATTN_MATH_ROWS
#include <string.h>

/* y = f(x), W lanes at a time; a short tail through a padded buffer    */
#define MR_UNARY_(fn)                                                          \
    static ATTR void SFX(mrow_##fn)(void *yv, const void *xv, size_t n)        \
    {                                                                          \
        T *y = yv;                                                             \
        const T *x = xv;                                                       \
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
MR_UNARY_(exp)
MR_UNARY_(exp_neg)
MR_UNARY_(tanh)
MR_UNARY_(sigmoid)
MR_UNARY_(phi)
MR_UNARY_(npdf)
MR_UNARY_(log)
#undef MR_UNARY_

#if SIMD_T_F64
static ATTR void SFX(mrow_pow)(void *rv, const void *xv, const void *yv,
                               size_t n)
{
    T *r = rv;
    const T *x = xv, *y = yv;
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
static ATTR void SFX(mrow_sincos)(void *sv, void *cv, const void *xv,
                                  size_t n)
{
    T *s = sv, *c = cv;
    const T *x = xv;
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

static const attn_math_rows SFX(math_rows) = {
    {SFX(mrow_exp), SFX(mrow_exp_neg), SFX(mrow_tanh), SFX(mrow_sigmoid),
     SFX(mrow_phi), SFX(mrow_npdf), SFX(mrow_log)},
#if SIMD_T_F64
    SFX(mrow_pow),
    SFX(mrow_sincos),
#else
    NULL,
    NULL,
#endif
};
#endif /* ATTN_MATH_ROWS */
