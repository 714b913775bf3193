/*
 * attention/bwd_tile.h -- the tiled backward kernel, written once.
 *
 * NOT a normal header: a template included by isa/<set>.c right after
 * tile.h for the same element type (bwd_item_a<SFX>, bwd_item_b<SFX>).
 * A set with micro-kernels of its own defines BWD_HOOKS and these before
 * including it (each nonzero when the set's kernel did the work):
 *   BWD_PACK_Q(bpl, qt, nrv)            after Q^T of a block is packed
 *   BWD_SCORES(bpl, sb, qt, st, nqv, nk)  S^T = scale K Q^T
 *   BWD_PACK_K(bpl, sb, b, j0, nk)      after K's rows of a block
 *
 * It reuses tile.h's S^T = K Q^T micro-kernel (qk_block: also dP^T =
 * V dO^T, the same shape), masks (classify, apply_masks), K/V block access
 * and the transposing store, and its P V micro-kernel (pv_rows) for
 * O += A B with A read through (row, reduction) strides (mm_block):
 * dV += P^T dO, dK += dS^T Q (pass A), dQ += dS K (pass B).
 *
 * Layout (bwd.c's plan): every tile over query rows is KEY-major with the
 * queries along the vector lanes, as in the forward kernel, so lse_i and
 * D_i are vector loads and no reduction is horizontal:
 *   qt  [E][BQ]   Q^T of a query block (zero padded)
 *   dot [Ev][BQ]  dO^T of a query block
 *   qr  [BQ][EP]   Q rows, dor [BQ][EvP] dO rows (pass A's B operands)
 *   st  [BK][BQ]  S^T, then P^T;  dp [BK][BQ]  dP^T, then dS^T
 *   kr  [BK][EP]   K rows of the key block (zero padded)
 *   acc1, acc2     dK [BK][EP] and dV [BK][EvP] (pass A), dQ [BQ][EP] (B)
 *   row            lse (VSAFE'd; +inf in the padding lanes), D: BQ each
 */

/* TI, TF, BOFF_, MINZ_, TAIL_SWITCH_, the block classes BLK_*: tile.h's */
#ifndef BWD_HOOKS
#define BWD_PACK_Q(bpl, qt, nrv) 0
#define BWD_SCORES(bpl, sb, qt, st, nqv, nk) 0
#define BWD_PACK_K(bpl, sb, b, j0, nk) 0
#endif

#ifndef ATTNPY_BWD_TILE_ONCE
#define ATTNPY_BWD_TILE_ONCE
#include "half.h"
/* element x (counted from m's data pointer) of m: 16-bit storage, or
 * elements of esz bytes (the call's dtype)                               */
static inline void *bwd_addr(const attn_mat *m, size_t esz, ptrdiff_t x)
{
    return (char *)m->data + x * (ptrdiff_t)(m->store ? 2 : esz);
}
#endif
/* the start of batch item b's part of m                                  */
#define BWD_BASE_(m, b) bwd_addr(&(m), sizeof(T), BOFF_(m, b))

/* ---------------------------------------------------------------------- */
/* O (nr x ncv*W, ld ldo) += A (nr x n: a[r*ars + x*axs]) B (n x .., ldb)  */
/* by tile_kern.h's P V micro-kernel (scaled 0). Each call's block sum     */
/* starts from 0 and is added to O at the end; guarded (some B entry may   */
/* be inf/NaN): zero A entries are skipped, never multiplied, as attn.h    */
/* wants.                                                                  */
/* ---------------------------------------------------------------------- */
TF void SFX(mm_block)(T *o, size_t ldo, size_t nr, size_t ncv, const T *a,
                      ptrdiff_t ars, ptrdiff_t axs, const T *bm, size_t ldb,
                      size_t n, int guarded)
{
    size_t r = 0;
    for (; r + PV_MR <= nr; r += PV_MR)
        SFX(pv_rows)(PV_MR, o + r * ldo, ldo, ncv, a + (ptrdiff_t)r * ars,
                     (size_t)ars, (size_t)axs, NULL, bm, (ptrdiff_t)ldb, n, 0,
                     guarded);
    T *o_r = o + r * ldo;
    const T *a_r = a + (ptrdiff_t)r * ars;
#define MM_TAIL_(k)                                                            \
    case k:                                                                    \
        SFX(pv_rows)(MINZ_(k, PV_MR), o_r, ldo, ncv, a_r, (size_t)ars,         \
                     (size_t)axs, NULL, bm, (ptrdiff_t)ldb, n, 0, guarded);    \
        break;
    TAIL_SWITCH_(nr - r, MM_TAIL_)
#undef MM_TAIL_
}

/* ---------------------------------------------------------------------- */
/* packing                                                                 */
/* ---------------------------------------------------------------------- */
/* dst[c * ds] = row[c * s1], c < n, from 16 bits (st) to T: exact     */
TI void SFX(bwd_cvt16)(T *dst, size_t ds, const uint16_t *row, ptrdiff_t s1,
                       size_t n, attn_store st)
{
#ifdef VLOAD_F16 /* the float build: W at a time (exact either way) */
    if (s1 == 1) {
        size_t c = 0;
        for (; c + W <= n; c += W) {
            const VT x = st == ATTN_ST_BF16 ? VLOAD_BF16(row + c)
                                            : VLOAD_F16(row + c);
            if (ds == 1) {
                VSTOREU(dst + c, x);
                continue;
            }
            T tmp[W];
            VSTOREU(tmp, x);
            for (size_t i = 0; i < (size_t)W; i++)
                dst[(c + i) * ds] = tmp[i];
        }
        dst += c * ds;
        row += c;
        n -= c;
    }
#endif
    if (st == ATTN_ST_BF16)
        for (size_t c = 0; c < n; c++)
            dst[c * ds] = (T)attn_bf16_to_f32(row[(ptrdiff_t)c * s1]);
    else
        for (size_t c = 0; c < n; c++)
            dst[c * ds] = (T)attn_f16_to_f32(row[(ptrdiff_t)c * s1]);
}

/* dst[c][r] = src(r0 + r, c), c < ncols, r < nrv (rows >= nr: 0); src
 * holds T, or 16 bits when st is nonzero                                */
TI void SFX(bwd_pack_t)(T *dst, size_t ldd, const void *src, attn_store st,
                        ptrdiff_t s0, ptrdiff_t s1, size_t r0, size_t nr,
                        size_t nrv, size_t ncols)
{
    for (size_t r = 0; r < nr; r++) {
        const ptrdiff_t x = (ptrdiff_t)(r0 + r) * s0;
        if (st) {
            SFX(bwd_cvt16)(dst + r, ldd, (const uint16_t *)src + x, s1, ncols,
                           st);
            continue;
        }
        const T *row = (const T *)src + x;
        for (size_t c = 0; c < ncols; c++)
            dst[c * ldd + r] = row[(ptrdiff_t)c * s1];
    }
    for (size_t c = 0; c < ncols; c++)
        for (size_t r = nr; r < nrv; r++)
            dst[c * ldd + r] = 0;
}

/* Q^T, dO^T, lse and D of query rows i0 .. i0+nq-1 (pass A: also rows)
 * into the block's slot; rows whose lse is NaN: lnan[r] = 1, lse 0      */
TF void SFX(bwd_pack_q)(const attn_bwd_plan *bpl, char *sb, size_t b,
                        size_t i0, size_t nq, int rows)
{
    sb += (bpl->fused ? i0 / bpl->fp.BQ : 0) * bpl->qstride; /* the slot */
    const attn_bwd_problem *bp = bpl->bp;
    const attn_problem *p = &bp->f;
    const size_t BQ = bpl->fp.BQ, nrv = (nq + W - 1) / W * W;
    attn_mat q = p->q, g = bp->dout;
    const void *q_b = BWD_BASE_(q, b), *g_b = BWD_BASE_(g, b);
    size_t qi0 = i0, gi0 = i0;
    if (rows) {
        T *qr = (T *)(sb + bpl->off_qr), *dor = (T *)(sb + bpl->off_dor);
        SFX(pack_rows)(qr, bpl->EP, q_b, q.store, q.s0, q.s1, i0, nq, p->E);
        SFX(pack_rows)(dor, bpl->fp.EvP, g_b, g.store, g.s0, g.s1, i0, nq,
                        p->Ev);
        /* 16 bits: the transposes below from these rows, converted once */
        if (q.store) {
            q = (attn_mat){qr, NULL, (ptrdiff_t)bpl->EP, 1, ATTN_ST_NATIVE};
            q_b = qr;
            qi0 = 0;
        }
        if (g.store) {
            g = (attn_mat){dor, NULL, (ptrdiff_t)bpl->fp.EvP, 1,
                           ATTN_ST_NATIVE};
            g_b = dor;
            gi0 = 0;
        }
    }
    T *qt = (T *)(sb + bpl->off_qt);
    SFX(bwd_pack_t)(qt, BQ, q_b, q.store, q.s0, q.s1, qi0, nq, nrv, p->E);
    (void)BWD_PACK_Q(bpl, qt, nrv);
    SFX(bwd_pack_t)((T *)(sb + bpl->off_dot), BQ, g_b, g.store, g.s0, g.s1,
                    gi0, nq, nrv, p->Ev);
    T *rlse = (T *)(sb + bpl->off_row), *rd = rlse + BQ;
    unsigned char *lnan = (unsigned char *)(sb + bpl->off_lnan);
    const T *lse_b = (const T *)p->lse.data + BOFF_(p->lse, b);
    const T *d_b = (const T *)bpl->dvec + b * p->L;
    for (size_t r = 0; r < nrv; r++) {
        if (r < nq) {
            const T x = lse_b[(ptrdiff_t)(i0 + r) * p->lse.s0];
            lnan[r] = x != x;
            rlse[r] = (x == (T)-INFINITY || x != x) ? (T)0 : x;
            rd[r] = d_b[i0 + r];
        } else {
            rlse[r] = (T)INFINITY; /* exp(s - inf) = 0 in the padding */
            rd[r] = 0;
        }
    }
}

/* dbias rows i0 .. i0+nq-1, keys j0 .. j0+nk-1 = dS (the key-major tile) */
TI void SFX(bwd_dbias_tile)(const attn_bwd_problem *bp, size_t b, size_t i0,
                            size_t nq, size_t j0, size_t nk, const T *ds,
                            size_t ldds)
{
    const attn_mat m = bp->dbias;
    if (m.store) { /* each dS rounded once to 16 bits */
        void *d = bwd_addr(&m, sizeof(T), BOFF_(m, b) + (ptrdiff_t)i0 * m.s0
                                              + (ptrdiff_t)j0 * m.s1);
        for (size_t r = 0; r < nq; r++) {
            size_t j = 0;
#ifdef VSTORE_F16 /* contiguous rows: W keys gathered, rounded at once */
            uint16_t *row = (uint16_t *)d + (ptrdiff_t)r * m.s0;
            for (; m.s1 == 1 && j + W <= nk; j += W) {
                T x[W];
                for (size_t l = 0; l < (size_t)W; l++)
                    x[l] = ds[(j + l) * ldds + r];
                if (m.store == ATTN_ST_BF16)
                    VSTORE_BF16(row + j, VLOADU(x));
                else
                    VSTORE_F16(row + j, VLOADU(x));
            }
#endif
            for (; j < nk; j++)
                attn_store_f32(m.store, d,
                               (ptrdiff_t)r * m.s0 + (ptrdiff_t)j * m.s1,
                               (float)ds[j * ldds + r]);
        }
        return;
    }
    SFX(store_tile_t)((T *)bp->dbias.data + BOFF_(bp->dbias, b)
                          + (ptrdiff_t)i0 * bp->dbias.s0
                          + (ptrdiff_t)j0 * bp->dbias.s1,
                      bp->dbias.s0, bp->dbias.s1, ds, ldds, nq, nk, NULL,
                      NULL, NULL, 0);
}

/* S^T = scale K Q^T of the block, the forward's bits: the FMA chain, or
 * the set's own kernel                                                  */
TI void SFX(bwd_scores)(const attn_bwd_plan *bpl, char *sb, const T *qt,
                        T *st, size_t nqv, const T *kr, size_t nk)
{
    const attn_plan *pl = &bpl->fp;
    if (BWD_SCORES(bpl, sb, qt, st, nqv, nk))
        return;
    (void)sb;
    SFX(qk_block)(st, pl->BQ, qt, pl->BQ, nqv, kr, (ptrdiff_t)bpl->EP,
                  pl->p->E, nk, (T)pl->p->scale, 1);
}

/* ---------------------------------------------------------------------- */
/* one block pair: st = P^T, dp = dS^T (keys j0.., queries of qt/dot)      */
/* ---------------------------------------------------------------------- */
TF void SFX(bwd_block)(const attn_bwd_plan *bpl, char *sb, size_t b,
                       size_t i0, size_t nq, size_t j0, size_t nk,
                       const T *kr, const T *vblk, ptrdiff_t vs, int cdiag,
                       int dbias)
{
    const attn_plan *pl = &bpl->fp;
    const attn_problem *p = pl->p;
    const size_t BQ = pl->BQ, nqv = (nq + W - 1) / W, nw = nqv * W;
    T *st = (T *)(sb + bpl->off_st), *dp = (T *)(sb + bpl->off_dp);
    const char *qs = sb + (bpl->fused ? i0 / pl->BQ : 0) * bpl->qstride;
    const T *rlse = (const T *)(qs + bpl->off_row), *rd = rlse + BQ;
    const uint8_t *mask_b = p->mask.data
        ? (const uint8_t *)p->mask.data + BOFF_(p->mask, b) : NULL;
    /* S^T = scale K Q^T (+ bias, masks): the forward's bits */
    SFX(bwd_scores)(bpl, sb, (const T *)(qs + bpl->off_qt), st, nqv, kr, nk);
    T *capt = p->softcap > 0 ? (T *)(sb + bpl->off_cap) : NULL;
    if (p->bias.data || mask_b || cdiag || pl->edits_scores)
        SFX(apply_masks)(pl, st, BQ, b, i0, nq, nqv, j0, nk, mask_b,
                         mask_b ? BLK_MIXED : BLK_NONE, cdiag, capt);
    /* rows whose lse is NaN: P is NaN where allowed, 0 where masked */
    const unsigned char *lnan = (const unsigned char *)(qs + bpl->off_lnan);
    int lsenan = 0;
    for (size_t r = 0; r < nq; r++)
        lsenan |= lnan[r];
    for (size_t j = 0; lsenan && j < nk; j++)
        for (size_t r = 0; r < nq; r++)
            if (lnan[r] && st[j * BQ + r] != (T)-INFINITY)
                st[j * BQ + r] = (T)NAN;
    /* P^T = exp(S^T - lse) */
    for (size_t j = 0; j < nk; j++)
        for (size_t v = 0; v < nqv; v++) {
            T *s = st + j * BQ + v * W;
            VSTOREU(s, VEXP(VSUB(VLOADU(s), VLOADU(rlse + v * W))));
        }
    /* dP^T = V dO^T, then dS^T = P^T (dP^T - D), 0 where P == 0 */
    SFX(qk_block)(dp, BQ, (const T *)(qs + bpl->off_dot), BQ, nqv, vblk, vs,
                  p->Ev, nk, (T)1, 0);
    /* lane-wise: the scalar pv * (d - D), then +0 where pv == 0 (NaN pv
     * compares unequal: keeps its NaN)                                  */
    const VT zero = VZERO();
    for (size_t j = 0; j < nk; j++) {
        const T *p_j = st + j * BQ;
        T *d_j = dp + j * BQ;
        for (size_t i = 0; i < nw; i += W) {
            const VT pv = VLOADU(p_j + i);
            const VT ds = VMUL(pv, VSUB(VLOADU(d_j + i), VLOADU(rd + i)));
            VSTOREU(d_j + i, VSEL(VEQ(pv, zero), zero, ds));
        }
    }
    if (dbias) /* d(bias) = dS */
        SFX(bwd_dbias_tile)(bpl->bp, b, i0, nq, j0, nk, dp, BQ);
    if (!capt)
        return;
    /* dQ, dK see the softcap's derivative: dS (1 - tanh^2), 0 where dS
     * is (a masked score's tanh may be NaN: never 0 * NaN)              */
    const VT one = VSET1((T)1);
    for (size_t j = 0; j < nk; j++) {
        const T *t_j = capt + j * BQ;
        T *d_j = dp + j * BQ;
        for (size_t i = 0; i < nw; i += W) {
            const VT d = VLOADU(d_j + i), t = VLOADU(t_j + i);
            VSTOREU(d_j + i, VSEL(VEQ(d, zero), d,
                                  VMUL(d, VSUB(one, VMUL(t, t)))));
        }
    }
}

/* K rows j0 .. j0+nk-1 into kr (nk x EP, zero padded); V block access   */
TI const T *SFX(bwd_kv)(const attn_bwd_plan *bpl, char *sb, size_t b,
                        size_t j0, size_t nk, ptrdiff_t *vs)
{
    const attn_problem *p = &bpl->bp->f;
    const attn_mat k = p->k, v = p->v;
    SFX(pack_rows)((T *)(sb + bpl->off_kr), bpl->EP, BWD_BASE_(k, b),
                    k.store, k.s0, k.s1, j0, nk, p->E);
    (void)BWD_PACK_K(bpl, sb, b, j0, nk);
    return SFX(kv_rows)(&bpl->fp, 1, (const char *)BWD_BASE_(v, b), j0, nk,
                        (T *)(sb + bpl->off_vp), vs);
}

/* rows r0 .. r0+n-1 of a (B, rows, cols) gradient = scale * acc (or NaN) */
TI void SFX(bwd_store)(const attn_mat *g, size_t b, size_t r0, size_t n,
                       size_t cols, const T *acc, size_t lda, T scale,
                       const unsigned char *nanrow, int allnan)
{
    const attn_store st = g->store;
    for (size_t r = 0; r < n; r++) {
        const ptrdiff_t x = (ptrdiff_t)(r0 + r) * g->s0;
        const int nan = allnan || (nanrow && nanrow[r]);
        if (st) { /* 16 bits: the T result (scale * acc), rounded once */
            void *row = bwd_addr(g, sizeof(T), BOFF_(*g, b) + x);
            size_t c = 0;
#ifdef VSTORE_F16
            for (; g->s1 == 1 && !nan && c + W <= cols; c += W) {
                const VT y = VMUL(VLOADU(acc + r * lda + c), VSET1(scale));
                if (st == ATTN_ST_BF16)
                    VSTORE_BF16((uint16_t *)row + c, y);
                else
                    VSTORE_F16((uint16_t *)row + c, y);
            }
#endif
            for (; c < cols; c++)
                attn_store_f32(st, row, (ptrdiff_t)c * g->s1,
                               nan ? NAN : (float)(acc[r * lda + c] * scale));
            continue;
        }
        T *row = (T *)g->data + BOFF_(*g, b) + x;
        for (size_t c = 0; c < cols; c++)
            row[(ptrdiff_t)c * g->s1] = nan ? (T)NAN : acc[r * lda + c] * scale;
    }
}

/* ---------------------------------------------------------------------- */
/* keys j0 .. j0+nk-1 of b against every query block that sees them:       */
/* dK, dV of the keys (acc1, acc2), and with dq (fused item: the queries   */
/* were packed beforehand) dQ += dS K and the dbias tiles.                 */
/* ---------------------------------------------------------------------- */
TF void SFX(bwd_keys)(const attn_bwd_plan *bpl, char *sb, size_t b, size_t j0,
                      size_t nk, T *dq)
{
    const attn_plan *pl = &bpl->fp;
    const attn_bwd_problem *bp = bpl->bp;
    const attn_problem *p = pl->p;
    const size_t L = p->L, BQ = pl->BQ, EP = bpl->EP;
    const size_t EvP = pl->EvP;
    T *dk = (T *)(sb + bpl->off_acc1), *dv = (T *)(sb + bpl->off_acc2);
    const int nan_b = bpl->bnan[b];
    for (size_t x = 0; x < nk * EP; x++)
        dk[x] = 0;
    for (size_t x = 0; x < nk * EvP; x++)
        dv[x] = 0;
    /* causal, window: the query blocks that see some key j0 .. */
    size_t ilo, ihi;
    attn__query_range(pl, j0, nk, &ilo, &ihi);
    const size_t qb0 = ilo / BQ, qb1 = (ihi + BQ - 1) / BQ;
    /* NaN policy: dK, dV of b are NaN; only a fused item's dQ needs P */
    const int skip = nan_b && !dq;
    ptrdiff_t vs = 0;
    const T *vblk = skip ? NULL : SFX(bwd_kv)(bpl, sb, b, j0, nk, &vs);
    const T *kr = (const T *)(sb + bpl->off_kr);
    const T *st = (const T *)(sb + bpl->off_st);
    const T *dsm = (const T *)(sb + bpl->off_dp);
    for (size_t qb = skip ? qb1 : qb0; qb < qb1; qb++) {
        const size_t i0 = qb * BQ, nq = MINZ_(BQ, L - i0);
        const char *qs = sb + (bpl->fused ? qb : 0) * bpl->qstride;
        int cdiag;
        if (SFX(classify)(pl, NULL, i0, nq, j0, nk, &cdiag) == BLK_ALL)
            continue;
        if (!bpl->fused)
            SFX(bwd_pack_q)(bpl, sb, b, i0, nq, 1);
        SFX(bwd_block)(bpl, sb, b, i0, nq, j0, nk, kr, vblk, vs, cdiag,
                       dq && bp->dbias.data);
        /* dV += P^T dO,  dK += dS^T Q */
        SFX(mm_block)(dv, EvP, nk, EvP / W, st, (ptrdiff_t)BQ, 1,
                      (const T *)(qs + bpl->off_dor), EvP, nq, bpl->guarded);
        SFX(mm_block)(dk, EP, nk, EP / W, dsm, (ptrdiff_t)BQ, 1,
                      (const T *)(qs + bpl->off_qr), EP, nq, bpl->guarded);
        if (!dq)
            continue;
        /* dQ += dS K (dbias = dS: bwd_block) */
        SFX(mm_block)(dq + i0 * EP, EP, nq, EP / W, dsm, 1, (ptrdiff_t)BQ,
                      kr, EP, nk, bpl->guarded);
    }
    if (p->fully_masked == ATTN_FM_UNIFORM) {
        const T *u = (const T *)bpl->uvec + b * EvP;
        for (size_t j = 0; j < nk; j++)
            for (size_t c = 0; c < EvP; c++)
                dv[j * EvP + c] += u[c];
    }
    SFX(bwd_store)(&bp->dk, b, j0, nk, p->E, dk, EP, (T)p->scale, NULL, nan_b);
    SFX(bwd_store)(&bp->dv, b, j0, nk, p->Ev, dv, EvP, (T)1, NULL, nan_b);
}

/* rows i0 .. i0+nq-1 of dq = scale * acc; the NaN policy's fully masked
 * rows get NaN in dq and dbias (their weights were NaN)                  */
TF void SFX(bwd_dq_store)(const attn_bwd_plan *bpl, char *sb, size_t b,
                          size_t i0, size_t nq, const T *dq)
{
    const attn_bwd_problem *bp = bpl->bp;
    const attn_problem *p = &bp->f;
    unsigned char *nanrow = (unsigned char *)(sb + bpl->off_nan);
    const T *lse_b = (const T *)p->lse.data + BOFF_(p->lse, b);
    int anynan = 0;
    for (size_t r = 0; r < nq; r++) {
        nanrow[r] = p->fully_masked == ATTN_FM_NAN
                    && lse_b[(ptrdiff_t)(i0 + r) * p->lse.s0] == (T)-INFINITY;
        anynan |= nanrow[r];
    }
    const attn_mat db = bp->dbias;
    for (size_t r = 0; anynan && db.data && r < nq; r++)
        for (size_t j = 0; nanrow[r] && j < p->S; j++)
            SFX(put)(&db, (char *)db.data, BOFF_(db, b)
                     + (ptrdiff_t)(i0 + r) * db.s0 + (ptrdiff_t)j * db.s1,
                     (T)NAN); /* dbias NaN (16 bits: rounded once) */
    SFX(bwd_store)(&bp->dq, b, i0, nq, p->E, dq, bpl->EP, (T)p->scale,
                   anynan ? nanrow : NULL, 0);
}

/* dbias rows i0 .. i0+nq-1, keys j0 .. j0+nk-1 = 0 (a skipped block)     */
TI void SFX(bwd_dbias_zero)(const attn_bwd_problem *bp, size_t b, size_t i0,
                            size_t nq, size_t j0, size_t nk)
{
    const attn_mat m = bp->dbias;
    for (size_t r = 0; r < nq; r++)
        for (size_t j = 0; j < nk; j++) {
            const ptrdiff_t at = BOFF_(m, b) + (ptrdiff_t)(i0 + r) * m.s0
                                 + (ptrdiff_t)(j0 + j) * m.s1;
            if (m.store) /* +0 in either 16-bit format */
                ((uint16_t *)m.data)[at] = 0;
            else
                ((T *)m.data)[at] = 0;
        }
}

/* ---------------------------------------------------------------------- */
/* fused item (bwd.c chooses it from the shape when B is large enough):   */
/* all of batch item b, key blocks outer, dQ accumulated across them in a  */
/* fixed order: 5 block products per pair, queries packed once.            */
/* split items: pass A (b, key block) owns dK, dV; pass B (b, query block) */
/* owns dQ and dbias, recomputing P (7 products per pair, parallel inside  */
/* one b).                                                                */
/* ---------------------------------------------------------------------- */
TF void SFX(bwd_item_a)(const attn_bwd_plan *bpl, void *scratch, size_t b,
                        size_t kb)
{
    const attn_bwd_problem *bp = bpl->bp;
    const attn_problem *p = &bp->f;
    const size_t BQ = bpl->fp.BQ, BKA = bpl->BKA, L = p->L;
    char *sb = (char *)scratch;
    if (!bpl->fused) {
        const size_t j0 = kb * BKA;
        SFX(bwd_keys)(bpl, sb, b, j0, MINZ_(BKA, p->S - j0), NULL);
        return;
    }
    T *dq = (T *)(sb + bpl->off_dqall);
    for (size_t qb = 0; qb < bpl->fp.nqb; qb++)
        SFX(bwd_pack_q)(bpl, sb, b, qb * BQ, MINZ_(BQ, L - qb * BQ), 1);
    for (size_t x = 0; x < bpl->fp.nqb * BQ * bpl->EP; x++)
        dq[x] = 0;
    if (bp->dbias.data) /* blocks no key loop visits stay 0 */
        SFX(bwd_dbias_zero)(bp, b, 0, L, 0, p->S);
    for (size_t j0 = 0; j0 < p->S; j0 += BKA)
        SFX(bwd_keys)(bpl, sb, b, j0, MINZ_(BKA, p->S - j0), dq);
    for (size_t qb = 0; qb < bpl->fp.nqb; qb++)
        SFX(bwd_dq_store)(bpl, sb, b, qb * BQ, MINZ_(BQ, L - qb * BQ),
                          dq + qb * BQ * bpl->EP);
}

TF void SFX(bwd_item_b)(const attn_bwd_plan *bpl, void *scratch, size_t b,
                        size_t qb)
{
    const attn_plan *pl = &bpl->fp;
    const attn_bwd_problem *bp = bpl->bp;
    const attn_problem *p = pl->p;
    const size_t S = p->S, BK = pl->BK, BQ = pl->BQ, EP = bpl->EP;
    const size_t i0 = qb * pl->BQ, nq = MINZ_(pl->BQ, p->L - i0);
    char *sb = (char *)scratch;
    T *dq = (T *)(sb + bpl->off_acc1);
    const T *dsm = (const T *)(sb + bpl->off_dp);
    for (size_t x = 0; x < nq * EP; x++)
        dq[x] = 0;
    SFX(bwd_pack_q)(bpl, sb, b, i0, nq, 0);
    /* causal, window: the keys the rows may see; dbias 0 elsewhere */
    size_t jlo, jhi;
    attn__key_range(pl, i0, nq, &jlo, &jhi);
    jlo = jlo / BK * BK;
    if (bp->dbias.data) {
        SFX(bwd_dbias_zero)(bp, b, i0, nq, 0, jlo);
        SFX(bwd_dbias_zero)(bp, b, i0, nq, jhi, S - jhi);
    }
    for (size_t j0 = jlo; j0 < jhi; j0 += BK) {
        const size_t nk = MINZ_(BK, jhi - j0);
        int cdiag;
        if (SFX(classify)(pl, NULL, i0, nq, j0, nk, &cdiag) == BLK_ALL) {
            if (bp->dbias.data)
                SFX(bwd_dbias_zero)(bp, b, i0, nq, j0, nk);
            continue;
        }
        ptrdiff_t vs;
        const T *vblk = SFX(bwd_kv)(bpl, sb, b, j0, nk, &vs);
        SFX(bwd_block)(bpl, sb, b, i0, nq, j0, nk,
                       (const T *)(sb + bpl->off_kr), vblk, vs, cdiag,
                       bp->dbias.data != NULL);
        /* dQ += dS K (dbias = dS: bwd_block) */
        SFX(mm_block)(dq, EP, nq, EP / W, dsm, 1, (ptrdiff_t)BQ,
                      (const T *)(sb + bpl->off_kr), EP, nk, bpl->guarded);
    }
    SFX(bwd_dq_store)(bpl, sb, b, i0, nq, dq);
}

#undef TI
#undef TF
#undef BWD_BASE_
#undef BOFF_
#undef MINZ_
#undef TAIL_SWITCH_
#undef BLK_ALL
#undef BLK_NONE
#undef BLK_MIXED
#undef BWD_PACK_Q
#undef BWD_SCORES
#undef BWD_PACK_K
#undef BWD_HOOKS
