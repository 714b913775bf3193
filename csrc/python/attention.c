/*
 * python/attention.c -- bindings of the attention family:
 *   sdpa(Q, K, V, mask, bias, causal, scale, fully_masked, out,
 *        weights_out, want[, fname])
 * behind attention, scaled_dot_product_attention and explain.
 *
 * core_sdpa runs the steps below in order on one sdpa_call; each step
 * returns 0, or -1 with an exception set, and sdpa_release() frees what
 * the steps took.
 *   1. sdpa_header        want, the function's name, causal, fully_masked
 *   2. sdpa_inputs        Q, K, V converted to their common compute type
 *   3. sdpa_core_dims     E and S agree between Q, K and V
 *   4. sdpa_mask_bias     mask (-> bool) and bias (-> compute type)
 *   5. sdpa_batch         the leading dims broadcast (NumPy rules)
 *   6. sdpa_results       out / weights / scores allocated or checked
 *   7. sdpa_problem       strides, batch offset tables, the attn_problem
 *   8. sdpa_compute       attn_sdpa with the GIL released
 *   9. sdpa_deliver       temporaries copied back, the result built
 */
#include "args.h" /* first: Python.h before any system header */
#include <math.h>
#include <string.h>

/* Operands of one sdpa call, in the order of the offset tables. */
enum { OP_Q, OP_K, OP_V, OP_MASK, OP_BIAS, OP_OUT, OP_W, OP_SC, N_OPS };
static const char *const op_names[N_OPS] = {"Q", "K", "V", "mask", "bias",
                                            "out", "weights_out", "scores"};

typedef struct {
    const char *fname;
    long want;                     /* 0 out, 1 + weights, 2 + scores      */
    int typenum;                   /* NPY_FLOAT or NPY_DOUBLE             */
    PyArrayObject *arr[N_OPS];     /* converted operands (owned)          */
    PyArrayObject *raw[5];         /* inputs in their own dtype (owned)   */
    PyArrayObject *user_out, *user_w;
    int tmp_out, tmp_w;
    npy_intp L, S, E, Ev;
    int bnd;                       /* number of broadcast batch dims      */
    npy_intp bshape[NPY_MAXDIMS];
    size_t B;
    int busy;                      /* some result has elements to compute */
    ptrdiff_t *offs;
    attn_problem p;
} sdpa_call;

static int sdpa_header(sdpa_call *c, PyObject *const *args, Py_ssize_t nargs)
{
    static const char *const default_names[3] = {
        "attention", "scaled_dot_product_attention", "explain"};
    if (nargs != 11 && nargs != 12) {
        PyErr_SetString(PyExc_TypeError, "sdpa() takes 11 or 12 arguments");
        return -1;
    }
    c->want = PyLong_AsLong(args[10]);
    if (c->want == -1 && PyErr_Occurred())
        return -1;
    if (c->want < 0 || c->want > 2) {
        PyErr_SetString(PyExc_ValueError, "sdpa(): want must be 0, 1 or 2");
        return -1;
    }
    c->fname = default_names[c->want];
    if (nargs == 12 && !(c->fname = PyUnicode_AsUTF8(args[11])))
        return -1;
    if (parse_causal(args[5], c->fname, &c->p.causal) < 0 ||
        parse_fully_masked(args[7], c->fname, &c->p.fully_masked) < 0)
        return -1;
    return 0;
}

static int sdpa_inputs(sdpa_call *c, PyObject *const *args)
{
    const char *fname = c->fname;
    for (int op = OP_Q; op <= OP_V; op++) {
        if (!(c->raw[op] = as_real_array(args[op], fname, op_names[op])))
            return -1;
        if (PyArray_NDIM(c->raw[op]) < 2) {
            PyObject *s = shape_of(c->raw[op]);
            if (s)
                PyErr_Format(PyExc_ValueError,
                             "%s: %s must have at least 2 dimensions "
                             "(..., %s, %s), got shape %R",
                             fname, op_names[op], op == OP_Q ? "L" : "S",
                             op == OP_V ? "Ev" : "E", s);
            Py_XDECREF(s);
            return -1;
        }
    }
    PyArray_Descr *rt = PyArray_ResultType(3, c->raw, 0, NULL);
    if (!rt)
        return -1;
    c->typenum = compute_type_of(rt);
    Py_DECREF(rt);
    if (c->typenum < 0) {
        PyErr_Format(PyExc_TypeError, "%s: Q, K, V have no common real "
                     "dtype", fname);
        return -1;
    }
    c->p.dtype = dtype_of(c->typenum);
    for (int op = OP_Q; op <= OP_V; op++)
        if (!(c->arr[op] = as_type(c->raw[op], c->typenum, fname,
                                   op_names[op])))
            return -1;
    return 0;
}

static int sdpa_core_dims(sdpa_call *c)
{
    PyArrayObject *Q = c->arr[OP_Q], *K = c->arr[OP_K], *V = c->arr[OP_V];
    const int ndq = PyArray_NDIM(Q), ndk = PyArray_NDIM(K),
              ndv = PyArray_NDIM(V);
    c->L = PyArray_DIM(Q, ndq - 2);
    c->E = PyArray_DIM(Q, ndq - 1);
    c->S = PyArray_DIM(K, ndk - 2);
    c->Ev = PyArray_DIM(V, ndv - 1);
    char msg[200];
    if (PyArray_DIM(K, ndk - 1) != c->E) {
        PyOS_snprintf(msg, sizeof msg, "%s: K has %zd features but Q has %zd",
                      c->fname, (Py_ssize_t)PyArray_DIM(K, ndk - 1),
                      (Py_ssize_t)c->E);
        err_shapes2(PyExc_ValueError, msg, "Q", Q, "K", K);
        return -1;
    }
    if (PyArray_DIM(V, ndv - 2) != c->S) {
        PyOS_snprintf(msg, sizeof msg,
                      "%s: V has %zd positions but K has %zd", c->fname,
                      (Py_ssize_t)PyArray_DIM(V, ndv - 2), (Py_ssize_t)c->S);
        err_shapes2(PyExc_ValueError, msg, "K", K, "V", V);
        return -1;
    }
    return 0;
}

/* an (S,) or scalar mask/bias as (1, S) / (1, 1): prepend unit dims */
static PyArrayObject *at_least_2d(PyArrayObject *c)
{
    if (PyArray_NDIM(c) >= 2)
        return c;
    npy_intp dims[2] = {1, 1};
    if (PyArray_NDIM(c) == 1)
        dims[1] = PyArray_DIM(c, 0);
    PyArray_Dims nd2 = {dims, 2};
    PyArrayObject *r = (PyArrayObject *)PyArray_Newshape(c, &nd2, NPY_CORDER);
    Py_DECREF(c);
    return r;
}

static int sdpa_mask_bias(sdpa_call *c, PyObject *const *args)
{
    for (int op = OP_MASK; op <= OP_BIAS; op++) {
        PyObject *o = args[op == OP_MASK ? 3 : 4];
        if (o == Py_None)
            continue;
        if (!(c->raw[op] = as_real_array(o, c->fname, op_names[op])))
            return -1;
        PyArrayObject *a = as_type(c->raw[op],
                                   op == OP_MASK ? NPY_BOOL : c->typenum,
                                   c->fname, op_names[op]);
        if (!a || !(a = at_least_2d(a)))
            return -1;
        c->arr[op] = a;
        int nd = PyArray_NDIM(a);
        npy_intp ml = PyArray_DIM(a, nd - 2), ms = PyArray_DIM(a, nd - 1);
        if ((ml != 1 && ml != c->L) || (ms != 1 && ms != c->S)) {
            char msg[240];
            PyOS_snprintf(msg, sizeof msg,
                          "%s: %s of shape (..., %zd, %zd) does not broadcast "
                          "to the scores' (..., L, S) = (..., %zd, %zd)",
                          c->fname, op_names[op], (Py_ssize_t)ml,
                          (Py_ssize_t)ms, (Py_ssize_t)c->L, (Py_ssize_t)c->S);
            err_shapes2(PyExc_ValueError, msg, op_names[op], c->raw[op], "Q",
                        c->arr[OP_Q]);
            return -1;
        }
    }
    return 0;
}

static int sdpa_batch(sdpa_call *c)
{
    int nb[N_OPS] = {0};
    for (int op = OP_Q; op <= OP_BIAS; op++)
        nb[op] = c->arr[op] ? PyArray_NDIM(c->arr[op]) - 2 : 0;
    if (broadcast_batch(c->arr, nb, OP_BIAS + 1, op_names, c->fname, &c->bnd,
                        c->bshape) < 0)
        return -1;
    c->B = 1;
    for (int d = 0; d < c->bnd; d++) {
        size_t n = (size_t)c->bshape[d];
        if (n != 0 && c->B > (size_t)NPY_MAX_INTP / n) {
            PyErr_Format(PyExc_ValueError, "%s: batch size overflows",
                         c->fname);
            return -1;
        }
        c->B *= n;
    }
    return 0;
}

/* out= and weights_out= must not be the same memory */
static int check_out_w_disjoint(sdpa_call *c)
{
    if (!may_overlap(c->user_out, c->user_w)) /* bounds apart: fine */
        return 0;
    PyObject *np = PyImport_ImportModule("numpy");
    PyObject *r = np ? PyObject_CallMethod(np, "shares_memory", "OO",
                                           c->user_out, c->user_w)
                     : NULL;
    Py_XDECREF(np);
    if (!r)
        return -1;
    int shared = PyObject_IsTrue(r);
    Py_DECREF(r);
    if (shared < 0)
        return -1;
    if (shared) {
        PyErr_Format(PyExc_ValueError, "%s: out and weights_out share memory",
                     c->fname);
        return -1;
    }
    return 0;
}

/* results: out (..., L, Ev), weights/scores (..., L, S) */
static int sdpa_results(sdpa_call *c, PyObject *const *args)
{
    const int nd = c->bnd + 2;
    npy_intp odims[NPY_MAXDIMS], wdims[NPY_MAXDIMS];
    for (int d = 0; d < c->bnd; d++)
        odims[d] = wdims[d] = c->bshape[d];
    odims[c->bnd] = wdims[c->bnd] = c->L;
    odims[c->bnd + 1] = c->Ev;
    wdims[c->bnd + 1] = c->S;
    PyArrayObject *ins[6] = {c->arr[OP_Q], c->arr[OP_K], c->arr[OP_V],
                             c->arr[OP_MASK], c->arr[OP_BIAS], NULL};
    if (args[8] != Py_None) {
        if (!(c->user_out = check_out(args[8], c->fname, "out", nd, odims,
                                      c->typenum)) ||
            !(c->arr[OP_OUT] = dest_for(c->user_out, ins, 5, &c->tmp_out)))
            return -1;
    }
    else if (!(c->arr[OP_OUT] = new_result(nd, odims, c->typenum, c->fname,
                                           "the output")))
        return -1;
    if (c->want >= 1) {
        ins[5] = c->arr[OP_OUT];
        if (args[9] != Py_None) {
            if (!(c->user_w = check_out(args[9], c->fname, "weights_out", nd,
                                        wdims, c->typenum)) ||
                !(c->arr[OP_W] = dest_for(c->user_w, ins, 6, &c->tmp_w)))
                return -1;
        }
        else if (!(c->arr[OP_W] = new_result(nd, wdims, c->typenum, c->fname,
                                             "the weights")))
            return -1;
    }
    if (c->want == 2 && !(c->arr[OP_SC] = new_result(nd, wdims, c->typenum,
                                                     c->fname, "the scores")))
        return -1;
    return check_out_w_disjoint(c);
}

static int sdpa_scale(sdpa_call *c, PyObject *scale)
{
    if (scale == Py_None) {
        c->p.scale = c->E > 0 ? 1.0 / sqrt((double)c->E) : 1.0;
        return 0;
    }
    c->p.scale = PyFloat_AsDouble(scale);
    if (c->p.scale == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError,
                     "%s: scale must be a real number or None, got %s",
                     c->fname, Py_TYPE(scale)->tp_name);
        return -1;
    }
    return 0;
}

/* strides in elements, the batch offset tables, and the problem */
static int sdpa_problem(sdpa_call *c, PyObject *const *args)
{
    ptrdiff_t st[N_OPS][NPY_MAXDIMS];
    ptrdiff_t bst[N_OPS][NPY_MAXDIMS];
    memset(bst, 0, sizeof bst); /* absent operands: offset 0 */
    for (int op = 0; op < N_OPS; op++) {
        if (!c->arr[op])
            continue;
        if (ensure_elem_strides(&c->arr[op], st[op]) < 0)
            return -1;
        int lead = PyArray_NDIM(c->arr[op]) - 2;
        for (int d = 0; d < c->bnd; d++) {
            int k = d - (c->bnd - lead);
            bst[op][d] = (k >= 0 && PyArray_DIM(c->arr[op], k) != 1)
                             ? st[op][k] : 0;
        }
    }
    /* work exists only if some result has elements (an empty output with
     * S == 0 rows still has nothing to write) */
    c->busy = c->B > 0 && c->L > 0 &&
              (c->Ev > 0 || (c->want >= 1 && c->S > 0) ||
               c->p.fully_masked == ATTN_FM_RAISE);
    const ptrdiff_t *boff[N_OPS] = {NULL};
    if (c->busy && c->B > 1) {
        if (!(c->offs = alloc_offsets(N_OPS, c->B)))
            return -1;
        fill_offsets(c->bnd, c->bshape, N_OPS, bst, c->offs, c->B);
        for (int op = 0; op < N_OPS; op++)
            boff[op] = c->offs + (size_t)op * c->B;
    }
    attn_problem *p = &c->p;
    p->B = c->B;
    p->L = (size_t)c->L;
    p->S = (size_t)c->S;
    p->E = (size_t)c->E;
    p->Ev = (size_t)c->Ev;
    attn_mat *mats[N_OPS] = {&p->q, &p->k, &p->v, &p->mask,
                             &p->bias, &p->out, &p->weights, &p->scores};
    for (int op = 0; op < N_OPS; op++) {
        PyArrayObject *a = c->arr[op];
        *mats[op] = mat_of(a, boff[op], a ? st[op] : NULL,
                           a ? PyArray_NDIM(a) : 2);
    }
    return sdpa_scale(c, args[6]);
}

/* the (b, row) of a fully masked row under fully_masked="raise" */
static void raise_fully_masked(sdpa_call *c)
{
    npy_intp idx[NPY_MAXDIMS];
    size_t rem = c->p.bad_b;
    for (int d = c->bnd - 1; d >= 0; d--) {
        idx[d] = (npy_intp)(rem % (size_t)c->bshape[d]);
        rem /= (size_t)c->bshape[d];
    }
    PyObject *t = tuple_of(c->bnd, idx);
    if (!t)
        return;
    if (c->bnd)
        PyErr_Format(PyExc_ValueError,
                     "%s: query row %zu of batch index %R may attend to no "
                     "key (fully_masked='raise')", c->fname, c->p.bad_row, t);
    else
        PyErr_Format(PyExc_ValueError,
                     "%s: query row %zu may attend to no key "
                     "(fully_masked='raise')", c->fname, c->p.bad_row);
    Py_DECREF(t);
}

static int sdpa_compute(sdpa_call *c)
{
    if (!c->busy)
        return 0;
    ap_nogil g;
    ap_nogil_begin(&g);
    attn_status status = attn_sdpa(&c->p, &g.ex);
    ap_nogil_end(&g);
    if (status == ATTN_EFULLYMASKED) {
        raise_fully_masked(c);
        return -1;
    }
    return raise_status(status, c->fname);
}

static PyObject *sdpa_deliver(sdpa_call *c)
{
    if (c->tmp_out && PyArray_CopyInto(c->user_out, c->arr[OP_OUT]) < 0)
        return NULL;
    if (c->tmp_w && PyArray_CopyInto(c->user_w, c->arr[OP_W]) < 0)
        return NULL;
    PyObject *o = c->user_out ? (PyObject *)c->user_out
                              : (PyObject *)c->arr[OP_OUT];
    PyObject *w = c->user_w ? (PyObject *)c->user_w : (PyObject *)c->arr[OP_W];
    if (c->want == 0) {
        Py_INCREF(o);
        return o;
    }
    if (c->want == 1)
        return PyTuple_Pack(2, o, w);
    return PyTuple_Pack(3, o, w, (PyObject *)c->arr[OP_SC]);
}

static void sdpa_release(sdpa_call *c)
{
    PyMem_RawFree(c->offs);
    for (int op = 0; op < N_OPS; op++)
        Py_XDECREF(c->arr[op]);
    for (int i = 0; i < 5; i++)
        Py_XDECREF(c->raw[i]);
    Py_XDECREF(c->user_out);
    Py_XDECREF(c->user_w);
}

static PyObject *core_sdpa(PyObject *Py_UNUSED(mod), PyObject *const *args,
                           Py_ssize_t nargs)
{
    sdpa_call c;
    memset(&c, 0, sizeof c);
    PyObject *result = NULL;
    if (sdpa_header(&c, args, nargs) == 0 && sdpa_inputs(&c, args) == 0 &&
        sdpa_core_dims(&c) == 0 && sdpa_mask_bias(&c, args) == 0 &&
        sdpa_batch(&c) == 0 && sdpa_results(&c, args) == 0 &&
        sdpa_problem(&c, args) == 0 && sdpa_compute(&c) == 0)
        result = sdpa_deliver(&c);
    sdpa_release(&c);
    return result;
}

PyMethodDef ap_attention_methods[] = {
    {"sdpa", AP_FASTCALL(core_sdpa), METH_FASTCALL,
     "sdpa(Q, K, V, mask, bias, causal, scale, fully_masked, out, "
     "weights_out, want[, fname])\n\nScaled dot-product attention in C. "
     "want=0 -> out; 1 -> (out, weights); 2 -> (out, weights, raw scores)."},
    {NULL, NULL, 0, NULL}};
