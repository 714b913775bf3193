/*
 * test_rows16.c -- C tests of float16 / bfloat16 operands in the row
 * kernels (softmax and its backward, layer norm and its backward, bias +
 * activation and its backward, RMS norm and its backward, swiglu and its
 * backward, rope, merge), without Python.
 *
 * The rule checked, bit for bit: a call with 16-bit operands gives the
 * float32 call on the exactly widened inputs (same layouts, same
 * arguments), with every 16-bit output the float32 output rounded once
 * to nearest even (half.h). Each call gets a random storage per operand
 * (float32, float16, bfloat16; outputs too, and vector outputs such as
 * dweight), random layouts (offset tables, row strides, column strides 1,
 * 2 and -1), in place where the kernel allows it, and 1 to 3 threads with
 * chunks shrunk so that small problems have many. Also: the storage
 * layer's row conversions (rows/rows.c, the set's vector code on
 * unit-stride rows) against half.h over
 * every 16-bit pattern and many floats, and ATTN_EINVAL for a 16-bit
 * operand in a float64 call or an unknown storage.
 *
 * Built and run by tools/c_tests.sh (tests/c/test_c_core.py). Prints one
 * line per failure and "N passed, M failed"; exit status 1 on failure.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attn.h"
#include "calls.h"
#include "half.h"
#include "rows/rows.h"

#define TEST_RNG_SEED 0x452821E638D01377ULL
#include "check.h"

static double nrand(void) /* roughly normal */
{
    return (urand() + urand() + urand() + urand() - 2.0) * 1.7;
}

/* ------------------------------------------------------------------------ */
/* operands (B, T, C): element (b, t, c) at boff[b] + t s0 + c s1, stored   */
/* as float32, float16 or bfloat16; a float32 twin of the same layout       */
/* holds the exactly widened values                                        */
/* ------------------------------------------------------------------------ */
typedef struct {
    size_t B, T, C, total;
    attn_store st;
    void *buf;
    ptrdiff_t *boff;
    attn_mat m;
} op16;

static size_t esz(attn_store st) { return st == ATTN_ST_NATIVE ? 4 : 2; }

/* table: an offset table over B (else boff NULL, B must be 1)          */
static void op_make(op16 *o, attn_store st, size_t B, size_t T, size_t C,
                    int table)
{
    memset(o, 0, sizeof *o);
    o->B = B, o->T = T, o->C = C, o->st = st;
    ptrdiff_t s1 = irand(3) == 0 ? (irand(2) ? 2 : -1) : 1;
    ptrdiff_t a1 = s1 < 0 ? -s1 : s1;
    ptrdiff_t rowspan = (ptrdiff_t)(C ? C : 1) * a1 + (ptrdiff_t)irand(3);
    ptrdiff_t s0 = T > 1 ? (irand(4) == 0 ? -rowspan : rowspan) : 0;
    ptrdiff_t blockspan = (ptrdiff_t)(T ? T : 1) * rowspan + (ptrdiff_t)irand(5);
    ptrdiff_t base = (s1 < 0 ? (ptrdiff_t)(C ? C - 1 : 0) * a1 : 0)
                     + (s0 < 0 ? (ptrdiff_t)(T - 1) * rowspan : 0);
    o->total = (B ? B : 1) * (size_t)blockspan + 8;
    o->buf = calloc(o->total, esz(st));
    o->m = (attn_mat){o->buf, NULL, s0, s1, st};
    if (!table) {
        o->m.data = (char *)o->buf + (size_t)base * esz(st);
        return;
    }
    o->boff = malloc((B + 1) * sizeof(ptrdiff_t));
    for (size_t b = 0; b < B; b++)
        o->boff[b] = base + (ptrdiff_t)b * blockspan;
    for (size_t b = B; b > 1; b--) { /* blocks in a random order */
        size_t k = irand(b);
        ptrdiff_t t = o->boff[b - 1];
        o->boff[b - 1] = o->boff[k];
        o->boff[k] = t;
    }
    o->m.boff = o->boff;
}

/* a row operand of a layer kernel (nrows, n): a table over the rows
 * (s0 0) or a plain matrix (s0 the row stride); vec: a shared vector    */
static void op_rows(op16 *o, attn_store st, size_t nrows, size_t n, int vec)
{
    if (vec)
        op_make(o, st, 1, 1, n, 0);
    else if (irand(2))
        op_make(o, st, nrows, 1, n, 1);
    else
        op_make(o, st, 1, nrows, n, 0);
}

static void op_free(op16 *o)
{
    free(o->buf);
    free(o->boff);
    memset(o, 0, sizeof *o);
}

static ptrdiff_t op_at(const op16 *o, size_t b, size_t t, size_t c)
{
    return OFF(o->m, b) + (ptrdiff_t)t * o->m.s0 + (ptrdiff_t)c * o->m.s1;
}
static float getf(const op16 *o, ptrdiff_t k)
{
    return attn_load_f32(o->st, o->m.data, k);
}
static void setf(op16 *o, ptrdiff_t k, float v)
{
    attn_store_f32(o->st, o->m.data, k, v);
}

/* a value for a 16-bit operand: mostly normal numbers, sometimes an edge
 * (zero, a subnormal of the storage, a large value, inf, NaN)          */
static float value(double scale)
{
    switch (irand(40)) {
    case 0: return 0.0f;
    case 1: return -0.0f;
    case 2: return 3e-6f;           /* float16 subnormal */
    case 3: return -2e4f;
    case 4: return irand(4) == 0 ? INFINITY : 1.5f;
    case 5: return irand(8) == 0 ? NAN : -0.25f;
    default: return (float)(scale * nrand());
    }
}

static void op_fill(op16 *o, double scale)
{
    for (size_t b = 0; b < o->B; b++)
        for (size_t t = 0; t < o->T; t++)
            for (size_t c = 0; c < o->C; c++)
                setf(o, op_at(o, b, t, c), value(scale));
}

/* the float32 twin: the same layout, the values widened exactly        */
static void op_twin(op16 *tw, const op16 *o)
{
    *tw = *o;
    tw->st = ATTN_ST_NATIVE;
    tw->buf = calloc(o->total, 4);
    const ptrdiff_t shift = ((char *)o->m.data - (char *)o->buf)
                            / (ptrdiff_t)esz(o->st);
    tw->m.data = (float *)tw->buf + shift;
    tw->m.store = ATTN_ST_NATIVE;
    if (o->boff) {
        tw->boff = malloc((o->B + 1) * sizeof(ptrdiff_t));
        memcpy(tw->boff, o->boff, o->B * sizeof(ptrdiff_t));
        tw->m.boff = tw->boff;
    }
    for (size_t k = 0; k < o->total; k++) /* every element, gaps too */
        ((float *)tw->buf)[k] = attn_load_f32(o->st, o->buf, (ptrdiff_t)k);
}

/* o (16-bit or float32) against its twin's float32 result rounded once */
static int same_as_twin(const op16 *o, const op16 *tw, const char *what)
{
    for (size_t b = 0; b < o->B; b++)
        for (size_t t = 0; t < o->T; t++)
            for (size_t c = 0; c < o->C; c++) {
                ptrdiff_t k = op_at(o, b, t, c);
                float want = ((const float *)tw->m.data)[k];
                uint32_t wb, gb;
                float got = getf(o, k);
                if (o->st == ATTN_ST_F16)
                    want = attn_f16_to_f32(attn_f32_to_f16(want));
                else if (o->st == ATTN_ST_BF16)
                    want = attn_bf16_to_f32(attn_f32_to_bf16(want));
                memcpy(&wb, &want, 4);
                memcpy(&gb, &got, 4);
                if (wb != gb && !(isnan(want) && isnan(got))) {
                    printf("  %s (store %d) at (%zu, %zu, %zu): %.9g, want "
                           "%.9g\n", what, (int)o->st, b, t, c, got, want);
                    return 0;
                }
            }
    return 1;
}

static attn_store rand_store(void)
{
    static const attn_store s[3] = {ATTN_ST_NATIVE, ATTN_ST_F16,
                                    ATTN_ST_BF16};
    return s[irand(3)];
}

/* a call's operands: ops[i] (16-bit or not) and their twins            */
enum { MAXOPS = 8 };
typedef struct {
    int n;
    op16 op[MAXOPS], tw[MAXOPS];
    const char *name[MAXOPS];
    int out[MAXOPS], present[MAXOPS];
} call16;

/* the operand just made in k->op[i]: named, filled when an input, and
 * its float32 twin made                                                */
static int add_done(call16 *k, int i, const char *name, int out,
                    int present, double scale)
{
    k->name[i] = name;
    k->out[i] = out;
    k->present[i] = present;
    if (!out)
        op_fill(&k->op[i], scale);
    op_twin(&k->tw[i], &k->op[i]);
    return i;
}
/* add an operand (B, T, C) or a row operand (R, n): present or absent;
 * inputs filled, outputs zeroed                                        */
static int add(call16 *k, const char *name, attn_store st, size_t B,
               size_t T, size_t C, int table, int out, int present,
               double scale)
{
    op_make(&k->op[k->n], st, B, T, C, table);
    return add_done(k, k->n++, name, out, present, scale);
}
static int add_rows(call16 *k, const char *name, attn_store st, size_t R,
                    size_t n, int vec, int out, int present, double scale)
{
    op_rows(&k->op[k->n], st, R, n, vec);
    return add_done(k, k->n++, name, out, present, scale);
}
/* operand i's mat in the 16-bit call (twin: 0) or its twin (1)        */
static attn_mat M(const call16 *k, int i, int twin)
{
    attn_mat none = {0};
    if (!k->present[i])
        return none;
    return twin ? k->tw[i].m : k->op[i].m;
}
/* make output o the very memory of input i (in place)                  */
static void alias(call16 *k, int o, int i)
{
    op_free(&k->op[o]);
    op_free(&k->tw[o]);
    k->op[o] = k->op[i];
    k->tw[o] = k->tw[i];
    k->op[o].buf = k->tw[o].buf = NULL; /* freed through i */
    k->op[o].boff = k->tw[o].boff = NULL;
    k->op[o].total = k->op[i].total;
}
static int check_outputs(const call16 *k, const char *fn)
{
    int ok = 1;
    for (int i = 0; i < k->n; i++)
        if (k->out[i] && k->present[i] && !same_as_twin(&k->op[i],
                                                           &k->tw[i],
                                                           k->name[i])) {
            printf("  in %s\n", fn);
            ok = 0;
        }
    return ok;
}
static void call_free(call16 *k)
{
    for (int i = 0; i < k->n; i++) {
        op_free(&k->op[i]);
        op_free(&k->tw[i]);
    }
    memset(k, 0, sizeof *k);
}

static attn_exec exec_n(int nt)
{
    attn_exec ex = {nt, NULL, NULL};
    return ex;
}

/* the input storage of a call (a 16-bit one mostly) and an output's:
 * the input's, or float32 (a wider out=)                               */
static attn_store in_store(void)
{
    return irand(4) ? (irand(2) ? ATTN_ST_F16 : ATTN_ST_BF16) : rand_store();
}

#define RUN2(k, call_twin, call16_) /* both calls, statuses checked */     \
    do {                                                                   \
        attn_status st_t = (call_twin), st_h = (call16_);                  \
        CHECK(st_t == ATTN_OK && st_h == ATTN_OK, "%s: status %d / %d",    \
              __func__, (int)st_t, (int)st_h);                             \
        CHECK(check_outputs(k, __func__), "%s: bits differ", __func__);    \
    } while (0)

/* ------------------------------------------------------------------------ */
/* the kernels                                                              */
/* ------------------------------------------------------------------------ */
static void test_softmax(void)
{
    call16 k = {0};
    size_t R = 1 + irand(6), n = irand(40);
    attn_store s = in_store();
    int x = add(&k, "x", s, R, 1, n, 1, 0, 1, 3.0);
    int y = add(&k, "y", irand(3) ? s : rand_store(), R, 1, n, 1, 1, 1, 0);
    if (irand(3) == 0)
        alias(&k, y, x);
    RUN2(&k, ca_softmax(ATTN_F32, M(&k, y, 1), M(&k, x, 1), R, n),
         ca_softmax(ATTN_F32, M(&k, y, 0), M(&k, x, 0), R, n));
    call_free(&k);

    s = in_store();
    int dy = add(&k, "dy", s, R, 1, n, 1, 0, 1, 1.0);
    int yy = add(&k, "y", irand(2) ? s : rand_store(), R, 1, n, 1, 0, 1, 0.3);
    int dx = add(&k, "dx", irand(3) ? s : rand_store(), R, 1, n, 1, 1, 1, 0);
    int a = (int)irand(3);
    if (a == 1)
        alias(&k, dx, dy);
    else if (a == 2)
        alias(&k, dx, yy);
    RUN2(&k,
         ca_softmax_backward(ATTN_F32, M(&k, dx, 1), M(&k, dy, 1),
                               M(&k, yy, 1), R, n),
         ca_softmax_backward(ATTN_F32, M(&k, dx, 0), M(&k, dy, 0),
                               M(&k, yy, 0), R, n));
    call_free(&k);
}

static void test_layer_norm(int nt)
{
    call16 k = {0};
    size_t R = irand(7), n = 1 + irand(45);
    attn_store s = in_store();
    attn_exec e1 = exec_n(1), en = exec_n(nt);
    int x = add_rows(&k, "x", s, R, n, 0, 0, 1, 2.0);
    int res = add_rows(&k, "res", rand_store(), R, n, 0, 0, irand(2), 1.0);
    int sh = add_rows(&k, "shift", rand_store(), R, n, 1, 0, irand(2), 1.0);
    int w = add_rows(&k, "weight", rand_store(), R, n, 1, 0, irand(2), 1.0);
    int b = add_rows(&k, "bias", rand_store(), R, n, 1, 0, irand(2), 1.0);
    int y = add_rows(&k, "y", irand(3) ? s : rand_store(), R, n, 0, 1, 1, 0);
    int sum = add_rows(&k, "sum", rand_store(), R, n, 0, 1, irand(2), 0);
    if (irand(3) == 0)
        alias(&k, y, x);
    double eps = irand(2) ? 1e-5 : 0.1;
    int sq = (int)irand(2);
    attn_norm pt = {ATTN_F32, R, n, M(&k, y, 1), M(&k, sum, 1), M(&k, x, 1),
                    M(&k, res, 1), M(&k, sh, 1), M(&k, w, 1), M(&k, b, 1),
                    eps, sq};
    attn_norm ph = {ATTN_F32, R, n, M(&k, y, 0), M(&k, sum, 0), M(&k, x, 0),
                    M(&k, res, 0), M(&k, sh, 0), M(&k, w, 0), M(&k, b, 0),
                    eps, sq};
    RUN2(&k, attn_layer_norm(&pt, &e1), attn_layer_norm(&ph, &en));
    call_free(&k);

    s = in_store();
    int xs = add_rows(&k, "s", s, R, n, 0, 0, 1, 2.0);
    int dy = add_rows(&k, "dy", irand(2) ? s : rand_store(), R, n, 0, 0, 1, 1.0);
    int wg = add_rows(&k, "weight", rand_store(), R, n, 1, 0, irand(2), 1.0);
    int dx = add_rows(&k, "dx", irand(3) ? s : rand_store(), R, n, 0, 1, 1, 0);
    int dw = add_rows(&k, "dweight", rand_store(), R, n, 1, 1, irand(2), 0);
    int db = add_rows(&k, "dbias", rand_store(), R, n, 1, 1, irand(2), 0);
    if (irand(3) == 0)
        alias(&k, dx, dy);
    attn_norm_grad gt = {ATTN_F32, R, n, M(&k, dx, 1), M(&k, dw, 1),
                         M(&k, db, 1), M(&k, dy, 1), M(&k, xs, 1),
                         M(&k, wg, 1), eps, sq};
    attn_norm_grad gh = {ATTN_F32, R, n, M(&k, dx, 0), M(&k, dw, 0),
                         M(&k, db, 0), M(&k, dy, 0), M(&k, xs, 0),
                         M(&k, wg, 0), eps, sq};
    RUN2(&k, attn_layer_norm_backward(&gt, &e1),
         attn_layer_norm_backward(&gh, &en));
    call_free(&k);
}

static void test_bias_act(int nt)
{
    attn_exec e1 = exec_n(1), en = exec_n(nt);
    for (int a = 0; a < 4; a++) {
        call16 k = {0};
        size_t R = irand(7), n = 1 + irand(45);
        attn_store s = in_store();
        int x = add_rows(&k, "x", s, R, n, 0, 0, 1, 2.0);
        int b = add_rows(&k, "bias", rand_store(), R, n, 1, 0, irand(2), 1.0);
        int y = add_rows(&k, "y", irand(3) ? s : rand_store(), R, n, 0, 1, 1,
                         0);
        if (irand(3) == 0)
            alias(&k, y, x);
        RUN2(&k,
             ca_bias_act(ATTN_F32, (attn_act)a, R, n, M(&k, y, 1),
                           M(&k, x, 1), M(&k, b, 1), &e1),
             ca_bias_act(ATTN_F32, (attn_act)a, R, n, M(&k, y, 0),
                           M(&k, x, 0), M(&k, b, 0), &en));
        call_free(&k);

        s = in_store();
        x = add_rows(&k, "x", s, R, n, 0, 0, 1, 2.0);
        int dy = add_rows(&k, "dy", irand(2) ? s : rand_store(), R, n, 0, 0,
                          1, 1.0);
        b = add_rows(&k, "bias", rand_store(), R, n, 1, 0, irand(2), 1.0);
        int dx = add_rows(&k, "dx", irand(3) ? s : rand_store(), R, n, 0, 1,
                          1, 0);
        int db = add_rows(&k, "dbias", rand_store(), R, n, 1, 1, irand(2), 0);
        if (irand(3) == 0)
            alias(&k, dx, dy);
        RUN2(&k,
             ca_bias_act_backward(ATTN_F32, (attn_act)a, R, n, M(&k, dx, 1),
                                    M(&k, db, 1), M(&k, dy, 1), M(&k, x, 1),
                                    M(&k, b, 1), &e1),
             ca_bias_act_backward(ATTN_F32, (attn_act)a, R, n, M(&k, dx, 0),
                                    M(&k, db, 0), M(&k, dy, 0), M(&k, x, 0),
                                    M(&k, b, 0), &en));
        call_free(&k);
    }
}

static void test_rms(int nt)
{
    attn_exec e1 = exec_n(1), en = exec_n(nt);
    call16 k = {0};
    size_t R = irand(7), n = 1 + irand(45);
    attn_store s = in_store();
    int x = add_rows(&k, "x", s, R, n, 0, 0, 1, 2.0);
    int w = add_rows(&k, "weight", rand_store(), R, n, 1, 0, irand(2), 1.0);
    int y = add_rows(&k, "y", irand(3) ? s : rand_store(), R, n, 0, 1, 1, 0);
    if (irand(3) == 0)
        alias(&k, y, x);
    double eps = 1e-6;
    attn_rms pt = {ATTN_F32, R, n, M(&k, y, 1), M(&k, x, 1), M(&k, w, 1), eps};
    attn_rms ph = {ATTN_F32, R, n, M(&k, y, 0), M(&k, x, 0), M(&k, w, 0), eps};
    RUN2(&k, attn_rms_norm(&pt, &e1), attn_rms_norm(&ph, &en));
    call_free(&k);

    s = in_store();
    x = add_rows(&k, "x", s, R, n, 0, 0, 1, 2.0);
    int dy = add_rows(&k, "dy", irand(2) ? s : rand_store(), R, n, 0, 0, 1,
                      1.0);
    w = add_rows(&k, "weight", rand_store(), R, n, 1, 0, irand(2), 1.0);
    int dx = add_rows(&k, "dx", irand(3) ? s : rand_store(), R, n, 0, 1, 1, 0);
    int dw = add_rows(&k, "dweight", rand_store(), R, n, 1, 1, irand(2), 0);
    if (irand(3) == 0)
        alias(&k, dx, dy);
    attn_rms_grad gt = {ATTN_F32, R, n, M(&k, dx, 1), M(&k, dw, 1),
                        M(&k, dy, 1), M(&k, x, 1), M(&k, w, 1), eps};
    attn_rms_grad gh = {ATTN_F32, R, n, M(&k, dx, 0), M(&k, dw, 0),
                        M(&k, dy, 0), M(&k, x, 0), M(&k, w, 0), eps};
    RUN2(&k, attn_rms_norm_backward(&gt, &e1),
         attn_rms_norm_backward(&gh, &en));
    call_free(&k);
}

static void test_swiglu(int nt)
{
    attn_exec e1 = exec_n(1), en = exec_n(nt);
    call16 k = {0};
    size_t R = irand(7), n = 1 + irand(45);
    attn_store s = in_store();
    int g = add_rows(&k, "gate", s, R, n, 0, 0, 1, 3.0);
    int u = add_rows(&k, "up", irand(2) ? s : rand_store(), R, n, 0, 0,
                     irand(3) != 0, 1.0);
    int y = add_rows(&k, "y", irand(3) ? s : rand_store(), R, n, 0, 1, 1, 0);
    if (irand(3) == 0)
        alias(&k, y, g);
    RUN2(&k,
         ca_swiglu(ATTN_F32, R, n, M(&k, y, 1), M(&k, g, 1), M(&k, u, 1),
                     &e1),
         ca_swiglu(ATTN_F32, R, n, M(&k, y, 0), M(&k, g, 0), M(&k, u, 0),
                     &en));
    call_free(&k);

    s = in_store();
    g = add_rows(&k, "gate", s, R, n, 0, 0, 1, 3.0);
    int has_up = irand(3) != 0;
    u = add_rows(&k, "up", irand(2) ? s : rand_store(), R, n, 0, 0, has_up,
                 1.0);
    int dy = add_rows(&k, "dy", irand(2) ? s : rand_store(), R, n, 0, 0, 1,
                      1.0);
    int dg = add_rows(&k, "dgate", irand(3) ? s : rand_store(), R, n, 0, 1, 1,
                      0);
    int du = add_rows(&k, "dup", rand_store(), R, n, 0, 1, has_up, 0);
    if (irand(3) == 0)
        alias(&k, dg, dy);
    RUN2(&k,
         ca_swiglu_backward(ATTN_F32, R, n, M(&k, dg, 1), M(&k, du, 1),
                              M(&k, dy, 1), M(&k, g, 1), M(&k, u, 1), &e1),
         ca_swiglu_backward(ATTN_F32, R, n, M(&k, dg, 0), M(&k, du, 0),
                              M(&k, dy, 0), M(&k, g, 0), M(&k, u, 0), &en));
    call_free(&k);
}

static void test_rope(void)
{
    call16 k = {0};
    size_t B = 1 + irand(4), T = 1 + irand(5), E = 2 * irand(12);
    attn_store s = in_store();
    int x = add(&k, "x", s, B, T, E, 1, 0, 1, 2.0);
    int y = add(&k, "y", irand(3) ? s : rand_store(), B, T, E, 1, 1, 1, 0);
    if (irand(3) == 0)
        alias(&k, y, x);
    double off = (double)irand(100), base = irand(2) ? 10000.0 : 500.0;
    int il = (int)irand(2);
    RUN2(&k,
         ca_rope(ATTN_F32, M(&k, y, 1), M(&k, x, 1), B, T, E, off, base, il),
         ca_rope(ATTN_F32, M(&k, y, 0), M(&k, x, 0), B, T, E, off, base,
                   il));
    call_free(&k);
}

static void test_merge(void)
{
    call16 k = {0};
    size_t K = irand(4), B = 1 + irand(3), L = 1 + irand(4), Ev = irand(20);
    attn_store s = in_store();
    attn_mat outs_t[3], lses_t[3], outs_h[3], lses_h[3];
    for (size_t p = 0; p < K; p++) {
        int o = add(&k, "out_k", irand(3) ? s : rand_store(), B, L, Ev, 1, 0,
                    1, 1.0);
        int l = add(&k, "lse_k", irand(3) ? s : rand_store(), B, L, 1, 1, 0,
                    1, 4.0);
        if (irand(4) == 0) /* a fully masked partial row */
            setf(&k.op[l], op_at(&k.op[l], 0, 0, 0), -INFINITY);
        op_free(&k.tw[l]);
        op_twin(&k.tw[l], &k.op[l]);
        outs_t[p] = M(&k, o, 1), outs_h[p] = M(&k, o, 0);
        lses_t[p] = M(&k, l, 1), lses_h[p] = M(&k, l, 0);
    }
    int out = add(&k, "out", irand(3) ? s : rand_store(), B, L, Ev, 1, 1, 1, 0);
    int lse = add(&k, "lse", irand(2) ? s : rand_store(), B, L, 1, 1, 1,
                  irand(3) != 0, 0);
    RUN2(&k,
         ca_merge(ATTN_F32, K, B, L, Ev, M(&k, out, 1), M(&k, lse, 1),
                    outs_t, lses_t),
         ca_merge(ATTN_F32, K, B, L, Ev, M(&k, out, 0), M(&k, lse, 0),
                    outs_h, lses_h));
    call_free(&k);
}

/* ------------------------------------------------------------------------ */
/* the conversions, and calls that must be refused                          */
/* ------------------------------------------------------------------------ */
static void test_conversions(void)
{
    enum { N = 65536 };
    uint16_t *h = malloc(2 * N * sizeof(uint16_t));
    float *f = malloc(3 * N * sizeof(float)), *g = f + N;
    for (int st = ATTN_ST_F16; st <= ATTN_ST_BF16; st++) {
        for (size_t i = 0; i < N; i++)
            h[i] = (uint16_t)i, h[N + i] = 0;
        for (int s = 1; s <= 2; s++) { /* unit stride (vector), stride 2 */
            size_t n = N / (size_t)s;
            const attn_mat m = {h, NULL, 0, s, (attn_store)st};
            CHECK(attn__row_in(&m, ATTN_F32, 0, n, f) == f,
                  "load: not widened into the buffer");
            int bad = 0;
            for (size_t i = 0; i < n; i++) {
                float want = attn_load_f32((attn_store)st, h, (ptrdiff_t)(i * s));
                bad += memcmp(&want, &f[i], 4) != 0;
            }
            CHECK(bad == 0, "load store %d stride %d: %d wrong", st, s, bad);
        }
        /* rounding: every 16-bit value, its neighbours' midpoints, and
         * random floats; unit stride and stride 3                       */
        size_t n = 0;
        for (size_t i = 0; i < N && n + 3 < 3 * N; i++) {
            float a = attn_load_f32((attn_store)st, h, (ptrdiff_t)i);
            uint32_t u = attn_f32_to_bits(a);
            f[n++] = a;
            f[n++] = attn_bits_to_f32(u + (st == ATTN_ST_BF16 ? 0x8000u : 0x1000u));
            f[n++] = attn_bits_to_f32(u + 1u);
        }
        for (size_t i = 2 * N / 3; i < N; i++)
            f[n - 1 - (i - 2 * N / 3)] = (float)(nrand() * 1e3 * urand());
        (void)g;
        for (ptrdiff_t s = 1; s <= 3; s += 2) {
            size_t m = s == 1 ? (n < 2 * N ? n : 2 * N) : 2 * N / 3;
            const attn_mat hm = {h, NULL, 0, s, (attn_store)st};
            attn__row_done(&hm, ATTN_F32, 0, m, f);
            int bad = 0;
            for (size_t i = 0; i < m; i++) {
                uint16_t want = st == ATTN_ST_F16 ? attn_f32_to_f16(f[i])
                                                  : attn_f32_to_bf16(f[i]);
                bad += h[(ptrdiff_t)i * s] != want;
            }
            CHECK(bad == 0, "store %d stride %d: %d wrong", st, (int)s, bad);
        }
    }
    free(h);
    free(f);
}

static void test_refused(void)
{
    float buf[64] = {0};
    attn_mat f16 = {buf, NULL, 8, 1, ATTN_ST_F16};
    attn_mat bad = {buf, NULL, 8, 1, (attn_store)7};
    attn_mat d = {buf, NULL, 4, 1, ATTN_ST_NATIVE};
    attn_exec e = exec_n(1);
    CHECK(ca_softmax(ATTN_F64, d, f16, 2, 4) == ATTN_EINVAL, "softmax f64");
    CHECK(ca_softmax(ATTN_F32, bad, d, 2, 4) == ATTN_EINVAL, "softmax store");
    CHECK(ca_softmax_backward(ATTN_F64, d, d, f16, 2, 4) == ATTN_EINVAL,
          "softmax_backward f64");
    CHECK(ca_softmax_jacobian(ATTN_F32, d, f16, 1, 2) == ATTN_EINVAL,
          "jacobian 16-bit");
    attn_norm ln = {ATTN_F64, 2, 4, d, {0}, f16, {0}, {0}, {0}, {0}, 0, 1};
    CHECK(attn_layer_norm(&ln, &e) == ATTN_EINVAL, "layer_norm f64");
    attn_norm_grad lg = {ATTN_F64, 2, 4, d, f16, {0}, d, d, {0}, 0, 1};
    CHECK(attn_layer_norm_backward(&lg, &e) == ATTN_EINVAL,
          "layer_norm_backward f64 dweight");
    CHECK(ca_bias_act(ATTN_F64, ATTN_ACT_GELU, 2, 4, d, f16, d, &e)
              == ATTN_EINVAL, "bias_act f64");
    CHECK(ca_bias_act(ATTN_F32, ATTN_ACT_GELU, 2, 4, d, bad, d, &e)
              == ATTN_EINVAL, "bias_act store");
    attn_rms rn = {ATTN_F64, 2, 4, f16, d, {0}, 0};
    CHECK(attn_rms_norm(&rn, &e) == ATTN_EINVAL, "rms_norm f64");
    CHECK(ca_swiglu_backward(ATTN_F64, 2, 4, d, d, f16, d, d, &e)
              == ATTN_EINVAL, "swiglu_backward f64");
    CHECK(ca_rope(ATTN_F64, d, f16, 1, 2, 4, 0, 1e4, 0) == ATTN_EINVAL,
          "rope f64");
    CHECK(ca_merge(ATTN_F64, 1, 1, 2, 4, d, (attn_mat){0}, &d, &f16)
              == ATTN_EINVAL, "merge f64");
    CHECK(ca_posenc(ATTN_F32, f16, 1, 2, 4, 0, 1e4, 0) == ATTN_EINVAL,
          "posenc 16-bit");
    CHECK(ca_copy2d(ATTN_F32, d, f16, 1, 2, 4) == ATTN_EINVAL,
          "copy2d 16-bit");
}

int main(int argc, char **argv)
{
    clock_t t0 = clock();
    int count = argc > 1 ? atoi(argv[1]) : 8;
    test_conversions();
    test_refused();
    size_t chunk_saved = attn__rows_chunk_elems;
    double work_saved = attn__rows_min_work;
    attn__rows_min_work = 1;
    for (int it = 0; it < 6 * count; it++) {
        attn__rows_chunk_elems = 1 + irand(200);
        int nt = 1 + (int)irand(3);
        test_softmax();
        test_layer_norm(nt);
        test_bias_act(nt);
        test_rms(nt);
        test_swiglu(nt);
        test_rope();
        test_merge();
    }
    attn__rows_chunk_elems = chunk_saved;
    attn__rows_min_work = work_saved;
    return check_summary(t0);
}
