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
#include "runtime/isa.h"

struct attn_kernels_ {
    const char *name;
    attn_isa_desc sdpa;          /* attention (attention/kern.h)          */
    attn__qrows_fn qrows[2];     /* quant: [ATTN_Q4_1], [ATTN_Q8_0]        */
};

#endif /* ATTNPY_ISA_KERNELS_H */
