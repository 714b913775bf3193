/*
 * python/args.h -- the argument plumbing every binding shares.
 *
 * The binding (csrc/python/) is the only code that includes Python.h and
 * NumPy's headers. Each family of functions has one file here
 * (attention.c, decode.c, elementwise.c, layer.c, positional.c,
 * runtime.c); module.c only builds
 * the module from their method tables. This header is what they share:
 * converting arguments to arrays, validating them, batch dims as the
 * core's offset tables, checking out= arrays, releasing the
 * GIL around the core and turning its status into an exception.
 *
 * How to bind a new core function (say attn_foo in csrc/core/attn.h):
 *   1. In the family's file, declare its arguments
 *          AP_ARGSPEC(foo_spec, "foo", 1, 1, "x", "out", "fname");
 *      and write
 *          static PyObject *core_foo(PyObject *mod, PyObject *const *args,
 *                                    Py_ssize_t nargs, PyObject *kwnames)
 *      starting with ap_parse_args(&foo_spec, ...) into a PyObject *a[3]:
 *      inputs by position, everything else by keyword from the Python
 *      wrapper, including the public function's name (fname) for
 *      messages; named flags (return_lse=True), never codes.
 *   2. Inputs: as_real_array() (any array-like -> ndarray, TypeError naming
 *      fname and the argument), compute_type_of() / as_type() (the dtype
 *      rules of docs/user/tour.md: float32 stays float32, the rest float64),
 *      or, for 16-bit data, the calls of the "16-bit storage" section,
 *      ensure_elem_strides() (strides in elements for attn_mat).
 *   3. Shapes: check them and raise with err_shapes() or PyErr_Format
 *      (AP_SHAPE() writes a shape), naming fname, the argument and the
 *      shapes. Batch dims: fill_offsets() into alloc_offsets() memory
 *      (attention.c's sdpa_batch broadcasts them by NumPy's rules).
 *   4. Results: new_result(), or for out=: check_out() then dest_for_call()
 *      (the user's array itself, or a temporary when it overlaps an input
 *      or has odd strides) and deliver() at the end.
 *   5. Compute: raise_status(AP_RUN(g, attn_foo, &args), fname), g an
 *      ap_nogil (the GIL released, an attn_exec with the thread count and
 *      the Ctrl-C poll).
 *   6. Add {"foo", AP_FASTCALL(core_foo), AP_KW, "foo(x, /, *, out=None,
 *      fname='foo')\n--\n\ndoc"} to the family's method table
 *      (ap_<family>_methods): the first line is the text signature that
 *      attnpy/_core.pyi must match (tests/reliability/test_core_stub.py);
 *      module.c adds every table to the module. Declare a new family's
 *      table below.
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
#define AP_KW (METH_FASTCALL | METH_KEYWORDS)
/* core_<name>: an AP_KW entry point that is impl(<the arguments after
 * impl>, argv, nargs, kwnames), for functions that share one impl       */
#define AP_ENTRY(name, impl, ...)                                              \
    static PyObject *core_##name(PyObject *Py_UNUSED(mod),                     \
                                 PyObject *const *argv, Py_ssize_t nargs,      \
                                 PyObject *kwnames)                            \
    {                                                                          \
        return impl(__VA_ARGS__, argv, nargs, kwnames);                        \
    }
#define AP_MAX_OPS 16  /* operands one fill_offsets() call may walk */

/* ---- keyword arguments of the _core functions ----------------------------- */
/* A _core function's arguments, declared once as a static table (as
 * NumPy's npy_parse_arguments does): `names` in slot order, the first
 * `npos` of which may come by position and the first `nreq` of which are
 * required. ap_parse_args() puts each argument in its slot, whatever the
 * order of the call: out[i] is borrowed, or NULL when not given (the
 * function applies its default). The names are interned on first use,
 * with the GIL held (the module does not declare free-threading).       */
typedef struct {
    const char *fname;             /* the _core function, for messages   */
    int npos, nreq, n;
    const char *const *names;
    PyObject **interned;           /* n slots, filled on first use       */
} ap_argspec;
#define AP_ARGSPEC(var, func, npos, nreq, ...)                                 \
    static const char *const var##_names[] = {__VA_ARGS__};                    \
    static PyObject *var##_interned[sizeof var##_names / sizeof(char *)];      \
    static ap_argspec var = {func, npos, nreq,                                 \
                             (int)(sizeof var##_names / sizeof(char *)),       \
                             var##_names, var##_interned}
int ap_parse_args(ap_argspec *spec, PyObject *const *args, Py_ssize_t nargs,
                  PyObject *kwnames, PyObject **out);
/* ap_parse_args, then every absent slot None; returns the public name
 * for messages (the str in slot fname_slot, else spec->fname) or NULL   */
const char *ap_parse_named(ap_argspec *spec, PyObject *const *args,
                           Py_ssize_t nargs, PyObject *kwnames,
                           PyObject **out, int fname_slot);
/* a slot's value, None when it was not given */
static inline PyObject *ap_or_none(PyObject *o) { return o ? o : Py_None; }
/* a flag slot: 0 or 1 (absent: 0), -1 with an exception                */
int ap_flag(PyObject *o);

/* ---- arrays and dtypes --------------------------------------------------- */
/* a shape as NumPy prints it, "(2, 3)", "(3,)" or "()", for messages:
 * written into buf (AP_SHAPE_LEN chars); AP_DIMS and AP_SHAPE give it a
 * buffer that lives to the end of the enclosing block                  */
#define AP_SHAPE_LEN (24 * NPY_MAXDIMS + 4)
const char *dims_str(int nd, const npy_intp *dims, char *buf);
#define AP_DIMS(nd, dims) dims_str((nd), (dims), (char[AP_SHAPE_LEN]){0})
#define AP_SHAPE(a) AP_DIMS(PyArray_NDIM(a), PyArray_DIMS(a))
static inline int same_dims(PyArrayObject *a, int nd, const npy_intp *dims)
{
    return PyArray_NDIM(a) == nd &&
           PyArray_CompareLists(PyArray_DIMS(a), (npy_intp *)dims, nd);
}
/* -1 with "<fname>: <arg> must have at least <min> dimensions (<axes>),
 * got shape ..." (ValueError) when a has fewer than min dims, else 0    */
int need_ndim(PyArrayObject *a, int min, const char *fname, const char *arg,
              const char *axes);
/* the product of a's first nlead dims (its batch size)                  */
size_t lead_size(PyArrayObject *a, int nlead);
/* raise exc: "<fmt % ...> (na.shape=..., nb.shape=...)" (the formats of
 * PyUnicode_FromFormat); returns -1                                    */
int err_shapes(PyObject *exc, const char *na, PyArrayObject *a,
               const char *nb, PyArrayObject *b, const char *fmt, ...);
/* NPY_FLOAT, NPY_DOUBLE, or -1 (not a real dtype) */
int compute_type_of(PyArray_Descr *d);
PyArrayObject *as_real_array(PyObject *obj, const char *fname,
                             const char *arg);
/* obj (not None, not a numpy.ma array) as an ndarray in its own dtype,
 * whatever the dtype; messages say it must be an array of `what`      */
PyArrayObject *any_array(PyObject *obj, const char *fname, const char *arg,
                         const char *what);
/* -1 with a TypeError when obj is a numpy.ma masked array (as_real_array
 * calls it; so must a binding that takes an ndarray as it is)           */
int reject_masked(PyObject *obj, const char *fname, const char *arg);
PyArrayObject *as_type(PyArrayObject *a, int typenum, const char *fname,
                       const char *arg);
int elem_strides(PyArrayObject *a, ptrdiff_t *st);
int ensure_elem_strides(PyArrayObject **pa, ptrdiff_t *st);
int may_overlap(PyArrayObject *a, PyArrayObject *b);
/* a and b are the same view: same memory, shape and strides (those of
 * dims of extent <= 1 aside): an output may be written in place       */
int same_view(PyArrayObject *a, PyArrayObject *b);
/* store = store_of(a): a float16/bfloat16 array is read in 16 bits    */
attn_mat mat_of(PyArrayObject *a, const ptrdiff_t *boff, const ptrdiff_t *st,
                int nd);
static inline attn_dtype dtype_of(int typenum)
{
    return typenum == NPY_FLOAT ? ATTN_F32 : ATTN_F64;
}

/* the reason a dtype is refused, for messages ("complex numbers are not
 * supported", ...)                                                      */
const char *describe_dtype_problem(PyArray_Descr *d);

/* ---- 16-bit storage (dtypes.c) --------------------------------------------
 * float16 (NumPy's) and bfloat16 (ml_dtypes.bfloat16) arrays are handed to
 * the core as they are, in 16 bits (attn_mat.store), under a float32 call;
 * the core accumulates in float and rounds a 16-bit result once. bfloat16
 * is recognised by its descr (kind 'V', 2 bytes, scalar type "bfloat16"
 * from module ml_dtypes) without importing ml_dtypes; new bfloat16 arrays
 * are made from an input's own descr. A binding that takes 16-bit data:
 *   1. inputs: as_array16() (instead of as_real_array), then the result
 *      dtype result_descr() of the operands that decide it, its compute
 *      type compute_type16(), and as_storage() for each operand;
 *   2. results: new_result_descr() (the result descr, or the compute type
 *      for float32-only results such as lse), out= through
 *      check_out_wide() and dest_for_call();
 *   3. mat_of() sets each operand's store from its array's dtype.
 * The rules:
 *   storage_of: AP_F16, AP_BF16, AP_F32, AP_F64; AP_CONV for bool, integer
 *     and longdouble arrays (converted to float64, as before); AP_BAD else.
 *   result_descr of n inputs (at most AP_MAX_OPS): np.result_type of
 *     them, float16/bfloat16/float32 kept, longdouble, bool and integers
 *     made float64 (as before); where NumPy has no common dtype (bfloat16
 *     with float16 or a wide integer): float32, or float64 where the
 *     other inputs promote to float64.
 *   compute_type16: NPY_DOUBLE for a float64 result, else NPY_FLOAT.
 *   as_storage(a, typenum): under NPY_FLOAT a 16-bit array stays 16-bit
 *     (made aligned and native-order, a copy only if it was not); every
 *     other array -- and a 16-bit one under NPY_DOUBLE (the core has no
 *     16-bit-with-double path) -- is as_type(a, typenum).
 *   check_out_wide: out= may have the result's dtype or a wider float
 *     (float32 or float64 with more bytes than the result).
 *   dest_for_call: where the core writes a result: the user's array
 *     itself when it is aligned, native, element-strided, shares no
 *     memory with the inputs and the kernel can write its dtype (the
 *     compute type, or a 16-bit type under NPY_FLOAT); otherwise a fresh
 *     temporary (the user's dtype where the kernel writes it, else the
 *     compute type) that deliver() copies (widens exactly) into it.    */
typedef enum {
    AP_BAD = -1, AP_F32 = 0, AP_F64 = 1, AP_F16 = 2, AP_BF16 = 3, AP_CONV = 4
} ap_kind;
ap_kind storage_of(PyArray_Descr *d);
int is_bf16_descr(PyArray_Descr *d);
int is_16bit(PyArray_Descr *d);                  /* AP_F16 or AP_BF16 */
attn_store store_of(PyArrayObject *a);           /* NULL: ATTN_ST_NATIVE */
/* any array-like -> ndarray in its own dtype (new reference), storage_of
 * not AP_BAD; TypeError naming fname, arg and the accepted dtypes      */
PyArrayObject *as_array16(PyObject *obj, const char *fname, const char *arg);
/* NULL entries are skipped; new reference                              */
PyArray_Descr *result_descr(int n, PyArrayObject *const *arrs);
int compute_type16(PyArray_Descr *result);
PyArrayObject *as_storage(PyArrayObject *a, int typenum, const char *fname,
                          const char *arg);
PyArrayObject *check_out_wide(PyObject *obj, const char *fname,
                              const char *arg, int nd, const npy_intp *dims,
                              PyArray_Descr *result);
PyArrayObject *dest_for_call(PyArrayObject *user, PyArrayObject *const *ins,
                             int nins, int typenum, int *is_tmp);

/* ---- results and out= ---------------------------------------------------- */
PyArrayObject *check_out(PyObject *obj, const char *fname, const char *arg,
                         int nd, const npy_intp *dims, int typenum);
PyObject *deliver(PyArrayObject *user, PyArrayObject *dst, int is_tmp);
PyArrayObject *new_result(int nd, const npy_intp *dims, int typenum,
                          const char *fname, const char *what);
/* the same with a descr (not stolen): a 16-bit result                  */
PyArrayObject *new_result_descr(int nd, const npy_intp *dims,
                                PyArray_Descr *descr, const char *fname,
                                const char *what);

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
/* u->dst (dtypes.c) for a call with result dtype rd (16-bit allowed):
 * a new array, or out= (rd or a wider float) of ins[0]'s shape, used
 * directly when the kernel can write it and it is exactly one of
 * ins[0..n) (n <= 2: in place) or overlaps none, else through a
 * temporary                                                             */
int ap_unary_dest16(ap_unary *u, PyObject *out, PyArray_Descr *rd,
                    const char *fname, PyArrayObject *const *ins, int n);
PyObject *ap_unary_finish(ap_unary *u, int ok);

/* ---- batch dims ---------------------------------------------------------- */
void fill_offsets(int nd, const npy_intp *shape, int nops,
                  ptrdiff_t (*strides)[NPY_MAXDIMS], ptrdiff_t *offs,
                  size_t B);
ptrdiff_t *alloc_offsets(size_t nops, size_t B);
/* Row operands over nd dims of extent shape (C order), nrows rows in all:
 * operand op's row r at r * m[op].s0 when its dims collapse into one
 * stride (no table: a contiguous array of short rows needs no 8 bytes a
 * row), else at its entry of one offset table *offs (NULL when no
 * operand needs one; the caller frees it). Sets m[op].boff and m[op].s0
 * only, for row kernels that address rows as OFF(m, r) + r * s0. 0, or
 * -1 with an exception.                                                 */
int row_tables(int nd, const npy_intp *shape, int nops,
               ptrdiff_t (*strides)[NPY_MAXDIMS], size_t nrows, attn_mat *m,
               ptrdiff_t **offs);

/* ---- option strings ------------------------------------------------------ */
/* o must be the str names[i] for some i < n: *idx = i. Otherwise
 * "<fname>: <arg> must be <expect>, got ..." (ValueError for another str,
 * TypeError for another type); expect NULL: "'a', 'b' or 'c'" of names */
int parse_choice(PyObject *o, const char *fname, const char *arg,
                 const char *expect, const char *const *names, int n,
                 int *idx);

/* ---- the attention variants (variants.c) --------------------------------- */
/* variants: None, or the tuple of the public functions' variant keywords
 * (window, alibi_slopes, softcap, ...: the order is variants.c's), each
 * checked with fname and its name in the messages and written into p;
 * *alibi is alibi_slopes as given (borrowed), or NULL when None        */
int parse_variants(PyObject *o, const char *fname, attn_problem *p,
                   PyObject **alibi);
/* pos_shift: an int with |pos_shift| <= PTRDIFF_MAX / 4                  */
int parse_pos_shift(PyObject *o, const char *fname, ptrdiff_t *shift);
/* once p->L, p->S and p->pos_shift are set: unbounded (and wider) window
 * sides become L + S + |pos_shift|, as attn.h asks                       */
int clamp_window(attn_problem *p, const char *fname);

/* a keep-mask (nonzero = may attend) must hold no negative values: -1
 * with a ValueError pointing to bias= for an additive mask              */
int check_keep_mask(PyArrayObject *m, const char *fname);

/* ---- running the core ---------------------------------------------------- */
typedef struct {
    PyThreadState *ts;
    attn_exec ex;
} ap_nogil;
/* release the GIL; returns &g->ex, the exec to pass to the core (the
 * module's thread count, Ctrl-C polled about every 100 ms)               */
const attn_exec *ap_nogil_begin(ap_nogil *g);
attn_status ap_nogil_end(ap_nogil *g, attn_status st); /* returns st */
/* the status of a core entry point fn(args..., exec) run with the GIL
 * released, on the module's threads with the Ctrl-C poll (g: an ap_nogil
 * of the caller's; ap_nogil_end's arguments, fn's call among them, are
 * evaluated before it is called)                                        */
#define AP_RUN(g, fn, ...)                                                     \
    ap_nogil_end(&(g), fn(__VA_ARGS__, ap_nogil_begin(&(g))))
int raise_status(attn_status st, const char *fname);

/* ---- threads (runtime.c) ------------------------------------------------- */
int ap_num_threads(void);
int ap_init_threads(void);   /* -1: a warning raised */
int ap_check_isa_env(void);  /* -1: a warning raised */

/* ---- the families' method tables, added to the module by module.c -------- */
extern PyMethodDef ap_attention_methods[];
extern PyMethodDef ap_decode_methods[];
extern PyMethodDef ap_elementwise_methods[];
extern PyMethodDef ap_layer_methods[];
extern PyMethodDef ap_positional_methods[];
extern PyMethodDef ap_quant_methods[];
extern PyMethodDef ap_runtime_methods[];

#endif /* ATTNPY_PY_ARGS_H */
