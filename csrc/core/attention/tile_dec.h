/*
 * attention/tile_dec.h -- qk_few's scores for a set defining QK_FEW_REG
 * (isa/avx2.c): the K block transposed in registers as it is loaded and
 * used at once, with no K^T written to scratch.
 *
 * Part of the template tile.h (included by tile_kern.h, after KVEC_ and
 * KONE_, before qk_few that calls qk_reg_rows).
 */

#if defined(VTRANS) && defined(QK_FEW_REG)
/* qk_few without K^T in scratch (a set defining QK_FEW_REG): G groups of
 * W keys at a time, each W x W block of K transposed in registers and
 * used at once by NQ rows; a score's chain is still k[e] * q[e] + acc
 * over e = 0..E-1 from 0, times scale, so the bits of qk_few. The key
 * block is read once, from memory, with no copy written and read back;
 * the G x NQ chains are independent, so their FMA latencies overlap.  */
#define QK_REG_GMAX 4
#ifndef QK_REG_NOINLINE_
/* not inlined, and not cold either (ATTN_NOINLINE): the paths off the
 * hot loop (E past the last vector, a lone group) out of line, compiled
 * once per type instead of once per shape (nq, G, storage): most of
 * isa/avx2.c's compile time and code went to those copies             */
#if defined(__GNUC__) || defined(__clang__)
#define QK_REG_NOINLINE_ __attribute__((noinline))
#elif defined(_MSC_VER)
#define QK_REG_NOINLINE_ __declspec(noinline)
#else
#define QK_REG_NOINLINE_
#endif
#endif
/* one step of qk_reg_k: columns e .. e+W-1 of group g (keys j0 + g*W ..,
 * all below nk) into acc[r][g]; a function of its own, so that g is a
 * constant where it is called and acc stays in registers. pf: the rows
 * DEC_AHEAD keys on (below npf) asked into L2 at these columns' line, so
 * that memory streams while the block is computed                     */
TI void SFX(qk_reg_g)(const int NQ, const int g,
                      VT acc[][QK_REG_GMAX], const T *qt, size_t ldq,
                      const void *k, ptrdiff_t ks, attn_store kst, size_t e,
                      size_t j0, size_t npf, int pf)
{
    const size_t jg = j0 + (size_t)g * W;
    const ptrdiff_t at = (ptrdiff_t)jg * ks + (ptrdiff_t)e;
    const ptrdiff_t esz = kst == ATTN_ST_NATIVE ? (ptrdiff_t)sizeof(T) : 2;
    VT x[W];
    for (size_t i = 0; pf && i < (size_t)W; i++)
        if (jg + DEC_AHEAD + i < npf)
            ATTN_PREFETCH_L2((const char *)k
                             + (at + (ptrdiff_t)(DEC_AHEAD + i) * ks) * esz);
#ifdef VLOADT_F32 /* the set's transposing loads */
    if (kst == ATTN_ST_NATIVE)
        VLOADT_F32(x, (const T *)k + at, ks);
    else if (kst == ATTN_ST_BF16)
        VLOADT_BF16(x, (const uint16_t *)k + at, ks);
    else
        VLOADT_F16(x, (const uint16_t *)k + at, ks);
#else
    for (size_t i = 0; i < (size_t)W; i++)
        x[i] = KVEC_(k, at + (ptrdiff_t)i * ks, kst);
    VTRANS(x);
#endif
    for (int r = 0; r < NQ; r++)
        for (size_t i = 0; i < (size_t)W; i++)
            acc[r][g] = VFMA(x[i], VSET1(qt[(e + i) * ldq + (size_t)r]),
                             acc[r][g]);
}

/* the columns e .. E-1 past the last whole vector, lane by lane, into
 * acc of rows r < nq, key groups g < ng from j0 (lanes past nk 0); out
 * of line: no hot loop, and one copy instead of one a shape            */
TF QK_REG_NOINLINE_ void SFX(qk_reg_etail)(size_t nq, size_t ng,
                                           VT acc[][QK_REG_GMAX],
                                           const T *qt, size_t ldq,
                                           const void *k, ptrdiff_t ks,
                                           attn_store kst, size_t e,
                                           size_t E, size_t j0, size_t nk)
{
    for (; e < E; e++)
        for (size_t g = 0; g < ng; g++) {
            T lane[W];
            const size_t jg = j0 + g * W;
            for (size_t i = 0; i < (size_t)W; i++)
                lane[i] = jg + i < nk
                    ? KONE_(k, (ptrdiff_t)(jg + i) * ks + (ptrdiff_t)e, kst)
                    : (T)0;
            for (size_t r = 0; r < nq; r++)
                acc[r][g] = VFMA(VLOADU(lane), VSET1(qt[e * ldq + r]),
                                 acc[r][g]);
        }
}

/* the scores of acc (rows r < NQ, groups g < G from j0) times vs       */
TI void SFX(qk_reg_store)(const int NQ, const int G, VT acc[][QK_REG_GMAX],
                          T *st, size_t ldst, size_t j0, size_t nk, VT vs)
{
    for (int r = 0; r < NQ; r++)
        for (int g = 0; g < G; g++) {
            const size_t jg = j0 + (size_t)g * W;
            if (ldst == 1 && NQ == 1) { /* one row (srow, BK rounded up
                                           to W): lanes past nk are 0 */
                VSTOREU(st + jg, VMUL(acc[r][g], vs));
                continue;
            }
            T lane[W];
            VSTOREU(lane, VMUL(acc[r][g], vs));
            for (size_t i = 0; i < (size_t)W && jg + i < nk; i++)
                st[(jg + i) * ldst + (size_t)r] = lane[i];
        }
}

/* groups j0 / W .. + G - 1, all G*W keys below nk                       */
TI void SFX(qk_reg_k)(const int NQ, const int G, T *st, size_t ldst,
                      const T *qt, size_t ldq, const void *k, ptrdiff_t ks,
                      attn_store kst, size_t E, size_t j0, size_t nk,
                      size_t npf, VT vs)
{
    VT acc[ATTN_QK_FEW][QK_REG_GMAX];
    for (int r = 0; r < NQ; r++)
        for (int g = 0; g < G; g++)
            acc[r][g] = VZERO();
    const size_t esz = kst == ATTN_ST_NATIVE ? sizeof(T) : 2;
    size_t e = 0;
    for (; e + W <= E; e += W) {
        const int pf = (e * esz) % 64 == 0;
#define QK_REG_G_(g)                                                          \
    SFX(qk_reg_g)(NQ, g, acc, qt, ldq, k, ks, kst, e, j0, npf, pf)
        QK_REG_G_(0);
        if (G > 1)
            QK_REG_G_(1);
        if (G > 2)
            QK_REG_G_(2);
        if (G > 3)
            QK_REG_G_(3);
#undef QK_REG_G_
    }
    if (e < E) { /* through a copy: acc's address never taken, so acc
                    stays in registers in the loop above               */
        VT t[ATTN_QK_FEW][QK_REG_GMAX];
        for (int r = 0; r < NQ; r++)
            for (int g = 0; g < G; g++)
                t[r][g] = acc[r][g];
        SFX(qk_reg_etail)((size_t)NQ, (size_t)G, t, qt, ldq, k, ks, kst, e,
                          E, j0, nk);
        for (int r = 0; r < NQ; r++)
            for (int g = 0; g < G; g++)
                acc[r][g] = t[r][g];
    }
    SFX(qk_reg_store)(NQ, G, acc, st, ldst, j0, nk, vs);
}

/* one group, keys j0 .. min(j0 + W, nk) - 1 (lanes past nk 0), for nq
 * rows: at most two a block (the end of a sequence), so one copy for
 * every nq and storage, out of line                                     */
TF QK_REG_NOINLINE_ void SFX(qk_reg_one)(size_t nq, T *st, size_t ldst,
                                          const T *qt, size_t ldq,
                                          const void *k, ptrdiff_t ks,
                                          attn_store kst, size_t E,
                                          size_t j0, size_t nk, VT vs)
{
    VT acc[ATTN_QK_FEW][QK_REG_GMAX];
    for (size_t r = 0; r < nq; r++)
        acc[r][0] = VZERO();
    size_t e = 0;
    for (; e + W <= E; e += W) {
        VT x[W];
        for (size_t i = 0; i < (size_t)W; i++)
            x[i] = j0 + i < nk ? KVEC_(k, (ptrdiff_t)(j0 + i) * ks
                                              + (ptrdiff_t)e, kst)
                               : VZERO();
        VTRANS(x);
        for (size_t r = 0; r < nq; r++)
            for (size_t i = 0; i < (size_t)W; i++)
                acc[r][0] = VFMA(x[i], VSET1(qt[(e + i) * ldq + r]),
                                 acc[r][0]);
    }
    SFX(qk_reg_etail)(nq, 1, acc, qt, ldq, k, ks, kst, e, E, j0, nk);
    SFX(qk_reg_store)((int)nq, 1, acc, st, ldst, j0, nk, vs);
}

/* every key of the block, G groups of W keys a pass: 4 (one row), 3 or
 * 2 chains per row as the whole groups left allow (one chain alone would
 * wait on its FMA latency); a group left alone, whole or not, by
 * qk_reg_one. A whole key block (sdpa.c: 48 floats, 6 groups; 32
 * doubles, 8) leaves none: 3 + 3 or 2 + 2 + 2 floats, 4 + 4, 3 + 3 + 2
 * or 2 + 2 + 2 + 2 doubles; a lone group ends a sequence              */
TI void SFX(qk_reg_st)(const int NQ, T *st, size_t ldst, const T *qt,
                       size_t ldq, const void *k, ptrdiff_t ks,
                       attn_store kst, size_t E, size_t nk, size_t npf,
                       VT vs)
{
    const size_t nfull = nk / W;
    size_t g = 0;
    while (g + 1 < nfull) {
        const size_t left = nfull - g;
        if (NQ == 1 && (left == 4 || left >= 8)) {
            SFX(qk_reg_k)(NQ, 4, st, ldst, qt, ldq, k, ks, kst, E, g * W,
                          nk, npf, vs);
            g += 4;
        } else if (NQ <= 2 && left >= 3) {
            SFX(qk_reg_k)(NQ, 3, st, ldst, qt, ldq, k, ks, kst, E, g * W,
                          nk, npf, vs);
            g += 3;
        } else {
            SFX(qk_reg_k)(NQ, 2, st, ldst, qt, ldq, k, ks, kst, E, g * W,
                          nk, npf, vs);
            g += 2;
        }
    }
    for (; g * W < nk; g++) /* a whole group, then a part, at most */
        SFX(qk_reg_one)((size_t)NQ, st, ldst, qt, ldq, k, ks, kst, E, g * W,
                        nk, vs);
}

TI void SFX(qk_reg_rows)(size_t nq, T *st, size_t ldst, const T *qt,
                         size_t ldq, const void *k, ptrdiff_t ks,
                         attn_store kst, size_t E, size_t nk, size_t npf,
                         VT vs)
{
    switch (nq) {
    case 1: /* rows of the common head sizes one after the other: the
               row stride a constant, so every row's address is one base
               plus a displacement (no pointer per row in registers)   */
        if (ks == 128 && E == 128)
            SFX(qk_reg_st)(1, st, ldst, qt, ldq, k, 128, kst, 128, nk, npf,
                           vs);
        else if (ks == 64 && E == 64)
            SFX(qk_reg_st)(1, st, ldst, qt, ldq, k, 64, kst, 64, nk, npf, vs);
        else
            SFX(qk_reg_st)(1, st, ldst, qt, ldq, k, ks, kst, E, nk, npf, vs);
        break;
    case 2:
        SFX(qk_reg_st)(2, st, ldst, qt, ldq, k, ks, kst, E, nk, npf, vs);
        break;
    case 3:
        SFX(qk_reg_st)(3, st, ldst, qt, ldq, k, ks, kst, E, nk, npf, vs);
        break;
    default:
        SFX(qk_reg_st)(4, st, ldst, qt, ldq, k, ks, kst, E, nk, npf, vs);
        break;
    }
}
#endif
