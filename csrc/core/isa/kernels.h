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
 * runtime/isa.h's list (with its feature's bit, where it needs a new
 * one) and the feature's test in runtime/cpuid.c. The C tests find it
 * through the list and its table (widen, narrow, math: the file includes
 * isa/set_tmpl.h, for float and double, and fills its table with
 * ATTN_SET_KERNELS, as isa/avx2.c does); they need no code of their own
 * per set.
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

/* simd/math.h's functions over rows (testing/math_rows_tmpl.h), for the C
 * tests' lane-by-lane checks of every set: y[i] = f(x[i]), n elements of
 * the table's element type; pow and sincos in the double table only    */
enum {
    ATTN_MF_EXP, ATTN_MF_EXP_NEG, ATTN_MF_TANH, ATTN_MF_SIGMOID, ATTN_MF_PHI,
    ATTN_MF_NPDF, ATTN_MF_LOG, ATTN_MF_N
};
#ifndef ATTN_MATH_ROWS /* the tests' builds define it as 1               */
#define ATTN_MATH_ROWS 0
#endif
typedef struct {
    void (*fn[ATTN_MF_N])(void *y, const void *x, size_t n);
    void (*pow)(void *r, const void *x, const void *y, size_t n);
    void (*sincos)(void *s, void *c, const void *x, size_t n);
} attn_math_rows;

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
    /* [ATTN_F32/F64]: simd/math.h's functions over rows, the C tests'
     * only: built where ATTN_MATH_ROWS is 1 (their builds), else NULL  */
    const attn_math_rows *math[2];
};

/* the math field of a table: {f32, f64} where the build has the rows    */
#if ATTN_MATH_ROWS
#define ATTN_MATH_ROWS_OF(f32, f64) {f32, f64}
#else
#define ATTN_MATH_ROWS_OF(f32, f64) {NULL, NULL}
#endif

/* the table of a set whose isa/<set>.c includes isa/set_tmpl.h for float
 * and double: S the suffix its names carry (avx2 in item_avx2_f32), name
 * the set's, the lanes W and query rows BQ per type, Q the suffix of its
 * quant rows (qmatvec)                                                  */
#define ATTN_SET_KERNELS(S, name, w32, w64, bq32, bq64, Q)                     \
    {                                                                          \
        name,                                                                  \
        NULL,                                                                  \
        {{w32, w64},                                                           \
         {bq32, bq64},                                                         \
         {item_##S##_f32, item_##S##_f64},                                     \
         {merge_item_##S##_f32, merge_item_##S##_f64},                         \
         {bwd_item_a_##S##_f32, bwd_item_a_##S##_f64},                         \
         {bwd_item_b_##S##_f32, bwd_item_b_##S##_f64},                         \
         NULL},                                                                \
        {attn__qrows_q4_1_##Q, attn__qrows_q8_0_##Q},                          \
        widen_##S##_f32,                                                       \
        narrow_##S##_f32,                                                      \
        {{act_fwd_##S##_f32, act_bwd_##S##_f32, glu_fwd_##S##_f32,             \
          glu_bwd_##S##_f32},                                                  \
         {act_fwd_##S##_f64, act_bwd_##S##_f64, glu_fwd_##S##_f64,             \
          glu_bwd_##S##_f64}},                                                 \
        {row_softmax_##S##_f32, row_softmax_##S##_f64},                        \
        read_sum_##S##_f32,                                                    \
        ATTN_MATH_ROWS_OF(&math_rows_##S##_f32, &math_rows_##S##_f64),         \
    }

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
/* table k's own math rows, or its base's                              */
static inline const attn_math_rows *attn__math_rows(const attn_kernels *k,
                                                    attn_dtype dt)
{
    return k->math[dt] || !k->base ? k->math[dt] : k->base->math[dt];
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
