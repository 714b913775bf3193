/*
 * python/dtypes.c -- 16-bit storage types in the binding (declared and
 * documented in args.h, section "16-bit storage").
 *
 * float16 is NumPy's own NPY_HALF. bfloat16 is ml_dtypes.bfloat16, a
 * user-defined NumPy dtype: it is recognised by its descr alone, so
 * ml_dtypes is never imported here (an array of it can only exist once
 * the user has imported ml_dtypes), and a new bfloat16 array is made from
 * an input's own descr.
 */
#include "args.h" /* first: Python.h before any system header */
#include <string.h>

/* the accepted dtypes, for messages */
#define AP_ACCEPTED "float16, bfloat16, float32 or float64"

/* a string attribute of a type equal to `want` (no exception left) */
static int type_attr_is(PyTypeObject *t, const char *attr, const char *want)
{
    PyObject *v = PyObject_GetAttrString((PyObject *)t, attr);
    int eq = v && PyUnicode_Check(v) &&
             PyUnicode_CompareWithASCIIString(v, want) == 0;
    Py_XDECREF(v);
    PyErr_Clear();
    return eq;
}

int is_bf16_descr(PyArray_Descr *d)
{
    if (d->kind != 'V' || PyDataType_ELSIZE(d) != 2 || !d->typeobj ||
        PyDataType_HASFIELDS(d) || PyDataType_HASSUBARRAY(d))
        return 0;
    if (!type_attr_is(d->typeobj, "__name__", "bfloat16"))
        return 0;
    /* "ml_dtypes" (or a submodule of it, should it move) */
    PyObject *m = PyObject_GetAttrString((PyObject *)d->typeobj, "__module__");
    int ok = 0;
    if (m && PyUnicode_Check(m)) {
        const char *s = PyUnicode_AsUTF8(m);
        ok = s && strncmp(s, "ml_dtypes", 9) == 0 &&
             (s[9] == '\0' || s[9] == '.');
    }
    Py_XDECREF(m);
    PyErr_Clear();
    return ok;
}

ap_kind storage_of(PyArray_Descr *d)
{
    switch (d->kind) {
    case 'b':
    case 'i':
    case 'u':
        return AP_CONV;
    case 'f':
        return d->type_num == NPY_HALF     ? AP_F16
               : d->type_num == NPY_FLOAT  ? AP_F32
               : d->type_num == NPY_DOUBLE ? AP_F64
                                           : AP_CONV; /* longdouble */
    case 'V':
        return is_bf16_descr(d) ? AP_BF16 : AP_BAD;
    default:
        return AP_BAD;
    }
}

attn_store store_of(PyArrayObject *a)
{
    if (!a)
        return ATTN_ST_NATIVE;
    PyArray_Descr *d = PyArray_DESCR(a);
    if (d->type_num == NPY_HALF)
        return ATTN_ST_F16;
    return d->kind == 'V' && is_bf16_descr(d) ? ATTN_ST_BF16 : ATTN_ST_NATIVE;
}

PyArrayObject *as_array16(PyObject *obj, const char *fname, const char *arg)
{
    PyArrayObject *a = any_array(obj, fname, arg, AP_ACCEPTED " numbers");
    if (!a)
        return NULL;
    PyArray_Descr *d = PyArray_DESCR(a);
    if (storage_of(d) == AP_BAD) {
        PyErr_Format(PyExc_TypeError,
                     "%s: %s has dtype %S: expected " AP_ACCEPTED
                     " (bool and integer arrays are converted to float64; "
                     "%s)", fname, arg, (PyObject *)d,
                     d->kind == 'V' ? "bfloat16 is ml_dtypes.bfloat16"
                                    : describe_dtype_problem(d));
        Py_DECREF(a);
        return NULL;
    }
    return a;
}

/* the native-order version of a dtype the kernels can read (new ref) */
static PyArray_Descr *native_descr(PyArray_Descr *d)
{
    if (PyArray_ISNBO(d->byteorder)) {
        Py_INCREF(d);
        return d;
    }
    return PyArray_DescrNewByteorder(d, NPY_NATIVE);
}

static PyArray_Descr *result_descr_of(int n, PyArrayObject *const *arrs,
                                      PyArrayObject **all,
                                      PyArrayObject **rest)
{
    PyArrayObject *bf = NULL;
    int nall = 0, nrest = 0;
    for (int i = 0; i < n; i++) {
        if (!arrs[i])
            continue;
        all[nall++] = arrs[i];
        if (is_bf16_descr(PyArray_DESCR(arrs[i])))
            bf = bf ? bf : arrs[i];
        else
            rest[nrest++] = arrs[i];
    }
    if (!nall)
        return PyArray_DescrFromType(NPY_FLOAT);
    /* NumPy's promotion where it has one (ml_dtypes registers bfloat16
     * with float32, float64 and small integers) */
    PyArray_Descr *rt = PyArray_ResultType(nall, all, 0, NULL);
    /* bfloat16 with float16 (or a wide integer): NumPy has no common
     * dtype; the others' result, at least float32                      */
    const int mixed = !rt && bf && nrest;
    if (mixed) {
        PyErr_Clear();
        rt = PyArray_ResultType(nrest, rest, 0, NULL);
    }
    if (!rt)
        return NULL;
    ap_kind k = storage_of(rt);
    Py_DECREF(rt);
    if (mixed && k == AP_F16)
        k = AP_F32;
    if (k == AP_BF16 && bf) /* the input's own, in native byte order */
        return native_descr(PyArray_DESCR(bf));
    /* float16, float32 and float64 stay; longdouble, bool and integers
     * become float64                                                    */
    return PyArray_DescrFromType(k == AP_F16 ? NPY_HALF
                                 : k == AP_F32 ? NPY_FLOAT : NPY_DOUBLE);
}

PyArray_Descr *result_descr(int n, PyArrayObject *const *arrs)
{
    /* every operand counts (merge_attention passes 2 per part)      */
    PyArrayObject *buf[2 * AP_MAX_OPS], **all = buf, **rest;
    if (n > AP_MAX_OPS
        && !(all = PyMem_Malloc(2 * (size_t)n * sizeof *all)))
        return (PyArray_Descr *)PyErr_NoMemory();
    rest = all + (n > AP_MAX_OPS ? n : AP_MAX_OPS);
    PyArray_Descr *r = result_descr_of(n, arrs, all, rest);
    if (all != buf)
        PyMem_Free(all);
    return r;
}

int compute_type16(PyArray_Descr *result)
{
    return result->type_num == NPY_DOUBLE ? NPY_DOUBLE : NPY_FLOAT;
}

int is_16bit(PyArray_Descr *d)
{
    ap_kind k = storage_of(d);
    return k == AP_F16 || k == AP_BF16;
}

PyArrayObject *as_storage(PyArrayObject *a, int typenum, const char *fname,
                          const char *arg)
{
    if (typenum != NPY_FLOAT || !is_16bit(PyArray_DESCR(a)))
        return as_type(a, typenum, fname, arg);
    PyArray_Descr *d = native_descr(PyArray_DESCR(a));
    if (!d)
        return NULL;
    /* steals d; `a` itself when already aligned and native */
    return (PyArrayObject *)PyArray_FromAny(
        (PyObject *)a, d, 0, 0, NPY_ARRAY_ALIGNED | NPY_ARRAY_NOTSWAPPED,
        NULL);
}

PyArrayObject *check_out_wide(PyObject *obj, const char *fname,
                              const char *arg, int nd, const npy_intp *dims,
                              PyArray_Descr *result)
{
    if (PyArray_Check(obj)) {
        PyArray_Descr *od = PyArray_DESCR((PyArrayObject *)obj);
        const npy_intp osz = PyDataType_ELSIZE(od);
        int wider = od->kind == 'f' && (osz == 4 || osz == 8) &&
                    osz > PyDataType_ELSIZE(result);
        if (wider || PyArray_EquivTypes(od, result))
            return check_out(obj, fname, arg, nd, dims, od->type_num);
        if (PyArray_NDIM((PyArrayObject *)obj) == nd) {
            PyErr_Format(PyExc_TypeError,
                         "%s: %s has dtype %S but the result has dtype %S "
                         "(out may have the result's dtype or a wider one "
                         "of float32, float64)", fname, arg, (PyObject *)od,
                         (PyObject *)result);
            return NULL;
        }
    }
    /* not an array, or a wrong shape: check_out's messages */
    return check_out(obj, fname, arg, nd, dims, compute_type16(result));
}

PyArrayObject *dest_for_call(PyArrayObject *user, PyArrayObject *const *ins,
                             int nins, int typenum, int *is_tmp)
{
    ptrdiff_t st[NPY_MAXDIMS];
    PyArray_Descr *ud = PyArray_DESCR(user);
    /* may a call computing in typenum write user's dtype directly? */
    const int writes = ud->type_num == typenum
                       || (typenum == NPY_FLOAT && is_16bit(ud));
    int direct = writes && PyArray_ISALIGNED(user) &&
                 PyArray_ISNOTSWAPPED(user) && elem_strides(user, st) == 0;
    for (int i = 0; direct && i < nins; i++)
        direct = !may_overlap(user, ins[i]);
    *is_tmp = !direct;
    if (direct) {
        Py_INCREF(user);
        return user;
    }
    /* the user's dtype where the kernel can write it (copied bit for bit
     * afterwards), else the compute type (widened exactly on the copy) */
    PyArray_Descr *d = writes ? native_descr(ud)
                              : PyArray_DescrFromType(typenum);
    if (!d)
        return NULL;
    return (PyArrayObject *)PyArray_Empty(PyArray_NDIM(user),
                                          PyArray_DIMS(user), d, 0);
}

int same_view(PyArrayObject *a, PyArrayObject *b)
{
    int same = PyArray_DATA(a) == PyArray_DATA(b) && PyArray_SAMESHAPE(a, b);
    for (int d = 0; same && d < PyArray_NDIM(a); d++)
        same = PyArray_DIM(a, d) <= 1 ||
               PyArray_STRIDE(a, d) == PyArray_STRIDE(b, d);
    return same;
}

int ap_unary_dest16(ap_unary *u, PyObject *out, PyArray_Descr *rd,
                    const char *fname, PyArrayObject *const *ins, int n)
{
    int nd = PyArray_NDIM(ins[0]);
    const npy_intp *dims = PyArray_DIMS(ins[0]);
    if (out == Py_None)
        return (u->dst = new_result_descr(nd, dims, rd, fname,
                                          "the result")) ? 0 : -1;
    if (!(u->user = check_out_wide(out, fname, "out", nd, dims, rd)))
        return -1;
    PyArrayObject *chk[2];
    for (int i = 0; i < n; i++)
        chk[i] = same_view(u->user, ins[i]) ? NULL : ins[i];
    return (u->dst = dest_for_call(u->user, chk, n, u->typenum,
                                   &u->is_tmp)) ? 0 : -1;
}
