/*
 * python/decode.c -- the attention family's decoding binding: merge
 * (attnpy.merge_attention). The split-K decode kernel needs no binding
 * of its own: attention's sdpa reaches it through attn_sdpa.
 */
#include "args.h"

/* ------------------------------------------------------------------------ */
/* merge(outs, lses, /, *, fname): lists of K >= 1 arrays, broadcast by    */
/* the wrapper to (..., L, Ev) and (..., L). Returns (out, lse).              */
/* ------------------------------------------------------------------------ */
AP_ARGSPEC(merge_spec, "merge", 2, 2, "outs", "lses", "fname");

static PyObject *core_merge(PyObject *Py_UNUSED(mod), PyObject *const *argv,
                            Py_ssize_t nargs, PyObject *kwnames)
{
    /* n = 2K + 2 operands: outs[k], lses[k], then out and lse. raw[n]:
     * the partials as given; arr = raw + n: in the compute type (out and
     * lse: the results)                                                 */
    PyArrayObject **raw = NULL, **arr;
    attn_mat *mats = NULL;       /* [n]     */
    ptrdiff_t *offs = NULL;      /* [n * B] */
    Py_ssize_t n = 0;
    PyObject *result = NULL;
    PyObject *args[3];
    const char *fname = ap_parse_named(&merge_spec, argv, nargs, kwnames,
                                       args, 2);
    if (!fname)
        return NULL;
    if (!PyList_Check(args[0]) || !PyList_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "merge() takes 2 lists");
        return NULL;
    }
    const Py_ssize_t K = PyList_GET_SIZE(args[0]);
    if (K < 1 || PyList_GET_SIZE(args[1]) != K) {
        PyErr_Format(PyExc_ValueError, "%s: need as many lses as outs, at "
                     "least one", fname);
        return NULL;
    }
    n = 2 * K + 2;
    raw = PyMem_Calloc((size_t)n * 2, sizeof *raw);
    mats = PyMem_Calloc((size_t)n, sizeof *mats);
    if (!raw || !mats) {
        PyErr_NoMemory();
        goto fail;
    }
    arr = raw + n;
    for (Py_ssize_t i = 0; i < 2 * K; i++) {
        char name[40];
        PyObject *item = i < K ? PyList_GET_ITEM(args[0], i)
                               : PyList_GET_ITEM(args[1], i - K);
        PyOS_snprintf(name, sizeof name, "%s[%zd]", i < K ? "outs" : "lses",
                      i < K ? i : i - K);
        if (!(raw[i] = as_array16(item, fname, name)))
            goto fail;
    }
    /* 16-bit partials are read in 16 bits (a float32 call) */
    PyArray_Descr *rt = result_descr((int)(2 * K), raw);
    if (!rt)
        goto fail;
    const int typenum = compute_type16(rt);
    Py_DECREF(rt);
    for (Py_ssize_t i = 0; i < 2 * K; i++)
        if (!(arr[i] = as_storage(raw[i], typenum, fname,
                                  i < K ? "outs" : "lses")))
            goto fail;
    /* shapes: the wrapper broadcast them; outs[0] gives (..., L, Ev) */
    PyArrayObject *o0 = arr[0];
    const int nd = PyArray_NDIM(o0);
    const npy_intp *dims = PyArray_DIMS(o0);
    for (Py_ssize_t i = 0; i < 2 * K; i++) {
        if (nd < 2 || !same_dims(arr[i], i < K ? nd : nd - 1, dims)) {
            err_shapes(PyExc_ValueError, "outs[0]", o0, i < K ? "outs[k]"
                       : "lses[k]", arr[i], "%s: the parts' shapes do not "
                       "match", fname);
            goto fail;
        }
    }
    /* out: the outs' result dtype (16-bit kept in a float32 call); lse:
     * the compute type (float32 for 16-bit results)                     */
    PyArray_Descr *od = typenum == NPY_FLOAT
                            ? result_descr((int)K, arr)
                            : PyArray_DescrFromType(typenum);
    if (!od)
        goto fail;
    arr[n - 2] = new_result_descr(nd, dims, od, fname, "the result");
    Py_DECREF(od);
    if (!arr[n - 2] ||
        !(arr[n - 1] = new_result(nd - 1, dims, typenum, fname, "lse")))
        goto fail;
    const size_t B = lead_size(o0, nd - 2);
    const size_t L = (size_t)dims[nd - 2], Ev = (size_t)dims[nd - 1];
    if (B > 0 && L > 0) {
        if (!(offs = alloc_offsets((size_t)n, B)))
            goto fail;
        for (Py_ssize_t i = 0; i < n; i++) {
            ptrdiff_t st[1][NPY_MAXDIMS];
            if (ensure_elem_strides(&arr[i], st[0]) < 0)
                goto fail;
            fill_offsets(nd - 2, dims, 1, st, offs + (size_t)i * B, B);
            if (!(i < K || i == n - 2))
                st[0][nd - 1] = 0; /* an lse (..., L): no column stride */
            mats[i] = mat_of(arr[i], offs + (size_t)i * B, st[0], nd);
        }
        const attn_merge_args a = {dtype_of(typenum), (size_t)K, B, L, Ev,
                                   mats[n - 2], mats[n - 1], mats, mats + K};
        ap_nogil g;
        if (raise_status(AP_RUN(g, attn_merge, &a), fname) < 0)
            goto fail;
    }
    result = PyTuple_Pack(2, (PyObject *)arr[n - 2], (PyObject *)arr[n - 1]);
fail:
    for (Py_ssize_t i = 0; raw && i < 2 * n; i++) /* raw, then arr */
        Py_XDECREF(raw[i]);
    PyMem_Free(raw);
    PyMem_Free(mats);
    PyMem_RawFree(offs);
    return result;
}

PyMethodDef ap_decode_methods[] = {
    {"merge", AP_FASTCALL(core_merge), AP_KW,
     "merge(outs, lses, /, *, fname='merge_attention')\n--\n\n"
     "(out, lse) of partial results over disjoint keys, in C."},
    {NULL, NULL, 0, NULL}};
