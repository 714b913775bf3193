/*
 * attention/masked.c -- the "uniform" policy's row, computed one way for
 * every path (the tile, split calls, the oracle): a query row that saw no
 * key gets the mean of all S value rows of its batch item.
 */
#include "attention/kern.h"
#include "half.h"
#include "util.h"

void attn__uniform_mean(const attn_problem *p, size_t b, double *mean)
{
    const ptrdiff_t s0 = p->v.s0, s1 = p->v.s1;
    for (size_t c = 0; c < p->Ev; c++)
        mean[c] = 0;
    for (size_t j = 0; j < p->S; j++) {
        if (p->v.store != ATTN_ST_NATIVE) { /* 16 bits, float call */
            const uint16_t *v_j = (const uint16_t *)p->v.data + OFF(p->v, b)
                                  + (ptrdiff_t)j * s0;
            for (size_t c = 0; c < p->Ev; c++)
                mean[c] += (double)attn_load_f32(p->v.store, v_j,
                                                 (ptrdiff_t)c * s1);
        } else if (p->dtype == ATTN_F64) {
            const double *v_j = (const double *)p->v.data + OFF(p->v, b)
                                + (ptrdiff_t)j * s0;
            for (size_t c = 0; c < p->Ev; c++)
                mean[c] += v_j[(ptrdiff_t)c * s1];
        } else {
            const float *v_j = (const float *)p->v.data + OFF(p->v, b)
                               + (ptrdiff_t)j * s0;
            for (size_t c = 0; c < p->Ev; c++)
                mean[c] += (double)v_j[(ptrdiff_t)c * s1];
        }
    }
    if (p->S)
        for (size_t c = 0; c < p->Ev; c++)
            mean[c] /= (double)p->S;
}
