/*
 * python/runtime.c -- bindings of the runtime: thread count, instruction
 * set, CPU count, the streaming read (read_bytes: the benchmark's
 * yardstick), and as_real (the binding's array conversion, for the
 * Python wrappers' own checks).
 */
#include "args.h" /* first: Python.h before any system header */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static atomic_int g_num_threads = 1;

int ap_num_threads(void) { return atomic_load(&g_num_threads); }

/* ATTNPY_NUM_THREADS if set to 1..1024, else the CPUs we may run on; any
 * other value is ignored with a RuntimeWarning (a typo there would
 * otherwise silently give the default). -1: the warning was an error.  */
int ap_init_threads(void)
{
    const char *env = getenv("ATTNPY_NUM_THREADS");
    atomic_store(&g_num_threads, attn_available_cpus());
    if (!env || !*env)
        return 0;
    char *end;
    errno = 0;
    long n = strtol(env, &end, 10);
    if (*end == '\0' && errno == 0 && n >= 1 && n <= 1024) {
        atomic_store(&g_num_threads, (int)n);
        return 0;
    }
    return PyErr_WarnFormat(PyExc_RuntimeWarning, 1,
                            "attnpy: ignoring ATTNPY_NUM_THREADS='%s' (it must "
                            "be an integer from 1 to 1024); using %d threads, "
                            "the CPUs this process may run on", env,
                            attn_available_cpus());
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
    Py_ssize_t len = 0;
    const char *name =
        PyUnicode_Check(arg) ? PyUnicode_AsUTF8AndSize(arg, &len) : NULL;
    if (!name) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "set_isa: name must be a str, got %s",
                         Py_TYPE(arg)->tp_name);
        return NULL;
    }
    /* the core compares C strings: a NUL inside would cut the name */
    if (strlen(name) != (size_t)len || attn_set_isa(name) != 0) {
        PyErr_Format(PyExc_ValueError,
                     "set_isa: %R is unknown or not supported by this CPU",
                     arg);
        return NULL;
    }
    return PyUnicode_FromString(attn_isa_name());
}

/* isas(): every set of the core's list, best first, as (name, opt_in,
 * usable here) triples: the one list tests and tools read             */
static PyObject *core_isas(PyObject *Py_UNUSED(mod), PyObject *Py_UNUSED(arg))
{
    PyObject *list = PyList_New(0);
    if (!list)
        return NULL;
    const char *name;
    int usable, opt_in;
    for (size_t i = 0; attn_isa_info(i, &name, &usable, &opt_in) == 0; i++) {
        PyObject *item = Py_BuildValue("(sOO)", name,
                                       opt_in ? Py_True : Py_False,
                                       usable ? Py_True : Py_False);
        if (!item || PyList_Append(list, item) < 0) {
            Py_XDECREF(item);
            Py_DECREF(list);
            return NULL;
        }
        Py_DECREF(item);
    }
    return list;
}

/* ATTNPY_ISA naming no usable set: warn (the core keeps the default);
 * -1: the warning was an error                                          */
int ap_check_isa_env(void)
{
    const char *env = getenv("ATTNPY_ISA");
    if (!env || !*env || strcmp(env, attn_isa_name()) == 0)
        return 0;
    return PyErr_WarnFormat(PyExc_RuntimeWarning, 1,
                            "attnpy: ignoring ATTNPY_ISA='%s' (not an "
                            "instruction set this machine can run; see "
                            "attnpy.isas()); using '%s'", env,
                            attn_isa_name());
}

static PyObject *core_available_cpus(PyObject *Py_UNUSED(mod),
                                     PyObject *Py_UNUSED(arg))
{
    return PyLong_FromLong(attn_available_cpus());
}

/* ------------------------------------------------------------------------ */
/* the streaming read (the benchmark's yardstick for decoding)               */
/* ------------------------------------------------------------------------ */
/* read_bytes(arrays): attn_read_bytes over the memory of a list or tuple
 * of arrays, on the module's threads with the set in use; returns the
 * sum (an int). Each must be an ndarray in one block (C- or
 * Fortran-contiguous, any dtype): a strided view is not one stream, and
 * a copy would time the copy.                                          */
static PyObject *core_read_bytes(PyObject *Py_UNUSED(mod), PyObject *arg)
{
    PyObject *res = NULL;
    const void **data = NULL;
    size_t *nbytes = NULL;
    uint64_t sum = 0;
    if (!PyList_Check(arg) && !PyTuple_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "read_bytes: arrays must be a list or "
                     "tuple of NumPy arrays, got %s", Py_TYPE(arg)->tp_name);
        return NULL;
    }
    /* a tuple of its own: the arrays stay alive while the GIL is out */
    PyObject *arrs = PySequence_Tuple(arg);
    if (!arrs)
        return NULL;
    const Py_ssize_t n = PyTuple_GET_SIZE(arrs);
    data = PyMem_Calloc(n ? (size_t)n : 1, sizeof *data);
    nbytes = PyMem_Calloc(n ? (size_t)n : 1, sizeof *nbytes);
    if (!data || !nbytes) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = PyTuple_GET_ITEM(arrs, i);
        if (!PyArray_Check(o)) {
            PyErr_Format(PyExc_TypeError, "read_bytes: arrays[%zd] must be a "
                         "NumPy array, got %s", i, Py_TYPE(o)->tp_name);
            goto fail;
        }
        PyArrayObject *a = (PyArrayObject *)o;
        if (!PyArray_IS_C_CONTIGUOUS(a) && !PyArray_IS_F_CONTIGUOUS(a)) {
            PyErr_Format(PyExc_ValueError, "read_bytes: arrays[%zd] (shape "
                         "%s) is not contiguous: it must be one block of "
                         "memory", i, AP_SHAPE(a));
            goto fail;
        }
        data[i] = PyArray_DATA(a);
        nbytes[i] = (size_t)PyArray_NBYTES(a);
    }
    attn_read_args ra = {(size_t)n, data, nbytes, &sum};
    ap_nogil g;
    if (raise_status(AP_RUN(g, attn_read_bytes, &ra), "read_bytes") == 0)
        res = PyLong_FromUnsignedLongLong((unsigned long long)sum);
fail:
    PyMem_Free(data);
    PyMem_Free(nbytes);
    Py_DECREF(arrs);
    return res;
}

AP_ARGSPEC(as_real_spec, "as_real", 3, 3, "obj", "fname", "arg");
AP_ARGSPEC(as_array16_spec, "as_array16", 3, 3, "obj", "fname", "arg");

/* (obj, fname, arg) -> conv(obj, fname, arg)                            */
static PyObject *array_of(ap_argspec *spec,
                          PyArrayObject *(*conv)(PyObject *, const char *,
                                                 const char *),
                          PyObject *const *argv, Py_ssize_t nargs,
                          PyObject *kwnames)
{
    PyObject *args[3];
    if (ap_parse_args(spec, argv, nargs, kwnames, args) < 0)
        return NULL;
    const char *fname = PyUnicode_AsUTF8(args[1]);
    const char *arg = fname ? PyUnicode_AsUTF8(args[2]) : NULL;
    if (!arg)
        return NULL;
    return (PyObject *)conv(args[0], fname, arg);
}

/* as_real(obj, fname, arg): ndarray of real numbers in its own dtype;
 * as_array16: the same, float16 and bfloat16 accepted                  */
AP_ENTRY(as_real, array_of, &as_real_spec, as_real_array)
AP_ENTRY(as_array16, array_of, &as_array16_spec, as_array16)

PyMethodDef ap_runtime_methods[] = {
    {"as_array16", AP_FASTCALL(core_as_array16), AP_KW,
     "as_array16(obj, fname, arg)\n--\n\nobj as an ndarray in its own "
     "dtype: float16, bfloat16, float32, float64, bool or integer, or a "
     "TypeError naming the function, argument and accepted dtypes"},
    {"as_real", AP_FASTCALL(core_as_real), AP_KW,
     "as_real(obj, fname, arg)\n--\n\nobj as an ndarray of real numbers, "
     "or a TypeError naming the function and argument"},
    {"set_num_threads", core_set_num_threads, METH_O,
     "set_num_threads(n, /)\n--\n\nSet the thread count; returns the "
     "previous one."},
    {"get_num_threads", core_get_num_threads, METH_NOARGS,
     "get_num_threads()\n--\n\nThe thread count."},
    {"isa", core_isa, METH_NOARGS,
     "isa()\n--\n\nThe name of the kernel path in use."},
    {"set_isa", core_set_isa, METH_O,
     "set_isa(name, /)\n--\n\nSelect 'auto', 'portable' or a SIMD path; "
     "returns its name."},
    {"isas", core_isas, METH_NOARGS,
     "isas()\n--\n\nThe instruction sets this machine can run, best first, "
     "as (name, opt_in) pairs."},
    {"read_bytes", core_read_bytes, METH_O,
     "read_bytes(arrays, /)\n--\n\nRead every byte of a list of contiguous "
     "arrays, front to back, on attnpy's threads with the instruction set "
     "in use; returns their sum as native 64-bit words modulo 2**64 (the "
     "last partial word of each array padded with zero bytes). The "
     "benchmark's streaming-read yardstick; not public API."},
    {"available_cpus", core_available_cpus, METH_NOARGS,
     "available_cpus()\n--\n\nThe CPUs this process may run on."},
    {NULL, NULL, 0, NULL}};
