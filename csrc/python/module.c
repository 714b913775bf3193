/*
 * python/module.c -- attnpy._core, the only file that includes Python.h and NumPy.
 *
 * Its job: parse arguments, convert and validate arrays (dtype rules of
 * DESIGN.md), resolve NumPy broadcasting of the leading ("batch") dims into
 * per-operand offset tables, allocate or check results (out=, weights_out=),
 * release the GIL around the core, and map core status codes to exceptions.
 * Every error message starts with the public function's name and names the
 * argument and the shapes involved.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#define PY_ARRAY_UNIQUE_SYMBOL attnpy_ARRAY_API
#include <numpy/arrayobject.h>

#include "attn.h"

/* Operands of one sdpa call, in the order of the offset tables. */
enum { OP_Q, OP_K, OP_V, OP_MASK, OP_BIAS, OP_OUT, OP_W, OP_SC, N_OPS };
static const char *const op_names[N_OPS] = {"Q", "K", "V", "mask", "bias",
                                            "out", "weights_out", "scores"};

static atomic_int g_num_threads = 1;

/* ------------------------------------------------------------------------ */
/* small helpers                                                             */
/* ------------------------------------------------------------------------ */

/* shape of an array as a Python tuple (new reference), for messages */
static PyObject *shape_of(PyArrayObject *a)
{
    int nd = PyArray_NDIM(a);
    PyObject *t = PyTuple_New(nd);
    if (!t)
        return NULL;
    for (int d = 0; d < nd; d++) {
        PyObject *v = PyLong_FromSsize_t(PyArray_DIM(a, d));
        if (!v) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, d, v);
    }
    return t;
}

static PyObject *tuple_of(int nd, const npy_intp *dims)
{
    PyObject *t = PyTuple_New(nd);
    if (!t)
        return NULL;
    for (int d = 0; d < nd; d++) {
        PyObject *v = PyLong_FromSsize_t(dims[d]);
        if (!v) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, d, v);
    }
    return t;
}

/* Raise exc with "fmt % (a.shape, b.shape)" appended style messages. */
static void err_shapes2(PyObject *exc, const char *msg, const char *na,
                        PyArrayObject *a, const char *nb, PyArrayObject *b)
{
    PyObject *sa = shape_of(a), *sb = b ? shape_of(b) : NULL;
    if (sa && (sb || !b)) {
        if (b)
            PyErr_Format(exc, "%s (%s.shape=%R, %s.shape=%R)", msg, na, sa, nb,
                         sb);
        else
            PyErr_Format(exc, "%s (%s.shape=%R)", msg, na, sa);
    }
    Py_XDECREF(sa);
    Py_XDECREF(sb);
}

/* The compute type for a dtype: NPY_FLOAT, NPY_DOUBLE, or -1 (unsupported).
 * float16 -> float32; bool/int -> float64; longdouble -> float64. */
static int compute_type_of(PyArray_Descr *d)
{
    switch (d->kind) {
    case 'b':
    case 'i':
    case 'u':
        return NPY_DOUBLE;
    case 'f':
        return PyDataType_ELSIZE(d) <= 4 ? NPY_FLOAT : NPY_DOUBLE;
    default:
        return -1;
    }
}

static const char *describe_dtype_problem(PyArray_Descr *d)
{
    switch (d->kind) {
    case 'c':
        return "complex numbers are not supported";
    case 'O':
        return "object arrays are not supported";
    case 'U':
    case 'S':
        return "string arrays are not supported";
    case 'M':
    case 'm':
        return "datetime/timedelta arrays are not supported";
    default:
        return "expected real numbers";
    }
}

/* Any array-like -> ndarray in its own dtype (new reference), with a
 * message naming the function and argument on failure. Real dtypes only. */
static PyArrayObject *as_real_array(PyObject *obj, const char *fname,
                                    const char *arg)
{
    if (obj == Py_None) {
        PyErr_Format(PyExc_TypeError,
                     "%s: %s must be an array of real numbers, got None", fname,
                     arg);
        return NULL;
    }
    PyArrayObject *a = (PyArrayObject *)PyArray_FromAny(obj, NULL, 0, 0, 0,
                                                        NULL);
    if (!a) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyErr_NormalizeException(&type, &value, &tb);
        PyErr_Format(PyExc_TypeError,
                     "%s: %s could not be converted to an array (%S)", fname,
                     arg, value ? value : Py_None);
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
        return NULL;
    }
    if (compute_type_of(PyArray_DESCR(a)) < 0) {
        if (PyArray_Check(obj))
            PyErr_Format(PyExc_TypeError,
                         "%s: %s has dtype %S: %s", fname, arg,
                         (PyObject *)PyArray_DESCR(a),
                         describe_dtype_problem(PyArray_DESCR(a)));
        else
            PyErr_Format(PyExc_TypeError,
                         "%s: %s must be an array of real numbers, got %s "
                         "(dtype %S)", fname, arg, Py_TYPE(obj)->tp_name,
                         (PyObject *)PyArray_DESCR(a));
        Py_DECREF(a);
        return NULL;
    }
    return a;
}

/* ndarray -> aligned, native-order array of typenum (new reference).
 * Steals nothing; returns `a` itself (incref'd) when nothing is needed. */
static PyArrayObject *as_type(PyArrayObject *a, int typenum,
                              const char *fname, const char *arg)
{
    PyArray_Descr *descr = PyArray_DescrFromType(typenum);
    if (!descr)
        return NULL;
    /* PyArray_FromAny steals descr */
    PyArrayObject *r = (PyArrayObject *)PyArray_FromAny(
        (PyObject *)a, descr, 0, 0,
        NPY_ARRAY_ALIGNED | NPY_ARRAY_NOTSWAPPED | NPY_ARRAY_FORCECAST, NULL);
    if (r)
        return r;
    /* a converted copy too large: say whose */
    int is_mem = PyErr_ExceptionMatches(PyExc_MemoryError);
    if (is_mem || PyErr_ExceptionMatches(PyExc_ValueError)) {
        PyErr_Clear();
        PyObject *shape = shape_of(a);
        if (shape) {
            PyErr_Format(is_mem ? PyExc_MemoryError : PyExc_ValueError,
                         "%s: %s of shape %R is too large to convert to %s",
                         fname, arg, shape,
                         typenum == NPY_FLOAT ? "float32"
                         : typenum == NPY_DOUBLE ? "float64" : "bool");
            Py_DECREF(shape);
        }
    }
    return NULL;
}

/* Strides of `a` in elements (0 for dims of extent <= 1). -1 if a byte stride
 * is not a multiple of the item size (possible only for odd views). */
static int elem_strides(PyArrayObject *a, ptrdiff_t *st)
{
    npy_intp isz = PyArray_ITEMSIZE(a);
    for (int d = 0; d < PyArray_NDIM(a); d++) {
        npy_intp s = PyArray_STRIDE(a, d);
        if (PyArray_DIM(a, d) <= 1) {
            st[d] = 0;
            continue;
        }
        if (s % isz != 0)
            return -1;
        st[d] = (ptrdiff_t)(s / isz);
    }
    return 0;
}

/* Make sure elem_strides works on *pa (replaces it by a contiguous copy if
 * not). Returns 0 or -1 with an exception. */
static int ensure_elem_strides(PyArrayObject **pa, ptrdiff_t *st)
{
    if (elem_strides(*pa, st) == 0)
        return 0;
    PyArrayObject *c = (PyArrayObject *)PyArray_NewCopy(*pa, NPY_CORDER);
    if (!c)
        return -1;
    Py_DECREF(*pa);
    *pa = c;
    return elem_strides(c, st) == 0 ? 0 : -1;
}

/* Conservative test: may the memory of a and b overlap? */
static void mem_bounds(PyArrayObject *a, char **lo, char **hi)
{
    char *l = PyArray_BYTES(a), *h = PyArray_BYTES(a);
    for (int d = 0; d < PyArray_NDIM(a); d++) {
        npy_intp n = PyArray_DIM(a, d);
        if (n == 0) {
            *lo = *hi = NULL;
            return;
        }
        npy_intp ext = (n - 1) * PyArray_STRIDE(a, d);
        if (ext < 0)
            l += ext;
        else
            h += ext;
    }
    *lo = l;
    *hi = h + PyArray_ITEMSIZE(a);
}

static int may_overlap(PyArrayObject *a, PyArrayObject *b)
{
    if (!a || !b)
        return 0;
    char *la, *ha, *lb, *hb;
    mem_bounds(a, &la, &ha);
    mem_bounds(b, &lb, &hb);
    if (!la || !lb)
        return 0;
    return la < hb && lb < ha;
}

/*
 * Check a user's out= array: exactly `nd`/`dims`/`typenum`, writeable.
 * Returns a new reference to the array itself or NULL with an exception.
 */
static PyArrayObject *check_out(PyObject *obj, const char *fname,
                                const char *arg, int nd, const npy_intp *dims,
                                int typenum)
{
    if (!PyArray_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s: %s must be a NumPy array, got %s",
                     fname, arg, Py_TYPE(obj)->tp_name);
        return NULL;
    }
    PyArrayObject *o = (PyArrayObject *)obj;
    int same = PyArray_NDIM(o) == nd;
    for (int d = 0; same && d < nd; d++)
        same = PyArray_DIM(o, d) == dims[d];
    if (!same) {
        PyObject *want = tuple_of(nd, dims), *got = shape_of(o);
        if (want && got)
            PyErr_Format(PyExc_ValueError,
                         "%s: %s has shape %R but the result has shape %R",
                         fname, arg, got, want);
        Py_XDECREF(want);
        Py_XDECREF(got);
        return NULL;
    }
    PyArray_Descr *want_d = PyArray_DescrFromType(typenum);
    if (!want_d)
        return NULL;
    int eq = PyArray_EquivTypes(PyArray_DESCR(o), want_d);
    if (!eq) {
        PyErr_Format(PyExc_TypeError,
                     "%s: %s has dtype %S but the result has dtype %S", fname,
                     arg, (PyObject *)PyArray_DESCR(o), (PyObject *)want_d);
        Py_DECREF(want_d);
        return NULL;
    }
    Py_DECREF(want_d);
    if (!PyArray_ISWRITEABLE(o)) {
        PyErr_Format(PyExc_ValueError, "%s: %s is read-only", fname, arg);
        return NULL;
    }
    Py_INCREF(o);
    return o;
}

/*
 * Where the core writes a result: the user's array itself when it is
 * aligned, native, element-strided and shares no memory with the inputs;
 * otherwise a fresh C-ordered temporary that is copied into it afterwards.
 * Returns a new reference; *is_tmp tells which.
 */
static PyArrayObject *dest_for(PyArrayObject *user, PyArrayObject *const *ins,
                               int nins, int *is_tmp)
{
    ptrdiff_t st[NPY_MAXDIMS];
    int direct = PyArray_ISALIGNED(user) && PyArray_ISNOTSWAPPED(user) &&
                 elem_strides(user, st) == 0;
    for (int i = 0; direct && i < nins; i++)
        direct = !may_overlap(user, ins[i]);
    *is_tmp = !direct;
    if (direct) {
        Py_INCREF(user);
        return user;
    }
    PyArray_Descr *d = PyArray_DescrFromType(PyArray_TYPE(user));
    if (!d)
        return NULL;
    return (PyArrayObject *)PyArray_Empty(PyArray_NDIM(user),
                                          PyArray_DIMS(user), d, 0);
}

/* The result a function returns (new reference): the user's out= array,
 * filled from the temporary when dest_for chose one, or the fresh result. */
static PyObject *deliver(PyArrayObject *user, PyArrayObject *dst, int is_tmp)
{
    if (is_tmp && PyArray_CopyInto(user, dst) < 0)
        return NULL;
    PyObject *r = user ? (PyObject *)user : (PyObject *)dst;
    Py_INCREF(r);
    return r;
}

/*
 * Offset tables for a batched loop over `nd` dims of extent `shape`:
 * for every operand op and flat batch index b (C order),
 *   offs[op * B + b] = sum_d idx_d(b) * strides[op][d].
 */
static void fill_offsets(int nd, const npy_intp *shape, int nops,
                         ptrdiff_t (*strides)[NPY_MAXDIMS], ptrdiff_t *offs,
                         size_t B)
{
    npy_intp idx[NPY_MAXDIMS] = {0};
    ptrdiff_t cur[N_OPS + 2] = {0};
    for (size_t b = 0; b < B; b++) {
        for (int op = 0; op < nops; op++)
            offs[(size_t)op * B + b] = cur[op];
        for (int d = nd - 1; d >= 0; d--) {
            idx[d]++;
            for (int op = 0; op < nops; op++)
                cur[op] += strides[op][d];
            if (idx[d] < shape[d])
                break;
            for (int op = 0; op < nops; op++)
                cur[op] -= strides[op][d] * (ptrdiff_t)shape[d];
            idx[d] = 0;
        }
    }
}

/* A new result array; on failure the message names the function, the
 * result and its shape (NumPy's own "array is too big" / MemoryError). */
static PyArrayObject *new_result(int nd, const npy_intp *dims, int typenum,
                                 const char *fname, const char *what)
{
    PyArrayObject *a = (PyArrayObject *)PyArray_SimpleNew(nd, (npy_intp *)dims,
                                                          typenum);
    if (a)
        return a;
    int is_mem = PyErr_ExceptionMatches(PyExc_MemoryError);
    if (!is_mem && !PyErr_ExceptionMatches(PyExc_ValueError))
        return NULL;
    PyErr_Clear();
    PyObject *shape = tuple_of(nd, dims);
    if (shape) {
        PyErr_Format(is_mem ? PyExc_MemoryError : PyExc_ValueError,
                     "%s: %s of shape %R is too large to allocate", fname,
                     what, shape);
        Py_DECREF(shape);
    }
    return NULL;
}

/* Allocate nops*B offsets, overflow-checked. */
static ptrdiff_t *alloc_offsets(size_t nops, size_t B)
{
    if (B != 0 && nops > SIZE_MAX / sizeof(ptrdiff_t) / B) {
        PyErr_NoMemory();
        return NULL;
    }
    ptrdiff_t *p = PyMem_RawMalloc(nops * B * sizeof(ptrdiff_t) + 1);
    if (!p)
        PyErr_NoMemory();
    return p;
}

/* Cancellation poll for the core: take the GIL back briefly and let Python
 * run its signal handlers (Ctrl-C raises KeyboardInterrupt). */
typedef struct {
    PyThreadState *ts;
} poll_ctx;

static int poll_signals(void *ctx)
{
    poll_ctx *c = ctx;
    PyEval_RestoreThread(c->ts);
    int r = PyErr_CheckSignals();
    c->ts = PyEval_SaveThread();
    return r < 0;
}

/* Map a core status to an exception. Returns 0 for ATTN_OK. */
static int raise_status(attn_status st, const char *fname)
{
    switch (st) {
    case ATTN_OK:
        return 0;
    case ATTN_ENOMEM:
        PyErr_Format(PyExc_MemoryError,
                     "%s: not enough memory for the kernel's work buffers",
                     fname);
        return -1;
    case ATTN_EINTERRUPTED:
        if (!PyErr_Occurred())
            PyErr_SetNone(PyExc_KeyboardInterrupt);
        return -1;
    default:
        PyErr_Format(PyExc_RuntimeError,
                     "%s: internal error in the attention core (status %d)",
                     fname, (int)st);
        return -1;
    }
}

static attn_mat mat_of(PyArrayObject *a, const ptrdiff_t *boff,
                       const ptrdiff_t *st, int nd)
{
    attn_mat m;
    m.data = a ? PyArray_DATA(a) : NULL;
    m.boff = boff;
    m.s0 = a ? st[nd - 2] : 0;
    m.s1 = a ? st[nd - 1] : 0;
    return m;
}

/* ------------------------------------------------------------------------ */
/* sdpa(Q, K, V, mask, bias, causal, scale, fully_masked, out, weights_out,  */
/*      want[, fname])                                                       */
/* ------------------------------------------------------------------------ */

static int parse_causal(PyObject *o, const char *fname, attn_causal *c)
{
    if (o == Py_False || o == Py_None) {
        *c = ATTN_CAUSAL_NONE;
        return 0;
    }
    if (o == Py_True) {
        *c = ATTN_CAUSAL_TOP_LEFT;
        return 0;
    }
    if (PyArray_IsScalar(o, Bool)) {
        *c = PyObject_IsTrue(o) ? ATTN_CAUSAL_TOP_LEFT : ATTN_CAUSAL_NONE;
        return 0;
    }
    if (PyUnicode_Check(o)) {
        if (PyUnicode_CompareWithASCIIString(o, "top_left") == 0) {
            *c = ATTN_CAUSAL_TOP_LEFT;
            return 0;
        }
        if (PyUnicode_CompareWithASCIIString(o, "bottom_right") == 0) {
            *c = ATTN_CAUSAL_BOTTOM_RIGHT;
            return 0;
        }
        PyErr_Format(PyExc_ValueError,
                     "%s: causal must be False, True, 'top_left' or "
                     "'bottom_right', got %R", fname, o);
        return -1;
    }
    PyErr_Format(PyExc_TypeError,
                 "%s: causal must be False, True, 'top_left' or "
                 "'bottom_right', got %s", fname, Py_TYPE(o)->tp_name);
    return -1;
}

static int parse_fully_masked(PyObject *o, const char *fname, attn_fm *fm)
{
    static const char *const names[] = {"zero", "uniform", "nan", "raise"};
    if (PyUnicode_Check(o)) {
        for (int i = 0; i < 4; i++)
            if (PyUnicode_CompareWithASCIIString(o, names[i]) == 0) {
                *fm = (attn_fm)i;
                return 0;
            }
        PyErr_Format(PyExc_ValueError,
                     "%s: fully_masked must be 'zero', 'uniform', 'nan' or "
                     "'raise', got %R", fname, o);
        return -1;
    }
    PyErr_Format(PyExc_TypeError,
                 "%s: fully_masked must be 'zero', 'uniform', 'nan' or "
                 "'raise', got %s", fname, Py_TYPE(o)->tp_name);
    return -1;
}

/* Broadcast the leading dims of the operands (right-aligned, NumPy rules).
 * nb[op] = number of leading dims of op (0 if absent). */
static int broadcast_batch(PyArrayObject **arr, const int *nb, int nops,
                           const char *fname, int *bnd, npy_intp *bshape)
{
    int nd = 0;
    for (int op = 0; op < nops; op++)
        if (arr[op] && nb[op] > nd)
            nd = nb[op];
    if (nd > NPY_MAXDIMS - 2) {
        PyErr_Format(PyExc_ValueError, "%s: too many dimensions", fname);
        return -1;
    }
    int first_op[NPY_MAXDIMS];
    for (int d = 0; d < nd; d++) {
        bshape[d] = 1;
        first_op[d] = -1;
    }
    for (int op = 0; op < nops; op++) {
        if (!arr[op])
            continue;
        for (int k = 0; k < nb[op]; k++) {
            int d = nd - nb[op] + k;
            npy_intp n = PyArray_DIM(arr[op], k);
            if (n == 1)
                continue;
            if (bshape[d] == 1 && first_op[d] < 0) {
                bshape[d] = n;
                first_op[d] = op;
            }
            else if (bshape[d] != n) {
                int o1 = first_op[d];
                char msg[200];
                PyOS_snprintf(msg, sizeof msg,
                              "%s: the leading (batch) dimensions of %s and %s "
                              "do not broadcast",
                              fname, op_names[o1], op_names[op]);
                err_shapes2(PyExc_ValueError, msg, op_names[o1], arr[o1],
                            op_names[op], arr[op]);
                return -1;
            }
        }
    }
    *bnd = nd;
    return 0;
}

static PyObject *core_sdpa(PyObject *Py_UNUSED(mod), PyObject *const *args,
                           Py_ssize_t nargs)
{
    static const char *const default_names[3] = {
        "attention", "scaled_dot_product_attention", "explain"};
    PyArrayObject *arr[N_OPS] = {NULL};     /* converted operands (owned)  */
    PyArrayObject *user_out = NULL, *user_w = NULL;
    PyArrayObject *raw[5] = {NULL};         /* inputs in their own dtype   */
    ptrdiff_t *offs = NULL;
    PyObject *result = NULL;
    int tmp_out = 0, tmp_w = 0;
    const char *fname = "attention";

    if (nargs != 11 && nargs != 12) {
        PyErr_SetString(PyExc_TypeError, "sdpa() takes 11 or 12 arguments");
        return NULL;
    }
    long want = PyLong_AsLong(args[10]);
    if (want == -1 && PyErr_Occurred())
        return NULL;
    if (want < 0 || want > 2) {
        PyErr_SetString(PyExc_ValueError, "sdpa(): want must be 0, 1 or 2");
        return NULL;
    }
    fname = default_names[want];
    if (nargs == 12) {
        fname = PyUnicode_AsUTF8(args[11]);
        if (!fname)
            return NULL;
    }

    attn_problem p;
    memset(&p, 0, sizeof p);
    if (parse_causal(args[5], fname, &p.causal) < 0 ||
        parse_fully_masked(args[7], fname, &p.fully_masked) < 0)
        return NULL;

    /* 1. the three inputs, their common compute type */
    for (int op = OP_Q; op <= OP_V; op++) {
        raw[op] = as_real_array(args[op], fname, op_names[op]);
        if (!raw[op])
            goto fail;
        if (PyArray_NDIM(raw[op]) < 2) {
            PyObject *s = shape_of(raw[op]);
            if (s)
                PyErr_Format(PyExc_ValueError,
                             "%s: %s must have at least 2 dimensions "
                             "(..., %s, %s), got shape %R",
                             fname, op_names[op], op == OP_Q ? "L" : "S",
                             op == OP_V ? "Ev" : "E", s);
            Py_XDECREF(s);
            goto fail;
        }
    }
    {
        PyArray_Descr *rt = PyArray_ResultType(3, raw, 0, NULL);
        if (!rt)
            goto fail;
        int typenum = compute_type_of(rt);
        Py_DECREF(rt);
        if (typenum < 0) {
            PyErr_Format(PyExc_TypeError, "%s: Q, K, V have no common real "
                         "dtype", fname);
            goto fail;
        }
        p.dtype = typenum == NPY_FLOAT ? ATTN_F32 : ATTN_F64;
        for (int op = OP_Q; op <= OP_V; op++)
            if (!(arr[op] = as_type(raw[op], typenum, fname, op_names[op])))
                goto fail;
    }
    const int typenum = p.dtype == ATTN_F32 ? NPY_FLOAT : NPY_DOUBLE;
    PyArrayObject *Q = arr[OP_Q], *K = arr[OP_K], *V = arr[OP_V];
    const int ndq = PyArray_NDIM(Q), ndk = PyArray_NDIM(K),
              ndv = PyArray_NDIM(V);
    const npy_intp L = PyArray_DIM(Q, ndq - 2), E = PyArray_DIM(Q, ndq - 1);
    const npy_intp S = PyArray_DIM(K, ndk - 2), Ev = PyArray_DIM(V, ndv - 1);

    /* 2. core dims agree */
    if (PyArray_DIM(K, ndk - 1) != E) {
        char msg[200];
        PyOS_snprintf(msg, sizeof msg, "%s: K has %zd features but Q has %zd",
                      fname, (Py_ssize_t)PyArray_DIM(K, ndk - 1),
                      (Py_ssize_t)E);
        err_shapes2(PyExc_ValueError, msg, "Q", Q, "K", K);
        goto fail;
    }
    if (PyArray_DIM(V, ndv - 2) != S) {
        char msg[200];
        PyOS_snprintf(msg, sizeof msg,
                      "%s: V has %zd positions but K has %zd", fname,
                      (Py_ssize_t)PyArray_DIM(V, ndv - 2), (Py_ssize_t)S);
        err_shapes2(PyExc_ValueError, msg, "K", K, "V", V);
        goto fail;
    }

    /* 3. mask (any real/bool dtype -> bool) and bias (-> compute type) */
    for (int op = OP_MASK; op <= OP_BIAS; op++) {
        PyObject *o = args[op == OP_MASK ? 3 : 4];
        if (o == Py_None)
            continue;
        raw[op] = as_real_array(o, fname, op_names[op]);
        if (!raw[op])
            goto fail;
        PyArrayObject *c = as_type(raw[op], op == OP_MASK ? NPY_BOOL : typenum,
                                  fname, op_names[op]);
        if (!c)
            goto fail;
        if (PyArray_NDIM(c) < 2) { /* (S,) or scalar: prepend unit dims */
            npy_intp dims[2] = {1, 1};
            if (PyArray_NDIM(c) == 1)
                dims[1] = PyArray_DIM(c, 0);
            PyArray_Dims nd2 = {dims, 2};
            PyArrayObject *r = (PyArrayObject *)PyArray_Newshape(c, &nd2,
                                                                 NPY_CORDER);
            Py_DECREF(c);
            if (!r)
                goto fail;
            c = r;
        }
        arr[op] = c;
        int nd = PyArray_NDIM(c);
        npy_intp ml = PyArray_DIM(c, nd - 2), ms = PyArray_DIM(c, nd - 1);
        if ((ml != 1 && ml != L) || (ms != 1 && ms != S)) {
            char msg[240];
            PyOS_snprintf(msg, sizeof msg,
                          "%s: %s of shape (..., %zd, %zd) does not broadcast "
                          "to the scores' (..., L, S) = (..., %zd, %zd)",
                          fname, op_names[op], (Py_ssize_t)ml, (Py_ssize_t)ms,
                          (Py_ssize_t)L, (Py_ssize_t)S);
            err_shapes2(PyExc_ValueError, msg, op_names[op], raw[op], "Q", Q);
            goto fail;
        }
    }

    /* 4. broadcast the batch dims of Q, K, V, mask, bias */
    int nb[N_OPS] = {0};
    for (int op = OP_Q; op <= OP_BIAS; op++)
        nb[op] = arr[op] ? PyArray_NDIM(arr[op]) - 2 : 0;
    int bnd;
    npy_intp bshape[NPY_MAXDIMS];
    if (broadcast_batch(arr, nb, OP_BIAS + 1, fname, &bnd, bshape) < 0)
        goto fail;
    size_t B = 1;
    for (int d = 0; d < bnd; d++) {
        if (bshape[d] != 0 && B > (size_t)NPY_MAX_INTP / (size_t)bshape[d]) {
            PyErr_Format(PyExc_ValueError, "%s: batch size overflows", fname);
            goto fail;
        }
        B *= (size_t)bshape[d];
    }

    /* 5. results: out (..., L, Ev), weights/scores (..., L, S) */
    npy_intp odims[NPY_MAXDIMS], wdims[NPY_MAXDIMS];
    for (int d = 0; d < bnd; d++)
        odims[d] = wdims[d] = bshape[d];
    odims[bnd] = wdims[bnd] = L;
    odims[bnd + 1] = Ev;
    wdims[bnd + 1] = S;
    PyArrayObject *ins[5] = {arr[OP_Q], arr[OP_K], arr[OP_V], arr[OP_MASK],
                             arr[OP_BIAS]};
    if (args[8] != Py_None) {
        if (!(user_out = check_out(args[8], fname, "out", bnd + 2, odims,
                                   typenum)))
            goto fail;
        if (!(arr[OP_OUT] = dest_for(user_out, ins, 5, &tmp_out)))
            goto fail;
    }
    else if (!(arr[OP_OUT] = new_result(bnd + 2, odims, typenum, fname,
                                        "the output")))
        goto fail;
    if (want >= 1) {
        if (args[9] != Py_None) {
            if (!(user_w = check_out(args[9], fname, "weights_out", bnd + 2,
                                     wdims, typenum)))
                goto fail;
            PyArrayObject *ins_w[6] = {ins[0], ins[1], ins[2], ins[3], ins[4],
                                       arr[OP_OUT]};
            if (!(arr[OP_W] = dest_for(user_w, ins_w, 6, &tmp_w)))
                goto fail;
        }
        else if (!(arr[OP_W] = new_result(bnd + 2, wdims, typenum, fname,
                                          "the weights")))
            goto fail;
    }
    if (want == 2 && !(arr[OP_SC] = new_result(bnd + 2, wdims, typenum,
                                               fname, "the scores")))
        goto fail;
    if (may_overlap(user_out, user_w)) { /* bounds overlap: ask NumPy */
        PyObject *np = PyImport_ImportModule("numpy");
        PyObject *r = np ? PyObject_CallMethod(np, "shares_memory", "OO",
                                               user_out, user_w)
                         : NULL;
        Py_XDECREF(np);
        if (!r)
            goto fail;
        int shared = PyObject_IsTrue(r);
        Py_DECREF(r);
        if (shared < 0)
            goto fail;
        if (shared) {
            PyErr_Format(PyExc_ValueError,
                         "%s: out and weights_out share memory", fname);
            goto fail;
        }
    }

    /* 6. strides in elements and the batch offset tables */
    ptrdiff_t st[N_OPS][NPY_MAXDIMS];
    ptrdiff_t bst[N_OPS][NPY_MAXDIMS];
    memset(bst, 0, sizeof bst); /* absent operands: offset 0 */
    for (int op = 0; op < N_OPS; op++) {
        if (!arr[op])
            continue;
        if (ensure_elem_strides(&arr[op], st[op]) < 0)
            goto fail;
        int nd = PyArray_NDIM(arr[op]), lead = nd - 2;
        for (int d = 0; d < bnd; d++) {
            int k = d - (bnd - lead);
            bst[op][d] = (k >= 0 && PyArray_DIM(arr[op], k) != 1) ? st[op][k]
                                                                  : 0;
        }
    }
    const ptrdiff_t *boff[N_OPS] = {NULL};
    /* work exists only if some result has elements (an empty output with
     * S == 0 rows still has nothing to write) */
    const int busy = B > 0 && L > 0 &&
                     (Ev > 0 || (want >= 1 && S > 0) ||
                      p.fully_masked == ATTN_FM_RAISE);
    if (busy && B > 1) {
        if (!(offs = alloc_offsets(N_OPS, B)))
            goto fail;
        fill_offsets(bnd, bshape, N_OPS, bst, offs, B);
        for (int op = 0; op < N_OPS; op++)
            boff[op] = offs + (size_t)op * B;
    }

    /* 7. the problem */
    p.B = B;
    p.L = (size_t)L;
    p.S = (size_t)S;
    p.E = (size_t)E;
    p.Ev = (size_t)Ev;
    for (int op = 0; op < N_OPS; op++) {
        int nd = arr[op] ? PyArray_NDIM(arr[op]) : 2;
        attn_mat m = mat_of(arr[op], boff[op], arr[op] ? st[op] : NULL, nd);
        switch (op) {
        case OP_Q: p.q = m; break;
        case OP_K: p.k = m; break;
        case OP_V: p.v = m; break;
        case OP_MASK: p.mask = m; break;
        case OP_BIAS: p.bias = m; break;
        case OP_OUT: p.out = m; break;
        case OP_W: p.weights = m; break;
        default: p.scores = m; break;
        }
    }
    if (args[6] == Py_None)
        p.scale = E > 0 ? 1.0 / sqrt((double)E) : 1.0;
    else {
        p.scale = PyFloat_AsDouble(args[6]);
        if (p.scale == -1.0 && PyErr_Occurred()) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError,
                         "%s: scale must be a real number or None, got %s",
                         fname, Py_TYPE(args[6])->tp_name);
            goto fail;
        }
    }

    /* 8. compute, GIL released */
    if (busy) {
        poll_ctx pc;
        attn_exec ex = {atomic_load(&g_num_threads), poll_signals, &pc};
        pc.ts = PyEval_SaveThread();
        attn_status status = attn_sdpa(&p, &ex);
        PyEval_RestoreThread(pc.ts);
        if (status == ATTN_EFULLYMASKED) {
            npy_intp idx[NPY_MAXDIMS];
            size_t rem = p.bad_b;
            for (int d = bnd - 1; d >= 0; d--) {
                idx[d] = (npy_intp)(rem % (size_t)bshape[d]);
                rem /= (size_t)bshape[d];
            }
            PyObject *t = tuple_of(bnd, idx);
            if (t) {
                if (bnd)
                    PyErr_Format(PyExc_ValueError,
                                 "%s: query row %zu of batch index %R may "
                                 "attend to no key (fully_masked='raise')",
                                 fname, p.bad_row, t);
                else
                    PyErr_Format(PyExc_ValueError,
                                 "%s: query row %zu may attend to no key "
                                 "(fully_masked='raise')", fname, p.bad_row);
                Py_DECREF(t);
            }
            goto fail;
        }
        if (raise_status(status, fname) < 0)
            goto fail;
    }

    /* 9. copy temporaries into the user's arrays, build the result */
    if (tmp_out && PyArray_CopyInto(user_out, arr[OP_OUT]) < 0)
        goto fail;
    if (tmp_w && PyArray_CopyInto(user_w, arr[OP_W]) < 0)
        goto fail;
    PyObject *o = user_out ? (PyObject *)user_out : (PyObject *)arr[OP_OUT];
    PyObject *w = user_w ? (PyObject *)user_w : (PyObject *)arr[OP_W];
    if (want == 0) {
        Py_INCREF(o);
        result = o;
    }
    else if (want == 1)
        result = PyTuple_Pack(2, o, w);
    else
        result = PyTuple_Pack(3, o, w, (PyObject *)arr[OP_SC]);

fail:
    PyMem_RawFree(offs);
    for (int op = 0; op < N_OPS; op++)
        Py_XDECREF(arr[op]);
    for (int i = 0; i < 5; i++)
        Py_XDECREF(raw[i]);
    Py_XDECREF(user_out);
    Py_XDECREF(user_w);
    return result;
}

/* ------------------------------------------------------------------------ */
/* softmax(x, axis, out, fname): axis already normalised by the caller       */
/* ------------------------------------------------------------------------ */
static PyObject *core_softmax(PyObject *Py_UNUSED(mod), PyObject *const *args,
                              Py_ssize_t nargs)
{
    PyArrayObject *raw = NULL, *x = NULL, *user = NULL, *dst = NULL;
    ptrdiff_t *offs = NULL;
    PyObject *result = NULL;
    int is_tmp = 0;
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
    if (!(raw = as_real_array(args[0], fname, "x")))
        goto fail;
    int nd = PyArray_NDIM(raw);
    if (axis < 0 || axis >= nd) {
        PyErr_Format(PyExc_ValueError, "%s: axis %d is out of bounds for an "
                     "array of dimension %d", fname, axis, nd);
        goto fail;
    }
    int typenum = compute_type_of(PyArray_DESCR(raw));
    if (!(x = as_type(raw, typenum, fname, "x")))
        goto fail;
    if (args[2] != Py_None) {
        if (!(user = check_out(args[2], fname, "out", nd, PyArray_DIMS(x),
                               typenum)))
            goto fail;
        /* exactly in place (out is x) is fine; other overlaps use a tmp */
        int same = PyArray_DATA(user) == PyArray_DATA(x);
        for (int d = 0; same && d < nd; d++)
            same = PyArray_STRIDE(user, d) == PyArray_STRIDE(x, d);
        PyArrayObject *none[1] = {same ? NULL : x};
        if (!(dst = dest_for(user, none, 1, &is_tmp)))
            goto fail;
    }
    else {
        if (!(dst = new_result(nd, PyArray_DIMS(x), typenum, fname,
                               "the result")))
            goto fail;
    }
    ptrdiff_t sx[NPY_MAXDIMS], sd[NPY_MAXDIMS];
    if (ensure_elem_strides(&x, sx) < 0 || elem_strides(dst, sd) < 0)
        goto fail;
    /* rows: every dim but `axis` */
    npy_intp rshape[NPY_MAXDIMS];
    ptrdiff_t rst[2][NPY_MAXDIMS];
    int rnd = 0;
    size_t nrows = 1;
    for (int d = 0; d < nd; d++) {
        if (d == axis)
            continue;
        rshape[rnd] = PyArray_DIM(x, d);
        rst[0][rnd] = sx[d];
        rst[1][rnd] = sd[d];
        nrows *= (size_t)PyArray_DIM(x, d);
        rnd++;
    }
    size_t n = (size_t)PyArray_DIM(x, axis);
    if (nrows > 0 && n > 0) {
        if (!(offs = alloc_offsets(2, nrows)))
            goto fail;
        fill_offsets(rnd, rshape, 2, rst, offs, nrows);
        attn_mat mi = {PyArray_DATA(x), offs, 0, sx[axis]};
        attn_mat mo = {PyArray_DATA(dst), offs + nrows, 0, sd[axis]};
        attn_status status;
        Py_BEGIN_ALLOW_THREADS
        status = attn_softmax(typenum == NPY_FLOAT ? ATTN_F32 : ATTN_F64, mo,
                              mi, nrows, n);
        Py_END_ALLOW_THREADS
        if (raise_status(status, fname) < 0)
            goto fail;
    }
    result = deliver(user, dst, is_tmp);
fail:
    PyMem_RawFree(offs);
    Py_XDECREF(raw);
    Py_XDECREF(x);
    Py_XDECREF(user);
    Py_XDECREF(dst);
    return result;
}

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
        attn_status status;
        Py_BEGIN_ALLOW_THREADS
        status = attn_posenc(typenum == NPY_FLOAT ? ATTN_F32 : ATTN_F64, m, B,
                             T, D, offset, base, accumulate);
        Py_END_ALLOW_THREADS
        if (raise_status(status, fname) < 0)
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
    PyArrayObject *raw = NULL, *x = NULL, *user = NULL, *dst = NULL;
    ptrdiff_t *offs = NULL;
    PyObject *result = NULL;
    int is_tmp = 0;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "combine_heads() takes 3 arguments");
        return NULL;
    }
    const char *fname = PyUnicode_AsUTF8(args[2]);
    if (!fname)
        return NULL;
    if (!(raw = as_real_array(args[0], fname, "x")))
        return NULL;
    int nd = PyArray_NDIM(raw);
    if (nd < 3) {
        PyObject *s = shape_of(raw);
        if (s)
            PyErr_Format(PyExc_ValueError, "%s: x must have at least 3 "
                         "dimensions (..., H, T, dk), got shape %R", fname, s);
        Py_XDECREF(s);
        goto fail;
    }
    int typenum = compute_type_of(PyArray_DESCR(raw));
    if (!(x = as_type(raw, typenum, fname, "x")))
        goto fail;
    npy_intp H = PyArray_DIM(x, nd - 3), T = PyArray_DIM(x, nd - 2),
             dk = PyArray_DIM(x, nd - 1);
    npy_intp odims[NPY_MAXDIMS];
    for (int d = 0; d < nd - 3; d++)
        odims[d] = PyArray_DIM(x, d);
    odims[nd - 3] = T;
    if (H != 0 && dk > NPY_MAX_INTP / H) {
        PyErr_Format(PyExc_ValueError, "%s: H*dk overflows", fname);
        goto fail;
    }
    odims[nd - 2] = H * dk;
    if (args[1] != Py_None) {
        if (!(user = check_out(args[1], fname, "out", nd - 1, odims,
                               typenum)))
            goto fail;
        PyArrayObject *ins[1] = {x};
        if (!(dst = dest_for(user, ins, 1, &is_tmp)))
            goto fail;
    }
    else if (!(dst = new_result(nd - 1, odims, typenum, fname,
                                "the result")))
        goto fail;
    ptrdiff_t sx[NPY_MAXDIMS], so[NPY_MAXDIMS];
    if (ensure_elem_strides(&x, sx) < 0 || elem_strides(dst, so) < 0)
        goto fail;
    /* batch = (..., H): x steps by its own strides; out by its leading
     * strides and, along H, by dk columns */
    int bnd = nd - 2;
    size_t B = 1;
    ptrdiff_t bst[2][NPY_MAXDIMS];
    for (int d = 0; d < bnd; d++) {
        B *= (size_t)PyArray_DIM(x, d);
        bst[0][d] = sx[d];
        bst[1][d] = d < bnd - 1 ? so[d] : (ptrdiff_t)dk * so[nd - 2];
    }
    if (B > 0 && T > 0 && dk > 0) {
        if (!(offs = alloc_offsets(2, B)))
            goto fail;
        fill_offsets(bnd, PyArray_DIMS(x), 2, bst, offs, B);
        attn_mat mi = {PyArray_DATA(x), offs, sx[nd - 2], sx[nd - 1]};
        attn_mat mo = {PyArray_DATA(dst), offs + B, so[nd - 3], so[nd - 2]};
        attn_status status;
        Py_BEGIN_ALLOW_THREADS
        status = attn_copy2d(typenum == NPY_FLOAT ? ATTN_F32 : ATTN_F64, mo,
                             mi, B, (size_t)T, (size_t)dk);
        Py_END_ALLOW_THREADS
        if (raise_status(status, fname) < 0)
            goto fail;
    }
    result = deliver(user, dst, is_tmp);
fail:
    PyMem_RawFree(offs);
    Py_XDECREF(raw);
    Py_XDECREF(x);
    Py_XDECREF(user);
    Py_XDECREF(dst);
    return result;
}

/* ------------------------------------------------------------------------ */
/* threads and instruction-set selection                                     */
/* ------------------------------------------------------------------------ */
static PyObject *core_set_num_threads(PyObject *Py_UNUSED(mod), PyObject *arg)
{
    PyObject *idx = NULL;
    if (PyBool_Check(arg) || PyArray_IsScalar(arg, Bool) ||
        !(idx = PyNumber_Index(arg))) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError,
                     "set_num_threads: n must be an int, got %s",
                     Py_TYPE(arg)->tp_name);
        return NULL;
    }
    int overflow = 0;
    long n = PyLong_AsLongAndOverflow(idx, &overflow);
    Py_DECREF(idx);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    if (overflow || n < 1 || n > 1024) {
        PyErr_Format(PyExc_ValueError,
                     "set_num_threads: n must be between 1 and 1024, got %S",
                     arg);
        return NULL;
    }
    int old = atomic_exchange(&g_num_threads, (int)n);
    return PyLong_FromLong(old);
}

static PyObject *core_get_num_threads(PyObject *Py_UNUSED(mod),
                                      PyObject *Py_UNUSED(arg))
{
    return PyLong_FromLong(atomic_load(&g_num_threads));
}

static PyObject *core_isa(PyObject *Py_UNUSED(mod), PyObject *Py_UNUSED(arg))
{
    return PyUnicode_FromString(attn_isa_name());
}

static PyObject *core_set_isa(PyObject *Py_UNUSED(mod), PyObject *arg)
{
    const char *name = PyUnicode_Check(arg) ? PyUnicode_AsUTF8(arg) : NULL;
    if (!name) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "set_isa: name must be a str, got %s",
                         Py_TYPE(arg)->tp_name);
        return NULL;
    }
    if (attn_set_isa(name) != 0) {
        PyErr_Format(PyExc_ValueError,
                     "set_isa: %R is unknown or not supported by this CPU",
                     arg);
        return NULL;
    }
    return PyUnicode_FromString(attn_isa_name());
}

static PyObject *core_available_cpus(PyObject *Py_UNUSED(mod),
                                     PyObject *Py_UNUSED(arg))
{
    return PyLong_FromLong(attn_available_cpus());
}

/* as_real(obj, fname, arg): ndarray of real numbers in its own dtype */
static PyObject *core_as_real(PyObject *Py_UNUSED(mod), PyObject *const *args,
                              Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "as_real() takes 3 arguments");
        return NULL;
    }
    const char *fname = PyUnicode_AsUTF8(args[1]);
    const char *arg = fname ? PyUnicode_AsUTF8(args[2]) : NULL;
    if (!arg)
        return NULL;
    return (PyObject *)as_real_array(args[0], fname, arg);
}

static PyMethodDef core_methods[] = {
    {"as_real", (PyCFunction)(void (*)(void))core_as_real, METH_FASTCALL,
     "as_real(obj, fname, arg): obj as an ndarray of real numbers, or a "
     "TypeError naming the function and argument"},
    {"sdpa", (PyCFunction)(void (*)(void))core_sdpa, METH_FASTCALL,
     "sdpa(Q, K, V, mask, bias, causal, scale, fully_masked, out, "
     "weights_out, want[, fname])\n\nScaled dot-product attention in C. "
     "want=0 -> out; 1 -> (out, weights); 2 -> (out, weights, raw scores)."},
    {"softmax", (PyCFunction)(void (*)(void))core_softmax, METH_FASTCALL,
     "softmax(x, axis, out, fname)"},
    {"posenc", (PyCFunction)(void (*)(void))core_posenc, METH_FASTCALL,
     "posenc(x, offset, base, accumulate, fname, argname): x = PE or "
     "x += PE"},
    {"combine_heads", (PyCFunction)(void (*)(void))core_combine_heads,
     METH_FASTCALL, "combine_heads(x, out, fname)"},
    {"set_num_threads", core_set_num_threads, METH_O,
     "set_num_threads(n) -> previous count"},
    {"get_num_threads", core_get_num_threads, METH_NOARGS,
     "get_num_threads() -> int"},
    {"isa", core_isa, METH_NOARGS, "isa() -> name of the kernel path in use"},
    {"set_isa", core_set_isa, METH_O,
     "set_isa(name) -> name; 'auto', 'portable' or a SIMD path"},
    {"available_cpus", core_available_cpus, METH_NOARGS,
     "available_cpus() -> CPUs this process may run on"},
    {NULL, NULL, 0, NULL}};

static int default_threads(void)
{
    const char *env = getenv("ATTNPY_NUM_THREADS");
    if (env && *env) {
        char *end;
        long n = strtol(env, &end, 10);
        if (*end == '\0' && n >= 1 && n <= 1024)
            return (int)n;
    }
    return attn_available_cpus();
}

static int core_exec(PyObject *Py_UNUSED(mod))
{
    if (PyArray_ImportNumPyAPI() < 0)
        return -1;
    atomic_store(&g_num_threads, default_threads());
    return 0;
}

static PyModuleDef_Slot core_slots[] = {
    {Py_mod_exec, (void *)core_exec},
#if PY_VERSION_HEX >= 0x030D0000
    /* no module state, no Python objects shared between calls: safe
     * without the GIL (tests/test_threads.py exercises concurrent calls) */
    {Py_mod_gil, Py_MOD_GIL_NOT_USED},
#endif
    {0, NULL}};

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "attnpy._core",
    .m_doc = "attnpy's C core binding. Use the functions in attnpy instead.",
    .m_size = 0,
    .m_methods = core_methods,
    .m_slots = core_slots,
};

PyMODINIT_FUNC PyInit__core(void) { return PyModuleDef_Init(&core_module); }
