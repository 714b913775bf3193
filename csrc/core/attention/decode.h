/*
 * attention/decode.h -- internal interface of the split-K decode path (not
 * public).
 *
 *   decode.c             driver: "decode path?" from the shape, chunk
 *                        size, work items (b, key chunk) over the pool,
 *                        the fixed-order merge, fully masked rows
 *   decode_tile.h        the chunk kernel, written once as a template
 *   decode_portable.c    instantiates it in plain C (any CPU)
 *   decode_avx2.c        ... for AVX2+FMA
 *   decode_avx512.c      ... for AVX-512F
 *   decode_neon.c        ... for AArch64 NEON
 *   merge.c              the log-sum-exp merge (also attn_merge)
 *
 * Why a second kernel: with one query row (L = 1, decoding) the tile of
 * tile.h pads the query block to the vector width and uses one lane of W,
 * and there is a single work item per (b): one thread. Here a work item is
 * (b, key chunk c): keys c*CK .. c*CK + CK - 1 of batch item b for all L
 * rows; chunks no row may see (causality, the window) are no items at all,
 * so a window of w keys reads about w keys of K and V whatever S is. It streams K and V once, in place (no packing unless a row is
 * strided), computes dot products along E one key after the other,
 * softmax over the chunk, acc += p_j V_j, and leaves (out_c, lse_c) per
 * row. The chunk size comes from the shape only (never from the thread
 * count) and the partials are merged in chunk order, so the result is the
 * same bits for any number of threads.
 */
#ifndef ATTNPY_ATTN_DECODE_H
#define ATTNPY_ATTN_DECODE_H

#include <stddef.h>

#include "attn.h"
#include "attention/kern.h"

/* attn_sdpa takes the decode path when 1 <= L <= this (from the shape
 * alone: the choice never depends on threads, strides or outputs). Each
 * row costs the decoder a pass over the chunk (from L2); measured here
 * (Zen 5, 2 threads), at L = 4 it still beats the tile on every shape
 * tried but one in cache, at L = 8 the tile wins whenever K/V fit in L3. */
#define ATTN_DECODE_MAX_L 4
/* ... and, for L >= 2, when a row has at least this many key and value
 * elements, S * (E + Ev): below it the decoder's fixed cost per row (a
 * pass over the chunk, its log-sum-exp, the merge) is more than the
 * tile's padding costs. Measured here (tests/c, 2 threads): at L = 4,
 * S = 3, E = 4 the tile takes 0.19 us and the decoder 0.35 us; from
 * S (E + Ev) ~ 512 the decoder is faster; at L = 1 it is faster always. */
#define ATTN_DECODE_MIN_KV 512

typedef struct {
    const attn_problem *p;
    size_t CK;          /* keys per chunk                                 */
    size_t c0;          /* first chunk with a key any row may see         */
    size_t nch;         /* chunks per batch item from c0 on: up to the
                           last chunk with such a key (causality and the
                           window alone decide; all of ceil(S / CK) when
                           weights or scores are wanted)                 */
    size_t SP;          /* min(CK, S) rounded up to 16: score row         */
    size_t SR;          /* SP + 16: the score rows' stride in scratch     */
    ptrdiff_t qpos;     /* row i sits at key position i + qpos (variants.h) */
    int pack_k, pack_v; /* K / V rows strided: copy each chunk            */
    size_t b0;          /* first batch item of this round                 */
    /* partials of chunk c of batch item b, row r (bb = b - b0):
     *   out  part_out + ((bb * nch + c) * L + r) * Ev   (element type T)
     *   lse  part_lse[(bb * nch + c) * L + r]                            */
    void *part_out;
    double *part_lse;
    const double *lse;  /* weights pass: merged lse[bb * L + r]           */
    double fm_weight;   /* weights of a fully masked row (0, 1/S, NaN)    */
    /* per-thread scratch: byte offsets from a 64-byte aligned base       */
    size_t off_q;       /* the item's query rows, L x E                   */
    size_t off_s;       /* scores / probabilities of the L rows, L x SR   */
    size_t off_kp;      /* packed K chunk, min(CK, S) x E (if pack_k)     */
    size_t off_vp;      /* packed V chunk, min(CK, S) x Ev (if pack_v)    */
    size_t scratch_bytes;
} attn_dplan;

/* one work item: chunk c0 + c of batch item b (keys (c0 + c) * CK ..)  */
typedef void (*attn_dchunk_fn)(const attn_dplan *dp, void *scratch,
                               size_t b, size_t c);

typedef struct {
    attn_dchunk_fn chunk[2];   /* the partials   [ATTN_F32 / ATTN_F64]     */
    attn_dchunk_fn weights[2]; /* weights / raw scores of the chunk's keys */
} attn_decode_desc;

extern const attn_decode_desc attn__dec_portable;
#if ATTN_HAVE_PORT_WIDE
extern const attn_decode_desc attn__dec_portable_wide;
#endif
#if ATTN_HAVE_X86
extern const attn_decode_desc attn__dec_avx2;
extern const attn_decode_desc attn__dec_avx512;
#endif
#if ATTN_HAVE_NEON
extern const attn_decode_desc attn__dec_neon;
#endif

/* decode.c: does attn_sdpa take the decode path for this problem? And the
 * path itself, with the kernels matching the tile path's ISA d.          */
int attn__decode_wanted(const attn_problem *p);
attn_status attn__sdpa_decode(attn_problem *p, const attn_exec *ex,
                              const attn_isa_desc *d);

/* merge.c: one row of the merge. attn__merge_weights writes w[k] (the
 * weight of partial k) and returns the merged lse: -inf for a fully
 * masked row (w not written), NaN when an lse_k is NaN. The row routine:
 * out[c * os1] = sum over k with w[k] != 0 of w[k] out_k[k][c * cs[k]].  */
double attn__merge_weights(size_t K, const double *lse_k, double *w);
void attn__merge_row_f32(float *out, ptrdiff_t os1, size_t Ev, size_t K,
                         const double *w, const float *const *out_k,
                         const ptrdiff_t *cs);
void attn__merge_row_f64(double *out, ptrdiff_t os1, size_t Ev, size_t K,
                         const double *w, const double *const *out_k,
                         const ptrdiff_t *cs);

#endif /* ATTNPY_ATTN_DECODE_H */
