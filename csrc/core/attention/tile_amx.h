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
 * tests/c/test_amx.c): every score is the same sequence -- a tile of
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

/* The tiles' configuration: tiles 0-6 m rows, 7 16 rows; 4 and 5 64
 * bytes wide, the others n columns of 4 bytes. amx_pv's (n = 16): 0-3
 * sums, 4-6 P's three parts, m rows (the call's, at most 16); 7 V's
 * pairs. amx_scores' (m = 16): sums (0-3: key group a, query vector b =
 * 2a + b) and Q's pairs (6, 7) n columns wide (n < 16: a few rows,
 * decoding; the sums then go straight to st); K (4, 5)                 */
static ATTN_INLINE AMXATTR void amx_begin(int m, int n)
{
    attn_amx_cfg c __attribute__((aligned(64)));
    memset(&c, 0, sizeof c);
    c.palette = 1;
    for (int t = 0; t < 8; t++) {
        c.colsb[t] = (uint16_t)(t == 4 || t == 5 ? 64 : 4 * n);
        c.rows[t] = (uint8_t)(t < 7 ? m : 16);
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
 * as for every AMX score), so the tiles never wait for it.            */
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
    amx_begin(16, ncols < 16 ? (int)ncols : 16);
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

#include "attention/tile_amx_pv.h"

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
