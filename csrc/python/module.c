/*
 * python/module.c -- attnpy._core: the module object and nothing else.
 *
 * The binding files of csrc/python/ are the only code that includes
 * Python.h and NumPy: args.c holds the argument plumbing they share (see
 * args.h, which also says how to bind a new function), and each family
 * has its own file with its method table:
 *   attention.c    sdpa (attention, scaled_dot_product_attention, explain)
 *   decode.c       rope, merge (rotary_embedding, merge_attention)
 *   elementwise.c  softmax
 *   heads.c        posenc, combine_heads
 *   layer.c        layer_norm, bias_act (feed_forward, gelu), backward
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
                             ap_elementwise_methods, ap_heads_methods,
                             ap_layer_methods, ap_runtime_methods};
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++)
        if (PyModule_AddFunctions(mod, tables[i]) < 0)
            return -1;
    ap_init_threads();
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
    .m_methods = NULL,
    .m_slots = core_slots,
};

PyMODINIT_FUNC PyInit__core(void) { return PyModuleDef_Init(&core_module); }
