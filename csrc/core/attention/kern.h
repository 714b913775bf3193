/*
 * attention/kern.h -- internal interface of the attention fast path (not public).
 *
 *   sdpa.c        driver: plan (block sizes, scratch layout), work items
 *                 over the scheduler, split calls, poll
 *   bwd.c         the backward pass's driver (bwd_tile.h its kernels)
 *   tile.h        the tiled FlashAttention-2 kernel, written once as a
 *                 template over (element type, SIMD primitives): with
 *                 tile_kern.h (micro-kernels), tile_masks.h (masks and
 *                 variants), tile_half.h (16-bit reads and writes)
 *   bwd_tile.h    the backward kernel, the same way
 *   amx_hooks.h   the hooks tile.h and bwd_tile.h offer a set with its own
 *                 micro-kernels; tile_amx.h, tile_amx_pv.h the "amx"
 *                 set's (bfloat16 scores and P V by AMX tiles: isa/amx.c)
 *   masked.c      the uniform policy's output row
 *   merge.c       log-sum-exp merge of partial results (on the row driver)
 *   variants.h    the keys a row may see (attn__var_band), written once
 *                 for the kernels (attn__key_range below, tile_masks.h)
 *                 and the oracles (testing/)
 * The templates are instantiated once per instruction set by isa/<set>.c
 * (item_avx2_f32, merge_item_avx512_f64, bwd_item_a_port_f32, ...: the
 * names are listed in each set's table there, and with the template
 * line of each in csrc/core/NAMES.txt).
 *
 * A work item is (b, query block qb): rows i0 = qb*BQ .. i0+nq-1 of batch
 * item b. Every row is computed by exactly one item, in a fixed order, so
 * results never depend on the number of threads.
 */
#ifndef ATTNPY_ATTN_KERN_H
#define ATTNPY_ATTN_KERN_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "attn.h"
#include "half.h"
#include "runtime/platform.h"
#include "runtime/pool.h"
#include "runtime/sched.h"

#include "runtime/isa.h"
#include "simd/scalar.h"

/* plan arithmetic shared by the drivers (sdpa.c, bwd.c) */
/* m is a power of two (vector widths, 64-byte alignment) */
static inline size_t round_up(size_t x, size_t m) { return (x + m - 1) & ~(m - 1); }

static inline int mul_ok(size_t a, size_t b, size_t *r)
{
#if defined(__GNUC__)
    return !__builtin_mul_overflow(a, b, r);
#else
    if (a && b > SIZE_MAX / a)
        return 0;
    *r = a * b;
    return 1;
#endif
}

/* a += n * esz bytes, 64-byte aligned; 0 on overflow */
static inline int take(size_t *a, size_t n, size_t esz, size_t *off)
{
    size_t bytes;
    if (!mul_ok(n, esz, &bytes) || bytes > SIZE_MAX - 64 - *a)
        return 0;
    *off = *a;
    *a = round_up(*a + bytes, 64);
    return 1;
}

/* Everything a work item needs, computed once per call by the driver. */
typedef struct {
    const attn_problem *p;
    size_t BQ;        /* query rows per work item, a multiple of the vector
                         width W (the tile's row length)                  */
    size_t BK;        /* keys per block                                     */
    size_t EvP;       /* Ev rounded up to the vector width                  */
    size_t nqb;       /* query blocks per batch item: ceil(L / BQ)          */
    ptrdiff_t qpos;   /* query i sits at key position i' = i + qpos (attn.h:
                         pos_shift, + S - L for bottom-right causal)       */
    int limited;      /* causal or window: key j visible from query i only
                         if i' - look_back <= j <= i' + look_ahead
                         (attn__limits)                                   */
    int windowed;     /* a window: look_back may cut (else it never does)  */
    ptrdiff_t look_back, look_ahead;
    int edits_scores; /* softcap or ALiBi: every computed score changes    */
    int pack_k;       /* K rows not contiguous: copy each key block         */
    int pack_v;       /* V rows not contiguous or Ev % W: copy, zero padded */
    /* an instruction set with micro-kernels of its own (its desc's plan
     * hook sets these from (storage, E, Ev) alone; tile.h's hooks read
     * them): own_qk, the scores; own_pv, P V; vp_align, the packed V
     * block's rows rounded up to this multiple (0: 1)                  */
    int own_qk, own_pv;
    size_t vp_align;
    /* scratch layout: byte offsets from a 64-byte aligned base            */
    size_t off_qt;    /* Q^T of the item, E x BQ                           */
    size_t off_st;    /* score / probability tile, BK x BQ (key-major)     */
    size_t off_o;     /* output accumulator, BQ x EvP                       */
    size_t off_row;   /* ROW_COUNT per-query arrays of BQ (attn_row_array) */
    size_t off_oc;    /* the current key chunk's output accumulator, BQ x EvP */
    size_t off_kp;    /* packed K block, BK x E (if pack_k)                 */
    size_t off_vp;    /* packed V block, BK x EvP (if pack_v)               */
    size_t off_kt;    /* K^T of a block, E x BK rounded up to W (qk_few),
                         or 0: calls of more than ATTN_QK_FEW rows       */
    size_t off_srow;  /* a one-row block's scores, BK rounded up to W      */
    size_t off_vmean; /* mean of V rows (uniform policy), Ev doubles        */
    size_t off_fm;    /* per-query fully-masked flags, BQ bytes            */
    size_t off_mkey;  /* attn_mkey: whose mask classes off_mcls holds       */
    size_t off_mcls;  /* mask class of each key block, ceil(S/BK) bytes     */
    size_t off_macc;  /* mask scan accumulators, 2 x S bytes                */
    /* the thread's 16-bit K / V converted once per batch item, for key
     * blocks kb < kvc_blocks (0: none; sdpa.c): off_kc (kvc_blocks * BK
     * x E; 0: K not cached), off_vc (.. x EvP; 0: V not cached),
     * off_kvmark (per cached block, K's then V's attn_kvmark)            */
    size_t kvc_blocks, off_kc, off_vc, off_kvmark;
    size_t scratch_bytes;
    size_t nkb;       /* key blocks per batch item: ceil(S / BK)            */
    size_t CK;        /* keys per chunk, a multiple of BK (attn__chunk_keys) */
    size_t nch;       /* chunks per batch item: ceil(S / CK)                */
    /* split calls: the state of chunk c of item (b, qb) in slot
     * ((b * nqb + qb) * nch + c) of part_bytes: m, l (BQ each), then the
     * rows' output accumulators (nq x EvP), element type                  */
    char *part;
    size_t part_bytes;
    /* per call, shared by the threads: is V block (b, kb) finite?
     * [b * nkb + kb]: 0 not known yet, 1 finite, 2 holds inf/NaN; or NULL */
} attn_plan;

/* the per-query arrays of the tile's scratch (off_row + k * BQ elements):
 * the current chunk's max, sum, rescale factor and max as used; the running
 * state (max, sum) and the fold's factors; after the last chunk the max as
 * used, 1 / sum and the fully masked rows' weight (weights_pass)         */
enum {
    ROW_M, ROW_L, ROW_ALPHA, ROW_CM_USED, ROW_RM, ROW_RL, ROW_FA, ROW_FB,
    ROW_M_USED, ROW_INV, ROW_FMV, ROW_COUNT
};

/* query blocks of at most this many rows (decoding) compute their scores
 * with keys in the lanes (tile_kern.h, qk_few)                           */
#define ATTN_QK_FEW 4

/* item's chunk argument: every chunk, folded by the item itself          */
#define ATTN_ALL_CHUNKS SIZE_MAX

static inline void *attn__part_slot(const attn_plan *pl, size_t b, size_t qb,
                                    size_t c)
{
    return pl->part + ((b * pl->nqb + qb) * pl->nch + c) * pl->part_bytes;
}

/* the uniform policy's output row: the mean of the S value rows of batch
 * item b, summed in key order in double (0 when S == 0); every path that
 * writes a uniform row uses it (masked.c)                                 */
void attn__uniform_mean(const attn_problem *p, size_t b, double *mean);

/* The variant fields of p in pl (qpos, limited, windowed, look_back,
 * look_ahead: attn__var_band's band, variants.h; edits_scores): sdpa.c,
 * shared by the forward and backward plans.                              */
void attn__limits(attn_plan *pl, const attn_problem *p);

/* Keys [*jlo, *jhi) some row i0 .. i0+nq-1 may see by causality and the
 * window (every key when neither is on; *jlo == *jhi: none).             */
static inline void attn__key_range(const attn_plan *pl, size_t i0, size_t nq,
                                   size_t *jlo, size_t *jhi)
{
    const size_t S = pl->p->S;
    *jlo = 0;
    *jhi = S;
    if (!pl->limited)
        return;
    const ptrdiff_t f = (ptrdiff_t)i0 + pl->qpos;
    const ptrdiff_t lo = f - pl->look_back, hi = f + (ptrdiff_t)nq + pl->look_ahead;
    *jlo = lo <= 0 ? 0 : (size_t)lo < S ? (size_t)lo : S;
    *jhi = hi <= 0 ? 0 : (size_t)hi < S ? (size_t)hi : S;
    if (*jhi < *jlo)
        *jhi = *jlo;
}

/* Query rows [*ilo, *ihi) that may see some key j0 .. j0+nk-1.          */
static inline void attn__query_range(const attn_plan *pl, size_t j0,
                                     size_t nk, size_t *ilo, size_t *ihi)
{
    const size_t L = pl->p->L;
    *ilo = 0;
    *ihi = L;
    if (!pl->limited)
        return;
    const ptrdiff_t lo = (ptrdiff_t)j0 - pl->look_ahead - pl->qpos;
    const ptrdiff_t hi = (ptrdiff_t)(j0 + nk) + pl->look_back - pl->qpos;
    *ilo = lo <= 0 ? 0 : (size_t)lo < L ? (size_t)lo : L;
    *ihi = hi <= 0 ? 0 : (size_t)hi < L ? (size_t)hi : L;
    if (*ihi < *ilo)
        *ihi = *ilo;
}

/* The mask rows the cached key-block classes were computed from (a thread
 * keeps them across items: items of the same query block share them when
 * the mask is broadcast over the batch). Zeroed with the scratch.        */
typedef struct {
    const uint8_t *row0;
    size_t nrows;
    int valid;
} attn_mkey;

/* what a thread's cached key block holds: its first n rows of the
 * operand whose batch item starts at base (NULL: nothing). Zeroed with
 * the scratch.                                                          */
typedef struct {
    const char *base;
    size_t n;
} attn_kvmark;

/* Compute one work item. Returns ATTN_OK, or ATTN_EFULLYMASKED (policy
 * raise) with *bad_row = the first fully masked row of the item.          */
typedef attn_status (*attn_item_fn)(const attn_plan *pl, void *scratch,
                                    size_t b, size_t qb, size_t chunk,
                                    size_t *bad_row);
/* fold the chunk states of item (b, qb) left in pl->part, then outputs   */
typedef attn_status (*attn_merge_fn)(const attn_plan *pl, void *scratch,
                                     size_t b, size_t qb, size_t *bad_row);

/* The backward pass (bwd.c, bwd_tile.h). fp holds the forward-style
 * plan the shared pieces of tile.h read (p = &bp->f, BQ, BK, BQ, EvP,
 * nqb, nkb, qpos, pack_v); the rest is the backward's own.               */
typedef struct {
    attn_plan fp;
    const attn_bwd_problem *bp;
    size_t EP;        /* E rounded up to the vector width                   */
    int guarded;      /* Q, K or dout hold inf/NaN: products skip zeros     */
    const void *dvec; /* D_i = rowsum(dout * out), [b * L + i], dtype       */
    const void *uvec; /* uniform policy: sum of dout / S over the fully
                         masked rows of b, [b * EvP + c], dtype             */
    const unsigned char *bnan; /* [b]: NaN policy and a fully masked row  */
    int fused;        /* one item per b (5 products per block pair), not
                         the split passes A and B (7, parallel inside b)   */
    size_t BKA;       /* keys per block of bwd_keys (pass A / fused)        */
    /* scratch layout (see bwd_tile.h): byte offsets, 64-byte aligned.
     * A query block's packed data (qt, dot, qr, dor, row, lnan) lives in a
     * slot of qstride bytes: one slot (split), or one per query block at
     * sb + qb * qstride (fused); the other offsets count from sb.         */
    size_t off_qt, off_dot, off_qr, off_dor, off_row, off_lnan, qstride;
    size_t off_st, off_dp, off_kr, off_vp, off_acc1, off_acc2, off_nan;
    size_t off_cap;   /* softcap: tanh(s / cap) of the block, BKM x BQ      */
    size_t off_dqall; /* fused: dQ accumulator of all of b, nqb*BQ x EP    */
    size_t scratch_bytes;
} attn_bwd_plan;

/* pass A item (b, key block) or pass B item (b, query block)              */
typedef void (*attn_bwd_fn)(const attn_bwd_plan *bpl, void *scratch,
                            size_t b, size_t blk);

/* One instruction set's attention kernels (a field of its isa/<set>.c
 * table; NULL kernels: its base table's). plan: NULL, or the set's own
 * micro-kernels' say on a plan (sdpa.c, bwd.c: after the blocks, before
 * the scratch; fwd 0 for the backward's plan).                          */
typedef struct attn_isa_desc_ {
    size_t W[2];             /* vector width in elements: [ATTN_F32/F64]   */
    size_t BQ[2];            /* query rows per item (speed only: a row's
                                bits do not depend on it)                  */
    attn_item_fn item[2];
    attn_merge_fn merge[2];
    attn_bwd_fn bwd_a[2], bwd_b[2]; /* backward passes A and B, per type */
    void (*plan)(attn_plan *pl, const attn_problem *p, int fwd);
} attn_isa_desc;

/* the desc of the set the kernels use now (runtime/isa.h), with its
 * base's kernels where it has none of its own (sdpa.c)                  */
typedef struct {
    const attn_isa_desc *d;
    attn_item_fn item;
    attn_merge_fn merge;
    attn_bwd_fn bwd_a, bwd_b;
    size_t W, BQ;
} attn_sdpa_kern;
void attn__sdpa_kern(attn_dtype dtype, attn_sdpa_kern *k);

/* The key block (sdpa.c): the online softmax's blocking, from (dtype, E,
 * Ev) alone -- never the instruction set, L, S or the threads -- so a
 * row meets the same blocks on every path and in every call.           */
size_t attn__key_block(const attn_problem *p);
/* the same rule's halving for wide rows from another first block (a set's
 * own P V kernel: tile_amx.h)                                           */
size_t attn__key_block_from(const attn_problem *p, size_t BK);

/* the work of a call of `products` (L x S x (E + Ev)) multiply-adds per
 * batch item, for runtime/sched.h's thread-count rule (sdpa.c)          */
double attn__sdpa_flops(const attn_problem *p, double products);

#endif /* ATTNPY_ATTN_KERN_H */
