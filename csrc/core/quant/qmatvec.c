/*
 * quant/qmatvec.c -- y = x W^T with W stored in GGUF blocks (Q4_1, Q8_0),
 * computed from the blocks themselves: a decode step's products read the
 * 20 (Q4_1) or 34 (Q8_0) bytes of each 32 weights instead of 128 bytes of
 * float32. The weights are exactly gguf's dequantized floats; the sums
 * run in the one order qmatvec.h describes, on every instruction set
 * (portable C here, AVX-512 and AVX2 in qmatvec_x86.c), so the bits do
 * not depend on the ISA, the thread count or the other rows of the call.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "half.h"
#include "quant/qmatvec.h"
#include "runtime/platform.h"
#include "isa/kernels.h"
#include "runtime/sched.h"

#define QROWS 64 /* output rows per work item                           */

/* a block's float16 field (GGUF is little-endian, as every host here)   */
static float f16_at(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return attn_f16_to_f32(h);
}

/* acc[0..31] -> one float, by the tree of qmatvec.h                    */
static float reduce32(float *acc)
{
    for (int w = 16; w >= 1; w /= 2)
        for (int l = 0; l < w; l++)
            acc[l] += acc[l + w];
    return acc[0];
}

/* a block's 32 weights, as gguf decodes them                           */
static void decode_q4_1(const uint8_t *blk, float *wv)
{
    const float d = f16_at(blk), m = f16_at(blk + 2);
    for (int j = 0; j < 16; j++) {
        wv[j] = d * (float)(blk[4 + j] & 15) + m;
        wv[16 + j] = d * (float)(blk[4 + j] >> 4) + m;
    }
}

static void decode_q8_0(const uint8_t *blk, float *wv)
{
    const float d = f16_at(blk);
    for (int j = 0; j < QK; j++)
        wv[j] = d * (float)(int8_t)blk[2 + j];
}

static void qrows_portable(void (*decode)(const uint8_t *, float *),
                           size_t bytes, float *y, const float *x,
                           const uint8_t *w, size_t ldw, size_t nrows,
                           size_t nb)
{
    for (size_t r = 0; r < nrows; r++) {
        float acc[QK] = {0}, wv[QK];
        const uint8_t *blk = w + r * ldw;
        for (size_t b = 0; b < nb; b++, blk += bytes) {
            decode(blk, wv);
            for (int j = 0; j < QK; j++)
                acc[j] = attn_fmaf(x[b * QK + (size_t)j], wv[j], acc[j]);
        }
        y[r] = reduce32(acc);
    }
}

void attn__qrows_q4_1_port(float *y, const float *x, const uint8_t *w,
                                size_t ldw, size_t nrows, size_t nb)
{
    qrows_portable(decode_q4_1, Q4_1_BYTES, y, x, w, ldw, nrows, nb);
}

void attn__qrows_q8_0_port(float *y, const float *x, const uint8_t *w,
                                size_t ldw, size_t nrows, size_t nb)
{
    qrows_portable(decode_q8_0, Q8_0_BYTES, y, x, w, ldw, nrows, nb);
}

typedef struct {
    attn__qrows_fn fn;
    float *out;
    const float *x;
    const uint8_t *w;
    size_t ldo, ldx, ldw, M, N, nb;
} qctx;

/* output rows [QROWS item, ...) for every row of x                     */
static attn_status q_item(void *ctx, void *scratch, size_t item)
{
    (void)scratch;
    const qctx *c = ctx;
    const size_t r0 = item * QROWS;
    const size_t n = c->N - r0 < QROWS ? c->N - r0 : QROWS;
    for (size_t i = 0; i < c->M; i++)
        c->fn(c->out + i * c->ldo + r0, c->x + i * c->ldx,
              c->w + r0 * c->ldw, c->ldw, n, c->nb);
    return ATTN_OK;
}

size_t attn_qblock_bytes(attn_qtype qtype)
{
    return qtype == ATTN_Q4_1 ? Q4_1_BYTES : qtype == ATTN_Q8_0 ? Q8_0_BYTES
                                                                : 0;
}

attn_status attn_qmatmul(const attn_qmm_args *a, const attn_exec *ex)
{
    if (!a)
        return ATTN_EINVAL;
    const size_t bs = attn_qblock_bytes(a->qtype), K = a->K;
    if (!bs || K % QK || a->ldx < K || a->ldo < a->N)
        return ATTN_EINVAL;
    const size_t nb = K / QK;
    if (nb > SIZE_MAX / bs || a->ldw < nb * bs)
        return ATTN_EINVAL;
    if (a->M == 0 || a->N == 0)
        return ATTN_OK;
    if (K == 0) {
        for (size_t i = 0; i < a->M; i++)
            memset(a->out + i * a->ldo, 0, a->N * sizeof(float));
        return ATTN_OK;
    }
    const attn_kernels *k = attn__kernels();
    const int qi = a->qtype == ATTN_Q4_1 ? 0 : 1;
    qctx c = {attn__kernels_for(k->qrows[qi] != NULL)->qrows[qi], a->out,
              a->x, a->w, a->ldo, a->ldx, a->ldw, a->M, a->N, nb};
    attn_job job = {q_item, &c, (a->N + QROWS - 1) / QROWS, 0, NULL,
                    2.0 * (double)a->M * (double)a->N * (double)K};
    return attn_sched_run(&job, ex);
}
