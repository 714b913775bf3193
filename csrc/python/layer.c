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
#define LC_NONE (-1)
/* an operand: rows of x's shape, or (n,); an input: LC_REQUIRED, rows
 * that may not be None                                                  */
enum { LC_ROWS = 0, LC_VECTOR = 1, LC_REQUIRED = 2 };

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

/* an input operand (None or NULL: absent, unless kind is LC_REQUIRED);
 * operand 0 is x, whose shape rules                                      */
static int lc_input(lcall *c, PyObject *obj, const char *name, int kind)
{
    int op = c->nops++;
    c->nin = c->nops;
    c->name[op] = name;
    c->vec[op] = kind == LC_VECTOR;
    if (obj && obj != Py_None)
        return (c->raw[op] = as_array16(obj, c->fname, name)) ? 0 : -1;
    if (kind != LC_REQUIRED)
        return 0;
    PyErr_Format(PyExc_TypeError, "%s: %s must be an array, not None",
                 c->fname, name);
    return -1;
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
    memcpy(c->dims, PyArray_DIMS(x), sizeof(npy_intp) * (size_t)c->nd);
    c->n = (size_t)c->dims[c->nd - 1];
    c->nrows = lead_size(x, c->nd - 1);
    for (int op = 0; op < c->nin; op++) {
        PyArrayObject *a = c->raw[op];
        if (!a)
            continue;
        if (c->vec[op] && !same_dims(a, 1, c->dims + c->nd - 1))
            return err_shapes(PyExc_ValueError, c->name[op], a, c->name[0],
                              x, "%s: %s must have shape (%zd,), the features "
                              "of %s", c->fname, c->name[op], (Py_ssize_t)c->n,
                              c->name[0]);
        if (!c->vec[op] && !same_dims(a, c->nd, c->dims))
            return err_shapes(PyExc_ValueError, c->name[op], a, c->name[0],
                              x, "%s: %s must have the shape of %s", c->fname,
                              c->name[op], c->name[0]);
        if (!(c->arr[op] = as_storage(a, c->typenum, c->fname,
                                      c->name[op])))
            return -1;
    }
    return 0;
}

/* an output operand: its name; vec (LC_ROWS, LC_VECTOR); alias: the
 * input it may be exactly (same data and strides: in place), or LC_NONE;
 * own: for a gradient, the input whose dtype it takes when that is
 * 16-bit (dx of a float16 x is float16 whatever dy is), or LC_NONE      */
typedef struct {
    const char *name;
    int vec, alias, own;
} lc_out;

/* an output: a new array, or the user's out= (`out` given: the output's
 * dtype or a wider float). Any overlap with an input but o.alias goes
 * through a temporary. Not `wanted`: the slot stays empty (the kernel
 * gets data NULL).                                                       */
static int lc_output(lcall *c, PyObject *out, lc_out o, int wanted)
{
    int op = c->nops++;
    c->name[op] = o.name;
    c->vec[op] = o.vec;
    if (!wanted)
        return 0;
    npy_intp vdim = (npy_intp)c->n;
    int nd = o.vec ? 1 : c->nd;
    const npy_intp *dims = o.vec ? &vdim : c->dims;
    PyArray_Descr *d = c->rd;
    if (o.own != LC_NONE && c->raw[o.own] && c->typenum == NPY_FLOAT
        && is_16bit(PyArray_DESCR(c->raw[o.own])))
        d = PyArray_DESCR(c->arr[o.own]); /* native byte order */
    if (!out || out == Py_None)
        return (c->arr[op] = new_result_descr(
                    nd, dims, d, c->fname,
                    strcmp(o.name, "out") ? o.name : "the result"))
                   ? 0
                   : -1; /* no out= given: not called "out" */
    if (!(c->user[op] = check_out_wide(out, c->fname, o.name, nd, dims, d)))
        return -1;
    PyArrayObject *u = c->user[op], *ins[LC_MAX];
    int nins = 0;
    for (int k = 0; k < c->nin; k++)
        if (c->arr[k] && !(k == o.alias && same_view(c->arr[k], u)))
            ins[nins++] = c->arr[k];
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
    attn_mat rm[LC_MAX];
    if (row_tables(c->nd - 1, c->dims, nrow, rst, c->nrows, rm, &c->offs) < 0)
        return -1;
    for (int k = 0; k < nrow; k++) {
        int op = rowop[k];
        c->mat[op] = (attn_mat){PyArray_DATA(c->arr[op]), rm[k].boff,
                                rm[k].s0, st[op][c->nd - 1],
                                store_of(c->arr[op])};
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

/* the activations' names, in the order of attn_act (layer/acts.h)     */
static const char *const act_names[] = {
#define ACT_NAME_(id, name, cost, y, dx) name,
    ATTN_ACT_LIST(ACT_NAME_)
#undef ACT_NAME_
};

/* activations() -> the names bias_act takes, in attn_act's order       */
static PyObject *core_activations(PyObject *Py_UNUSED(mod),
                                  PyObject *Py_UNUSED(arg))
{
    PyObject *t = PyTuple_New(ATTN_ACT_COUNT);
    for (int i = 0; t && i < ATTN_ACT_COUNT; i++) {
        PyObject *name = PyUnicode_FromString(act_names[i]);
        if (!name)
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, i, name);
    }
    return t;
}

/* ---- the functions, as tables ------------------------------------------
 * Each function of this file is one lfunc: its keyword arguments (the
 * slots of fname, eps and activation, and a bit per flag), its inputs
 * and outputs in operand order, and `run`, which fills the core's
 * argument struct and calls the core (the GIL released). lc_call() does
 * the rest, in the same order for every function: the arguments (eps,
 * activation and the flags, in slot order), the inputs and their
 * shapes, the outputs, the strides, the call, the results.             */
#define LC_MAX_ARGS 10
typedef struct {
    double eps;                  /* absent: 1e-6, the public default      */
    int act;                     /* an attn_act; absent: ATTN_ACT_NONE    */
    int on[LC_MAX_ARGS];         /* per slot: a flag's value, else given  */
} lc_opts;
typedef struct {
    int slot;                    /* argument slot                         */
    const char *name;            /* NULL: the end of the list             */
    int kind;                    /* LC_ROWS, LC_VECTOR, LC_REQUIRED       */
} lc_in;
typedef struct {
    int slot;                    /* its out= argument slot, or LC_NONE    */
    lc_out o;                    /* o.name NULL: the end of the list      */
    int want;                    /* the slot that asks for it (on), or
                                  * LC_NONE: always computed             */
} lc_outspec;
typedef struct {
    ap_argspec *spec;
    int fname, eps, act;         /* slots, or LC_NONE                     */
    unsigned flags;              /* 1 << slot for each flag argument      */
    int solo;                    /* slot whose absence names the first
                                  * input "x" (swiglu), or LC_NONE        */
    int grads;                   /* a tuple of every output, None where not
                                  * wanted (else the output alone, or the
                                  * wanted ones as a tuple when more)     */
    lc_in in[6];
    lc_outspec out[4];
    attn_status (*run)(const lcall *c, const lc_opts *v,
                       const attn_exec *ex);
} lfunc;

static PyObject *lc_call(const lfunc *f, PyObject *const *argv,
                         Py_ssize_t nargs, PyObject *kwnames)
{
    lcall c = {0};
    lc_opts v = {.eps = 1e-6, .act = ATTN_ACT_NONE};
    PyObject *result = NULL, *a[LC_MAX_ARGS];
    if (!(c.fname = ap_parse_named(f->spec, argv, nargs, kwnames, a,
                                   f->fname)))
        return NULL;
    for (int s = 0; s < f->spec->n; s++) {
        const int given = v.on[s] = a[s] != Py_None;
        if ((given && s == f->eps && (v.eps = PyFloat_AsDouble(a[s])) == -1.0
             && PyErr_Occurred())
            || (given && s == f->act
                && parse_choice(a[s], c.fname, "activation", NULL, act_names,
                                ATTN_ACT_COUNT, &v.act) < 0)
            || (((f->flags >> s) & 1u) && (v.on[s] = ap_flag(a[s])) < 0))
            return NULL;
    }
    for (const lc_in *in = f->in; in->name; in++) {
        const char *name = in == f->in && f->solo != LC_NONE && !v.on[f->solo]
                               ? "x" : in->name;
        if (lc_input(&c, a[in->slot], name, in->kind) < 0)
            goto fail;
    }
    if (lc_inputs_done(&c) < 0)
        goto fail;
    int nout = 0, nwant = 0;
    for (const lc_outspec *o = f->out; o->o.name; o++, nout++) {
        const int want = o->want == LC_NONE || v.on[o->want];
        nwant += want;
        if (lc_output(&c, o->slot == LC_NONE ? NULL : a[o->slot], o->o,
                      want) < 0)
            goto fail;
    }
    if (lc_mats(&c) < 0)
        goto fail;
    ap_nogil g;
    if (raise_status(AP_RUN(g, f->run, &c, &v), c.fname) == 0)
        result = f->grads || nwant > 1 ? lc_results(&c, c.nin, nout)
                                       : lc_result(&c, c.nin);
fail:
    lc_free(&c);
    return result;
}

/* run_<name>: the core's argument struct T ({dtype, nrows, n}, then the
 * fields listed) and its entry point fn; M(op) is operand op's attn_mat */
#define LC_RUN(name, T, fn, ...)                                               \
    static attn_status run_##name(const lcall *c, const lc_opts *v,            \
                                  const attn_exec *ex)                         \
    {                                                                          \
        const T p = {.dtype = dtype_of(c->typenum), .nrows = c->nrows,         \
                     .n = c->n, __VA_ARGS__};                                  \
        (void)v;                                                               \
        return fn(&p, ex);                                                     \
    }
#define M(op) c->mat[op]

/* ------------------------------------------------------------------------ */
/* layer_norm(x, /, *, residual, shift, weight, bias, eps, eps_in_sqrt,     */
/*            out, return_sum, fname) -> y, or (y, s) with return_sum       */
/*            (s = x + (residual + shift))                                  */
/* ------------------------------------------------------------------------ */
AP_ARGSPEC(ln_spec, "layer_norm", 1, 1, "x", "residual", "shift", "weight",
           "bias", "eps", "eps_in_sqrt", "out", "return_sum", "fname");
enum { LN_X, LN_RES, LN_SHIFT, LN_W, LN_B, LN_EPS, LN_SQ, LN_OUT, LN_RSUM,
       LN_FNAME };
enum { LNO_Y = 5, LNO_SUM }; /* the outputs' operand slots */

LC_RUN(layer_norm, attn_norm, attn_layer_norm, M(LNO_Y), M(LNO_SUM), M(LN_X),
       M(LN_RES), M(LN_SHIFT), M(LN_W), M(LN_B), v->eps, v->on[LN_SQ])
static const lfunc layer_norm_f = {
    &ln_spec, LN_FNAME, LN_EPS, LC_NONE, 1u << LN_SQ | 1u << LN_RSUM,
    LC_NONE, 0,
    {{LN_X, "x", LC_REQUIRED}, {LN_RES, "residual", LC_ROWS},
     {LN_SHIFT, "shift", LC_VECTOR}, {LN_W, "weight", LC_VECTOR},
     {LN_B, "bias", LC_VECTOR}},
    {{LN_OUT, {"out", LC_ROWS, LN_X, LC_NONE}, LC_NONE},
     {LC_NONE, {"the sum", LC_ROWS, LC_NONE, LC_NONE}, LN_RSUM}},
    run_layer_norm};
AP_ENTRY(layer_norm, lc_call, &layer_norm_f)

/* ------------------------------------------------------------------------ */
/* layer_norm_backward(dy, x, /, *, weight, eps, eps_in_sqrt,               */
/*     return_dweight, return_dbias, out, fname) -> (dx, dweight, dbias)    */
/* (None for a gradient not asked for; x: the forward pass's sum s)         */
/* ------------------------------------------------------------------------ */
AP_ARGSPEC(lnb_spec, "layer_norm_backward", 2, 2, "dy", "x", "weight", "eps",
           "eps_in_sqrt", "return_dweight", "return_dbias", "out", "fname");
enum { LNB_DY, LNB_X, LNB_W, LNB_EPS, LNB_SQ, LNB_RDW, LNB_RDB, LNB_OUT,
       LNB_FNAME };
/* operand slots: inputs x, dy, weight, then dx, dweight, dbias */
enum { LBO_X, LBO_DY, LBO_W, LBO_DX, LBO_DW, LBO_DB };

LC_RUN(layer_norm_backward, attn_norm_grad, attn_layer_norm_backward,
       M(LBO_DX), M(LBO_DW), M(LBO_DB), M(LBO_DY), M(LBO_X), M(LBO_W), v->eps,
       v->on[LNB_SQ])
/* x first: it sets the shape dy must have */
static const lfunc layer_norm_backward_f = {
    &lnb_spec, LNB_FNAME, LNB_EPS, LC_NONE,
    1u << LNB_SQ | 1u << LNB_RDW | 1u << LNB_RDB, LC_NONE, 1,
    {{LNB_X, "x", LC_REQUIRED}, {LNB_DY, "dy", LC_REQUIRED},
     {LNB_W, "weight", LC_VECTOR}},
    {{LNB_OUT, {"out", LC_ROWS, LBO_DY, LBO_X}, LC_NONE},
     {LC_NONE, {"dweight", LC_VECTOR, LC_NONE, LBO_W}, LNB_RDW},
     {LC_NONE, {"dbias", LC_VECTOR, LC_NONE, LC_NONE}, LNB_RDB}},
    run_layer_norm_backward};
AP_ENTRY(layer_norm_backward, lc_call, &layer_norm_backward_f)

/* ------------------------------------------------------------------------ */
/* bias_act(x, /, *, bias, activation, out, fname) -> act(x + bias)         */
/* ------------------------------------------------------------------------ */
AP_ARGSPEC(ba_spec, "bias_act", 1, 1, "x", "bias", "activation", "out",
           "fname");
enum { BA_X, BA_B, BA_ACT, BA_OUT, BA_FNAME };
enum { BAO_Y = 2 };

LC_RUN(bias_act, attn_act_args, attn_bias_act, M(BAO_Y), M(BA_X), M(BA_B),
       .act = (attn_act)v->act)
static const lfunc bias_act_f = {
    &ba_spec, BA_FNAME, LC_NONE, BA_ACT, 0, LC_NONE, 0,
    {{BA_X, "x", LC_REQUIRED}, {BA_B, "bias", LC_VECTOR}},
    {{BA_OUT, {"out", LC_ROWS, BA_X, LC_NONE}, LC_NONE}},
    run_bias_act};
AP_ENTRY(bias_act, lc_call, &bias_act_f)

/* ------------------------------------------------------------------------ */
/* bias_act_backward(dy, x, /, *, bias, activation, return_dbias, out,      */
/*     fname) -> (dx, dbias or None)                                        */
/* ------------------------------------------------------------------------ */
AP_ARGSPEC(bab_spec, "bias_act_backward", 2, 2, "dy", "x", "bias",
           "activation", "return_dbias", "out", "fname");
enum { BAB_DY, BAB_X, BAB_B, BAB_ACT, BAB_RDB, BAB_OUT, BAB_FNAME };
enum { BBO_X, BBO_DY, BBO_B, BBO_DX, BBO_DB }; /* operand slots */

LC_RUN(bias_act_backward, attn_act_grad_args, attn_bias_act_backward,
       M(BBO_DX), M(BBO_DB), M(BBO_DY), M(BBO_X), M(BBO_B),
       .act = (attn_act)v->act)
static const lfunc bias_act_backward_f = {
    &bab_spec, BAB_FNAME, LC_NONE, BAB_ACT, 1u << BAB_RDB, LC_NONE, 1,
    {{BAB_X, "x", LC_REQUIRED}, {BAB_DY, "dy", LC_REQUIRED},
     {BAB_B, "bias", LC_VECTOR}},
    {{BAB_OUT, {"out", LC_ROWS, BBO_DY, BBO_X}, LC_NONE},
     {LC_NONE, {"dbias", LC_VECTOR, LC_NONE, BBO_B}, BAB_RDB}},
    run_bias_act_backward};
AP_ENTRY(bias_act_backward, lc_call, &bias_act_backward_f)

/* ------------------------------------------------------------------------ */
/* rms_norm(x, /, *, weight, eps, out, fname) -> y                          */
/* ------------------------------------------------------------------------ */
AP_ARGSPEC(rms_spec, "rms_norm", 1, 1, "x", "weight", "eps", "out", "fname");
enum { RMS_X, RMS_W, RMS_EPS, RMS_OUT, RMS_FNAME };
enum { RMSO_Y = 2 };

LC_RUN(rms_norm, attn_rms, attn_rms_norm, M(RMSO_Y), M(RMS_X), M(RMS_W),
       v->eps)
static const lfunc rms_norm_f = {
    &rms_spec, RMS_FNAME, RMS_EPS, LC_NONE, 0, LC_NONE, 0,
    {{RMS_X, "x", LC_REQUIRED}, {RMS_W, "weight", LC_VECTOR}},
    {{RMS_OUT, {"out", LC_ROWS, RMS_X, LC_NONE}, LC_NONE}},
    run_rms_norm};
AP_ENTRY(rms_norm, lc_call, &rms_norm_f)

/* ------------------------------------------------------------------------ */
/* rms_norm_backward(dy, x, /, *, weight, eps, return_dweight, out, fname)  */
/*     -> (dx, dweight or None)                                             */
/* ------------------------------------------------------------------------ */
AP_ARGSPEC(rmsb_spec, "rms_norm_backward", 2, 2, "dy", "x", "weight", "eps",
           "return_dweight", "out", "fname");
enum { RMB_DY, RMB_X, RMB_W, RMB_EPS, RMB_RDW, RMB_OUT, RMB_FNAME };
enum { RBO_X, RBO_DY, RBO_W, RBO_DX, RBO_DW }; /* operand slots */

LC_RUN(rms_norm_backward, attn_rms_grad, attn_rms_norm_backward, M(RBO_DX),
       M(RBO_DW), M(RBO_DY), M(RBO_X), M(RBO_W), v->eps)
/* x first: it sets the shape dy must have */
static const lfunc rms_norm_backward_f = {
    &rmsb_spec, RMB_FNAME, RMB_EPS, LC_NONE, 1u << RMB_RDW, LC_NONE, 1,
    {{RMB_X, "x", LC_REQUIRED}, {RMB_DY, "dy", LC_REQUIRED},
     {RMB_W, "weight", LC_VECTOR}},
    {{RMB_OUT, {"out", LC_ROWS, RBO_DY, RBO_X}, LC_NONE},
     {LC_NONE, {"dweight", LC_VECTOR, LC_NONE, RBO_W}, RMB_RDW}},
    run_rms_norm_backward};
AP_ENTRY(rms_norm_backward, lc_call, &rms_norm_backward_f)

/* ------------------------------------------------------------------------ */
/* swiglu(gate, up=None, /, *, out, fname) -> silu(gate) * up (up None:     */
/* silu(gate), and the first argument is called x)                          */
/* ------------------------------------------------------------------------ */
AP_ARGSPEC(glu_spec, "swiglu", 2, 1, "gate", "up", "out", "fname");
enum { GLU_G, GLU_U, GLU_OUT, GLU_FNAME };
enum { GLUO_Y = 2 };

LC_RUN(swiglu, attn_glu_args, attn_swiglu, M(GLUO_Y), M(GLU_G), M(GLU_U))
static const lfunc swiglu_f = {
    &glu_spec, GLU_FNAME, LC_NONE, LC_NONE, 0, GLU_U, 0,
    {{GLU_G, "gate", LC_REQUIRED}, {GLU_U, "up", LC_ROWS}},
    {{GLU_OUT, {"out", LC_ROWS, GLU_G, LC_NONE}, LC_NONE}},
    run_swiglu};
AP_ENTRY(swiglu, lc_call, &swiglu_f)

/* ------------------------------------------------------------------------ */
/* swiglu_backward(dy, gate, up=None, /, *, fname) -> (dgate, dup or None) */
/* ------------------------------------------------------------------------ */
AP_ARGSPEC(glub_spec, "swiglu_backward", 3, 2, "dy", "gate", "up", "fname");
enum { GLB_DY, GLB_G, GLB_U, GLB_FNAME };
enum { GBO_G, GBO_DY, GBO_U, GBO_DG, GBO_DU }; /* operand slots */

LC_RUN(swiglu_backward, attn_glu_grad_args, attn_swiglu_backward, M(GBO_DG),
       M(GBO_DU), M(GBO_DY), M(GBO_G), M(GBO_U))
static const lfunc swiglu_backward_f = {
    &glub_spec, GLB_FNAME, LC_NONE, LC_NONE, 0, GLB_U, 1,
    {{GLB_G, "gate", LC_REQUIRED}, {GLB_DY, "dy", LC_REQUIRED},
     {GLB_U, "up", LC_ROWS}},
    {{LC_NONE, {"dgate", LC_ROWS, LC_NONE, GBO_G}, LC_NONE},
     {LC_NONE, {"dup", LC_ROWS, LC_NONE, GBO_U}, GLB_U}},
    run_swiglu_backward};
AP_ENTRY(swiglu_backward, lc_call, &swiglu_backward_f)

PyMethodDef ap_layer_methods[] = {
    {"layer_norm", AP_FASTCALL(core_layer_norm), AP_KW,
     "layer_norm(x, /, *, residual=None, shift=None, weight=None, bias=None, "
     "eps=1e-06, eps_in_sqrt=False, out=None, return_sum=False, "
     "fname='layer_norm')\n--\n\nLayer norm (+ residual, shift) in C."},
    {"layer_norm_backward", AP_FASTCALL(core_layer_norm_backward), AP_KW,
     "layer_norm_backward(dy, x, /, *, weight=None, eps=1e-06, "
     "eps_in_sqrt=False, return_dweight=False, return_dbias=False, out=None, "
     "fname='layer_norm_backward')\n--\n\nLayer norm's gradients in C."},
    {"bias_act", AP_FASTCALL(core_bias_act), AP_KW,
     "bias_act(x, /, *, bias=None, activation='none', out=None, "
     "fname='bias_act')\n--\n\nact(x + bias) in C."},
    {"activations", core_activations, METH_NOARGS,
     "activations()\n--\n\nThe activation names bias_act takes, in C's "
     "order."},
    {"bias_act_backward", AP_FASTCALL(core_bias_act_backward), AP_KW,
     "bias_act_backward(dy, x, /, *, bias=None, activation='none', "
     "return_dbias=False, out=None, fname='bias_act_backward')\n--\n\n"
     "bias_act's gradients in C."},
    {"rms_norm", AP_FASTCALL(core_rms_norm), AP_KW,
     "rms_norm(x, /, *, weight=None, eps=1e-06, out=None, fname='rms_norm')"
     "\n--\n\nRMS norm in C."},
    {"rms_norm_backward", AP_FASTCALL(core_rms_norm_backward), AP_KW,
     "rms_norm_backward(dy, x, /, *, weight=None, eps=1e-06, "
     "return_dweight=False, out=None, fname='rms_norm_backward')\n--\n\n"
     "rms_norm's gradients in C."},
    {"swiglu", AP_FASTCALL(core_swiglu), AP_KW,
     "swiglu(gate, up=None, /, *, out=None, fname='swiglu')\n--\n\n"
     "silu(gate) * up (silu when up is None) in C."},
    {"swiglu_backward", AP_FASTCALL(core_swiglu_backward), AP_KW,
     "swiglu_backward(dy, gate, up=None, /, *, fname='swiglu_backward')"
     "\n--\n\nswiglu's gradients in C."},
    {NULL, NULL, 0, NULL}};
