/*
 * elementwise/softmax_tmpl.h -- the softmax of one unit-stride row,
 * written once over the SIMD primitives and simd/math.h (a template:
 * isa/<set>.c includes it per element type; defines row_softmax<SFX>,
 * e.g. row_softmax_avx512_f32).
 *
 *   1. m = max_j x_j, or NaN if some x_j is NaN (as np.max)
 *   2. e_j = exp(x_j - m) into y; the sum in SM_PARTS partial sums, the
 *      element j in partial j % SM_PARTS, added in a fixed tree; a row
 *      longer than SM_CHUNK elements: each SM_CHUNK elements' tree sum
 *      added in double, rounded once at the end (float partial sums of
 *      a long row lose digits: 2^29 equal elements summed to 2^25)
 *   3. y_j = e_j / sum
 * SM_PARTS is a multiple of every vector width, and SM_CHUNK of
 * SM_PARTS, so the partial sums, and the bits, are the same on every
 * set. NaN and +-inf give what exp(x - max(x)) / sum(exp(x - max(x)))
 * gives in NumPy.
 */
#define SM_PARTS 16
#define SM_CHUNK ((size_t)1 << 16)

/* the SM_PARTS partial sums of part, added in the fixed tree            */
static ATTR T SFX(sm_tree)(const VT *part)
{
    T s[SM_PARTS];
    for (size_t q = 0; q < (size_t)(SM_PARTS / W); q++)
        VSTOREU(s + q * W, part[q]);
    for (size_t w = SM_PARTS / 2; w >= 1; w /= 2)
        for (size_t i = 0; i < w; i++)
            s[i] = s[i] + s[i + w];
    return s[0];
}

static ATTR void SFX(row_softmax)(size_t n, void *y_, const void *x_)
{
    T *y = y_;
    const T *x = x_;
    T lane[W];
    /* 1. the max of the lanes' maxima; NaN tracked apart (VMAX keeps
     * its second operand where either is NaN)                          */
    VT mx = VSET1((T)-INFINITY);
    VT nan = VZERO();
    for (size_t j = 0; j < n; j += W) {
        const VT v = j + W <= n ? VLOADU(x + j)
                                : VSEL(VMASKN(n - j), VLOADN(x + j, n - j),
                                       VSET1((T)-INFINITY));
        mx = VMAX(v, mx);
        nan = VSEL(VEQ(v, v), nan, VSET1((T)1));
    }
    VSTOREU(lane, mx);
    T m = lane[0];
    for (size_t i = 1; i < (size_t)W; i++)
        m = lane[i] > m ? lane[i] : m;
    if (VRSUM(nan) != 0)
        m = (T)NAN;
    /* 2. exponentials and the partial sums                              */
    VT part[SM_PARTS / W];
    for (size_t p = 0; p < (size_t)(SM_PARTS / W); p++)
        part[p] = VZERO();
    const VT vm = VSET1(m);
    size_t p = 0;
    double chunks = 0; /* the whole chunks' sums of a long row */
    int long_row = 0;
    for (size_t j = 0; j < n; j += W) {
        VT e;
        if (j + W <= n) {
            e = VEXP(VSUB(VLOADU(x + j), vm));
            VSTOREU(y + j, e);
        } else {
            e = VEXP(VSUB(VLOADN(x + j, n - j), vm));
            VSTOREN(y + j, n - j, e);
            e = VSEL(VMASKN(n - j), e, VZERO()); /* the padding adds +0 */
        }
        part[p] = VADD(part[p], e);
        p = p + 1 == (size_t)(SM_PARTS / W) ? 0 : p + 1;
        if ((j + W) % SM_CHUNK == 0 && j + W < n) { /* p is 0 again */
            chunks += (double)SFX(sm_tree)(part);
            for (size_t q = 0; q < (size_t)(SM_PARTS / W); q++)
                part[q] = VZERO();
            long_row = 1;
        }
    }
    const T last = SFX(sm_tree)(part);
    /* 3. */
    const VT vs = VSET1(long_row ? (T)(chunks + (double)last) : last);
    for (size_t j = 0; j < n; j += W) {
        if (j + W <= n)
            VSTOREU(y + j, VDIV(VLOADU(y + j), vs));
        else
            VSTOREN(y + j, n - j, VDIV(VLOADN(y + j, n - j), vs));
    }
}

#undef SM_PARTS
#undef SM_CHUNK
