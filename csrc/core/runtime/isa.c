/*
 * runtime/isa.c -- which instruction set the kernels use: the list
 * (runtime/isa.h), the initial choice (ATTNPY_ISA, else the best set that
 * is not opt-in), attn_set_isa.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "runtime/isa.h"
#include "runtime/platform.h"

static const char *const isa_names[ATTN_ISA_COUNT] = {
#define X(id, name, kern, usable, opt_in) name,
    ATTN_ISA_LIST(X)
#undef X
};

static const unsigned char isa_opt_in[ATTN_ISA_COUNT] = {
#define X(id, name, kern, usable, opt_in) opt_in,
    ATTN_ISA_LIST(X)
#undef X
};

const attn_kernels *attn__kernels_portable(void)
{
#if ATTN_HAVE_PORT_WIDE
    if (attn__x86_features() & ATTN_X86_AVX2_FMA)
        return &attn__kernels_portw;
#endif
    return &attn__kernels_port;
}

const attn_kernels *attn__kernels_of(attn_isa_id id)
{
    switch (id) {
#define X(id_, name, kern, usable, opt_in)                                     \
    case ATTN_ISA_##id_:                                                       \
        return (usable) ? (kern) : NULL;
        ATTN_ISA_LIST(X)
#undef X
    default:
        return NULL;
    }
}

static int isa_by_name(const char *name)
{
    for (int i = 0; i < ATTN_ISA_COUNT; i++)
        if (strcmp(name, isa_names[i]) == 0)
            return i;
    return -1;
}

/* the first usable set of the list that is not opt-in                   */
static int isa_best(void)
{
    int i = 0;
    while (isa_opt_in[i] || !attn__kernels_of((attn_isa_id)i))
        i++;
    return i;
}

#define ISA_UNSET (-1)
static atomic_int g_isa = ISA_UNSET;

attn_isa_id attn__isa(void)
{
    int isa = atomic_load_explicit(&g_isa, memory_order_acquire);
    if (isa != ISA_UNSET)
        return (attn_isa_id)isa;
    /* ATTNPY_ISA names the set (an unknown or unusable name: the
     * default; the binding warns); ATTNPY_FORCE_PORTABLE=1 is "portable" */
    int want = isa_best();
    const char *env = getenv("ATTNPY_ISA");
    const char *fp = getenv("ATTNPY_FORCE_PORTABLE");
    if (env && env[0]) {
        const int i = isa_by_name(env);
        if (i >= 0 && attn__kernels_of((attn_isa_id)i))
            want = i;
    } else if (fp && fp[0] && strcmp(fp, "0") != 0) {
        want = ATTN_ISA_PORTABLE;
    }
    int expected = ISA_UNSET;
    /* a concurrent attn_set_isa wins over the initial choice */
    atomic_compare_exchange_strong(&g_isa, &expected, want);
    return (attn_isa_id)atomic_load_explicit(&g_isa, memory_order_acquire);
}

const attn_kernels *attn__kernels(void)
{
    return attn__kernels_of(attn__isa());
}

const char *attn_isa_name(void) { return isa_names[attn__isa()]; }

int attn_set_isa(const char *name)
{
    if (!name)
        return -1;
    const int i = strcmp(name, "auto") == 0 ? isa_best() : isa_by_name(name);
    if (i < 0 || !attn__kernels_of((attn_isa_id)i))
        return -1;
    atomic_store_explicit(&g_isa, i, memory_order_release);
    return 0;
}

int attn_isa_info(size_t i, const char **name, int *usable, int *opt_in)
{
    if (i >= ATTN_ISA_COUNT)
        return -1;
    if (name)
        *name = isa_names[i];
    if (usable)
        *usable = attn__kernels_of((attn_isa_id)i) != NULL;
    if (opt_in)
        *opt_in = isa_opt_in[i];
    return 0;
}
