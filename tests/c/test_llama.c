/*
 * test_llama.c -- C tests of the Llama-family pieces of the layer family
 * (layer/norm.c, layer/act.c), without Python:
 *
 *   attn_rms_norm: with and without weight, against a long double oracle
 *     over random layouts (offset tables, row strides, negative and
 *     non-unit column strides), in place
 *   attn_rms_norm_backward: dx against the row's full Jacobian (long
 *     double) and central differences of the forward kernel; dweight
 *     against plain sums
 *   attn_swiglu (and silu: up absent) and its backward: against the
 *     formulas in long double, silu' against central differences, in
 *     place (dgate written over dy)
 *   every kernel: the same bits for 1, 2, 3 and 5 threads (with chunks
 *     shrunk so that small problems have many); edges (no rows, zero
 *     rows, NaN, bad dtype)
 *
 * It reuses test_layer.c's operands of random layout (rop_*), included
 * with its main renamed. Build (tests/c/test_c_core.py does this):
 *   gcc -std=c11 -Wall -Wextra -Werror -O1 -g -pthread -Icsrc/core \
 *       tests/c/test_llama.c $(find csrc/core -name "*.c") -lm -o test_llama
 * Prints one line per failure and "N passed, M failed"; exit status 1 on
 * any failure.
 */
#undef main
#define main test_layer_main
#include "test_layer.c"
#undef main

static const attn_mat NONE = {NULL, NULL, 0, 0, ATTN_ST_NATIVE};

static attn_dtype rand_dt(void) { return irand(2) ? ATTN_F64 : ATTN_F32; }

/* ------------------------------------------------------------------------ */
/* rms norm                                                                  */
/* ------------------------------------------------------------------------ */
typedef struct {
    rop x, w;
    int has_w;
    double eps;
} rms_in;

static void rms_make(rms_in *in, attn_dtype dt, size_t R, size_t n)
{
    rop_make(&in->x, dt, R, n, 0);
    fill(&in->x, 0.3 + 3 * urand(), irand(4) == 0 ? 5.0 : 0.0);
    rop_make(&in->w, dt, R, n, 1);
    in->has_w = irand(3) != 0;
    if (in->has_w)
        fill(&in->w, 1.0, 1.0);
    static const double epss[] = {1e-6, 1e-5, 1e-12, 0.1};
    in->eps = epss[irand(4)];
}

static void rms_free(rms_in *in)
{
    rop_free(&in->x);
    rop_free(&in->w);
}

static long double rms_rstd(const rms_in *in, size_t r)
{
    long double s = 0;
    for (size_t j = 0; j < in->x.C; j++) {
        long double v = get(&in->x, r, j);
        s += v * v;
    }
    return 1.0L / sqrtl(s / in->x.C + in->eps);
}

static long double rms_w(const rms_in *in, size_t j)
{
    return in->has_w ? get(&in->w, 0, j) : 1.0L;
}

static attn_rms rms_problem(const rms_in *in, const rop *y)
{
    attn_rms p = {in->x.dt, in->x.R, in->x.C, y->m, in->x.m,
                  in->has_w ? in->w.m : NONE, in->eps};
    return p;
}

static void test_rms_forward(int count)
{
    static const size_t ns[] = {1, 2, 7, 8, 9, 31, 64, 100, 576, 1000};
    for (int it = 0; it < count; it++) {
        attn_dtype dt = rand_dt();
        size_t R = irand(30), n = ns[irand(sizeof ns / sizeof *ns)];
        rms_in in;
        rms_make(&in, dt, R, n);
        rop y;
        rop_make(&y, dt, R, n, 0);
        attn_rms p = rms_problem(&in, &y);
        attn_exec ex = exec_n(1 + (int)irand(3));
        CHECK(attn_rms_norm(&p, &ex) == ATTN_OK, "rms_norm status");
        double worst = 0;
        for (size_t r = 0; r < R; r++) {
            long double rstd = rms_rstd(&in, r);
            for (size_t j = 0; j < n; j++) {
                long double o = get(&in.x, r, j) * rstd * rms_w(&in, j);
                double e = fabs((double)(o - get(&y, r, j)))
                           / (1 + fabs((double)o));
                worst = e > worst ? e : worst;
            }
        }
        double tol = dt == ATTN_F32 ? 1.2e-7 : 1e-15;
        CHECK(worst <= tol, "rms_norm %s R=%zu n=%zu w=%d eps=%g: error %g",
              dt == ATTN_F32 ? "f32" : "f64", R, n, in.has_w, in.eps, worst);
        if (R) { /* in place: y is x itself */
            rop x2;
            rop_clone(&x2, &in.x, 0);
            attn_rms q = p;
            q.x = x2.m;
            q.y = x2.m;
            CHECK(attn_rms_norm(&q, &ex) == ATTN_OK
                  && same_bits(&x2, &y, R), "rms_norm in place differs");
            rop_free(&x2);
        }
        rop_free(&y);
        rms_free(&in);
    }
}

/* dx of row r, component i, by the Jacobian dy_j/dx_i (long double):
 *   y_j = x_j rstd w_j,  d rstd / d x_i = -rstd^3 x_i / n               */
static long double rms_dx_oracle(const rms_in *in, const rop *dy, size_t r,
                                 size_t i)
{
    size_t n = in->x.C;
    long double rstd = rms_rstd(in, r), xi = get(&in->x, r, i), s = 0;
    for (size_t j = 0; j < n; j++) {
        long double jac = (j == i ? rstd : 0)
                          - get(&in->x, r, j) * rstd * rstd * rstd * xi / n;
        s += get(dy, r, j) * rms_w(in, j) * jac;
    }
    return s;
}

static void test_rms_backward(int count)
{
    static const size_t ns[] = {1, 3, 8, 17, 64, 130};
    for (int it = 0; it < count; it++) {
        attn_dtype dt = rand_dt();
        size_t R = irand(20), n = ns[irand(sizeof ns / sizeof *ns)];
        rms_in in;
        rms_make(&in, dt, R, n);
        rop dy, dx, dw;
        rop_make(&dy, dt, R, n, 0);
        fill(&dy, 1.0, 0.0);
        rop_make(&dx, dt, R, n, 0);
        rop_make(&dw, dt, R, n, 1);
        int want_dw = irand(4) != 0;
        attn_rms_grad g = {dt, R, n, dx.m, want_dw ? dw.m : NONE, dy.m,
                           in.x.m, in.has_w ? in.w.m : NONE, in.eps};
        attn_exec ex = exec_n(1 + (int)irand(3));
        CHECK(attn_rms_norm_backward(&g, &ex) == ATTN_OK, "status");
        double worst = 0, worst_w = 0;
        for (size_t r = 0; r < R; r++)
            for (size_t i = 0; i < n; i++) {
                long double o = rms_dx_oracle(&in, &dy, r, i);
                double e = fabs((double)(o - get(&dx, r, i)))
                           / (1 + fabs((double)o));
                worst = e > worst ? e : worst;
            }
        for (size_t j = 0; want_dw && j < n; j++) {
            long double s = 0;
            for (size_t r = 0; r < R; r++)
                s += get(&dy, r, j) * get(&in.x, r, j) * rms_rstd(&in, r);
            double e = fabs((double)(s - get(&dw, 0, j))) / (1 + fabsl(s));
            worst_w = e > worst_w ? e : worst_w;
        }
        double tol = dt == ATTN_F32 ? 1e-6 : 1e-13;
        CHECK(worst <= tol && worst_w <= tol,
              "rms_norm_backward %s R=%zu n=%zu w=%d: dx error %g, dweight "
              "error %g", dt == ATTN_F32 ? "f32" : "f64", R, n, in.has_w,
              worst, worst_w);
        rop_free(&dy);
        rop_free(&dx);
        rop_free(&dw);
        rms_free(&in);
    }
}

/* dx (float64) against central differences of the forward kernel        */
static void test_rms_finite_differences(void)
{
    for (int it = 0; it < 6; it++) {
        size_t R = 1 + irand(3), n = 1 + irand(12);
        rms_in in;
        rms_make(&in, ATTN_F64, R, n);
        in.eps = 1e-3;
        rop dy, dx, y;
        rop_make(&dy, ATTN_F64, R, n, 0);
        fill(&dy, 1.0, 0.0);
        rop_make(&dx, ATTN_F64, R, n, 0);
        rop_make(&y, ATTN_F64, R, n, 0);
        attn_rms_grad g = {ATTN_F64, R, n, dx.m, NONE, dy.m, in.x.m,
                           in.has_w ? in.w.m : NONE, in.eps};
        CHECK(attn_rms_norm_backward(&g, NULL) == ATTN_OK, "status");
        attn_rms p = rms_problem(&in, &y);
        double worst = 0, h = 1e-6;
        for (size_t r = 0; r < R; r++)
            for (size_t i = 0; i < n; i++) {
                double x0 = get(&in.x, r, i), f[2];
                for (int k = 0; k < 2; k++) {
                    set(&in.x, r, i, x0 + (k ? -h : h));
                    attn_rms_norm(&p, NULL);
                    f[k] = 0;
                    for (size_t j = 0; j < n; j++)
                        f[k] += get(&dy, r, j) * get(&y, r, j);
                }
                set(&in.x, r, i, x0);
                double num = (f[0] - f[1]) / (2 * h);
                double e = fabs(num - get(&dx, r, i)) / (1 + fabs(num));
                worst = e > worst ? e : worst;
            }
        CHECK(worst < 1e-6, "rms_norm_backward vs differences: %g", worst);
        rop_free(&dy);
        rop_free(&dx);
        rop_free(&y);
        rms_free(&in);
    }
}

/* ------------------------------------------------------------------------ */
/* silu / swiglu                                                             */
/* ------------------------------------------------------------------------ */
static long double sig_l(long double g) { return 1.0L / (1.0L + expl(-g)); }

static void test_glu(int count)
{
    static const size_t ns[] = {1, 5, 8, 33, 256, 1536};
    for (int it = 0; it < count; it++) {
        attn_dtype dt = rand_dt();
        size_t R = irand(12), n = ns[irand(sizeof ns / sizeof *ns)];
        int has_up = irand(4) != 0;
        rop g, u, dy, y, dg, du;
        rop_make(&g, dt, R, n, 0);
        fill(&g, 3.0, 0.0);
        rop_make(&u, dt, R, n, 0);
        fill(&u, 1.0, 0.0);
        rop_make(&dy, dt, R, n, 0);
        fill(&dy, 1.0, 0.0);
        rop_make(&y, dt, R, n, 0);
        rop_make(&dg, dt, R, n, 0);
        rop_make(&du, dt, R, n, 0);
        attn_mat mu = has_up ? u.m : NONE;
        attn_exec ex = exec_n(1 + (int)irand(3));
        CHECK(ca_swiglu(dt, R, n, y.m, g.m, mu, &ex) == ATTN_OK, "status");
        CHECK(ca_swiglu_backward(dt, R, n, dg.m, has_up ? du.m : NONE,
                                   dy.m, g.m, mu, &ex) == ATTN_OK, "status");
        double worst[3] = {0, 0, 0};
        for (size_t r = 0; r < R; r++)
            for (size_t j = 0; j < n; j++) {
                long double gj = get(&g, r, j), s = sig_l(gj);
                long double uj = has_up ? get(&u, r, j) : 1.0L;
                long double d = get(&dy, r, j);
                long double o[3] = {gj * s * uj,
                                    d * uj * s * (1 + gj * (1 - s)),
                                    d * gj * s};
                double v[3] = {get(&y, r, j), get(&dg, r, j),
                               has_up ? get(&du, r, j) : (double)o[2]};
                for (int k = 0; k < 3; k++) {
                    double e = fabs((double)(o[k] - v[k]))
                               / (1 + fabs((double)o[k]));
                    worst[k] = e > worst[k] ? e : worst[k];
                }
            }
        double tol = dt == ATTN_F32 ? 1e-6 : 1e-14;
        CHECK(worst[0] <= tol && worst[1] <= tol && worst[2] <= tol,
              "swiglu %s up=%d R=%zu n=%zu: errors y %g dgate %g dup %g",
              dt == ATTN_F32 ? "f32" : "f64", has_up, R, n, worst[0],
              worst[1], worst[2]);
        if (R) { /* in place: dgate over dy, y over gate */
            rop d2, g2;
            rop_clone(&d2, &dy, 0);
            rop_clone(&g2, &g, 0);
            CHECK(ca_swiglu_backward(dt, R, n, d2.m, NONE, d2.m, g.m, mu,
                                       &ex) == ATTN_OK
                  && same_bits(&d2, &dg, R), "swiglu_backward in place");
            CHECK(ca_swiglu(dt, R, n, g2.m, g2.m, mu, &ex) == ATTN_OK
                  && same_bits(&g2, &y, R), "swiglu in place");
            rop_free(&d2);
            rop_free(&g2);
        }
        rop_free(&g);
        rop_free(&u);
        rop_free(&dy);
        rop_free(&y);
        rop_free(&dg);
        rop_free(&du);
    }
}

/* silu' (float64) against central differences of the forward kernel    */
static void test_silu_finite_differences(void)
{
    double worst = 0, h = 1e-6;
    for (int i = 0; i < 200; i++) {
        double g = (urand() - 0.5) * 30, gs[2] = {g + h, g - h}, y[2], d;
        double one = 1;
        attn_mat mg = {gs, NULL, 0, 1, ATTN_ST_NATIVE}, my = {y, NULL, 0, 1, ATTN_ST_NATIVE};
        attn_mat m1 = {&one, NULL, 0, 1, ATTN_ST_NATIVE}, mgv = {&g, NULL, 0, 1, ATTN_ST_NATIVE};
        attn_mat md = {&d, NULL, 0, 1, ATTN_ST_NATIVE};
        CHECK(ca_swiglu(ATTN_F64, 1, 2, my, mg, NONE, NULL) == ATTN_OK
              && ca_swiglu_backward(ATTN_F64, 1, 1, md, NONE, m1, mgv,
                                      NONE, NULL) == ATTN_OK, "status");
        double num = (y[0] - y[1]) / (2 * h);
        double e = fabs(num - d) / (1 + fabs(num));
        worst = e > worst ? e : worst;
    }
    CHECK(worst < 1e-8, "silu' vs differences: %g", worst);
}

/* ------------------------------------------------------------------------ */
/* thread counts: the same bits (many small chunks)                         */
/* ------------------------------------------------------------------------ */
static void test_llama_threads(void)
{
    size_t chunk_saved = attn__rows_chunk_elems;
    double work_saved = attn__rows_min_work;
    attn__rows_min_work = 1;
    static const int nts[] = {1, 2, 3, 5};
    for (int it = 0; it < 12; it++) {
        attn__rows_chunk_elems = 1 + irand(300);
        attn_dtype dt = it % 2 ? ATTN_F64 : ATTN_F32;
        size_t R = 50 + irand(200), n = 1 + irand(70);
        rms_in in;
        rms_make(&in, dt, R, n);
        rop dy, u, out[4][5];
        rop_make(&dy, dt, R, n, 0);
        fill(&dy, 1.0, 0.0);
        rop_make(&u, dt, R, n, 0);
        fill(&u, 1.0, 0.0);
        for (int k = 0; k < 4; k++) {
            attn_exec ex = exec_n(nts[k]);
            for (int o = 0; o < 5; o++)
                rop_make(&out[k][o], dt, R, n, o == 2);
            attn_rms p = rms_problem(&in, &out[k][0]);
            attn_rms_grad g = {dt, R, n, out[k][1].m, out[k][2].m, dy.m,
                               in.x.m, in.has_w ? in.w.m : NONE, in.eps};
            CHECK(attn_rms_norm(&p, &ex) == ATTN_OK
                  && attn_rms_norm_backward(&g, &ex) == ATTN_OK
                  && ca_swiglu(dt, R, n, out[k][3].m, in.x.m, u.m, &ex)
                         == ATTN_OK
                  && ca_swiglu_backward(dt, R, n, out[k][4].m, NONE, dy.m,
                                          in.x.m, u.m, &ex) == ATTN_OK,
                  "status");
        }
        for (int k = 1; k < 4; k++)
            for (int o = 0; o < 5; o++)
                CHECK(same_bits(&out[0][o], &out[k][o], o == 2 ? 1 : R),
                      "output %d: %d threads differ (chunk %zu)", o, nts[k],
                      attn__rows_chunk_elems);
        for (int k = 0; k < 4; k++)
            for (int o = 0; o < 5; o++)
                rop_free(&out[k][o]);
        rop_free(&dy);
        rop_free(&u);
        rms_free(&in);
    }
    attn__rows_chunk_elems = chunk_saved;
    attn__rows_min_work = work_saved;
}

/* ------------------------------------------------------------------------ */
/* edges                                                                    */
/* ------------------------------------------------------------------------ */
static void test_llama_edges(void)
{
    /* no rows: dweight written as zeros */
    double dw[3] = {7, 7, 7}, one = 1;
    attn_mat mdw = {dw, NULL, 0, 1, ATTN_ST_NATIVE}, m1 = {&one, NULL, 0, 1, ATTN_ST_NATIVE};
    attn_rms_grad g = {ATTN_F64, 0, 3, m1, mdw, m1, m1, NONE, 1e-6};
    CHECK(attn_rms_norm_backward(&g, NULL) == ATTN_OK && dw[0] == 0
          && dw[2] == 0, "no rows: dweight %g", dw[0]);
    /* a zero row: y = 0, dx = dy / sqrt(eps) */
    double x[4] = {0, 0, 0, 0}, y[4], dy[4] = {1, 2, 3, 6}, dx[4];
    attn_mat mx = {x, NULL, 0, 1, ATTN_ST_NATIVE}, my = {y, NULL, 0, 1, ATTN_ST_NATIVE};
    attn_mat mdy = {dy, NULL, 0, 1, ATTN_ST_NATIVE}, mdx = {dx, NULL, 0, 1, ATTN_ST_NATIVE};
    attn_rms p = {ATTN_F64, 1, 4, my, mx, NONE, 0.25};
    attn_rms_grad q = {ATTN_F64, 1, 4, mdx, NONE, mdy, mx, NONE, 0.25};
    CHECK(attn_rms_norm(&p, NULL) == ATTN_OK && y[0] == 0 && y[3] == 0,
          "zero row: y = %g", y[0]);
    CHECK(attn_rms_norm_backward(&q, NULL) == ATTN_OK && dx[0] == 2
          && dx[3] == 12, "zero row: dx %g %g", dx[0], dx[3]);
    /* NaN in a row stays in that row */
    double xn[6] = {1, NAN, 2, 1, 2, 3}, yn[6];
    attn_mat mxn = {xn, NULL, 3, 1, ATTN_ST_NATIVE}, myn = {yn, NULL, 3, 1, ATTN_ST_NATIVE};
    attn_rms pn = {ATTN_F64, 2, 3, myn, mxn, NONE, 1e-6};
    CHECK(attn_rms_norm(&pn, NULL) == ATTN_OK && isnan(yn[0]) && isnan(yn[2])
          && !isnan(yn[3]) && !isnan(yn[5]), "NaN row");
    /* silu at the ends: -0 far left, x far right, NaN at -inf (PyTorch) */
    float gs[4] = {-1000.0f, 1000.0f, -INFINITY, 0.0f}, ys[4];
    attn_mat mgs = {gs, NULL, 0, 1, ATTN_ST_NATIVE}, mys = {ys, NULL, 0, 1, ATTN_ST_NATIVE};
    CHECK(ca_swiglu(ATTN_F32, 1, 4, mys, mgs, NONE, NULL) == ATTN_OK
          && ys[0] == 0 && signbit(ys[0]) && ys[1] == 1000.0f
          && isnan(ys[2]) && ys[3] == 0, "silu ends: %g %g %g %g", ys[0],
          ys[1], ys[2], ys[3]);
    CHECK(attn_rms_norm(NULL, NULL) == ATTN_EINVAL
          && attn_rms_norm_backward(NULL, NULL) == ATTN_EINVAL
          && ca_swiglu((attn_dtype)7, 1, 4, mys, mgs, NONE, NULL)
                 == ATTN_EINVAL
          && ca_swiglu_backward((attn_dtype)7, 1, 4, mys, NONE, mys, mgs,
                                  NONE, NULL) == ATTN_EINVAL,
          "bad arguments accepted");
}

int main(int argc, char **argv)
{
    int count = argc > 1 ? atoi(argv[1]) : 8;
    uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 10) : 2025;
    rng_state = seed;
    clock_t t0 = clock();
    test_llama_edges();
    test_rms_forward(count * 4);
    test_rms_backward(count * 2);
    test_rms_finite_differences();
    test_glu(count * 4);
    test_silu_finite_differences();
    test_llama_threads();
    return check_summary(t0);
}
