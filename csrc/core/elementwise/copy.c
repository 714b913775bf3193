/*
 * elementwise/copy.c -- batched strided 2-D copy (combine_heads moves data
 * with it).
 */
#include <stddef.h>

#include "attn.h"
#include "layer/row16.h"
#include "util.h"

/* ------------------------------------------------------------------------ */
/* batched strided copy: out (B, rows, cols) = in (B, rows, cols)            */
/* ------------------------------------------------------------------------ */
#define DEFINE_COPY2D(T, SFX)                                                   \
static void copy2d_##SFX(attn_mat out, attn_mat in, size_t B, size_t rows,      \
                         size_t cols)                                           \
{                                                                               \
    for (size_t b = 0; b < B; b++) {                                            \
        const T *x_b = (const T *)in.data + OFF(in, b);                         \
        T *y_b = (T *)out.data + OFF(out, b);                                   \
        for (size_t i = 0; i < rows; i++) {                                     \
            const T *x_bi = x_b + (ptrdiff_t)i * in.s0;                         \
            T *y_bi = y_b + (ptrdiff_t)i * out.s0;                              \
            for (size_t j = 0; j < cols; j++)                                   \
                y_bi[(ptrdiff_t)j * out.s1] = x_bi[(ptrdiff_t)j * in.s1];       \
        }                                                                       \
    }                                                                           \
}

DEFINE_COPY2D(float, f32)
DEFINE_COPY2D(double, f64)

attn_status attn_copy2d(attn_dtype dtype, attn_mat out, attn_mat in, size_t B,
                        size_t rows, size_t cols)
{
    const attn_mat *ops[2] = {&out, &in};
    if (attn__any16(dtype, ops, 2) != 0) /* no 16-bit copy */
        return ATTN_EINVAL;
    if (dtype == ATTN_F32)
        copy2d_f32(out, in, B, rows, cols);
    else if (dtype == ATTN_F64)
        copy2d_f64(out, in, B, rows, cols);
    else
        return ATTN_EINVAL;
    return ATTN_OK;
}
