/*
 * attention/variants.h -- the positions of the attention variants (attn.h,
 * the fields at the end of attn_problem), written once for every kernel
 * (not public).
 *
 * Query row i sits at key position i' = i + qpos (attn__var_qpos). The
 * keys causality and the window allow row i to see form one band around
 * i' (attn__var_band), an interval [lo, hi) of [0, S) (attn__var_keys);
 * the mask may only remove keys from it. The kernels and the oracles
 * take both from here. The scores' arithmetic (softcap, bias, ALiBi) is
 * the kernels' own: attn.h fixes its order.
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

/* The band of keys causality and the window let the query at key
 * position ip see: ip - back <= j <= ip + ahead (within [0, S)); the ONE
 * definition the kernels (attn__limits: key blocks skipped, edges
 * masked) and the oracles (attn__var_keys) read. limited: some row may
 * be cut (causal or a window). An unbounded side is "past every key":
 * L + S + |pos_shift| + 1 (attn.h), so ip +- it cannot overflow.        */
typedef struct {
    ptrdiff_t back, ahead;
    int limited, windowed;
} attn_band;

static inline attn_band attn__var_band(const attn_problem *p)
{
    const ptrdiff_t ps = p->pos_shift;
    const ptrdiff_t unb = (ptrdiff_t)(p->L + p->S) + (ps < 0 ? -ps : ps) + 1;
    attn_band band;
    band.windowed = p->window != 0;
    band.back = band.windowed ? p->wleft : unb;
    band.ahead = band.windowed ? p->wright : unb;
    if (p->causal != ATTN_CAUSAL_NONE && band.ahead > 0)
        band.ahead = 0;
    band.limited = band.windowed || p->causal != ATTN_CAUSAL_NONE;
    return band;
}

/* the keys [*lo, *hi) of the band of the query at key position ip
 * (= i + qpos), within [0, S); *lo >= *hi: none                          */
static inline void attn__var_keys(const attn_problem *p, ptrdiff_t ip,
                                  size_t *lo, size_t *hi)
{
    const attn_band band = attn__var_band(p);
    ptrdiff_t l = 0, h = (ptrdiff_t)p->S; /* exclusive */
    if (band.limited) {
        if (ip + band.ahead + 1 < h)
            h = ip + band.ahead + 1;
        if (ip - band.back > l)
            l = ip - band.back;
    }
    if (h <= l) {
        *lo = *hi = 0;
        return;
    }
    *lo = (size_t)l;
    *hi = (size_t)h;
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
