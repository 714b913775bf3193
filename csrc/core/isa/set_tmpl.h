/*
 * isa/set_tmpl.h -- every template a set instantiates, in one list: an
 * isa/<set>.c defines SET_VEC_H (its simd/vec_<set>.h) and includes this
 * once; it includes itself for float (SIMD_F64 0), then double, each
 * time ending the type's template (simd/undef.h). The set then fills its
 * table with ATTN_SET_KERNELS (isa/kernels.h). The 16-bit rows and the
 * streaming read are float-only. Not include-guarded.
 */
#ifndef SET_TMPL_F64_
#define SET_TMPL_F64_ 0
#include "isa/set_tmpl.h"
#undef SET_TMPL_F64_
#define SET_TMPL_F64_ 1
#include "isa/set_tmpl.h"
#undef SET_TMPL_F64_
#else
#define SIMD_F64 SET_TMPL_F64_
#include SET_VEC_H
#include "simd/math.h"
#include "testing/math_rows_tmpl.h"
#include "attention/tile.h"
#include "attention/bwd_tile.h"
#if !SIMD_T_F64
#include "rows/cvt_tmpl.h"
#include "runtime/read_tmpl.h"
#endif
#include "layer/act_tmpl.h"
#include "elementwise/softmax_tmpl.h"
#include "simd/undef.h"
#endif
