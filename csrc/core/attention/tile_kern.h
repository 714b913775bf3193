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
    switch (nk - j) {
        QK_TAIL_(1) QK_TAIL_(2) QK_TAIL_(3) QK_TAIL_(4) QK_TAIL_(5)
        QK_TAIL_(6) QK_TAIL_(7)
    default:
        break;
    }
#undef QK_TAIL_
}

/* st (nk x nqv*W, ld ldst) = K_blk (nk x E, row stride ks) . qt (E x .., ldq) */
TF void SFX(qk_block)(T *st, size_t ldst, const T *qt, size_t ldq, size_t nqv,
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
/* 4. PV micro-kernel: o[r][c] = alpha[r] o[r][c] + sum_j pt[j][r] v[j][c]  */
/*    for r < MR queries and c < NR*W value columns. The block's sum starts */
/*    from 0 (two-level summation: the error grows with sqrt(BK) +        */
/*    sqrt(S/BK), not sqrt(S)) and the rescale of the running output by    */
/*    alpha = exp(m_old - m_new) rides along in the epilogue.             */
/* ---------------------------------------------------------------------- */
TI void SFX(pv_kern)(const int MR, const int NR, T *restrict o, size_t ldo,
                     const T *restrict pt, size_t ldp, const T *alpha,
                     const T *v, ptrdiff_t vs, size_t nk)
{
    VT acc[PV_MR][PV_NR];
    for (int r = 0; r < MR; r++)
        for (int c = 0; c < NR; c++)
            acc[r][c] = VZERO();
    const T *v_j = v, *p_j = pt;
    for (size_t j = 0; j < nk; j++, v_j += vs, p_j += ldp) {
        VT x[PV_NR];
        for (int c = 0; c < NR; c++)
            x[c] = VLOADU(v_j + (size_t)c * W);
        for (int r = 0; r < MR; r++) {
            VT pb = VSET1(p_j[r]);
            for (int c = 0; c < NR; c++)
                acc[r][c] = VFMA(pb, x[c], acc[r][c]);
        }
    }
    for (int r = 0; r < MR; r++) {
        VT a = VSET1(alpha[r]);
        for (int c = 0; c < NR; c++) {
            T *o_rc = o + (size_t)r * ldo + (size_t)c * W;
            VSTOREU(o_rc, VFMA(VLOADU(o_rc), a, acc[r][c]));
        }
    }
}

TI void SFX(pv_rows)(const int MR, T *o, size_t ldo, size_t nev, const T *pt,
                     size_t ldp, const T *alpha, const T *v, ptrdiff_t vs,
                     size_t nk)
{
    size_t c = 0;
    for (; c + PV_NR <= nev; c += PV_NR)
        SFX(pv_kern)(MR, PV_NR, o + c * W, ldo, pt, ldp, alpha, v + c * W, vs,
                     nk);
    for (; c < nev; c++)
        SFX(pv_kern)(MR, 1, o + c * W, ldo, pt, ldp, alpha, v + c * W, vs, nk);
}

/* o (nq x nev*W, ld ldo) = alpha o + pt^T (pt: nk x .., ld ldp) . V_blk  */
TF void SFX(pv_block)(T *o, size_t ldo, size_t nq, size_t nev, const T *pt,
                      size_t ldp, const T *alpha, const T *v, ptrdiff_t vs,
                      size_t nk)
{
    size_t i = 0;
    for (; i + PV_MR <= nq; i += PV_MR)
        SFX(pv_rows)(PV_MR, o + i * ldo, ldo, nev, pt + i, ldp, alpha + i, v,
                     vs, nk);
    T *o_i = o + i * ldo;
    const T *p_i = pt + i, *a_i = alpha + i;
#define PV_TAIL_(n)                                                            \
    case n:                                                                    \
        SFX(pv_rows)(MINZ_(n, PV_MR), o_i, ldo, nev, p_i, ldp, a_i, v, vs,     \
                     nk);                                                      \
        break;
    switch (nq - i) {
        PV_TAIL_(1) PV_TAIL_(2) PV_TAIL_(3) PV_TAIL_(4) PV_TAIL_(5)
        PV_TAIL_(6) PV_TAIL_(7)
    default:
        break;
    }
#undef PV_TAIL_
}

/* ---------------------------------------------------------------------- */
/* 4'. Value blocks holding inf or NaN. A key of weight 0 contributes      */
/*    nothing (attn.h), but the FMA micro-kernel would add 0 * inf = NaN.  */
/*    v_block_finite tests the exponent bits of key block kb of batch item */
/*    b (integer compares, vectorisable), once per call: the answer is     */
/*    kept in pl->vfin, shared by the threads (a benign race: two threads */
/*    may both test a block and store the same answer). The rare           */
/*    non-finite block takes pv_block_guarded, a plain loop that skips    */
/*    zero weights. The whole key block is tested, also when a causal item */
/*    uses only its first keys: never wrong, at worst the guarded loop.    */
/* ---------------------------------------------------------------------- */
TI int SFX(v_rows_finite)(const T *v, ptrdiff_t s0, ptrdiff_t s1, size_t nk,
                          size_t Ev)
{
    unsigned bad = 0;
    for (size_t j = 0; j < nk; j++) {
        const T *v_j = v + (ptrdiff_t)j * s0;
        if (sizeof(T) == 4) {
            for (size_t c = 0; c < Ev; c++) {
                uint32_t u;
                memcpy(&u, &v_j[(ptrdiff_t)c * s1], 4);
                bad |= (u & 0x7f800000u) == 0x7f800000u;
            }
        }
        else {
            for (size_t c = 0; c < Ev; c++) {
                uint64_t u;
                memcpy(&u, &v_j[(ptrdiff_t)c * s1], 8);
                bad |= (u & 0x7ff0000000000000u) == 0x7ff0000000000000u;
            }
        }
    }
    return !bad;
}

TI int SFX(v_block_finite)(const attn_plan *pl, const T *v_b, size_t b,
                           size_t j0)
{
    const attn_problem *p = pl->p;
    const size_t nk = MINZ_(pl->BK, p->S - j0);
    const T *v = v_b + (ptrdiff_t)j0 * p->v.s0;
    if (!pl->vfin) /* no table (allocation failed): test every time */
        return p->v.s1 == 1
                   ? SFX(v_rows_finite)(v, p->v.s0, 1, nk, p->Ev)
                   : SFX(v_rows_finite)(v, p->v.s0, p->v.s1, nk, p->Ev);
    _Atomic unsigned char *f = &pl->vfin[b * pl->nkb + j0 / pl->BK];
    unsigned char known = atomic_load_explicit(f, memory_order_relaxed);
    if (!known) {
        int fin = p->v.s1 == 1
                      ? SFX(v_rows_finite)(v, p->v.s0, 1, nk, p->Ev)
                      : SFX(v_rows_finite)(v, p->v.s0, p->v.s1, nk, p->Ev);
        known = fin ? 1 : 2;
        atomic_store_explicit(f, known, memory_order_relaxed);
    }
    return known == 1;
}

TF void SFX(pv_block_guarded)(T *o, size_t ldo, size_t nq, size_t Ev,
                              const T *pt, size_t ldp, const T *alpha,
                              const T *v, ptrdiff_t vs, size_t nk)
{
    for (size_t r = 0; r < nq; r++) {
        T *o_r = o + r * ldo;
        for (size_t c = 0; c < Ev; c++) {
            T acc = 0;
            for (size_t j = 0; j < nk; j++) {
                const T p_jr = pt[j * ldp + r];
                if (p_jr != 0)
                    acc += p_jr * v[(ptrdiff_t)j * vs + (ptrdiff_t)c];
            }
            o_r[c] = o_r[c] * alpha[r] + acc;
        }
    }
}

/* ---------------------------------------------------------------------- */
/* 3. online softmax over one key block, G query vectors at a time         */
/* ---------------------------------------------------------------------- */
TI void SFX(sm_group)(const int G, T *st, size_t ldst, size_t nk, T *m, T *l,
                      T *alpha, T *muse)
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
        VSTOREU(muse + (size_t)g * W, mu[g]);
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

TF void SFX(softmax_block)(T *st, size_t ldst, size_t nk, size_t nqv, T *m,
                           T *l, T *alpha, T *muse)
{
    size_t v = 0;
    for (; v + SM_G <= nqv; v += SM_G)
        SFX(sm_group)(SM_G, st + v * W, ldst, nk, m + v * W, l + v * W,
                      alpha + v * W, muse + v * W);
    for (; v < nqv; v++)
        SFX(sm_group)(1, st + v * W, ldst, nk, m + v * W, l + v * W,
                      alpha + v * W, muse + v * W);
}
