/*
 * attention/decode_tile.h -- the split-K decode kernel, written once.
 *
 * NOT a normal header: a template included once per (instruction set,
 * element type) by decode_portable.c, decode_avx2.c and decode_avx512.c,
 * after attention/vec_<isa>.h has defined T, VT, W, SFX, ATTR and the
 * vector primitives (VZERO VSET1 VLOADU VSTOREU VFMA VMUL VADD VSUB VMAX
 * VEXP VTANH VRSUM), and the including file
 *
 *   DK_NV   value vectors kept in registers by the P V pass
 *
 * Work item (b, c): keys j0 = c*CK .. j0+nk-1 of batch item b, and for
 * every query row r < L (decode.h):
 *   1. s_j = the score of attn.h: scale * (q_r . k_j), softcap, + bias,
 *      - ALiBi; -inf where the mask forbids; keys outside [lo, hi) (the
 *      first and last key of the chunk causality, the window and the mask
 *      leave visible) are not computed at all. Dot products run along
 *      E, one key at a time, in one accumulator vector whose lanes VRSUM
 *      sums, the E % W tail in scalar; the L rows go together (each
 *      vector of K loaded once), over the union of their keys.
 *   2. m = max_j s_j, p_j = exp(s_j - m), l = sum_j p_j        (vectors)
 *   3. out_c = (sum over j with p_j != 0 of p_j V_j) / l, DK_NV value
 *      vectors at a time in registers; lse_c = m + log(l) (double).
 * K and V rows are read in place (copied only when a row is strided). A
 * row that sees no key of the chunk gets lse_c = -inf (NaN if one of its
 * scores is NaN) and its out_c is never read: merge.c skips weight 0.
 *
 * Every score is one fixed sequence of operations, whatever chunk
 * position computes it, so the weights pass (which recomputes the
 * scores) sees exactly the scores of the forward pass.
 */

#include <math.h>

#include "attention/variants.h"

#define TI static ATTN_INLINE ATTR
#define TF static ATTR

#define DBOFF_(m, b) ((m).boff ? (m).boff[(b)] : (ptrdiff_t)0)

/* ---------------------------------------------------------------------- */
/* 1. scores                                                               */
/* ---------------------------------------------------------------------- */

/* s[r * sr + j] = q_r . k_j for the NR query rows q_r = q + r E and the
 * keys j < nk (row stride ks), one key after the other, each row of K
 * read front to back and each vector of it loaded once for all NR rows:
 * a long cache then streams from DRAM in address order (reading 4-8 key
 * rows side by side, a vector of each in turn, halved what the hardware
 * prefetchers gave one thread: 10-14 GB/s against 26-27 GB/s on an AMD
 * EPYC, (1, 1, 1, 128), S = 65536). Each (row, key) pair gets the same
 * operations whatever NR is: one accumulator vector along E, VRSUM, the
 * E % W tail in scalar.                                                 */
TI void SFX(dk_dots_rows)(const int NR, T *s, size_t sr, const T *q,
                          const T *k, ptrdiff_t ks, size_t E, size_t nk)
{
    for (size_t j = 0; j < nk; j++, k += ks) {
        VT acc[ATTN_DECODE_MAX_L];
        for (int r = 0; r < NR; r++)
            acc[r] = VZERO();
        size_t e = 0;
        for (; e + W <= E; e += W) {
            const VT kv = VLOADU(k + e);
            for (int r = 0; r < NR; r++)
                acc[r] = VFMA(kv, VLOADU(q + (size_t)r * E + e), acc[r]);
        }
        for (int r = 0; r < NR; r++) {
            const T *q_r = q + (size_t)r * E;
            T t = VRSUM(acc[r]);
            for (size_t x = e; x < E; x++)
                t += q_r[x] * k[x];
            s[(size_t)r * sr + j] = t;
        }
    }
}

/* s[j] = q . k_j for j < nk                                              */
TF void SFX(dk_dots)(T *s, const T *q, const T *k, ptrdiff_t ks, size_t E,
                     size_t nk)
{
    SFX(dk_dots_rows)(1, s, 0, q, k, ks, E, nk);
}

/* dk_dots_rows for nr = 1 .. ATTN_DECODE_MAX_L rows                      */
TF void SFX(dk_dots_nr)(int nr, T *s, size_t sr, const T *q, const T *k,
                        ptrdiff_t ks, size_t E, size_t nk)
{
    switch (nr) {
    case 1:
        SFX(dk_dots_rows)(1, s, sr, q, k, ks, E, nk);
        break;
    case 2:
        SFX(dk_dots_rows)(2, s, sr, q, k, ks, E, nk);
        break;
    case 3:
        SFX(dk_dots_rows)(3, s, sr, q, k, ks, E, nk);
        break;
    default:
        SFX(dk_dots_rows)(4, s, sr, q, k, ks, E, nk);
        break;
    }
}

/* s_j = cap * tanh(s_j / cap), VTANH on every key (the tail through a
 * padded vector: a key's score never depends on its place in the row)  */
TF void SFX(dk_softcap)(T *s, size_t n, T cap)
{
    const VT vc = VSET1(cap), vic = VSET1((T)1 / cap);
    size_t j = 0;
    for (; j + W <= n; j += W)
        VSTOREU(s + j, VMUL(vc, VTANH(VMUL(VLOADU(s + j), vic))));
    if (j < n) {
        T tmp[W];
        for (size_t x = 0; x < (size_t)W; x++)
            tmp[x] = j + x < n ? s[j + x] : (T)0;
        VSTOREU(tmp, VMUL(vc, VTANH(VMUL(VLOADU(tmp), vic))));
        for (size_t x = 0; j + x < n; x++)
            s[j + x] = tmp[x];
    }
}

/* s_j -= slope * |d - j|, d = the row's key position - the first key    */
TF void SFX(dk_alibi)(T *s, size_t n, T slope, ptrdiff_t d)
{
    for (size_t j = 0; j < n; j++) {
        const ptrdiff_t x = d - (ptrdiff_t)j;
        s[j] -= slope * (T)(x < 0 ? -x : x);
    }
}

/* raw dots of keys j0.. -> scores of row i (attn.h's order): * scale,
 * softcap, + bias, - ALiBi slope * |i' - j|, mask -> -inf                */
TI void SFX(dk_finish)(const attn_dplan *dp, T *s, size_t b, size_t i,
                       size_t j0, size_t n)
{
    const attn_problem *p = dp->p;
    const T scale = (T)p->scale;
    for (size_t j = 0; j < n; j++)
        s[j] *= scale;
    if (p->softcap > 0)
        SFX(dk_softcap)(s, n, (T)p->softcap);
    if (p->bias.data) {
        const T *row = (const T *)p->bias.data + DBOFF_(p->bias, b)
                       + (ptrdiff_t)i * p->bias.s0
                       + (ptrdiff_t)j0 * p->bias.s1;
        for (size_t j = 0; j < n; j++)
            s[j] += row[(ptrdiff_t)j * p->bias.s1];
    }
    if (p->alibi.data)
        SFX(dk_alibi)(s, n, (T)attn__var_slope(p, b),
                      (ptrdiff_t)i + dp->qpos - (ptrdiff_t)j0);
    if (p->mask.data) {
        const uint8_t *row = (const uint8_t *)p->mask.data
                             + DBOFF_(p->mask, b) + (ptrdiff_t)i * p->mask.s0
                             + (ptrdiff_t)j0 * p->mask.s1;
        for (size_t j = 0; j < n; j++)
            s[j] = row[(ptrdiff_t)j * p->mask.s1] ? s[j] : (T)-INFINITY;
    }
}

/* keys [*lo, *hi) of the chunk row i may see at all: causality and the
 * window (variants.h), then masked keys at either end trimmed off       */
TI void SFX(dk_range)(const attn_dplan *dp, size_t b, size_t i, size_t j0,
                      size_t nk, size_t *lo, size_t *hi)
{
    const attn_problem *p = dp->p;
    size_t l = 0, h = nk;
    if (attn__var_limits_keys(p)) {
        size_t kl, kh;
        attn__var_keys(p, (ptrdiff_t)i + dp->qpos, &kl, &kh);
        l = kl > j0 ? kl - j0 : 0;
        h = kh <= j0 ? 0 : (kh - j0 < nk ? kh - j0 : nk);
        if (l > h)
            l = h;
    }
    if (p->mask.data && h > l) {
        const ptrdiff_t s1 = p->mask.s1;
        const uint8_t *row = (const uint8_t *)p->mask.data
                             + DBOFF_(p->mask, b) + (ptrdiff_t)i * p->mask.s0
                             + (ptrdiff_t)j0 * s1;
        while (l < h && !row[(ptrdiff_t)l * s1])
            l++;
        while (h > l && !row[(ptrdiff_t)(h - 1) * s1])
            h--;
    }
    *lo = l;
    *hi = h;
}

/* ---------------------------------------------------------------------- */
/* 3. o = inv * sum over j with p_j != 0 of p_j V_j                        */
/* ---------------------------------------------------------------------- */
TI void SFX(dk_pv_group)(const int NV, T *o, const T *pr, const T *v,
                         ptrdiff_t vs, size_t n, VT vinv)
{
    VT acc[DK_NV];
    for (int c = 0; c < NV; c++)
        acc[c] = VZERO();
    const T *v_j = v;
    for (size_t j = 0; j < n; j++, v_j += vs) {
        if (pr[j] == 0)
            continue;
        const VT pb = VSET1(pr[j]);
        for (int c = 0; c < NV; c++)
            acc[c] = VFMA(pb, VLOADU(v_j + (size_t)c * W), acc[c]);
    }
    for (int c = 0; c < NV; c++)
        VSTOREU(o + (size_t)c * W, VMUL(acc[c], vinv));
}

/* value columns in groups of DK_NV vectors, then one group of the rest
 * (one pass over the keys each); every column sums its keys in order    */
TF void SFX(dk_pv)(T *o, const T *pr, const T *v, ptrdiff_t vs, size_t n,
                   size_t Ev, T inv)
{
    const VT vinv = VSET1(inv);
    size_t c = 0;
    for (; c + DK_NV * W <= Ev; c += DK_NV * W)
        SFX(dk_pv_group)(DK_NV, o + c, pr, v + c, vs, n, vinv);
    switch ((Ev - c) / W) {
#define PV_REST_(nv)                                                           \
    case nv:                                                                   \
        SFX(dk_pv_group)((nv) < DK_NV ? (nv) : 1, o + c, pr, v + c, vs, n,     \
                         vinv);                                                \
        break;
        PV_REST_(1) PV_REST_(2) PV_REST_(3) PV_REST_(4) PV_REST_(5)
        PV_REST_(6) PV_REST_(7)
#undef PV_REST_
    default:
        break;
    }
    c += (Ev - c) / W * W;
    for (; c < Ev; c++) {
        T a = 0;
        for (size_t j = 0; j < n; j++)
            if (pr[j] != 0)
                a += pr[j] * v[(ptrdiff_t)j * vs + (ptrdiff_t)c];
        o[c] = a * inv;
    }
}

/* ---------------------------------------------------------------------- */
/* operands of the item                                                    */
/* ---------------------------------------------------------------------- */

/* the L query rows of batch item b, contiguous (L x E)                   */
TI void SFX(dk_pack_q)(const attn_problem *p, T *q, size_t b)
{
    const T *q_b = (const T *)p->q.data + DBOFF_(p->q, b);
    for (size_t r = 0; r < p->L; r++)
        for (size_t e = 0; e < p->E; e++)
            q[r * p->E + e] = q_b[(ptrdiff_t)r * p->q.s0
                                  + (ptrdiff_t)e * p->q.s1];
}

/* rows j0 .. j0+nk-1 of m (cols columns) in place, or copied into buf
 * when pack; *rs = the row stride of the result                          */
TI const T *SFX(dk_rows)(attn_mat m, size_t b, size_t j0, size_t nk,
                         size_t cols, int pack, T *buf, ptrdiff_t *rs)
{
    const T *m_j0 = (const T *)m.data + DBOFF_(m, b) + (ptrdiff_t)j0 * m.s0;
    if (!pack) {
        *rs = m.s0;
        return m_j0;
    }
    for (size_t j = 0; j < nk; j++)
        for (size_t c = 0; c < cols; c++)
            buf[j * cols + c] = m_j0[(ptrdiff_t)j * m.s0
                                     + (ptrdiff_t)c * m.s1];
    *rs = (ptrdiff_t)cols;
    return buf;
}

/* ---------------------------------------------------------------------- */
/* one row of the item: steps 1 (its raw dot products with keys lo .. hi-1
 * of the chunk are in s, which has room for W - 1 more; v = V row lo) to
 * 3; returns lse_c, writes out_c to o                                     */
/* ---------------------------------------------------------------------- */
TF double SFX(dk_row)(const attn_dplan *dp, T *s, size_t b, size_t r,
                      size_t j0, size_t lo, size_t hi, const T *v,
                      ptrdiff_t vs, T *o)
{
    const attn_problem *p = dp->p;
    const size_t n = hi - lo, np = (n + W - 1) / W * W;
    SFX(dk_finish)(dp, s, b, r, j0 + lo, n);
    for (size_t j = n; j < np; j++)
        s[j] = (T)-INFINITY;
    /* 2. max (a NaN score makes l NaN below), exp, sum */
    VT mx = VSET1((T)-INFINITY);
    for (size_t j = 0; j < np; j += W)
        mx = VMAX(mx, VLOADU(s + j));
    T lanes[W];
    VSTOREU(lanes, mx);
    T m = lanes[0];
    for (int x = 1; x < W; x++)
        m = lanes[x] > m ? lanes[x] : m;
    if (m == (T)-INFINITY) {
        for (size_t j = 0; j < n; j++)
            if (s[j] != s[j])
                return (double)NAN;
        return -INFINITY;
    }
    const VT vm = VSET1(m);
    VT sum = VZERO();
    for (size_t j = 0; j < np; j += W) {
        const VT pj = VEXP(VSUB(VLOADU(s + j), vm));
        VSTOREU(s + j, pj);
        sum = VADD(sum, pj);
    }
    const T l = VRSUM(sum);
    /* 3. */
    SFX(dk_pv)(o, s, v, vs, n, p->Ev, (T)1 / l);
    return (double)m + log((double)l);
}

/* ---------------------------------------------------------------------- */
/* work item (b, c): the partials of every row                             */
/* ---------------------------------------------------------------------- */
TF void SFX(dchunk)(const attn_dplan *dp, void *scratch, size_t b, size_t c)
{
    const attn_problem *p = dp->p;
    const size_t L = p->L, Ev = p->Ev, j0 = (dp->c0 + c) * dp->CK;
    const size_t nk = p->S - j0 < dp->CK ? p->S - j0 : dp->CK;
    const size_t bc = (b - dp->b0) * dp->nch + c;
    char *sb = (char *)scratch;
    T *po = (T *)dp->part_out + bc * L * Ev;
    double *pl = dp->part_lse + bc * L;
    const T *kblk = NULL, *vblk = NULL;
    ptrdiff_t ks = 0, vs = 0;
    SFX(dk_pack_q)(p, (T *)(sb + dp->off_q), b);
    /* the keys each row may see; their union [ulo, uhi) */
    size_t lo[ATTN_DECODE_MAX_L], hi[ATTN_DECODE_MAX_L];
    size_t ulo = nk, uhi = 0;
    for (size_t r = 0; r < L; r++) {
        SFX(dk_range)(dp, b, r, j0, nk, &lo[r], &hi[r]);
        if (lo[r] < hi[r]) {
            ulo = lo[r] < ulo ? lo[r] : ulo;
            uhi = hi[r] > uhi ? hi[r] : uhi;
        }
    }
    if (ulo < uhi) { /* all L rows' dot products with the union's keys */
        kblk = SFX(dk_rows)(p->k, b, j0, nk, p->E, dp->pack_k,
                            (T *)(sb + dp->off_kp), &ks);
        vblk = SFX(dk_rows)(p->v, b, j0, nk, Ev, dp->pack_v,
                            (T *)(sb + dp->off_vp), &vs);
        SFX(dk_dots_nr)((int)L, (T *)(sb + dp->off_s), dp->SR,
                        (const T *)(sb + dp->off_q),
                        kblk + (ptrdiff_t)ulo * ks, ks, p->E, uhi - ulo);
    }
    for (size_t r = 0; r < L; r++) {
        if (lo[r] >= hi[r]) {
            pl[r] = -INFINITY;
            continue;
        }
        T *s_r = (T *)(sb + dp->off_s) + r * dp->SR + (lo[r] - ulo);
        pl[r] = SFX(dk_row)(dp, s_r, b, r, j0, lo[r], hi[r],
                            vblk + (ptrdiff_t)lo[r] * vs, vs, po + r * Ev);
    }
}

/* ---------------------------------------------------------------------- */
/* weights pass of item (b, c), after the merge: raw scores of every key,  */
/* weights exp(s - lse) (in double) of the row's visible keys, 0 (NaN when  */
/* lse is NaN) elsewhere, dp->fm_weight in fully masked rows.               */
/* ---------------------------------------------------------------------- */
TF void SFX(dweights)(const attn_dplan *dp, void *scratch, size_t b,
                      size_t c)
{
    const attn_problem *p = dp->p;
    const size_t E = p->E, j0 = (dp->c0 + c) * dp->CK;
    const size_t nk = p->S - j0 < dp->CK ? p->S - j0 : dp->CK;
    char *sb = (char *)scratch;
    T *s = (T *)(sb + dp->off_s);
    const T *qs = (const T *)(sb + dp->off_q);
    ptrdiff_t ks;
    const T *kblk = SFX(dk_rows)(p->k, b, j0, nk, E, dp->pack_k,
                                 (T *)(sb + dp->off_kp), &ks);
    SFX(dk_pack_q)(p, (T *)(sb + dp->off_q), b);
    for (size_t r = 0; r < p->L; r++) {
        const double lse = dp->lse[(b - dp->b0) * p->L + r];
        const attn_mat sc = p->scores, wm = p->weights;
        size_t lo = 0, hi = 0;
        if (sc.data) {
            SFX(dk_dots)(s, qs + r * E, kblk, ks, E, nk);
            T *row = (T *)sc.data + DBOFF_(sc, b) + (ptrdiff_t)r * sc.s0
                     + (ptrdiff_t)j0 * sc.s1;
            for (size_t j = 0; j < nk; j++)
                row[(ptrdiff_t)j * sc.s1] = s[j];
        }
        if (!wm.data)
            continue;
        T *w = (T *)wm.data + DBOFF_(wm, b) + (ptrdiff_t)r * wm.s0
               + (ptrdiff_t)j0 * wm.s1;
        if (lse == -INFINITY) {
            for (size_t j = 0; j < nk; j++)
                w[(ptrdiff_t)j * wm.s1] = (T)dp->fm_weight;
            continue;
        }
        SFX(dk_range)(dp, b, r, j0, nk, &lo, &hi);
        T *s_lo = sc.data ? s + lo : s;
        if (!sc.data)
            SFX(dk_dots)(s, qs + r * E, kblk + (ptrdiff_t)lo * ks, ks, E,
                         hi - lo);
        SFX(dk_finish)(dp, s_lo, b, r, j0 + lo, hi - lo);
        const T outside = lse != lse ? (T)NAN : (T)0;
        for (size_t j = 0; j < nk; j++)
            w[(ptrdiff_t)j * wm.s1] =
                j < lo || j >= hi ? outside
                                  : (T)exp((double)s_lo[j - lo] - lse);
    }
}

#undef TI
#undef TF
#undef DBOFF_

/* the template's parameters, defined by the including files */
#include "attention/vec_undef.h"
