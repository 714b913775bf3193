/*
 * attention/decode_avx2.c -- the split-K decode kernel (decode_tile.h) for
 * AVX2 + FMA (8 floats / 4 doubles): dot products one key at a time,
 * P V with 8 value vectors in registers.
 */
#include "attention/decode.h"

#if ATTN_HAVE_X86

#define DK_NV 8

#define ATTN_VEC_F64 0
#include "attention/vec_avx2.h"
#include "attention/decode_tile.h"

#define ATTN_VEC_F64 1
#include "attention/vec_avx2.h"
#include "attention/decode_tile.h"

const attn_decode_desc attn__dec_avx2 = {
    {dchunk_avx2_f32, dchunk_avx2_f64},
    {dweights_avx2_f32, dweights_avx2_f64},
};

#endif /* ATTN_HAVE_X86 */
