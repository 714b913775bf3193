/*
 * python/module.c -- attnpy._core: the module object and nothing else.
 *
 * The binding files of csrc/python/ are the only code that includes
 * Python.h and NumPy: args.c holds the argument plumbing they share (see
 * args.h, which also says how to bind a new function), and each family
 * has its own file with its method table:
 *   attention.c    sdpa (attention, scaled_dot_product_attention, explain),
 *                  sdpa_bwd (attention_backward)
 *   decode.c       merge (merge_attention)
 *   elementwise.c  softmax, its backward and Jacobian, combine_heads
 *   positional.c   posenc, rope (positional_encoding, rotary_embedding)
 *   layer.c        layer_norm, bias_act (feed_forward, gelu), backward
 *   quant.c        qmatmul (quantized_matmul)
 *   runtime.c      threads, instruction set, CPU count, as_real
 * Module init imports NumPy's C-API, adds every family's functions and
 * reads ATTNPY_NUM_THREADS. Every error message starts with the public
 * function's name and names the argument and the shapes involved.
 */
#define ATTNPY_IMPORT_ARRAY /* this file owns NumPy's C-API table */
#include "args.h"

static int core_exec(PyObject *mod)
{
    if (PyArray_ImportNumPyAPI() < 0)
        return -1;
    PyMethodDef *tables[] = {ap_attention_methods, ap_decode_methods,
                             ap_elementwise_methods, ap_layer_methods,
                             ap_positional_methods, ap_quant_methods,
                             ap_runtime_methods};
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++)
        if (PyModule_AddFunctions(mod, tables[i]) < 0)
            return -1;
    if (ap_init_threads() < 0)
        return -1;
    return ap_check_isa_env();
}

/* No Py_mod_gil slot: a free-threaded CPython (3.13t) that imports the
 * module turns the GIL back on (and warns). Declaring Py_MOD_GIL_NOT_USED
 * waits until the free-threaded build can be tested: no 3.13t can be
 * installed on the machines that test this project (no Debian package, no
 * pyenv build; compiling CPython does not fit in CI's time), and
 * cibuildwheel builds no cp313t wheels (pyproject.toml). What is known
 * (reviewed, not run): the binding keeps no module state; the thread count
 * (runtime.c) and the instruction set (sdpa.c) are C atomics; the core's
 * pool has one owner at a time (pool.c). Not reviewed: the Python layer
 * (e.g. attnpy.bench.config's module-level override) and NumPy arrays
 * that another thread resizes during a call. To enable: add
 *     {Py_mod_gil, Py_MOD_GIL_NOT_USED},   (under PY_VERSION_HEX >= 3.13)
 * and run tests/reliability/test_threads.py and the suite under 3.13t
 * (`tools/test_pythons.sh 3.13t` finds a python3.13t on PATH).           */
static PyModuleDef_Slot core_slots[] = {
    {Py_mod_exec, (void *)core_exec},
    {0, NULL}};

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "attnpy._core",
    .m_doc = "attnpy's C core binding. Use the functions in attnpy instead.",
    .m_size = 0,
    .m_methods = NULL,
    .m_slots = core_slots,
};

PyMODINIT_FUNC PyInit__core(void) { return PyModuleDef_Init(&core_module); }
