/*
 * attn.h -- the attnpy C core: attention kernels on raw pointers.
 *
 * Pure C11 + libc + pthreads. Nothing here knows about Python or NumPy;
 * the binding in csrc/python/ is the only code that does. The caller (the binding, or the
 * C test program) checks shapes, resolves broadcasting and allocates; the
 * kernels only compute and return a status.
 *
 * Shape legend
 *   B   batch items: every leading dimension, broadcast and flattened by the
 *       caller into one index b in [0, B)
 *   L   query positions (rows of Q, of the output and of the weights)
 *   S   key/value positions (rows of K and V, columns of the weights)
 *   E   features of a query / key row
 *   Ev  features of a value row (= columns of the output)
 *
 * Operands are batched 2-D views (attn_mat): element (b, i, j) of a matrix
 * of element type T lives at
 *
 *       (T *)m.data + m.boff[b] + i * m.s0 + j * m.s1
 *
 * Offsets and strides are counted in ELEMENTS, not bytes (the binding
 * guarantees aligned, native-byte-order data, so byte strides divide
 * evenly). boff == NULL means an offset of 0 for every b. Strides may be 0
 * (a broadcast dimension) or negative (a reversed view). Sizes are size_t;
 * the caller has checked that every extent fits in ptrdiff_t and that every
 * allocation size the core makes cannot overflow size_t.
 */
#ifndef ATTNPY_ATTN_H
#define ATTNPY_ATTN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    ATTN_OK = 0,
    ATTN_ENOMEM = 1,        /* an allocation inside the core failed          */
    ATTN_EFULLYMASKED = 2,  /* fully_masked == ATTN_FM_RAISE and a row saw no
                               key: problem.bad_b / bad_row name the first one
                               in (b, row) order                             */
    ATTN_EINTERRUPTED = 3,  /* exec.poll asked to stop; outputs are garbage   */
    ATTN_EINVAL = 4         /* an argument the caller should have rejected   */
} attn_status;

typedef enum { ATTN_F32 = 0, ATTN_F64 = 1 } attn_dtype;

typedef enum {
    ATTN_CAUSAL_NONE = 0,
    ATTN_CAUSAL_TOP_LEFT = 1,     /* query i sees keys j <= i                 */
    ATTN_CAUSAL_BOTTOM_RIGHT = 2  /* query i sees keys j <= i + S - L         */
} attn_causal;

typedef enum {
    ATTN_FM_ZERO = 0,     /* output row 0, weights row 0                      */
    ATTN_FM_UNIFORM = 1,  /* weights 1/S, output = mean of all S value rows
                             (S == 0: output row 0)                           */
    ATTN_FM_NAN = 2,      /* output row NaN, weights row NaN                  */
    ATTN_FM_RAISE = 3     /* return ATTN_EFULLYMASKED                         */
} attn_fm;

/* How an operand's elements are stored. ATTN_ST_NATIVE (the zero value):
 * in the call's dtype (float or double). ATTN_ST_F16 / ATTN_ST_BF16:
 * IEEE binary16 / bfloat16, allowed only where the call's dtype is ATTN_F32
 * and the function's comment says so: the kernels read such an operand in
 * 16 bits (converted in registers or per block in scratch, never a
 * whole-array copy) and compute in float; a 16-bit result is rounded once
 * from float, to nearest even (half.h has the exact conversions).      */
typedef enum {
    ATTN_ST_NATIVE = 0,
    ATTN_ST_F16 = 1,
    ATTN_ST_BF16 = 2
} attn_store;

typedef struct {
    void *data;             /* NULL: operand absent (only where allowed)      */
    const ptrdiff_t *boff;  /* B offsets in elements, or NULL for all zero    */
    ptrdiff_t s0, s1;       /* row and column strides in elements             */
    attn_store store;       /* element storage (0: the call's dtype)          */
} attn_mat;

/*
 * One scaled dot-product attention problem, B independent (L, S) items.
 *
 * For each b and each query row i, with allowed(i, j) = mask(b,i,j) != 0
 * and causal(i, j), and
 *
 *     s(i, j) = allowed ? scale * dot(Q[b,i,:], K[b,j,:]) + bias(b,i,j)
 *                       : -inf
 *
 * a row is FULLY MASKED when every s(i, j) is -inf (this includes S == 0;
 * a NaN score does not count as -inf). Other rows get
 *
 *     weights(i, j) = exp(s(i, j) - m_i) / sum_j exp(s(i, j) - m_i),
 *     m_i = max_j s(i, j)    (NaN/+inf propagate as in NumPy)
 *     out[b, i, :] = sum over j with weights(i, j) != 0
 *                    of weights(i, j) * V[b, j, :]
 *
 * (a key of weight 0 -- masked, or exp underflowed -- contributes nothing,
 * not even 0 * inf = NaN: NaN/inf in value rows a query cannot see never
 * reach it, so kernels may skip such keys), and fully masked rows follow
 * problem.fully_masked.
 *
 * Element types: q, k, v, bias, out, weights, scores are `dtype`
 * (float or double); mask is uint8 (nonzero = may attend).
 *
 * 16-bit operands (attn_sdpa). In a float call (dtype ATTN_F32) any of q,
 * k, v, out, bias, weights and scores may be stored as float16 or
 * bfloat16 (their attn_mat.store; offsets and strides then count 16-bit
 * elements); mask, lse and the ALiBi slopes may not, and a double call
 * takes none (ATTN_EINVAL, nothing written).
 *   - The kernel reads them in 16 bits itself: converted in registers as
 *     they are loaded, or one key block at a time into the thread's own
 *     scratch; never a converted copy of a whole operand, so a call needs
 *     no more memory than the same call in float. Every sum is in float.
 *   - 16-bit results (out, weights, scores) are the float results rounded
 *     once, to nearest even; lse stays float.
 *   - The block plan (query block, key block, keys per chunk) comes from
 *     the compute type, never from the storage, and every conversion is
 *     exact: a 16-bit call gives exactly the bits of the float call on
 *     the upcast inputs, rounded once (tests/c/test_half16.c, every
 *     instruction set), float16 and bfloat16 alike.
 *   - The exception is opt-in: on the "amx" set (attn_set_isa) bfloat16
 *     q and k with E % 32 == 0 take their scores from AMX tiles, and
 *     bfloat16 v with Ev % 16 == 0 its P V: close to the float call, not
 *     its bits. attn_sdpa_backward recomputes those scores by the same
 *     tiles, so the backward's P is built from the forward's very scores.
 *   - Batch invariance holds for them as for float: a row's result is the
 *     same bits whatever else is in the call (decoded alone or inside a
 *     long Q, any thread count, split or not), "amx" included.
 */
typedef struct {
    attn_dtype dtype;
    size_t B, L, S, E, Ev;
    attn_mat q;        /* (B, L, E)                                          */
    attn_mat k;        /* (B, S, E)                                          */
    attn_mat v;        /* (B, S, Ev)                                         */
    attn_mat mask;     /* (B, L, S) uint8, optional (data NULL = all allowed) */
    attn_mat bias;     /* (B, L, S) dtype, optional, added to scaled scores  */
    attn_mat out;      /* (B, L, Ev) written                                 */
    attn_mat weights;  /* (B, L, S) optional: written when data != NULL      */
    attn_mat scores;   /* (B, L, S) optional: raw dot(Q_i, K_j), unscaled,
                          unmasked (for attnpy.explain)                      */
    attn_mat lse;      /* (B, L) optional, written when data != NULL: row i
                          at data + boff[b] + i * s0 (s1 unused):
                          lse = m_i + log(sum_j exp(s(i, j) - m_i)), the
                          log-sum-exp of the row's scores; -inf for a fully
                          masked row WHATEVER the policy (also "uniform":
                          its 1/S weights are a fill, not a softmax; the
                          backward pass reads -inf as "fully masked")     */
    double scale;
    attn_causal causal;
    attn_fm fully_masked;
    /* ---- variants (window, ALiBi, softcap, positions); the zero value of
     * every field below means "off", so a zero-initialised problem is plain
     * attention.
     *
     * Positions. Query row i sits at key position
     *     i' = i + qpos,  qpos = pos_shift + (causal == BOTTOM_RIGHT ? S - L : 0)
     * causal (either alignment) allows key j iff j <= i'. pos_shift is 0 for
     * every public call; attnpy.dask sets it for a block of queries/keys cut
     * out of a longer sequence (|pos_shift| <= PTRDIFF_MAX / 4).
     *
     * With all of them the score of an allowed (i, j) is, in this order:
     *     s = scale * dot(Q_i, K_j)
     *     s = softcap * tanh(s / softcap)            if softcap > 0
     *     s = s + bias(b, i, j)                      if bias
     *     s = s - slope_b * |i' - j|                 if alibi
     * and (i, j) is allowed iff mask != 0, causal allows it, and, if window,
     * i' - wleft <= j <= i' + wright. Everything else in this header (fully
     * masked rows, lse, weights, the backward's dS) reads "s" as this final
     * score; scores (for explain) stay the raw dot products. In the
     * backward pass d(bias) = dS, and dQ/dK carry the softcap factor
     * (1 - tanh^2) = 1 - (capped / softcap)^2.                             */
    ptrdiff_t pos_shift;
    int window;            /* nonzero: apply the window [i'-wleft, i'+wright] */
    ptrdiff_t wleft, wright; /* >= 0; an unbounded side is given as L + S +
                                |pos_shift| by the caller, so kernels may
                                form i' +- w in ptrdiff_t without overflow  */
    attn_mat alibi;        /* (B,) slopes, dtype: slope of item b at
                              data + boff[b] (s0, s1 unused); NULL = off    */
    double softcap;        /* > 0: cap the scaled scores; 0 = off          */
    /* out: set when the call returns ATTN_EFULLYMASKED */
    size_t bad_b, bad_row;
} attn_problem;

/*
 * The gradient of one attention problem (attn_sdpa_backward).
 *
 * f is the forward problem exactly as it was computed (q, k, v, mask, bias,
 * scale, causal, fully_masked), with f.out = the forward's output and
 * f.lse = its lse (both READ here; f.weights, f.scores unused). With
 *
 *     P(i, j)  = exp(s(i, j) - lse_i)    (0 where s = -inf)
 *     D_i      = sum_c dout(i, c) out(i, c)              (in double)
 *     dS(i, j) = P(i, j) * (dot(dout_i, V_j) - D_i)      (0 where P == 0:
 *                never 0 * inf)
 *
 * the kernels write
 *
 *     dv[b, j, :] = sum_i P(i, j) dout[b, i, :]
 *     dq[b, i, :] = scale sum_j dS(i, j) K[b, j, :]
 *     dk[b, j, :] = scale sum_i dS(i, j) Q[b, i, :]
 *     dbias[b, i, j] = dS(i, j)                          (if dbias.data)
 *
 * Rows with lse_i == -inf are fully masked; by f.fully_masked: ZERO: they
 * add nothing; UNIFORM: their weights 1/S are constants, so every dv row
 * gets sum_i dout_i / S and nothing else changes; NAN: their weights are
 * NaN: dq row i and dbias row i are NaN, and so is every row of dk and dv
 * of that b; RAISE: ATTN_EFULLYMASKED with f.bad_b / f.bad_row the first
 * such row in (b, row) order.
 *
 * dout (B, L, Ev) is read; dq (B, L, E), dk (B, S, E), dv (B, S, Ev) and
 * the optional dbias (B, L, S) are written, dtype f.dtype. The regions
 * written for different b must not overlap: where K, V or the bias were
 * broadcast over b, the caller gives each b its own gradient and sums.
 *
 * 16-bit storage (f.dtype == ATTN_F32 only): any of f.q, f.k, f.v,
 * f.bias, f.out and dout may be ATTN_ST_F16 / ATTN_ST_BF16, and so may
 * any of dq, dk, dv, dbias, each on its own; f.lse, f.mask and f.alibi
 * stay in the call's dtype (anything else: ATTN_EINVAL). The kernels read the
 * 16-bit operands a block at a time into their float scratch (exact),
 * never as a whole converted copy; every sum is the float call's, in the
 * same order (D in double, dS and the dq/dk/dv accumulations in float
 * scratch), and no pass adds into a caller's gradient: each gradient
 * element is computed in float and rounded ONCE, to nearest even, into
 * its storage. So a 16-bit gradient
 * is exactly the float32 call's gradient on the upcast inputs, rounded
 * once (block sizes come from the float compute type, never from the
 * storage), and the same bits for any exec->nthreads.
 */
typedef struct {
    attn_problem f;
    attn_mat dout;
    attn_mat dq, dk, dv, dbias;
} attn_bwd_problem;

/*
 * How a call may run: thread count and a cancellation poll.
 * poll (may be NULL) is called only from the calling thread, about every
 * 100 ms of compute; a nonzero return stops the call, which then returns
 * ATTN_EINTERRUPTED. Every core entry point is safe to call from several
 * threads at once.
 */
typedef struct {
    int nthreads;               /* >= 1                                      */
    int (*poll)(void *ctx);
    void *poll_ctx;
} attn_exec;

/* ---- attention ----------------------------------------------------------
 * attn_sdpa: the fast path (fused, tiled, never builds L x S unless weights
 * or scores are requested, in which case it writes them into the caller's
 * buffers). Results do not depend on exec->nthreads. A 16-bit operand
 * (attn_mat.store) the fast path does not read natively gives ATTN_EINVAL:
 * it is never read as floats.
 * attn_sdpa_naive: a plain row-by-row implementation of the same contract,
 * single-threaded, the C tests' oracle (csrc/core/testing/: linked into
 * the C test programs only, not into the Python extension).              */
attn_status attn_sdpa(attn_problem *p, const attn_exec *ex);
attn_status attn_sdpa_naive(attn_problem *p);

/* attn_sdpa_backward: the fused backward pass (FlashAttention-2's
 * recompute scheme: P rebuilt per block from lse, never an L x S array;
 * memory O((L + S)(E + Ev)) per thread). Parallel over (b, key block) for
 * dk/dv and (b, query block) for dq/dbias; the same bits for any
 * exec->nthreads. attn_sdpa_backward_naive: row by row in double, single
 * threaded, the C tests' oracle (csrc/core/testing/, not in the extension). */
attn_status attn_sdpa_backward(attn_bwd_problem *bp, const attn_exec *ex);
attn_status attn_sdpa_backward_naive(attn_bwd_problem *bp);

/* ---- instruction sets ----------------------------------------------------
 * Every set the build has runs the same kernels and gives the same bits
 * (the numeric rule: simd/math.h), but "amx", an opt-in set whose
 * bfloat16 products by AMX tiles have bits of their own. The choice is
 * speed only.
 * attn_isa_name(): the set in use: "amx", "avx512", "avx2", "neon",
 * "portable" (the plain C kernels, built for AVX2 + FMA where the CPU has
 * them) or "baseline" (the plain C kernels for the base architecture).
 * attn_set_isa(name): one of those, or "auto" (the best usable set that
 * is not opt-in); returns 0, or -1 if unknown or unusable here. The first
 * choice is the environment variable ATTNPY_ISA when it names a usable
 * set (ATTNPY_FORCE_PORTABLE=1: "portable"), else "auto". Not meant to be
 * changed while another thread is inside a kernel (that call finishes on
 * the set it started with).
 * attn_isa_info(i, ...): set i of the list, best first (0 .. while it
 * returns 0): its name, whether this build and CPU can run it, whether it
 * is opt-in.                                                             */
const char *attn_isa_name(void);
int attn_set_isa(const char *name);
int attn_isa_info(size_t i, const char **name, int *usable, int *opt_in);

/* ---- row kernels ----------------------------------------------------------
 * Every entry point below takes its arguments as one struct and how to
 * run as an attn_exec (ex may be NULL: one thread, no poll), like
 * attn_sdpa: rows spread over ex->nthreads threads in chunks fixed by the
 * shape alone (the same bits for any thread count), the calling thread
 * polling ex->poll between chunks.
 *
 * Row operands: element (r, j) of an attn_mat m of a row kernel at
 *     m.data + OFF(m, r) + r * m.s0 + j * m.s1
 * (a boff table for arbitrary leading dims, or s0 for a plain matrix). A
 * vector broadcast over the rows (a weight, a bias) has boff NULL and
 * s0 = 0; data NULL = absent. Outputs may be the very memory of an input
 * of the same shape and strides (in place).
 *
 * 16-bit operands: in an ATTN_F32 call any operand, input or output, row
 * or vector, may have store ATTN_ST_F16 or ATTN_ST_BF16 (each on its
 * own), unless its kernel says otherwise. The kernels compute on rows
 * widened exactly to float (never a whole-array copy); a 16-bit output
 * is the float32 result rounded once to nearest even (half.h). Hence the
 * bits: a call with 16-bit operands equals the float32 call on the
 * widened inputs with each 16-bit output rounded from its float result.
 * A 16-bit operand in an ATTN_F64 call, or an unknown store: ATTN_EINVAL. */

/* softmax over rows: row r, element j at in.data + OFF(in, r) + r*in.s0
 * + j*in.s1 (the row operands above). NaN and +-inf propagate as exp(x - max(x)) /
 * sum(exp(x - max(x))) in NumPy; the sum is in 16 partial sums added in
 * a fixed tree (elementwise/softmax_tmpl.h).                             */
typedef struct {
    attn_dtype dtype;
    size_t nrows, n;
    attn_mat out, in;
} attn_softmax_args;
attn_status attn_softmax(const attn_softmax_args *a, const attn_exec *ex);

/* softmax backward over rows (y = softmax(x) along the row):
 *   dx_j = y_j * (dy_j - sum_k dy_k * y_k)     (the sum in double)
 * Rows as attn_softmax's. dx may be exactly dy or exactly y (same
 * memory and strides); no other overlap.                                 */
typedef struct {
    attn_dtype dtype;
    size_t nrows, n;
    attn_mat dx, dy, y;
} attn_softmax_grad_args;
attn_status attn_softmax_backward(const attn_softmax_grad_args *a,
                                  const attn_exec *ex);

/* softmax Jacobian of each row: J(r, i, j) = y_i * ([i == j] - y_j), i.e.
 * diag(y) - y y^T, at jac.data + OFF(jac, r) + i*jac.s0 + j*jac.s1; y as
 * in attn_softmax. jac must not overlap y; no 16-bit operand.            */
typedef struct {
    attn_dtype dtype;
    size_t nrows, n;
    attn_mat jac, y;
} attn_softmax_jac_args;
attn_status attn_softmax_jacobian(const attn_softmax_jac_args *a,
                                  const attn_exec *ex);

/* sinusoidal positional encoding, batched: for b < B, t < T, c < D,
 *   w_i  = exp(-(2i) * log(base) / D),      i = c / 2
 *   pe   = sin((t + offset) * w_i)  for even c,  cos((t + offset) * w_i) odd
 * computed in double with simd/scalar.h's functions (the same bits on
 * every system); accumulate ? out += pe : out = pe, out (B, T, D) at
 * data + OFF(out, b) + t * s0 + c * s1. No 16-bit operand.               */
typedef struct {
    attn_dtype dtype;
    size_t B, T, D;
    attn_mat out;
    double offset, base;
    int accumulate;
} attn_posenc_args;
attn_status attn_posenc(const attn_posenc_args *a, const attn_exec *ex);

/* batched strided 2-D copy: out(b, i, j) = in(b, i, j), i < rows, j < cols
 * (no 16-bit operand)                                                    */
typedef struct {
    attn_dtype dtype;
    size_t B, rows, cols;
    attn_mat out, in;
} attn_copy_args;
attn_status attn_copy2d(const attn_copy_args *a, const attn_exec *ex);

/* number of CPUs this process may run on (sched affinity), at least 1      */
int attn_available_cpus(void);

/* a streaming read, the benchmark's yardstick for decoding (a decode
 * reads its K and V once): every byte of n buffers, front to back, on
 * ex's threads (the scheduler's rule, one "flop" a byte) with the loads
 * of the instruction set in use. *sum = the sum, modulo 2^64, of each
 * buffer read as native 64-bit words, its last partial word (nbytes % 8
 * bytes) padded with zero bytes: a check that every byte was read, the
 * same for any thread count and set. Buffers need no alignment; nbytes
 * may be 0. ATTN_ENOMEM (the per-chunk sums), ATTN_EINTERRUPTED.       */
typedef struct {
    size_t n;
    const void *const *data;   /* n buffers                               */
    const size_t *nbytes;      /* their sizes in bytes                    */
    uint64_t *sum;             /* out                                     */
} attn_read_args;
attn_status attn_read_bytes(const attn_read_args *a, const attn_exec *ex);

/* ---- decoding (positional/rope.c, attention/merge.c) -------------------- */

/* rotary position embedding, batched: for b < B, t < T, pair i < E/2,
 *   theta = (offset + t) * base^(-2i/E), in double,
 *   (out_a, out_b) = (x_a cos - x_b sin, x_b cos + x_a sin), x = in(b, t, :)
 * with (a, b) = (2i, 2i+1) when interleaved (GPT-J), else (i, i + E/2)
 * (rotate-half: GPT-NeoX, Llama); the angles, cos, sin and the rotation
 * in double with simd/scalar.h's functions, rounded once to the output.
 * in / out (B, T, E) at data + OFF(m, b) + t * s0 + e * s1; out may be in
 * (same strides: in place). E odd: ATTN_EINVAL.                          */
typedef struct {
    attn_dtype dtype;
    size_t B, T, E;
    attn_mat out, in;
    double offset, base;
    int interleaved;
} attn_rope_args;
attn_status attn_rope(const attn_rope_args *a, const attn_exec *ex);

/* merge K partial attention results over disjoint key sets: for b < B,
 * i < L (lse_k(b, i) at lses[k].data + OFF(lses[k], b) + i * s0; s1
 * unused; out_k rows (b, i) as out's):
 *   M = max_k lse_k,  e_k = exp(lse_k - M),  lse = M + log(sum_k e_k),
 *   out(b, i, :) = sum over k with e_k != 0 of (e_k / sum e) out_k(b, i, :)
 * in double, k in order, exp and log simd/scalar.h's. A row whose every
 * lse_k is -inf (K == 0 too) gets out 0 and lse -inf. lse.data may be
 * NULL (not wanted). Any of out, lse, outs[k], lses[k] may be 16-bit.    */
typedef struct {
    attn_dtype dtype;
    size_t K, B, L, Ev;
    attn_mat out, lse;
    const attn_mat *outs, *lses;  /* K each                              */
} attn_merge_args;
attn_status attn_merge(const attn_merge_args *a, const attn_exec *ex);

/* ---- the transformer layer's row kernels (layer/) -----------------------
 * Row kernels as above. Every sum over rows (dweight, dbias) is reduced
 * in chunk order, in double; a 16-bit dweight / dbias is the float32
 * call's, rounded once. Sums over a row are in double, in 8 interleaved
 * partial sums added in a fixed tree (rows/lanes.h).                    */

/* Layer normalisation of s = x [+ res] [+ shift] (s rounded to the dtype):
 *   mean = sum_j s_j / n,   var = sum_j (s_j - mean)^2 / n
 *   rstd = eps_in_sqrt ? 1 / sqrt(var + eps)          (PyTorch, BERT)
 *                      : 1 / (sqrt(var) + eps)        (the tutorial)
 *   y_j  = (s_j - mean) * rstd [* weight_j] [+ bias_j]
 * in double, rounded once. sum (optional) receives s, the input the
 * backward pass needs.                                                    */
typedef struct {
    attn_dtype dtype;
    size_t nrows, n;
    attn_mat y;        /* (nrows, n) written                                */
    attn_mat sum;      /* (nrows, n) optional: s written                    */
    attn_mat x;        /* (nrows, n)                                        */
    attn_mat res;      /* (nrows, n) optional residual added to x           */
    attn_mat shift;    /* (n) optional vector added to x (a bias before)    */
    attn_mat weight;   /* (n) optional                                      */
    attn_mat bias;     /* (n) optional                                      */
    double eps;
    int eps_in_sqrt;
} attn_norm;
attn_status attn_layer_norm(const attn_norm *p, const attn_exec *ex);

/* Its gradient, from dy and the normalised input s (the stats are
 * recomputed from s exactly as the forward pass computed them):
 *   g_j = dy_j [* weight_j],  xhat_j = (s_j - mean) * rstd
 *   dx_j = rstd (g_j - mean(g)) - k xhat_j mean(g xhat)
 *   k = rstd (eps_in_sqrt), 1 / sqrt(var) (tutorial; 0 when var == 0, as
 *   PyTorch's std backward)
 *   dweight_j = sum_r dy_rj xhat_rj,  dbias_j = sum_r dy_rj   (optional) */
typedef struct {
    attn_dtype dtype;
    size_t nrows, n;
    attn_mat dx;       /* (nrows, n) written                                */
    attn_mat dweight;  /* (n) optional, written                             */
    attn_mat dbias;    /* (n) optional, written                             */
    attn_mat dy;       /* (nrows, n)                                        */
    attn_mat s;        /* (nrows, n) the forward pass's normalised input    */
    attn_mat weight;   /* (n) optional                                      */
    double eps;
    int eps_in_sqrt;
} attn_norm_grad;
attn_status attn_layer_norm_backward(const attn_norm_grad *p,
                                     const attn_exec *ex);

/* the activations: layer/acts.h's list (ATTN_ACT_NONE, _RELU, _GELU,
 * _GELU_TANH, ... in its order), each with its formula there            */
#include "layer/acts.h"
typedef enum {
#define ATTN_ACT_ENUM_(id, name, cost, y, dx) ATTN_ACT_##id,
    ATTN_ACT_LIST(ATTN_ACT_ENUM_)
#undef ATTN_ACT_ENUM_
    ATTN_ACT_COUNT     /* how many there are                              */
} attn_act;

/* bias + activation: y(r, j) = act(x(r, j) [+ bias_j]), h = x + bias
 * rounded to the dtype, act by layer/acts.h's formula (expanded by
 * layer/act_tmpl.h): the same bits on every set.                        */
typedef struct {
    attn_dtype dtype;
    attn_act act;
    size_t nrows, n;
    attn_mat y, x, bias;   /* bias: (n) optional                          */
} attn_act_args;
attn_status attn_bias_act(const attn_act_args *a, const attn_exec *ex);

/* its gradient: dx(r, j) = dy(r, j) * act'(h(r, j)), h = x [+ bias] as in
 * the forward pass (as layer/acts.h writes it; relu: dy where h > 0,
 * else +0); dbias_j = sum_r dx(r, j) (optional; in double, chunk order). */
typedef struct {
    attn_dtype dtype;
    attn_act act;
    size_t nrows, n;
    attn_mat dx, dbias, dy, x, bias;
} attn_act_grad_args;
attn_status attn_bias_act_backward(const attn_act_grad_args *a,
                                   const attn_exec *ex);

/* ---- the pieces of a Llama-family decoder (layer/) -----------------------
 * Row kernels like the ones above (same operands, threads, in place).    */

/* RMS normalisation (Llama's RMSNorm, torch.nn.functional.rms_norm):
 *   rstd = 1 / sqrt(sum_j x_j^2 / n + eps),  y_j = x_j * rstd [* weight_j]
 * the mean of squares in double (8 lanes, fixed order), y in double,
 * rounded once.                                                           */
typedef struct {
    attn_dtype dtype;
    size_t nrows, n;
    attn_mat y;        /* (nrows, n) written                                */
    attn_mat x;        /* (nrows, n)                                        */
    attn_mat weight;   /* (n) optional                                      */
    double eps;
} attn_rms;
attn_status attn_rms_norm(const attn_rms *p, const attn_exec *ex);

/* Its gradient (rstd recomputed with the forward pass's bits):
 *   xhat_j = x_j rstd,  g_j = dy_j [* weight_j]
 *   dx_j = rstd (g_j - xhat_j mean(g xhat))
 *   dweight_j = sum_r dy_rj xhat_rj  (optional; double, chunk order)     */
typedef struct {
    attn_dtype dtype;
    size_t nrows, n;
    attn_mat dx;       /* (nrows, n) written                                */
    attn_mat dweight;  /* (n) optional, written                             */
    attn_mat dy;       /* (nrows, n)                                        */
    attn_mat x;        /* (nrows, n) the forward pass's input               */
    attn_mat weight;   /* (n) optional                                      */
    double eps;
} attn_rms_grad;
attn_status attn_rms_norm_backward(const attn_rms_grad *p,
                                   const attn_exec *ex);

/* SiLU-gated unit: y(r, j) = silu(gate(r, j)) [* up(r, j)], silu(g) =
 * g sigmoid(g) (simd/math.h's sigmoid); up absent (data NULL): y =
 * silu(gate).                                                           */
typedef struct {
    attn_dtype dtype;
    size_t nrows, n;
    attn_mat y, gate, up;
} attn_glu_args;
attn_status attn_swiglu(const attn_glu_args *a, const attn_exec *ex);

/* its gradient, s = sigmoid(gate):
 *   dgate = dy [* up] * s (1 + gate (1 - s)),  dup = dy * silu(gate)
 * (dup optional; up absent: the gradient of silu alone). dgate and dup
 * may be the memory of dy, gate or up (element by element).              */
typedef struct {
    attn_dtype dtype;
    size_t nrows, n;
    attn_mat dgate, dup, dy, gate, up;
} attn_glu_grad_args;
attn_status attn_swiglu_backward(const attn_glu_grad_args *a,
                                 const attn_exec *ex);

/* ---- quantized weights (quant/) -------------------------------------------
 * attn_qmatmul: out (M, N) = x (M, K) W^T, W (N, K) stored as GGUF blocks
 * of 32 weights, row n at w + n ldw (bytes; ldw >= K / 32 block bytes):
 *   ATTN_Q4_1: 20 bytes = float16 d, float16 m, 16 bytes q: weight j < 16
 *              is d (q[j] & 15) + m, weight 16 + j is d (q[j] >> 4) + m;
 *   ATTN_Q8_0: 34 bytes = float16 d, 32 int8 q: weight j is d q[j];
 * (gguf's dequantized float32 values, exactly). x rows ldx floats apart,
 * out rows ldo floats apart (ldx >= K, ldo >= N), K a multiple of 32.
 * Each out(i, n) is one dot product in one order (quant/qmatvec.h), the
 * same bits on every instruction set and for any exec->nthreads.
 * attn_qblock_bytes: a block's bytes (0 for an unknown type).           */
typedef enum { ATTN_Q4_1 = 0, ATTN_Q8_0 = 1 } attn_qtype;
size_t attn_qblock_bytes(attn_qtype qtype);
typedef struct {
    attn_qtype qtype;
    size_t M, N, K;
    float *out;            /* (M, N), rows ldo floats apart               */
    size_t ldo;
    const float *x;        /* (M, K), rows ldx floats apart               */
    size_t ldx;
    const uint8_t *w;      /* N rows of K / 32 blocks, ldw bytes apart    */
    size_t ldw;
} attn_qmm_args;
attn_status attn_qmatmul(const attn_qmm_args *a, const attn_exec *ex);

#ifdef __cplusplus
}
#endif
#endif /* ATTNPY_ATTN_H */
