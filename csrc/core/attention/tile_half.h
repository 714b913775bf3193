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

/* dst[r][c] = src(r0 + r, c) as T, c < ncols, 0 up to ldd: src's rows s0
 * apart, its features s1 apart, stored as st (16 bits: converted,
 * exactly)                                                              */
TI void SFX(pack_rows)(T *dst, size_t ldd, const void *src, attn_store st,
                       ptrdiff_t s0, ptrdiff_t s1, size_t r0, size_t nr,
                       size_t ncols)
{
    for (size_t r = 0; r < nr; r++) {
        const ptrdiff_t x = (ptrdiff_t)(r0 + r) * s0;
        T *d = dst + r * ldd;
        if (st)
            SFX(cvt_row)(d, (const uint16_t *)src + x, s1, ncols, st);
        else if (s1 == 1)
            for (size_t c = 0; c < ncols; c++)
                d[c] = ((const T *)src + x)[c];
        else
            for (size_t c = 0; c < ncols; c++)
                d[c] = ((const T *)src + x)[(ptrdiff_t)c * s1];
        for (size_t c = ncols; c < ldd; c++)
            d[c] = 0;
    }
}

/* rows j0 .. j0+nk-1 of K (v = 0: E features) or V (v = 1: Ev, zero
 * padded to EvP) at base, as T: in place where the plan allows (native
 * storage, contiguous rows: !pack_k / !pack_v), else packed or
 * converted into d                                                     */
TI const T *SFX(kv_rows)(const attn_plan *pl, int v, const char *base,
                         size_t j0, size_t nk, T *d, ptrdiff_t *ds)
{
    const attn_problem *p = pl->p;
    const attn_mat *m = v ? &p->v : &p->k;
    const size_t n = v ? p->Ev : p->E, ld = v ? pl->EvP : p->E;
    if (m->store == ATTN_ST_NATIVE && !(v ? pl->pack_v : pl->pack_k)) {
        *ds = m->s0;
        return (const T *)base + (ptrdiff_t)j0 * m->s0;
    }
    SFX(pack_rows)(d, ld, base, m->store, m->s0, m->s1, j0, nk, n);
    *ds = (ptrdiff_t)ld;
    return d;
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

/* kv_rows through the thread's cache                                     */
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
    return SFX(kv_rows)(pl, v, base, j0, nk, dst, stride);
}

/* element x of a row of operand m (base: the row's first element) := y  */
TI void SFX(put)(const attn_mat *m, char *base, ptrdiff_t x, T y)
{
    if (m->store == ATTN_ST_NATIVE)
        ((T *)base)[x] = y;
    else
        attn_store_f32(m->store, base, x, (float)y);
}

/* out row: dst[c * s1] = o[c] * inv + 0, c < n, rounded once to the
 * storage. + 0 makes a zero output +0: a row's running output may be -0
 * (a negative sum that underflowed), and a key block none of the row's
 * keys is visible in adds +0 to it when another row of its query block
 * sees that block, but not when the row is computed alone: the same
 * bits either way, on every set (query blocks differ between sets).   */
TI void SFX(store_out_row)(const attn_mat *m, char *dst, const T *o, T inv,
                           size_t n)
{
    const ptrdiff_t s1 = m->s1;
    size_t c = 0;
    if (m->store == ATTN_ST_NATIVE) {
        T *d = (T *)dst;
        if (s1 == 1)
            for (; c < n; c++)
                d[c] = o[c] * inv + (T)0;
        else
            for (; c < n; c++)
                d[(ptrdiff_t)c * s1] = o[c] * inv + (T)0;
        return;
    }
#if HALF_VEC_
    if (s1 == 1) {
        uint16_t *d = (uint16_t *)dst;
        const VT vinv = VSET1(inv);
        if (m->store == ATTN_ST_BF16)
            for (; c + W <= n; c += W)
                VSTORE_BF16(d + c,
                            VADD(VMUL(VLOADU(o + c), vinv), VZERO()));
        else
            for (; c + W <= n; c += W)
                VSTORE_F16(d + c, VADD(VMUL(VLOADU(o + c), vinv), VZERO()));
    }
#endif
    for (; c < n; c++)
        attn_store_f32(m->store, dst, (ptrdiff_t)c * s1,
                       (float)(o[c] * inv + (T)0));
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
