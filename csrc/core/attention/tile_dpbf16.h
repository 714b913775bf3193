/*
 * attention/tile_dpbf16.h -- the scores S = scale Q K^T of bfloat16 Q and
 * K with AVX512-BF16's vdpbf16ps: each instruction adds the products of a
 * PAIR of features (2p, 2p+1) to a float accumulator, so a score is one
 * chain over the pairs p = 0 .. E/2-1, in that order, from 0, times scale
 * (that product under DAZ | FTZ too, like the chain: a scaled score below
 * the normal range is 0). Every score kernel runs that same chain:
 * qk_few_dp (keys in the lanes, for decoding; K^T built by 16 x 16
 * transposes of 32-bit pairs, no conversion) and qk_dp_block (queries in
 * the lanes, K pairs broadcast) with vdpbf16ps, and qk_block on floats as
 * vdpbf16ps's FMA twin (below: for query blocks on CPUs where vdpbf16ps
 * is timed the slower, dp_choice.c), so a row's scores, and all after
 * them, are the same bits in any of them: batch invariance holds as on
 * the float path. The bits differ
 * from the float path's (pairs, and vdpbf16ps flushes subnormals), within
 * float rounding of the scores.
 *
 * Part of the template tile.h for the AVX-512 float instantiation only
 * (ATTN_DPBF16 set by sdpa_avx512.c, gcc / clang); used when the plan
 * says so (pl->dpbf16: the CPU has AVX512_BF16, q and k are bfloat16, E
 * is even). Q's pairs are packed per work item into the qt scratch as
 * 32-bit words, qt2[p * BQ + i] = (q[i][2p], q[i][2p+1]), or for the
 * FMA twin as floats with each pair swapped.
 */

#define DPATTR ATTN_TARGET("avx512f,avx512bf16,avx2,fma")
#define DP_(acc, a, b) _mm512_dpbf16_ps(acc, (__m512bh)(a), (__m512bh)(b))

static ATTN_INLINE uint32_t dp_pair(const uint16_t *x)
{
    uint32_t u;
    memcpy(&u, x, sizeof u);
    return u;
}

/* the FMA twin of the pair chain (pl->dpbf16 == ATTN_DP_FMA): per lane,
 * vdpbf16ps(acc, a, b) is, bit for bit, fma(a[2p], b[2p], fma(a[2p+1],
 * b[2p+1], acc)) with subnormal inputs read as 0 and subnormal results
 * flushed to 0 (MXCSR's DAZ and FTZ), so qk_block on floats with each
 * feature pair swapped, run under DAZ | FTZ, gives the same scores at
 * the FMA units' rate, where vdpbf16ps delivers fewer multiply-adds
 * (dp_choice.c measures). Items of a few rows keep the pairs (qk_few_dp). */
static ATTN_INLINE int dp_fma_item(const attn_plan *pl, size_t nq)
{
    return pl->dpbf16 == ATTN_DP_FMA
           && !(pl->off_kt != 0 && nq <= ATTN_QK_FEW);
}

/* the float of a bfloat16 bit pattern (exact) */
static ATTN_INLINE float dp_f32(uint32_t h)
{
    const uint32_t u = h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Q's pairs of rows i0 .. i0+nq-1 into qt2 (E/2 x BQ words), zero padded;
 * for an FMA-twin item, floats with each pair swapped into qt (E x BQ)  */
TI void SFX(pack_qt2)(const attn_plan *pl, const char *q_b0, size_t i0,
                      size_t nq, size_t nqv, uint32_t *qt2)
{
    const attn_problem *p = pl->p;
    const size_t E2 = p->E / 2, BQ = pl->BQ;
    const uint16_t *q_b = (const uint16_t *)q_b0;
    const int fma = dp_fma_item(pl, nq);
    float *qt = (float *)qt2;
    for (size_t r = 0; r < nq; r++) {
        const uint16_t *q_r = q_b + (ptrdiff_t)(i0 + r) * p->q.s0;
        for (size_t e2 = 0; e2 < E2; e2++) {
            const uint32_t lo = q_r[(ptrdiff_t)(2 * e2) * p->q.s1],
                           hi = q_r[(ptrdiff_t)(2 * e2 + 1) * p->q.s1];
            if (fma) {
                qt[2 * e2 * BQ + r] = dp_f32(hi);
                qt[(2 * e2 + 1) * BQ + r] = dp_f32(lo);
            } else {
                qt2[e2 * BQ + r] = lo | hi << 16;
            }
        }
    }
    for (size_t e = 0; e < (fma ? 2 * E2 : E2); e++)
        for (size_t r = nq; r < nqv * W; r++)
            qt2[e * BQ + r] = 0; /* 0.0f too */
}

/* K rows j0 .. j0+nk-1 as floats with each pair swapped, into kp (nk x E) */
TI const float *SFX(k_dp_fma)(const attn_plan *pl, const char *k_b,
                              size_t j0, size_t nk, float *kp)
{
    const attn_problem *p = pl->p;
    const uint16_t *k = (const uint16_t *)k_b + (ptrdiff_t)j0 * p->k.s0;
    const size_t E = p->E;
    for (size_t r = 0; r < nk; r++) {
        const uint16_t *k_r = k + (ptrdiff_t)r * p->k.s0;
        float *d = kp + r * E;
        if (p->k.s1 == 1) {
            for (size_t e = 0; e < E; e += 2) {
                d[e] = dp_f32(k_r[e + 1]);
                d[e + 1] = dp_f32(k_r[e]);
            }
        } else {
            for (size_t e = 0; e < E; e += 2) {
                d[e] = dp_f32(k_r[(ptrdiff_t)(e + 1) * p->k.s1]);
                d[e + 1] = dp_f32(k_r[(ptrdiff_t)e * p->k.s1]);
            }
        }
    }
    return kp;
}

/* K rows j0 .. j0+nk-1 (bfloat16) with contiguous features: in place, or
 * copied into kp (nk x E halves)                                        */
TI const uint16_t *SFX(k_dp_block)(const attn_plan *pl, const char *k_b,
                                   size_t j0, size_t nk, void *kp,
                                   ptrdiff_t *ks)
{
    const attn_problem *p = pl->p;
    const uint16_t *k = (const uint16_t *)k_b + (ptrdiff_t)j0 * p->k.s0;
    *ks = p->k.s0;
    if (p->k.s1 == 1)
        return k;
    uint16_t *d = kp;
    for (size_t r = 0; r < nk; r++)
        for (size_t e = 0; e < p->E; e++)
            d[r * p->E + e] = k[(ptrdiff_t)r * p->k.s0 + (ptrdiff_t)e * p->k.s1];
    *ks = (ptrdiff_t)p->E;
    return d;
}

static ATTN_INLINE DPATTR void SFX(dp_kern)(const int MR, const int NR,
                                            T *restrict st, size_t ldst,
                                            const uint32_t *restrict qt2,
                                            size_t ldq, const uint16_t *k,
                                            ptrdiff_t ks, size_t E2,
                                            __m512 vscale)
{
    __m512 acc[QK_MR][QK_NR];
    for (int r = 0; r < MR; r++)
        for (int v = 0; v < NR; v++)
            acc[r][v] = _mm512_setzero_ps();
    for (size_t e2 = 0; e2 < E2; e2++) {
        __m512i q[QK_NR];
        for (int v = 0; v < NR; v++)
            q[v] = _mm512_loadu_si512(qt2 + e2 * ldq + (size_t)v * W);
        for (int r = 0; r < MR; r++) {
            const __m512i kb = _mm512_set1_epi32(
                (int)dp_pair(k + (ptrdiff_t)r * ks + (ptrdiff_t)(2 * e2)));
            for (int v = 0; v < NR; v++)
                acc[r][v] = DP_(acc[r][v], kb, q[v]);
        }
    }
    for (int r = 0; r < MR; r++)
        for (int v = 0; v < NR; v++)
            _mm512_storeu_ps(st + (size_t)r * ldst + (size_t)v * W,
                             _mm512_mul_ps(acc[r][v], vscale));
}

static ATTN_INLINE DPATTR void SFX(dp_cols)(const int NR, T *st, size_t ldst,
                                            const uint32_t *qt2, size_t ldq,
                                            const uint16_t *k, ptrdiff_t ks,
                                            size_t E2, size_t nk, __m512 vs)
{
    size_t j = 0;
    for (; j + QK_MR <= nk; j += QK_MR)
        SFX(dp_kern)(QK_MR, NR, st + j * ldst, ldst, qt2, ldq,
                     k + (ptrdiff_t)j * ks, ks, E2, vs);
    T *st_j = st + j * ldst;
    const uint16_t *k_j = k + (ptrdiff_t)j * ks;
#define DP_TAIL_(n)                                                            \
    case n:                                                                    \
        SFX(dp_kern)(MINZ_(n, QK_MR), NR, st_j, ldst, qt2, ldq, k_j, ks, E2,   \
                     vs);                                                      \
        break;
    switch (nk - j) {
        DP_TAIL_(1) DP_TAIL_(2) DP_TAIL_(3) DP_TAIL_(4) DP_TAIL_(5)
        DP_TAIL_(6) DP_TAIL_(7)
    default:
        break;
    }
#undef DP_TAIL_
}

/* qk_block's shape: st (nk x nqv*W) = scale K_blk . Q^T                  */
static DPATTR void SFX(qk_dp_block)(T *st, size_t ldst, const uint32_t *qt2,
                                    size_t ldq, size_t nqv, const uint16_t *k,
                                    ptrdiff_t ks, size_t E2, size_t nk,
                                    T scale)
{
    const __m512 vs = _mm512_set1_ps(scale);
    size_t v = 0;
    for (; v + QK_NR <= nqv; v += QK_NR)
        SFX(dp_cols)(QK_NR, st + v * W, ldst, qt2 + v * W, ldq, k, ks, E2, nk,
                     vs);
    for (; v < nqv; v++)
        SFX(dp_cols)(1, st + v * W, ldst, qt2 + v * W, ldq, k, ks, E2, nk, vs);
}

/* qk_few's shape: st[j * ldst + r], rows r < nq, keys j < nk; kt2: K^T
 * of the block as pairs (E/2 x round_up(nk, W) words)                   */
static DPATTR void SFX(qk_few_dp)(T *st, size_t ldst, const uint32_t *qt2,
                                  size_t ldq, size_t nq, const uint16_t *k,
                                  ptrdiff_t ks, size_t E2, size_t nk, T scale,
                                  uint32_t *kt2)
{
    const size_t ldkt = (nk + W - 1) / W * W;
    for (size_t g = 0; g < ldkt; g += W) {
        size_t e2 = 0;
        for (; e2 + W <= E2; e2 += W) {
            __m512 r[W];
            for (size_t i = 0; i < (size_t)W; i++) {
                const uint16_t *row = k + (ptrdiff_t)(g + i) * ks
                                      + (ptrdiff_t)(2 * e2);
                if (g + W + i < nk)
                    ATTN_PREFETCH(row + W * ks);
                r[i] = g + i < nk
                    ? _mm512_castsi512_ps(_mm512_loadu_si512(row))
                    : _mm512_setzero_ps();
            }
            VTRANS(r);
            for (size_t i = 0; i < (size_t)W; i++)
                _mm512_storeu_ps((float *)(kt2 + (e2 + i) * ldkt + g), r[i]);
        }
        for (; e2 < E2; e2++)
            for (size_t i = 0; i < (size_t)W; i++)
                kt2[e2 * ldkt + g + i] =
                    g + i < nk ? dp_pair(k + (ptrdiff_t)(g + i) * ks
                                         + (ptrdiff_t)(2 * e2))
                               : 0;
    }
    const __m512 vs = _mm512_set1_ps(scale);
    for (size_t r = 0; r < nq; r++)
        for (size_t g0 = 0; g0 < ldkt; g0 += QK_FEW_G * W) {
            const size_t ng = MINZ_((size_t)QK_FEW_G, (ldkt - g0) / W);
            __m512 acc[QK_FEW_G];
            for (size_t g = 0; g < ng; g++)
                acc[g] = _mm512_setzero_ps();
            for (size_t e2 = 0; e2 < E2; e2++) {
                const __m512i qb = _mm512_set1_epi32((int)qt2[e2 * ldq + r]);
                const uint32_t *kt_e = kt2 + e2 * ldkt + g0;
                for (size_t g = 0; g < ng; g++)
                    acc[g] = DP_(acc[g], _mm512_loadu_si512(kt_e + g * W), qb);
            }
            for (size_t g = 0; g < ng; g++) {
                T lane[W];
                _mm512_storeu_ps(lane, _mm512_mul_ps(acc[g], vs));
                const size_t j0 = g0 + g * W;
                for (size_t i = 0; i < (size_t)W && j0 + i < nk; i++)
                    st[(j0 + i) * ldst + r] = lane[i];
            }
        }
}

/* MXCSR with DAZ (bit 6) and FTZ (bit 15) set, or restored; the memory
 * clobber keeps the kernel's loads and stores of st between the two   */
static ATTN_INLINE void dp_set_csr(unsigned csr)
{
    __asm__ volatile("ldmxcsr %0" : : "m"(csr) : "memory");
}

static ATTN_INLINE unsigned dp_get_csr(void)
{
    unsigned csr;
    __asm__ volatile("stmxcsr %0" : "=m"(csr) : : "memory");
    return csr;
}

#if ATTN_HAVE_AMX
#include "attention/tile_amx.h"
#endif

/* tile.h's scores() when the plan says dpbf16: AMX tiles (tile_amx.h), or
 * the pair chain by qk_few_dp, qk_dp_block or (FMA-twin items) qk_block;
 * all under DAZ | FTZ, the product by scale included (so the twin scales
 * in qk_block's registers, as the float path does, and a scaled score
 * below the normal range is 0 in every kernel)                          */
TI void SFX(scores_dp)(const attn_plan *pl, char *sb, T *st, size_t ldst,
                       size_t nq, size_t nqv, int few, const char *k_b,
                       size_t j0, size_t nk, int scaled)
{
    const T scale = scaled ? (T)pl->p->scale : (T)1;
    const size_t E = pl->p->E;
    const unsigned csr = dp_get_csr();
#if ATTN_HAVE_AMX
    if (pl->dpbf16 == ATTN_DP_AMX) {
        ptrdiff_t ks;
        const uint16_t *k =
            SFX(k_dp_block)(pl, k_b, j0, nk, sb + pl->off_kp, &ks);
        const size_t ncols = few ? nq : nqv * W;
        dp_set_csr(csr | 0x8040u);
        SFX(amx_scores)(st, ldst, ncols, (const uint32_t *)(sb + pl->off_qt),
                        pl->BQ, (ncols + W - 1) / W, k, ks, E, nk, scale);
        dp_set_csr(csr);
        return;
    }
#endif
    if (!few && dp_fma_item(pl, nq)) {
        int have = 0;
        float *slot = SFX(kv_slot)(pl, sb, 0, k_b, j0, nk, &have);
        const float *kf = have ? slot
            : SFX(k_dp_fma)(pl, k_b, j0, nk,
                            slot ? slot : (float *)(sb + pl->off_kp));
        dp_set_csr(csr | 0x8040u);
        SFX(qk_block)(st, ldst, (const T *)(sb + pl->off_qt), pl->BQ, nqv,
                      kf, (ptrdiff_t)E, E, nk, scale, scaled);
        dp_set_csr(csr);
        return;
    }
    ptrdiff_t ks;
    const uint16_t *k =
        SFX(k_dp_block)(pl, k_b, j0, nk, sb + pl->off_kp, &ks);
    const uint32_t *qt2 = (const uint32_t *)(sb + pl->off_qt);
    dp_set_csr(csr | 0x8040u);
    if (few)
        SFX(qk_few_dp)(st, ldst, qt2, pl->BQ, nq, k, ks, E / 2, nk, scale,
                       (uint32_t *)(sb + pl->off_kt));
    else
        SFX(qk_dp_block)(st, ldst, qt2, pl->BQ, nqv, k, ks, E / 2, nk, scale);
    dp_set_csr(csr);
}

#undef DPATTR
#undef DP_
