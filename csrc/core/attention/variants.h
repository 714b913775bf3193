/*
 * attention/variants.h -- the positions of the attention variants (attn.h,
 * the fields at the end of attn_problem), written once for every kernel
 * (not public).
 *
 * Query row i sits at key position i' = i + qpos (attn__var_qpos). The
 * keys causality and the window allow row i to see form one interval
 * [lo, hi) of [0, S) (attn__var_keys); the mask may only remove keys from
 * it. The scores' arithmetic (softcap, bias, ALiBi) is the kernels' own:
 * attn.h fixes its order.
 */
#ifndef ATTNPY_ATTN_VARIANTS_H
#define ATTNPY_ATTN_VARIANTS_H

#include <stddef.h>

#include "attn.h"
#include "util.h"

/* i' - i: pos_shift, plus S - L for bottom-right causality              */
static inline ptrdiff_t attn__var_qpos(const attn_problem *p)
{
    ptrdiff_t q = p->pos_shift;
    if (p->causal == ATTN_CAUSAL_BOTTOM_RIGHT)
        q += (ptrdiff_t)p->S - (ptrdiff_t)p->L;
    return q;
}

/* the keys [*lo, *hi) causality and the window allow the query at key
 * position ip (= i + qpos) to see, within [0, S); *lo >= *hi: none      */
static inline void attn__var_keys(const attn_problem *p, ptrdiff_t ip,
                                  size_t *lo, size_t *hi)
{
    ptrdiff_t l = 0, h = (ptrdiff_t)p->S; /* exclusive */
    if (p->causal != ATTN_CAUSAL_NONE && ip + 1 < h)
        h = ip + 1;
    if (p->window) {
        if (ip + p->wright + 1 < h)
            h = ip + p->wright + 1;
        if (ip - p->wleft > l)
            l = ip - p->wleft;
    }
    if (h <= l) {
        *lo = *hi = 0;
        return;
    }
    *lo = (size_t)l;
    *hi = (size_t)h;
}

/* does any variant restrict the keys a row sees (beyond the mask)?      */
static inline int attn__var_limits_keys(const attn_problem *p)
{
    return p->causal != ATTN_CAUSAL_NONE || p->window;
}

/* the ALiBi slope of batch item b, in double (0 when ALiBi is off)      */
static inline double attn__var_slope(const attn_problem *p, size_t b)
{
    if (!p->alibi.data)
        return 0.0;
    if (p->dtype == ATTN_F64)
        return ((const double *)p->alibi.data)[OFF(p->alibi, b)];
    return (double)((const float *)p->alibi.data)[OFF(p->alibi, b)];
}

/* |ip - j|, the ALiBi distance                                          */
static inline size_t attn__var_dist(ptrdiff_t ip, size_t j)
{
    const ptrdiff_t d = ip - (ptrdiff_t)j;
    return d < 0 ? (size_t)-d : (size_t)d;
}

#endif /* ATTNPY_ATTN_VARIANTS_H */
