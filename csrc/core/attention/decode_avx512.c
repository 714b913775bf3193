/*
 * attention/decode_avx512.c -- the split-K decode kernel (decode_tile.h)
 * for AVX-512F (16 floats / 8 doubles): dot products one key at a time,
 * P V with 8 value vectors (128 floats) in registers.
 */
#include "attention/decode.h"

#if ATTN_HAVE_X86

#define DK_NV 8

#define ATTN_VEC_F64 0
#include "attention/vec_avx512.h"
#include "attention/decode_tile.h"

#define ATTN_VEC_F64 1
#include "attention/vec_avx512.h"
#include "attention/decode_tile.h"

const attn_decode_desc attn__dec_avx512 = {
    {dchunk_avx512_f32, dchunk_avx512_f64},
    {dweights_avx512_f32, dweights_avx512_f64},
};

#endif /* ATTN_HAVE_X86 */
