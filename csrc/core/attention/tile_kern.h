/*
 * attention/tile_kern.h -- the register-blocked micro-kernels of the tile
 * kernel: S^T = K Q^T (qk_*), O = alpha O + P V (pv_*, with a guarded
 * variant for value blocks holding inf/NaN), and the online softmax of one
 * key block (sm_group, softmax_block).
 *
 * Part of the template tile.h (included by it, with its parameters and
 * helper macros defined); bwd_tile.h, instantiated after tile.h in the same
 * file, reuses these functions (dP^T = V dO^T has the shape of S^T).
 */

/* ---------------------------------------------------------------------- */
/* 1. S^T micro-kernel: st[r][v*W + l] = sum_e k[r][e] * qt[e][v*W + l]    */
/*    for r < MR keys and v < NR query vectors, times scale if scaled.     */
/* ---------------------------------------------------------------------- */
TI void SFX(qk_kern)(const int MR, const int NR, T *restrict st, size_t ldst,
                     const T *restrict qt, size_t ldq, const T *k,
                     ptrdiff_t ks, size_t E, VT vscale, int scaled)
{
    VT acc[QK_MR][QK_NR];
    for (int r = 0; r < MR; r++)
        for (int v = 0; v < NR; v++)
            acc[r][v] = VZERO();
    const T *q_e = qt;
    for (size_t e = 0; e < E; e++, q_e += ldq) {
        VT q[QK_NR];
        for (int v = 0; v < NR; v++)
            q[v] = VLOADU(q_e + (size_t)v * W);
        for (int r = 0; r < MR; r++) {
            VT kb = VSET1(k[(ptrdiff_t)r * ks + (ptrdiff_t)e]);
            for (int v = 0; v < NR; v++)
                acc[r][v] = VFMA(kb, q[v], acc[r][v]);
        }
    }
    for (int r = 0; r < MR; r++)
        for (int v = 0; v < NR; v++)
            VSTOREU(st + (size_t)r * ldst + (size_t)v * W,
                    scaled ? VMUL(acc[r][v], vscale) : acc[r][v]);
}

/* all nk keys for NR query vectors: the Q^T columns stay in L1 while the
 * key groups go by                                                      */
TI void SFX(qk_cols)(const int NR, T *st, size_t ldst, const T *qt, size_t ldq,
                     const T *k, ptrdiff_t ks, size_t E, size_t nk, VT vscale,
                     int scaled)
{
    size_t j = 0;
    for (; j + QK_MR <= nk; j += QK_MR)
        SFX(qk_kern)(QK_MR, NR, st + j * ldst, ldst, qt, ldq,
                     k + (ptrdiff_t)j * ks, ks, E, vscale, scaled);
    T *st_j = st + j * ldst;
    const T *k_j = k + (ptrdiff_t)j * ks;
#define QK_TAIL_(n)                                                            \
    case n:                                                                    \
        SFX(qk_kern)(MINZ_(n, QK_MR), NR, st_j, ldst, qt, ldq, k_j, ks, E,     \
                     vscale, scaled);                                          \
        break;
    TAIL_SWITCH_(nk - j, QK_TAIL_)
#undef QK_TAIL_
}

/* st (nk x nqv*W, ld ldst) = K_blk (nk x E, row stride ks) . qt (E x .., ldq) */
TF ATTN_NOCLONE void SFX(qk_block)(T *st, size_t ldst, const T *qt, size_t ldq, size_t nqv,
                      const T *k, ptrdiff_t ks, size_t E, size_t nk, T scale,
                      int scaled)
{
    const VT vs = VSET1(scale);
    size_t v = 0;
    for (; v + QK_NR <= nqv; v += QK_NR)
        SFX(qk_cols)(QK_NR, st + v * W, ldst, qt + v * W, ldq, k, ks, E, nk,
                     vs, scaled);
    for (; v < nqv; v++)
        SFX(qk_cols)(1, st + v * W, ldst, qt + v * W, ldq, k, ks, E, nk, vs,
                     scaled);
}

/* ---------------------------------------------------------------------- */
/* 1'. The same scores for a query block of at most QK_FEW rows (decoding): */
/*    keys in the lanes instead of queries, so a row costs E/W FMAs per key */
/*    rather than E. Each score is still one FMA chain k[e] * q[e] + acc    */
/*    over e = 0..E-1 from 0, times scale: the bits of qk_block. K^T of the */
/*    block (kt, E x round_up(nk, W)) comes from W x W transposes (VTRANS)  */
/*    or, without them, element by element.                                */
/* ---------------------------------------------------------------------- */
#define QK_FEW_G 4 /* key vectors per pass: independent FMA chains */
/* one-row decoding reads K and V rows once, front to back: its kernels
 * ask for the rows this many keys on (one float key block) into L2 as
 * they compute, so that memory streams all along (asked for in a burst
 * as a block starts, the core waited on the burst, then computed with
 * memory idle)                                                          */
#define DEC_AHEAD 48

/* element x of a K block stored as kst (a constant after inlining): as a
 * vector of W at x, or one element; conversion in registers           */
#define KVEC_(k, x, kst)                                                       \
    ((kst) == ATTN_ST_NATIVE ? VLOADU((const T *)(k) + (x))                    \
                             : VLOAD16_((const uint16_t *)(k) + (x), kst))
#define KONE_(k, x, kst)                                                       \
    ((kst) == ATTN_ST_NATIVE ? ((const T *)(k))[x]                             \
                             : (T)attn_load_f32(kst, k, x))

/* row i + DEC_AHEAD of k (below npf) asked into L2, the line of column
 * e, once a line (element size esz)                                    */
TI void SFX(kt_ahead)(const void *k, ptrdiff_t ks, size_t esz, size_t i,
                      size_t e, size_t npf)
{
    if (e * esz % 64 == 0 && i + DEC_AHEAD < npf)
        ATTN_PREFETCH_L2((const char *)k
                         + ((ptrdiff_t)(i + DEC_AHEAD) * ks + (ptrdiff_t)e)
                               * (ptrdiff_t)esz);
}

/* k: nk rows of E elements stored as kst, row stride ks, contiguous rows
 * (or kst native, any rows): 16-bit rows are converted as they are
 * loaded for the transposes, never copied first. Row i + DEC_AHEAD
 * (below npf) is asked into L2 a line at a time as row i is read
 * (without VTRANS: a group's rows at a time).                          */
TI void SFX(k_transpose_st)(T *kt, const void *k, ptrdiff_t ks, size_t E,
                            size_t nk, size_t npf, attn_store kst)
{
    const size_t ldkt = (nk + W - 1) / W * W;
    const size_t esz = kst == ATTN_ST_NATIVE ? sizeof(T) : 2;
    for (size_t g = 0; g < ldkt; g += W) {
        size_t e = 0;
#ifdef VTRANS
        for (; e + W <= E; e += W) {
            VT r[W];
            for (size_t i = 0; i < (size_t)W; i++) {
                SFX(kt_ahead)(k, ks, esz, g + i, e, npf);
                r[i] = g + i < nk
                    ? KVEC_(k, (ptrdiff_t)(g + i) * ks + (ptrdiff_t)e, kst)
                    : VZERO();
            }
            VTRANS(r);
            for (size_t i = 0; i < (size_t)W; i++)
                VSTOREU(kt + (e + i) * ldkt + g, r[i]);
        }
#else
        /* the group's rows ahead at once, so that the loop below stays
         * free of branches */
        for (size_t i = g; i < g + W; i++)
            for (size_t x = 0; x < E; x += 64 / esz)
                SFX(kt_ahead)(k, ks, esz, i, x, npf);
#endif
        for (; e < E; e++)
            for (size_t i = 0; i < (size_t)W; i++)
                kt[e * ldkt + g + i] =
                    g + i < nk
                        ? KONE_(k, (ptrdiff_t)(g + i) * ks + (ptrdiff_t)e, kst)
                        : (T)0;
    }
}

TF void SFX(k_transpose)(T *kt, const void *k, ptrdiff_t ks, size_t E,
                         size_t nk, size_t npf, attn_store kst)
{
    if (kst == ATTN_ST_F16)
        SFX(k_transpose_st)(kt, k, ks, E, nk, npf, ATTN_ST_F16);
    else if (kst == ATTN_ST_BF16)
        SFX(k_transpose_st)(kt, k, ks, E, nk, npf, ATTN_ST_BF16);
    else
        SFX(k_transpose_st)(kt, k, ks, E, nk, npf, ATTN_ST_NATIVE);
}

#include "attention/tile_dec.h"

/* st[j * ldst + r] for rows r < nq of qt (E x .., ld ldq), keys j < nk of
 * k (stored as kst: see k_transpose_st); rows below npf (>= nk) may be
 * asked for ahead                                                      */
TF void SFX(qk_few)(T *st, size_t ldst, const T *qt, size_t ldq, size_t nq,
                    const void *k, ptrdiff_t ks, attn_store kst, size_t E,
                    size_t nk, size_t npf, T scale, T *kt)
{
#if defined(VTRANS) && defined(QK_FEW_REG)
    (void)kt;
    if (nq <= ATTN_QK_FEW) {
        const VT vs = VSET1(scale);
        /* 16-bit K only with float (sdpa.c): no such copies for double */
        if (HALF_VEC_ && kst == ATTN_ST_F16)
            SFX(qk_reg_rows)(nq, st, ldst, qt, ldq, k, ks, ATTN_ST_F16, E, nk,
                             npf, vs);
        else if (HALF_VEC_ && kst == ATTN_ST_BF16)
            SFX(qk_reg_rows)(nq, st, ldst, qt, ldq, k, ks, ATTN_ST_BF16, E,
                             nk, npf, vs);
        else
            SFX(qk_reg_rows)(nq, st, ldst, qt, ldq, k, ks, ATTN_ST_NATIVE, E,
                             nk, npf, vs);
        return;
    }
#endif
    const size_t ldkt = (nk + W - 1) / W * W;
    const VT vs = VSET1(scale);
    SFX(k_transpose)(kt, k, ks, E, nk, npf, kst);
    for (size_t r = 0; r < nq; r++)
        for (size_t g0 = 0; g0 < ldkt; g0 += QK_FEW_G * W) {
            const size_t ng = MINZ_((size_t)QK_FEW_G, (ldkt - g0) / W);
            VT acc[QK_FEW_G];
            for (size_t g = 0; g < ng; g++)
                acc[g] = VZERO();
            const T *kt_e = kt + g0;
            for (size_t e = 0; e < E; e++, kt_e += ldkt) {
                const VT qb = VSET1(qt[e * ldq + r]);
                for (size_t g = 0; g < ng; g++)
                    acc[g] = VFMA(VLOADU(kt_e + g * W), qb, acc[g]);
            }
            for (size_t g = 0; g < ng; g++) {
                T lane[W];
                VSTOREU(lane, VMUL(acc[g], vs));
                const size_t j0 = g0 + g * W;
                for (size_t i = 0; i < (size_t)W && j0 + i < nk; i++)
                    st[(j0 + i) * ldst + r] = lane[i];
            }
        }
}

/* ---------------------------------------------------------------------- */
/* 4. PV micro-kernel: o[r][c] = alpha[r] o[r][c] + sum_j pt[j][r] v[j][c]  */
/*    for r < MR queries and c < NR*W value columns. The block's sum starts */
/*    from 0 (two-level summation: the error grows with sqrt(BK) +        */
/*    sqrt(S/BK), not sqrt(S)) and the rescale of the running output by    */
/*    alpha = exp(m_old - m_new) rides along in the epilogue.             */
/* ---------------------------------------------------------------------- */
#define PV_FEW_NR 8 /* value vectors per pass of a one-row block        */
#define PV_NRMAX (PV_NR > PV_FEW_NR ? PV_NR : PV_FEW_NR)
/* A key of weight 0 contributes nothing (attn.h), but 0 * inf = NaN: when
 * some acc[r][c] = sum over x < n of a(r, x) b(x, c) is not finite, every
 * one is summed again skipping zero a (a(r, x) = a[r * ars + x * axs],
 * b(x, c) = vector c of row x of bm, row stride bs). Both loops give the
 * same bits whenever the sum is finite (a b + acc with a = 0 is acc: acc
 * starts at +0 and never becomes -0), so no block is tested beforehand.
 * The test: x * 0 is NaN just for inf and NaN, and a sum of such terms in
 * any order is NaN or 0 (two chains: half the latency).                */
TI int SFX(acc_not_finite)(const int MR, const int NR, VT acc[][PV_NRMAX])
{
    VT bad0 = VZERO(), bad1 = VZERO();
    for (int r = 0; r < MR; r++)
        for (int c = 0; c < NR; c++) {
            if ((r * NR + c) & 1)
                bad1 = VADD(bad1, VMUL(acc[r][c], VZERO()));
            else
                bad0 = VADD(bad0, VMUL(acc[r][c], VZERO()));
        }
    return VRSUM(VADD(bad0, bad1)) != 0;
}

/* the rare path: every sum again, skipping zero a, then stored as the
 * kernels store theirs: o = alpha o + sum (P V: alpha given), o = o + sum
 * (alpha NULL). Out of line, so the kernels' accumulators stay in
 * registers.                                                           */
static ATTN_NOINLINE ATTR void SFX(resum_store)(
    int MR, int NR, T *o, size_t ldo, const T *a, ptrdiff_t ars,
    ptrdiff_t axs, const T *bm, ptrdiff_t bs, size_t n, const T *alpha)
{
    for (int r = 0; r < MR; r++)
        for (int c = 0; c < NR; c++) {
            VT acc = VZERO();
            for (size_t x = 0; x < n; x++) {
                const T a_rx = a[(ptrdiff_t)r * ars + (ptrdiff_t)x * axs];
                if (a_rx != 0)
                    acc = VFMA(VSET1(a_rx),
                               VLOADU(bm + (ptrdiff_t)x * bs
                                      + (ptrdiff_t)c * W),
                               acc);
            }
            T *o_rc = o + (size_t)r * ldo + (size_t)c * W;
            VSTOREU(o_rc, alpha ? VFMA(VLOADU(o_rc), VSET1(alpha[r]), acc)
                                : VADD(VLOADU(o_rc), acc));
        }
}

/* ars: pt's row stride (1 here; bwd_tile.h's products read A through
 * (row, reduction) strides ars, ldp); scaled 0: o = o + sum (alpha
 * unused); guarded 0: no test of the sums (bwd.c: no inf/NaN in B)     */
TI void SFX(pv_kern)(const int MR, const int NR, T *restrict o, size_t ldo,
                     const T *restrict pt, size_t ars, size_t ldp,
                     const T *alpha, const T *v, ptrdiff_t vs, size_t nk,
                     const int scaled, int guarded)
{
    VT acc[PV_MR][PV_NRMAX];
    for (int r = 0; r < MR; r++)
        for (int c = 0; c < NR; c++)
            acc[r][c] = VZERO();
    const T *v_j = v, *p_j = pt;
    for (size_t j = 0; j < nk; j++, v_j += vs, p_j += ldp) {
        VT x[PV_NRMAX];
        for (int c = 0; c < NR; c++)
            x[c] = VLOADU(v_j + (size_t)c * W);
        for (int r = 0; r < MR; r++) {
            VT pb = VSET1(p_j[(size_t)r * ars]);
            for (int c = 0; c < NR; c++)
                acc[r][c] = VFMA(pb, x[c], acc[r][c]);
        }
    }
    if (guarded && SFX(acc_not_finite)(MR, NR, acc)) {
        SFX(resum_store)(MR, NR, o, ldo, pt, (ptrdiff_t)ars, (ptrdiff_t)ldp,
                         v, vs, nk, scaled ? alpha : NULL);
        return;
    }
    for (int r = 0; r < MR; r++) {
        VT a = scaled ? VSET1(alpha[r]) : VZERO();
        for (int c = 0; c < NR; c++) {
            T *o_rc = o + (size_t)r * ldo + (size_t)c * W;
            VSTOREU(o_rc, scaled ? VFMA(VLOADU(o_rc), a, acc[r][c])
                                 : VADD(VLOADU(o_rc), acc[r][c]));
        }
    }
}

TI void SFX(pv_rows)(const int MR, T *o, size_t ldo, size_t nev, const T *pt,
                     size_t ars, size_t ldp, const T *alpha, const T *v,
                     ptrdiff_t vs, size_t nk, const int scaled, int guarded)
{
    size_t c = 0;
    for (; c + PV_NR <= nev; c += PV_NR)
        SFX(pv_kern)(MR, PV_NR, o + c * W, ldo, pt, ars, ldp, alpha, v + c * W,
                     vs, nk, scaled, guarded);
    for (; c < nev; c++)
        SFX(pv_kern)(MR, 1, o + c * W, ldo, pt, ars, ldp, alpha, v + c * W, vs,
                     nk, scaled, guarded);
}

/* pv_kern(MR, NR, ...) on V rows read in place, stored as vst (a
 * constant after inlining; contiguous rows of nev*W elements), 16-bit
 * rows converted as they are loaded: the same operations in the same
 * order as pv_kern on the (upcast) block, the resummation of a sum that
 * is not finite included: the same bits. p: key j's weight of row r at
 * p[j * ldp + r]. The rows DEC_AHEAD keys on (below npf) are asked into
 * L2 as it goes, so that memory streams while the block is computed.   */
TI void SFX(pv_one_k)(const int MR, const int NR, T *restrict o, size_t ldo,
                      const T *restrict p, size_t ldp, const T *alpha,
                      const void *v, ptrdiff_t vs, size_t nk, size_t npf,
                      attn_store vst)
{
    const size_t esz = vst == ATTN_ST_NATIVE ? sizeof(T) : 2;
    VT acc[ATTN_QK_FEW][PV_FEW_NR];
    for (int r = 0; r < MR; r++)
        for (int c = 0; c < NR; c++)
            acc[r][c] = VZERO();
    for (size_t j = 0; j < nk; j++) {
        if (j + DEC_AHEAD < npf)
            for (size_t x = 0; x < (size_t)NR * W * esz; x += 64)
                ATTN_PREFETCH_L2((const char *)v
                                 + (ptrdiff_t)(j + DEC_AHEAD) * vs
                                       * (ptrdiff_t)esz + (ptrdiff_t)x);
        VT x[PV_FEW_NR];
        for (int c = 0; c < NR; c++)
            x[c] = KVEC_(v, (ptrdiff_t)j * vs + c * W, vst);
        for (int r = 0; r < MR; r++) {
            const VT pb = VSET1(p[j * ldp + (size_t)r]);
            for (int c = 0; c < NR; c++)
                acc[r][c] = VFMA(pb, x[c], acc[r][c]);
        }
    }
    VT bad = VZERO();
    for (int r = 0; r < MR; r++)
        for (int c = 0; c < NR; c++)
            bad = VADD(bad, VMUL(acc[r][c], VZERO()));
    if (VRSUM(bad) != 0)
        for (int r = 0; r < MR; r++)
            for (int c = 0; c < NR; c++) {
                acc[r][c] = VZERO();
                for (size_t j = 0; j < nk; j++)
                    if (p[j * ldp + (size_t)r] != 0)
                        acc[r][c] = VFMA(
                            VSET1(p[j * ldp + (size_t)r]),
                            KVEC_(v, (ptrdiff_t)j * vs + c * W, vst),
                            acc[r][c]);
            }
    for (int r = 0; r < MR; r++) {
        const VT a = VSET1(alpha[r]);
        T *o_r = o + (size_t)r * ldo;
        for (int c = 0; c < NR; c++)
            VSTOREU(o_r + (size_t)c * W,
                    VFMA(VLOADU(o_r + (size_t)c * W), a, acc[r][c]));
    }
}

/* MR rows (1 .. ATTN_QK_FEW) at a time over passes of NR vectors: the
 * accumulators and one V row's vectors in registers                    */
TI void SFX(pv_one_st)(const int MR, T *o, size_t ldo, size_t nev,
                       const T *p, size_t ldp, const T *alpha, const void *v,
                       ptrdiff_t vs, size_t nk, size_t npf, attn_store vst)
{
    const int NR = MR == 1 ? PV_FEW_NR : MR == 2 ? PV_FEW_NR / 2 : 2;
    const size_t esz = vst == ATTN_ST_NATIVE ? sizeof(T) : 2;
    size_t c = 0;
    for (; c + (size_t)NR <= nev; c += (size_t)NR)
        SFX(pv_one_k)(MR, NR, o + c * W, ldo, p, ldp, alpha,
                      (const char *)v + c * W * esz, vs, nk, npf, vst);
    for (; c < nev; c++)
        SFX(pv_one_k)(MR, 1, o + c * W, ldo, p, ldp, alpha,
                      (const char *)v + c * W * esz, vs, nk, npf, vst);
}

TI void SFX(pv_one_rows)(size_t nq, T *o, size_t ldo, size_t nev,
                         const T *p, size_t ldp, const T *alpha,
                         const void *v, ptrdiff_t vs, size_t nk, size_t npf,
                         attn_store vst)
{
    switch (nq) {
    case 1:
        SFX(pv_one_st)(1, o, ldo, nev, p, ldp, alpha, v, vs, nk, npf, vst);
        break;
    case 2:
        SFX(pv_one_st)(2, o, ldo, nev, p, ldp, alpha, v, vs, nk, npf, vst);
        break;
    case 3:
        SFX(pv_one_st)(3, o, ldo, nev, p, ldp, alpha, v, vs, nk, npf, vst);
        break;
    default:
        SFX(pv_one_st)(4, o, ldo, nev, p, ldp, alpha, v, vs, nk, npf, vst);
        break;
    }
}

/* o (nq x nev*W, ld ldo, nq <= ATTN_QK_FEW) = alpha o + p^T V with the V
 * rows read in place as stored (pv_block's bits)                        */
TF void SFX(pv_one)(size_t nq, T *o, size_t ldo, size_t nev, const T *p,
                    size_t ldp, const T *alpha, const void *v, ptrdiff_t vs,
                    size_t nk, size_t npf, attn_store vst)
{
    if (HALF_VEC_ && vst == ATTN_ST_BF16)
        SFX(pv_one_rows)(nq, o, ldo, nev, p, ldp, alpha, v, vs, nk, npf,
                         ATTN_ST_BF16);
    else if (HALF_VEC_ && vst == ATTN_ST_F16)
        SFX(pv_one_rows)(nq, o, ldo, nev, p, ldp, alpha, v, vs, nk, npf,
                         ATTN_ST_F16);
    else
        SFX(pv_one_rows)(nq, o, ldo, nev, p, ldp, alpha, v, vs, nk, npf,
                         ATTN_ST_NATIVE);
}

/* pv_rows with PV_FEW_NR-vector passes (whole 128-float rows at W = 16) */
TI void SFX(pv_few)(const int MR, T *o, size_t ldo, size_t nev, const T *pt,
                    size_t ldp, const T *alpha, const T *v, ptrdiff_t vs,
                    size_t nk)
{
    size_t c = 0;
    for (; c + PV_FEW_NR <= nev; c += PV_FEW_NR)
        SFX(pv_kern)(MR, PV_FEW_NR, o + c * W, ldo, pt, 1, ldp,
                     alpha, v + c * W, vs, nk, 1, 1);
    for (; c < nev; c++)
        SFX(pv_kern)(MR, 1, o + c * W, ldo, pt, 1, ldp, alpha,
                     v + c * W, vs, nk, 1, 1);
}
/* two rows of PV_FEW_NR accumulators and one row of V in registers: where
 * the ISA's register file holds its PV_MR x PV_NR kernel's as many     */
#define PV_FEW_PAIR_ (PV_MR >= 2 && PV_MR * PV_NR + PV_NR >= 3 * PV_FEW_NR)

/* o (nq x nev*W, ld ldo) = alpha o + pt^T (pt: nk x .., ld ldp) . V_blk  */
TF void SFX(pv_block)(T *o, size_t ldo, size_t nq, size_t nev, const T *pt,
                      size_t ldp, const T *alpha, const T *v, ptrdiff_t vs,
                      size_t nk)
{
    size_t i = 0;
    if (nq == 1) { /* decoding: each V row read once, front to back */
        SFX(pv_few)(1, o, ldo, nev, pt, ldp, alpha, v, vs, nk);
        return;
    }
    if (PV_FEW_PAIR_ && nq <= ATTN_QK_FEW) {
        /* a few rows: two at a time over whole V rows, so each pass reads
         * the block's rows front to back (the first from memory, the next
         * from L1) where PV_NR-wide passes would read every row in parts,
         * a pattern the hardware prefetcher follows badly; the same sums
         * per (row, column)                                             */
        for (; i + 2 <= nq; i += 2)
            SFX(pv_few)(2, o + i * ldo, ldo, nev, pt + i, ldp, alpha + i, v,
                        vs, nk);
        if (i < nq)
            SFX(pv_few)(1, o + i * ldo, ldo, nev, pt + i, ldp, alpha + i, v,
                        vs, nk);
        return;
    }
    for (; i + PV_MR <= nq; i += PV_MR)
        SFX(pv_rows)(PV_MR, o + i * ldo, ldo, nev, pt + i, 1, ldp,
                     alpha + i, v, vs, nk, 1, 1);
    T *o_i = o + i * ldo;
    const T *p_i = pt + i, *a_i = alpha + i;
#define PV_TAIL_(n)                                                            \
    case n:                                                                    \
        SFX(pv_rows)(MINZ_(n, PV_MR), o_i, ldo, nev, p_i, 1, ldp,   \
                     a_i, v, vs, nk, 1, 1);                                    \
        break;
    TAIL_SWITCH_(nq - i, PV_TAIL_)
#undef PV_TAIL_
}

/* ---------------------------------------------------------------------- */
/* 3. online softmax over one key block, G query vectors at a time         */
/* ---------------------------------------------------------------------- */
TI void SFX(sm_group)(const int G, T *st, size_t ldst, size_t nk, T *m, T *l,
                      T *alpha, T *m_used)
{
    /* two independent chains per vector (even / odd keys) hide the
     * latency of max and add; the order is fixed, so results are too */
    VT mx[SM_G], mx1[SM_G], mu[SM_G], sum[SM_G], sum1[SM_G];
    for (int g = 0; g < G; g++) {
        mx[g] = VLOADU(m + (size_t)g * W);
        mx1[g] = mx[g];
    }
    size_t j = 0;
    for (; j + 2 <= nk; j += 2)
        for (int g = 0; g < G; g++) {
            mx[g] = VMAX(mx[g], VLOADU(st + j * ldst + (size_t)g * W));
            mx1[g] = VMAX(mx1[g], VLOADU(st + (j + 1) * ldst + (size_t)g * W));
        }
    if (j < nk)
        for (int g = 0; g < G; g++)
            mx[g] = VMAX(mx[g], VLOADU(st + j * ldst + (size_t)g * W));
    for (int g = 0; g < G; g++) {
        mx[g] = VMAX(mx[g], mx1[g]);
        VT mold = VLOADU(m + (size_t)g * W);
        VSTOREU(m + (size_t)g * W, mx[g]);
        mu[g] = VSAFE(mx[g]);
        VSTOREU(m_used + (size_t)g * W, mu[g]);
        VT a = VEXP(VSUB(mold, mu[g]));
        VSTOREU(alpha + (size_t)g * W, a);
        sum[g] = VZERO();
        sum1[g] = VZERO();
    }
    for (j = 0; j + 2 <= nk; j += 2)
        for (int g = 0; g < G; g++) {
            T *s0 = st + j * ldst + (size_t)g * W, *s1 = s0 + ldst;
            VT p0 = VEXP(VSUB(VLOADU(s0), mu[g]));
            VT p1 = VEXP(VSUB(VLOADU(s1), mu[g]));
            VSTOREU(s0, p0);
            VSTOREU(s1, p1);
            sum[g] = VADD(sum[g], p0);
            sum1[g] = VADD(sum1[g], p1);
        }
    if (j < nk)
        for (int g = 0; g < G; g++) {
            T *s0 = st + j * ldst + (size_t)g * W;
            VT p0 = VEXP(VSUB(VLOADU(s0), mu[g]));
            VSTOREU(s0, p0);
            sum[g] = VADD(sum[g], p0);
        }
    for (int g = 0; g < G; g++) { /* l = alpha l + (block sum) */
        VT a = VLOADU(alpha + (size_t)g * W);
        VSTOREU(l + (size_t)g * W,
                VFMA(VLOADU(l + (size_t)g * W), a, VADD(sum[g], sum1[g])));
    }
}

/* sm_group's operations on lane 0 for a one-row block whose scores s[j]
 * are contiguous (keys in the lanes): the same max, exp and sums in the
 * same order (even keys, odd keys), so the same bits; the exps go W keys
 * at a time. Leaves the probabilities in s.                              */
TF void SFX(softmax_row)(T *s, size_t nk, T *m, T *l, T *alpha, T *m_used)
{
    VT mx = VSET1(m[0]), mx1 = mx;
    size_t j = 0;
    for (; j + 2 <= nk; j += 2) {
        mx = VMAX(mx, VSET1(s[j]));
        mx1 = VMAX(mx1, VSET1(s[j + 1]));
    }
    if (j < nk)
        mx = VMAX(mx, VSET1(s[j]));
    mx = VMAX(mx, mx1);
    const VT mu = VSAFE(mx), a = VEXP(VSUB(VSET1(m[0]), mu));
    T lane[W];
    VSTOREU(lane, mx);
    m[0] = lane[0];
    VSTOREU(lane, mu);
    m_used[0] = lane[0];
    VSTOREU(lane, a);
    alpha[0] = lane[0];
    for (j = 0; j + W <= nk; j += W)
        VSTOREU(s + j, VEXP(VSUB(VLOADU(s + j), mu)));
    if (j < nk) {
        for (size_t x = 0; x < (size_t)W; x++)
            lane[x] = j + x < nk ? s[j + x] : (T)0;
        VSTOREU(lane, VEXP(VSUB(VLOADU(lane), mu)));
        for (size_t x = 0; j + x < nk; x++)
            s[j + x] = lane[x];
    }
    T sum = 0, sum1 = 0;
    for (j = 0; j + 2 <= nk; j += 2) {
        sum = sum + s[j];
        sum1 = sum1 + s[j + 1];
    }
    if (j < nk)
        sum = sum + s[j];
    VSTOREU(lane, VFMA(VSET1(l[0]), a, VADD(VSET1(sum), VSET1(sum1))));
    l[0] = lane[0];
}

TF void SFX(softmax_block)(T *st, size_t ldst, size_t nk, size_t nqv, T *m,
                           T *l, T *alpha, T *m_used)
{
    size_t v = 0;
    for (; v + SM_G <= nqv; v += SM_G)
        SFX(sm_group)(SM_G, st + v * W, ldst, nk, m + v * W, l + v * W,
                      alpha + v * W, m_used + v * W);
    for (; v < nqv; v++)
        SFX(sm_group)(1, st + v * W, ldst, nk, m + v * W, l + v * W,
                      alpha + v * W, m_used + v * W);
}
