/*
 * isa/set_tmpl.h -- every template a set instantiates for one element
 * type, in one list: an isa/<set>.c includes it after
 * simd/vec_<set>.h, once with SIMD_F64 0 and once with SIMD_F64 1, and
 * fills its table with ATTN_SET_KERNELS (isa/kernels.h). The 16-bit rows
 * and the streaming read are float-only. Not include-guarded; ends the
 * type's template (simd/undef.h).
 */
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
