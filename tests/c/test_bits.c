/*
 * tests/c/test_bits.c -- the digest battery: every result of the core is
 * the same bits on every instruction set (portable C, AVX2 + FMA,
 * AVX-512, NEON; "baseline" too), on every operating system, for any
 * thread count and call shape (attn.h, simd/math.h's numeric rule).
 *
 * A FIXED battery of core calls on deterministic inputs: attn_sdpa
 * (float, double, float16 / bfloat16 operands; out, weights, scores, lse;
 * masks, biases broadcast over the batch or over the queries, both causal
 * alignments, windows, ALiBi, softcap, pos_shift, every fully_masked
 * policy, raise's bad_b / bad_row; L, S, E of 1 and primes, Ev != E,
 * transposed, padded and reversed operands, K/V shared between batch
 * items, decoding against 3000 keys), attn_sdpa_backward (the forward's
 * out and lse in, dbias, the policies, 16-bit), attn_merge, attn_softmax
 * and its backward and Jacobian, attn_posenc, attn_rope, attn_layer_norm,
 * attn_bias_act, attn_rms_norm, attn_swiglu (each with its backward) and
 * attn_qmatmul. Each case's results are hashed, whole buffers (what the
 * call must leave alone too) and its status, with SHA-256 (sha256.h),
 * and the digest compared with tests/c/bits_expected.h on every set this
 * machine runs, at 1, 2, 3 and 4 threads (attn__min_flops_per_thread = 0:
 * small calls really use them).
 *
 * NaNs are canonicalised before hashing: every NaN of a result becomes
 * one quiet NaN per storage type (0x7ff8..., 0x7fc00000, 0x7e00, 0x7fc0).
 * The hardware's NaN sign and payload differ between x86 (the "default
 * NaN" is negative) and ARM (positive), and IEEE 754 leaves them open; a
 * NaN's place, never its bits, is part of the promise.
 *
 * "amx" (opt-in) gives the other sets' bits except where its AMX tiles
 * compute (runtime/isa.h): scores of bfloat16 Q and K with E % 32 == 0,
 * and P V with bfloat16 V and Ev % 16 == 0 (both up to 256). Those cases
 * (amx_own below) are left out of amx's comparison with the table; on
 * amx they are held to amx's own 1-thread digest at 2, 3 and 4 threads.
 *
 * The expected digests are GENERATED, never written by hand:
 * tools/make_bit_digests.py builds this program, runs `test_bits --print`
 * (every case's name and digest on "portable" at one thread) and writes
 * bits_expected.h; `--check` fails when the committed header differs.
 * After a deliberate numeric change, rerun the script: the diff of
 * bits_expected.h names the cases whose bits changed.
 *
 *   test_bits [COUNT]   the battery, then COUNT random attention problems
 *                       (default 4), each held to its own digest on
 *                       "portable" at one thread; the battery is the same
 *                       at every COUNT
 *   test_bits --print   name and digest of every battery case, no checks
 *
 * No file I/O (it runs under wine and qemu-user as it is).
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attn.h"
#include "check.h"
#include "half.h"
#include "runtime/sched.h"
#include "sha256.h"

typedef struct {
    const char *name, *sha256;
} bits_digest;

#ifndef BITS_NO_EXPECTED
#include "bits_expected.h"
#else /* tools/make_bit_digests.py's build: the table is being written */
static const bits_digest bits_expected[] = {{NULL, NULL}};
#endif

/* ------------------------------------------------------------------------ */
/* operands: (B, R, C) in a chosen layout, of one element type              */
/* ------------------------------------------------------------------------ */
typedef enum { T_F64, T_F32, T_F16, T_BF16, T_U8 } etype;
static const size_t esz_of[] = {8, 4, 2, 2, 1};

static etype et(attn_dtype dt, attn_store st)
{
    return st == ATTN_ST_F16    ? T_F16
           : st == ATTN_ST_BF16 ? T_BF16
           : dt == ATTN_F64     ? T_F64
                                : T_F32;
}

static attn_store st_of(etype t)
{
    return t == T_F16 ? ATTN_ST_F16 : t == T_BF16 ? ATTN_ST_BF16 : ATTN_ST_NATIVE;
}

enum {
    L_C,    /* contiguous rows, items in order                          */
    L_PAD,  /* rows 3 elements apart more, items in reverse, gaps       */
    L_T,    /* transposed: s0 = 1, s1 = R                               */
    L_NEG,  /* both strides negative (a reversed view)                  */
    L_NEGT, /* transposed with the rows reversed                        */
    L_ROW0  /* one row for every r (s0 = 0)                             */
};

typedef struct {
    etype t;
    size_t B, R, C, n;   /* n: elements of buf                          */
    ptrdiff_t s0, s1;
    ptrdiff_t *boff;     /* item b's offset                             */
    ptrdiff_t *roff;     /* row r's offset in item 0 (the row kernels)  */
    unsigned char *buf;
    unsigned char *init; /* an input written in place: its values       */
} opnd;

/* grp > 1: items b and b' share their storage when b / grp == b' / grp
 * (K/V of grouped-query attention; grp >= B: one item for all)         */
static void op_make(opnd *o, etype t, size_t B, size_t R, size_t C, int lay,
                    size_t grp)
{
    memset(o, 0, sizeof *o);
    o->t = t, o->B = B, o->R = R, o->C = C;
    if (grp == 0)
        grp = 1;
    const size_t D = B ? (B + grp - 1) / grp : 1;
    size_t per = R * C;
    ptrdiff_t first = 0, gap = 0;
    switch (lay) {
    case L_PAD:
        o->s0 = (ptrdiff_t)C + 3, o->s1 = 1;
        per = R * (C + 3) + 5;
        gap = 2;
        break;
    case L_T:
        o->s0 = 1, o->s1 = (ptrdiff_t)R;
        break;
    case L_NEG:
        o->s0 = -(ptrdiff_t)C, o->s1 = -1;
        first = per ? (ptrdiff_t)per - 1 : 0;
        break;
    case L_NEGT:
        o->s0 = -1, o->s1 = (ptrdiff_t)R;
        first = R ? (ptrdiff_t)R - 1 : 0;
        break;
    case L_ROW0:
        o->s0 = 0, o->s1 = 1;
        per = C;
        break;
    default:
        o->s0 = (ptrdiff_t)C, o->s1 = 1;
        break;
    }
    o->boff = malloc((B ? B : 1) * sizeof *o->boff);
    o->roff = malloc((R ? R : 1) * sizeof *o->roff);
    o->n = D * per + 8;
    o->buf = calloc(o->n, esz_of[t]);
    if (!o->boff || !o->roff || !o->buf) {
        fprintf(stderr, "test_bits: out of memory\n");
        exit(2);
    }
    o->boff[0] = first + gap;
    for (size_t b = 0; b < B; b++) {
        const size_t d = b / grp, item = lay == L_PAD ? D - 1 - d : d;
        o->boff[b] = (ptrdiff_t)(item * per) + first + gap;
    }
    for (size_t r = 0; r < R; r++)
        o->roff[r] = o->boff[0] + (ptrdiff_t)r * o->s0;
}

static void op_free(opnd *o)
{
    free(o->boff), free(o->roff), free(o->buf), free(o->init);
    memset(o, 0, sizeof *o);
}

static size_t op_at(const opnd *o, size_t b, size_t r, size_t c)
{
    return (size_t)(o->boff[b] + (ptrdiff_t)r * o->s0 + (ptrdiff_t)c * o->s1);
}

/* element x of the buffer := v, rounded to the element type (16-bit:
 * through float, by half.h)                                            */
static void op_put(opnd *o, size_t x, double v)
{
    unsigned char *p = o->buf + x * esz_of[o->t];
    switch (o->t) {
    case T_F64: memcpy(p, &v, 8); break;
    case T_F32: { const float f = (float)v; memcpy(p, &f, 4); } break;
    case T_F16: { const uint16_t h = attn_f32_to_f16((float)v); memcpy(p, &h, 2); } break;
    case T_BF16: { const uint16_t h = attn_f32_to_bf16((float)v); memcpy(p, &h, 2); } break;
    case T_U8: *p = (unsigned char)v; break;
    }
}

static void op_set(opnd *o, size_t b, size_t r, size_t c, double v)
{
    op_put(o, op_at(o, b, r, c), v);
}

/* uniform in [lo, hi) with every mantissa bit random (so that a fused
 * multiply-add and a multiply then an add, or two summation orders,
 * give different bits)                                                 */
static double uni(double lo, double hi) { return lo + (hi - lo) * urand(); }

static void op_fill(opnd *o, double lo, double hi)
{
    for (size_t b = 0; b < o->B; b++)
        for (size_t r = 0; r < o->R; r++)
            for (size_t c = 0; c < o->C; c++)
                op_set(o, b, r, c, uni(lo, hi));
}

/* magnitudes 2^e, e in [elo, ehi], mantissas and signs random        */
static void op_fill_tiny(opnd *o, int elo, int ehi)
{
    for (size_t b = 0; b < o->B; b++)
        for (size_t r = 0; r < o->R; r++)
            for (size_t c = 0; c < o->C; c++) {
                const double m = uni(1, 2) * (irand(2) ? -1 : 1);
                op_set(o, b, r, c, ldexp(m, elo + (int)irand((size_t)(ehi - elo + 1))));
            }
}

/* a result's buffer before each call: one pattern (and untouched
 * elements keep it: the hash covers the whole buffer)                  */
static void op_sentinel(opnd *o)
{
    for (size_t x = 0; x < o->n; x++)
        op_put(o, x, o->t == T_U8 ? 0xa5 : -1234.5);
}

/* an input the call writes in place: remember it, to restore each run */
static void op_keep(opnd *o)
{
    o->init = malloc(o->n * esz_of[o->t]);
    if (!o->init) {
        fprintf(stderr, "test_bits: out of memory\n");
        exit(2);
    }
    memcpy(o->init, o->buf, o->n * esz_of[o->t]);
}

/* the views the core takes: batched (attention, posenc, rope, merge) */
static attn_mat am(const opnd *o)
{
    attn_mat m = {o->buf, o->boff, o->s0, o->s1, st_of(o->t)};
    return m;
}

/* row r of a row kernel's (R, C) operand (B = 1) by a table: OFF(m, r) */
static attn_mat rm(const opnd *o)
{
    attn_mat m = {o->buf, o->roff, 0, o->s1, st_of(o->t)};
    return m;
}

/* the same as a plain matrix: row r at r * s0 (the layer family's rows) */
static attn_mat pm(const opnd *o)
{
    attn_mat m = {o->buf + (size_t)o->boff[0] * esz_of[o->t], NULL, o->s0,
                  o->s1, st_of(o->t)};
    return m;
}

/* a vector (1, 1, C) broadcast over the rows */
static attn_mat vm(const opnd *o)
{
    attn_mat m = {o->buf + (size_t)o->boff[0] * esz_of[o->t], NULL, 0, o->s1,
                  st_of(o->t)};
    return m;
}

static const attn_mat NOMAT = {NULL, NULL, 0, 0, ATTN_ST_NATIVE};

/* ------------------------------------------------------------------------ */
/* hashing                                                                  */
/* ------------------------------------------------------------------------ */
static void hash_u64(sha256_ctx *h, uint64_t x)
{
    unsigned char b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(x >> (8 * i));
    sha256_add(h, b, 8);
}

/* element x as hashed: its bits, a NaN made the type's one quiet NaN
 * (see the top: the NaN's sign and payload are the hardware's)        */
static uint64_t canon(const opnd *o, size_t x)
{
    const unsigned char *p = o->buf + x * esz_of[o->t];
    uint64_t u = 0;
    switch (o->t) {
    case T_F64:
        memcpy(&u, p, 8);
        if ((u & 0x7fffffffffffffffULL) > 0x7ff0000000000000ULL)
            u = 0x7ff8000000000000ULL;
        break;
    case T_F32: {
        uint32_t v;
        memcpy(&v, p, 4);
        u = (v & 0x7fffffffu) > 0x7f800000u ? 0x7fc00000u : v;
    } break;
    case T_F16:
    case T_BF16: {
        uint16_t v;
        memcpy(&v, p, 2);
        const unsigned inf = o->t == T_F16 ? 0x7c00u : 0x7f80u;
        u = (v & 0x7fffu) > inf ? (o->t == T_F16 ? 0x7e00u : 0x7fc0u) : v;
    } break;
    case T_U8:
        u = *p;
        break;
    }
    return u;
}

/* the whole buffer, little-endian, canonical NaNs                      */
static void hash_op(sha256_ctx *h, const opnd *o)
{
    hash_u64(h, (uint64_t)o->t);
    hash_u64(h, (uint64_t)o->n);
    unsigned char stage[4096];
    size_t k = 0;
    const size_t w = esz_of[o->t];
    for (size_t x = 0; x < o->n; x++) {
        const uint64_t u = canon(o, x);
        for (size_t i = 0; i < w; i++)
            stage[k++] = (unsigned char)(u >> (8 * i));
        if (k > sizeof stage - 8) {
            sha256_add(h, stage, k);
            k = 0;
        }
    }
    sha256_add(h, stage, k);
}

/* ------------------------------------------------------------------------ */
/* a case: its operands, how to call it, and the driver                    */
/* ------------------------------------------------------------------------ */
#define MAXOP 20
enum { R_IN, R_OUT, R_INOUT };

typedef struct kase kase;
/* the call, with every operand in place; hashes its status (and what
 * else it reports); returns 1 when the results are to be hashed, 0 when
 * it hashed what counts itself                                          */
typedef int (*call_fn)(kase *k, const attn_exec *ex, sha256_ctx *h);

typedef struct sdpa_spec sdpa_spec;
struct kase {
    char name[96];
    int amx_own; /* amx computes this one with its tiles: its own bits */
    call_fn call;
    opnd op[MAXOP];
    unsigned char role[MAXOP];
    int nop;
    /* the calls' arguments */
    const sdpa_spec *s;
    attn_problem p;
    attn_mat mouts[8], mlses[8];
    union {
        attn_softmax_args sm;
        attn_softmax_grad_args smg;
        attn_softmax_jac_args smj;
        attn_posenc_args pe;
        attn_rope_args rope;
        attn_merge_args mg;
        attn_norm ln;
        attn_norm_grad lng;
        attn_act_args act;
        attn_act_grad_args actg;
        attn_rms rms;
        attn_rms_grad rmsg;
        attn_glu_args glu;
        attn_glu_grad_args glug;
        attn_qmm_args qmm;
    } a;
};

static uint64_t seed_of(const char *name) /* FNV-1a */
{
    uint64_t x = 0xcbf29ce484222325ULL;
    for (; *name; name++)
        x = (x ^ (unsigned char)*name) * 0x100000001b3ULL;
    return x;
}

/* a new case: its name, and the generator seeded from the name alone, so
 * every case has its inputs whatever runs before it                    */
static void k_init(kase *k, const char *fmt, ...)
{
    memset(k, 0, sizeof *k);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(k->name, sizeof k->name, fmt, ap);
    va_end(ap);
    rng_state = seed_of(k->name);
}

static opnd *k_op(kase *k, int role, etype t, size_t B, size_t R, size_t C,
                  int lay, size_t grp)
{
    if (k->nop == MAXOP) {
        fprintf(stderr, "test_bits: too many operands in %s\n", k->name);
        exit(2);
    }
    opnd *o = &k->op[k->nop];
    k->role[k->nop++] = (unsigned char)role;
    op_make(o, t, B, R, C, lay, grp);
    return o;
}

static void k_free(kase *k)
{
    for (int i = 0; i < k->nop; i++)
        op_free(&k->op[i]);
}

static void digest(kase *k, int nthreads, char hex[65])
{
    for (int i = 0; i < k->nop; i++) {
        opnd *o = &k->op[i];
        if (k->role[i] == R_OUT)
            op_sentinel(o);
        else if (o->init)
            memcpy(o->buf, o->init, o->n * esz_of[o->t]);
    }
    sha256_ctx h;
    sha256_init(&h);
    const attn_exec ex = {nthreads, NULL, NULL};
    if (k->call(k, &ex, &h))
        for (int i = 0; i < k->nop; i++)
            if (k->role[i] != R_IN)
                hash_op(&h, &k->op[i]);
    sha256_hex(&h, hex);
}

/* test_bits --dump NAME: every operand's elements as hashed, after the
 * call on the set in use (ATTNPY_ISA), one thread: two machines' dumps
 * side by side show where a digest differs                             */
static void dump(kase *k)
{
    char hex[65];
    digest(k, 1, hex);
    static const char *const role[] = {"in", "out", "inout"};
    printf("%s on %s: %s\n", k->name, attn_isa_name(), hex);
    for (int i = 0; i < k->nop; i++)
        for (size_t x = 0; x < k->op[i].n; x++)
            printf("%d %s %zu %llx\n", i, role[k->role[i]], x,
                   (unsigned long long)canon(&k->op[i], x));
}

/* the sets this machine runs, picked once by main                      */
static int g_print, g_nsets, g_sets[16];
static const char *g_dump; /* --dump NAME                            */
static size_t g_ncases, g_ndigests, g_seen[4096];
static size_t g_differ[16], g_amx_own_cases, g_amx_own_differ;
static double g_cpu[16]; /* clock() seconds per set: every thread's   */
static const int NTHREADS_MAX = 4;
/* thread counts 1..4, or 1 and 3 (the uneven split) with ATTN_CHECK_SMALL:
 * under valgrind, whose memcheck of a split does not depend on how many
 * there are; the native runs and the sanitizers try all four           */
static int g_tstep = 1;

static const char *expected(const char *name)
{
    for (size_t i = 0; bits_expected[i].name; i++)
        if (strcmp(bits_expected[i].name, name) == 0) {
            if (i < sizeof g_seen / sizeof *g_seen)
                CHECK(g_seen[i]++ == 0, "%s: two cases of that name", name);
            return bits_expected[i].sha256;
        }
    return NULL;
}

static int is_amx(int set) { return strcmp(check_isa(set), "amx") == 0; }

/* build -> every set x thread count -> free. random: the reference is
 * this run's "portable" at one thread, not the table, and "baseline"
 * (emulated fma: check.h's check_count) is left out unless base       */
static void run_kase(kase *k, int random, int base)
{
    char got[65], ref[65], amx1[65] = "";
    g_ncases++;
    if (g_dump) {
        if (strcmp(k->name, g_dump) == 0)
            dump(k);
        k_free(k);
        return;
    }
    if (g_print) {
        attn_set_isa("portable");
        digest(k, 1, got);
        printf("%s %s\n", k->name, got);
        k_free(k);
        return;
    }
    const char *want = NULL;
    if (random) {
        attn_set_isa("portable");
        digest(k, 1, ref);
        want = ref;
    } else {
        want = expected(k->name);
        CHECK(want != NULL, "%s: no expected digest in bits_expected.h (a new "
              "case: run tools/make_bit_digests.py)", k->name);
        g_amx_own_cases += k->amx_own != 0;
    }
    for (int si = 0; si < g_nsets; si++) {
        const int set = g_sets[si];
        if (random && !base && strcmp(check_isa(set), "baseline") == 0)
            continue;
        attn_set_isa(check_isa(set));
        const int own = is_amx(set) && k->amx_own;
        const clock_t c0 = clock();
        for (int t = 1; t <= NTHREADS_MAX; t += g_tstep) {
            digest(k, t, got);
            g_ndigests += !random;
            if (own) { /* amx's own bits: the same for every thread count */
                if (t == 1) {
                    memcpy(amx1, got, sizeof got);
                    g_amx_own_differ += !random && want
                                        && strcmp(got, want) != 0;
                } else {
                    CHECK(strcmp(got, amx1) == 0,
                          "%s [amx, own bits]: %d threads %s, 1 thread %s",
                          k->name, t, got, amx1);
                }
                continue;
            }
            if (!want)
                continue;
            const int same = strcmp(got, want) == 0;
            g_differ[si] += !same;
            CHECK(same, "%s [%s, %d thread%s]: %s, want %s", k->name,
                  check_isa(set), t, t > 1 ? "s" : "", got, want);
        }
        g_cpu[si] += (double)(clock() - c0) / CLOCKS_PER_SEC;
    }
    k_free(k);
}

/* ------------------------------------------------------------------------ */
/* attention: forward and backward from one spec                           */
/* ------------------------------------------------------------------------ */
enum { O_W = 1, O_SC = 2, O_LSE = 4 };

struct sdpa_spec {
    const char *name;
    attn_dtype dt;
    size_t B, L, S, E, Ev;
    attn_store sq, sk, sv, sb, so, sw, ss; /* storages (0: the dtype)     */
    unsigned char lq, lk, lv, lb, lo, lw, ls, lm, ll; /* layouts          */
    size_t kvg;     /* K and V shared by groups of kvg batch items        */
    int mask;       /* 1: 3/4 allowed, every 5th row none; 2: 9/10        */
    int bias;       /* 1: per item; 2: one for all items (boff 0); 3: one
                       row for every query (s0 = 0)                       */
    int outs;       /* O_W | O_SC | O_LSE                                 */
    attn_causal causal;
    attn_fm fm;
    int window;
    ptrdiff_t wl, wr;
    int alibi;
    double softcap;
    ptrdiff_t pos;
    double scale;   /* 0: 1 / sqrt(E)                                     */
    double qamp;    /* Q's values in [-qamp, qamp] (0: 1)                 */
    int special;    /* inf and NaN in some inputs                         */
    int tiny;       /* Q and K near the bottom of the type's range: the
                       products and sums subnormal or underflowing to
                       signed zeros                                       */
    int bwd;        /* 1: the backward too (dq, dk, dv); 2: and dbias     */
    attn_store sdo, sdq, sdk, sdv, sdb;
};

/* amx's own bits (runtime/isa.h, attention/tile_amx.h): its tiles
 * compute the scores of bfloat16 Q and K with E % 32 == 0 and P V of
 * bfloat16 V with Ev % 16 == 0, up to 256                               */
static int sdpa_amx_own(const sdpa_spec *s)
{
    return (s->sq == ATTN_ST_BF16 && s->sk == ATTN_ST_BF16 && s->E % 32 == 0
            && s->E > 0 && s->E <= 256)
           || (s->sv == ATTN_ST_BF16 && s->Ev % 16 == 0 && s->Ev > 0
               && s->Ev <= 256);
}

enum { OQ, OK_, OV, OM, OB, OA, OO, OW, OS, OL, ODO, ODQ, ODK, ODV, ODB };

static int sdpa_call(kase *k, const attn_exec *ex, sha256_ctx *h)
{
    const sdpa_spec *s = k->s;
    attn_problem p = k->p;
    if (s->bwd && s->fm == ATTN_FM_RAISE)
        p.fully_masked = ATTN_FM_ZERO; /* the forward for raise's backward */
    attn_status st = attn_sdpa(&p, ex);
    hash_u64(h, (uint64_t)st);
    if (st == ATTN_EFULLYMASKED) { /* the outputs are not defined */
        hash_u64(h, p.bad_b), hash_u64(h, p.bad_row);
        return 0;
    }
    if (!s->bwd)
        return 1;
    attn_bwd_problem bp;
    memset(&bp, 0, sizeof bp);
    bp.f = k->p;
    bp.f.weights = NOMAT, bp.f.scores = NOMAT;
    bp.dout = am(&k->op[ODO]);
    bp.dq = am(&k->op[ODQ]);
    bp.dk = am(&k->op[ODK]);
    bp.dv = am(&k->op[ODV]);
    if (s->bwd == 2)
        bp.dbias = am(&k->op[ODB]);
    st = attn_sdpa_backward(&bp, ex);
    hash_u64(h, (uint64_t)st);
    if (st == ATTN_EFULLYMASKED) { /* the gradients are not defined */
        hash_u64(h, bp.f.bad_b), hash_u64(h, bp.f.bad_row);
        hash_op(h, &k->op[OO]), hash_op(h, &k->op[OL]);
        return 0;
    }
    return 1;
}

static void sdpa_build(kase *k, const sdpa_spec *s, const char *prefix)
{
    k_init(k, "%s%s", prefix, s->name);
    k->s = s;
    k->call = sdpa_call;
    k->amx_own = sdpa_amx_own(s);
    const attn_dtype dt = s->dt;
    const size_t B = s->B, L = s->L, S = s->S, E = s->E, Ev = s->Ev;
    const double qa = s->qamp > 0 ? s->qamp : 1.0;
    attn_problem *p = &k->p;
    p->dtype = dt;
    p->B = B, p->L = L, p->S = S, p->E = E, p->Ev = Ev;
    /* every operand in the enum's order (absent ones too, left empty)  */
    opnd *q = k_op(k, R_IN, et(dt, s->sq), B, L, E, s->lq, 1);
    opnd *kk = k_op(k, R_IN, et(dt, s->sk), B, S, E, s->lk, s->kvg);
    opnd *v = k_op(k, R_IN, et(dt, s->sv), B, S, Ev, s->lv, s->kvg);
    opnd *m = k_op(k, R_IN, T_U8, s->mask ? B : 0, L, S, s->lm, 1);
    opnd *bi = k_op(k, R_IN, et(dt, s->sb), s->bias ? B : 0, L, S,
                    s->bias == 3 ? L_ROW0 : s->lb, s->bias == 2 ? B : 1);
    opnd *al = k_op(k, R_IN, et(dt, 0), s->alibi ? B : 0, 1, 1, L_C, 1);
    opnd *o = k_op(k, R_OUT, et(dt, s->so), B, L, Ev, s->lo, 1);
    opnd *w = k_op(k, (s->outs & O_W) ? R_OUT : R_IN, et(dt, s->sw),
                   (s->outs & O_W) ? B : 0, L, S, s->lw, 1);
    opnd *sc = k_op(k, (s->outs & O_SC) ? R_OUT : R_IN, et(dt, s->ss),
                    (s->outs & O_SC) ? B : 0, L, S, s->ls, 1);
    const int want_lse = (s->outs & O_LSE) || s->bwd;
    opnd *ls = k_op(k, want_lse ? R_OUT : R_IN, et(dt, 0), want_lse ? B : 0,
                    L, 1, s->ll, 1);
    if (s->tiny) { /* products from 2^-150 (2^-1090) up, some of Q wide */
        const int d = dt == ATTN_F64 ? 470 : 0;
        op_fill_tiny(q, -75 - d, -55 - d);
        op_fill_tiny(kk, -75 - d, -55 - d);
        for (size_t b = 0; b < B; b++)
            for (size_t c = 0; c < E && L > 1; c++)
                op_set(q, b, 1, c, uni(-1, 1));
    } else {
        op_fill(q, -qa, qa);
        op_fill(kk, -1, 1);
    }
    op_fill(v, -2, 2);
    p->q = am(q), p->k = am(kk), p->v = am(v), p->out = am(o);
    if (s->mask) {
        for (size_t b = 0; b < B; b++)
            for (size_t i = 0; i < L; i++) {
                const int none = s->mask == 1 && (b * L + i) % 5 == 3;
                for (size_t j = 0; j < S; j++)
                    op_set(m, b, i, j,
                           !none && urand() < (s->mask == 1 ? 0.75 : 0.9));
            }
        p->mask = am(m);
    }
    if (s->bias) {
        op_fill(bi, -2, 2);
        p->bias = am(bi);
    }
    if (s->alibi) {
        for (size_t b = 0; b < B; b++) /* 2^-(1 + b % 8), mantissa random */
            op_set(al, b, 0, 0, ldexp(uni(1, 2), -1 - (int)(b % 8)));
        p->alibi = am(al);
    }
    if (s->outs & O_W)
        p->weights = am(w);
    if (s->outs & O_SC)
        p->scores = am(sc);
    if (want_lse)
        p->lse = am(ls);
    p->scale = s->scale != 0 ? s->scale : 1.0 / sqrt(E ? (double)E : 1.0);
    p->causal = s->causal;
    p->fully_masked = s->fm;
    p->window = s->window;
    p->wleft = s->wl, p->wright = s->wr;
    p->softcap = s->softcap;
    p->pos_shift = s->pos;
    if (s->special && B > 0 && L > 2 && S > 2) {
        /* a NaN query element, an inf key element (NaN / inf scores),
         * an inf value row no query may see (never 0 * inf), a row of
         * -inf bias (fully masked by the bias)                           */
        op_set(q, B - 1, 1, 0, NAN);
        op_set(kk, 0, 1, E - 1, INFINITY);
        for (size_t c = 0; c < Ev; c++)
            op_set(v, 0, S - 1, c, c % 2 ? INFINITY : -INFINITY);
        if (s->mask)
            for (size_t i = 0; i < L; i++)
                op_set(m, 0, i, S - 1, 0);
        if (s->bias && s->bias != 3)
            for (size_t j = 0; j < S; j++)
                op_set(bi, 0, 2, j, -INFINITY);
    }
    if (s->bwd) {
        opnd *dout = k_op(k, R_IN, et(dt, s->sdo), B, L, Ev, s->lo, 1);
        op_fill(dout, -1, 1);
        /* each b its own gradient (attn.h) */
        k_op(k, R_OUT, et(dt, s->sdq), B, L, E, s->lq, 1);
        k_op(k, R_OUT, et(dt, s->sdk), B, S, E, s->lk, 1);
        k_op(k, R_OUT, et(dt, s->sdv), B, S, Ev, s->lv, 1);
        k_op(k, s->bwd == 2 ? R_OUT : R_IN, et(dt, s->sdb),
             s->bwd == 2 ? B : 0, L, S, s->lb == L_ROW0 ? L_C : s->lb, 1);
    }
}

/* names: <call>/<dtype>/<what>; the storages h (float16), bh (bfloat16) */
#define F32 ATTN_F32
#define F64 ATTN_F64
#define H ATTN_ST_F16
#define BH ATTN_ST_BF16
#define TL ATTN_CAUSAL_TOP_LEFT
#define BR ATTN_CAUSAL_BOTTOM_RIGHT
#define FZ ATTN_FM_ZERO
#define FU ATTN_FM_UNIFORM
#define FN ATTN_FM_NAN
#define FR ATTN_FM_RAISE
#define ALL (O_W | O_SC | O_LSE)
#define DIMS(b, l, s, e, ev) .B = b, .L = l, .S = s, .E = e, .Ev = ev
#define ST16(t) .sq = t, .sk = t, .sv = t, .sb = t, .so = t, .sw = t, .ss = t
#define GR16(t) .sdo = t, .sdq = t, .sdk = t, .sdv = t, .sdb = t

static const sdpa_spec sdpa_battery[] = {
    /* plain, every output */
    {"sdpa/f32/plain", F32, DIMS(2, 7, 13, 16, 16), .outs = ALL},
    {"sdpa/f64/plain", F64, DIMS(2, 7, 13, 16, 16), .outs = ALL},
    {"sdpa/f32/big", F32, DIMS(2, 101, 257, 64, 64), .outs = O_LSE},
    {"sdpa/f64/big", F64, DIMS(1, 40, 100, 16, 24), .outs = O_LSE},
    /* three key chunks of 480 keys (E = Ev = 256), split over threads */
    {"sdpa/f32/chunks", F32, DIMS(1, 20, 1100, 256, 256), .causal = BR,
     .outs = O_LSE},
    /* masks and every fully masked policy */
    {"sdpa/f32/mask-zero", F32, DIMS(3, 13, 7, 3, 5), .mask = 1, .bias = 1,
     .outs = ALL, .fm = FZ},
    {"sdpa/f32/mask-uniform", F32, DIMS(3, 13, 7, 3, 5), .mask = 1,
     .bias = 1, .outs = ALL, .fm = FU},
    {"sdpa/f32/mask-nan", F32, DIMS(3, 13, 7, 3, 5), .mask = 1, .bias = 1,
     .outs = ALL, .fm = FN},
    {"sdpa/f32/mask-raise", F32, DIMS(3, 13, 7, 3, 5), .mask = 1, .bias = 1,
     .outs = ALL, .fm = FR},
    {"sdpa/f64/mask-zero", F64, DIMS(3, 13, 7, 3, 5), .mask = 1, .bias = 1,
     .outs = ALL, .fm = FZ},
    {"sdpa/f64/mask-uniform", F64, DIMS(3, 13, 7, 3, 5), .mask = 1,
     .bias = 1, .outs = ALL, .fm = FU},
    {"sdpa/f64/mask-nan", F64, DIMS(3, 13, 7, 3, 5), .mask = 1, .bias = 1,
     .outs = ALL, .fm = FN},
    {"sdpa/f64/mask-raise", F64, DIMS(3, 13, 7, 3, 5), .mask = 1, .bias = 1,
     .outs = ALL, .fm = FR},
    {"sdpa/f32/raise-none", F32, DIMS(2, 13, 7, 8, 8), .mask = 2,
     .outs = O_LSE, .fm = FR},
    /* causal rows with no key (L > S, bottom right) under each policy */
    {"sdpa/f32/br-zero", F32, DIMS(2, 13, 7, 16, 16), .causal = BR,
     .outs = ALL, .fm = FZ},
    {"sdpa/f32/br-uniform", F32, DIMS(2, 13, 7, 16, 16), .causal = BR,
     .outs = ALL, .fm = FU},
    {"sdpa/f64/br-nan", F64, DIMS(2, 13, 7, 16, 16), .causal = BR,
     .outs = ALL, .fm = FN},
    {"sdpa/f64/br-raise", F64, DIMS(2, 13, 7, 16, 16), .causal = BR,
     .fm = FR},
    {"sdpa/f32/s0-uniform", F32, DIMS(2, 3, 0, 4, 5), .outs = ALL, .fm = FU},
    {"sdpa/f64/l0", F64, DIMS(2, 0, 7, 4, 5), .outs = ALL},
    /* biases broadcast, causal, windows, ALiBi, softcap, positions */
    {"sdpa/f32/bias-batch-tl", F32, DIMS(3, 13, 13, 80, 80), .bias = 2,
     .causal = TL, .outs = ALL},
    {"sdpa/f64/bias-batch-tl", F64, DIMS(3, 13, 13, 80, 80), .bias = 2,
     .causal = TL, .outs = ALL},
    {"sdpa/f32/bias-rows-br", F32, DIMS(2, 7, 101, 80, 64), .bias = 3,
     .causal = BR, .outs = ALL},
    {"sdpa/f64/bias-rows-br", F64, DIMS(2, 7, 61, 24, 16), .bias = 3,
     .causal = BR, .outs = ALL},
    {"sdpa/f32/window", F32, DIMS(2, 101, 101, 32, 32), .window = 1,
     .wl = 5, .wr = 2, .outs = O_LSE | O_W},
    {"sdpa/f64/window", F64, DIMS(1, 50, 50, 8, 16), .window = 1,
     .wl = 5, .wr = 2, .outs = O_LSE | O_W},
    {"sdpa/f32/window-left-br", F32, DIMS(1, 33, 257, 16, 8), .window = 1,
     .wl = 40, .wr = 33 + 257, .causal = BR, .outs = O_LSE},
    {"sdpa/f32/alibi-br", F32, DIMS(4, 17, 257, 64, 64), .alibi = 1,
     .causal = BR, .outs = O_LSE},
    {"sdpa/f64/alibi-br", F64, DIMS(3, 9, 130, 24, 24), .alibi = 1,
     .causal = BR, .outs = O_LSE},
    {"sdpa/f32/softcap", F32, DIMS(2, 33, 65, 64, 64), .softcap = 5,
     .scale = 1.0, .qamp = 2, .outs = ALL},
    {"sdpa/f64/softcap", F64, DIMS(1, 17, 45, 16, 16), .softcap = 5,
     .scale = 1.0, .qamp = 2, .outs = ALL},
    {"sdpa/f32/pos-shift", F32, DIMS(2, 16, 80, 32, 32), .causal = TL,
     .pos = 50, .window = 1, .wl = 20, .wr = 0, .outs = O_LSE | O_W},
    {"sdpa/f64/pos-shift-neg", F64, DIMS(2, 16, 80, 32, 32), .causal = TL,
     .pos = -5, .outs = O_LSE | O_W, .fm = FU},
    {"sdpa/f32/everything", F32, DIMS(3, 29, 61, 24, 40), .mask = 2,
     .bias = 1, .causal = BR, .window = 1, .wl = 9, .wr = 3, .alibi = 1,
     .softcap = 4, .pos = 7, .outs = ALL, .fm = FU},
    {"sdpa/f64/everything", F64, DIMS(2, 13, 37, 8, 16), .mask = 2,
     .bias = 1, .causal = BR, .window = 1, .wl = 9, .wr = 3, .alibi = 1,
     .softcap = 4, .pos = 7, .outs = ALL, .fm = FU},
    /* inf and NaN in the inputs */
    {"sdpa/f32/special", F32, DIMS(2, 9, 11, 8, 6), .mask = 1, .bias = 1,
     .outs = ALL, .fm = FN, .special = 1},
    {"sdpa/f64/special", F64, DIMS(2, 9, 11, 8, 6), .mask = 1, .bias = 1,
     .outs = ALL, .fm = FU, .special = 1},
    /* subnormal products and partial sums, signed zeros: the scores    */
    {"sdpa/f32/tiny", F32, DIMS(2, 7, 29, 16, 8), .tiny = 1, .outs = ALL},
    {"sdpa/f64/tiny", F64, DIMS(2, 7, 29, 16, 8), .tiny = 1, .outs = ALL},
    {"sdpa/bh/tiny", F32, DIMS(2, 7, 29, 16, 8), ST16(BH), .tiny = 1,
     .outs = ALL},
    {"sdpa/f32/tiny-decode", F32, DIMS(1, 2, 1100, 256, 256), .tiny = 1,
     .outs = O_LSE},
    /* awkward shapes */
    {"sdpa/f32/l1-s1", F32, DIMS(2, 1, 1, 1, 1), .outs = ALL},
    {"sdpa/f64/l1-s1", F64, DIMS(2, 1, 1, 1, 1), .outs = ALL},
    {"sdpa/f32/l257-s1", F32, DIMS(1, 257, 1, 3, 7), .outs = ALL},
    {"sdpa/f32/l1-s257", F32, DIMS(3, 1, 257, 13, 3), .outs = ALL},
    {"sdpa/f32/e1", F32, DIMS(2, 13, 101, 1, 1), .outs = ALL},
    {"sdpa/f64/e1", F64, DIMS(2, 13, 101, 1, 1), .outs = ALL},
    {"sdpa/f32/e3-ev257", F32, DIMS(1, 7, 13, 3, 257), .outs = O_LSE},
    {"sdpa/f32/e257-ev3", F32, DIMS(1, 13, 7, 257, 3), .outs = ALL},
    {"sdpa/f64/e257-ev80", F64, DIMS(1, 5, 37, 257, 80), .outs = O_LSE},
    {"sdpa/f32/e80-ev1", F32, DIMS(2, 101, 13, 80, 1), .causal = TL,
     .outs = O_LSE},
    /* strided and transposed operands; K/V shared (grouped queries) */
    {"sdpa/f32/strided", F32, DIMS(3, 13, 29, 16, 8), .lq = L_T, .lk = L_NEG,
     .lv = L_PAD, .lo = L_NEGT, .lw = L_T, .ls = L_NEG, .ll = L_PAD,
     .lm = L_NEGT, .lb = L_PAD, .mask = 1, .bias = 1, .outs = ALL},
    {"sdpa/f64/strided", F64, DIMS(3, 13, 29, 16, 8), .lq = L_NEGT,
     .lk = L_T, .lv = L_NEG, .lo = L_PAD, .lw = L_NEG, .ls = L_T,
     .ll = L_NEG, .lm = L_PAD, .lb = L_T, .mask = 1, .bias = 1, .outs = ALL},
    {"sdpa/f32/gqa", F32, DIMS(6, 17, 65, 32, 32), .kvg = 3, .causal = BR,
     .outs = O_LSE},
    {"sdpa/f64/gqa", F64, DIMS(4, 9, 45, 16, 16), .kvg = 3, .causal = BR,
     .outs = O_LSE},
    {"sdpa/f32/gqa-all", F32, DIMS(4, 5, 33, 16, 16), .kvg = 4, .lk = L_T,
     .lv = L_NEG, .outs = ALL},
    /* decoding: a few rows, 3000 keys (key chunks split over threads) */
    {"sdpa/f32/decode-1", F32, DIMS(1, 1, 3000, 128, 128), .outs = O_LSE},
    {"sdpa/f32/decode-2", F32, DIMS(1, 2, 3000, 64, 64), .causal = BR,
     .outs = O_LSE},
    {"sdpa/f32/decode-3", F32, DIMS(1, 3, 3000, 256, 256), .causal = BR,
     .outs = O_LSE},
    {"sdpa/f32/decode-4", F32, DIMS(1, 4, 3000, 32, 48), .mask = 2,
     .outs = O_LSE},
    {"sdpa/f64/decode-1", F64, DIMS(1, 1, 2100, 64, 64), .outs = O_LSE},
    {"sdpa/f64/decode-2", F64, DIMS(1, 2, 560, 128, 128), .causal = BR,
     .outs = O_LSE},
    {"sdpa/f32/decode-window", F32, DIMS(2, 1, 3000, 64, 64), .causal = BR,
     .window = 1, .wl = 700, .wr = 0, .alibi = 1, .outs = O_LSE},
    {"sdpa/f32/decode-gqa", F32, DIMS(4, 1, 3000, 64, 64), .kvg = 2,
     .outs = O_LSE},
    {"sdpa/f32/decode-h", F32, DIMS(1, 2, 3000, 64, 64), .sk = H, .sv = H,
     .outs = O_LSE},
    {"sdpa/f32/decode-bh", F32, DIMS(1, 1, 3000, 64, 64), .sq = BH,
     .sk = BH, .sv = BH, .outs = O_LSE},
    {"sdpa/f32/decode-bh-e80", F32, DIMS(1, 4, 3000, 80, 80), .sq = BH,
     .sk = BH, .sv = BH, .outs = O_LSE},
    /* 16-bit operands */
    {"sdpa/h/plain", F32, DIMS(2, 7, 13, 16, 16), ST16(H), .outs = ALL},
    {"sdpa/bh/plain", F32, DIMS(2, 7, 13, 16, 16), ST16(BH), .outs = ALL},
    {"sdpa/h/e64", F32, DIMS(2, 33, 101, 64, 64), ST16(H), .mask = 1,
     .bias = 1, .causal = TL, .outs = ALL, .fm = FU},
    {"sdpa/bh/e64", F32, DIMS(2, 33, 101, 64, 64), ST16(BH), .mask = 1,
     .bias = 1, .causal = TL, .outs = ALL, .fm = FU},
    {"sdpa/bh/e80", F32, DIMS(2, 33, 101, 80, 80), ST16(BH), .bias = 2,
     .causal = BR, .outs = ALL},
    {"sdpa/h/e257", F32, DIMS(1, 13, 29, 257, 3), ST16(H), .outs = ALL},
    {"sdpa/bh/e3-ev257", F32, DIMS(1, 13, 29, 3, 257), ST16(BH),
     .outs = ALL},
    {"sdpa/mixed/q-h-k-bh", F32, DIMS(2, 17, 65, 32, 24), .sq = H, .sk = BH,
     .so = BH, .sw = H, .ss = BH, .outs = ALL},
    {"sdpa/mixed/out-h", F32, DIMS(2, 17, 65, 48, 40), .sv = BH, .so = H,
     .sb = H, .bias = 1, .outs = O_LSE},
    {"sdpa/h/variants", F32, DIMS(2, 19, 67, 32, 32), ST16(H), .mask = 2,
     .bias = 1, .causal = BR, .window = 1, .wl = 11, .wr = 4, .alibi = 1,
     .softcap = 3, .pos = -2, .outs = ALL, .fm = FN},
    {"sdpa/bh/strided-gqa", F32, DIMS(4, 13, 45, 32, 32), ST16(BH),
     .kvg = 2, .lq = L_T, .lk = L_NEG, .lv = L_PAD, .lo = L_NEGT,
     .outs = ALL},
    {"sdpa/h/special", F32, DIMS(2, 9, 11, 8, 6), ST16(H), .mask = 1,
     .bias = 1, .outs = ALL, .fm = FU, .special = 1},
    {"sdpa/bh/mask-raise", F32, DIMS(3, 13, 7, 32, 16), ST16(BH), .mask = 1,
     .outs = ALL, .fm = FR},
};

static const sdpa_spec bwd_battery[] = {
    {"bwd/f32/plain", F32, DIMS(2, 7, 13, 16, 16), .bwd = 2, .bias = 1},
    {"bwd/f64/plain", F64, DIMS(2, 7, 13, 16, 16), .bwd = 2, .bias = 1},
    {"bwd/f32/big", F32, DIMS(2, 101, 257, 64, 64), .bwd = 1, .causal = TL},
    {"bwd/f64/big", F64, DIMS(1, 70, 40, 8, 8), .bwd = 1, .causal = TL},
    {"bwd/f32/mask-zero", F32, DIMS(3, 13, 7, 3, 5), .mask = 1, .bias = 1,
     .bwd = 2, .fm = FZ},
    {"bwd/f32/mask-uniform", F32, DIMS(3, 13, 7, 3, 5), .mask = 1,
     .bias = 1, .bwd = 2, .fm = FU},
    {"bwd/f32/mask-nan", F32, DIMS(3, 13, 7, 3, 5), .mask = 1, .bias = 1,
     .bwd = 2, .fm = FN},
    {"bwd/f32/mask-raise", F32, DIMS(3, 13, 7, 3, 5), .mask = 1, .bias = 1,
     .bwd = 2, .fm = FR},
    {"bwd/f64/mask-zero", F64, DIMS(3, 13, 7, 3, 5), .mask = 1, .bias = 1,
     .bwd = 2, .fm = FZ},
    {"bwd/f64/mask-uniform", F64, DIMS(3, 13, 7, 3, 5), .mask = 1,
     .bias = 1, .bwd = 2, .fm = FU},
    {"bwd/f64/mask-nan", F64, DIMS(3, 13, 7, 3, 5), .mask = 1, .bias = 1,
     .bwd = 2, .fm = FN},
    {"bwd/f64/mask-raise", F64, DIMS(3, 13, 7, 3, 5), .mask = 1, .bias = 1,
     .bwd = 2, .fm = FR},
    {"bwd/f32/br-uniform", F32, DIMS(2, 13, 7, 16, 16), .causal = BR,
     .bwd = 1, .fm = FU},
    {"bwd/f32/bias-batch", F32, DIMS(3, 13, 29, 80, 80), .bias = 2,
     .bwd = 2, .causal = TL},
    {"bwd/f64/bias-rows", F64, DIMS(2, 7, 61, 24, 16), .bias = 3, .bwd = 2,
     .causal = BR},
    {"bwd/f32/variants", F32, DIMS(3, 29, 61, 24, 40), .mask = 2, .bias = 1,
     .causal = BR, .window = 1, .wl = 9, .wr = 3, .alibi = 1, .softcap = 4,
     .pos = 7, .bwd = 2, .fm = FU},
    {"bwd/f64/variants", F64, DIMS(2, 13, 37, 8, 16), .mask = 2, .bias = 1,
     .causal = BR, .window = 1, .wl = 9, .wr = 3, .alibi = 1, .softcap = 4,
     .pos = 7, .bwd = 2, .fm = FU},
    {"bwd/f32/softcap", F32, DIMS(2, 33, 65, 64, 64), .softcap = 5,
     .scale = 1.0, .qamp = 2, .bwd = 1},
    {"bwd/f32/l1-s1", F32, DIMS(2, 1, 1, 1, 1), .bwd = 2, .bias = 1},
    {"bwd/f64/e1-l257", F64, DIMS(1, 257, 13, 1, 3), .bwd = 1},
    {"bwd/f32/e257", F32, DIMS(1, 13, 29, 257, 7), .bwd = 1},
    {"bwd/f32/strided", F32, DIMS(3, 13, 29, 16, 8), .lq = L_T, .lk = L_NEG,
     .lv = L_PAD, .lo = L_NEGT, .ll = L_PAD, .lm = L_NEGT, .lb = L_PAD,
     .mask = 1, .bias = 1, .bwd = 2},
    {"bwd/f64/gqa", F64, DIMS(4, 9, 45, 16, 16), .kvg = 3, .causal = BR,
     .bwd = 1},
    {"bwd/f32/decode", F32, DIMS(2, 2, 1000, 64, 64), .causal = BR,
     .bwd = 1},
    {"bwd/f32/tiny", F32, DIMS(2, 7, 29, 16, 8), .tiny = 1, .bwd = 1},
    {"bwd/f64/tiny", F64, DIMS(2, 7, 29, 16, 8), .tiny = 1, .bwd = 1},
    {"bwd/f32/special", F32, DIMS(2, 9, 11, 8, 6), .mask = 1, .bias = 1,
     .bwd = 2, .fm = FU, .special = 1},
    {"bwd/h/plain", F32, DIMS(2, 13, 29, 16, 16), ST16(H), GR16(H),
     .bias = 1, .bwd = 2},
    {"bwd/bh/e64", F32, DIMS(2, 33, 101, 64, 64), ST16(BH), GR16(BH),
     .mask = 1, .bias = 1, .causal = TL, .bwd = 2, .fm = FU},
    {"bwd/bh/e80", F32, DIMS(2, 33, 101, 80, 80), ST16(BH), GR16(BH),
     .causal = BR, .bwd = 1},
    {"bwd/h/variants", F32, DIMS(2, 19, 67, 32, 32), ST16(H), GR16(H),
     .mask = 2, .bias = 1, .causal = BR, .window = 1, .wl = 11, .wr = 4,
     .alibi = 1, .softcap = 3, .pos = -2, .bwd = 2, .fm = FN},
    {"bwd/mixed/grads", F32, DIMS(2, 17, 65, 32, 24), .sq = H, .sk = BH,
     .so = H, .sdo = BH, .sdq = H, .sdk = ATTN_ST_NATIVE, .sdv = BH,
     .sdb = H, .bias = 1, .bwd = 2},
    {"bwd/bh/mask-raise", F32, DIMS(3, 13, 7, 32, 16), ST16(BH), GR16(BH),
     .mask = 1, .bwd = 1, .fm = FR},
};

/* ------------------------------------------------------------------------ */
/* the row kernels                                                          */
/* ------------------------------------------------------------------------ */
static const char *dtn(attn_dtype dt, attn_store st)
{
    return st == H ? "h" : st == BH ? "bh" : dt == F64 ? "f64" : "f32";
}

/* a few inf, -inf, NaN, large, -0 and subnormal (float or double)
 * elements in an input                                                  */
static void sprinkle(opnd *o)
{
    static const double sp[] = {INFINITY, -INFINITY, NAN,       1e4,
                                -3e4,     -0.0,      0x1p-140, -0x1p-1060,
                                0x1.8p-127};
    for (size_t i = 0; i < 9 && o->B * o->R * o->C > 0; i++) {
        /* one draw a statement: the order of a call's arguments is the
         * compiler's (gcc for x86-64 and for AArch64 differ)            */
        const size_t b = irand(o->B);
        const size_t r = irand(o->R);
        op_set(o, b, r, irand(o->C), sp[i]);
    }
}

static int call_softmax(kase *k, const attn_exec *ex, sha256_ctx *h)
{
    hash_u64(h, (uint64_t)attn_softmax(&k->a.sm, ex));
    return 1;
}

static void softmax_case(attn_dtype dt, attn_store si, attn_store so,
                         size_t nrows, size_t n, int li, int lo, int special,
                         int inplace)
{
    kase k;
    k_init(&k, "softmax/%s-%s/%zux%zu%s%s", dtn(dt, si), dtn(dt, so), nrows,
           n, special ? "/special" : "", inplace ? "/inplace" : "");
    opnd *x = k_op(&k, inplace ? R_INOUT : R_IN, et(dt, si), 1, nrows, n, li,
                   1);
    op_fill(x, -8, 8);
    if (special && nrows >= 4 && n >= 2) {
        for (size_t j = 0; j < n; j++) /* a row of -inf: NaN (NumPy) */
            op_set(x, 0, 0, j, -INFINITY);
        op_set(x, 0, 1, n - 1, INFINITY);
        op_set(x, 0, 2, 0, NAN);
        op_set(x, 0, 3, 1, 80.0);
    }
    opnd *y = x;
    if (inplace)
        op_keep(x);
    else
        y = k_op(&k, R_OUT, et(dt, so), 1, nrows, n, lo, 1);
    k.a.sm = (attn_softmax_args){dt, nrows, n, rm(y), rm(x)};
    k.call = call_softmax;
    run_kase(&k, 0, 1);
}

static int call_softmax_bwd(kase *k, const attn_exec *ex, sha256_ctx *h)
{
    hash_u64(h, (uint64_t)attn_softmax_backward(&k->a.smg, ex));
    return 1;
}

/* inplace: 0 none, 1 dx = dy, 2 dx = y                                  */
static void softmax_bwd_case(attn_dtype dt, attn_store st, size_t nrows,
                             size_t n, int lay, int inplace)
{
    kase k;
    k_init(&k, "softmax-bwd/%s/%zux%zu%s", dtn(dt, st), nrows, n,
           inplace == 1 ? "/dx=dy" : inplace == 2 ? "/dx=y" : "");
    opnd *dy = k_op(&k, inplace == 1 ? R_INOUT : R_IN, et(dt, st), 1, nrows,
                    n, lay, 1);
    opnd *y = k_op(&k, inplace == 2 ? R_INOUT : R_IN, et(dt, st), 1, nrows,
                   n, lay, 1);
    op_fill(dy, -1, 1);
    op_fill(y, 0, 2.0 / (double)n);
    opnd *dx = inplace == 1 ? dy : inplace == 2 ? y : NULL;
    if (dx)
        op_keep(dx);
    else
        dx = k_op(&k, R_OUT, et(dt, st), 1, nrows, n, L_PAD, 1);
    k.a.smg = (attn_softmax_grad_args){dt, nrows, n, rm(dx), rm(dy), rm(y)};
    k.call = call_softmax_bwd;
    run_kase(&k, 0, 1);
}

static int call_softmax_jac(kase *k, const attn_exec *ex, sha256_ctx *h)
{
    hash_u64(h, (uint64_t)attn_softmax_jacobian(&k->a.smj, ex));
    return 1;
}

static void softmax_jac_case(attn_dtype dt, size_t nrows, size_t n, int lay)
{
    kase k;
    k_init(&k, "softmax-jac/%s/%zux%zu", dtn(dt, 0), nrows, n);
    opnd *y = k_op(&k, R_IN, et(dt, 0), 1, nrows, n, lay, 1);
    op_fill(y, 0, 2.0 / (double)n);
    opnd *j = k_op(&k, R_OUT, et(dt, 0), nrows, n, n, lay, 1);
    k.a.smj = (attn_softmax_jac_args){dt, nrows, n, am(j), rm(y)};
    k.call = call_softmax_jac;
    run_kase(&k, 0, 1);
}

static int call_posenc(kase *k, const attn_exec *ex, sha256_ctx *h)
{
    hash_u64(h, (uint64_t)attn_posenc(&k->a.pe, ex));
    return 1;
}

static void posenc_case(attn_dtype dt, size_t B, size_t T, size_t D,
                        double offset, double base, int acc, int lay)
{
    kase k;
    k_init(&k, "posenc/%s/%zux%zux%zu/offset=%.17g/base=%g%s", dtn(dt, 0), B,
           T, D, offset, base, acc ? "/accumulate" : "");
    opnd *o = k_op(&k, acc ? R_INOUT : R_OUT, et(dt, 0), B, T, D, lay, 1);
    if (acc) {
        op_fill(o, -1, 1);
        op_keep(o);
    }
    k.a.pe = (attn_posenc_args){dt, B, T, D, am(o), offset, base, acc};
    k.call = call_posenc;
    run_kase(&k, 0, 1);
}

static int call_rope(kase *k, const attn_exec *ex, sha256_ctx *h)
{
    hash_u64(h, (uint64_t)attn_rope(&k->a.rope, ex));
    return 1;
}

static void rope_case(attn_dtype dt, attn_store si, attn_store so, size_t B,
                      size_t T, size_t E, double offset, double base,
                      int interleaved, int inplace)
{
    kase k;
    k_init(&k, "rope/%s-%s/%zux%zux%zu/offset=%.17g/base=%g/%s%s",
           dtn(dt, si), dtn(dt, so), B, T, E, offset, base,
           interleaved ? "interleaved" : "half", inplace ? "/inplace" : "");
    opnd *x = k_op(&k, inplace ? R_INOUT : R_IN, et(dt, si), B, T, E,
                   inplace ? L_PAD : L_NEG, 1);
    op_fill(x, -2, 2);
    opnd *y = x;
    if (inplace)
        op_keep(x);
    else
        y = k_op(&k, R_OUT, et(dt, so), B, T, E, L_T, 1);
    k.a.rope = (attn_rope_args){dt, B, T, E, am(y), am(x), offset, base,
                                interleaved};
    k.call = call_rope;
    run_kase(&k, 0, 1);
}

static int call_merge(kase *k, const attn_exec *ex, sha256_ctx *h)
{
    hash_u64(h, (uint64_t)attn_merge(&k->a.mg, ex));
    return 1;
}

static void merge_case(attn_dtype dt, attn_store so_in, attn_store so,
                       size_t K, size_t B, size_t L, size_t Ev, int want_lse)
{
    kase k;
    k_init(&k, "merge/%s-%s/K=%zu/%zux%zux%zu%s", dtn(dt, so_in), dtn(dt, so),
           K, B, L, Ev, want_lse ? "" : "/no-lse");
    for (size_t i = 0; i < K; i++) {
        opnd *o = k_op(&k, R_IN, et(dt, so_in), B, L, Ev,
                       i % 2 ? L_T : L_PAD, 1);
        opnd *l = k_op(&k, R_IN, et(dt, 0), B, L, 1, i % 2 ? L_NEG : L_C, 1);
        op_fill(o, -2, 2);
        op_fill(l, -3, 3);
        for (size_t b = 0; b < B; b++)
            for (size_t r = 0; r < L; r++)
                if ((b + r) % 4 == 1 || ((b + r + i) % 3 == 0 && r % 2))
                    op_set(l, b, r, 0, -INFINITY); /* row 1: all -inf */
        k.mouts[i] = am(o);
        k.mlses[i] = am(l);
    }
    opnd *out = k_op(&k, R_OUT, et(dt, so), B, L, Ev, L_NEGT, 1);
    attn_mat ml = NOMAT;
    if (want_lse)
        ml = am(k_op(&k, R_OUT, et(dt, 0), B, L, 1, L_PAD, 1));
    k.a.mg = (attn_merge_args){dt, K, B, L, Ev, am(out), ml, k.mouts, k.mlses};
    k.call = call_merge;
    run_kase(&k, 0, 1);
}

/* the layer family: rows (nrows, n) by table (rm) or plain stride (pm) */
static attn_mat rows_of(const opnd *o, int plain)
{
    return plain ? pm(o) : rm(o);
}

static int call_ln(kase *k, const attn_exec *ex, sha256_ctx *h)
{
    hash_u64(h, (uint64_t)attn_layer_norm(&k->a.ln, ex));
    return 1;
}

/* parts: 1 res, 2 shift, 4 weight, 8 bias, 16 sum out                  */
static void ln_case(attn_dtype dt, attn_store st, size_t nrows, size_t n,
                    int parts, double eps, int in_sqrt, int lay, int plain)
{
    kase k;
    k_init(&k, "layer-norm/%s/%zux%zu/parts=%d/eps=%g%s%s", dtn(dt, st),
           nrows, n, parts, eps, in_sqrt ? "-in-sqrt" : "",
           plain ? "/plain" : "");
    const etype t = et(dt, st);
    opnd *x = k_op(&k, R_IN, t, 1, nrows, n, lay, 1);
    op_fill(x, -3, 3);
    if (nrows > 2)
        for (size_t j = 0; j < n; j++) /* a constant row: variance 0 */
            op_set(x, 0, 2, j, 0.75);
    attn_norm *p = &k.a.ln;
    memset(p, 0, sizeof *p);
    p->dtype = dt, p->nrows = nrows, p->n = n;
    p->eps = eps, p->eps_in_sqrt = in_sqrt;
    p->x = rows_of(x, plain);
    opnd *y = k_op(&k, R_OUT, t, 1, nrows, n, L_PAD, 1);
    p->y = rows_of(y, plain);
    if (parts & 1) {
        opnd *r = k_op(&k, R_IN, t, 1, nrows, n, L_T, 1);
        op_fill(r, -1, 1);
        p->res = rows_of(r, plain);
    }
    static const int vl[] = {L_C, L_NEG, L_PAD};
    attn_mat *vec[3] = {&p->shift, &p->weight, &p->bias};
    for (int i = 0; i < 3; i++)
        if (parts & (2 << i)) {
            opnd *v = k_op(&k, R_IN, t, 1, 1, n, vl[i], 1);
            op_fill(v, i == 1 ? 0.5 : -1, i == 1 ? 1.5 : 1);
            *vec[i] = vm(v);
        }
    if (parts & 16)
        p->sum = rows_of(k_op(&k, R_OUT, t, 1, nrows, n, L_NEG, 1), plain);
    k.call = call_ln;
    run_kase(&k, 0, 1);
}

static int call_ln_bwd(kase *k, const attn_exec *ex, sha256_ctx *h)
{
    hash_u64(h, (uint64_t)attn_layer_norm_backward(&k->a.lng, ex));
    return 1;
}

/* parts: 1 weight, 2 dweight, 4 dbias                                   */
static void ln_bwd_case(attn_dtype dt, attn_store st, size_t nrows, size_t n,
                        int parts, double eps, int in_sqrt, int lay)
{
    kase k;
    k_init(&k, "layer-norm-bwd/%s/%zux%zu/parts=%d/eps=%g%s", dtn(dt, st),
           nrows, n, parts, eps, in_sqrt ? "-in-sqrt" : "");
    const etype t = et(dt, st);
    attn_norm_grad *p = &k.a.lng;
    memset(p, 0, sizeof *p);
    p->dtype = dt, p->nrows = nrows, p->n = n;
    p->eps = eps, p->eps_in_sqrt = in_sqrt;
    opnd *s = k_op(&k, R_IN, t, 1, nrows, n, lay, 1);
    opnd *dy = k_op(&k, R_IN, t, 1, nrows, n, L_T, 1);
    op_fill(s, -3, 3);
    op_fill(dy, -1, 1);
    if (nrows > 2)
        for (size_t j = 0; j < n; j++)
            op_set(s, 0, 2, j, -0.25);
    p->s = rm(s), p->dy = rm(dy);
    p->dx = rm(k_op(&k, R_OUT, t, 1, nrows, n, L_PAD, 1));
    if (parts & 1) {
        opnd *w = k_op(&k, R_IN, t, 1, 1, n, L_NEG, 1);
        op_fill(w, 0.5, 1.5);
        p->weight = vm(w);
    }
    if (parts & 2)
        p->dweight = vm(k_op(&k, R_OUT, t, 1, 1, n, L_C, 1));
    if (parts & 4)
        p->dbias = vm(k_op(&k, R_OUT, t, 1, 1, n, L_NEG, 1));
    k.call = call_ln_bwd;
    run_kase(&k, 0, 1);
}

static const char *act_name[] = {
#define ACT_NAME_(id, name, cost, y, dx) name,
    ATTN_ACT_LIST(ACT_NAME_)
#undef ACT_NAME_
};

/* an act's name in case names: '-' for '_' (the seed is the case name:
 * "gelu-tanh" keeps its inputs and digests)                             */
static const char *act_label(attn_act a)
{
    static char label[32];
    size_t i = 0;
    for (; act_name[a][i] && i + 1 < sizeof label; i++)
        label[i] = act_name[a][i] == '_' ? '-' : act_name[a][i];
    label[i] = '\0';
    return label;
}

static int call_act(kase *k, const attn_exec *ex, sha256_ctx *h)
{
    hash_u64(h, (uint64_t)attn_bias_act(&k->a.act, ex));
    return 1;
}

static int call_act_bwd(kase *k, const attn_exec *ex, sha256_ctx *h)
{
    hash_u64(h, (uint64_t)attn_bias_act_backward(&k->a.actg, ex));
    return 1;
}

/* forward and backward (with dbias when there is a bias)                */
static void act_cases(attn_dtype dt, attn_store st, attn_act act,
                      size_t nrows, size_t n, int with_bias, int special)
{
    for (int bwd = 0; bwd < 2; bwd++) {
        kase k;
        k_init(&k, "%s/%s/%s/%zux%zu%s%s", bwd ? "bias-act-bwd" : "bias-act",
               dtn(dt, st), act_label(act), nrows, n,
               with_bias ? "/bias" : "", special ? "/special" : "");
        const etype t = et(dt, st);
        opnd *x = k_op(&k, R_IN, t, 1, nrows, n, L_PAD, 1);
        op_fill(x, -6, 6);
        if (special)
            sprinkle(x);
        attn_mat mb = NOMAT;
        if (with_bias) {
            opnd *b = k_op(&k, R_IN, t, 1, 1, n, L_NEG, 1);
            op_fill(b, -1, 1);
            mb = vm(b);
        }
        if (!bwd) {
            opnd *y = k_op(&k, R_OUT, t, 1, nrows, n, L_T, 1);
            k.a.act = (attn_act_args){dt, act, nrows, n, rm(y), pm(x), mb};
            k.call = call_act;
        } else {
            opnd *dy = k_op(&k, R_IN, t, 1, nrows, n, L_NEGT, 1);
            op_fill(dy, -1, 1);
            opnd *dx = k_op(&k, R_OUT, t, 1, nrows, n, L_C, 1);
            attn_mat mdb = NOMAT;
            if (with_bias)
                mdb = vm(k_op(&k, R_OUT, t, 1, 1, n, L_PAD, 1));
            k.a.actg = (attn_act_grad_args){dt, act, nrows, n, pm(dx), mdb,
                                            rm(dy), rm(x), mb};
            k.call = call_act_bwd;
        }
        run_kase(&k, 0, 1);
    }
}

static int call_rms(kase *k, const attn_exec *ex, sha256_ctx *h)
{
    hash_u64(h, (uint64_t)attn_rms_norm(&k->a.rms, ex));
    return 1;
}

static int call_rms_bwd(kase *k, const attn_exec *ex, sha256_ctx *h)
{
    hash_u64(h, (uint64_t)attn_rms_norm_backward(&k->a.rmsg, ex));
    return 1;
}

/* tiny: x from 2^-90 to 2^-60 (float: squares below the normal range) */
static void rms_cases(attn_dtype dt, attn_store st, size_t nrows, size_t n,
                      int with_weight, double eps, int tiny)
{
    for (int bwd = 0; bwd < 2; bwd++) {
        kase k;
        k_init(&k, "%s/%s/%zux%zu/eps=%g%s%s", bwd ? "rms-norm-bwd" : "rms-norm",
               dtn(dt, st), nrows, n, eps, with_weight ? "/weight" : "",
               tiny ? "/tiny" : "");
        const etype t = et(dt, st);
        opnd *x = k_op(&k, R_IN, t, 1, nrows, n, L_NEG, 1);
        if (tiny)
            op_fill_tiny(x, -90, -60);
        else
            op_fill(x, -3, 3);
        if (nrows > 1)
            for (size_t j = 0; j < n; j++) /* a zero row: rstd = 1/sqrt(eps) */
                op_set(x, 0, 1, j, 0.0);
        attn_mat mw = NOMAT;
        if (with_weight) {
            opnd *w = k_op(&k, R_IN, t, 1, 1, n, L_PAD, 1);
            op_fill(w, 0.5, 1.5);
            mw = vm(w);
        }
        if (!bwd) {
            opnd *y = k_op(&k, R_OUT, t, 1, nrows, n, L_C, 1);
            k.a.rms = (attn_rms){dt, nrows, n, pm(y), rm(x), mw, eps};
            k.call = call_rms;
        } else {
            opnd *dy = k_op(&k, R_IN, t, 1, nrows, n, L_T, 1);
            op_fill(dy, -1, 1);
            opnd *dx = k_op(&k, R_OUT, t, 1, nrows, n, L_PAD, 1);
            attn_mat mdw = NOMAT;
            if (with_weight)
                mdw = vm(k_op(&k, R_OUT, t, 1, 1, n, L_NEG, 1));
            k.a.rmsg = (attn_rms_grad){dt, nrows, n, rm(dx), mdw, rm(dy),
                                       rm(x), mw, eps};
            k.call = call_rms_bwd;
        }
        run_kase(&k, 0, 1);
    }
}

static int call_glu(kase *k, const attn_exec *ex, sha256_ctx *h)
{
    hash_u64(h, (uint64_t)attn_swiglu(&k->a.glu, ex));
    return 1;
}

static int call_glu_bwd(kase *k, const attn_exec *ex, sha256_ctx *h)
{
    hash_u64(h, (uint64_t)attn_swiglu_backward(&k->a.glug, ex));
    return 1;
}

/* forward; backward with dup (up present), in place dgate = dy when
 * inplace                                                               */
static void glu_cases(attn_dtype dt, attn_store st, size_t nrows, size_t n,
                      int with_up, int special, int inplace)
{
    for (int bwd = 0; bwd < 2; bwd++) {
        kase k;
        k_init(&k, "%s/%s/%zux%zu%s%s%s", bwd ? "swiglu-bwd" : "swiglu",
               dtn(dt, st), nrows, n, with_up ? "/up" : "/no-up",
               special ? "/special" : "",
               bwd && inplace ? "/dgate=dy" : "");
        const etype t = et(dt, st);
        opnd *g = k_op(&k, R_IN, t, 1, nrows, n, L_T, 1);
        op_fill(g, -8, 8);
        if (special)
            sprinkle(g);
        attn_mat mu = NOMAT;
        if (with_up) {
            opnd *u = k_op(&k, R_IN, t, 1, nrows, n, L_PAD, 1);
            op_fill(u, -2, 2);
            mu = rm(u);
        }
        if (!bwd) {
            opnd *y = k_op(&k, R_OUT, t, 1, nrows, n, L_NEG, 1);
            k.a.glu = (attn_glu_args){dt, nrows, n, rm(y), rm(g), mu};
            k.call = call_glu;
        } else {
            opnd *dy = k_op(&k, inplace ? R_INOUT : R_IN, t, 1, nrows, n,
                            L_C, 1);
            op_fill(dy, -1, 1);
            opnd *dg = dy;
            if (inplace)
                op_keep(dy);
            else
                dg = k_op(&k, R_OUT, t, 1, nrows, n, L_NEGT, 1);
            attn_mat mdu = NOMAT;
            if (with_up)
                mdu = rm(k_op(&k, R_OUT, t, 1, nrows, n, L_PAD, 1));
            k.a.glug = (attn_glu_grad_args){dt, nrows, n, pm(dg), mdu, pm(dy),
                                            rm(g), mu};
            k.call = call_glu_bwd;
        }
        run_kase(&k, 0, 1);
    }
}

static int call_qmm(kase *k, const attn_exec *ex, sha256_ctx *h)
{
    hash_u64(h, (uint64_t)attn_qmatmul(&k->a.qmm, ex));
    return 1;
}

/* gguf blocks as tests/c/test_qmatvec.c builds them: float16 d (and m),
 * random nibbles / int8; out and x with padded rows                    */
static void qmm_case(attn_qtype qt, size_t M, size_t N, size_t K)
{
    kase k;
    k_init(&k, "qmatmul/%s/%zux%zux%zu", qt == ATTN_Q4_1 ? "q4_1" : "q8_0", M,
           N, K);
    const size_t bs = attn_qblock_bytes(qt), ldw = K / 32 * bs + 3;
    opnd *x = k_op(&k, R_IN, T_F32, 1, M, K, L_PAD, 1);
    op_fill(x, -1, 1);
    opnd *w = k_op(&k, R_IN, T_U8, 1, N, ldw, L_C, 1);
    for (size_t n = 0; n < N; n++)
        for (size_t b = 0; b < K / 32; b++) {
            unsigned char *p = w->buf + n * ldw + b * bs;
            const uint16_t d = attn_f32_to_f16((float)uni(-0.025, 0.025));
            memcpy(p, &d, 2);
            if (qt == ATTN_Q4_1) {
                const uint16_t m = attn_f32_to_f16((float)uni(-0.025, 0.025));
                memcpy(p + 2, &m, 2);
            }
            for (size_t j = qt == ATTN_Q4_1 ? 4 : 2; j < bs; j++)
                p[j] = (unsigned char)rnd();
        }
    opnd *o = k_op(&k, R_OUT, T_F32, 1, M, N, L_PAD, 1);
    k.a.qmm = (attn_qmm_args){qt, M, N, K,
                              (float *)(void *)o->buf + o->boff[0],
                              (size_t)o->s0,
                              (const float *)(void *)x->buf + x->boff[0],
                              (size_t)x->s0, w->buf, ldw};
    k.call = call_qmm;
    run_kase(&k, 0, 1);
}

/* ------------------------------------------------------------------------ */
/* the battery                                                              */
/* ------------------------------------------------------------------------ */
static void battery(void)
{
    for (size_t i = 0; i < sizeof sdpa_battery / sizeof *sdpa_battery; i++) {
        kase k;
        sdpa_build(&k, &sdpa_battery[i], "");
        run_kase(&k, 0, 1);
    }
    for (size_t i = 0; i < sizeof bwd_battery / sizeof *bwd_battery; i++) {
        kase k;
        sdpa_build(&k, &bwd_battery[i], "");
        run_kase(&k, 0, 1);
    }
    /* merge: the -inf rows, 16-bit partials and results, no lse        */
    merge_case(F32, 0, 0, 3, 2, 5, 33, 1);
    merge_case(F64, 0, 0, 3, 2, 5, 33, 1);
    merge_case(F32, H, BH, 4, 3, 7, 64, 1);
    merge_case(F32, BH, 0, 2, 1, 9, 80, 0);
    merge_case(F64, 0, 0, 1, 2, 3, 5, 1);
    merge_case(F32, 0, 0, 0, 2, 3, 5, 1);
    merge_case(F32, 0, H, 5, 2, 71, 128, 1);
    /* softmax, its backward and Jacobian                              */
    softmax_case(F64, 0, 0, 5, 1, L_C, L_C, 0, 0);
    softmax_case(F32, 0, 0, 3, 7, L_T, L_NEG, 0, 0);
    softmax_case(F64, 0, 0, 9, 257, L_PAD, L_T, 1, 0);
    softmax_case(F32, 0, 0, 9, 257, L_NEG, L_PAD, 1, 0);
    softmax_case(F32, 0, 0, 40, 1000, L_C, L_PAD, 0, 0);
    softmax_case(F64, 0, 0, 17, 1000, L_PAD, L_C, 0, 1);
    softmax_case(F32, H, H, 13, 101, L_T, L_C, 1, 0);
    softmax_case(F32, BH, BH, 40, 1000, L_C, L_C, 0, 1);
    softmax_case(F32, H, 0, 7, 33, L_PAD, L_NEG, 0, 0);
    softmax_case(F32, 0, BH, 7, 33, L_PAD, L_NEG, 0, 0);
    softmax_bwd_case(F32, 0, 7, 13, L_C, 0);
    softmax_bwd_case(F64, 0, 7, 13, L_T, 0);
    softmax_bwd_case(F64, 0, 20, 1000, L_PAD, 1);
    softmax_bwd_case(F32, 0, 40, 1000, L_NEG, 2);
    softmax_bwd_case(F32, H, 9, 257, L_PAD, 0);
    softmax_bwd_case(F32, BH, 9, 257, L_C, 1);
    softmax_jac_case(F32, 3, 13, L_C);
    softmax_jac_case(F64, 3, 13, L_T);
    softmax_jac_case(F64, 2, 1, L_C);
    softmax_jac_case(F32, 4, 100, L_NEG);
    /* sinusoidal encoding, offsets up to 1e9                           */
    posenc_case(F32, 2, 17, 64, 0, 10000, 0, L_C);
    posenc_case(F64, 2, 17, 64, 0, 10000, 0, L_T);
    posenc_case(F32, 1, 9, 7, 1e6, 10000, 0, L_NEG);
    posenc_case(F64, 1, 9, 7, 1e6, 10000, 0, L_PAD);
    posenc_case(F64, 2, 5, 33, 123456789.5, 500, 1, L_C);
    posenc_case(F32, 2, 5, 33, 1e9, 10000, 1, L_NEGT);
    posenc_case(F32, 2, 70, 128, 3, 10000, 0, L_PAD);
    /* rotary, both layouts                                             */
    for (int il = 0; il < 2; il++) {
        rope_case(F32, 0, 0, 2, 17, 64, 0, 10000, il, 0);
        rope_case(F64, 0, 0, 2, 17, 64, 0, 10000, il, 0);
        rope_case(F32, 0, 0, 1, 5, 2, 1e5, 500, il, 1);
        rope_case(F64, 0, 0, 3, 7, 10, 4e6, 10000, il, 1);
        rope_case(F32, H, H, 2, 9, 128, 1000, 1e6, il, 0);
        rope_case(F32, BH, 0, 2, 9, 80, 123457, 10000, il, 0);
        rope_case(F32, 0, BH, 3, 90, 64, 7, 10000, il, 1);
    }
    /* layer norm, both eps forms, and its backward                     */
    ln_case(F32, 0, 7, 13, 0, 1e-5, 1, L_C, 0);
    ln_case(F64, 0, 7, 13, 0, 1e-5, 0, L_T, 1);
    ln_case(F32, 0, 9, 768, 31, 1e-5, 1, L_PAD, 0);
    ln_case(F64, 0, 9, 768, 31, 1e-6, 0, L_NEG, 1);
    ln_case(F32, 0, 50, 768, 12, 1e-12, 1, L_C, 1);
    ln_case(F64, 0, 25, 768, 17, 1e-5, 0, L_T, 0);
    ln_case(F32, H, 9, 257, 31, 1e-5, 1, L_PAD, 0);
    ln_case(F32, BH, 9, 257, 31, 1e-5, 0, L_C, 1);
    ln_case(F32, 0, 5, 1, 31, 1e-5, 1, L_C, 0);
    ln_bwd_case(F32, 0, 7, 13, 0, 1e-5, 1, L_C);
    ln_bwd_case(F64, 0, 7, 13, 7, 1e-5, 0, L_T);
    ln_bwd_case(F32, 0, 50, 768, 7, 1e-5, 1, L_PAD);
    ln_bwd_case(F64, 0, 25, 768, 7, 1e-6, 0, L_NEG);
    ln_bwd_case(F32, H, 9, 257, 7, 1e-5, 1, L_C);
    ln_bwd_case(F32, BH, 9, 257, 6, 1e-5, 0, L_PAD);
    /* bias + activation, every act (layer/acts.h), and its backward    */
    for (int a = 0; a < ATTN_ACT_COUNT; a++) {
        act_cases(F32, 0, (attn_act)a, 9, 257, 1, 1);
        act_cases(F64, 0, (attn_act)a, 9, 257, 0, 1);
        act_cases(F32, H, (attn_act)a, 7, 100, 1, 0);
        act_cases(F32, BH, (attn_act)a, 7, 100, 0, 0);
    }
    act_cases(F32, 0, ATTN_ACT_GELU, 40, 1000, 1, 0);
    act_cases(F64, 0, ATTN_ACT_GELU_TANH, 17, 1000, 1, 0);
    /* RMS norm, SwiGLU                                                 */
    rms_cases(F32, 0, 7, 13, 1, 1e-6, 0);
    rms_cases(F64, 0, 7, 13, 0, 1e-5, 0);
    rms_cases(F32, 0, 40, 1000, 1, 1e-6, 0);
    rms_cases(F64, 0, 20, 1000, 1, 1e-6, 0);
    rms_cases(F32, H, 9, 257, 1, 1e-5, 0);
    rms_cases(F32, BH, 9, 257, 0, 1e-5, 0);
    rms_cases(F32, 0, 9, 257, 1, 1e-30, 1);
    rms_cases(F64, 0, 9, 257, 0, 1e-30, 1);
    glu_cases(F32, 0, 9, 257, 1, 1, 0);
    glu_cases(F64, 0, 9, 257, 1, 1, 1);
    glu_cases(F32, 0, 9, 257, 0, 0, 1);
    glu_cases(F64, 0, 7, 13, 0, 0, 0);
    glu_cases(F32, 0, 40, 1000, 1, 0, 0);
    glu_cases(F32, H, 7, 100, 1, 0, 0);
    glu_cases(F32, BH, 7, 100, 0, 0, 1);
    /* quantized weights                                                */
    qmm_case(ATTN_Q4_1, 1, 70, 256);
    qmm_case(ATTN_Q8_0, 1, 70, 256);
    qmm_case(ATTN_Q4_1, 3, 129, 96);
    qmm_case(ATTN_Q8_0, 5, 65, 256);
    qmm_case(ATTN_Q4_1, 7, 1, 32);
    qmm_case(ATTN_Q8_0, 2, 70, 512);
}

/* ------------------------------------------------------------------------ */
/* random problems: a random attention spec, held to its own digest       */
/* ------------------------------------------------------------------------ */
static void random_case(int i)
{
    static const size_t Ls[] = {1, 2, 3, 5, 16, 17, 33, 100};
    static const size_t Ss[] = {1, 2, 7, 33, 64, 100, 257, 1500};
    static const size_t Es[] = {1, 3, 8, 16, 32, 64, 80};
    static const unsigned char lays[] = {L_C, L_PAD, L_T, L_NEG, L_NEGT};
    sdpa_spec s;
    memset(&s, 0, sizeof s);
    rng_state = 0x5DEECE66DULL + (uint64_t)i * 0x9E3779B97F4A7C15ULL;
    s.name = "";
    s.dt = irand(3) ? F32 : F64;
    s.B = 1 + irand(4);
    s.L = Ls[irand(8)], s.S = Ss[irand(8)];
    s.E = Es[irand(7)], s.Ev = irand(2) ? s.E : Es[irand(7)];
    if (s.dt == F32) {
        attn_store *st[] = {&s.sq, &s.sk, &s.sv, &s.sb, &s.so, &s.sw, &s.ss,
                            &s.sdo, &s.sdq, &s.sdk, &s.sdv, &s.sdb};
        for (size_t j = 0; j < sizeof st / sizeof *st; j++)
            *st[j] = (attn_store)irand(3);
    }
    unsigned char *ls[] = {&s.lq, &s.lk, &s.lv, &s.lb, &s.lo, &s.lw, &s.ls,
                           &s.lm, &s.ll};
    for (size_t j = 0; j < sizeof ls / sizeof *ls; j++)
        *ls[j] = lays[irand(5)];
    s.kvg = irand(3) ? 1 : s.B;
    s.mask = (int)irand(3);
    s.bias = (int)irand(4);
    s.outs = (int)irand(8);
    s.causal = (attn_causal)irand(3);
    s.fm = (attn_fm)irand(4);
    if (irand(3) == 0)
        s.window = 1, s.wl = (ptrdiff_t)irand(40), s.wr = (ptrdiff_t)irand(9);
    s.alibi = irand(4) == 0;
    s.softcap = irand(4) == 0 ? 2 + 10 * urand() : 0;
    s.pos = irand(4) == 0 ? (ptrdiff_t)irand(21) - 10 : 0;
    s.special = irand(6) == 0;
    s.tiny = irand(6) == 0;
    s.bwd = (int)irand(3);
    /* a few seconds at most under valgrind and qemu: shorter S for
     * bigger problems (double: the baseline fma is slow)               */
    const double cap = s.dt == F32 ? 2e6 : 3e5;
    while (s.S > 1 && (double)(s.B * s.L * s.S * (s.E + s.Ev)) > cap)
        s.S /= 2;
    char name[64];
    snprintf(name, sizeof name, "random/%d", i);
    s.name = name;
    kase k;
    sdpa_build(&k, &s, "");
    char d[160];
    snprintf(d, sizeof d, " (%s B%zu L%zu S%zu E%zu Ev%zu bwd%d)",
             s.dt == F32 ? "f32" : "f64", s.B, s.L, s.S, s.E, s.Ev, s.bwd);
    strncat(k.name, d, sizeof k.name - strlen(k.name) - 1);
    run_kase(&k, 1, i % 8 == 0);
}

/* FIPS 180-4's examples (and a million-byte message's)                 */
static void sha256_selftest(void)
{
    static const struct {
        const char *msg, *hex;
    } kat[] = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc",
         "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
    };
    char hex[65];
    for (size_t i = 0; i < sizeof kat / sizeof *kat; i++) {
        sha256_ctx h;
        sha256_init(&h);
        sha256_add(&h, kat[i].msg, strlen(kat[i].msg));
        sha256_hex(&h, hex);
        CHECK(strcmp(hex, kat[i].hex) == 0, "sha256(\"%s\") = %s", kat[i].msg,
              hex);
    }
    sha256_ctx h;
    sha256_init(&h);
    unsigned char a[1001];
    memset(a, 'a', sizeof a);
    for (int i = 0; i < 1000; i++)
        sha256_add(&h, a, i % 2 ? 999 : 1001); /* 10^6 bytes, ragged */
    sha256_hex(&h, hex);
    CHECK(strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d3"
                      "9ccc7112cd0") == 0, "sha256(a * 10^6) = %s", hex);
}

int main(int argc, char **argv)
{
    const clock_t t0 = clock();
    g_print = argc > 1 && strcmp(argv[1], "--print") == 0;
    if (argc > 2 && strcmp(argv[1], "--dump") == 0)
        g_dump = argv[2];
    const int count = argc > 1 && !g_print && !g_dump ? atoi(argv[1]) : 4;
    attn__min_flops_per_thread = 0; /* use threads even on tiny problems */
    if (g_dump) {
        battery();
        return 0;
    }
    if (g_print) {
        if (attn_set_isa("portable") != 0) {
            fprintf(stderr, "test_bits: no portable set\n");
            return 2;
        }
        battery();
        return 0;
    }
    sha256_selftest();
    g_tstep = check_small() ? 2 : 1;
    for (int i = 0; i < CHECK_NISA && g_nsets < 16; i++)
        if (check_use_isa(i))
            g_sets[g_nsets++] = i;
    printf("the battery on %d set(s) x %s threads\n", g_nsets,
           g_tstep == 1 ? "1..4" : "1 and 3");
    fflush(stdout);
    battery();
    const size_t nfixed = g_ncases;
    size_t ntable = 0;
    for (; bits_expected[ntable].name; ntable++)
        if (ntable < sizeof g_seen / sizeof *g_seen)
            CHECK(g_seen[ntable] == 1, "bits_expected.h: %s is no case of "
                  "the battery (rerun tools/make_bit_digests.py)",
                  bits_expected[ntable].name);
    CHECK(ntable == nfixed, "bits_expected.h has %zu digests, the battery "
          "%zu cases", ntable, nfixed);
    for (int si = 0; si < g_nsets; si++)
        printf("isa %s: %zu of %zu digests unlike the table (%.1f s cpu)\n",
               check_isa(g_sets[si]), g_differ[si],
               (nfixed - (is_amx(g_sets[si]) ? g_amx_own_cases : 0))
                   * (size_t)((NTHREADS_MAX + g_tstep - 1) / g_tstep),
               g_cpu[si]);
    for (int si = 0; si < g_nsets; si++)
        if (is_amx(g_sets[si]))
            printf("isa amx: its own bits in %zu cases (%zu unlike the "
                   "table), the same for every thread count\n",
                   g_amx_own_cases, g_amx_own_differ);
    printf("battery: %zu cases, %zu digests\n", nfixed, g_ndigests);
    for (int i = 0; i < count; i++)
        random_case(i);
    printf("random: %d attention problems, each on every set (baseline: "
           "every 8th) and thread count\n", count);
    attn_set_isa("auto");
    return check_summary(t0);
}
