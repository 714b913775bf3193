/*
 * python/variants.c -- the arguments of the attention variants
 * (docs/user/variants.md), checked and written into an attn_problem as
 * csrc/core/attn.h wants them. The public functions hand the binding
 * their variant keywords as one tuple, `variants`, that attnpy/_variants.py
 * forwards untouched; parse_variants() below is the one place that knows
 * its entries. (alibi_slopes is an array operand: attention.c broadcasts
 * it with Q, K, V, mask and bias.) The private pos_shift (attnpy.dask's
 * blocks) is a keyword of its own.
 */
#include "args.h" /* first: Python.h before any system header */
#include <math.h>

#define AP_MAX_SHIFT (PTRDIFF_MAX / 4)

/* an int argument (bool rejected) as Py_ssize_t, a Python int beyond
 * its range clamped to PY_SSIZE_T_MAX / PY_SSIZE_T_MIN                  */
static int as_index(PyObject *o, const char *fname, const char *arg,
                    Py_ssize_t *v)
{
    if (PyBool_Check(o) || PyArray_IsScalar(o, Bool) || !PyIndex_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s: %s must be an integer, got %s",
                     fname, arg, Py_TYPE(o)->tp_name);
        return -1;
    }
    PyObject *n = PyNumber_Index(o);
    if (!n)
        return -1;
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(n, &overflow);
    Py_DECREF(n);
    if (x == -1 && PyErr_Occurred())
        return -1;
    *v = overflow > 0 || x > PY_SSIZE_T_MAX   ? PY_SSIZE_T_MAX
         : overflow < 0 || x < PY_SSIZE_T_MIN ? PY_SSIZE_T_MIN
                                              : (Py_ssize_t)x;
    return 0;
}

/* one side of a window: None -> -1 (unbounded), else an int >= 0 (ints
 * beyond Py_ssize_t are clamped: clamp_window makes any side wider than
 * L + S + |pos_shift| that, as it does -1: no sequence is that long)    */
static int window_side(PyObject *o, PyObject *window, const char *fname,
                       ptrdiff_t *w)
{
    if (o == Py_None) {
        *w = -1;
        return 0;
    }
    Py_ssize_t v;
    if (as_index(o, fname, "window", &v) < 0) {
        if (PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError,
                         "%s: window must be None or (left, right) with each "
                         "side None or an integer >= 0, got %R", fname,
                         window);
        }
        return -1;
    }
    if (v < 0) {
        PyErr_Format(PyExc_ValueError,
                     "%s: window sides must be >= 0 (or None: unbounded), "
                     "got %R", fname, window);
        return -1;
    }
    *w = (ptrdiff_t)v;
    return 0;
}

static int parse_window(PyObject *o, const char *fname, attn_problem *p)
{
    p->window = 0;
    p->wleft = p->wright = 0;
    if (o == Py_None)
        return 0;
    if (!(PyTuple_Check(o) || PyList_Check(o)) || PySequence_Size(o) != 2) {
        PyErr_Format(PyExc_TypeError,
                     "%s: window must be None or a pair (left, right), got %R",
                     fname, o);
        return -1;
    }
    PyObject *seq = PySequence_Fast(o, "window");
    if (!seq)
        return -1;
    int r = window_side(PySequence_Fast_GET_ITEM(seq, 0), o, fname,
                        &p->wleft);
    if (r == 0)
        r = window_side(PySequence_Fast_GET_ITEM(seq, 1), o, fname,
                        &p->wright);
    Py_DECREF(seq);
    if (r == 0)
        p->window = 1;
    return r;
}

static int parse_softcap(PyObject *o, const char *fname, double *cap)
{
    *cap = 0.0;
    if (o == Py_None)
        return 0;
    double v = 0.0;
    if (PyBool_Check(o) || PyUnicode_Check(o) || PyBytes_Check(o) ||
        PyComplex_Check(o) || PyArray_IsScalar(o, ComplexFloating) ||
        ((v = PyFloat_AsDouble(o)) == -1.0 && PyErr_Occurred())) {
        PyErr_Clear(); /* PyFloat_AsDouble's, if any */
        PyErr_Format(PyExc_TypeError,
                     "%s: softcap must be None or a real number, got %s",
                     fname, Py_TYPE(o)->tp_name);
        return -1;
    }
    if (!(isfinite(v) && v > 0.0)) {
        PyErr_Format(PyExc_ValueError,
                     "%s: softcap must be a finite number > 0 (or None), "
                     "got %R", fname, o);
        return -1;
    }
    *cap = v;
    return 0;
}

/* The entries of a variants tuple, in order: the public keywords, as the
 * public functions (attnpy/_attention.py, _grad.py, teach/trace.py,
 * dask.py) write the tuple. Trailing entries may be left out (None).
 * A new kind: a parser above, an entry here, its line in parse_variants. */
enum { V_WINDOW, V_ALIBI, V_SOFTCAP, N_VARIANTS };
#define AP_VARIANT_NAMES "(window, alibi_slopes, softcap)"

int parse_variants(PyObject *o, const char *fname, attn_problem *p,
                   PyObject **alibi)
{
    PyObject *v[N_VARIANTS];
    Py_ssize_t n = 0;
    if (o != Py_None &&
        (!PyTuple_Check(o) || (n = PyTuple_GET_SIZE(o)) > N_VARIANTS)) {
        PyErr_Format(PyExc_TypeError, "%s: variants must be None or a tuple "
                     "of at most %d: " AP_VARIANT_NAMES ", got %R", fname,
                     (int)N_VARIANTS, o);
        return -1;
    }
    for (Py_ssize_t i = 0; i < N_VARIANTS; i++)
        v[i] = i < n ? PyTuple_GET_ITEM(o, i) : Py_None;
    *alibi = v[V_ALIBI] == Py_None ? NULL : v[V_ALIBI];
    return parse_window(v[V_WINDOW], fname, p) < 0 ||
                   parse_softcap(v[V_SOFTCAP], fname, &p->softcap) < 0
               ? -1
               : 0;
}

int parse_pos_shift(PyObject *o, const char *fname, ptrdiff_t *shift)
{
    Py_ssize_t v;
    if (as_index(o, fname, "pos_shift", &v) < 0)
        return -1;
    if (v > AP_MAX_SHIFT || v < -AP_MAX_SHIFT) {
        PyErr_Format(PyExc_ValueError,
                     "%s: pos_shift must be between %zd and %zd, got %R",
                     fname, (Py_ssize_t)-AP_MAX_SHIFT,
                     (Py_ssize_t)AP_MAX_SHIFT, o);
        return -1;
    }
    *shift = (ptrdiff_t)v;
    return 0;
}

int clamp_window(attn_problem *p, const char *fname)
{
    if (!p->window)
        return 0;
    /* the widest window that can matter: |i' - j| < L + S + |pos_shift| */
    const size_t lim = (size_t)AP_MAX_SHIFT;
    const size_t shift = p->pos_shift < 0 ? (size_t)-p->pos_shift
                                          : (size_t)p->pos_shift;
    if (p->L > lim || p->S > lim || p->L + p->S > lim - shift) {
        PyErr_Format(PyExc_ValueError,
                     "%s: L + S + |pos_shift| = %zu + %zu + %zu is too large "
                     "for a window", fname, p->L, p->S, shift);
        return -1;
    }
    const ptrdiff_t wide = (ptrdiff_t)(p->L + p->S + shift);
    if (p->wleft < 0 || p->wleft > wide)
        p->wleft = wide;
    if (p->wright < 0 || p->wright > wide)
        p->wright = wide;
    return 0;
}

/* the first entry of m where bad (a bool array of m's shape) is True, as
 * a Python float (new ref)                                              */
static PyObject *first_bad(PyArrayObject *m, PyObject *bad)
{
    PyObject *i = PyObject_CallMethod(bad, "argmax", NULL);
    PyObject *flat = i ? PyObject_GetAttrString((PyObject *)m, "flat") : NULL;
    PyObject *v = flat ? PyObject_GetItem(flat, i) : NULL;
    PyObject *f = v ? PyNumber_Float(v) : NULL;
    Py_XDECREF(v);
    Py_XDECREF(flat);
    Py_XDECREF(i);
    return f;
}

/* any(x), x a new reference (stolen); -1 on error                       */
static int any_of(PyObject *x, PyObject **keep)
{
    PyObject *any = x ? PyObject_CallMethod(x, "any", NULL) : NULL;
    const int r = any ? PyObject_IsTrue(any) : -1;
    Py_XDECREF(any);
    if (r > 0 && keep)
        *keep = x;
    else
        Py_XDECREF(x);
    return r;
}

/* A mask is a keep-mask (nonzero = may attend), so an additive float
 * mask (0 attend, -inf blocked: PyTorch's float attn_mask) or a float
 * mask of weights (torch.rand-style probabilities) would be read as keep
 * or drop without a word. Negative entries, and in a float mask anything
 * but 0 and 1, are refused, pointing to bias=.                          */
int check_keep_mask(PyArrayObject *m, const char *fname)
{
    const char kind = PyArray_DESCR(m)->kind;
    const int flt = kind == 'f' || is_bf16_descr(PyArray_DESCR(m));
    if (PyArray_SIZE(m) == 0 || (kind != 'i' && !flt))
        return 0;
    PyObject *zero = PyLong_FromLong(0), *one = PyLong_FromLong(1);
    PyObject *bad = NULL;
    int neg = -1, other = 0;
    if (zero && one)
        neg = any_of(PyObject_RichCompare((PyObject *)m, zero, Py_LT), &bad);
    if (neg == 0 && flt) { /* m != 0 and m != 1: NaN too */
        PyObject *ne0 = PyObject_RichCompare((PyObject *)m, zero, Py_NE);
        PyObject *ne1 = ne0 ? PyObject_RichCompare((PyObject *)m, one, Py_NE)
                            : NULL;
        other = any_of(ne1 ? PyNumber_And(ne0, ne1) : NULL, &bad);
        Py_XDECREF(ne0);
        Py_XDECREF(ne1);
    }
    Py_XDECREF(zero);
    Py_XDECREF(one);
    if (neg < 0 || other < 0)
        return -1;
    if (!bad)
        return 0;
    PyObject *f = first_bad(m, bad);
    if (f && neg)
        PyErr_Format(PyExc_ValueError,
                     "%s: mask holds negative values (e.g. %R), but mask is a "
                     "keep-mask: nonzero/True = may attend. An additive mask "
                     "(0 = attend, -inf = blocked, like PyTorch's float "
                     "attn_mask) goes in bias= instead (mask.shape=%s)",
                     fname, f, AP_SHAPE(m));
    else if (f)
        PyErr_Format(PyExc_ValueError,
                     "%s: mask holds values other than 0 and 1 (e.g. %R), but "
                     "mask is a keep-mask: a float mask must be 0 (blocked) "
                     "or 1 (may attend), like the tutorials' np.tril mask. "
                     "Weights or an additive mask (0 = attend, -inf = "
                     "blocked) go in bias= instead (mask.shape=%s)",
                     fname, f, AP_SHAPE(m));
    Py_XDECREF(f);
    Py_DECREF(bad);
    return -1;
}
