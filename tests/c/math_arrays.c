/*
 * tests/c/math_arrays.c -- tests/c/math_arrays.h: the scalar
 * instantiation here, the instruction sets' from runtime/isa.h's list.
 */
#include "math_arrays.h"

#include "runtime/isa.h"
#include "runtime/platform.h"

const char *const math_fn_names[MF_N] = {"exp",     "exp_neg", "tanh", "sigmoid",
                                         "phi",     "npdf",    "log"};

#if ATTN_ARCH_X86 && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
ATTN_TARGET("avx") void math_clean_upper(void) { _mm256_zeroupper(); }
#else
void math_clean_upper(void) {}
#endif

#define SIMD_F64 0
#include "simd/vec_scalar.h"
#include "simd/math.h"
#include "testing/math_rows_tmpl.h"
#include "simd/undef.h"
#define SIMD_F64 1
#include "simd/vec_scalar.h"
#include "simd/math.h"
#include "testing/math_rows_tmpl.h"
#include "simd/undef.h"
const math_set math_set_scalar = {"scalar", 1, 0, 1,
                                  {&math_rows_scalar_f32, &math_rows_scalar_f64}};

extern const math_set math_set_scalar_soft, math_set_port_soft; /* math_soft.c */

/* one set of the list: its table (NULL where this build has none), and
 * whether this CPU runs it; a table with a base (amx) has its base's
 * rows, listed under the base's own entry                              */
static math_set g_sets[ATTN_ISA_COUNT];
static const attn_kernels *g_tab[ATTN_ISA_COUNT];
static const math_set *g_list[ATTN_ISA_COUNT + 2];
static int g_n = -1;

static void add_isa(attn_isa_id id, const attn_kernels *k, int usable)
{
    if (!k || k->base)
        return;
    for (int i = 0; i < g_n; i++)
        if (g_tab[i] == k)
            return; /* "portable" where it runs the base build */
    g_tab[g_n] = k;
    math_set *s = &g_sets[g_n];
    s->name = k->name;
    s->available = usable != 0;
    s->slow = id == ATTN_ISA_PORTABLE || id == ATTN_ISA_BASELINE;
    s->r[0] = k->math[ATTN_F32];
    s->r[1] = k->math[ATTN_F64];
    g_list[g_n++] = s;
}

const math_set *const *math_sets(int *n)
{
    if (g_n < 0) {
        g_n = 0;
#define X(id, name, kern, usable, opt_in) add_isa(ATTN_ISA_##id, kern, usable);
        ATTN_ISA_LIST(X)
#undef X
        g_list[g_n++] = &math_set_scalar_soft;
        g_list[g_n++] = &math_set_port_soft;
    }
    *n = g_n;
    return g_list;
}
