/*
 * attention/tile_amx.h -- the "amx" instruction set's own micro-kernels:
 * bfloat16 scores S = scale K Q^T by AMX tiles (pl->own_qk: bfloat16 Q
 * and K, E % 32 == 0, E <= ATTN_AMX_MAX_E), and P V by them (pl->own_pv:
 * the second half of the file, its own comment). isa/amx.c instantiates
 * tile.h and bwd_tile.h for float with the hooks of amx_hooks.h, then
 * this file, which defines them; amx_plan (the set's plan hook) decides
 * from (storage, E, Ev) alone. Every other call runs the AVX-512 kernels.
 *
 * One tdpbf16ps adds to a 16 x 16 tile of float sums the products of a
 * tile of K (16 keys x 32 features) and a tile of Q's feature pairs (16
 * pairs x 16 queries): 8,192 multiply-adds. Its rounding is its own:
 * neither a chain of fused multiply-adds over the pairs nor one rounding
 * (tests/c/bench_amx_bf16.c), so the "amx" set has its own bits, and is
 * opt-in. They hold batch invariance because a sum depends only on its K
 * row, its Q column and the order of the calls, not on the row or column
 * it sits in nor on the tile's other rows (checked in
 * tests/c/test_dpbf16.c): every score is the same sequence -- a tile of
 * zeros, one tdpbf16ps per 32 features from feature 0 up, times scale
 * under DAZ | FTZ -- in every kernel that needs scores: query blocks, a
 * few rows (decoding, K read by rows: no transposes), the weights pass
 * and the backward's recomputation.
 *
 * Q's pairs are packed per work item into the qt scratch as 32-bit
 * words qt2[p * BQ + r] = (q[r][2p], q[r][2p+1]), the layout tdpbf16ps
 * wants for its second tile. Each call configures the tiles and releases
 * them before it returns, so no thread keeps the 8 KiB of tile state
 * between calls.
 */

#define AMXATTR ATTN_TARGET("amx-tile,amx-bf16,avx512f,avx512bw,avx2,fma,f16c")
/* decoding's reads ahead: into L2 (the next blocks), not L1           */
#define AMX_PREFETCH_(p) __builtin_prefetch((p), 0, 2)

#define AMX_MINZ_(a, b) ((a) < (b) ? (a) : (b))

/* the float of a bfloat16 bit pattern (exact) */
static ATTN_INLINE float amx_f32(uint32_t h)
{
    const uint32_t u = h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* MXCSR with DAZ (bit 6) and FTZ (bit 15) set, or restored; the memory
 * clobber keeps the kernel's loads and stores of st between the two   */
static ATTN_INLINE void amx_set_csr(unsigned csr)
{
    __asm__ volatile("ldmxcsr %0" : : "m"(csr) : "memory");
}

static ATTN_INLINE unsigned amx_get_csr(void)
{
    unsigned csr;
    __asm__ volatile("stmxcsr %0" : "=m"(csr) : : "memory");
    return csr;
}

/* Q's pairs of rows i0 .. i0+nq-1 into qt2 (E/2 x BQ words), zero padded */
static ATTR void SFX(amx_pack_qt2)(const attn_plan *pl, const char *q_b0,
                              size_t i0, size_t nq, size_t nqv, uint32_t *qt2)
{
    const attn_problem *p = pl->p;
    const size_t E2 = p->E / 2, BQ = pl->BQ;
    const uint16_t *q_b = (const uint16_t *)q_b0;
    for (size_t r = 0; r < nq; r++) {
        const uint16_t *q_r = q_b + (ptrdiff_t)(i0 + r) * p->q.s0;
        for (size_t e2 = 0; e2 < E2; e2++) {
            const uint32_t lo = q_r[(ptrdiff_t)(2 * e2) * p->q.s1],
                           hi = q_r[(ptrdiff_t)(2 * e2 + 1) * p->q.s1];
            qt2[e2 * BQ + r] = lo | hi << 16;
        }
    }
    for (size_t e = 0; e < E2; e++)
        for (size_t r = nq; r < nqv * W; r++)
            qt2[e * BQ + r] = 0;
}

/* K rows j0 .. j0+nk-1 (bfloat16) with contiguous features: in place, or
 * copied into kp (nk x E halves)                                        */
static const uint16_t *SFX(amx_k_rows)(const attn_plan *pl, const char *k_b,
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

typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} attn_amx_cfg;

/* amx_pv's tiles: 0-3 sums, 4-6 P's three parts, m rows (the call's,
 * at most 16); 7 V's pairs, 16 rows; all 64 bytes wide                 */
static ATTN_INLINE AMXATTR void amx_begin_rows(int m)
{
    attn_amx_cfg c __attribute__((aligned(64)));
    memset(&c, 0, sizeof c);
    c.palette = 1;
    for (int t = 0; t < 8; t++) {
        c.colsb[t] = 64;
        c.rows[t] = (uint8_t)(t < 7 ? m : 16);
    }
    _tile_loadconfig(&c);
}

/* amx_scores' tiles: sums (0-3: key group a, query vector b = 2a + b)
 * and Q's pairs (6, 7) n columns wide (n < 16: a few rows, decoding; the
 * sums then go straight to st); K (4, 5) 64 bytes; all 16 rows         */
static ATTN_INLINE AMXATTR void amx_begin_cols(int n)
{
    attn_amx_cfg c __attribute__((aligned(64)));
    memset(&c, 0, sizeof c);
    c.palette = 1;
    for (int t = 0; t < 8; t++) {
        c.colsb[t] = (uint16_t)(t == 4 || t == 5 ? 64 : 4 * n);
        c.rows[t] = 16;
    }
    _tile_loadconfig(&c);
}

/* key group j .. j+15 of K (rows at k, stride ks halves) for a tile
 * load: *kg, *sk (bytes); in place, or (a partial group, or copy) rows
 * copied into d (16 x E halves) with the rest 0. Returns the group's
 * keys (0: none). copy: decoding, which reads K from memory once: copied
 * by vector loads, which keep many lines in flight (a tile load from
 * memory measured slower), and the same rows two blocks on asked into L2
 * (a prefetch never faults)                                             */
static ATTN_INLINE AMXATTR size_t amx_kgroup(const uint16_t *k,
                                             ptrdiff_t ks, size_t E, size_t j,
                                             size_t nk, int copy, uint16_t *d,
                                             const uint16_t **kg, long *sk)
{
    const size_t nr = j < nk ? AMX_MINZ_((size_t)16, nk - j) : 0;
    *kg = k + (ptrdiff_t)j * ks;
    *sk = (long)(ks * (ptrdiff_t)sizeof(uint16_t));
    if (nr == 0 || (nr == 16 && !copy))
        return nr;
    const uintptr_t next = (uintptr_t)(ptrdiff_t)nk * 4 * (uintptr_t)ks;
    for (size_t r = 0; r < nr; r++) {
        const uint16_t *row = *kg + (ptrdiff_t)r * ks;
        for (size_t x = 0; copy && x < E * sizeof(uint16_t); x += 64)
            AMX_PREFETCH_((const char *)((uintptr_t)row + next) + x);
        for (size_t e = 0; e < E; e += 32) /* E % 32 == 0: whole vectors */
            _mm512_store_si512(d + r * E + e, _mm512_loadu_si512(row + e));
    }
    memset(d + nr * E, 0, (16 - nr) * E * sizeof(uint16_t));
    *kg = d;
    *sk = (long)(E * sizeof(uint16_t));
    return nr;
}

/* st[j * ldst + r] = scale * (K row j . Q row r) for keys j < nk and
 * columns r < ncols of qt2 (nqv vectors of 16, zero padded); K rows at k
 * with row stride ks halves, features contiguous. Whole 16 x 16 sums go
 * straight from the tiles to st, the rest through a staging tile; scale
 * is applied to st afterwards in one pass (the caller holds DAZ | FTZ,
 * as for the pair chain's product), so the tiles never wait for it.   */
static AMXATTR void SFX(amx_scores)(T *st, size_t ldst, size_t ncols,
                                    const uint32_t *qt2, size_t ldq,
                                    size_t nqv, const uint16_t *k,
                                    ptrdiff_t ks, size_t E, size_t nk,
                                    T scale)
{
    float c[16 * 16] __attribute__((aligned(64)));
    uint16_t kbuf[32 * ATTN_AMX_MAX_E] __attribute__((aligned(64)));
    const int copy = ncols <= ATTN_QK_FEW; /* decoding: amx_kgroup */
    const long sq = (long)(ldq * sizeof(uint32_t)),
               sst = (long)(ldst * sizeof(T));
    amx_begin_cols(ncols < 16 ? (int)ncols : 16);
    for (size_t g = 0; g < nk; g += 32) {
        /* the two key groups' rows (a partial group from a zeroed copy) */
        const uint16_t *kg[2];
        long sk[2];
        size_t nr[2];
        for (int h = 0; h < 2; h++)
            nr[h] = amx_kgroup(k, ks, E, g + 16 * (size_t)h, nk, copy,
                               kbuf + (size_t)h * 16 * E, &kg[h], &sk[h]);
        for (size_t v = 0; v < nqv; v += 2) {
            const uint32_t *q0 = qt2 + v * 16, *q1 = q0 + 16;
            const int two_k = nr[1] > 0, two_q = v + 1 < nqv;
            /* the same sequence for every sum: zeros, then one
             * tdpbf16ps per 32 features in order (only the tiles a
             * group or vector lacks are skipped)                      */
            _tile_zero(0);
            _tile_zero(1);
            _tile_zero(2);
            _tile_zero(3);
            for (size_t f = 0; f < E; f += 32) {
                const size_t p = f / 2;
                _tile_loadd(4, kg[0] + f, sk[0]);
                _tile_loadd(6, q0 + p * ldq, sq);
                _tile_dpbf16ps(0, 4, 6);
                if (two_q) {
                    _tile_loadd(7, q1 + p * ldq, sq);
                    _tile_dpbf16ps(1, 4, 7);
                }
                if (two_k) {
                    _tile_loadd(5, kg[1] + f, sk[1]);
                    _tile_dpbf16ps(2, 5, 6);
                    if (two_q)
                        _tile_dpbf16ps(3, 5, 7);
                }
            }
            /* tile 2h + b: key group h, query vector v + b */
#define AMX_OUT_(t, h, b)                                                      \
    do {                                                                       \
        const size_t col = (v + (b)) * 16;                                     \
        if (nr[h] == 0 || v + (b) >= nqv || col >= ncols)                      \
            break;                                                             \
        T *dst = st + (g + 16 * (h)) * ldst + col;                            \
        if (nr[h] == 16 && (ncols - col >= 16 || ncols < 16)) {                \
            _tile_stored(t, dst, sst); /* tiles ncols wide if < 16 */          \
            break;                                                             \
        }                                                                      \
        _tile_stored(t, c, 64);                                                \
        for (size_t r = 0; r < nr[h]; r++)                                     \
            memcpy(dst + r * ldst, c + r * 16,                                 \
                   AMX_MINZ_((size_t)16, ncols - col) * sizeof(T));                \
    } while (0)
            AMX_OUT_(0, 0, 0);
            AMX_OUT_(1, 0, 1);
            AMX_OUT_(2, 1, 0);
            AMX_OUT_(3, 1, 1);
#undef AMX_OUT_
        }
    }
    _tile_release();
    const __m512 vs = _mm512_set1_ps(scale);
    if (ldst == 1 && ncols == 1) { /* one row: its scores are contiguous */
        for (size_t j = 0; j < nk; j += 16) {
            const size_t n = AMX_MINZ_((size_t)16, nk - j);
            const __mmask16 m = (__mmask16)(n == 16 ? 0xffff : (1u << n) - 1);
            _mm512_mask_storeu_ps(
                st + j, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, st + j), vs));
        }
        return;
    }
    for (size_t j = 0; j < nk; j++)
        for (size_t r = 0; r < ncols; r += 16) {
            const size_t n = AMX_MINZ_((size_t)16, ncols - r);
            const __mmask16 m = (__mmask16)(n == 16 ? 0xffff : (1u << n) - 1);
            T *x = st + j * ldst + r;
            _mm512_mask_storeu_ps(
                x, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x), vs));
        }
}

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
    amx_begin_rows(16);
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
    amx_begin_rows((int)nq);
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


/* ---------------------------------------------------------------------- */
/* the hooks of tile.h and bwd_tile.h (declared in amx_hooks.h)            */
/* ---------------------------------------------------------------------- */
static ATTR int SFX(amx_hook_pack_q)(const attn_plan *pl, char *sb,
                                const char *q_b, size_t i0, size_t nq,
                                size_t nqv)
{
    if (!pl->own_qk)
        return 0;
    SFX(amx_pack_qt2)(pl, q_b, i0, nq, nqv, (uint32_t *)(sb + pl->off_qt));
    return 1;
}

/* the scores of tile.h's scores(): AMX tiles under DAZ | FTZ, the product
 * by scale included (a scaled score below the normal range is 0 in every
 * kernel)                                                               */
static ATTR int SFX(amx_hook_scores)(const attn_plan *pl, char *sb, T *st,
                                size_t ldst, size_t nq, size_t nqv, int few,
                                const char *k_b, size_t j0, size_t nk,
                                int scaled)
{
    if (!pl->own_qk)
        return 0;
    const T scale = scaled ? (T)pl->p->scale : (T)1;
    ptrdiff_t ks;
    const uint16_t *k = SFX(amx_k_rows)(pl, k_b, j0, nk, sb + pl->off_kp, &ks);
    const size_t ncols = few ? nq : nqv * W;
    const unsigned csr = amx_get_csr();
    amx_set_csr(csr | 0x8040u);
    SFX(amx_scores)(st, ldst, ncols, (const uint32_t *)(sb + pl->off_qt),
                    pl->BQ, (ncols + W - 1) / W, k, ks, pl->p->E, nk, scale);
    amx_set_csr(csr);
    return 1;
}

static ATTR int SFX(amx_hook_pv)(const attn_plan *pl, char *sb, T *o, size_t ldo,
                            size_t nq, const T *pt, size_t ldp,
                            const T *alpha, const char *v_b, size_t j0,
                            size_t nk)
{
    if (!pl->own_pv)
        return 0;
    SFX(amx_pv_block)(pl, sb, o, ldo, nq, pt, ldp, alpha, v_b, j0, nk);
    return 1;
}

static ATTR void SFX(amx_hook_chunk_start)(const attn_plan *pl, const char *k_b,
                                      const char *v_b, size_t j, size_t jend,
                                      int few)
{
    if (few && pl->own_qk)
        SFX(amx_prefetch_block)(pl, k_b, v_b, j, jend);
}

/* the backward: Q^T's floats into pairs in place; S^T by the tiles on K's
 * rows (copied into off_kp by amx_hook_bwd_pack_k)                      */
static ATTR int SFX(amx_hook_bwd_pack_q)(const attn_bwd_plan *bpl, T *qt,
                                    size_t nrv)
{
    if (!bpl->fp.own_qk)
        return 0;
    SFX(amx_pairs_in_place)(qt, bpl->fp.BQ, nrv, bpl->fp.p->E);
    return 1;
}

static ATTR int SFX(amx_hook_bwd_scores)(const attn_bwd_plan *bpl, char *sb,
                                    const T *qt, T *st, size_t nqv, size_t nk)
{
    const attn_plan *pl = &bpl->fp;
    if (!pl->own_qk)
        return 0;
    const size_t E = pl->p->E;
    const unsigned csr = amx_get_csr();
    amx_set_csr(csr | 0x8040u);
    SFX(amx_scores)(st, pl->BQ, nqv * W, (const uint32_t *)qt, pl->BQ, nqv,
                    (const uint16_t *)(sb + pl->off_kp), (ptrdiff_t)E, E, nk,
                    (T)pl->p->scale);
    amx_set_csr(csr);
    return 1;
}

static ATTR int SFX(amx_hook_bwd_pack_k)(const attn_bwd_plan *bpl, char *sb,
                                    size_t b, size_t j0, size_t nk)
{
    const attn_plan *pl = &bpl->fp;
    if (!pl->own_qk)
        return 0;
    const attn_problem *p = pl->p;
    uint16_t *kp = (uint16_t *)(sb + pl->off_kp);
    const char *k_b = (const char *)p->k.data
                      + (p->k.boff ? p->k.boff[b] : 0) * (ptrdiff_t)2;
    ptrdiff_t ks;
    const uint16_t *kb = SFX(amx_k_rows)(pl, k_b, j0, nk, kp, &ks);
    if (kb != kp)
        for (size_t r = 0; r < nk; r++)
            memcpy(kp + r * p->E, kb + (ptrdiff_t)r * ks,
                   p->E * sizeof(uint16_t));
    return 1;
}

#undef AMXATTR
#undef AMX_PREFETCH_
#undef AMX_MINZ_
