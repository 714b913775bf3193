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
typedef struct {
    Py_ssize_t K, n;         /* n = 2K partials + out + lse            */
    PyArrayObject **raw;     /* [n]: as given (partials only)          */
    PyArrayObject **arr;     /* [n]: compute type (out, lse: results)  */
    attn_mat *mats;          /* [n]                                    */
    ptrdiff_t *offs;         /* [n * B]                                */
} merge_call;

static void merge_free(merge_call *c)
{
    for (Py_ssize_t i = 0; c->raw && i < c->n; i++) {
        Py_XDECREF(c->raw[i]);
        Py_XDECREF(c->arr[i]);
    }
    PyMem_Free(c->raw);
    PyMem_Free(c->mats);
    PyMem_RawFree(c->offs);
}

/* partial i (outs[k] for i < K, lses[i - K] after) in the compute type    */
static int merge_inputs(merge_call *c, PyObject *lo, PyObject *ll,
                        const char *fname)
{
    char name[40];
    for (Py_ssize_t i = 0; i < 2 * c->K; i++) {
        PyObject *item = i < c->K ? PyList_GET_ITEM(lo, i)
                                  : PyList_GET_ITEM(ll, i - c->K);
        PyOS_snprintf(name, sizeof name, "%s[%zd]", i < c->K ? "outs" : "lses",
                 i < c->K ? i : i - c->K);
        if (!(c->raw[i] = as_array16(item, fname, name)))
            return -1;
    }
    /* 16-bit partials are read in 16 bits (a float32 call) */
    PyArray_Descr *rt = result_descr((int)(2 * c->K), c->raw);
    if (!rt)
        return -1;
    int typenum = compute_type16(rt);
    Py_DECREF(rt);
    for (Py_ssize_t i = 0; i < 2 * c->K; i++)
        if (!(c->arr[i] = as_storage(c->raw[i], typenum, fname,
                                     i < c->K ? "outs" : "lses")))
            return -1;
    return typenum;
}

AP_ARGSPEC(merge_spec, "merge", 2, 2, "outs", "lses", "fname");

static PyObject *core_merge(PyObject *Py_UNUSED(mod), PyObject *const *argv,
                            Py_ssize_t nargs, PyObject *kwnames)
{
    merge_call c = {0};
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
    c.K = PyList_GET_SIZE(args[0]);
    if (c.K < 1 || PyList_GET_SIZE(args[1]) != c.K) {
        PyErr_Format(PyExc_ValueError, "%s: need as many lses as outs, at "
                     "least one", fname);
        return NULL;
    }
    c.n = 2 * c.K + 2;
    c.raw = PyMem_Calloc((size_t)c.n * 2, sizeof *c.raw);
    c.mats = PyMem_Calloc((size_t)c.n, sizeof *c.mats);
    if (!c.raw || !c.mats) {
        PyErr_NoMemory();
        goto fail;
    }
    c.arr = c.raw + c.n;
    int typenum = merge_inputs(&c, args[0], args[1], fname);
    if (typenum < 0)
        goto fail;
    /* shapes: the wrapper broadcast them; outs[0] gives (..., L, Ev) */
    PyArrayObject *o0 = c.arr[0];
    const int nd = PyArray_NDIM(o0);
    const npy_intp *dims = PyArray_DIMS(o0);
    for (Py_ssize_t i = 0; i < 2 * c.K; i++) {
        if (nd < 2 || !same_dims(c.arr[i], i < c.K ? nd : nd - 1, dims)) {
            err_shapes(PyExc_ValueError, "outs[0]", o0, i < c.K ? "outs[k]"
                       : "lses[k]", c.arr[i], "%s: the parts' shapes do not "
                       "match", fname);
            goto fail;
        }
    }
    /* out: the outs' result dtype (16-bit kept in a float32 call); lse:
     * the compute type (float32 for 16-bit results)                     */
    PyArray_Descr *od = typenum == NPY_FLOAT
                            ? result_descr((int)c.K, c.arr)
                            : PyArray_DescrFromType(typenum);
    if (!od)
        goto fail;
    c.arr[c.n - 2] = new_result_descr(nd, dims, od, fname, "out");
    Py_DECREF(od);
    if (!c.arr[c.n - 2] ||
        !(c.arr[c.n - 1] = new_result(nd - 1, dims, typenum, fname, "lse")))
        goto fail;
    const size_t B = lead_size(o0, nd - 2);
    const size_t L = (size_t)dims[nd - 2], Ev = (size_t)dims[nd - 1];
    if (B > 0 && L > 0) {
        if (!(c.offs = alloc_offsets((size_t)c.n, B)))
            goto fail;
        for (Py_ssize_t i = 0; i < c.n; i++) {
            ptrdiff_t st[1][NPY_MAXDIMS];
            if (ensure_elem_strides(&c.arr[i], st[0]) < 0)
                goto fail;
            fill_offsets(nd - 2, dims, 1, st, c.offs + (size_t)i * B, B);
            if (!(i < c.K || i == c.n - 2))
                st[0][nd - 1] = 0; /* an lse (..., L): no column stride */
            c.mats[i] = mat_of(c.arr[i], c.offs + (size_t)i * B, st[0], nd);
        }
        const attn_merge_args a = {dtype_of(typenum), (size_t)c.K, B, L, Ev,
                                   c.mats[c.n - 2], c.mats[c.n - 1], c.mats,
                                   c.mats + c.K};
        ap_nogil g;
        if (raise_status(AP_RUN(g, attn_merge, &a), fname) < 0)
            goto fail;
    }
    result = PyTuple_Pack(2, (PyObject *)c.arr[c.n - 2],
                          (PyObject *)c.arr[c.n - 1]);
fail:
    merge_free(&c);
    return result;
}

PyMethodDef ap_decode_methods[] = {
    {"merge", AP_FASTCALL(core_merge), AP_KW,
     "merge(outs, lses, /, *, fname='merge_attention')\n--\n\n"
     "(out, lse) of partial results over disjoint keys, in C."},
    {NULL, NULL, 0, NULL}};
