/*
 * python/quant.c -- binding of the quant family: qmatmul (the products of
 * quantized_matmul). The Python wrapper (attnpy/_quant.py) checks the
 * public arguments, flattens the batch dims and allocates out; this
 * function still checks everything it is given, so a direct call of
 * attnpy._core.qmatmul cannot read or write out of bounds.
 */
#include "args.h"

/* a 2-D array of dtype `type` (NPY_FLOAT / NPY_UINT8) whose rows are unit
 * stride and aligned, its row stride a whole number of items (an empty
 * array's strides, often 0, are not looked at); -1 with
 * TypeError / ValueError naming fname and the argument                  */
static int check_rows(PyObject *o, int type, int writable, const char *fname,
                      const char *name)
{
    if (!PyArray_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s: %s must be a NumPy array, got %s",
                     fname, name, Py_TYPE(o)->tp_name);
        return -1;
    }
    PyArrayObject *a = (PyArrayObject *)o;
    if (PyArray_TYPE(a) != type) {
        PyErr_Format(PyExc_TypeError, "%s: %s must have dtype %s, got %S",
                     fname, name, type == NPY_FLOAT ? "float32" : "uint8",
                     (PyObject *)PyArray_DESCR(a));
        return -1;
    }
    const npy_intp isz = PyArray_ITEMSIZE(a);
    if (PyArray_NDIM(a) != 2 || !PyArray_ISALIGNED(a)
        || !PyArray_ISNOTSWAPPED(a)
        || (PyArray_SIZE(a) > 0 && PyArray_DIM(a, 1) > 1
            && PyArray_STRIDE(a, 1) != isz)
        || (PyArray_SIZE(a) > 0 && PyArray_DIM(a, 0) > 1
            && (PyArray_STRIDE(a, 0) < 0 || PyArray_STRIDE(a, 0) % isz))) {
        PyErr_Format(PyExc_ValueError, "%s: %s must be a 2-D array of "
                     "unit-stride, aligned rows", fname, name);
        return -1;
    }
    if (writable && !PyArray_ISWRITEABLE(a)) {
        PyErr_Format(PyExc_ValueError, "%s: %s is read-only", fname, name);
        return -1;
    }
    return 0;
}

/* the row stride in items (a single row: its length)                    */
static size_t row_step(PyArrayObject *a)
{
    if (PyArray_DIM(a, 0) > 1)
        return (size_t)(PyArray_STRIDE(a, 0) / PyArray_ITEMSIZE(a));
    return (size_t)PyArray_DIM(a, 1);
}

/* ------------------------------------------------------------------------ */
/* qmatmul(x, weight, out, /, *, qtype, fname): out (M, N) = x (M, K) W^T, */
/* W the rows of weight (N, K / 32 blocks) decoded as qtype                */
/* ------------------------------------------------------------------------ */
AP_ARGSPEC(qmatmul_spec, "qmatmul", 3, 4, "x", "weight", "out", "qtype",
           "fname");

static PyObject *core_qmatmul(PyObject *Py_UNUSED(mod), PyObject *const *argv,
                              Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *args[5];
    const char *fname = ap_parse_named(&qmatmul_spec, argv, nargs, kwnames,
                                       args, 4);
    if (!fname)
        return NULL;
    static const char *const qnames[] = {"q4_1", "q8_0"};
    static const attn_qtype qtypes[] = {ATTN_Q4_1, ATTN_Q8_0};
    int qi;
    if (!PyUnicode_Check(args[3])) {
        PyErr_Format(PyExc_TypeError, "%s: qtype must be a str", fname);
        return NULL;
    }
    if (parse_choice(args[3], fname, "qtype", NULL, qnames, 2, &qi) < 0)
        return NULL;
    const attn_qtype qt = qtypes[qi];
    if (check_rows(args[0], NPY_FLOAT, 0, fname, "x") < 0
        || check_rows(args[1], NPY_UINT8, 0, fname, "weight") < 0
        || check_rows(args[2], NPY_FLOAT, 1, fname, "out") < 0)
        return NULL;
    PyArrayObject *x = (PyArrayObject *)args[0];
    PyArrayObject *w = (PyArrayObject *)args[1];
    PyArrayObject *o = (PyArrayObject *)args[2];
    const size_t M = (size_t)PyArray_DIM(x, 0), K = (size_t)PyArray_DIM(x, 1);
    const size_t N = (size_t)PyArray_DIM(w, 0);
    const size_t bs = attn_qblock_bytes(qt);
    if (K % 32 || (size_t)PyArray_DIM(w, 1) != K / 32 * bs
        || (size_t)PyArray_DIM(o, 0) != M || (size_t)PyArray_DIM(o, 1) != N) {
        PyErr_Format(PyExc_ValueError, "%s: shapes do not fit: x %s (K a "
                     "multiple of 32), weight %s (K / 32 blocks of %zu bytes "
                     "a row), out %s (M, N)", fname, AP_SHAPE(x), AP_SHAPE(w),
                     bs, AP_SHAPE(o));
        return NULL;
    }
    /* o, x and w are all non-empty exactly when M, N, K > 0 (may_overlap
     * is 0 for an empty array) */
    if (may_overlap(o, x) || may_overlap(o, w)) {
        PyErr_Format(PyExc_ValueError, "%s: out overlaps an input", fname);
        return NULL;
    }
    const attn_qmm_args a = {qt, M, N, K, PyArray_DATA(o), row_step(o),
                             PyArray_DATA(x), row_step(x), PyArray_DATA(w),
                             row_step(w)};
    ap_nogil g;
    if (raise_status(AP_RUN(g, attn_qmatmul, &a), fname) < 0)
        return NULL;
    Py_INCREF(o);
    return (PyObject *)o;
}

PyMethodDef ap_quant_methods[] = {
    {"qmatmul", AP_FASTCALL(core_qmatmul), AP_KW,
     "qmatmul(x, weight, out, /, *, qtype, fname='qmatmul')\n--\n\n"
     "out = x W^T, W decoded from GGUF blocks (q4_1, q8_0), in C."},
    {NULL, NULL, 0, NULL}};
