/*
 * attention/tile_amx.h -- bfloat16 scores S = scale K Q^T by AMX tiles, on
 * the "amx" instruction set (pl->dpbf16 == ATTN_DP_AMX: bfloat16 Q and K,
 * E % 32 == 0, E <= ATTN_AMX_MAX_E).
 *
 * One tdpbf16ps adds to a 16 x 16 tile of float sums the products of a
 * tile of K (16 keys x 32 features) and a tile of Q's feature pairs (16
 * pairs x 16 queries): 8,192 multiply-adds, where vdpbf16ps does 32. Its
 * rounding is its own: neither vdpbf16ps's pair chain nor one rounding
 * (tests/c/bench_amx_bf16.c), so the "amx" set has its own bits. They
 * hold batch invariance because a sum depends only on its K row, its Q
 * column and the order of the calls, not on the row or column it sits in
 * nor on the tile's other rows (checked in tests/c/test_dpbf16.c): every
 * score is the same sequence -- a tile of zeros, one tdpbf16ps per 32
 * features from feature 0 up, times scale under DAZ | FTZ -- in every
 * kernel that needs scores: query blocks, a few rows (decoding, with K
 * read in place: no transposes), the weights pass and the backward's
 * recomputation.
 *
 * Part of tile_dpbf16.h (the AVX-512 float instantiation); Q's pairs come
 * from pack_qt2 as 32-bit words qt2[p * ldq + r], which is the layout
 * tdpbf16ps wants for its second tile. Each call configures the tiles and
 * releases them before it returns, so no thread keeps the 8 KiB of tile
 * state between calls.
 */

#define AMXATTR ATTN_TARGET("amx-tile,amx-bf16,avx512f,avx2,fma")

typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} attn_amx_cfg;

/* tiles 0-3: sums (key group a, query vector b) = 2a + b; 4, 5: K; 6, 7:
 * Q's pairs; all 16 rows of 64 bytes                                   */
static ATTN_INLINE AMXATTR void amx_begin(void)
{
    attn_amx_cfg c __attribute__((aligned(64)));
    memset(&c, 0, sizeof c);
    c.palette = 1;
    for (int t = 0; t < 8; t++) {
        c.colsb[t] = 64;
        c.rows[t] = 16;
    }
    _tile_loadconfig(&c);
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
    uint16_t tail[16 * ATTN_AMX_MAX_E] __attribute__((aligned(64)));
    const long sq = (long)(ldq * sizeof(uint32_t)),
               sst = (long)(ldst * sizeof(T));
    amx_begin();
    for (size_t g = 0; g < nk; g += 32) {
        /* the two key groups' rows; a partial group from a zeroed copy */
        const uint16_t *kg[2];
        long sk[2];
        size_t nr[2];
        for (int h = 0; h < 2; h++) {
            const size_t j = g + 16 * (size_t)h;
            nr[h] = j < nk ? MINZ_((size_t)16, nk - j) : 0;
            kg[h] = k + (ptrdiff_t)j * ks;
            sk[h] = (long)(ks * (ptrdiff_t)sizeof(uint16_t));
            if (nr[h] > 0 && nr[h] < 16) {
                memset(tail, 0, 16 * E * sizeof(uint16_t));
                for (size_t r = 0; r < nr[h]; r++)
                    memcpy(tail + r * E, kg[h] + (ptrdiff_t)r * ks,
                           E * sizeof(uint16_t));
                kg[h] = tail;
                sk[h] = (long)(E * sizeof(uint16_t));
            }
        }
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
        if (nr[h] == 16 && ncols - col >= 16) {                                \
            _tile_stored(t, dst, sst);                                         \
            break;                                                             \
        }                                                                      \
        _tile_stored(t, c, 64);                                                \
        for (size_t r = 0; r < nr[h]; r++)                                     \
            memcpy(dst + r * ldst, c + r * 16,                                 \
                   MINZ_((size_t)16, ncols - col) * sizeof(T));                \
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
    for (size_t j = 0; j < nk; j++)
        for (size_t r = 0; r < ncols; r += 16) {
            const size_t n = MINZ_((size_t)16, ncols - r);
            const __mmask16 m = (__mmask16)(n == 16 ? 0xffff : (1u << n) - 1);
            T *x = st + j * ldst + r;
            _mm512_mask_storeu_ps(
                x, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x), vs));
        }
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

#undef AMXATTR
