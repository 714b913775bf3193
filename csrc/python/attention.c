/*
 * python/attention.c -- bindings of the attention family:
 *   sdpa(Q, K, V, /, *, mask, bias, causal, scale, fully_masked, out,
 *        weights_out, fname, variants, pos_shift, return_weights,
 *        return_scores, return_lse)
 * behind attention, scaled_dot_product_attention and explain, and
 * sdpa_bwd behind attention_backward (keyword arguments: sdpa_spec and
 * bwd_spec below; `variants`, the tuple of the public variant keywords,
 * is parsed by variants.c, which alone knows its entries; alibi_slopes
 * (..., H) is one more operand broadcast over batch dims).
 *
 * core_sdpa runs the steps below in order on one sdpa_call; each step
 * returns 0, or -1 with an exception set, and sdpa_release() frees what
 * the steps took.
 *   1. sdpa_header        the results wanted, the function's name, causal,
 *                         fully_masked
 *   2. sdpa_inputs        Q, K, V converted to their common compute type
 *   3. sdpa_core_dims     E and S agree between Q, K and V
 *   4. sdpa_mask_bias     mask (-> bool), bias and alibi_slopes (->
 *                         compute type)
 *   5. sdpa_batch         the leading dims broadcast (NumPy rules)
 *   6. sdpa_results       out / weights / scores allocated or checked
 *   7. sdpa_problem       strides, batch offset tables, the attn_problem
 *   8. sdpa_compute       attn_sdpa (sdpa_bwd: attn_sdpa_backward) with
 *                         the GIL released
 *   9. sdpa_deliver       temporaries copied back, the result built
 */
#include "args.h" /* first: Python.h before any system header */
#include <math.h>
#include <string.h>

/* Operands of one sdpa call, in the order of the offset tables. */
enum { OP_Q, OP_K, OP_V, OP_MASK, OP_BIAS, OP_ALIBI, OP_OUT, OP_W, OP_SC,
       OP_LSE, OP_DOUT, OP_DQ, OP_DK, OP_DV, OP_DB, N_OPS };
enum { N_IN = OP_ALIBI + 1 };      /* Q .. alibi_slopes: broadcast inputs */
static const char *const op_names[N_OPS] = {
    "Q",   "K",    "V",  "mask", "bias", "alibi_slopes", "out",
    "weights_out", "scores", "lse", "dout", "dQ", "dK", "dV", "dbias"};
/* sdpa: OP_OUT .. OP_LSE are results; sdpa_bwd: OP_OUT, OP_LSE, OP_DOUT
 * are inputs and OP_DQ .. OP_DB results, per batch item (summed later) */

typedef struct {
    const char *fname;
    long want;                     /* 0 out, 1 +weights, 2 +scores, 3 +lse */
    int bwd;                       /* sdpa_bwd                            */
    int typenum;                   /* compute type: NPY_FLOAT, NPY_DOUBLE */
    PyArray_Descr *rdescr;         /* the result dtype (owned)            */
    PyArrayObject *arr[N_OPS];     /* converted operands (owned)          */
    PyArrayObject *raw[N_OPS];     /* inputs in their own dtype (owned)   */
    PyObject *alibi;               /* alibi_slopes as given (borrowed)    */
    PyArrayObject *user[2];        /* out=, weights_out= (owned): the     */
    int tmp[2];                    /* arrays of OP_OUT, OP_W; arr[op] a   */
                                   /* temporary for user[op - OP_OUT]     */
    npy_intp L, S, E, Ev;
    int bnd;                       /* number of broadcast batch dims      */
    npy_intp bshape[NPY_MAXDIMS];
    size_t B;
    int busy;                      /* some result has elements to compute */
    ptrdiff_t *offs;
    attn_problem p;
    attn_mat dmat[5];              /* sdpa_bwd: dout, dq, dk, dv, dbias   */
} sdpa_call;

/* sdpa's and sdpa_bwd's arguments in slot order (the steps read slots by
 * these indices; absent ones are None, fully_masked's absence "zero").  */
AP_ARGSPEC(sdpa_spec, "sdpa", 3, 3, "Q", "K", "V", "mask", "bias", "causal",
           "scale", "fully_masked", "out", "weights_out", "fname",
           "variants", "pos_shift", "return_weights", "return_scores",
           "return_lse");
AP_ARGSPEC(bwd_spec, "sdpa_bwd", 3, 3, "Q", "K", "V", "mask", "bias",
           "causal", "scale", "fully_masked", "dout", "out", "lse",
           "bias_grad", "fname", "variants", "pos_shift");
enum { A_MASK = 3, A_BIAS, A_CAUSAL, A_SCALE, A_FM, A_OUT, A_W, A_FNAME,
       A_VARIANTS, A_RW = A_VARIANTS + 2, A_RS, A_RL, N_SDPA_ARGS };
enum { B_DOUT = 8, B_OUT, B_LSE, B_BIAS_GRAD, B_FNAME, B_VARIANTS,
       N_BWD_ARGS = B_VARIANTS + 2 };

static int parse_causal(PyObject *o, const char *fname, attn_causal *c)
{
    static const char *const names[] = {"top_left", "bottom_right"};
    if (o == Py_False || o == Py_None || o == Py_True ||
        PyArray_IsScalar(o, Bool)) {
        *c = PyObject_IsTrue(o) ? ATTN_CAUSAL_TOP_LEFT : ATTN_CAUSAL_NONE;
        return 0;
    }
    int i;
    if (parse_choice(o, fname, "causal",
                     "False, True, 'top_left' or 'bottom_right'", names, 2,
                     &i) < 0)
        return -1;
    *c = i == 0 ? ATTN_CAUSAL_TOP_LEFT : ATTN_CAUSAL_BOTTOM_RIGHT;
    return 0;
}

/* the slots after parsing: fully_masked as given (NULL: "zero"), every
 * other absent slot None; the public name (default `dflt`), causal,
 * fully_masked, and the slots after fname: variants and pos_shift
 * (None: 0)                                                             */
static int sdpa_common(sdpa_call *c, PyObject **a, int n, int fname_slot,
                       const char *dflt)
{
    static const char *const fms[] = {"zero", "uniform", "nan", "raise"};
    PyObject *fm = a[A_FM];
    int fm_i = 0; /* fms in the order of attn_fm */
    for (int i = 0; i < n; i++)
        a[i] = ap_or_none(a[i]);
    c->fname = dflt;
    if ((a[fname_slot] != Py_None &&
         !(c->fname = PyUnicode_AsUTF8(a[fname_slot]))) ||
        parse_causal(a[A_CAUSAL], c->fname, &c->p.causal) < 0 ||
        (fm && parse_choice(fm, c->fname, "fully_masked", NULL, fms, 4,
                            &fm_i) < 0))
        return -1;
    c->p.fully_masked = (attn_fm)fm_i;
    PyObject *shift = a[fname_slot + 2];
    return parse_variants(a[fname_slot + 1], c->fname, &c->p, &c->alibi) < 0 ||
                   (shift != Py_None &&
                    parse_pos_shift(shift, c->fname, &c->p.pos_shift) < 0)
               ? -1
               : 0;
}

static int sdpa_header(sdpa_call *c, PyObject **a)
{
    static const char *const default_names[4] = {
        "attention", "scaled_dot_product_attention", "explain", "attention"};
    int rw = ap_flag(a[A_RW]), rs = ap_flag(a[A_RS]), rl = ap_flag(a[A_RL]);
    if (rw < 0 || rs < 0 || rl < 0)
        return -1;
    if (rl && (rw || rs)) {
        PyErr_SetString(PyExc_ValueError, "sdpa(): return_lse cannot be "
                        "combined with return_weights or return_scores");
        return -1;
    }
    /* 0 out, 1 + weights, 2 + weights + scores, 3 + lse */
    c->want = rl ? 3 : rs ? 2 : rw ? 1 : 0;
    return sdpa_common(c, a, N_SDPA_ARGS, A_FNAME, default_names[c->want]);
}

static int sdpa_inputs(sdpa_call *c, PyObject *const *args)
{
    static const char *const axes[3] = {"..., L, E", "..., S, E",
                                        "..., S, Ev"};
    const char *fname = c->fname;
    for (int op = OP_Q; op <= OP_V; op++)
        if (!(c->raw[op] = as_array16(args[op], fname, op_names[op])) ||
            need_ndim(c->raw[op], 2, fname, op_names[op], axes[op]) < 0)
            return -1;
    /* float16/bfloat16 operands stay 16-bit under a float32 call */
    if (!(c->rdescr = result_descr(3, c->raw)))
        return -1;
    c->typenum = compute_type16(c->rdescr);
    c->p.dtype = dtype_of(c->typenum);
    for (int op = OP_Q; op <= OP_V; op++)
        if (!(c->arr[op] = as_storage(c->raw[op], c->typenum, fname,
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
    if (PyArray_DIM(K, ndk - 1) != c->E)
        return err_shapes(PyExc_ValueError, "Q", Q, "K", K, "%s: K has %zd "
                          "features but Q has %zd", c->fname,
                          (Py_ssize_t)PyArray_DIM(K, ndk - 1),
                          (Py_ssize_t)c->E);
    if (PyArray_DIM(V, ndv - 2) != c->S)
        return err_shapes(PyExc_ValueError, "K", K, "V", V, "%s: V has %zd "
                          "positions but K has %zd", c->fname,
                          (Py_ssize_t)PyArray_DIM(V, ndv - 2),
                          (Py_ssize_t)c->S);
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
        PyObject *o = args[op == OP_MASK ? A_MASK : A_BIAS];
        if (o == Py_None)
            continue;
        if (!(c->raw[op] = as_array16(o, c->fname, op_names[op])) ||
            (op == OP_MASK && check_keep_mask(c->raw[op], c->fname) < 0))
            return -1;
        if (op == OP_BIAS && PyArray_ISBOOL(c->raw[op])) {
            /* added to the scores, True would add 1: a keep-mask given
             * as PyTorch's boolean attn_mask would block nothing      */
            PyErr_Format(PyExc_ValueError,
                         "%s: bias is boolean, but bias is added to the "
                         "scores (True adds 1, False 0). A keep-mask "
                         "(True = may attend, like PyTorch's boolean "
                         "attn_mask) goes in mask= instead (bias.shape=%s)",
                         c->fname, AP_SHAPE(c->raw[op]));
            return -1;
        }
        /* a 16-bit bias stays 16-bit in the forward pass; the backward
         * pass reads it in the compute type (attn.h)                   */
        PyArrayObject *a =
            op == OP_MASK ? as_type(c->raw[op], NPY_BOOL, c->fname, "mask")
            : c->bwd ? as_type(c->raw[op], c->typenum, c->fname, "bias")
                     : as_storage(c->raw[op], c->typenum, c->fname, "bias");
        if (!a || !(a = at_least_2d(a)))
            return -1;
        c->arr[op] = a;
        int nd = PyArray_NDIM(a);
        npy_intp ml = PyArray_DIM(a, nd - 2), ms = PyArray_DIM(a, nd - 1);
        if ((ml != 1 && ml != c->L) || (ms != 1 && ms != c->S))
            return err_shapes(PyExc_ValueError, op_names[op], c->raw[op], "Q",
                              c->arr[OP_Q], "%s: %s of shape (..., %zd, %zd) "
                              "does not broadcast to the scores' (..., L, S) "
                              "= (..., %zd, %zd)", c->fname, op_names[op],
                              (Py_ssize_t)ml, (Py_ssize_t)ms, (Py_ssize_t)c->L,
                              (Py_ssize_t)c->S);
    }
    /* alibi_slopes (..., H): one slope per batch item, every dim a batch
     * dim                                                               */
    if (c->alibi &&
        (!(c->raw[OP_ALIBI] = as_array16(c->alibi, c->fname,
                                         "alibi_slopes")) ||
         !(c->arr[OP_ALIBI] = as_type(c->raw[OP_ALIBI], c->typenum,
                                      c->fname, "alibi_slopes"))))
        return -1;
    if (c->alibi && PyArray_NDIM(c->arr[OP_ALIBI]) < 1) {
        PyErr_Format(PyExc_ValueError,
                     "%s: alibi_slopes must have a head axis, shape (H,) or "
                     "(B, H) for Q (B, H, L, E), got a scalar", c->fname);
        return -1;
    }
    return 0;
}

/* operand op's trailing dims that are not batch dims */
static int core_nd(int op) { return op == OP_ALIBI ? 0 : op == OP_LSE ? 1 : 2; }

/* the inputs' leading (batch) dims broadcast by NumPy's rules: bnd,
 * bshape and their product B                                            */
static int sdpa_batch(sdpa_call *c)
{
    int first[NPY_MAXDIMS]; /* per dim: the first input not 1 there */
    c->bnd = 0;
    for (int op = OP_Q; op < N_IN; op++)
        if (c->arr[op] && PyArray_NDIM(c->arr[op]) - core_nd(op) > c->bnd)
            c->bnd = PyArray_NDIM(c->arr[op]) - core_nd(op);
    if (c->bnd > NPY_MAXDIMS - 2) {
        PyErr_Format(PyExc_ValueError, "%s: too many dimensions", c->fname);
        return -1;
    }
    for (int d = 0; d < c->bnd; d++) {
        c->bshape[d] = 1;
        first[d] = -1;
    }
    for (int op = OP_Q; op < N_IN; op++) {
        PyArrayObject *a = c->arr[op];
        const int nb = a ? PyArray_NDIM(a) - core_nd(op) : 0;
        for (int k = 0; k < nb; k++) {
            const int d = c->bnd - nb + k, f = first[d];
            const npy_intp n = PyArray_DIM(a, k);
            if (n != 1 && f < 0) {
                c->bshape[d] = n;
                first[d] = op;
            }
            else if (n != 1 && c->bshape[d] != n)
                return err_shapes(PyExc_ValueError, op_names[f], c->arr[f],
                                  op_names[op], a, "%s: the leading (batch) "
                                  "dimensions of %s and %s do not broadcast",
                                  c->fname, op_names[f], op_names[op]);
        }
    }
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

/* dims = the broadcast batch shape + (rows, cols) */
static void call_dims(const sdpa_call *c, npy_intp *dims, npy_intp rows,
                      npy_intp cols)
{
    for (int d = 0; d < c->bnd; d++)
        dims[d] = c->bshape[d];
    dims[c->bnd] = rows;
    dims[c->bnd + 1] = cols;
}

/* arr[op]: a new result of dtype rdescr, or the out= array obj (checked;
 * through a temporary when it may overlap arr[0 .. nins))               */
static int sdpa_dest(sdpa_call *c, int op, PyObject *obj, const npy_intp *dims,
                     const char *what, int nins)
{
    const int nd = c->bnd + 2;
    if (obj == Py_None)
        return (c->arr[op] = new_result_descr(nd, dims, c->rdescr, c->fname,
                                              what)) ? 0 : -1;
    PyArrayObject **u = &c->user[op - OP_OUT];
    return (*u = check_out_wide(obj, c->fname, op_names[op], nd, dims,
                                c->rdescr)) &&
                   (c->arr[op] = dest_for_call(*u, c->arr, nins, c->typenum,
                                               &c->tmp[op - OP_OUT]))
               ? 0
               : -1;
}

/* results: out (..., L, Ev), weights/scores (..., L, S); out may not
 * overlap the inputs, weights_out neither them nor out                  */
static int sdpa_results(sdpa_call *c, PyObject *const *args)
{
    const int nd = c->bnd + 2;
    npy_intp odims[NPY_MAXDIMS], wdims[NPY_MAXDIMS];
    call_dims(c, odims, c->L, c->Ev);
    call_dims(c, wdims, c->L, c->S);
    if (sdpa_dest(c, OP_OUT, args[A_OUT], odims, "the output", N_IN) < 0 ||
        ((c->want == 1 || c->want == 2) &&
         sdpa_dest(c, OP_W, args[A_W], wdims, "the weights", OP_W) < 0))
        return -1;
    /* explain's raw scores: a teaching intermediate, in the compute type */
    if (c->want == 2 && !(c->arr[OP_SC] = new_result(nd, wdims, c->typenum,
                                                     c->fname, "the scores")))
        return -1;
    if (c->want == 3 && !(c->arr[OP_LSE] = new_result(nd - 1, odims,
                                                      c->typenum, c->fname,
                                                      "the lse")))
        return -1;
    /* out= and weights_out= must not be the same memory */
    PyArrayObject *o = c->user[0], *w = c->user[1];
    if (!may_overlap(o, w)) /* bounds apart: fine */
        return 0;
    PyObject *np = PyImport_ImportModule("numpy");
    PyObject *r = np ? PyObject_CallMethod(np, "shares_memory", "OO", o, w)
                     : NULL;
    const int shared = r ? PyObject_IsTrue(r) : -1;
    Py_XDECREF(np);
    Py_XDECREF(r);
    if (shared > 0)
        PyErr_Format(PyExc_ValueError, "%s: out and weights_out share memory",
                     c->fname);
    return shared ? -1 : 0;
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
        int lead = PyArray_NDIM(c->arr[op]) - core_nd(op);
        for (int d = 0; d < c->bnd; d++) {
            int k = d - (c->bnd - lead);
            bst[op][d] = (k >= 0 && PyArray_DIM(c->arr[op], k) != 1)
                             ? st[op][k] : 0;
        }
    }
    /* work exists only if some result has elements (an empty output with
     * S == 0 rows still has nothing to write) */
    c->busy = c->B > 0 && (c->bwd || (c->L > 0 &&
              (c->Ev > 0 || (c->want && c->S > 0) || c->want == 3 ||
               c->p.fully_masked == ATTN_FM_RAISE)));
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
    attn_mat *mats[N_OPS] = {&p->q,       &p->k,       &p->v,
                             &p->mask,    &p->bias,    &p->alibi, &p->out,
                             &p->weights, &p->scores,  &p->lse,
                             &c->dmat[0], &c->dmat[1], &c->dmat[2],
                             &c->dmat[3], &c->dmat[4]};
    for (int op = 0; op < N_OPS; op++) {
        PyArrayObject *a = c->arr[op];
        ptrdiff_t lst[2] = {a && op == OP_LSE ? st[op][PyArray_NDIM(a) - 1]
                                              : 0, 0};
        *mats[op] = op == OP_LSE || op == OP_ALIBI
                        ? mat_of(a, boff[op], lst, 2)
                        : mat_of(a, boff[op], a ? st[op] : NULL,
                                 a ? PyArray_NDIM(a) : 2);
    }
    if (clamp_window(p, c->fname) < 0)
        return -1;
    PyObject *scale = args[A_SCALE];
    if (scale == Py_None) {
        p->scale = c->E > 0 ? 1.0 / sqrt((double)c->E) : 1.0;
        return 0;
    }
    p->scale = PyFloat_AsDouble(scale);
    if (p->scale == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError,
                     "%s: scale must be a real number or None, got %s",
                     c->fname, Py_TYPE(scale)->tp_name);
        return -1;
    }
    return 0;
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
    PyErr_Format(PyExc_ValueError, "%s: query row %zu%s%s may attend to no "
                 "key (fully_masked='raise')", c->fname, c->p.bad_row,
                 c->bnd ? " of batch index " : "",
                 c->bnd ? AP_DIMS(c->bnd, idx) : "");
}

/* attn_sdpa, or for sdpa_bwd attn_sdpa_backward, with the GIL released */
static int sdpa_compute(sdpa_call *c)
{
    if (!c->busy)
        return 0;
    ap_nogil g;
    attn_status status;
    if (c->bwd) {
        attn_bwd_problem bp = {c->p, c->dmat[0], c->dmat[1], c->dmat[2],
                               c->dmat[3], c->dmat[4]};
        status = AP_RUN(g, attn_sdpa_backward, &bp);
        c->p.bad_b = bp.f.bad_b;
        c->p.bad_row = bp.f.bad_row;
    }
    else
        status = AP_RUN(g, attn_sdpa, &c->p);
    if (status == ATTN_EFULLYMASKED) {
        raise_fully_masked(c);
        return -1;
    }
    return raise_status(status, c->fname);
}

/* arr[ops[0 .. n)] as a tuple, None for an absent one; n == 1: arr[ops[0]]
 * itself (new reference)                                                */
static PyObject *sdpa_pack(sdpa_call *c, const int *ops, int n)
{
    if (n == 1)
        return Py_NewRef(c->arr[ops[0]]);
    PyObject *t = PyTuple_New(n);
    for (int i = 0; t && i < n; i++)
        PyTuple_SET_ITEM(t, i, Py_NewRef(c->arr[ops[i]]
                                         ? (PyObject *)c->arr[ops[i]]
                                         : Py_None));
    return t;
}

/* out; (out, weights); (out, weights, scores); (out, lse): the user's
 * out= arrays, filled from the temporaries                              */
static PyObject *sdpa_deliver(sdpa_call *c)
{
    static const int res[4][3] = {
        {OP_OUT}, {OP_OUT, OP_W}, {OP_OUT, OP_W, OP_SC}, {OP_OUT, OP_LSE}};
    for (int k = 0; k < 2; k++) {
        PyArrayObject *u = c->user[k], **a = &c->arr[OP_OUT + k];
        if (u && c->tmp[k] && PyArray_CopyInto(u, *a) < 0)
            return NULL;
        if (u)
            Py_SETREF(*a, (PyArrayObject *)Py_NewRef(u));
    }
    return sdpa_pack(c, res[c->want], c->want < 3 ? (int)c->want + 1 : 2);
}

static void sdpa_release(sdpa_call *c)
{
    PyMem_RawFree(c->offs);
    for (int op = 0; op < N_OPS; op++) {
        Py_XDECREF(c->arr[op]);
        Py_XDECREF(c->raw[op]);
    }
    Py_XDECREF(c->user[0]);
    Py_XDECREF(c->user[1]);
    Py_XDECREF(c->rdescr);
}

static PyObject *core_sdpa(PyObject *Py_UNUSED(mod), PyObject *const *argv,
                           Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *args[N_SDPA_ARGS];
    if (ap_parse_args(&sdpa_spec, argv, nargs, kwnames, args) < 0)
        return NULL;
    sdpa_call c;
    memset(&c, 0, sizeof c);
    PyObject *result = NULL;
    if (sdpa_header(&c, args) == 0 && sdpa_inputs(&c, args) == 0 &&
        sdpa_core_dims(&c) == 0 && sdpa_mask_bias(&c, args) == 0 &&
        sdpa_batch(&c) == 0 && sdpa_results(&c, args) == 0 &&
        sdpa_problem(&c, args) == 0 && sdpa_compute(&c) == 0)
        result = sdpa_deliver(&c);
    sdpa_release(&c);
    return result;
}

/* ------------------------------------------------------------------------ */
/* sdpa_bwd(Q, K, V, /, *, mask, bias, causal, scale, fully_masked, dout,   */
/*          out, lse, bias_grad, fname, variants, pos_shift)                */
/*          -> (dQ, dK, dV, dbias or None)                                  */
/* Steps 2-5, 7 and 8 are sdpa's; the gradients have the broadcast batch   */
/* shape (the wrapper sums them to the inputs' shapes).                     */
/* ------------------------------------------------------------------------ */
/* out, lse and dout: the compute type, exactly the forward's shapes */
static int bwd_inputs(sdpa_call *c, PyObject *const *args)
{
    static const int ops[3] = {OP_OUT, OP_LSE, OP_DOUT};
    static const int argi[3] = {B_OUT, B_LSE, B_DOUT};
    npy_intp dims[NPY_MAXDIMS];
    call_dims(c, dims, c->L, c->Ev);
    for (int i = 0; i < 3; i++) {
        const int op = ops[i], nd = c->bnd + (op == OP_LSE ? 1 : 2);
        PyArrayObject *a = c->raw[op] = as_array16(args[argi[i]], c->fname,
                                                   op_names[op]);
        if (!a)
            return -1;
        if (!same_dims(a, nd, dims)) {
            PyErr_Format(PyExc_ValueError, "%s: %s must have shape %s (the "
                         "forward pass's %s for Q.shape=%s, V.shape=%s), got "
                         "%s.shape=%s", c->fname, op_names[op],
                         AP_DIMS(nd, dims), op == OP_LSE ? "lse" : "output",
                         AP_SHAPE(c->arr[OP_Q]), AP_SHAPE(c->arr[OP_V]),
                         op_names[op], AP_SHAPE(a));
            return -1;
        }
        /* out and dout may stay 16-bit; lse is read in the compute type */
        if (!(c->arr[op] = op == OP_LSE
                  ? as_type(a, c->typenum, c->fname, op_names[op])
                  : as_storage(a, c->typenum, c->fname, op_names[op])))
            return -1;
    }
    return 0;
}

static int bwd_results(sdpa_call *c, PyObject *bias_grad)
{
    const int nd = c->bnd + 2;
    const npy_intp rows[4] = {c->L, c->S, c->S, c->L};
    const npy_intp cols[4] = {c->E, c->E, c->Ev, c->S};
    static const char *const what[4] = {"dQ", "dK", "dV", "dbias"};
    int want_db = PyObject_IsTrue(bias_grad);
    if (want_db < 0)
        return -1;
    npy_intp dims[NPY_MAXDIMS];
    for (int i = 0; i < 4; i++) {
        if (i == 3 && (!want_db || !c->arr[OP_BIAS]))
            break;
        call_dims(c, dims, rows[i], cols[i]);
        /* in the operand's 16-bit dtype where the wrapper sums nothing
         * (the operand has exactly the gradient's shape), else in the
         * compute type: the wrapper sums that and rounds once to the
         * operand's dtype                                                */
        PyArrayObject *x = c->arr[i == 3 ? OP_BIAS : i];
        if (is_16bit(PyArray_DESCR(x)) && same_dims(x, nd, dims))
            c->arr[OP_DQ + i] = new_result_descr(nd, dims, PyArray_DESCR(x),
                                                 c->fname, what[i]);
        else
            c->arr[OP_DQ + i] = new_result(nd, dims, c->typenum, c->fname,
                                           what[i]);
        if (!c->arr[OP_DQ + i])
            return -1;
    }
    return 0;
}

static PyObject *core_sdpa_bwd(PyObject *Py_UNUSED(mod),
                               PyObject *const *argv, Py_ssize_t nargs,
                               PyObject *kwnames)
{
    PyObject *args[N_BWD_ARGS];
    if (ap_parse_args(&bwd_spec, argv, nargs, kwnames, args) < 0)
        return NULL;
    sdpa_call c;
    memset(&c, 0, sizeof c);
    PyObject *result = NULL;
    c.bwd = 1;
    if (sdpa_common(&c, args, N_BWD_ARGS, B_FNAME, "attention_backward") == 0
        && sdpa_inputs(&c, args) == 0 &&
        sdpa_core_dims(&c) == 0 && sdpa_mask_bias(&c, args) == 0 &&
        sdpa_batch(&c) == 0 && bwd_inputs(&c, args) == 0 &&
        bwd_results(&c, args[B_BIAS_GRAD]) == 0 &&
        sdpa_problem(&c, args) == 0 && sdpa_compute(&c) == 0)
        result = sdpa_pack(&c, (const int[]){OP_DQ, OP_DK, OP_DV, OP_DB}, 4);
    sdpa_release(&c);
    return result;
}

PyMethodDef ap_attention_methods[] = {
    {"sdpa_bwd", AP_FASTCALL(core_sdpa_bwd), AP_KW,
     "sdpa_bwd(Q, K, V, /, *, mask=None, bias=None, causal=False, "
     "scale=None, fully_masked='zero', dout, out, lse, bias_grad=False, "
     "fname='attention_backward', variants=None, pos_shift=0)\n--\n\n"
     "The gradients of sdpa in C: (dQ, dK, dV, dbias or None), each with "
     "the broadcast batch shape (dout, out and lse are required)."},
    {"sdpa", AP_FASTCALL(core_sdpa), AP_KW,
     "sdpa(Q, K, V, /, *, mask=None, bias=None, causal=False, scale=None, "
     "fully_masked='zero', out=None, weights_out=None, fname=None, "
     "variants=None, pos_shift=0, return_weights=False, "
     "return_scores=False, return_lse=False)"
     "\n--\n\n"
     "Scaled dot-product attention in C: out; (out, weights) with "
     "return_weights; (out, weights, raw scores) with return_scores; "
     "(out, lse) with return_lse."},
    {NULL, NULL, 0, NULL}};
