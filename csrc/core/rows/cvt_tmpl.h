/*
 * rows/cvt_tmpl.h -- unit-stride 16-bit rows widened to float and float
 * rows rounded to 16 bits, written once over the SIMD primitives
 * (simd/vec_<set>.h's VLOAD_F16 ... with half.h's bits; the tail by
 * half.h itself). A template: isa/<set>.c includes it in its float
 * section; defines widen<SFX>, narrow<SFX> (e.g. widen_avx2_f32).
 */
static ATTR void SFX(widen)(float *dst, const uint16_t *src, size_t n,
                            attn_store st)
{
    size_t j = 0;
    if (st == ATTN_ST_BF16) {
        for (; j + W <= n; j += W)
            VSTOREU(dst + j, VLOAD_BF16(src + j));
        for (; j < n; j++)
            dst[j] = attn_bf16_to_f32(src[j]);
    } else {
        for (; j + W <= n; j += W)
            VSTOREU(dst + j, VLOAD_F16(src + j));
        for (; j < n; j++)
            dst[j] = attn_f16_to_f32(src[j]);
    }
}

static ATTR void SFX(narrow)(uint16_t *dst, const float *src, size_t n,
                             attn_store st)
{
    size_t j = 0;
    if (st == ATTN_ST_BF16) {
        for (; j + W <= n; j += W)
            VSTORE_BF16(dst + j, VLOADU(src + j));
        for (; j < n; j++)
            dst[j] = attn_f32_to_bf16(src[j]);
    } else {
        for (; j + W <= n; j += W)
            VSTORE_F16(dst + j, VLOADU(src + j));
        for (; j < n; j++)
            dst[j] = attn_f32_to_f16(src[j]);
    }
}
