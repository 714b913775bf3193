/*
 * python/elementwise.c -- bindings of the element-wise family: softmax,
 * softmax_backward, softmax_jacobian, and combine_heads (a batched
 * strided copy). softmax and softmax_backward take float16 / bfloat16
 * data as it is (args.h, "16-bit storage"): the result dtype is NumPy's
 * result type of the inputs, the core reads 16-bit operands in 16 bits
 * under a float32 call and rounds a 16-bit result once.
 */
#include "args.h"

/* Rows along `axis` of an nd-dim array of extent dims: *nrows rows of
 * dims[axis] elements. st[op][d] holds operand op's element stride along
 * dim d (d != axis used). *offs gets nops*nrows offsets (NULL when there
 * are no rows or no elements). 0, or -1 with an exception.               */
static int row_offsets(int nd, const npy_intp *dims, int axis, int nops,
                       ptrdiff_t (*st)[NPY_MAXDIMS], size_t *nrows,
                       ptrdiff_t **offs)
{
    npy_intp rshape[NPY_MAXDIMS];
    ptrdiff_t rst[AP_MAX_OPS][NPY_MAXDIMS];
    int rnd = 0;
    *nrows = 1;
    *offs = NULL;
    for (int d = 0; d < nd; d++) {
        if (d == axis)
            continue;
        rshape[rnd] = dims[d];
        for (int op = 0; op < nops; op++)
            rst[op][rnd] = st[op][d];
        *nrows *= (size_t)dims[d];
        rnd++;
    }
    if (*nrows == 0 || dims[axis] == 0)
        return 0;
    if (!(*offs = alloc_offsets((size_t)nops, *nrows)))
        return -1;
    fill_offsets(rnd, rshape, nops, rst, *offs, *nrows);
    return 0;
}

AP_ARGSPEC(softmax_spec, "softmax", 1, 2, "x", "axis", "out", "fname");
AP_ARGSPEC(softmax_bwd_spec, "softmax_backward", 2, 3, "dy", "y", "axis",
           "out", "fname");
AP_ARGSPEC(jacobian_spec, "softmax_jacobian", 1, 2, "y", "axis", "fname");

/* the axis argument (already normalised by the Python wrapper) of an
 * nd-dim array: 0, or -1 with an exception                              */
static int check_axis(PyObject *o, int nd, const char *fname, int *axis)
{
    long a = PyLong_AsLong(o);
    if (a == -1 && PyErr_Occurred())
        return -1;
    if (a < 0 || a >= nd) {
        PyErr_Format(PyExc_ValueError, "%s: axis %ld is out of bounds for an "
                     "array of dimension %d", fname, a, nd);
        return -1;
    }
    *axis = (int)a;
    return 0;
}

/* u->raw, u->typenum and u->x from the input x (real numbers): 0, or -1
 * with an exception                                                     */
static int unary_real(ap_unary *u, PyObject *x, const char *fname,
                      const char *arg)
{
    if (!(u->raw = as_real_array(x, fname, arg)))
        return -1;
    u->typenum = compute_type_of(PyArray_DESCR(u->raw));
    return (u->x = as_type(u->raw, u->typenum, fname, arg)) ? 0 : -1;
}

/* ------------------------------------------------------------------------ */
/* softmax(x, axis, out, fname) (n = 1) and softmax_backward(dy, y, axis,   */
/* out, fname) (n = 2), axis already normalised by the caller: the inputs   */
/* of one shape; out may be exactly x, dy or y (in place), other overlaps   */
/* go through a temporary                                                   */
/* ------------------------------------------------------------------------ */
static PyObject *softmax_call(ap_argspec *spec, int n, PyObject *const *argv,
                              Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[2][2] = {{"x", NULL}, {"dy", "y"}};
    const char *const *name = names[n - 1];
    ap_unary u = {0};
    PyArrayObject *raw[2] = {NULL, NULL}, *in[2] = {NULL, NULL};
    PyArray_Descr *rd = NULL;
    int ok = 0, axis;
    PyObject *args[5];
    const char *fname = ap_parse_named(spec, argv, nargs, kwnames, args,
                                       n + 2);
    if (!fname)
        return NULL;
    for (int i = 0; i < n; i++)
        if (!(raw[i] = as_array16(args[i], fname, name[i])))
            goto fail;
    if (n == 2 && !PyArray_SAMESHAPE(raw[0], raw[1])) {
        err_shapes(PyExc_ValueError, "dy", raw[0], "y", raw[1],
                   "%s: dy and y must have the same shape", fname);
        goto fail;
    }
    const int nd = PyArray_NDIM(raw[0]);
    if (check_axis(args[n], nd, fname, &axis) < 0 ||
        !(rd = result_descr(n, raw)))
        goto fail;
    u.typenum = compute_type16(rd);
    for (int i = n - 1; i >= 0; i--) /* y before dy */
        if (!(in[i] = as_storage(raw[i], u.typenum, fname, name[i])))
            goto fail;
    if (ap_unary_dest16(&u, args[n + 1], rd, fname, in, n) < 0)
        goto fail;
    ptrdiff_t st[3][NPY_MAXDIMS], rst[3][NPY_MAXDIMS];
    npy_intp rshape[NPY_MAXDIMS];
    size_t nrows = 1;
    for (int i = 0; i < n; i++)
        if (ensure_elem_strides(&in[i], st[i]) < 0)
            goto fail;
    if (elem_strides(u.dst, st[n]) < 0)
        goto fail;
    for (int d = 0, k = 0; d < nd; d++) { /* the dims but axis: rows */
        if (d == axis)
            continue;
        rshape[k] = PyArray_DIM(in[0], d);
        for (int i = 0; i <= n; i++)
            rst[i][k] = st[i][d];
        nrows *= (size_t)rshape[k++];
    }
    const size_t len = (size_t)PyArray_DIM(in[0], axis);
    attn_mat m[3]; /* rows of x (dy, y), then of the result */
    if (nrows && len) {
        if (row_tables(nd - 1, rshape, n + 1, rst, nrows, m, &u.offs) < 0)
            goto fail;
        for (int i = 0; i <= n; i++) {
            PyArrayObject *a = i < n ? in[i] : u.dst;
            m[i] = (attn_mat){PyArray_DATA(a), m[i].boff, m[i].s0,
                              st[i][axis], store_of(a)};
        }
        const attn_dtype dt = dtype_of(u.typenum);
        const attn_softmax_args a = {dt, nrows, len, m[1], m[0]};
        const attn_softmax_grad_args ga = {dt, nrows, len, m[2], m[0], m[1]};
        ap_nogil g;
        if (raise_status(n == 1 ? AP_RUN(g, attn_softmax, &a)
                                : AP_RUN(g, attn_softmax_backward, &ga),
                         fname) < 0)
            goto fail;
    }
    ok = 1;
fail:
    Py_XDECREF(rd);
    for (int i = 0; i < n; i++) {
        Py_XDECREF(raw[i]);
        Py_XDECREF(in[i]);
    }
    return ap_unary_finish(&u, ok);
}

AP_ENTRY(softmax, softmax_call, &softmax_spec, 1)
AP_ENTRY(softmax_backward, softmax_call, &softmax_bwd_spec, 2)

/* ------------------------------------------------------------------------ */
/* softmax_jacobian(y, axis, fname) -> (y.shape without axis) + (n, n)       */
/* ------------------------------------------------------------------------ */
static PyObject *core_softmax_jacobian(PyObject *Py_UNUSED(mod),
                                       PyObject *const *argv, Py_ssize_t nargs,
                                       PyObject *kwnames)
{
    ap_unary u = {0};
    int ok = 0;
    PyObject *args[3];
    const char *fname = ap_parse_named(&jacobian_spec, argv, nargs, kwnames,
                                       args, 2);
    if (!fname)
        return NULL;
    int axis;
    if (unary_real(&u, args[0], fname, "y") < 0 ||
        check_axis(args[1], PyArray_NDIM(u.raw), fname, &axis) < 0)
        goto fail;
    int nd = PyArray_NDIM(u.raw);
    if (nd + 1 > NPY_MAXDIMS) {
        PyErr_Format(PyExc_ValueError, "%s: y has %d dimensions; the "
                     "Jacobian would have more than %d", fname, nd,
                     NPY_MAXDIMS);
        goto fail;
    }
    npy_intp n = PyArray_DIM(u.raw, axis), jdims[NPY_MAXDIMS];
    for (int d = 0, k = 0; d < nd; d++)
        if (d != axis)
            jdims[k++] = PyArray_DIM(u.raw, d);
    jdims[nd - 1] = jdims[nd] = n;
    if (!(u.dst = new_result(nd + 1, jdims, u.typenum, fname,
                             "the Jacobian")))
        goto fail;
    ptrdiff_t st[2][NPY_MAXDIMS], sj[NPY_MAXDIMS];
    size_t nrows;
    if (ensure_elem_strides(&u.x, st[0]) < 0 || elem_strides(u.dst, sj) < 0)
        goto fail;
    for (int d = 0, k = 0; d < nd; d++)  /* J's batch dims, in y's order */
        st[1][d] = d == axis ? 0 : sj[k++];
    if (row_offsets(nd, PyArray_DIMS(u.x), axis, 2, st, &nrows, &u.offs) < 0)
        goto fail;
    if (u.offs) {
        attn_mat my = {PyArray_DATA(u.x), u.offs, 0, st[0][axis], ATTN_ST_NATIVE};
        attn_mat mj = mat_of(u.dst, u.offs + nrows, sj, nd + 1);
        const attn_softmax_jac_args a = {dtype_of(u.typenum), nrows,
                                         (size_t)n, mj, my};
        ap_nogil g;
        if (raise_status(AP_RUN(g, attn_softmax_jacobian, &a), fname) < 0)
            goto fail;
    }
    ok = 1;
fail:
    return ap_unary_finish(&u, ok);
}

/* ------------------------------------------------------------------------ */
/* combine_heads(x, /, *, out, fname): x (..., H, T, dk) -> (..., T, H*dk) */
/* ------------------------------------------------------------------------ */
AP_ARGSPEC(combine_spec, "combine_heads", 1, 1, "x", "out", "fname");

static PyObject *core_combine_heads(PyObject *Py_UNUSED(mod),
                                    PyObject *const *argv, Py_ssize_t nargs,
                                    PyObject *kwnames)
{
    ap_unary u = {0};
    int ok = 0;
    PyObject *args[3];
    const char *fname = ap_parse_named(&combine_spec, argv, nargs, kwnames,
                                       args, 2);
    if (!fname)
        return NULL;
    if (unary_real(&u, args[0], fname, "x") < 0 ||
        need_ndim(u.raw, 3, fname, "x", "..., H, T, dk") < 0)
        goto fail;
    const int nd = PyArray_NDIM(u.raw);
    npy_intp H = PyArray_DIM(u.x, nd - 3), T = PyArray_DIM(u.x, nd - 2),
             dk = PyArray_DIM(u.x, nd - 1);
    npy_intp odims[NPY_MAXDIMS];
    for (int d = 0; d < nd - 3; d++)
        odims[d] = PyArray_DIM(u.x, d);
    odims[nd - 3] = T;
    if (H != 0 && dk > NPY_MAX_INTP / H) {
        PyErr_Format(PyExc_ValueError, "%s: H*dk overflows", fname);
        goto fail;
    }
    odims[nd - 2] = H * dk;
    /* out= of exactly the result's dtype; an overlap with x: a temporary */
    if (args[1] == Py_None
            ? !(u.dst = new_result(nd - 1, odims, u.typenum, fname,
                                   "the result"))
            : !(u.user = check_out(args[1], fname, "out", nd - 1, odims,
                                   u.typenum)) ||
                  !(u.dst = dest_for_call(u.user, &u.x, 1, u.typenum,
                                          &u.is_tmp)))
        goto fail;
    ptrdiff_t sx[NPY_MAXDIMS], so[NPY_MAXDIMS];
    if (ensure_elem_strides(&u.x, sx) < 0 || elem_strides(u.dst, so) < 0)
        goto fail;
    /* batch = (..., H): x steps by its own strides; out by its leading
     * strides and, along H, by dk columns */
    int bnd = nd - 2;
    size_t B = 1;
    ptrdiff_t bst[2][NPY_MAXDIMS];
    for (int d = 0; d < bnd; d++) {
        B *= (size_t)PyArray_DIM(u.x, d);
        bst[0][d] = sx[d];
        bst[1][d] = d < bnd - 1 ? so[d] : (ptrdiff_t)dk * so[nd - 2];
    }
    if (B > 0 && T > 0 && dk > 0) {
        if (!(u.offs = alloc_offsets(2, B)))
            goto fail;
        fill_offsets(bnd, PyArray_DIMS(u.x), 2, bst, u.offs, B);
        attn_mat mi = mat_of(u.x, u.offs, sx, nd);
        attn_mat mo = mat_of(u.dst, u.offs + B, so, nd - 1);
        const attn_copy_args a = {dtype_of(u.typenum), B, (size_t)T,
                                  (size_t)dk, mo, mi};
        ap_nogil g;
        if (raise_status(AP_RUN(g, attn_copy2d, &a), fname) < 0)
            goto fail;
    }
    ok = 1;
fail:
    return ap_unary_finish(&u, ok);
}

PyMethodDef ap_elementwise_methods[] = {
    {"softmax", AP_FASTCALL(core_softmax), AP_KW,
     "softmax(x, /, *, axis, out=None, fname='softmax')\n--\n\n"
     "Softmax along axis (normalised by the caller) in C."},
    {"softmax_backward", AP_FASTCALL(core_softmax_backward), AP_KW,
     "softmax_backward(dy, y, /, *, axis, out=None, "
     "fname='softmax_backward')\n--\n\ny * (dy - sum(dy * y)) in C."},
    {"softmax_jacobian", AP_FASTCALL(core_softmax_jacobian), AP_KW,
     "softmax_jacobian(y, /, *, axis, fname='softmax_jacobian')\n--\n\n"
     "diag(y) - y y^T along axis, in C."},
    {"combine_heads", AP_FASTCALL(core_combine_heads), AP_KW,
     "combine_heads(x, /, *, out=None, fname='combine_heads')\n--\n\n"
     "(..., H, T, dk) -> (..., T, H*dk), a strided copy in C."},
    {NULL, NULL, 0, NULL}};
