/*
 * python/heads.c -- bindings of heads and positions: the sinusoidal
 * positional encoding and combine_heads (a batched strided copy).
 */
#include "args.h"

/* ------------------------------------------------------------------------ */
/* posenc(x, offset, base, accumulate, fname): x (..., T, D) float32/64,     */
/* written in place (x = PE, or x += PE). Returns x.                         */
/* ------------------------------------------------------------------------ */
static PyObject *core_posenc(PyObject *Py_UNUSED(mod), PyObject *const *args,
                             Py_ssize_t nargs)
{
    PyArrayObject *w = NULL;
    ptrdiff_t *offs = NULL;
    PyObject *result = NULL;
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "posenc() takes 6 arguments");
        return NULL;
    }
    const char *fname = PyUnicode_AsUTF8(args[4]);
    const char *argname = fname ? PyUnicode_AsUTF8(args[5]) : NULL;
    if (!argname)
        return NULL;
    double offset = PyFloat_AsDouble(args[1]);
    double base = PyFloat_AsDouble(args[2]);
    int accumulate = PyObject_IsTrue(args[3]);
    if (PyErr_Occurred() || accumulate < 0)
        return NULL;
    if (!PyArray_Check(args[0])) {
        PyErr_Format(PyExc_TypeError, "%s: %s must be a NumPy array, got %s",
                     fname, argname, Py_TYPE(args[0])->tp_name);
        return NULL;
    }
    PyArrayObject *x = (PyArrayObject *)args[0];
    PyArray_Descr *dx = PyArray_DESCR(x);
    if (dx->kind != 'f' || (PyDataType_ELSIZE(dx) != 4 &&
                            PyDataType_ELSIZE(dx) != 8)) {
        PyErr_Format(PyExc_TypeError,
                     "%s: %s must have dtype float32 or float64 to be "
                     "updated in place, got %S", fname, argname,
                     (PyObject *)dx);
        return NULL;
    }
    if (PyArray_NDIM(x) < 2) {
        PyObject *s = shape_of(x);
        if (s)
            PyErr_Format(PyExc_ValueError, "%s: %s must have at least 2 "
                         "dimensions (..., T, D), got shape %R", fname,
                         argname, s);
        Py_XDECREF(s);
        return NULL;
    }
    if (!PyArray_ISWRITEABLE(x)) {
        PyErr_Format(PyExc_ValueError, "%s: %s is read-only", fname, argname);
        return NULL;
    }
    int typenum = PyDataType_ELSIZE(dx) == 4 ? NPY_FLOAT : NPY_DOUBLE;
    PyArray_Descr *d = PyArray_DescrFromType(typenum);
    if (!d)
        return NULL;
    w = (PyArrayObject *)PyArray_FromAny(
        (PyObject *)x, d, 0, 0,
        NPY_ARRAY_ALIGNED | NPY_ARRAY_NOTSWAPPED | NPY_ARRAY_WRITEBACKIFCOPY,
        NULL);
    if (!w)
        return NULL;
    ptrdiff_t sw[NPY_MAXDIMS];
    if (elem_strides(w, sw) < 0) {
        PyErr_Format(PyExc_ValueError, "%s: %s has strides that are not a "
                     "multiple of its item size", fname, argname);
        goto fail;
    }
    int nd = PyArray_NDIM(w), lead = nd - 2;
    size_t B = 1;
    for (int k = 0; k < lead; k++)
        B *= (size_t)PyArray_DIM(w, k);
    size_t T = (size_t)PyArray_DIM(w, nd - 2), D = (size_t)PyArray_DIM(w,
                                                                    nd - 1);
    if (B > 0 && T > 0 && D > 0) {
        if (!(offs = alloc_offsets(1, B)))
            goto fail;
        ptrdiff_t bst[1][NPY_MAXDIMS];
        for (int k = 0; k < lead; k++)
            bst[0][k] = sw[k];
        fill_offsets(lead, PyArray_DIMS(w), 1, bst, offs, B);
        attn_mat m = {PyArray_DATA(w), offs, sw[nd - 2], sw[nd - 1]};
        attn_status st;
        AP_RUN_NOGIL(st, attn_posenc(dtype_of(typenum), m, B, T, D, offset,
                                     base, accumulate));
        if (raise_status(st, fname) < 0)
            goto fail;
    }
    if (PyArray_ResolveWritebackIfCopy(w) < 0)
        goto fail;
    Py_INCREF(x);
    result = (PyObject *)x;
fail:
    if (!result && w)
        PyArray_DiscardWritebackIfCopy(w);
    PyMem_RawFree(offs);
    Py_XDECREF(w);
    return result;
}

/* ------------------------------------------------------------------------ */
/* combine_heads(x, out, fname): x (..., H, T, dk) -> out (..., T, H*dk)     */
/* ------------------------------------------------------------------------ */
static PyObject *core_combine_heads(PyObject *Py_UNUSED(mod),
                                    PyObject *const *args, Py_ssize_t nargs)
{
    ap_unary u = {0};
    int ok = 0;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "combine_heads() takes 3 arguments");
        return NULL;
    }
    const char *fname = PyUnicode_AsUTF8(args[2]);
    if (!fname)
        return NULL;
    if (!(u.raw = as_real_array(args[0], fname, "x")))
        return NULL;
    int nd = PyArray_NDIM(u.raw);
    if (nd < 3) {
        PyObject *s = shape_of(u.raw);
        if (s)
            PyErr_Format(PyExc_ValueError, "%s: x must have at least 3 "
                         "dimensions (..., H, T, dk), got shape %R", fname, s);
        Py_XDECREF(s);
        goto fail;
    }
    u.typenum = compute_type_of(PyArray_DESCR(u.raw));
    if (!(u.x = as_type(u.raw, u.typenum, fname, "x")))
        goto fail;
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
    if (ap_unary_dest(&u, args[1], fname, nd - 1, odims, 0) < 0)
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
        attn_mat mi = {PyArray_DATA(u.x), u.offs, sx[nd - 2], sx[nd - 1]};
        attn_mat mo = {PyArray_DATA(u.dst), u.offs + B, so[nd - 3],
                       so[nd - 2]};
        attn_status st;
        AP_RUN_NOGIL(st, attn_copy2d(dtype_of(u.typenum), mo, mi, B,
                                     (size_t)T, (size_t)dk));
        if (raise_status(st, fname) < 0)
            goto fail;
    }
    ok = 1;
fail:
    return ap_unary_finish(&u, ok);
}

PyMethodDef ap_heads_methods[] = {
    {"posenc", AP_FASTCALL(core_posenc), METH_FASTCALL,
     "posenc(x, offset, base, accumulate, fname, argname): x = PE or "
     "x += PE"},
    {"combine_heads", AP_FASTCALL(core_combine_heads),
     METH_FASTCALL, "combine_heads(x, out, fname)"},
    {NULL, NULL, 0, NULL}};
