/*
 * attention/tile.h -- the tiled FlashAttention-2 kernel, written once.
 *
 * NOT a normal header: a template included once per (instruction set,
 * element type) by isa/<set>.c, after simd/vec_<set>.h (the primitives:
 * T, VT, W, SFX, ATTR, VFMA, VMAX, VTRANS, VLOAD_F16 ...) and simd/math.h
 * (VEXP, VTANH, VSAFE: their list and the numeric rule are there), and
 * the set's micro-kernel shapes:
 *
 *   QK_MR, QK_NR micro-kernel of S^T = K Q^T: QK_MR keys x QK_NR vectors
 *   PV_MR, PV_NR micro-kernel of O += P V: PV_MR queries x PV_NR vectors
 *   SM_G         query vectors kept in registers by the softmax pass
 *
 * It defines item<SFX>, merge_item<SFX> (the set's table names them:
 * item_avx2_f32, merge_item_port_f64, ...) and static helpers with the
 * same suffix; csrc/core/NAMES.txt lists every such name with its line. A set with micro-kernels of its own (isa/amx.c) defines
 * TILE_HOOKS and the hooks below before including it; the hooks decide
 * from the plan (pl->own_qk, pl->own_pv: its plan hook sets them from
 * (storage, E, Ev) alone), so every other call runs the FMA kernels.
 *
 * Layout (per work item = rows i0 .. i0+nq-1 of batch item b):
 *   qt [E][BQ]     Q^T of the item, zero padded to BQ columns
 *   st [BK][BQ]    scores of one key block, KEY-major: st[j][i]. Computing
 *                   S^T = K Q^T lets the micro-kernel broadcast K[j][e] and
 *                   load contiguous vectors of Q^T (packed once per item,
 *                   not once per key block), and makes every per-query
 *                   reduction of the online softmax (max, sum) a lane-wise
 *                   vector operation: no horizontal reductions anywhere.
 *   oc [BQ][EvP]    output accumulator of the current key chunk
 *   o  [BQ][EvP]    running output of the chunks folded so far
 *
 * Keys come in chunks of pl->CK (a multiple of BK, at multiples of CK:
 * sdpa.c), each reduced from a fresh state (chunk_pass) and folded into
 * the running state in chunk order (chunk_fold); a split call leaves each
 * chunk's state to merge_item, which folds them the same way. Per key
 * block of a chunk (FlashAttention-2), over the key blocks the causal
 * limit and the window let the item see (attn__key_range: the others are
 * never touched):
 *   1. st = scale * K_blk Q^T                         (micro-kernel qk)
 *   2. softcap, + bias, ALiBi (attn.h's order), -inf where mask == 0, or
 *      causal or the window forbids (element-wise in the edge blocks only)
 *   3. m_new = max(m, max_j st), alpha = exp(m - m_new), p = exp(st - m_new),
 *      l = alpha*l + sum_j p                           (vertical, SM_G vectors)
 *   4. o = alpha o + P V_blk, the block's sum from 0  (micro-kernel pv)
 * then out = o / l. "m_new" is used as VSAFE(m_new) so a row that has seen
 * only -inf so far subtracts 0, never -inf - -inf = NaN: such a row keeps
 * l == 0 and is reported fully masked unless a NaN score made l NaN.
 *
 * Bitwise reproducibility: every score is one FMA chain over e = 0..E-1
 * whatever micro-kernel variant or block computes it (qk_block, qk_few),
 * so the weights pass (which recomputes the scores) sees exactly the
 * scores of the forward pass, and the forward pass is the same code
 * whether or not weights are wanted. Every later step is lane-wise per
 * query row over the same blocks and chunks in the same order, and a
 * block or chunk a row cannot see leaves its state unchanged: a row's
 * output and lse are the same bits whatever else is in the call.
 */

#define TI static ATTN_INLINE ATTR
#define TF static ATTR

#define BOFF_(m, b) ((m).boff ? (m).boff[(b)] : (ptrdiff_t)0)
#define MINZ_(a, b) ((a) < (b) ? (a) : (b))
/* a loop's last left < 8 rows: CASE(n), n = 1 .. 7, is a case n that
 * calls its micro-kernel for n rows (inlined per row count)            */
#define TAIL_SWITCH_(left, CASE)                                               \
    switch (left) {                                                            \
        CASE(1) CASE(2) CASE(3) CASE(4) CASE(5) CASE(6) CASE(7)                \
    default:                                                                   \
        break;                                                                 \
    }

/* block classes */
#define BLK_ALL 0   /* every score of the block is masked: skip it         */
#define BLK_NONE 1  /* no mask entry of the block is 0                     */
#define BLK_MIXED 2 /* apply the mask element-wise                          */

/* 16-bit storage (tile_half.h) */
#ifdef VLOAD_F16
#define HALF_VEC_ 1 /* this instantiation has the 16-bit primitives */
#else
#define HALF_VEC_ 0
#define VLOAD_F16(p) VZERO()
#define VLOAD_BF16(p) VZERO()
#endif

/* bytes per element of operand m, and its batch item b (offsets and
 * strides count elements of its own storage)                            */
#define ESZ_(m) ((m).store != ATTN_ST_NATIVE ? (size_t)2 : sizeof(T))
#define MAT_B_(m, b)                                                           \
    ((char *)(m).data + BOFF_(m, b) * (ptrdiff_t)ESZ_(m))

/* W elements of a 16-bit row as a vector: st is a constant where it matters
 * (the kernels are inlined per storage), so this is one load            */
#define VLOAD16_(p, st)                                                        \
    ((st) == ATTN_ST_BF16 ? VLOAD_BF16(p) : VLOAD_F16(p))

#include "attention/tile_kern.h"

#include "attention/tile_masks.h"

/* st (key-major tile) -> dst (query rows, strides s0/s1): dst[r][j] = st[j][r]
 * all: the block is masked for every row: weights 0 * (1/l), which is NaN
 * in a row whose sum is NaN, as exp(-inf - NaN) / NaN is in NumPy.       */
TI void SFX(store_tile_t)(T *dst, ptrdiff_t s0, ptrdiff_t s1, const T *st,
                          size_t ldst, size_t nq, size_t nk,
                          const unsigned char *isfm, const T *fmval,
                          const T *rinv, int all)
{
    for (size_t r = 0; r < nq; r++) {
        T *row = dst + (ptrdiff_t)r * s0;
        if (isfm && isfm[r]) {
            for (size_t j = 0; j < nk; j++)
                row[(ptrdiff_t)j * s1] = fmval[r];
        } else if (all) {
            const T zero = (T)0 * rinv[r];
            for (size_t j = 0; j < nk; j++)
                row[(ptrdiff_t)j * s1] = zero;
        } else if (s1 == 1) {
            for (size_t j = 0; j < nk; j++)
                row[j] = st[j * ldst + r];
        } else {
            for (size_t j = 0; j < nk; j++)
                row[(ptrdiff_t)j * s1] = st[j * ldst + r];
        }
    }
}

#include "attention/tile_half.h"

/* Micro-kernel hooks (see the top). Each returns nonzero when the set's
 * own kernel did the work.
 *   TILE_PACK_Q(pl, sb, q_b, i0, nq, nqv)       Q of the item's rows
 *   TILE_SCORES(pl, sb, st, ldst, nq, nqv, few, k_b, j0, nk, scaled)
 *   TILE_OWN_PV(pl)                             P V is the set's own
 *   TILE_PV(pl, sb, o, ldo, nq, pt, ldp, alpha, v_b, j0, nk)
 *   TILE_CHUNK_START(pl, k_b, v_b, j, jend, few)  (a statement)       */
#ifndef TILE_HOOKS
#define TILE_PACK_Q(pl, sb, q_b, i0, nq, nqv) 0
#define TILE_SCORES(pl, sb, st, ldst, nq, nqv, few, k_b, j0, nk, scaled) 0
#define TILE_OWN_PV(pl) 0
#define TILE_PV(pl, sb, o, ldo, nq, pt, ldp, alpha, v_b, j0, nk) 0
#define TILE_CHUNK_START(pl, k_b, v_b, j, jend, few) ((void)0)
#endif

/* st (key-major, ld ldst) = the scores of rows i0 .. i0+nq-1 (nqv vectors
 * of qt) with keys j0 .. j0+nk-1, times scale if scaled: qk_few (few
 * rows; reads 16-bit K rows in place, and asks for the rows ahead of
 * the block, keys below jend) or qk_block, or the set's own            */
TI void SFX(scores)(const attn_plan *pl, char *sb, T *st, size_t ldst,
                    size_t nq, size_t nqv, int few, const char *k_b,
                    size_t j0, size_t nk, size_t jend, int scaled)
{
    const attn_problem *p = pl->p;
    const size_t BQ = pl->BQ;
    void *qt = sb + pl->off_qt, *kt = sb + pl->off_kt, *kp = sb + pl->off_kp;
    ptrdiff_t ks = p->k.s0;
    if (TILE_SCORES(pl, sb, st, ldst, nq, nqv, few, k_b, j0, nk, scaled))
        return;
    if (few && p->k.store != ATTN_ST_NATIVE && p->k.s1 == 1) {
        /* converted in qk_few's transposes: no converted copy */
        SFX(qk_few)(st, ldst, qt, BQ, nq,
                    (const uint16_t *)k_b + (ptrdiff_t)j0 * ks, ks,
                    p->k.store, p->E, nk, jend - j0, (T)p->scale, kt);
        return;
    }
    const T *kblk = few ? SFX(kv_rows)(pl, 0, k_b, j0, nk, kp, &ks)
                        : SFX(kv_cached)(pl, sb, 0, k_b, j0, nk, &ks);
    if (few)
        SFX(qk_few)(st, ldst, qt, BQ, nq, kblk, ks, ATTN_ST_NATIVE, p->E, nk,
                    kblk != (const T *)kp ? jend - j0 : nk, /* in place */
                    (T)p->scale, kt);
    else
        SFX(qk_block)(st, ldst, qt, BQ, nqv, kblk, ks, p->E, nk,
                      (T)p->scale, scaled);
}

/* ---------------------------------------------------------------------- */
/* second pass: weights (and raw scores) of the item's rows                */
/* ---------------------------------------------------------------------- */
TF void SFX(weights_pass)(const attn_plan *pl, char *sb, size_t b, size_t i0,
                          size_t nq)
{
    const attn_problem *p = pl->p;
    const size_t S = p->S, BQ = pl->BQ, BK = pl->BK;
    const size_t nqv = (nq + W - 1) / W;
    T *st = (T *)(sb + pl->off_st);
    const T *rm_used = (const T *)(sb + pl->off_row) + ROW_M_USED * BQ;
    const T *rinv = (const T *)(sb + pl->off_row) + ROW_INV * BQ;
    const T *rfmv = (const T *)(sb + pl->off_row) + ROW_FMV * BQ;
    const unsigned char *isfm = (const unsigned char *)(sb + pl->off_fm);
    const char *k_b = MAT_B_(p->k, b);
    const uint8_t *mask_b = p->mask.data
        ? (const uint8_t *)p->mask.data + BOFF_(p->mask, b) : NULL;
    const unsigned char *mcls = mask_b
        ? SFX(mask_classes)(pl, sb, mask_b, i0, nq) : NULL;
    const size_t wsz = ESZ_(p->weights), ssz = ESZ_(p->scores);
    char *w_b = p->weights.data
        ? MAT_B_(p->weights, b) + (ptrdiff_t)i0 * p->weights.s0 * (ptrdiff_t)wsz
        : NULL;
    char *sc_b = p->scores.data
        ? MAT_B_(p->scores, b) + (ptrdiff_t)i0 * p->scores.s0 * (ptrdiff_t)ssz
        : NULL;
    const T scale = (T)p->scale;
    const VT vscale = VSET1(scale);

    for (size_t j0 = 0; j0 < S; j0 += BK) {
        const size_t nk = MINZ_(BK, S - j0);
        int cdiag;
        const int cls = SFX(classify)(pl, mcls, i0, nq, j0, nk, &cdiag);
        if (cls != BLK_ALL || sc_b) {
            SFX(scores)(pl, sb, st, BQ, nq, nqv, 0, k_b, j0, nk, j0 + nk,
                        sc_b == NULL);
            if (sc_b) {
                SFX(store_tile_any)(&p->scores, sc_b + (ptrdiff_t)j0
                                    * p->scores.s1 * (ptrdiff_t)ssz, st, BQ,
                                    nq, nk, NULL, NULL, NULL, 0);
                if (cls != BLK_ALL && w_b)
                    for (size_t j = 0; j < nk; j++)
                        for (size_t v = 0; v < nqv; v++) {
                            T *s = st + j * BQ + v * W;
                            VSTOREU(s, VMUL(VLOADU(s), vscale));
                        }
            }
        }
        if (!w_b)
            continue;
        if (cls != BLK_ALL) {
            SFX(apply_masks)(pl, st, BQ, b, i0, nq, nqv, j0, nk, mask_b, cls,
                             cdiag, NULL);
            for (size_t j = 0; j < nk; j++)
                for (size_t v = 0; v < nqv; v++) {
                    T *s = st + j * BQ + v * W;
                    VT x = VSUB(VLOADU(s), VLOADU(rm_used + v * W));
                    VSTOREU(s, VMUL(VEXP(x), VLOADU(rinv + v * W)));
                }
        }
        SFX(store_tile_any)(&p->weights, w_b + (ptrdiff_t)j0 * p->weights.s1
                            * (ptrdiff_t)wsz, st, BQ, nq, nk, isfm, rfmv, rinv,
                            cls == BLK_ALL);
    }
}

/* step 0 of an item: Q^T of rows i0 .. i0+nq-1 into qt (E x BQ), the
 * columns past nq (up to nqv vectors) zero                                */
TI void SFX(pack_qt)(const attn_plan *pl, const char *q_b0, size_t i0,
                     size_t nq, size_t nqv, T *qt)
{
    const attn_problem *p = pl->p;
    const size_t E = p->E, BQ = pl->BQ;
    const ptrdiff_t qs0 = p->q.s0, qs1 = p->q.s1;
    const T *q_b = (const T *)q_b0;
    for (size_t r = 0; r < nq; r++) {
        T *qt_r = qt + r;
        if (p->q.store != ATTN_ST_NATIVE) { /* 16 bits: exact upcast */
            const uint16_t *q16 = (const uint16_t *)q_b0
                                  + (ptrdiff_t)(i0 + r) * qs0;
            size_t e = 0;
#if HALF_VEC_
            for (T lane[W]; qs1 == 1 && e + W <= E; e += W) {
                VSTOREU(lane, VLOAD16_(q16 + e, p->q.store));
                for (size_t x = 0; x < (size_t)W; x++)
                    qt_r[(e + x) * BQ] = lane[x];
            }
#endif
            for (; e < E; e++)
                qt_r[e * BQ] = (T)attn_load_f32(p->q.store, q16,
                                                (ptrdiff_t)e * qs1);
            continue;
        }
        const T *q_bi = q_b + (ptrdiff_t)(i0 + r) * qs0;
        if (qs1 == 1)
            for (size_t e = 0; e < E; e++)
                qt_r[e * BQ] = q_bi[e];
        else
            for (size_t e = 0; e < E; e++)
                qt_r[e * BQ] = q_bi[(ptrdiff_t)e * qs1];
    }
    for (size_t e = 0; e < E; e++)
        for (size_t r = nq; r < nqv * W; r++)
            qt[e * BQ + r] = 0;
}

/* the output row of a query that saw no key, by policy (not "raise"):
 * uniform = the mean of the value rows (attn__uniform_row: the one
 * function every path uses), nan, or zero; returns the weight the weights
 * pass writes for the row                                                 */
TI T SFX(masked_row)(const attn_problem *p, size_t b, double *vmean,
                     int *have_mean, char *out_r)
{
    const size_t Ev = p->Ev;
    const ptrdiff_t os1 = p->out.s1;
    if (p->fully_masked == ATTN_FM_UNIFORM) {
        if (!*have_mean)
            attn__uniform_mean(p, b, vmean);
        *have_mean = 1;
        for (size_t c = 0; c < Ev; c++)
            SFX(put)(&p->out, out_r, (ptrdiff_t)c * os1, (T)vmean[c]);
        return p->S ? (T)1 / (T)p->S : (T)0;
    }
    const T fill = p->fully_masked == ATTN_FM_NAN ? (T)NAN : (T)0;
    for (size_t c = 0; c < Ev; c++)
        SFX(put)(&p->out, out_r, (ptrdiff_t)c * os1, fill);
    return fill;
}

/* ---------------------------------------------------------------------- */
/* key chunks: every row reduces its keys as chunks of pl->CK keys at      */
/* multiples of CK (from a fresh state, over the fixed BK blocks), folded  */
/* in chunk order by chunk_fold. A work item may fold all of its chunks    */
/* itself or leave each chunk's state to a partial buffer that            */
/* merge_item folds later: the operations on a row are the same either way, */
/* so a row's bits never depend on the call around it.                     */
/* ---------------------------------------------------------------------- */

/* A key of weight 0 contributes nothing (attn.h), not even 0 * inf =
 * NaN. A running output scaled by exactly 0 (a new max past the old by
 * more than exp's range, or a row's first visible block) holds only such
 * keys, so its inf and NaN lanes are dropped first: where f[r] == 0 the
 * lanes of row r of o (n, a multiple of W) that are not finite become 0.
 * Finite lanes keep their bits, and 0 x + acc is acc for finite x (acc,
 * a sum from +0, is never -0): every finite result is unchanged.       */
TI VT SFX(finite_or_0)(VT x)
{
    return VSEL(VEQ(VMUL(x, VZERO()), VZERO()), x, VZERO());
}
TI void SFX(drop_scaled_out)(T *o, size_t ldo, size_t nq, size_t n,
                             const T *f)
{
    for (size_t r = 0; r < nq; r++)
        if (f[r] == 0)
            for (size_t x = 0; x < n; x += W)
                VSTOREU(o + r * ldo + x,
                        SFX(finite_or_0)(VLOADU(o + r * ldo + x)));
}

/* chunk state (m, l, oc) of rows i0 .. i0+nq-1 over the keys of chunk c
 * in [jlo, jend); the Q^T tile qt is packed                               */
TF void SFX(chunk_pass)(const attn_plan *pl, char *sb, size_t b, size_t i0,
                        size_t nq, size_t c, size_t jlo, size_t jend,
                        const unsigned char *mcls)
{
    const attn_problem *p = pl->p;
    const size_t BQ = pl->BQ, BK = pl->BK, EvP = pl->EvP;
    const size_t nqv = (nq + W - 1) / W, nev = EvP / W;
    T *st = (T *)(sb + pl->off_st);
    T *oc = (T *)(sb + pl->off_oc);
    T *rm = (T *)(sb + pl->off_row) + ROW_M * BQ;
    T *rl = rm + BQ, *ralpha = rl + BQ, *rm_used = ralpha + BQ;
    T *vp = (T *)(sb + pl->off_vp);
    const char *k_b = MAT_B_(p->k, b), *v_b = MAT_B_(p->v, b);
    const uint8_t *mask_b = p->mask.data
        ? (const uint8_t *)p->mask.data + BOFF_(p->mask, b) : NULL;
    for (size_t r = 0; r < nqv * W; r++) {
        rm[r] = (T)-INFINITY;
        rl[r] = 0;
    }
    for (size_t x = 0; x < nq * EvP; x++)
        oc[x] = 0;
    /* a few rows: qk_few, which leaves the padding lanes alone (0 here,
     * then probabilities of score 0: never NaN, never denormal)         */
    const int few = pl->off_kt != 0 && nq <= ATTN_QK_FEW;
    /* V read in place by a few rows' P V (rows of whole vectors; 16-bit
     * rows converted as pv_one loads them)                              */
    const int vrow = p->v.s1 == 1 && p->Ev % W == 0
                     && (p->v.store == ATTN_ST_NATIVE ? !pl->pack_v
                                                      : HALF_VEC_);
    if (few)
        memset(st, 0, MINZ_(BK, p->S) * BQ * sizeof(T));
    const size_t c0 = c * pl->CK;
    const size_t cend = MINZ_(c0 + pl->CK, jend);
    TILE_CHUNK_START(pl, k_b, v_b, (c0 > jlo ? c0 : jlo) / BK * BK + BK, cend,
                     few);
    for (size_t j0 = (c0 > jlo ? c0 : jlo) / BK * BK; j0 < cend; j0 += BK) {
        const size_t nk = MINZ_(BK, cend - j0);
        int cdiag;
        const int cls = SFX(classify)(pl, mcls, i0, nq, j0, nk, &cdiag);
        if (cls == BLK_ALL)
            continue;
        ptrdiff_t vs = p->v.s0;
        if (few && nq == 1 && !(p->bias.data || cls == BLK_MIXED || cdiag
                                || pl->edits_scores)) {
            /* one row, nothing to mask: its scores as one contiguous row,
             * its softmax with keys in the lanes (softmax_row) */
            T *srow = (T *)(sb + pl->off_srow);
            SFX(scores)(pl, sb, srow, 1, 1, 1, 1, k_b, j0, nk, cend, 1);
            SFX(softmax_row)(srow, nk, rm, rl, ralpha, rm_used);
            SFX(drop_scaled_out)(oc, EvP, 1, EvP, ralpha);
            if (TILE_PV(pl, sb, oc, EvP, 1, srow, 1, ralpha, v_b, j0, nk))
                continue;
            if (vrow) {
                SFX(pv_one)(1, oc, EvP, nev, srow, 1, ralpha,
                            v_b + (ptrdiff_t)j0 * vs * (ptrdiff_t)ESZ_(p->v),
                            vs, nk, cend - j0, p->v.store);
                continue;
            }
            const T *vblk = SFX(kv_rows)(pl, 1, v_b, j0, nk, vp, &vs);
            SFX(pv_block)(oc, EvP, 1, nev, srow, 1, ralpha, vblk, vs, nk);
            continue;
        }
        const int vin = few && vrow && !TILE_OWN_PV(pl); /* V in place */
        const T *vblk = TILE_OWN_PV(pl) || vin ? NULL
                        : few ? SFX(kv_rows)(pl, 1, v_b, j0, nk, vp, &vs)
                              : SFX(kv_cached)(pl, sb, 1, v_b, j0, nk, &vs);
        SFX(scores)(pl, sb, st, BQ, nq, nqv, few, k_b, j0, nk, cend, 1);
        if (p->bias.data || cls == BLK_MIXED || cdiag || pl->edits_scores)
            SFX(apply_masks)(pl, st, BQ, b, i0, nq, nqv, j0, nk, mask_b, cls,
                             cdiag, NULL);
        SFX(softmax_block)(st, BQ, nk, nqv, rm, rl, ralpha, rm_used);
        SFX(drop_scaled_out)(oc, EvP, nq, EvP, ralpha);
        if (TILE_PV(pl, sb, oc, EvP, nq, st, BQ, ralpha, v_b, j0, nk))
            continue;
        if (vin) {
            SFX(pv_one)(nq, oc, EvP, nev, st, BQ, ralpha,
                        v_b + (ptrdiff_t)j0 * vs * (ptrdiff_t)ESZ_(p->v), vs,
                        nk, cend - j0, p->v.store);
            continue;
        }
        SFX(pv_block)(oc, EvP, nq, nev, st, BQ, ralpha, vblk, vs, nk);
    }
}

/* fold a chunk's state (m, l, oc) into the running state (M, Lsum, O):
 *   M' = max(M, m), a = exp(M - M'), f = exp(m - M') (-inf read as 0 in
 *   M' as in the blocks), Lsum = a Lsum + f l, O = a O + f oc
 * lane-wise; a chunk no row saw leaves the state's bits unchanged.        */
TF void SFX(chunk_fold)(const attn_plan *pl, char *sb, size_t nq,
                        const T *m, const T *l, const T *oc)
{
    const size_t BQ = pl->BQ, EvP = pl->EvP, nqv = (nq + W - 1) / W;
    T *row = (T *)(sb + pl->off_row);
    T *RM = row + ROW_RM * BQ, *RL = row + ROW_RL * BQ;
    T *fa = row + ROW_FA * BQ, *fb = row + ROW_FB * BQ;
    T *o = (T *)(sb + pl->off_o);
    for (size_t v = 0; v < nqv; v++) {
        const VT M = VLOADU(RM + v * W), mc = VLOADU(m + v * W);
        const VT Mn = VMAX(M, mc), mu = VSAFE(Mn);
        const VT a = VEXP(VSUB(M, mu)), f = VEXP(VSUB(mc, mu));
        VSTOREU(RM + v * W, Mn);
        VSTOREU(fa + v * W, a);
        VSTOREU(fb + v * W, f);
        VSTOREU(RL + v * W,
                VFMA(VLOADU(RL + v * W), a, VMUL(VLOADU(l + v * W), f)));
    }
    SFX(drop_scaled_out)(o, EvP, nq, EvP, fa);
    for (size_t r = 0; r < nq; r++) {
        const VT a = VSET1(fa[r]), f = VSET1(fb[r]);
        T *o_r = o + r * EvP;
        const T *oc_r = oc + r * EvP;
        const int drop = fb[r] == 0; /* the chunk's keys all of weight 0 */
        for (size_t x = 0; x < EvP; x += W) {
            const VT c = VLOADU(oc_r + x);
            VSTOREU(o_r + x, VFMA(VLOADU(o_r + x), a,
                                  VMUL(drop ? SFX(finite_or_0)(c) : c, f)));
        }
    }
}

/* the running state of rows i0 .. : empty                                 */
TI void SFX(state_reset)(const attn_plan *pl, char *sb, size_t nq)
{
    const size_t BQ = pl->BQ, nw = (nq + W - 1) / W * W;
    T *row = (T *)(sb + pl->off_row);
    T *RM = row + ROW_RM * BQ, *RL = row + ROW_RL * BQ;
    T *o = (T *)(sb + pl->off_o);
    for (size_t r = 0; r < nw; r++) {
        RM[r] = (T)-INFINITY;
        RL[r] = 0;
    }
    for (size_t x = 0; x < nq * pl->EvP; x++)
        o[x] = 0;
}

/* 5. out = O / Lsum, lse of the state (RM, RL, o); fully masked rows by
 * policy. Leaves the final max (as used) and 1/Lsum where weights_pass
 * reads them.                                                             */
TF attn_status SFX(finish_rows)(const attn_plan *pl, char *sb, size_t b,
                                size_t i0, size_t nq, const T *RM,
                                const T *RL, const T *o, size_t *bad_row)
{
    const attn_problem *p = pl->p;
    const size_t BQ = pl->BQ, EvP = pl->EvP, Ev = p->Ev;
    const T ninf = (T)-INFINITY;
    T *row = (T *)(sb + pl->off_row);
    T *rm_used = row + ROW_M_USED * BQ, *rinv = row + ROW_INV * BQ;
    T *rfmv = row + ROW_FMV * BQ;
    unsigned char *isfm = (unsigned char *)(sb + pl->off_fm);
    int have_mean = 0;
    char *out_b = MAT_B_(p->out, b);
    T *lse_b = p->lse.data ? (T *)p->lse.data + BOFF_(p->lse, b) : NULL;
    const ptrdiff_t osz = (ptrdiff_t)ESZ_(p->out);
    for (size_t r = 0; r < nq; r++) {
        char *out_r = out_b + (ptrdiff_t)(i0 + r) * p->out.s0 * osz;
        const T *o_r = o + r * EvP;
        const int fm = RM[r] == ninf && RL[r] == RL[r];
        isfm[r] = (unsigned char)fm;
        rm_used[r] = RM[r] == ninf ? (T)0 : RM[r]; /* VSAFE, as the blocks */
        if (lse_b) /* -inf for a fully masked row, whatever the policy */
            lse_b[(ptrdiff_t)(i0 + r) * p->lse.s0] =
                fm ? ninf
                   : (T)((double)rm_used[r] + attn_log((double)RL[r]));
        if (!fm) {
            const T inv = (T)1 / RL[r];
            rinv[r] = inv;
            SFX(store_out_row)(&p->out, out_r, o_r, inv, Ev);
            continue;
        }
        rinv[r] = 0;
        if (p->fully_masked == ATTN_FM_RAISE) {
            *bad_row = i0 + r;
            return ATTN_EFULLYMASKED;
        }
        rfmv[r] = SFX(masked_row)(p, b, (double *)(sb + pl->off_vmean),
                                  &have_mean, out_r);
    }
    return ATTN_OK;
}

/* the chunks [*c0, *c1) holding a key rows i0 .. i0+nq-1 may see         */
TI void SFX(chunk_span)(const attn_plan *pl, size_t i0, size_t nq,
                        size_t *jlo, size_t *jend, size_t *c0, size_t *c1)
{
    attn__key_range(pl, i0, nq, jlo, jend);
    *c0 = *jlo / pl->CK;
    *c1 = *jend > *jlo ? (*jend - 1) / pl->CK + 1 : *c0;
}

/* the rows of item (b, qb): i0, nq; Q^T packed                            */
TI size_t SFX(item_rows)(const attn_plan *pl, char *sb, size_t b, size_t qb,
                         size_t *nq)
{
    const attn_problem *p = pl->p;
    const size_t i0 = qb * pl->BQ;
    *nq = MINZ_(pl->BQ, p->L - i0);
    if (!TILE_PACK_Q(pl, sb, MAT_B_(p->q, b), i0, *nq, (*nq + W - 1) / W))
        SFX(pack_qt)(pl, MAT_B_(p->q, b), i0, *nq, (*nq + W - 1) / W,
                     (T *)(sb + pl->off_qt));
    return i0;
}

/* 5-6. the outputs of rows i0 .. from the state (M, Lsum, o), then the
 * weights / raw scores, recomputing each score block                     */
TI attn_status SFX(item_outputs)(const attn_plan *pl, char *sb, size_t b,
                                 size_t i0, size_t nq, int whole,
                                 size_t *bad_row)
{
    const T *row = (const T *)(sb + pl->off_row);
    const size_t BQ = pl->BQ;
    attn_status st = whole
        ? SFX(finish_rows)(pl, sb, b, i0, nq, row + ROW_RM * BQ,
                           row + ROW_RL * BQ, (const T *)(sb + pl->off_o),
                           bad_row)
        : SFX(finish_rows)(pl, sb, b, i0, nq, row + ROW_M * BQ,
                           row + ROW_L * BQ, (const T *)(sb + pl->off_oc),
                           bad_row);
    if (st == ATTN_OK && (pl->p->weights.data || pl->p->scores.data))
        SFX(weights_pass)(pl, sb, b, i0, nq);
    return st;
}

/* ---------------------------------------------------------------------- */
/* work item (b, qb, chunk): rows i0 = qb*BQ .. of batch item b. chunk ==  */
/* ATTN_ALL_CHUNKS: every chunk, folded here, then the outputs; else the   */
/* state of that one chunk goes to its slot of pl->part (merge_item).     */
/* ---------------------------------------------------------------------- */
TF attn_status SFX(item)(const attn_plan *pl, void *scratch, size_t b,
                         size_t qb, size_t chunk, size_t *bad_row)
{
    const attn_problem *p = pl->p;
    char *sb = (char *)scratch;
    const size_t BQ = pl->BQ;
    size_t nq, jlo, jend, c0, c1;
    const size_t i0 = SFX(item_rows)(pl, sb, b, qb, &nq);
    SFX(chunk_span)(pl, i0, nq, &jlo, &jend, &c0, &c1);
    const uint8_t *mask_b = p->mask.data
        ? (const uint8_t *)p->mask.data + BOFF_(p->mask, b) : NULL;
    const T *row = (const T *)(sb + pl->off_row);
    if (chunk != ATTN_ALL_CHUNKS) {
        if (chunk < c0 || chunk >= c1)
            return ATTN_OK;
        const unsigned char *mcls = mask_b
            ? SFX(mask_classes)(pl, sb, mask_b, i0, nq) : NULL;
        SFX(chunk_pass)(pl, sb, b, i0, nq, chunk, jlo, jend, mcls);
        T *slot = (T *)attn__part_slot(pl, b, qb, chunk);
        memcpy(slot, row + ROW_M * BQ, 2 * BQ * sizeof(T));
        memcpy(slot + 2 * BQ, sb + pl->off_oc, nq * pl->EvP * sizeof(T));
        return ATTN_OK;
    }
    const unsigned char *mcls = mask_b && jend > jlo
        ? SFX(mask_classes)(pl, sb, mask_b, i0, nq) : NULL;
    if (c1 == c0 + 1) { /* one chunk: folding it into the empty state would
                           copy it (exp(0) = 1): its state is the result */
        SFX(chunk_pass)(pl, sb, b, i0, nq, c0, jlo, jend, mcls);
        return SFX(item_outputs)(pl, sb, b, i0, nq, 0, bad_row);
    }
    SFX(state_reset)(pl, sb, nq);
    for (size_t c = c0; c < c1; c++) {
        SFX(chunk_pass)(pl, sb, b, i0, nq, c, jlo, jend, mcls);
        SFX(chunk_fold)(pl, sb, nq, row + ROW_M * BQ, row + ROW_L * BQ,
                        (const T *)(sb + pl->off_oc));
    }
    return SFX(item_outputs)(pl, sb, b, i0, nq, 1, bad_row);
}

/* the chunk states of item (b, qb) from pl->part, folded in chunk order,
 * then the outputs (as item with ATTN_ALL_CHUNKS)                         */
TF attn_status SFX(merge_item)(const attn_plan *pl, void *scratch, size_t b,
                               size_t qb, size_t *bad_row)
{
    char *sb = (char *)scratch;
    const size_t BQ = pl->BQ;
    size_t nq, jlo, jend, c0, c1;
    const size_t i0 = SFX(item_rows)(pl, sb, b, qb, &nq);
    SFX(chunk_span)(pl, i0, nq, &jlo, &jend, &c0, &c1);
    SFX(state_reset)(pl, sb, nq);
    for (size_t c = c0; c < c1; c++) {
        const T *slot = (const T *)attn__part_slot(pl, b, qb, c);
        SFX(chunk_fold)(pl, sb, nq, slot, slot + BQ, slot + 2 * BQ);
    }
    return SFX(item_outputs)(pl, sb, b, i0, nq, 1, bad_row);
}

/* TI, TF, BOFF_, MINZ_, TAIL_SWITCH_ and the block classes serve
 * bwd_tile.h too, which is included next and #undefs them              */
#undef HALF_VEC_
#undef ESZ_
#undef MAT_B_
#undef VLOAD16_
#undef TILE_PACK_Q
#undef TILE_SCORES
#undef TILE_OWN_PV
#undef TILE_PV
#undef TILE_CHUNK_START
#undef TILE_HOOKS
