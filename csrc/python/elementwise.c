/*
 * python/elementwise.c -- bindings of the element-wise family: softmax.
 */
#include "args.h"

/* ------------------------------------------------------------------------ */
/* softmax(x, axis, out, fname): axis already normalised by the caller       */
/* ------------------------------------------------------------------------ */
static PyObject *core_softmax(PyObject *Py_UNUSED(mod), PyObject *const *args,
                              Py_ssize_t nargs)
{
    ap_unary u = {0};
    int ok = 0;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "softmax() takes 4 arguments");
        return NULL;
    }
    const char *fname = PyUnicode_AsUTF8(args[3]);
    if (!fname)
        return NULL;
    int axis = PyLong_AsLong(args[1]);
    if (axis == -1 && PyErr_Occurred())
        return NULL;
    if (!(u.raw = as_real_array(args[0], fname, "x")))
        goto fail;
    int nd = PyArray_NDIM(u.raw);
    if (axis < 0 || axis >= nd) {
        PyErr_Format(PyExc_ValueError, "%s: axis %d is out of bounds for an "
                     "array of dimension %d", fname, axis, nd);
        goto fail;
    }
    u.typenum = compute_type_of(PyArray_DESCR(u.raw));
    if (!(u.x = as_type(u.raw, u.typenum, fname, "x")) ||
        ap_unary_dest(&u, args[2], fname, nd, PyArray_DIMS(u.x), 1) < 0)
        goto fail;
    ptrdiff_t sx[NPY_MAXDIMS], sd[NPY_MAXDIMS];
    if (ensure_elem_strides(&u.x, sx) < 0 || elem_strides(u.dst, sd) < 0)
        goto fail;
    /* rows: every dim but `axis` */
    npy_intp rshape[NPY_MAXDIMS];
    ptrdiff_t rst[2][NPY_MAXDIMS];
    int rnd = 0;
    size_t nrows = 1;
    for (int d = 0; d < nd; d++) {
        if (d == axis)
            continue;
        rshape[rnd] = PyArray_DIM(u.x, d);
        rst[0][rnd] = sx[d];
        rst[1][rnd] = sd[d];
        nrows *= (size_t)PyArray_DIM(u.x, d);
        rnd++;
    }
    size_t n = (size_t)PyArray_DIM(u.x, axis);
    if (nrows > 0 && n > 0) {
        if (!(u.offs = alloc_offsets(2, nrows)))
            goto fail;
        fill_offsets(rnd, rshape, 2, rst, u.offs, nrows);
        attn_mat mi = {PyArray_DATA(u.x), u.offs, 0, sx[axis]};
        attn_mat mo = {PyArray_DATA(u.dst), u.offs + nrows, 0, sd[axis]};
        attn_status st;
        AP_RUN_NOGIL(st,
                     attn_softmax(dtype_of(u.typenum), mo, mi, nrows, n));
        if (raise_status(st, fname) < 0)
            goto fail;
    }
    ok = 1;
fail:
    return ap_unary_finish(&u, ok);
}

PyMethodDef ap_elementwise_methods[] = {
    {"softmax", AP_FASTCALL(core_softmax), METH_FASTCALL,
     "softmax(x, axis, out, fname)"},
    {NULL, NULL, 0, NULL}};
