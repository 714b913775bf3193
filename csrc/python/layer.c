/*
 * python/layer.c -- bindings of the layer family: layer_norm (with a fused
 * residual and shift), bias + activation (feed_forward's hidden layer,
 * gelu), rms_norm, silu / swiglu, and their backward passes.
 *
 * Every function here works on "rows": the last axis of x (n features) is
 * the row, every leading axis is a row index. Operands are either rows of
 * exactly x's shape or vectors of shape (n,) shared by every row
 * (weight, bias, shift). The result dtype is NumPy's result type of the
 * inputs (result_descr, args.h): float32 and float64 as they are, the
 * rest float64, and float16 / bfloat16 data kept: such an operand is
 * read in 16 bits by the core under a float32 call, and a 16-bit result
 * is the float32 result rounded once. A gradient takes the dtype of the
 * input it belongs to when that input is 16-bit (dx of a float16 x is
 * float16 whatever dy is), else the result dtype.
 */
#include "args.h"

#define LC_MAX 8

typedef struct {
    const char *fname;
    int typenum;                 /* the compute type: NPY_FLOAT/DOUBLE     */
    PyArray_Descr *rd;           /* the result dtype                       */
    int nd;                      /* x's dimensions (>= 1)                  */
    npy_intp dims[NPY_MAXDIMS];  /* x's shape: every row operand's         */
    size_t nrows, n;
    int nops, nin;               /* operands; the first nin are inputs     */
    const char *name[LC_MAX];
    int vec[LC_MAX];             /* a vector (n,) instead of rows          */
    PyArrayObject *raw[LC_MAX], *arr[LC_MAX];
    PyArrayObject *user[LC_MAX]; /* out= array of an output, or NULL       */
    int is_tmp[LC_MAX];
    ptrdiff_t *offs;
    attn_mat mat[LC_MAX];
} lcall;

static void lc_free(lcall *c)
{
    for (int op = 0; op < c->nops; op++) {
        Py_XDECREF(c->raw[op]);
        Py_XDECREF(c->arr[op]);
        Py_XDECREF(c->user[op]);
    }
    PyMem_RawFree(c->offs);
    Py_XDECREF(c->rd);
}

/* an input operand (None: absent); operand 0 is x, whose shape rules   */
static int lc_input(lcall *c, PyObject *obj, const char *name, int vec)
{
    int op = c->nops++;
    c->nin = c->nops;
    c->name[op] = name;
    c->vec[op] = vec;
    if (obj == Py_None)
        return 0;
    return (c->raw[op] = as_array16(obj, c->fname, name)) ? 0 : -1;
}

/* an input that may not be None (x, dy, gate) */
static int lc_required(lcall *c, PyObject *obj, const char *name)
{
    if (obj == Py_None) {
        PyErr_Format(PyExc_TypeError, "%s: %s must be an array, not None",
                     c->fname, name);
        return -1;
    }
    return lc_input(c, obj, name, 0);
}

/* the compute dtype of the inputs, each converted to it, shapes checked */
static int lc_inputs_done(lcall *c)
{
    PyArrayObject *present[LC_MAX];
    int np = 0;
    for (int op = 0; op < c->nin; op++)
        if (c->raw[op])
            present[np++] = c->raw[op];
    if (!(c->rd = result_descr(np, present)))
        return -1;
    c->typenum = compute_type16(c->rd);
    PyArrayObject *x = c->raw[0];
    c->nd = PyArray_NDIM(x);
    if (c->nd < 1) {
        PyErr_Format(PyExc_ValueError, "%s: %s must have at least 1 "
                     "dimension (..., features), got shape ()", c->fname,
                     c->name[0]);
        return -1;
    }
    for (int d = 0; d < c->nd; d++)
        c->dims[d] = PyArray_DIM(x, d);
    c->n = (size_t)c->dims[c->nd - 1];
    c->nrows = 1;
    for (int d = 0; d < c->nd - 1; d++)
        c->nrows *= (size_t)c->dims[d];
    char msg[240];
    for (int op = 0; op < c->nin; op++) {
        PyArrayObject *a = c->raw[op];
        if (!a)
            continue;
        int ok = c->vec[op] ? PyArray_NDIM(a) == 1
                                  && (size_t)PyArray_DIM(a, 0) == c->n
                            /* ndim first: CompareLists reads nd dims */
                            : PyArray_NDIM(a) == c->nd
                                  && PyArray_CompareLists(PyArray_DIMS(a),
                                                          c->dims, c->nd);
        if (!ok) {
            if (c->vec[op])
                PyOS_snprintf(msg, sizeof msg, "%s: %s must have shape "
                              "(%zd,), the features of %s", c->fname,
                              c->name[op], (Py_ssize_t)c->n, c->name[0]);
            else
                PyOS_snprintf(msg, sizeof msg, "%s: %s must have the shape "
                              "of %s", c->fname, c->name[op], c->name[0]);
            err_shapes2(PyExc_ValueError, msg, c->name[op], a, c->name[0], x);
            return -1;
        }
        if (!(c->arr[op] = as_storage(a, c->typenum, c->fname,
                                      c->name[op])))
            return -1;
    }
    return 0;
}

/* an output: a new array, or the user's out= (`out` not None; the
 * output's dtype or a wider float). It may be exactly the input `alias`
 * (same data and strides: in place); any other overlap with an input goes
 * through a temporary. Not `wanted`: the slot stays empty (the kernel gets
 * data NULL). own >= 0: a gradient, of input `own`'s dtype when that is
 * 16-bit (else the result dtype).                                        */
static int lc_output(lcall *c, PyObject *out, const char *name, int vec,
                     int alias, int wanted, int own)
{
    int op = c->nops++;
    c->name[op] = name;
    c->vec[op] = vec;
    if (!wanted)
        return 0;
    npy_intp vdim = (npy_intp)c->n;
    int nd = vec ? 1 : c->nd;
    const npy_intp *dims = vec ? &vdim : c->dims;
    PyArray_Descr *d = c->rd;
    if (own >= 0 && c->raw[own] && c->typenum == NPY_FLOAT
        && is_16bit(PyArray_DESCR(c->raw[own])))
        d = PyArray_DESCR(c->arr[own]); /* native byte order */
    if (out == Py_None)
        return (c->arr[op] = new_result_descr(nd, dims, d, c->fname,
                                              name)) ? 0 : -1;
    if (!(c->user[op] = check_out_wide(out, c->fname, name, nd, dims, d)))
        return -1;
    PyArrayObject *u = c->user[op], *ins[LC_MAX];
    int nins = 0;
    for (int k = 0; k < c->nin; k++) {
        PyArrayObject *a = c->arr[k];
        int same = a && k == alias && PyArray_DATA(a) == PyArray_DATA(u)
                   && PyArray_NDIM(a) == nd;
        for (int d = 0; same && d < nd; d++)
            same = PyArray_DIM(a, d) <= 1
                   || PyArray_STRIDE(a, d) == PyArray_STRIDE(u, d);
        if (a && !same)
            ins[nins++] = a;
    }
    return (c->arr[op] = dest_for_call(u, ins, nins, c->typenum,
                                       &c->is_tmp[op])) ? 0 : -1;
}

/* element strides, the rows' offset tables, and the attn_mat of each    */
static int lc_mats(lcall *c)
{
    ptrdiff_t st[LC_MAX][NPY_MAXDIMS];
    ptrdiff_t rst[LC_MAX][NPY_MAXDIMS];
    int rowop[LC_MAX], nrow = 0;
    for (int op = 0; op < c->nops; op++) {
        c->mat[op] = (attn_mat){NULL, NULL, 0, 0, ATTN_ST_NATIVE};
        if (!c->arr[op])
            continue;
        if (ensure_elem_strides(&c->arr[op], st[op]) < 0)
            return -1;
        if (c->vec[op]) {
            c->mat[op] = (attn_mat){PyArray_DATA(c->arr[op]), NULL, 0,
                                    st[op][0], store_of(c->arr[op])};
            continue;
        }
        memcpy(rst[nrow], st[op], sizeof(ptrdiff_t) * (size_t)(c->nd - 1));
        rowop[nrow++] = op;
    }
    if (c->nrows == 0 || c->n == 0)
        return 0;
    if (!(c->offs = alloc_offsets((size_t)nrow, c->nrows)))
        return -1;
    fill_offsets(c->nd - 1, c->dims, nrow, rst, c->offs, c->nrows);
    for (int k = 0; k < nrow; k++) {
        int op = rowop[k];
        c->mat[op] = (attn_mat){PyArray_DATA(c->arr[op]),
                                c->offs + (size_t)k * c->nrows, 0,
                                st[op][c->nd - 1], store_of(c->arr[op])};
    }
    return 0;
}

/* the result of output op (new reference), or None if it is absent     */
static PyObject *lc_result(lcall *c, int op)
{
    if (!c->arr[op])
        Py_RETURN_NONE;
    return deliver(c->user[op], c->arr[op], c->is_tmp[op]);
}

/* run CALL (a core call using `ex`, the exec with the module's threads)
 * with the GIL released; st = its status                                 */
#define LC_RUN(st, CALL)                                                       \
    do {                                                                       \
        ap_nogil g_;                                                           \
        ap_nogil_begin(&g_);                                                   \
        const attn_exec *ex = &g_.ex;                                          \
        (st) = (CALL);                                                         \
        ap_nogil_end(&g_);                                                     \
    } while (0)

/* the outputs first .. first + n - 1 as a tuple (new reference)         */
static PyObject *lc_results(lcall *c, int first, int n)
{
    PyObject *t = PyTuple_New(n);
    for (int k = 0; t && k < n; k++) {
        PyObject *r = lc_result(c, first + k);
        if (!r)
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, k, r);
    }
    return t;
}

static const char *fname_of(PyObject *const *args, Py_ssize_t nargs,
                            Py_ssize_t want, const char *who)
{
    if (nargs != want) {
        PyErr_Format(PyExc_TypeError, "%s() takes %zd arguments", who, want);
        return NULL;
    }
    return PyUnicode_AsUTF8(args[want - 1]);
}

static int parse_act(PyObject *o, const char *fname, attn_act *act)
{
    /* in the order of attn_act */
    static const char *const names[] = {"none", "relu", "gelu", "gelu_tanh"};
    int i;
    if (parse_choice(o, fname, "activation",
                     "'none', 'relu', 'gelu' or 'gelu_tanh'", names, 4,
                     &i) < 0)
        return -1;
    *act = (attn_act)i;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* layer_norm(x, res, shift, weight, bias, eps, eps_in_sqrt, out, want_sum, */
/*            fname) -> y, or (y, s) when want_sum (s = x + (res + shift))  */
/* ------------------------------------------------------------------------ */
enum { LN_X, LN_RES, LN_SHIFT, LN_W, LN_B, LN_Y, LN_SUM };

static PyObject *core_layer_norm(PyObject *Py_UNUSED(mod),
                                 PyObject *const *args, Py_ssize_t nargs)
{
    lcall c = {0};
    PyObject *result = NULL;
    if (!(c.fname = fname_of(args, nargs, 10, "layer_norm")))
        return NULL;
    double eps = PyFloat_AsDouble(args[5]);
    int sq = PyObject_IsTrue(args[6]), want_sum = PyObject_IsTrue(args[8]);
    if ((eps == -1.0 && PyErr_Occurred()) || sq < 0 || want_sum < 0)
        return NULL;
    if (lc_required(&c, args[0], "x") < 0 ||
        lc_input(&c, args[1], "residual", 0) < 0 ||
        lc_input(&c, args[2], "shift", 1) < 0 ||
        lc_input(&c, args[3], "weight", 1) < 0 ||
        lc_input(&c, args[4], "bias", 1) < 0 || lc_inputs_done(&c) < 0 ||
        lc_output(&c, args[7], "out", 0, LN_X, 1, -1) < 0 ||
        lc_output(&c, Py_None, "the sum", 0, -1, want_sum, -1) < 0 ||
        lc_mats(&c) < 0)
        goto fail;
    attn_norm p = {dtype_of(c.typenum), c.nrows, c.n, c.mat[LN_Y],
                   c.mat[LN_SUM], c.mat[LN_X], c.mat[LN_RES],
                   c.mat[LN_SHIFT], c.mat[LN_W], c.mat[LN_B], eps, sq};
    attn_status st;
    LC_RUN(st, attn_layer_norm(&p, ex));
    if (raise_status(st, c.fname) < 0)
        goto fail;
    result = want_sum ? lc_results(&c, LN_Y, 2) : lc_result(&c, LN_Y);
fail:
    lc_free(&c);
    return result;
}

/* ------------------------------------------------------------------------ */
/* layer_norm_backward(dy, s, weight, eps, eps_in_sqrt, want_dweight,       */
/*                     want_dbias, out, fname) -> (dx, dweight, dbias)      */
/* (None for a gradient not wanted)                                         */
/* ------------------------------------------------------------------------ */
enum { LB_X, LB_DY, LB_W, LB_DX, LB_DW, LB_DB };

static PyObject *core_layer_norm_backward(PyObject *Py_UNUSED(mod),
                                          PyObject *const *args,
                                          Py_ssize_t nargs)
{
    lcall c = {0};
    PyObject *result = NULL;
    if (!(c.fname = fname_of(args, nargs, 9, "layer_norm_backward")))
        return NULL;
    double eps = PyFloat_AsDouble(args[3]);
    int sq = PyObject_IsTrue(args[4]), ww = PyObject_IsTrue(args[5]),
        wb = PyObject_IsTrue(args[6]);
    if ((eps == -1.0 && PyErr_Occurred()) || sq < 0 || ww < 0 || wb < 0)
        return NULL;
    /* x first: it sets the shape dy must have */
    if (lc_required(&c, args[1], "x") < 0 ||
        lc_required(&c, args[0], "dy") < 0 ||
        lc_input(&c, args[2], "weight", 1) < 0 || lc_inputs_done(&c) < 0 ||
        lc_output(&c, args[7], "out", 0, LB_DY, 1, LB_X) < 0 ||
        lc_output(&c, Py_None, "dweight", 1, -1, ww, LB_W) < 0 ||
        lc_output(&c, Py_None, "dbias", 1, -1, wb, -1) < 0 ||
        lc_mats(&c) < 0)
        goto fail;
    attn_norm_grad p = {dtype_of(c.typenum), c.nrows, c.n, c.mat[LB_DX],
                        c.mat[LB_DW], c.mat[LB_DB], c.mat[LB_DY],
                        c.mat[LB_X], c.mat[LB_W], eps, sq};
    attn_status st;
    LC_RUN(st, attn_layer_norm_backward(&p, ex));
    if (raise_status(st, c.fname) < 0)
        goto fail;
    result = lc_results(&c, LB_DX, 3);
fail:
    lc_free(&c);
    return result;
}

/* ------------------------------------------------------------------------ */
/* bias_act(x, bias, activation, out, fname) -> act(x + bias)               */
/* ------------------------------------------------------------------------ */
static PyObject *core_bias_act(PyObject *Py_UNUSED(mod), PyObject *const *args,
                               Py_ssize_t nargs)
{
    lcall c = {0};
    PyObject *result = NULL;
    attn_act act;
    if (!(c.fname = fname_of(args, nargs, 5, "bias_act")) ||
        parse_act(args[2], c.fname, &act) < 0)
        return NULL;
    if (lc_required(&c, args[0], "x") < 0 ||
        lc_input(&c, args[1], "bias", 1) < 0 || lc_inputs_done(&c) < 0 ||
        lc_output(&c, args[3], "out", 0, 0, 1, -1) < 0 || lc_mats(&c) < 0)
        goto fail;
    attn_status st;
    LC_RUN(st, attn_bias_act(dtype_of(c.typenum), act, c.nrows, c.n,
                             c.mat[2], c.mat[0], c.mat[1], ex));
    if (raise_status(st, c.fname) == 0)
        result = lc_result(&c, 2);
fail:
    lc_free(&c);
    return result;
}

/* ------------------------------------------------------------------------ */
/* bias_act_backward(dy, x, bias, activation, want_dbias, out, fname)       */
/*     -> (dx, dbias or None)                                               */
/* ------------------------------------------------------------------------ */
static PyObject *core_bias_act_backward(PyObject *Py_UNUSED(mod),
                                        PyObject *const *args,
                                        Py_ssize_t nargs)
{
    lcall c = {0};
    PyObject *result = NULL;
    attn_act act;
    if (!(c.fname = fname_of(args, nargs, 7, "bias_act_backward")) ||
        parse_act(args[3], c.fname, &act) < 0)
        return NULL;
    int wb = PyObject_IsTrue(args[4]);
    if (wb < 0)
        return NULL;
    if (lc_required(&c, args[1], "x") < 0 ||
        lc_required(&c, args[0], "dy") < 0 ||
        lc_input(&c, args[2], "bias", 1) < 0 || lc_inputs_done(&c) < 0 ||
        lc_output(&c, args[5], "out", 0, 1, 1, 0) < 0 ||
        lc_output(&c, Py_None, "dbias", 1, -1, wb, 2) < 0 || lc_mats(&c) < 0)
        goto fail;
    attn_status st;
    LC_RUN(st, attn_bias_act_backward(dtype_of(c.typenum), act, c.nrows,
                                      c.n, c.mat[3], c.mat[4], c.mat[1],
                                      c.mat[0], c.mat[2], ex));
    if (raise_status(st, c.fname) < 0)
        goto fail;
    result = lc_results(&c, 3, 2);
fail:
    lc_free(&c);
    return result;
}

/* ------------------------------------------------------------------------ */
/* rms_norm(x, weight, eps, out, fname) -> y                                */
/* ------------------------------------------------------------------------ */
static PyObject *core_rms_norm(PyObject *Py_UNUSED(mod), PyObject *const *args,
                               Py_ssize_t nargs)
{
    lcall c = {0};
    PyObject *result = NULL;
    if (!(c.fname = fname_of(args, nargs, 5, "rms_norm")))
        return NULL;
    double eps = PyFloat_AsDouble(args[2]);
    if (eps == -1.0 && PyErr_Occurred())
        return NULL;
    if (lc_required(&c, args[0], "x") < 0 ||
        lc_input(&c, args[1], "weight", 1) < 0 || lc_inputs_done(&c) < 0 ||
        lc_output(&c, args[3], "out", 0, 0, 1, -1) < 0 || lc_mats(&c) < 0)
        goto fail;
    attn_rms p = {dtype_of(c.typenum), c.nrows, c.n, c.mat[2], c.mat[0],
                  c.mat[1], eps};
    attn_status st;
    LC_RUN(st, attn_rms_norm(&p, ex));
    if (raise_status(st, c.fname) == 0)
        result = lc_result(&c, 2);
fail:
    lc_free(&c);
    return result;
}

/* ------------------------------------------------------------------------ */
/* rms_norm_backward(dy, x, weight, eps, want_dweight, out, fname)          */
/*     -> (dx, dweight or None)                                             */
/* ------------------------------------------------------------------------ */
static PyObject *core_rms_norm_backward(PyObject *Py_UNUSED(mod),
                                        PyObject *const *args,
                                        Py_ssize_t nargs)
{
    lcall c = {0};
    PyObject *result = NULL;
    if (!(c.fname = fname_of(args, nargs, 7, "rms_norm_backward")))
        return NULL;
    double eps = PyFloat_AsDouble(args[3]);
    int ww = PyObject_IsTrue(args[4]);
    if ((eps == -1.0 && PyErr_Occurred()) || ww < 0)
        return NULL;
    /* x first: it sets the shape dy must have */
    if (lc_required(&c, args[1], "x") < 0 ||
        lc_required(&c, args[0], "dy") < 0 ||
        lc_input(&c, args[2], "weight", 1) < 0 || lc_inputs_done(&c) < 0 ||
        lc_output(&c, args[5], "out", 0, 1, 1, 0) < 0 ||
        lc_output(&c, Py_None, "dweight", 1, -1, ww, 2) < 0 ||
        lc_mats(&c) < 0)
        goto fail;
    attn_rms_grad p = {dtype_of(c.typenum), c.nrows, c.n, c.mat[3], c.mat[4],
                       c.mat[1], c.mat[0], c.mat[2], eps};
    attn_status st;
    LC_RUN(st, attn_rms_norm_backward(&p, ex));
    if (raise_status(st, c.fname) == 0)
        result = lc_results(&c, 3, 2);
fail:
    lc_free(&c);
    return result;
}

/* ------------------------------------------------------------------------ */
/* swiglu(gate, up, out, fname) -> silu(gate) * up (up None: silu(gate),    */
/* and the first argument is called x)                                      */
/* ------------------------------------------------------------------------ */
static PyObject *core_swiglu(PyObject *Py_UNUSED(mod), PyObject *const *args,
                             Py_ssize_t nargs)
{
    lcall c = {0};
    PyObject *result = NULL;
    if (!(c.fname = fname_of(args, nargs, 4, "swiglu")))
        return NULL;
    const char *first = args[1] == Py_None ? "x" : "gate";
    if (lc_required(&c, args[0], first) < 0 ||
        lc_input(&c, args[1], "up", 0) < 0 || lc_inputs_done(&c) < 0 ||
        lc_output(&c, args[2], "out", 0, 0, 1, -1) < 0 || lc_mats(&c) < 0)
        goto fail;
    attn_status st;
    LC_RUN(st, attn_swiglu(dtype_of(c.typenum), c.nrows, c.n, c.mat[2],
                           c.mat[0], c.mat[1], ex));
    if (raise_status(st, c.fname) == 0)
        result = lc_result(&c, 2);
fail:
    lc_free(&c);
    return result;
}

/* ------------------------------------------------------------------------ */
/* swiglu_backward(dy, gate, up, fname) -> (dgate, dup or None)             */
/* ------------------------------------------------------------------------ */
static PyObject *core_swiglu_backward(PyObject *Py_UNUSED(mod),
                                      PyObject *const *args, Py_ssize_t nargs)
{
    lcall c = {0};
    PyObject *result = NULL;
    if (!(c.fname = fname_of(args, nargs, 4, "swiglu_backward")))
        return NULL;
    int has_up = args[2] != Py_None;
    if (lc_required(&c, args[1], has_up ? "gate" : "x") < 0 ||
        lc_required(&c, args[0], "dy") < 0 ||
        lc_input(&c, args[2], "up", 0) < 0 || lc_inputs_done(&c) < 0 ||
        lc_output(&c, Py_None, "dgate", 0, -1, 1, 0) < 0 ||
        lc_output(&c, Py_None, "dup", 0, -1, has_up, 2) < 0 ||
        lc_mats(&c) < 0)
        goto fail;
    attn_status st;
    LC_RUN(st, attn_swiglu_backward(dtype_of(c.typenum), c.nrows, c.n,
                                    c.mat[3], c.mat[4], c.mat[1], c.mat[0],
                                    c.mat[2], ex));
    if (raise_status(st, c.fname) == 0)
        result = lc_results(&c, 3, 2);
fail:
    lc_free(&c);
    return result;
}

PyMethodDef ap_layer_methods[] = {
    {"layer_norm", AP_FASTCALL(core_layer_norm), METH_FASTCALL,
     "layer_norm(x, residual, shift, weight, bias, eps, eps_in_sqrt, out, "
     "want_sum, fname, /)\n--\n\nLayer norm (+ residual, shift) in C."},
    {"layer_norm_backward", AP_FASTCALL(core_layer_norm_backward),
     METH_FASTCALL,
     "layer_norm_backward(dy, x, weight, eps, eps_in_sqrt, want_dweight, "
     "want_dbias, out, fname, /)\n--\n\nLayer norm's gradients in C."},
    {"bias_act", AP_FASTCALL(core_bias_act), METH_FASTCALL,
     "bias_act(x, bias, activation, out, fname, /)\n--\n\n"
     "act(x + bias) in C."},
    {"bias_act_backward", AP_FASTCALL(core_bias_act_backward), METH_FASTCALL,
     "bias_act_backward(dy, x, bias, activation, want_dbias, out, fname, /)"
     "\n--\n\nbias_act's gradients in C."},
    {"rms_norm", AP_FASTCALL(core_rms_norm), METH_FASTCALL,
     "rms_norm(x, weight, eps, out, fname, /)\n--\n\nRMS norm in C."},
    {"rms_norm_backward", AP_FASTCALL(core_rms_norm_backward), METH_FASTCALL,
     "rms_norm_backward(dy, x, weight, eps, want_dweight, out, fname, /)"
     "\n--\n\nrms_norm's gradients in C."},
    {"swiglu", AP_FASTCALL(core_swiglu), METH_FASTCALL,
     "swiglu(gate, up, out, fname, /)\n--\n\nsilu(gate) * up (silu when up is None) in C."},
    {"swiglu_backward", AP_FASTCALL(core_swiglu_backward), METH_FASTCALL,
     "swiglu_backward(dy, gate, up, fname, /)\n--\n\nswiglu's gradients in C."},
    {NULL, NULL, 0, NULL}};
