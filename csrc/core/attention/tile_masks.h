/*
 * attention/tile_masks.h -- the score pipeline of the tile kernel after
 * the dot products, in attn.h's order: softcap, bias, ALiBi, then -inf
 * where the mask, causality or the window forbids (apply_masks), and the
 * key-block classes that let an item skip blocks (mask_classes, classify).
 *
 * Part of the template tile.h (included by it, with its parameters and
 * helper macros defined); bwd_tile.h reuses these functions.
 */

/* ---------------------------------------------------------------------- */
/* masks                                                                   */
/* ---------------------------------------------------------------------- */

/* Mask classes of every key block for the item's rows: bit 0 = some entry
 * nonzero, bit 1 = some entry zero. One sequential pass over the rows
 * (OR-accumulated column-wise, then reduced per block), cached per thread
 * while the rows are the same (a mask broadcast over the batch).         */
TF const unsigned char *SFX(mask_classes)(const attn_plan *pl, char *sb,
                                          const uint8_t *mask_b, size_t i0,
                                          size_t nq)
{
    const attn_problem *p = pl->p;
    const size_t S = p->S, BK = pl->BK;
    const ptrdiff_t s0 = p->mask.s0, s1 = p->mask.s1;
    attn_mkey *key = (attn_mkey *)(sb + pl->off_mkey);
    unsigned char *cls = (unsigned char *)(sb + pl->off_mcls);
    const uint8_t *row0 = mask_b + (ptrdiff_t)i0 * s0;
    const size_t nrows = s0 == 0 ? 1 : nq;
    if (key->valid && key->row0 == row0 && key->nrows == nrows)
        return cls;
    uint8_t *any = (uint8_t *)(sb + pl->off_macc), *zero = any + S;
    memset(any, 0, S);
    memset(zero, 0, S);
    for (size_t r = 0; r < nrows; r++) {
        const uint8_t *row = row0 + (ptrdiff_t)r * s0;
        if (s1 == 1) {
            for (size_t j = 0; j < S; j++) {
                any[j] |= row[j];
                zero[j] |= row[j] == 0;
            }
        } else {
            for (size_t j = 0; j < S; j++) {
                uint8_t x = row[(ptrdiff_t)j * s1];
                any[j] |= x;
                zero[j] |= x == 0;
            }
        }
    }
    for (size_t j0 = 0, kb = 0; j0 < S; j0 += BK, kb++) {
        const size_t nk = MINZ_(BK, S - j0);
        uint8_t a = 0, z = 0;
        for (size_t j = 0; j < nk; j++) {
            a |= any[j0 + j];
            z |= zero[j0 + j];
        }
        cls[kb] = (unsigned char)((a ? 1 : 0) | (z ? 2 : 0));
    }
    key->row0 = row0;
    key->nrows = nrows;
    key->valid = 1;
    return cls;
}

/* Which entries of the block rows i0..i0+nq-1 x keys j0..j0+nk-1 are
 * masked (by causal, the window and the uint8 mask; mcls from
 * mask_classes, or NULL). *cdiag: the causal / window limits must be
 * applied element-wise (the block straddles one of them). A block
 * truncated by the limits keeps the class of the whole key block:
 * possibly MIXED where ALL would do, never wrong.                        */
TI int SFX(classify)(const attn_plan *pl, const unsigned char *mcls,
                     size_t i0, size_t nq, size_t j0, size_t nk, int *cdiag)
{
    *cdiag = 0;
    if (pl->limited) {
        const ptrdiff_t f = (ptrdiff_t)i0 + pl->qpos;
        const ptrdiff_t l = f + (ptrdiff_t)nq - 1;
        const ptrdiff_t jf = (ptrdiff_t)j0, jl = (ptrdiff_t)(j0 + nk - 1);
        if (jf > l + pl->look_ahead || jl < f - pl->look_back)
            return BLK_ALL;
        *cdiag = jl > f + pl->look_ahead || jf < l - pl->look_back;
    }
    if (!mcls)
        return BLK_NONE;
    const unsigned c = mcls[j0 / pl->BK];
    if (!(c & 1))
        return BLK_ALL;
    return (c & 2) ? BLK_MIXED : BLK_NONE;
}

/* softcap: s = cap * tanh(s / cap) over the tile's nqv vectors per key;
 * capt (or NULL) receives tanh(s / cap) (the backward's factor)          */
TI void SFX(softcap_tile)(T *st, size_t ldst, size_t nk, size_t nqv,
                          double softcap, T *capt)
{
    const VT c = VSET1((T)softcap), ic = VSET1((T)(1.0 / softcap));
    for (size_t j = 0; j < nk; j++)
        for (size_t v = 0; v < nqv; v++) {
            T *s = st + j * ldst + v * W;
            VT t = VTANH(VMUL(VLOADU(s), ic));
            if (capt)
                VSTOREU(capt + j * ldst + v * W, t);
            VSTOREU(s, VMUL(c, t));
        }
}

/* ALiBi: s -= slope * |i' - j|, i' = i0 + r + qpos, j = j0 + j           */
TI void SFX(alibi_tile)(const attn_plan *pl, T *st, size_t ldst, size_t b,
                        size_t i0, size_t nqv, size_t j0, size_t nk)
{
    const attn_problem *p = pl->p;
    const T slope = ((const T *)p->alibi.data)[BOFF_(p->alibi, b)];
    const VT ns = VSET1(-slope), zero = VZERO();
    T lane[W];
    for (size_t l = 0; l < W; l++)
        lane[l] = (T)l;
    const VT vl = VLOADU(lane);
    for (size_t j = 0; j < nk; j++) {
        /* i' - j of row 0 of the tile */
        const ptrdiff_t d0 = (ptrdiff_t)i0 + pl->qpos - (ptrdiff_t)(j0 + j);
        T *s_j = st + j * ldst;
        for (size_t v = 0; v < nqv; v++) {
            VT d = VADD(VSET1((T)(d0 + (ptrdiff_t)(v * W))), vl);
            d = VMAX(d, VSUB(zero, d));
            VSTOREU(s_j + v * W, VFMA(ns, d, VLOADU(s_j + v * W)));
        }
    }
}

/* 2. softcap, bias, ALiBi, then -inf where the mask, causality or the
 * window forbids (on scaled scores, attn.h's order). capt: softcap_tile */
TF void SFX(apply_masks)(const attn_plan *pl, T *st, size_t ldst, size_t b,
                         size_t i0, size_t nq, size_t nqv, size_t j0,
                         size_t nk, const uint8_t *mask_b, int cls, int cdiag,
                         T *capt)
{
    const attn_problem *p = pl->p;
    const T ninf = (T)-INFINITY;
    if (p->softcap > 0)
        SFX(softcap_tile)(st, ldst, nk, nqv, p->softcap, capt);
    if (p->bias.data && p->bias.store != ATTN_ST_NATIVE) {
        /* 16 bits: each element upcast exactly, then the same adds */
        const uint16_t *b16 = (const uint16_t *)p->bias.data
                              + BOFF_(p->bias, b);
        const ptrdiff_t s0 = p->bias.s0, s1 = p->bias.s1;
        for (size_t r = 0; r < nq; r++)
            for (size_t j = 0; j < nk; j++)
                st[j * ldst + r] += (T)attn_load_f32(
                    p->bias.store, b16,
                    (ptrdiff_t)(i0 + r) * s0 + (ptrdiff_t)(j0 + j) * s1);
    } else if (p->bias.data) {
        const T *bias_b = (const T *)p->bias.data + BOFF_(p->bias, b);
        const ptrdiff_t s0 = p->bias.s0, s1 = p->bias.s1;
        if (s0 == 0) { /* one bias row for every query: vector adds */
            const T *row = bias_b + (ptrdiff_t)j0 * s1;
            for (size_t j = 0; j < nk; j++) {
                VT bj = VSET1(row[(ptrdiff_t)j * s1]);
                T *s_j = st + j * ldst;
                for (size_t v = 0; v < nqv; v++)
                    VSTOREU(s_j + v * W, VADD(VLOADU(s_j + v * W), bj));
            }
        } else {
            for (size_t r = 0; r < nq; r++) {
                const T *row = bias_b + (ptrdiff_t)(i0 + r) * s0
                               + (ptrdiff_t)j0 * s1;
                T *s_r = st + r;
                if (s1 == 1)
                    for (size_t j = 0; j < nk; j++)
                        s_r[j * ldst] += row[j];
                else
                    for (size_t j = 0; j < nk; j++)
                        s_r[j * ldst] += row[(ptrdiff_t)j * s1];
            }
        }
    }
    if (p->alibi.data)
        SFX(alibi_tile)(pl, st, ldst, b, i0, nqv, j0, nk);
    if (cls == BLK_MIXED) {
        const ptrdiff_t s0 = p->mask.s0, s1 = p->mask.s1;
        for (size_t r = 0; r < nq; r++) {
            const uint8_t *row = mask_b + (ptrdiff_t)(i0 + r) * s0
                                 + (ptrdiff_t)j0 * s1;
            T *s_r = st + r;
            if (s1 == 1)
                for (size_t j = 0; j < nk; j++) /* branch-free: cmov */
                    s_r[j * ldst] = row[j] ? s_r[j * ldst] : ninf;
            else
                for (size_t j = 0; j < nk; j++)
                    s_r[j * ldst] = row[(ptrdiff_t)j * s1] ? s_r[j * ldst]
                                                           : ninf;
        }
    }
    if (cdiag) {
        /* row r sees key j0+j iff j0 + j <= i0 + r + qpos + look_ahead ... */
        for (size_t j = 0; j < nk; j++) {
            ptrdiff_t lim = (ptrdiff_t)(j0 + j) - pl->qpos - pl->look_ahead
                            - (ptrdiff_t)i0;
            if (lim <= 0)
                continue;
            size_t n = (size_t)lim < nq ? (size_t)lim : nq;
            T *s_j = st + j * ldst;
            for (size_t r = 0; r < n; r++)
                s_j[r] = ninf;
        }
        /* ... and i0 + r + qpos - look_back <= j0 + j */
        for (size_t j = 0; pl->windowed && j < nk; j++) {
            ptrdiff_t hi = (ptrdiff_t)(j0 + j) - pl->qpos + pl->look_back
                           - (ptrdiff_t)i0; /* the last row that sees it */
            size_t r = hi < 0 ? 0 : (size_t)hi + 1;
            T *s_j = st + j * ldst;
            for (; r < nq; r++)
                s_j[r] = ninf;
        }
    }
}

