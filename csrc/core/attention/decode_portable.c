/*
 * attention/decode_portable.c -- the split-K decode kernel (decode_tile.h)
 * in plain C (any CPU); on x86 with gcc or clang also compiled for AVX2
 * (the "portable" path's wide variant, attention/vec_portable.h).
 */
#include "attention/decode.h"

#define DK_NV 8

#define ATTN_VEC_F64 0
#include "attention/vec_portable.h"
#include "attention/decode_tile.h"

#define ATTN_VEC_F64 1
#include "attention/vec_portable.h"
#include "attention/decode_tile.h"

const attn_decode_desc attn__dec_portable = {
    {dchunk_portable_f32, dchunk_portable_f64},
    {dweights_portable_f32, dweights_portable_f64},
};

#if ATTN_HAVE_PORT_WIDE

#define ATTN_PORT_WIDE 1
#define ATTN_VEC_F64 0
#include "attention/vec_portable.h"
#include "attention/decode_tile.h"

#define ATTN_PORT_WIDE 1
#define ATTN_VEC_F64 1
#include "attention/vec_portable.h"
#include "attention/decode_tile.h"

const attn_decode_desc attn__dec_portable_wide = {
    {dchunk_portable8_f32, dchunk_portable8_f64},
    {dweights_portable8_f32, dweights_portable8_f64},
};

#endif
