/*
 * python/args.h -- the argument plumbing every binding shares.
 *
 * The binding (csrc/python/) is the only code that includes Python.h and
 * NumPy's headers. Each family of functions has one file here
 * (attention.c, elementwise.c, heads.c, runtime.c); module.c only builds
 * the module from their method tables. This header is what they share:
 * converting arguments to arrays, validating them, broadcasting batch
 * dims into the core's offset tables, checking out= arrays, releasing the
 * GIL around the core and turning its status into an exception.
 *
 * How to bind a new core function (say attn_foo in csrc/core/attn.h):
 *   1. In the family's file, write
 *          static PyObject *core_foo(PyObject *mod, PyObject *const *args,
 *                                    Py_ssize_t nargs)
 *      taking positional arguments from the Python wrapper, including the
 *      public function's name (fname) for messages.
 *   2. Inputs: as_real_array() (any array-like -> ndarray, TypeError naming
 *      fname and the argument), compute_type_of() / as_type() (the dtype
 *      rules of DESIGN.md: float32 stays float32, the rest float64),
 *      ensure_elem_strides() (strides in elements for attn_mat).
 *   3. Shapes: check them and raise with err_shapes2() or PyErr_Format,
 *      naming fname, the argument and the shapes. Batch dims:
 *      broadcast_batch() then fill_offsets() into alloc_offsets() memory.
 *   4. Results: new_result(), or for out=: check_out() then dest_for()
 *      (the user's array itself, or a temporary when it overlaps an input
 *      or has odd strides) and deliver() at the end.
 *   5. Compute: ap_nogil_begin() / ap_nogil_end() around the core call
 *      (they fill an attn_exec with the thread count and the Ctrl-C poll),
 *      then raise_status().
 *   6. Add {"foo", AP_FASTCALL(core_foo), METH_FASTCALL, "doc"} to the
 *      family's method table (ap_<family>_methods); module.c adds every
 *      table to the module. Declare a new family's table below.
 * One `fail:` label per function releases every reference it holds.
 */
#ifndef ATTNPY_PY_ARGS_H
#define ATTNPY_PY_ARGS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>

#define PY_ARRAY_UNIQUE_SYMBOL attnpy_ARRAY_API
#ifndef ATTNPY_IMPORT_ARRAY   /* only module.c imports NumPy's C-API */
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>

#include "attn.h"

#define AP_FASTCALL(f) ((PyCFunction)(void (*)(void))(f))
#define AP_MAX_OPS 16  /* operands one fill_offsets() call may walk */

/* ---- arrays and dtypes --------------------------------------------------- */
PyObject *shape_of(PyArrayObject *a);                  /* tuple, new ref */
PyObject *tuple_of(int nd, const npy_intp *dims);      /* tuple, new ref */
/* raise exc: "msg (na.shape=..., nb.shape=...)"; b may be NULL */
void err_shapes2(PyObject *exc, const char *msg, const char *na,
                 PyArrayObject *a, const char *nb, PyArrayObject *b);
/* NPY_FLOAT, NPY_DOUBLE, or -1 (not a real dtype) */
int compute_type_of(PyArray_Descr *d);
PyArrayObject *as_real_array(PyObject *obj, const char *fname,
                             const char *arg);
PyArrayObject *as_type(PyArrayObject *a, int typenum, const char *fname,
                       const char *arg);
int elem_strides(PyArrayObject *a, ptrdiff_t *st);
int ensure_elem_strides(PyArrayObject **pa, ptrdiff_t *st);
int may_overlap(PyArrayObject *a, PyArrayObject *b);
attn_mat mat_of(PyArrayObject *a, const ptrdiff_t *boff, const ptrdiff_t *st,
                int nd);
static inline attn_dtype dtype_of(int typenum)
{
    return typenum == NPY_FLOAT ? ATTN_F32 : ATTN_F64;
}

/* ---- results and out= ---------------------------------------------------- */
PyArrayObject *check_out(PyObject *obj, const char *fname, const char *arg,
                         int nd, const npy_intp *dims, int typenum);
PyArrayObject *dest_for(PyArrayObject *user, PyArrayObject *const *ins,
                        int nins, int *is_tmp);
PyObject *deliver(PyArrayObject *user, PyArrayObject *dst, int is_tmp);
PyArrayObject *new_result(int nd, const npy_intp *dims, int typenum,
                          const char *fname, const char *what);

/* One input x -> one result array (softmax, combine_heads, ...): the
 * references such a function holds. Zero it, fill it with the two calls
 * below, and end with `return ap_unary_finish(&u, ok)`, which delivers
 * the result (out= or the new array) when ok and releases everything.   */
typedef struct {
    PyArrayObject *raw, *x;        /* x as given, and in its compute type */
    PyArrayObject *user, *dst;     /* out= (or NULL), where the core writes */
    ptrdiff_t *offs;               /* alloc_offsets() memory, or NULL      */
    int is_tmp, typenum;
} ap_unary;
/* u->dst: the out= array `out` (checked against nd/dims; used directly
 * when it is exactly x and inplace_ok) or a new result                  */
int ap_unary_dest(ap_unary *u, PyObject *out, const char *fname, int nd,
                  const npy_intp *dims, int inplace_ok);
PyObject *ap_unary_finish(ap_unary *u, int ok);

/* ---- batch dims ---------------------------------------------------------- */
int broadcast_batch(PyArrayObject **arr, const int *nb, int nops,
                    const char *const *names, const char *fname, int *bnd,
                    npy_intp *bshape);
void fill_offsets(int nd, const npy_intp *shape, int nops,
                  ptrdiff_t (*strides)[NPY_MAXDIMS], ptrdiff_t *offs,
                  size_t B);
ptrdiff_t *alloc_offsets(size_t nops, size_t B);

/* ---- option strings ------------------------------------------------------ */
/* o must be the str names[i] for some i < n: *idx = i. Otherwise
 * "<fname>: <arg> must be <expect>, got ..." (ValueError for another str,
 * TypeError for another type).                                          */
int parse_choice(PyObject *o, const char *fname, const char *arg,
                 const char *expect, const char *const *names, int n,
                 int *idx);
int parse_causal(PyObject *o, const char *fname, attn_causal *c);
int parse_fully_masked(PyObject *o, const char *fname, attn_fm *fm);

/* ---- the attention variants (variants.c) --------------------------------- */
/* window: None (off) or (left, right), each side None (unbounded: -1 until
 * clamp_window) or an int >= 0; sets p->window, p->wleft, p->wright      */
int parse_window(PyObject *o, const char *fname, attn_problem *p);
/* softcap: None (0 = off) or a finite real > 0                          */
int parse_softcap(PyObject *o, const char *fname, double *cap);
/* pos_shift: an int with |pos_shift| <= PTRDIFF_MAX / 4                  */
int parse_pos_shift(PyObject *o, const char *fname, ptrdiff_t *shift);
/* once p->L, p->S and p->pos_shift are set: unbounded (and wider) window
 * sides become L + S + |pos_shift|, as attn.h asks                       */
int clamp_window(attn_problem *p, const char *fname);

/* ---- running the core ---------------------------------------------------- */
typedef struct {
    PyThreadState *ts;
    attn_exec ex;
} ap_nogil;
/* release the GIL; g->ex is then the exec to pass to the core (the
 * module's thread count, Ctrl-C polled about every 100 ms)               */
void ap_nogil_begin(ap_nogil *g);
/* a single-threaded core call with the GIL released: st = call            */
#define AP_RUN_NOGIL(st, call)                                                 \
    do {                                                                       \
        Py_BEGIN_ALLOW_THREADS(st) = (call);                                   \
        Py_END_ALLOW_THREADS                                                   \
    } while (0)
void ap_nogil_end(ap_nogil *g);
int raise_status(attn_status st, const char *fname);

/* ---- threads (runtime.c) ------------------------------------------------- */
int ap_num_threads(void);
int ap_init_threads(void);   /* -1: a warning raised */

/* ---- the families' method tables, added to the module by module.c -------- */
extern PyMethodDef ap_attention_methods[];
extern PyMethodDef ap_decode_methods[];
extern PyMethodDef ap_elementwise_methods[];
extern PyMethodDef ap_heads_methods[];
extern PyMethodDef ap_layer_methods[];
extern PyMethodDef ap_runtime_methods[];

#endif /* ATTNPY_PY_ARGS_H */
