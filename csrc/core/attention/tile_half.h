/*
 * attention/tile_half.h -- operands stored in 16 bits (attn.h: attn_store)
 * in the tile kernel: the reads and writes that convert.
 *
 * Part of the template tile.h (included by it, with its parameters and
 * helper macros defined). A 16-bit operand is read 16 bits at a time by
 * the kernel itself: its key / value block is converted into the
 * thread's scratch (the block the kernel would otherwise pack; with
 * several query blocks per batch item, into the thread's bounded cache,
 * once per batch item: kv_cached), or converted in registers where it is
 * read once (qk_few's transposes, tile_kern.h); Q per work item while it
 * is packed. Every conversion is exact, so the float values the
 * micro-kernels see, and every float operation after them, are those of
 * a float call on the upcast inputs: the same bits. A 16-bit output is
 * the float result rounded once, to nearest even (half.h). Only float
 * problems have 16-bit operands (sdpa.c refuses the others); the double
 * instantiation keeps the scalar code, which never runs. (HALF_VEC_,
 * ESZ_, MAT_B_ and VLOAD16_ are defined in tile.h, before the
 * micro-kernels that use them.)
 */

/* dst[c] = src[c * s1] as floats, c < n                                   */
TI void SFX(cvt_row)(T *dst, const uint16_t *src, ptrdiff_t s1, size_t n,
                     attn_store st)
{
    size_t c = 0;
#if HALF_VEC_
    if (s1 == 1) {
        if (st == ATTN_ST_BF16)
            for (; c + W <= n; c += W)
                VSTOREU(dst + c, VLOAD_BF16(src + c));
        else
            for (; c + W <= n; c += W)
                VSTOREU(dst + c, VLOAD_F16(src + c));
    }
#endif
    for (; c < n; c++)
        dst[c] = (T)attn_load_f32(st, src, (ptrdiff_t)c * s1);
}

/* K rows j0 .. j0+nk-1 as floats: in place (native, contiguous rows) or
 * packed / converted into kp (nk x E)                                   */
TI const T *SFX(k_any)(const attn_plan *pl, const char *k_b, size_t j0,
                       size_t nk, T *kp, ptrdiff_t *ks)
{
    const attn_problem *p = pl->p;
    if (p->k.store == ATTN_ST_NATIVE)
        return SFX(k_block)(pl, (const T *)k_b, j0, nk, kp, ks);
    const uint16_t *k16 = (const uint16_t *)k_b + (ptrdiff_t)j0 * p->k.s0;
    for (size_t r = 0; r < nk; r++)
        SFX(cvt_row)(kp + r * p->E, k16 + (ptrdiff_t)r * p->k.s0, p->k.s1,
                     p->E, p->k.store);
    *ks = (ptrdiff_t)p->E;
    return kp;
}

/* V rows j0 .. j0+nk-1 as floats, zero padded to EvP when converted     */
TI const T *SFX(v_any)(const attn_plan *pl, const char *v_b, size_t j0,
                       size_t nk, T *vp, ptrdiff_t *vs)
{
    const attn_problem *p = pl->p;
    if (p->v.store == ATTN_ST_NATIVE)
        return SFX(v_block)(pl, (const T *)v_b, j0, nk, vp, vs);
    const size_t Ev = p->Ev, EvP = pl->EvP;
    const uint16_t *v16 = (const uint16_t *)v_b + (ptrdiff_t)j0 * p->v.s0;
    for (size_t r = 0; r < nk; r++) {
        SFX(cvt_row)(vp + r * EvP, v16 + (ptrdiff_t)r * p->v.s0, p->v.s1, Ev,
                     p->v.store);
        for (size_t c = Ev; c < EvP; c++)
            vp[r * EvP + c] = 0;
    }
    *vs = (ptrdiff_t)EvP;
    return vp;
}

/* The thread's cached copy of key block j0 of K (v = 0) or V (v = 1) at
 * base (sdpa.c: kv_cache): NULL when the block is not cached; else its
 * slot, and *have: the slot already holds rows 0 .. nk-1 of it (if not,
 * the caller converts them there now). The slot holds what the per-use
 * conversion would write into kp / vp: the same floats.                */
TI T *SFX(kv_slot)(const attn_plan *pl, char *sb, int v, const char *base,
                   size_t j0, size_t nk, int *have)
{
    const size_t kb = j0 / pl->BK, off = v ? pl->off_vc : pl->off_kc;
    if (kb >= pl->kvc_blocks || off == 0)
        return NULL;
    attn_kvmark *mk = (attn_kvmark *)(sb + pl->off_kvmark)
                      + (v ? pl->kvc_blocks : 0) + kb;
    *have = mk->base == base && mk->n >= nk;
    if (!*have) {
        mk->base = base;
        mk->n = nk;
    }
    return (T *)(sb + off) + kb * pl->BK * (v ? pl->EvP : pl->p->E);
}

/* k_any (v = 0) / v_any (v = 1) through the thread's cache             */
TI const T *SFX(kv_cached)(const attn_plan *pl, char *sb, int v,
                           const char *base, size_t j0, size_t nk,
                           ptrdiff_t *stride)
{
    int have;
    T *slot = SFX(kv_slot)(pl, sb, v, base, j0, nk, &have);
    T *dst = slot ? slot : (T *)(sb + (v ? pl->off_vp : pl->off_kp));
    if (slot && have) {
        *stride = (ptrdiff_t)(v ? pl->EvP : pl->p->E);
        return slot;
    }
    return v ? SFX(v_any)(pl, base, j0, nk, dst, stride)
             : SFX(k_any)(pl, base, j0, nk, dst, stride);
}

/* element x of a row of operand m (base: the row's first element) := y  */
TI void SFX(put)(const attn_mat *m, char *base, ptrdiff_t x, T y)
{
    if (m->store == ATTN_ST_NATIVE)
        ((T *)base)[x] = y;
    else
        attn_store_f32(m->store, base, x, (float)y);
}

/* out row: dst[c * s1] = o[c] * inv, c < n, rounded once to the storage */
TI void SFX(store_out_row)(const attn_mat *m, char *dst, const T *o, T inv,
                           size_t n)
{
    const ptrdiff_t s1 = m->s1;
    size_t c = 0;
    if (m->store == ATTN_ST_NATIVE) {
        T *d = (T *)dst;
        if (s1 == 1)
            for (; c < n; c++)
                d[c] = o[c] * inv;
        else
            for (; c < n; c++)
                d[(ptrdiff_t)c * s1] = o[c] * inv;
        return;
    }
#if HALF_VEC_
    if (s1 == 1) {
        uint16_t *d = (uint16_t *)dst;
        const VT vinv = VSET1(inv);
        if (m->store == ATTN_ST_BF16)
            for (; c + W <= n; c += W)
                VSTORE_BF16(d + c, VMUL(VLOADU(o + c), vinv));
        else
            for (; c + W <= n; c += W)
                VSTORE_F16(d + c, VMUL(VLOADU(o + c), vinv));
    }
#endif
    for (; c < n; c++)
        attn_store_f32(m->store, dst, (ptrdiff_t)c * s1, (float)(o[c] * inv));
}

/* store_tile_t into operand m's rows (weights, scores), any storage     */
TI void SFX(store_tile_any)(const attn_mat *m, char *dst, const T *st,
                            size_t ldst, size_t nq, size_t nk,
                            const unsigned char *isfm, const T *fmval,
                            const T *rinv, int all)
{
    if (m->store == ATTN_ST_NATIVE) {
        SFX(store_tile_t)((T *)dst, m->s0, m->s1, st, ldst, nq, nk, isfm,
                          fmval, rinv, all);
        return;
    }
    for (size_t r = 0; r < nq; r++) {
        char *row = dst + (ptrdiff_t)r * m->s0 * 2;
        for (size_t j = 0; j < nk; j++) {
            const T y = isfm && isfm[r] ? fmval[r]
                        : all           ? (T)0 * rinv[r]
                                        : st[j * ldst + r];
            SFX(put)(m, row, (ptrdiff_t)j * m->s1, y);
        }
    }
}
