/*
 * attention/decode_neon.c -- the split-K decode kernel (decode_tile.h) for
 * AArch64 NEON (4 floats / 2 doubles): dot products one key at a time,
 * P V with 8 value vectors in registers.
 */
#include "attention/decode.h"

#if ATTN_HAVE_NEON

#define DK_NV 8

#define ATTN_VEC_F64 0
#include "attention/vec_neon.h"
#include "attention/decode_tile.h"

#define ATTN_VEC_F64 1
#include "attention/vec_neon.h"
#include "attention/decode_tile.h"

const attn_decode_desc attn__dec_neon = {
    {dchunk_neon_f32, dchunk_neon_f64},
    {dweights_neon_f32, dweights_neon_f64},
};

#endif /* ATTN_HAVE_NEON */
