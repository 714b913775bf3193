/*
 * isa/kernels.h -- one instruction set's kernels, in one table (not
 * public). isa/<set>.c fills it: it instantiates every template written
 * over the SIMD primitives (simd/math.h, attention/tile.h,
 * attention/bwd_tile.h) once per element type with simd/vec_<set>.h, and
 * lists the functions that gives (their names are in the table, so grep
 * finds them there). runtime/isa.h lists the sets and picks the table;
 * each family reads its fields through attn__kernels().
 *
 * A new instruction set: simd/vec_<set>.h, isa/<set>.c, one line in
 * runtime/isa.h's list and its feature test in runtime/cpuid.c.
 */
#ifndef ATTNPY_ISA_KERNELS_H
#define ATTNPY_ISA_KERNELS_H

#include "attention/kern.h"
#include "quant/qmatvec.h"
#include "rows/rows.h"
#include "runtime/isa.h"

/* the activations' rows (layer/act_tmpl.h): unit-stride rows of the
 * element type of the field's index, n elements                         */
typedef struct {
    void (*fwd)(attn_act a, size_t n, void *y, const void *x,
                const void *b);
    void (*bwd)(attn_act a, size_t n, void *dx, const void *dy,
                const void *x, const void *b);
    void (*glu)(size_t n, void *y, const void *g, const void *u);
    void (*glu_bwd)(size_t n, void *dg, void *du, const void *dy,
                    const void *g, const void *u);
} attn_act_kernels;

/* the streaming read (runtime/read_tmpl.h): the sum of nwords native
 * 64-bit words at p                                                     */
typedef uint64_t (*attn_read_fn)(const unsigned char *p, size_t nwords);

struct attn_kernels_ {
    const char *name;
    /* NULL, or the table whose kernels serve where this one has none
     * (NULL fields): "amx" has AVX-512's but for its float attention   */
    const struct attn_kernels_ *base;
    attn_isa_desc sdpa;          /* attention (attention/kern.h)          */
    attn__qrows_fn qrows[2];     /* quant: [ATTN_Q4_1], [ATTN_Q8_0]        */
    attn_widen_fn widen;         /* 16-bit rows (rows/cvt_tmpl.h)         */
    attn_narrow_fn narrow;
    attn_act_kernels act[2];     /* [ATTN_F32], [ATTN_F64]                */
    /* one row's softmax (elementwise/softmax_tmpl.h), [ATTN_F32/F64]   */
    void (*softmax_row[2])(size_t n, void *y, const void *x);
    attn_read_fn read_sum;       /* the streaming read (attn_read_bytes)  */
};

/* the kernels of the set in use, its base's where it has none          */
static inline const attn_kernels *attn__kernels_for(int have)
{
    const attn_kernels *k = attn__kernels();
    return have || !k->base ? k : k->base;
}
static inline const attn_act_kernels *attn__act_kernels(attn_dtype dt)
{
    const attn_kernels *k = attn__kernels();
    return &attn__kernels_for(k->act[dt].fwd != NULL)->act[dt];
}
static inline attn_widen_fn attn__widen(void)
{
    return attn__kernels_for(attn__kernels()->widen != NULL)->widen;
}
static inline attn_narrow_fn attn__narrow(void)
{
    return attn__kernels_for(attn__kernels()->narrow != NULL)->narrow;
}
static inline attn_read_fn attn__read_sum(void)
{
    return attn__kernels_for(attn__kernels()->read_sum != NULL)->read_sum;
}

#endif /* ATTNPY_ISA_KERNELS_H */
