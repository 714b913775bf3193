/*
 * test_layer.c -- C tests of the layer family (csrc/core/layer/), without
 * Python:
 *
 *   attn_layer_norm: both forms, residual / shift / weight / bias present
 *     or not, against a long double oracle, over random layouts (offset
 *     tables, row strides, negative and non-unit column strides), in place
 *   attn_layer_norm_backward: dx against the full Jacobian (long double)
 *     and central differences of the forward kernel; dweight, dbias
 *     against plain sums
 *   attn_bias_act (relu, gelu, gelu_tanh, none) and its backward: against
 *     the formulas in long double, act' against central differences,
 *     dbias against plain sums, in place
 *   every kernel: the same bits for 1, 2, 3 and 5 threads (with chunks
 *     shrunk so that small problems have many); edges (no rows, n = 1,
 *     constant rows, NaN)
 *
 * Build (tests/c/test_c_core.py does this):
 *   gcc -std=c11 -Wall -Wextra -Werror -O1 -g -pthread -Icsrc/core \
 *       tests/c/test_layer.c $(find csrc/core -name "*.c") -lm -o test_layer
 * Prints one line per failure and "N passed, M failed"; exit status 1 on
 * any failure.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attn.h"
#include "calls.h"
#include "rows/rows.h"

#define TEST_RNG_SEED 0x243F6A8885A308D3ULL
#include "check.h"
static double nrand(void) /* roughly normal */
{
    return (urand() + urand() + urand() + urand() - 2.0) * 1.7;
}

/* ------------------------------------------------------------------------ */
/* row operands (nrows, n) with random layouts, and vectors (n)             */
/* ------------------------------------------------------------------------ */
typedef struct {
    size_t R, C;
    attn_dtype dt;
    void *buf;
    ptrdiff_t *boff;
    attn_mat m;
} rop;

static size_t esz(attn_dtype dt) { return dt == ATTN_F32 ? 4 : 8; }

/* vec: a vector broadcast over rows (s0 = 0, no table) */
static void rop_make(rop *o, attn_dtype dt, size_t R, size_t C, int vec)
{
    memset(o, 0, sizeof *o);
    o->R = R;
    o->C = C;
    o->dt = dt;
    ptrdiff_t s1 = irand(3) == 0 ? (irand(2) ? 2 : -1) : 1;
    ptrdiff_t a1 = s1 < 0 ? -s1 : s1;
    ptrdiff_t rowspan = (ptrdiff_t)(C ? C : 1) * a1 + (ptrdiff_t)irand(3);
    size_t nrows_alloc = vec ? 1 : R;
    size_t total = (nrows_alloc + 1) * (size_t)rowspan + 8;
    o->buf = calloc(total, esz(dt));
    ptrdiff_t base = s1 < 0 ? (ptrdiff_t)(C ? C - 1 : 0) * a1 : 0;
    o->m.s1 = s1;
    if (vec) {
        o->m.data = (char *)o->buf + (size_t)base * esz(dt);
        return;
    }
    int how = (int)irand(3);
    if (how == 0) { /* plain matrix, maybe rows reversed */
        if (irand(2)) {
            o->m.s0 = -rowspan;
            base += (ptrdiff_t)(R ? R - 1 : 0) * rowspan;
        } else {
            o->m.s0 = rowspan;
        }
        o->m.data = (char *)o->buf + (size_t)base * esz(dt);
    } else { /* an offset table: rows in a random order */
        o->boff = malloc((R + 1) * sizeof(ptrdiff_t));
        for (size_t r = 0; r < R; r++)
            o->boff[r] = base + (ptrdiff_t)r * rowspan;
        for (size_t r = R; r > 1; r--) {
            size_t k = irand(r);
            ptrdiff_t t = o->boff[r - 1];
            o->boff[r - 1] = o->boff[k];
            o->boff[k] = t;
        }
        o->m.data = o->buf;
        o->m.boff = o->boff;
        o->m.s0 = 0;
    }
}

static void rop_free(rop *o)
{
    free(o->buf);
    free(o->boff);
    memset(o, 0, sizeof *o);
}

static ptrdiff_t rop_at(const rop *o, size_t r, size_t j)
{
    return ROW(o->m, r) + (ptrdiff_t)j * o->m.s1;
}
static double get(const rop *o, size_t r, size_t j)
{
    ptrdiff_t k = rop_at(o, r, j);
    return o->dt == ATTN_F32 ? (double)((float *)o->m.data)[k]
                             : ((double *)o->m.data)[k];
}
static void set(rop *o, size_t r, size_t j, double v)
{
    ptrdiff_t k = rop_at(o, r, j);
    if (o->dt == ATTN_F32)
        ((float *)o->m.data)[k] = (float)v;
    else
        ((double *)o->m.data)[k] = v;
}
static void fill(rop *o, double scale, double offset)
{
    size_t R = o->m.s0 == 0 && !o->m.boff ? 1 : o->R;
    for (size_t r = 0; r < R; r++)
        for (size_t j = 0; j < o->C; j++)
            set(o, r, j, offset + scale * nrand());
}
/* the same values in a fresh operand of another random layout */
static void rop_clone(rop *dst, const rop *src, int vec)
{
    rop_make(dst, src->dt, src->R, src->C, vec);
    size_t R = vec ? 1 : src->R;
    for (size_t r = 0; r < R; r++)
        for (size_t j = 0; j < src->C; j++)
            set(dst, r, j, get(src, r, j));
}
static double rnd_as(attn_dtype dt, double v)
{
    return dt == ATTN_F32 ? (double)(float)v : v;
}

static attn_exec exec_n(int nt)
{
    attn_exec ex = {nt, NULL, NULL};
    return ex;
}

/* bitwise equality of two operands' values                                */
static int same_bits(const rop *a, const rop *b, size_t R)
{
    for (size_t r = 0; r < R; r++)
        for (size_t j = 0; j < a->C; j++) {
            double x = get(a, r, j), y = get(b, r, j);
            if (memcmp(&x, &y, sizeof x) != 0 && !(isnan(x) && isnan(y)))
                return 0;
        }
    return 1;
}

/* ------------------------------------------------------------------------ */
/* layer norm oracle (long double)                                          */
/* ------------------------------------------------------------------------ */
typedef struct {
    rop x, res, shift, w, b;
    int has_res, has_shift, has_w, has_b, eps_in_sqrt;
    double eps;
} ln_in;

/* s of row r, rounded as the kernel rounds: x + (res + shift)             */
static double ln_s(const ln_in *in, size_t r, size_t j)
{
    attn_dtype dt = in->x.dt;
    double s = get(&in->x, r, j), t = 0;
    if (in->has_res && in->has_shift)
        t = rnd_as(dt, get(&in->res, r, j) + get(&in->shift, 0, j));
    else if (in->has_res)
        t = get(&in->res, r, j);
    else if (in->has_shift)
        t = get(&in->shift, 0, j);
    return in->has_res || in->has_shift ? rnd_as(dt, s + t) : s;
}

static void ln_stats(const ln_in *in, size_t r, long double *mean,
                     long double *var, long double *rstd)
{
    size_t n = in->x.C;
    long double m = 0, v = 0;
    for (size_t j = 0; j < n; j++)
        m += ln_s(in, r, j);
    m /= n;
    for (size_t j = 0; j < n; j++) {
        long double d = ln_s(in, r, j) - m;
        v += d * d;
    }
    v /= n;
    *mean = m;
    *var = v;
    *rstd = in->eps_in_sqrt ? 1.0L / sqrtl(v + in->eps)
                            : 1.0L / (sqrtl(v) + in->eps);
}

static long double ln_oracle(const ln_in *in, size_t r, size_t j)
{
    long double mean, var, rstd;
    ln_stats(in, r, &mean, &var, &rstd);
    long double y = (ln_s(in, r, j) - mean) * rstd;
    if (in->has_w)
        y *= get(&in->w, 0, j);
    if (in->has_b)
        y += get(&in->b, 0, j);
    return y;
}

static void ln_make(ln_in *in, attn_dtype dt, size_t R, size_t n)
{
    memset(in, 0, sizeof *in);
    double off = irand(3) == 0 ? 50.0 : 0.0; /* a large mean */
    rop_make(&in->x, dt, R, n, 0);
    fill(&in->x, 0.5 + 2 * urand(), off);
    in->has_res = irand(2);
    in->has_shift = irand(3) == 0;
    in->has_w = irand(2);
    in->has_b = irand(2);
    in->eps_in_sqrt = irand(2);
    static const double epss[] = {1e-6, 1e-5, 1e-12, 0.1};
    in->eps = epss[irand(4)];
    rop_make(&in->res, dt, R, n, 0);
    rop_make(&in->shift, dt, R, n, 1);
    rop_make(&in->w, dt, R, n, 1);
    rop_make(&in->b, dt, R, n, 1);
    if (in->has_res)
        fill(&in->res, 1.0, 0.0);
    if (in->has_shift)
        fill(&in->shift, 1.0, 0.0);
    if (in->has_w)
        fill(&in->w, 1.0, 1.0);
    if (in->has_b)
        fill(&in->b, 1.0, 0.0);
}

static void ln_free(ln_in *in)
{
    rop_free(&in->x);
    rop_free(&in->res);
    rop_free(&in->shift);
    rop_free(&in->w);
    rop_free(&in->b);
}

static attn_norm ln_problem(const ln_in *in, rop *y, rop *sum)
{
    attn_mat none = {NULL, NULL, 0, 0, ATTN_ST_NATIVE};
    attn_norm p;
    memset(&p, 0, sizeof p);
    p.dtype = in->x.dt;
    p.nrows = in->x.R;
    p.n = in->x.C;
    p.y = y->m;
    p.sum = sum ? sum->m : none;
    p.x = in->x.m;
    p.res = in->has_res ? in->res.m : none;
    p.shift = in->has_shift ? in->shift.m : none;
    p.weight = in->has_w ? in->w.m : none;
    p.bias = in->has_b ? in->b.m : none;
    p.eps = in->eps;
    p.eps_in_sqrt = in->eps_in_sqrt;
    return p;
}

static double tol_of(attn_dtype dt) { return dt == ATTN_F32 ? 2e-6 : 1e-13; }

/* ------------------------------------------------------------------------ */
/* layer norm forward                                                       */
/* ------------------------------------------------------------------------ */
static void test_ln_forward(int count)
{
    static const size_t ns[] = {1, 2, 3, 7, 8, 9, 16, 31, 64, 100, 384, 1000};
    for (int it = 0; it < count; it++) {
        attn_dtype dt = irand(2) ? ATTN_F64 : ATTN_F32;
        size_t R = irand(40), n = ns[irand(sizeof ns / sizeof *ns)];
        ln_in in;
        ln_make(&in, dt, R, n);
        rop y, sum;
        rop_make(&y, dt, R, n, 0);
        rop_make(&sum, dt, R, n, 0);
        int want_sum = irand(2);
        attn_norm p = ln_problem(&in, &y, want_sum ? &sum : NULL);
        attn_exec ex = exec_n(1 + (int)irand(3));
        CHECK(attn_layer_norm(&p, &ex) == ATTN_OK, "layer_norm status");
        double worst = 0, scale = 1;
        for (size_t r = 0; r < R; r++)
            for (size_t j = 0; j < n; j++) {
                long double o = ln_oracle(&in, r, j);
                double e = fabs((double)(o - get(&y, r, j)));
                worst = e > worst ? e : worst;
                scale = fabs((double)o) > scale ? fabs((double)o) : scale;
                if (want_sum && get(&sum, r, j) != ln_s(&in, r, j))
                    worst = INFINITY;
            }
        /* the tutorial form with a tiny eps divides by a tiny std:
         * relative error of the std itself matters there            */
        double tol = tol_of(dt) * scale * (n > 100 ? 4 : 1);
        CHECK(worst <= tol, "layer_norm %s R=%zu n=%zu res=%d shift=%d w=%d "
              "b=%d sqrt=%d eps=%g: error %g > %g",
              dt == ATTN_F32 ? "f32" : "f64", R, n, in.has_res, in.has_shift,
              in.has_w, in.has_b, in.eps_in_sqrt, in.eps, worst, tol);
        /* in place: y is x itself */
        if (R) {
            rop x2;
            rop_clone(&x2, &in.x, 0);
            attn_norm q = p;
            q.x = x2.m;
            q.y = x2.m;
            q.sum.data = NULL;
            CHECK(attn_layer_norm(&q, &ex) == ATTN_OK, "in place status");
            CHECK(same_bits(&x2, &y, R), "layer_norm in place differs");
            rop_free(&x2);
        }
        rop_free(&y);
        rop_free(&sum);
        ln_free(&in);
    }
}

/* ------------------------------------------------------------------------ */
/* layer norm backward                                                      */
/* ------------------------------------------------------------------------ */
/* dx of row r by the full Jacobian of y wrt s (long double)               */
static void ln_dx_oracle(const ln_in *in, const rop *dy, size_t r,
                         long double *dx)
{
    size_t n = in->x.C;
    long double mean, var, rstd;
    ln_stats(in, r, &mean, &var, &rstd);
    long double sd = sqrtl(var);
    for (size_t j = 0; j < n; j++) {
        long double xj = (ln_s(in, r, j) - mean) * rstd, acc = 0;
        for (size_t i = 0; i < n; i++) {
            long double xi = (ln_s(in, r, i) - mean) * rstd;
            long double J = rstd * ((i == j) - 1.0L / n);
            if (in->eps_in_sqrt)
                J -= xi * xj * rstd / n;
            else if (sd > 0)
                J -= xi * xj / (n * sd);
            long double g = get(dy, r, i);
            if (in->has_w)
                g *= get(&in->w, 0, i);
            acc += g * J;
        }
        dx[j] = acc;
    }
}

static attn_norm_grad ln_grad_problem(const ln_in *in, rop *dx, rop *dw,
                                      rop *db, const rop *dy, const rop *s)
{
    attn_mat none = {NULL, NULL, 0, 0, ATTN_ST_NATIVE};
    attn_norm_grad g;
    memset(&g, 0, sizeof g);
    g.dtype = in->x.dt;
    g.nrows = in->x.R;
    g.n = in->x.C;
    g.dx = dx->m;
    g.dweight = dw ? dw->m : none;
    g.dbias = db ? db->m : none;
    g.dy = dy->m;
    g.s = s->m;
    g.weight = in->has_w ? in->w.m : none;
    g.eps = in->eps;
    g.eps_in_sqrt = in->eps_in_sqrt;
    return g;
}

static void test_ln_backward(int count)
{
    static const size_t ns[] = {1, 2, 3, 8, 9, 17, 64, 130};
    for (int it = 0; it < count; it++) {
        attn_dtype dt = irand(2) ? ATTN_F64 : ATTN_F32;
        size_t R = irand(30), n = ns[irand(sizeof ns / sizeof *ns)];
        ln_in in;
        ln_make(&in, dt, R, n);
        in.has_res = in.has_shift = 0; /* s = x */
        if (in.eps < 1e-9)
            in.eps = 1e-5;
        rop dy, dx, dw, db;
        rop_make(&dy, dt, R, n, 0);
        fill(&dy, 1.0, 0.0);
        rop_make(&dx, dt, R, n, 0);
        rop_make(&dw, dt, R, n, 1);
        rop_make(&db, dt, R, n, 1);
        attn_norm_grad g = ln_grad_problem(&in, &dx, &dw, &db, &dy, &in.x);
        attn_exec ex = exec_n(1 + (int)irand(3));
        CHECK(attn_layer_norm_backward(&g, &ex) == ATTN_OK, "backward status");
        long double *o = malloc((n + 1) * sizeof *o);
        double worst = 0, scale = 1, worst_wb = 0;
        for (size_t r = 0; r < R; r++) {
            ln_dx_oracle(&in, &dy, r, o);
            for (size_t j = 0; j < n; j++) {
                double e = fabs((double)(o[j] - get(&dx, r, j)));
                worst = e > worst ? e : worst;
                scale = fabs((double)o[j]) > scale ? fabs((double)o[j])
                                                   : scale;
            }
        }
        for (size_t j = 0; j < n; j++) {
            long double sw = 0, sb = 0;
            for (size_t r = 0; r < R; r++) {
                long double mean, var, rstd;
                ln_stats(&in, r, &mean, &var, &rstd);
                sw += get(&dy, r, j) * ((ln_s(&in, r, j) - mean) * rstd);
                sb += get(&dy, r, j);
            }
            double e1 = fabs((double)(sw - get(&dw, 0, j)));
            double e2 = fabs((double)(sb - get(&db, 0, j)));
            worst_wb = e1 > worst_wb ? e1 : worst_wb;
            worst_wb = e2 > worst_wb ? e2 : worst_wb;
        }
        double tol = tol_of(dt) * scale * 8;
        CHECK(worst <= tol, "layer_norm_backward dx %s R=%zu n=%zu w=%d "
              "sqrt=%d eps=%g: error %g > %g", dt == ATTN_F32 ? "f32" : "f64",
              R, n, in.has_w, in.eps_in_sqrt, in.eps, worst, tol);
        double tol_wb = tol_of(dt) * (double)(R + 1) * 8;
        CHECK(worst_wb <= tol_wb, "layer_norm_backward dweight/dbias %s "
              "R=%zu n=%zu: error %g > %g", dt == ATTN_F32 ? "f32" : "f64",
              R, n, worst_wb, tol_wb);
        /* in place: dx written over dy */
        if (R) {
            rop dy2;
            rop_clone(&dy2, &dy, 0);
            attn_norm_grad q = g;
            q.dy = dy2.m;
            q.dx = dy2.m;
            q.dweight.data = q.dbias.data = NULL;
            CHECK(attn_layer_norm_backward(&q, &ex) == ATTN_OK, "status");
            CHECK(same_bits(&dy2, &dx, R), "backward in place differs");
            rop_free(&dy2);
        }
        free(o);
        rop_free(&dy);
        rop_free(&dx);
        rop_free(&dw);
        rop_free(&db);
        ln_free(&in);
    }
}

/* central differences of the forward kernel (float64): dx of sum(dy * y)  */
static void test_ln_finite_differences(void)
{
    for (int it = 0; it < 24; it++) {
        size_t R = 1 + irand(3), n = 1 + irand(12);
        ln_in in;
        ln_make(&in, ATTN_F64, R, n);
        in.has_res = in.has_shift = 0;
        in.eps = it % 2 ? 1e-3 : 0.1;
        rop dy, dx, y;
        rop_make(&dy, ATTN_F64, R, n, 0);
        fill(&dy, 1.0, 0.0);
        rop_make(&dx, ATTN_F64, R, n, 0);
        rop_make(&y, ATTN_F64, R, n, 0);
        attn_norm_grad g = ln_grad_problem(&in, &dx, NULL, NULL, &dy, &in.x);
        CHECK(attn_layer_norm_backward(&g, NULL) == ATTN_OK, "status");
        double worst = 0;
        for (size_t r = 0; r < R; r++)
            for (size_t j = 0; j < n; j++) {
                double x0 = get(&in.x, r, j), h = 1e-5, f[2];
                for (int k = 0; k < 2; k++) {
                    set(&in.x, r, j, x0 + (k ? h : -h));
                    attn_norm p = ln_problem(&in, &y, NULL);
                    attn_layer_norm(&p, NULL);
                    f[k] = 0;
                    for (size_t i = 0; i < n; i++)
                        f[k] += get(&dy, r, i) * get(&y, r, i);
                }
                set(&in.x, r, j, x0);
                double e = fabs((f[1] - f[0]) / (2 * h) - get(&dx, r, j));
                worst = e > worst ? e : worst;
            }
        CHECK(worst < 1e-6, "layer_norm_backward vs finite differences n=%zu "
              "sqrt=%d w=%d: error %g", n, in.eps_in_sqrt, in.has_w, worst);
        rop_free(&dy);
        rop_free(&dx);
        rop_free(&y);
        ln_free(&in);
    }
}

/* ------------------------------------------------------------------------ */
/* bias + activation                                                        */
/* ------------------------------------------------------------------------ */
static const char *act_names[] = {
#define ACT_NAME_(id, name, cost, y, dx) name,
    ATTN_ACT_LIST(ACT_NAME_)
#undef ACT_NAME_
};

/* every activation of layer/acts.h needs its formula and derivative
 * here, in long double (an unknown one fails: NaN)                      */

static long double act_l(attn_act a, long double h)
{
    switch (a) {
    case ATTN_ACT_RELU:
        return h < 0 ? 0 : h;
    case ATTN_ACT_GELU:
        return 0.5L * h * (1 + erfl(h / sqrtl(2.0L)));
    case ATTN_ACT_GELU_TANH:
        return 0.5L * h * (1 + tanhl(sqrtl(2.0L / acosl(-1.0L))
                                     * (h + 0.044715L * h * h * h)));
    case ATTN_ACT_NONE:
        return h;
    default:
        return NAN;
    }
}

static long double dact_l(attn_act a, long double h)
{
    switch (a) {
    case ATTN_ACT_RELU:
        return h > 0 ? 1 : 0;
    case ATTN_ACT_GELU:
        return 0.5L * (1 + erfl(h / sqrtl(2.0L)))
               + h * expl(-h * h / 2) / sqrtl(2 * acosl(-1.0L));
    case ATTN_ACT_GELU_TANH: {
        long double e = 1e-7L; /* smooth: a central difference suffices */
        return (act_l(a, h + e) - act_l(a, h - e)) / (2 * e);
    }
    case ATTN_ACT_NONE:
        return 1;
    default:
        return NAN;
    }
}

static void test_bias_act(int count)
{
    static const size_t ns[] = {1, 3, 8, 33, 100, 512};
    for (int it = 0; it < count; it++) {
        attn_dtype dt = irand(2) ? ATTN_F64 : ATTN_F32;
        attn_act a = (attn_act)irand(ATTN_ACT_COUNT);
        CHECK(!isnan((double)act_l(a, 0.5L))
                  && !isnan((double)dact_l(a, 0.5L)),
              "act_l / dact_l: no formula for %s", act_names[a]);
        size_t R = irand(30), n = ns[irand(sizeof ns / sizeof *ns)];
        int has_b = irand(3) != 0;
        rop x, b, y, dy, dx, db;
        rop_make(&x, dt, R, n, 0);
        fill(&x, 2.0, 0.0);
        rop_make(&b, dt, R, n, 1);
        fill(&b, 1.0, 0.0);
        rop_make(&y, dt, R, n, 0);
        rop_make(&dy, dt, R, n, 0);
        fill(&dy, 1.0, 0.0);
        rop_make(&dx, dt, R, n, 0);
        rop_make(&db, dt, R, n, 1);
        attn_mat bm = b.m;
        if (!has_b)
            bm.data = NULL;
        attn_exec ex = exec_n(1 + (int)irand(3));
        CHECK(ca_bias_act(dt, a, R, n, y.m, x.m, bm, &ex) == ATTN_OK,
              "bias_act status");
        CHECK(ca_bias_act_backward(dt, a, R, n, dx.m, db.m, dy.m, x.m, bm,
                                     &ex) == ATTN_OK, "backward status");
        double wf = 0, wb = 0, wdb = 0;
        for (size_t r = 0; r < R; r++)
            for (size_t j = 0; j < n; j++) {
                double h = get(&x, r, j);
                if (has_b)
                    h = rnd_as(dt, h + get(&b, 0, j));
                double e = fabs((double)act_l(a, h) - get(&y, r, j));
                wf = e > wf ? e : wf;
                e = fabs((double)(dact_l(a, h) * get(&dy, r, j))
                         - get(&dx, r, j));
                wb = e > wb ? e : wb;
            }
        for (size_t j = 0; j < n; j++) {
            long double s = 0;
            for (size_t r = 0; r < R; r++)
                s += get(&dx, r, j);
            double e = fabs((double)s - get(&db, 0, j));
            wdb = e > wdb ? e : wdb;
        }
        double tf = dt == ATTN_F32 ? 2e-6 : 1e-14;
        double tb = dt == ATTN_F32 ? 4e-6 : (a == ATTN_ACT_GELU_TANH ? 1e-8
                                                                     : 1e-14);
        CHECK(wf <= tf * 8, "bias_act %s %s n=%zu: error %g", act_names[a],
              dt == ATTN_F32 ? "f32" : "f64", n, wf);
        CHECK(wb <= tb * 8, "bias_act_backward %s %s n=%zu: error %g",
              act_names[a], dt == ATTN_F32 ? "f32" : "f64", n, wb);
        CHECK(wdb <= tf * (double)(R + 1), "bias_act_backward dbias %s: "
              "error %g", act_names[a], wdb);
        /* in place: y written over x */
        if (R) {
            rop x2;
            rop_clone(&x2, &x, 0);
            CHECK(ca_bias_act(dt, a, R, n, x2.m, x2.m, bm, &ex) == ATTN_OK,
                  "status");
            CHECK(same_bits(&x2, &y, R), "bias_act in place differs");
            rop_free(&x2);
        }
        rop_free(&x);
        rop_free(&b);
        rop_free(&y);
        rop_free(&dy);
        rop_free(&dx);
        rop_free(&db);
    }
}

/* ------------------------------------------------------------------------ */
/* thread counts: the same bits (many small chunks)                         */
/* ------------------------------------------------------------------------ */
static void test_threads(void)
{
    size_t chunk_saved = attn__rows_chunk_elems;
    double work_saved = attn__rows_min_work;
    attn__rows_min_work = 1;
    static const int nts[] = {1, 2, 3, 5};
    for (int it = 0; it < 12; it++) {
        attn__rows_chunk_elems = 1 + irand(300);
        attn_dtype dt = it % 2 ? ATTN_F64 : ATTN_F32;
        size_t R = 50 + irand(200), n = 1 + irand(70);
        ln_in in;
        ln_make(&in, dt, R, n);
        rop y[4], dx[4], dw[4], db[4], hx[4], hdb[4], dy;
        rop_make(&dy, dt, R, n, 0);
        fill(&dy, 1.0, 0.0);
        attn_act a = (attn_act)(it % ATTN_ACT_COUNT);
        for (int k = 0; k < 4; k++) {
            attn_exec ex = exec_n(nts[k]);
            rop_make(&y[k], dt, R, n, 0);
            rop_make(&dx[k], dt, R, n, 0);
            rop_make(&dw[k], dt, R, n, 1);
            rop_make(&db[k], dt, R, n, 1);
            rop_make(&hx[k], dt, R, n, 0);
            rop_make(&hdb[k], dt, R, n, 1);
            attn_norm p = ln_problem(&in, &y[k], NULL);
            CHECK(attn_layer_norm(&p, &ex) == ATTN_OK, "status");
            attn_norm_grad g = ln_grad_problem(&in, &dx[k], &dw[k], &db[k],
                                               &dy, &in.x);
            CHECK(attn_layer_norm_backward(&g, &ex) == ATTN_OK, "status");
            CHECK(ca_bias_act_backward(dt, a, R, n, hx[k].m, hdb[k].m,
                                         dy.m, in.x.m, in.b.m, &ex)
                  == ATTN_OK, "status");
        }
        for (int k = 1; k < 4; k++) {
            CHECK(same_bits(&y[0], &y[k], R), "layer_norm %d threads",
                  nts[k]);
            CHECK(same_bits(&dx[0], &dx[k], R) && same_bits(&dw[0], &dw[k], 1)
                  && same_bits(&db[0], &db[k], 1),
                  "layer_norm_backward %d threads (chunk %zu)", nts[k],
                  attn__rows_chunk_elems);
            CHECK(same_bits(&hx[0], &hx[k], R)
                  && same_bits(&hdb[0], &hdb[k], 1),
                  "bias_act_backward %s %d threads", act_names[a], nts[k]);
        }
        for (int k = 0; k < 4; k++) {
            rop_free(&y[k]);
            rop_free(&dx[k]);
            rop_free(&dw[k]);
            rop_free(&db[k]);
            rop_free(&hx[k]);
            rop_free(&hdb[k]);
        }
        rop_free(&dy);
        ln_free(&in);
    }
    attn__rows_chunk_elems = chunk_saved;
    attn__rows_min_work = work_saved;
}

/* ------------------------------------------------------------------------ */
/* edges                                                                    */
/* ------------------------------------------------------------------------ */
static void test_edges(void)
{
    /* no rows: dweight, dbias are written as zeros */
    double dw[3] = {7, 7, 7}, db[3] = {7, 7, 7}, one = 1;
    attn_mat none = {NULL, NULL, 0, 0, ATTN_ST_NATIVE};
    attn_mat mdw = {dw, NULL, 0, 1, ATTN_ST_NATIVE}, mdb = {db, NULL, 0, 1, ATTN_ST_NATIVE};
    attn_mat m1 = {&one, NULL, 0, 1, ATTN_ST_NATIVE};
    attn_norm_grad g = {ATTN_F64, 0, 3, m1, mdw, mdb, m1, m1, none, 1e-6, 0};
    CHECK(attn_layer_norm_backward(&g, NULL) == ATTN_OK, "status");
    CHECK(dw[0] == 0 && dw[2] == 0 && db[1] == 0, "no rows: dweight %g "
          "dbias %g", dw[0], db[1]);
    CHECK(ca_bias_act_backward(ATTN_F64, ATTN_ACT_RELU, 0, 3, m1, mdb, m1,
                                 m1, none, NULL) == ATTN_OK
          && db[0] == 0, "bias_act_backward no rows");
    /* a constant row: y = bias; tutorial form dx = rstd (g - mean g) */
    double x[4] = {3, 3, 3, 3}, y[4], dy[4] = {1, 2, 3, 6}, dx[4];
    attn_mat mx = {x, NULL, 0, 1, ATTN_ST_NATIVE}, my = {y, NULL, 0, 1, ATTN_ST_NATIVE};
    attn_mat mdy = {dy, NULL, 0, 1, ATTN_ST_NATIVE}, mdx = {dx, NULL, 0, 1, ATTN_ST_NATIVE};
    for (int sq = 0; sq < 2; sq++) {
        attn_norm p = {ATTN_F64, 1, 4, my, none, mx, none, none, none, none,
                       1e-3, sq};
        CHECK(attn_layer_norm(&p, NULL) == ATTN_OK && y[0] == 0 && y[3] == 0,
              "constant row: y = %g", y[0]);
        attn_norm_grad q = {ATTN_F64, 1, 4, mdx, none, none, mdy, mx, none,
                            1e-3, sq};
        CHECK(attn_layer_norm_backward(&q, NULL) == ATTN_OK, "status");
        double rstd = sq ? 1 / sqrt(1e-3) : 1 / 1e-3;
        CHECK(fabs(dx[0] - rstd * (1 - 3)) < 1e-9 * rstd
              && fabs(dx[3] - rstd * (6 - 3)) < 1e-9 * rstd,
              "constant row (sqrt=%d): dx %g %g", sq, dx[0], dx[3]);
    }
    /* NaN in a row stays in that row */
    double xn[6] = {1, NAN, 2, 1, 2, 3}, yn[6];
    attn_mat mxn = {xn, NULL, 3, 1, ATTN_ST_NATIVE}, myn = {yn, NULL, 3, 1, ATTN_ST_NATIVE};
    attn_norm p = {ATTN_F64, 2, 3, myn, none, mxn, none, none, none, none,
                   1e-6, 1};
    CHECK(attn_layer_norm(&p, NULL) == ATTN_OK && isnan(yn[0]) && isnan(yn[2])
          && !isnan(yn[3]) && !isnan(yn[5]), "NaN row");
    double rn[3] = {NAN, -1, 1}, rr[3];
    attn_mat mrn = {rn, NULL, 0, 1, ATTN_ST_NATIVE}, mrr = {rr, NULL, 0, 1, ATTN_ST_NATIVE};
    CHECK(ca_bias_act(ATTN_F64, ATTN_ACT_RELU, 1, 3, mrr, mrn, none, NULL)
          == ATTN_OK && isnan(rr[0]) && rr[1] == 0 && rr[2] == 1,
          "relu(NaN, -1, 1) = %g %g %g", rr[0], rr[1], rr[2]);
    CHECK(attn_layer_norm(NULL, NULL) == ATTN_EINVAL
          && ca_bias_act(ATTN_F64, (attn_act)9, 1, 3, mrr, mrn, none, NULL)
             == ATTN_EINVAL, "bad arguments accepted");
}

int main(int argc, char **argv)
{
    int count = argc > 1 ? atoi(argv[1]) : 8;
    uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 10) : 2024;
    rng_state = seed;
    clock_t t0 = clock();
    test_edges();
    test_ln_forward(count * 4);
    test_ln_backward(count * 2);
    test_ln_finite_differences();
    test_bias_act(count * 4);
    test_threads();
    return check_summary(t0);
}
