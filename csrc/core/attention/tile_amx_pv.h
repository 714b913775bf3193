/*
 * attention/tile_amx_pv.h -- the "amx" set's P V by AMX tiles (pl->own_pv:
 * bfloat16 V, Ev % 16 == 0, Ev <= ATTN_AMX_MAX_E). Part of tile_amx.h
 * (included by it, with its helpers and macros defined).
 */
/* ---------------------------------------------------------------------- */
/* P V by tiles (pl->own_pv: bfloat16 V, Ev % 16 == 0)              */
/* ---------------------------------------------------------------------- */
/* A probability p (float) is the exact sum of three bfloat16 numbers, its
 * top 8 significant bits (hi), the next 8 (mid) and the last 8 (lo): each
 * cut by masking the bit pattern, each remainder an exact float
 * subtraction. So three tdpbf16ps per 32 keys give the products p v of
 * float32 P with bfloat16 V exactly, summed in float32 by the tiles. (A
 * part below the normal range is read as 0 by the tiles, with or without
 * the caller's DAZ / FTZ: such parts weigh under 2^-126.) Every row is
 * the same sequence in every call: per key block, a tile of zeros, then
 * per 32 keys from the block's first (keys past the block weigh 0) hi,
 * mid, lo; then o = alpha o + sum, as the float path's epilogue. A sum
 * that is not finite is summed again over the keys of nonzero weight
 * alone, in key order (a key of weight 0 contributes nothing, not 0 x
 * inf = NaN): the same rule wherever the row sits.                      */

/* tdpbf16ps's second tile for V: key pair kp of the block, feature f at
 * vv[kp * 2 Ev + 2 f + t] = V[j0 + 2 kp + t][f]; pairs past nk are 0;
 * ahead: also ask for the rows that many keys on (decoding), or 0      */
static AMXATTR void SFX(amx_v_pairs)(const attn_plan *pl, const char *v_b,
                                     size_t j0, size_t nk, uint16_t *vv,
                                     size_t ahead)
{
    const attn_problem *p = pl->p;
    const size_t Ev = p->Ev, nkp = (nk + 31) / 32 * 16;
    const uint16_t *v = (const uint16_t *)v_b + (ptrdiff_t)j0 * p->v.s0;
    size_t kp = 0;
    if (p->v.s1 == 1) { /* 16 features of both rows per permute */
        const __m512i lo = _mm512_set_epi16(
            47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40, 8, 39,
            7, 38, 6, 37, 5, 36, 4, 35, 3, 34, 2, 33, 1, 32, 0);
        const __m512i hi = _mm512_add_epi16(lo, _mm512_set1_epi16(16));
        for (; 2 * kp + 1 < nk; kp++) {
            const uint16_t *e = v + (ptrdiff_t)(2 * kp) * p->v.s0,
                           *o = e + p->v.s0;
            uint16_t *d = vv + kp * 2 * Ev;
            /* decoding reads V once: the rows `ahead` keys on now (a
             * prefetch never faults, so past the end is harmless)      */
            for (size_t x = 0; ahead && x < Ev * 2; x += 64) {
                const uintptr_t nx = (uintptr_t)(ptrdiff_t)ahead * 2
                                     * (uintptr_t)p->v.s0;
                AMX_PREFETCH_((const char *)((uintptr_t)e + nx) + x);
                AMX_PREFETCH_((const char *)((uintptr_t)o + nx) + x);
            }
            for (size_t f = 0; f < Ev; f += 32) {
                /* Ev % 32 == 16: the last 16 features alone, no read past */
                const __mmask32 m = Ev - f >= 32 ? 0xffffffffu : 0xffffu;
                const __m512i a = _mm512_maskz_loadu_epi16(m, e + f),
                              b = _mm512_maskz_loadu_epi16(m, o + f);
                _mm512_storeu_si512(d + 2 * f,
                                    _mm512_permutex2var_epi16(a, lo, b));
                if (f + 16 < Ev)
                    _mm512_storeu_si512(
                        d + 2 * f + 32, _mm512_permutex2var_epi16(a, hi, b));
            }
        }
    }
    if (kp < nkp && 2 * kp + 1 == nk) { /* the last key, alone */
        const uint16_t *row = v + (ptrdiff_t)(2 * kp) * p->v.s0;
        uint16_t *d = vv + kp * 2 * Ev;
        for (size_t f = 0; f < Ev; f++) {
            d[2 * f] = row[(ptrdiff_t)f * p->v.s1];
            d[2 * f + 1] = 0;
        }
        kp++;
    }
    if (p->v.s1 == 1 && kp < nkp) { /* the pairs past the block: 0 */
        memset(vv + kp * 2 * Ev, 0, (nkp - kp) * 2 * Ev * sizeof(uint16_t));
        kp = nkp;
    }
    for (; kp < nkp; kp++) {
        uint16_t *d = vv + kp * 2 * Ev;
        for (int t = 0; t < 2; t++) {
            const size_t j = 2 * kp + (size_t)t;
            const uint16_t *row = v + (ptrdiff_t)j * p->v.s0;
            if (j >= nk)
                for (size_t f = 0; f < Ev; f++)
                    d[2 * f + (size_t)t] = 0;
            else if (p->v.s1 == 1)
                for (size_t f = 0; f < Ev; f++)
                    d[2 * f + (size_t)t] = row[f];
            else
                for (size_t f = 0; f < Ev; f++)
                    d[2 * f + (size_t)t] = row[(ptrdiff_t)f * p->v.s1];
        }
    }
}

/* the three parts' 16-bit patterns in the top halves of 32-bit lanes    */
static ATTN_INLINE AMXATTR void amx_split3(__m512 x, __m512i part[3])
{
    const __m512i top = _mm512_set1_epi32((int)0xffff0000u);
    part[0] = _mm512_and_si512(_mm512_castps_si512(x), top);
    const __m512 r1 = _mm512_sub_ps(x, _mm512_castsi512_ps(part[0]));
    part[1] = _mm512_and_si512(_mm512_castps_si512(r1), top);
    const __m512 r2 = _mm512_sub_ps(r1, _mm512_castsi512_ps(part[1]));
    part[2] = _mm512_and_si512(_mm512_castps_si512(r2), top);
}

/* tdpbf16ps's first tiles for P: rows r < nr of queries r0 .. (lanes of
 * pt's key rows: p(j, r) = pt[j * ldp + r0 + r]), keys j0c .. j0c+31 as
 * 16 pairs per row, part s into a[s] (16 x 16 words); rows past nr and
 * keys past nk are 0                                                   */
static ATTN_INLINE AMXATTR void SFX(amx_p_parts)(uint32_t a[3][256],
                                                 const T *pt, size_t ldp,
                                                 size_t r0, size_t nr,
                                                 size_t j0c, size_t nk)
{
    if (ldp == 1 && nr == 1) { /* one row, keys contiguous: row 0 only */
        const size_t n = nk > j0c ? AMX_MINZ_((size_t)32, nk - j0c) : 0;
        const __mmask16 m0 = (__mmask16)(n >= 16 ? 0xffff : (1u << n) - 1),
                        m1 = (__mmask16)(n >= 32   ? 0xffff
                                         : n > 16 ? (1u << (n - 16)) - 1
                                                  : 0);
        const __m512 x0 = _mm512_maskz_loadu_ps(m0, pt + j0c + r0),
                     x1 = _mm512_maskz_loadu_ps(m1, pt + j0c + r0 + 16);
        const __m512i ev = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16,
                                            14, 12, 10, 8, 6, 4, 2, 0),
                      od = _mm512_add_epi32(ev, _mm512_set1_epi32(1));
        __m512i pe[3], po[3];
        amx_split3(_mm512_permutex2var_ps(x0, ev, x1), pe);
        amx_split3(_mm512_permutex2var_ps(x0, od, x1), po);
        for (int s = 0; s < 3; s++)
            _mm512_store_si512(a[s], _mm512_or_si512(
                                         _mm512_srli_epi32(pe[s], 16), po[s]));
        return; /* rows 1 .. 15: unread (amx_pv_few's tiles of 1 row) */
    }
    const __mmask16 m = (__mmask16)(nr >= 16 ? 0xffff : (1u << nr) - 1);
    __m512 w[3][16];
    for (size_t kp = 0; kp < 16; kp++) {
        const size_t j = j0c + 2 * kp;
        const __m512 e = j < nk
            ? _mm512_maskz_loadu_ps(m, pt + j * ldp + r0) : _mm512_setzero_ps();
        const __m512 o = j + 1 < nk
            ? _mm512_maskz_loadu_ps(m, pt + (j + 1) * ldp + r0)
            : _mm512_setzero_ps();
        __m512i pe[3], po[3];
        amx_split3(e, pe);
        amx_split3(o, po);
        for (int s = 0; s < 3; s++)
            w[s][kp] = _mm512_castsi512_ps(
                _mm512_or_si512(_mm512_srli_epi32(pe[s], 16), po[s]));
    }
    for (int s = 0; s < 3; s++) {
        VTRANS(w[s]); /* w[s][r]: query r's 16 pairs */
        for (int r = 0; r < 16; r++)
            _mm512_store_si512(a[s] + r * 16, _mm512_castps_si512(w[s][r]));
    }
}

/* a sum that is not finite, again: keys of nonzero weight, in order,
 * V's values read from its rows (v: the block's first, strides vs0, vs1) */
static ATTN_INLINE float SFX(amx_resum)(const T *pt, size_t ldp, size_t r,
                                        const uint16_t *v, ptrdiff_t vs0,
                                        ptrdiff_t vs1, size_t f, size_t nk)
{
    float acc = 0;
    for (size_t j = 0; j < nk; j++) {
        const float w = pt[j * ldp + r];
        if (w != 0)
            acc = fmaf(w, amx_f32(v[(ptrdiff_t)j * vs0 + (ptrdiff_t)f * vs1]),
                       acc);
    }
    return acc;
}

/* the epilogue of rows r0 .. r0+nr-1, features f .. f+15: sums c (rows of
 * 16 floats), each not finite summed again, o = alpha o + sum            */
static ATTN_INLINE AMXATTR void SFX(amx_pv_out)(
    T *o, size_t ldo, size_t r0, size_t nr, size_t f, const float *c,
    const T *pt, size_t ldp, const T *alpha, const uint16_t *v,
    ptrdiff_t vs0, ptrdiff_t vs1, size_t nk)
{
    for (size_t r = 0; r < nr; r++) {
        __m512 acc = _mm512_load_ps(c + r * 16);
        /* x - x is 0 exactly when x is finite */
        const __mmask16 bad = _mm512_cmp_ps_mask(
            _mm512_sub_ps(acc, acc), _mm512_setzero_ps(), _CMP_NEQ_UQ);
        if (bad) {
            float lane[16];
            _mm512_storeu_ps(lane, acc);
            for (int i = 0; i < 16; i++)
                if (bad >> i & 1)
                    lane[i] = SFX(amx_resum)(pt, ldp, r0 + r, v, vs0, vs1,
                                             f + (size_t)i, nk);
            acc = _mm512_loadu_ps(lane);
        }
        T *o_r = o + (r0 + r) * ldo + f;
        _mm512_storeu_ps(o_r, _mm512_fmadd_ps(_mm512_loadu_ps(o_r),
                                              _mm512_set1_ps(alpha[r0 + r]),
                                              acc));
    }
}

/* the sums tiles 0 .. nft-1 from (load) or into c[0 ..]; stores all
 * before any load of them: a load that follows a tile store waits      */
static ATTN_INLINE AMXATTR void amx_sums_mem(float (*c)[256], size_t nft,
                                             int load)
{
#define AMX_MOVE_(t)                                                           \
    if (nft > (t)) {                                                           \
        if (load)                                                              \
            _tile_loadd(t, c[t], 64);                                          \
        else                                                                   \
            _tile_stored(t, c[t], 64);                                         \
    }
    AMX_MOVE_(0)
    AMX_MOVE_(1)
    AMX_MOVE_(2)
    AMX_MOVE_(3)
#undef AMX_MOVE_
}

/* the three parts (tiles 4-6) times V's pairs for features f0 .. f0 +
 * 16 nft - 1 (vb: feature f0 of the first pair, stride sv bytes) into
 * the sums tiles 0 .. nft-1: hi, mid, lo per tile                       */
static ATTN_INLINE AMXATTR void amx_pv_step(const uint16_t *vb, long sv,
                                            size_t nft)
{
#define AMX_PV_FT_(t)                                                          \
    if (nft > (t)) {                                                           \
        _tile_loadd(7, vb + 32 * (t), sv);                                     \
        _tile_dpbf16ps(t, 4, 7);                                               \
        _tile_dpbf16ps(t, 5, 7);                                               \
        _tile_dpbf16ps(t, 6, 7);                                               \
    }
    AMX_PV_FT_(0)
    AMX_PV_FT_(1)
    AMX_PV_FT_(2)
    AMX_PV_FT_(3)
#undef AMX_PV_FT_
}

/* o (nq x Ev, ld ldo) = alpha o + P V_blk: P (nk x ..: pt[j * ldp + r]),
 * V's pairs vv (amx_v_pairs), V's rows v (amx_resum)                   */
static AMXATTR void SFX(amx_pv)(T *o, size_t ldo, size_t nq, const T *pt,
                                size_t ldp, const T *alpha,
                                const uint16_t *vv, size_t Ev, size_t nk,
                                const uint16_t *v, ptrdiff_t vs0,
                                ptrdiff_t vs1)
{
    /* P's parts of every 32 keys of the block (nk <= ATTN_AMX_PV_KEYS,
     * sdpa.c: key_block), written before the first tile load of them  */
    uint32_t a[ATTN_AMX_PV_KEYS / 32][3][256] __attribute__((aligned(64)));
    float c[4][16 * 16] __attribute__((aligned(64)));
    const size_t nch = (nk + 31) / 32;
    const long sv = (long)(2 * Ev * sizeof(uint16_t));
    amx_begin(16, 16);
    for (size_t r0 = 0; r0 < nq; r0 += 16) {
        const size_t nr = AMX_MINZ_((size_t)16, nq - r0);
        for (size_t ch = 0; ch < nch; ch++)
            SFX(amx_p_parts)(a[ch], pt, ldp, r0, nr, 32 * ch, nk);
        for (size_t f0 = 0; f0 < Ev; f0 += 64) {
            const size_t nft = AMX_MINZ_((size_t)4, (Ev - f0) / 16);
            _tile_zero(0);
            _tile_zero(1);
            _tile_zero(2);
            _tile_zero(3);
            for (size_t ch = 0; ch < nch; ch++) {
                _tile_loadd(4, a[ch][0], 64);
                _tile_loadd(5, a[ch][1], 64);
                _tile_loadd(6, a[ch][2], 64);
                amx_pv_step(vv + ch * 16 * 2 * Ev + 2 * f0, sv, nft);
            }
            amx_sums_mem(c, nft, 0);
            for (size_t t = 0; t < nft; t++)
                SFX(amx_pv_out)(o, ldo, r0, nr, f0 + 16 * t, c[t], pt, ldp,
                                alpha, v, vs0, vs1, nk);
        }
    }
    _tile_release();
}

/* amx_pv for a few rows (decoding, nq <= ATTN_QK_FEW): 32 keys at a time,
 * V's pairs built for them alone (L1-sized) and every feature's sums
 * kept in memory between them: the same sequence per sum as amx_pv (a
 * tile store and load change no bit), tiles of nq rows (a tdpbf16ps's
 * time grows with them: tests/c/bench_amx_bf16.c)                       */
static AMXATTR void SFX(amx_pv_few)(const attn_plan *pl, T *o, size_t ldo,
                                    size_t nq, const T *pt, size_t ldp,
                                    const T *alpha, const char *v_b,
                                    size_t j0, size_t nk)
{
    const attn_problem *p = pl->p;
    const size_t Ev = p->Ev, nch = (nk + 31) / 32;
    const long sv = (long)(2 * Ev * sizeof(uint16_t));
    uint32_t a[3][256] __attribute__((aligned(64)));
    uint16_t vv[16 * 2 * ATTN_AMX_MAX_E] __attribute__((aligned(64)));
    float c[ATTN_AMX_MAX_E / 16][256] __attribute__((aligned(64)));
    amx_begin((int)nq, 16);
    for (size_t ch = 0; ch < nch; ch++) {
        const size_t jc = j0 + 32 * ch, nkc = AMX_MINZ_((size_t)32, nk - 32 * ch);
        SFX(amx_v_pairs)(pl, v_b, jc, nkc, vv, 2 * pl->BK);
        SFX(amx_p_parts)(a, pt, ldp, 0, nq, 32 * ch, nk);
        _tile_loadd(4, a[0], 64);
        _tile_loadd(5, a[1], 64);
        _tile_loadd(6, a[2], 64);
        for (size_t f0 = 0; f0 < Ev; f0 += 64) {
            const size_t nft = AMX_MINZ_((size_t)4, (Ev - f0) / 16);
            float(*cf)[256] = c + f0 / 16;
            if (ch == 0) {
                _tile_zero(0);
                _tile_zero(1);
                _tile_zero(2);
                _tile_zero(3);
            } else {
                amx_sums_mem(cf, nft, 1);
            }
            amx_pv_step(vv + 2 * f0, sv, nft);
            amx_sums_mem(cf, nft, 0);
        }
    }
    _tile_release();
    const uint16_t *v = (const uint16_t *)v_b + (ptrdiff_t)j0 * p->v.s0;
    for (size_t f = 0; f < Ev; f += 16)
        SFX(amx_pv_out)(o, ldo, 0, nq, f, c[f / 16], pt, ldp, alpha, v,
                        p->v.s0, p->v.s1, nk);
}

/* decoding on AMX: the kernels prefetch two blocks ahead, so an item
 * asks for its second block itself (rows j .. of K and V, below jend)  */
static ATTR void SFX(amx_prefetch_block)(const attn_plan *pl, const char *k_b,
                                const char *v_b, size_t j, size_t jend)
{
    const attn_problem *p = pl->p;
    for (size_t r = j; r < jend && r < j + pl->BK; r++) {
        if (p->k.s1 == 1)
            for (size_t x = 0; x < p->E * 2; x += 64)
                AMX_PREFETCH_(k_b + (ptrdiff_t)r * p->k.s0 * 2 + (ptrdiff_t)x);
        if (pl->own_pv && p->v.s1 == 1)
            for (size_t x = 0; x < p->Ev * 2; x += 64)
                AMX_PREFETCH_(v_b + (ptrdiff_t)r * p->v.s0 * 2 + (ptrdiff_t)x);
    }
}

/* chunk_pass's P V when the plan says pv_amx: V's block into its pairs
 * (the thread's cache or the packed-V scratch), then amx_pv            */
static ATTR void SFX(amx_pv_block)(const attn_plan *pl, char *sb, T *o, size_t ldo,
                          size_t nq, const T *pt, size_t ldp, const T *alpha,
                          const char *v_b, size_t j0, size_t nk)
{
    const attn_problem *p = pl->p;
    if (nq <= ATTN_QK_FEW) {
        SFX(amx_pv_few)(pl, o, ldo, nq, pt, ldp, alpha, v_b, j0, nk);
        return;
    }
    /* the thread's cache (kv_slot) holds the pairs, as they would be
     * written here, when the call has several query blocks          */
    int have = 0;
    T *slot = SFX(kv_slot)(pl, sb, 1, v_b, j0, nk, &have);
    uint16_t *vv = (uint16_t *)(slot ? slot : (T *)(sb + pl->off_vp));
    if (!have)
        SFX(amx_v_pairs)(pl, v_b, j0, nk, vv, 0);
    SFX(amx_pv)(o, ldo, nq, pt, ldp, alpha, vv, p->Ev, nk,
                (const uint16_t *)v_b + (ptrdiff_t)j0 * p->v.s0, p->v.s0,
                p->v.s1);
}

/* the backward's Q^T as floats (E x ld, exact bfloat16 values) into the
 * pair words amx_scores reads, in place: word row p from float rows 2p
 * and 2p + 1, which row p's words overwrite only once read             */
static ATTN_INLINE void SFX(amx_pairs_in_place)(T *qt, size_t ld,
                                                size_t ncols, size_t E)
{
    uint32_t *w = (uint32_t *)qt;
    for (size_t p = 0; p < E / 2; p++)
        for (size_t r = 0; r < ncols; r++) {
            uint32_t lo, hi;
            memcpy(&lo, qt + 2 * p * ld + r, sizeof lo);
            memcpy(&hi, qt + (2 * p + 1) * ld + r, sizeof hi);
            w[p * ld + r] = lo >> 16 | (hi & 0xffff0000u);
        }
}


