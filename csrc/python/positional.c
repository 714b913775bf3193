/*
 * python/positional.c -- bindings of the positional family: the
 * sinusoidal encoding (posenc) and the rotary embedding (rope).
 */
#include "args.h"

/* ------------------------------------------------------------------------ */
/* posenc(x, /, *, offset, base, accumulate, fname, argname): x (..., T, */
/* D) float32/64,                                                           */
/* written in place (x = PE, or x += PE). Returns x.                         */
/* ------------------------------------------------------------------------ */
AP_ARGSPEC(posenc_spec, "posenc", 1, 4, "x", "offset", "base", "accumulate",
           "fname", "argname");

static PyObject *core_posenc(PyObject *Py_UNUSED(mod), PyObject *const *argv,
                             Py_ssize_t nargs, PyObject *kwnames)
{
    PyArrayObject *w = NULL;
    ptrdiff_t *offs = NULL;
    PyObject *result = NULL;
    PyObject *args[6];
    const char *fname = ap_parse_named(&posenc_spec, argv, nargs, kwnames,
                                       args, 4);
    const char *argname = !fname               ? NULL
                          : args[5] == Py_None ? "x"
                                               : PyUnicode_AsUTF8(args[5]);
    if (!argname)
        return NULL;
    double offset = PyFloat_AsDouble(args[1]);
    double base = PyFloat_AsDouble(args[2]);
    int accumulate = PyObject_IsTrue(args[3]);
    if (PyErr_Occurred() || accumulate < 0)
        return NULL;
    if (reject_masked(args[0], fname, argname) < 0)
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
    if (need_ndim(x, 2, fname, argname, "..., T, D") < 0)
        return NULL;
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
    ptrdiff_t sw[1][NPY_MAXDIMS];
    if (elem_strides(w, sw[0]) < 0) {
        PyErr_Format(PyExc_ValueError, "%s: %s has strides that are not a "
                     "multiple of its item size", fname, argname);
        goto fail;
    }
    int nd = PyArray_NDIM(w), lead = nd - 2;
    size_t B = lead_size(w, lead);
    size_t T = (size_t)PyArray_DIM(w, nd - 2), D = (size_t)PyArray_DIM(w,
                                                                    nd - 1);
    if (B > 0 && T > 0 && D > 0) {
        if (!(offs = alloc_offsets(1, B)))
            goto fail;
        fill_offsets(lead, PyArray_DIMS(w), 1, sw, offs, B);
        const attn_posenc_args a = {dtype_of(typenum), B, T, D,
                                    mat_of(w, offs, sw[0], nd), offset, base,
                                    accumulate};
        ap_nogil g;
        if (raise_status(AP_RUN(g, attn_posenc, &a), fname) < 0)
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
/* rope(x, /, *, offset, base, interleaved, out, fname): x (..., T, E),    */
/* E even                                                                   */
/* ------------------------------------------------------------------------ */
AP_ARGSPEC(rope_spec, "rope", 1, 4, "x", "offset", "base", "interleaved",
           "out", "fname");

static PyObject *core_rope(PyObject *Py_UNUSED(mod), PyObject *const *argv,
                           Py_ssize_t nargs, PyObject *kwnames)
{
    ap_unary u = {0};
    int ok = 0;
    PyObject *args[6];
    const char *fname = ap_parse_named(&rope_spec, argv, nargs, kwnames,
                                       args, 5);
    if (!fname)
        return NULL;
    double offset = PyFloat_AsDouble(args[1]);
    double base = PyFloat_AsDouble(args[2]);
    int interleaved = PyObject_IsTrue(args[3]);
    if (PyErr_Occurred() || interleaved < 0)
        return NULL;
    if (!(u.raw = as_array16(args[0], fname, "x")))
        goto fail;
    int nd = PyArray_NDIM(u.raw);
    if (need_ndim(u.raw, 2, fname, "x", "..., T, E") < 0)
        goto fail;
    if (PyArray_DIM(u.raw, nd - 1) % 2) {
        PyErr_Format(PyExc_ValueError, "%s: x has %zd features (an odd "
                     "number); RoPE turns pairs (x.shape=%s)", fname,
                     (Py_ssize_t)PyArray_DIM(u.raw, nd - 1), AP_SHAPE(u.raw));
        goto fail;
    }
    /* float16 / bfloat16 x: read in 16 bits, a result of x's dtype (or
     * a wider out=) rounded once from the float32 rotation            */
    PyArray_Descr *rd = result_descr(1, &u.raw);
    if (!rd)
        goto fail;
    u.typenum = compute_type16(rd);
    if ((u.x = as_storage(u.raw, u.typenum, fname, "x")))
        ap_unary_dest16(&u, args[4], rd, fname, &u.x, 1); /* x: in place */
    Py_DECREF(rd);
    if (!u.dst)
        goto fail;
    ptrdiff_t st[2][NPY_MAXDIMS];
    if (ensure_elem_strides(&u.x, st[0]) < 0 || elem_strides(u.dst, st[1]) < 0)
        goto fail;
    const size_t B = lead_size(u.x, nd - 2);
    const size_t T = (size_t)PyArray_DIM(u.x, nd - 2);
    const size_t E = (size_t)PyArray_DIM(u.x, nd - 1);
    if (B > 0 && T > 0 && E > 0) {
        if (!(u.offs = alloc_offsets(2, B)))
            goto fail;
        fill_offsets(nd - 2, PyArray_DIMS(u.x), 2, st, u.offs, B);
        attn_mat mi = mat_of(u.x, u.offs, st[0], nd);
        attn_mat mo = mat_of(u.dst, u.offs + B, st[1], nd);
        const attn_rope_args a = {dtype_of(u.typenum), B, T, E, mo, mi,
                                  offset, base, interleaved};
        ap_nogil g;
        if (raise_status(AP_RUN(g, attn_rope, &a), fname) < 0)
            goto fail;
    }
    ok = 1;
fail:
    return ap_unary_finish(&u, ok);
}

PyMethodDef ap_positional_methods[] = {
    {"posenc", AP_FASTCALL(core_posenc), AP_KW,
     "posenc(x, /, *, offset, base, accumulate, fname='posenc', "
     "argname='x')\n--\n\nx = PE or x += PE (sinusoidal), in place, in C."},
    {"rope", AP_FASTCALL(core_rope), AP_KW,
     "rope(x, /, *, offset, base, interleaved, out=None, "
     "fname='rope')\n--\n\nRotary position embedding in C."},
    {NULL, NULL, 0, NULL}};
