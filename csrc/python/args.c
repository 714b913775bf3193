/*
 * python/args.c -- the argument plumbing shared by every binding file
 * (declared and documented in args.h).
 */
#include "args.h" /* first: Python.h before any system header */
#include <stdarg.h>
#include <string.h>

static int intern_names(ap_argspec *spec)
{
    for (int i = 0; i < spec->n; i++)
        if (!spec->interned[i] &&
            !(spec->interned[i] = PyUnicode_InternFromString(spec->names[i])))
            return -1;
    return 0;
}

/* the slot of keyword `name`, or -1 (no exception) */
static int slot_of(const ap_argspec *spec, PyObject *name)
{
    for (int i = 0; i < spec->n; i++)   /* keywords in code are interned */
        if (spec->interned[i] == name)
            return i;
    for (int i = 0; i < spec->n; i++) {
        int r = PyUnicode_Compare(name, spec->interned[i]);
        if (r == 0)
            return i;
        if (r == -1 && PyErr_Occurred())
            PyErr_Clear();
    }
    return -1;
}

int ap_parse_args(ap_argspec *spec, PyObject *const *args, Py_ssize_t nargs,
                  PyObject *kwnames, PyObject **out)
{
    if (!spec->interned[spec->n - 1] && intern_names(spec) < 0)
        return -1;
    for (int i = 0; i < spec->n; i++)
        out[i] = NULL;
    if (nargs > spec->npos) {
        PyErr_Format(PyExc_TypeError, "%s() takes at most %d positional "
                     "arguments (%zd given)", spec->fname, spec->npos, nargs);
        return -1;
    }
    for (Py_ssize_t i = 0; i < nargs; i++)
        out[i] = args[i];
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, k);
        int i = slot_of(spec, name);
        if (i < 0) {
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword "
                         "argument %R", spec->fname, name);
            return -1;
        }
        if (out[i]) {
            PyErr_Format(PyExc_TypeError, "%s() got multiple values for "
                         "argument '%s'", spec->fname, spec->names[i]);
            return -1;
        }
        out[i] = args[nargs + k];
    }
    for (int i = 0; i < spec->nreq; i++)
        if (!out[i]) {
            PyErr_Format(PyExc_TypeError, "%s() missing required argument "
                         "'%s'", spec->fname, spec->names[i]);
            return -1;
        }
    return 0;
}

int ap_flag(PyObject *o) { return o ? PyObject_IsTrue(o) : 0; }

const char *ap_parse_named(ap_argspec *spec, PyObject *const *args,
                           Py_ssize_t nargs, PyObject *kwnames,
                           PyObject **out, int fname_slot)
{
    if (ap_parse_args(spec, args, nargs, kwnames, out) < 0)
        return NULL;
    const char *fname = out[fname_slot] ? PyUnicode_AsUTF8(out[fname_slot])
                                        : spec->fname;
    for (int i = 0; i < spec->n; i++)
        out[i] = ap_or_none(out[i]);
    return fname;
}

const char *dims_str(int nd, const npy_intp *dims, char *buf)
{
    size_t n = 1;
    buf[0] = '(';
    for (int d = 0; d < nd; d++)
        n += (size_t)PyOS_snprintf(buf + n, AP_SHAPE_LEN - n,
                                   d ? ", %zd" : "%zd", (Py_ssize_t)dims[d]);
    PyOS_snprintf(buf + n, AP_SHAPE_LEN - n, nd == 1 ? ",)" : ")");
    return buf;
}

int need_ndim(PyArrayObject *a, int min, const char *fname, const char *arg,
              const char *axes)
{
    if (PyArray_NDIM(a) >= min)
        return 0;
    PyErr_Format(PyExc_ValueError, "%s: %s must have at least %d dimensions "
                 "(%s), got shape %s", fname, arg, min, axes, AP_SHAPE(a));
    return -1;
}

size_t lead_size(PyArrayObject *a, int nlead)
{
    size_t B = 1;
    for (int d = 0; d < nlead; d++)
        B *= (size_t)PyArray_DIM(a, d);
    return B;
}

int err_shapes(PyObject *exc, const char *na, PyArrayObject *a,
               const char *nb, PyArrayObject *b, const char *fmt, ...)
{
    va_list va;
    va_start(va, fmt);
    PyObject *msg = PyUnicode_FromFormatV(fmt, va);
    va_end(va);
    if (msg)
        PyErr_Format(exc, "%U (%s.shape=%s, %s.shape=%s)", msg, na,
                     AP_SHAPE(a), nb, AP_SHAPE(b));
    Py_XDECREF(msg);
    return -1;
}

/* The compute type for a dtype: NPY_FLOAT, NPY_DOUBLE, or -1 (unsupported).
 * float16 -> float32; bool/int -> float64; longdouble -> float64. */
int compute_type_of(PyArray_Descr *d)
{
    switch (storage_of(d)) {
    case AP_F16:
    case AP_F32:
        return NPY_FLOAT;
    case AP_F64:
    case AP_CONV:
        return NPY_DOUBLE;
    default: /* bfloat16 is not one of these functions' dtypes */
        return -1;
    }
}

const char *describe_dtype_problem(PyArray_Descr *d)
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

/* numpy.ma arrays are refused: their mask says "ignore this entry", which
 * no kernel here can honour, and silently reading the hidden data is
 * worse than an error. Only ndarray subclasses are looked at, and only
 * when numpy.ma has been imported (else no masked array can exist). */
int reject_masked(PyObject *obj, const char *fname, const char *arg)
{
    if (!PyArray_Check(obj) || PyArray_CheckExact(obj))
        return 0;
    PyObject *name = PyUnicode_FromString("numpy.ma");
    PyObject *ma = name ? PyImport_GetModule(name) : NULL;
    Py_XDECREF(name);
    if (!ma)
        return PyErr_Occurred() ? -1 : 0;
    PyObject *cls = PyObject_GetAttrString(ma, "MaskedArray");
    Py_DECREF(ma);
    if (!cls)
        return -1;
    int is_ma = PyObject_IsInstance(obj, cls);
    Py_DECREF(cls);
    if (is_ma > 0)
        PyErr_Format(PyExc_TypeError,
                     "%s: %s is a numpy.ma masked array, which attnpy does "
                     "not support (its hidden entries would be read as "
                     "data); pass %s.filled(value), and to leave out keys "
                     "use mask=", fname, arg, arg);
    return is_ma != 0 ? -1 : 0;
}

PyArrayObject *any_array(PyObject *obj, const char *fname, const char *arg,
                         const char *what)
{
    if (obj == Py_None) {
        PyErr_Format(PyExc_TypeError, "%s: %s must be an array of %s, got "
                     "None", fname, arg, what);
        return NULL;
    }
    if (reject_masked(obj, fname, arg) < 0)
        return NULL;
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
    return a;
}

/* Any array-like -> ndarray in its own dtype (new reference), with a
 * message naming the function and argument on failure. Real dtypes only. */
PyArrayObject *as_real_array(PyObject *obj, const char *fname,
                             const char *arg)
{
    PyArrayObject *a = any_array(obj, fname, arg, "real numbers");
    if (!a)
        return NULL;
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
PyArrayObject *as_type(PyArrayObject *a, int typenum,
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
        PyErr_Format(is_mem ? PyExc_MemoryError : PyExc_ValueError,
                     "%s: %s of shape %s is too large to convert to %s", fname,
                     arg, AP_SHAPE(a), typenum == NPY_FLOAT ? "float32"
                     : typenum == NPY_DOUBLE ? "float64" : "bool");
    }
    return NULL;
}

/* Strides of `a` in elements (0 for dims of extent <= 1). -1 if a byte stride
 * is not a multiple of the item size (possible only for odd views). */
int elem_strides(PyArrayObject *a, ptrdiff_t *st)
{
    const npy_intp isz = PyArray_ITEMSIZE(a);
    for (int d = 0; d < PyArray_NDIM(a); d++) {
        const npy_intp s = PyArray_DIM(a, d) <= 1 ? 0 : PyArray_STRIDE(a, d);
        if (s % isz != 0)
            return -1;
        st[d] = (ptrdiff_t)(s / isz);
    }
    return 0;
}

/* Make sure elem_strides works on *pa (replaces it by a contiguous copy if
 * not). Returns 0 or -1 with an exception. */
int ensure_elem_strides(PyArrayObject **pa, ptrdiff_t *st)
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

/* Conservative test: may the memory of a and b overlap? (the bytes
 * between each one's lowest and highest element meet)                   */
int may_overlap(PyArrayObject *a, PyArrayObject *b)
{
    char *lo[2], *hi[2];
    if (!a || !b || PyArray_SIZE(a) == 0 || PyArray_SIZE(b) == 0)
        return 0;
    for (int i = 0; i < 2; i++) {
        PyArrayObject *x = i ? b : a;
        lo[i] = hi[i] = PyArray_BYTES(x);
        for (int d = 0; d < PyArray_NDIM(x); d++) {
            const npy_intp ext = (PyArray_DIM(x, d) - 1) * PyArray_STRIDE(x, d);
            if (ext < 0)
                lo[i] += ext;
            else
                hi[i] += ext;
        }
        hi[i] += PyArray_ITEMSIZE(x);
    }
    return lo[0] < hi[1] && lo[1] < hi[0];
}

/*
 * Check a user's out= array: exactly `nd`/`dims`/`typenum`, writeable.
 * Returns a new reference to the array itself or NULL with an exception.
 */
PyArrayObject *check_out(PyObject *obj, const char *fname,
                                const char *arg, int nd, const npy_intp *dims,
                                int typenum)
{
    if (!PyArray_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s: %s must be a NumPy array, got %s",
                     fname, arg, Py_TYPE(obj)->tp_name);
        return NULL;
    }
    PyArrayObject *o = (PyArrayObject *)obj;
    if (!same_dims(o, nd, dims)) {
        PyErr_Format(PyExc_ValueError, "%s: %s has shape %s but the result "
                     "has shape %s", fname, arg, AP_SHAPE(o),
                     AP_DIMS(nd, dims));
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

/* The result a function returns (new reference): the user's out= array,
 * filled from the temporary when dest_for_call chose one, or the fresh
 * result. */
PyObject *deliver(PyArrayObject *user, PyArrayObject *dst, int is_tmp)
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
 *   offs[op * B + b] = sum_d idx_d(b) * strides[op][d]   (nops <= AP_MAX_OPS)
 */
void fill_offsets(int nd, const npy_intp *shape, int nops,
                         ptrdiff_t (*strides)[NPY_MAXDIMS], ptrdiff_t *offs,
                         size_t B)
{
    npy_intp idx[NPY_MAXDIMS] = {0};
    ptrdiff_t cur[AP_MAX_OPS] = {0};
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

/* 1 with *s0 when row r (C order over nd dims of extent shape) of an
 * operand with element strides st sits at r * *s0, else 0            */
static int rows_collapse(int nd, const npy_intp *shape, const ptrdiff_t *st,
                         ptrdiff_t *s0)
{
    ptrdiff_t s = 0;
    size_t inner = 1; /* rows one step of dim d spans */
    int have = 0;
    for (int d = nd - 1; d >= 0; d--) {
        if (shape[d] == 1)
            continue;
        if (!have) {
            s = st[d];
            have = 1;
        } else {
            size_t mag = s < 0 ? (size_t)0 - (size_t)s : (size_t)s;
            if (s == PTRDIFF_MIN || (mag && inner > (size_t)PTRDIFF_MAX / mag)
                || st[d] != s * (ptrdiff_t)inner)
                return 0;
        }
        inner *= (size_t)shape[d];
    }
    *s0 = s;
    return 1;
}

int row_tables(int nd, const npy_intp *shape, int nops,
               ptrdiff_t (*strides)[NPY_MAXDIMS], size_t nrows, attn_mat *m,
               ptrdiff_t **offs)
{
    ptrdiff_t tst[AP_MAX_OPS][NPY_MAXDIMS];
    int tab[AP_MAX_OPS], nt = 0;
    *offs = NULL;
    for (int op = 0; op < nops; op++) {
        m[op].boff = NULL;
        if (rows_collapse(nd, shape, strides[op], &m[op].s0))
            continue;
        m[op].s0 = 0;
        memcpy(tst[nt], strides[op], sizeof(ptrdiff_t) * (size_t)nd);
        tab[nt++] = op;
    }
    if (nt == 0 || nrows == 0)
        return 0;
    if (!(*offs = alloc_offsets((size_t)nt, nrows)))
        return -1;
    fill_offsets(nd, shape, nt, tst, *offs, nrows);
    for (int k = 0; k < nt; k++)
        m[tab[k]].boff = *offs + (size_t)k * nrows;
    return 0;
}

/* A new result array; on failure the message names the function, the
 * result and its shape (NumPy's own "array is too big" / MemoryError). */
PyArrayObject *new_result(int nd, const npy_intp *dims, int typenum,
                                 const char *fname, const char *what)
{
    PyArray_Descr *d = PyArray_DescrFromType(typenum);
    if (!d)
        return NULL;
    PyArrayObject *a = new_result_descr(nd, dims, d, fname, what);
    Py_DECREF(d);
    return a;
}

PyArrayObject *new_result_descr(int nd, const npy_intp *dims,
                                PyArray_Descr *descr, const char *fname,
                                const char *what)
{
    Py_INCREF(descr); /* PyArray_NewFromDescr steals it */
    PyArrayObject *a = (PyArrayObject *)PyArray_NewFromDescr(
        &PyArray_Type, descr, nd, (npy_intp *)dims, NULL, NULL, 0, NULL);
    if (a)
        return a;
    int is_mem = PyErr_ExceptionMatches(PyExc_MemoryError);
    if (!is_mem && !PyErr_ExceptionMatches(PyExc_ValueError))
        return NULL;
    PyErr_Clear();
    PyErr_Format(is_mem ? PyExc_MemoryError : PyExc_ValueError,
                 "%s: %s of shape %s is too large to allocate", fname, what,
                 AP_DIMS(nd, dims));
    return NULL;
}

/* Allocate nops*B offsets, overflow-checked; a MemoryError that says
 * what did not fit (the callers' own arrays were allocated already).  */
ptrdiff_t *alloc_offsets(size_t nops, size_t B)
{
    ptrdiff_t *p = NULL;
    if (B == 0 || nops <= SIZE_MAX / sizeof(ptrdiff_t) / B)
        p = PyMem_RawMalloc(nops * B * sizeof(ptrdiff_t) + 1);
    if (!p)
        PyErr_Format(PyExc_MemoryError,
                     "attnpy: the table of row offsets (%zu rows x %zu "
                     "operands, 8 bytes each) is too large to allocate",
                     B, nops);
    return p;
}

/* Cancellation poll for the core: take the GIL back briefly and let Python
 * run its signal handlers (Ctrl-C raises KeyboardInterrupt). */
static int poll_signals(void *ctx)
{
    ap_nogil *g = ctx;
    PyEval_RestoreThread(g->ts);
    int r = PyErr_CheckSignals();
    g->ts = PyEval_SaveThread();
    return r < 0;
}

const attn_exec *ap_nogil_begin(ap_nogil *g)
{
    g->ex.nthreads = ap_num_threads();
    g->ex.poll = poll_signals;
    g->ex.poll_ctx = g;
    g->ts = PyEval_SaveThread();
    return &g->ex;
}

attn_status ap_nogil_end(ap_nogil *g, attn_status st)
{
    PyEval_RestoreThread(g->ts);
    return st;
}

/* Map a core status to an exception. Returns 0 for ATTN_OK. */
int raise_status(attn_status st, const char *fname)
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

attn_mat mat_of(PyArrayObject *a, const ptrdiff_t *boff,
                       const ptrdiff_t *st, int nd)
{
    attn_mat m;
    m.data = a ? PyArray_DATA(a) : NULL;
    m.boff = boff;
    m.s0 = a ? st[nd - 2] : 0;
    m.s1 = a ? st[nd - 1] : 0;
    m.store = store_of(a); /* float16/bfloat16 arrays: read in 16 bits */
    return m;
}


int parse_choice(PyObject *o, const char *fname, const char *arg,
                 const char *expect, const char *const *names, int n,
                 int *idx)
{
    char text[400];
    for (int i = 0; PyUnicode_Check(o) && i < n; i++)
        if (PyUnicode_CompareWithASCIIString(o, names[i]) == 0) {
            *idx = i;
            return 0;
        }
    size_t len = 0; /* expect NULL: "'a', 'b' or 'c'" */
    for (int i = 0; !expect && i < n && len < sizeof text; i++)
        len += (size_t)PyOS_snprintf(text + len, sizeof text - len, "%s'%s'",
                                     !i ? "" : i + 1 == n ? " or " : ", ",
                                     names[i]);
    if (PyUnicode_Check(o))
        PyErr_Format(PyExc_ValueError, "%s: %s must be %s, got %R", fname,
                     arg, expect ? expect : text, o);
    else
        PyErr_Format(PyExc_TypeError, "%s: %s must be %s, got %s", fname, arg,
                     expect ? expect : text, Py_TYPE(o)->tp_name);
    return -1;
}

PyObject *ap_unary_finish(ap_unary *u, int ok)
{
    PyObject *result = ok ? deliver(u->user, u->dst, u->is_tmp) : NULL;
    PyMem_RawFree(u->offs);
    Py_XDECREF(u->raw);
    Py_XDECREF(u->x);
    Py_XDECREF(u->user);
    Py_XDECREF(u->dst);
    return result;
}
