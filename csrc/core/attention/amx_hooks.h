/*
 * attention/amx_hooks.h -- the "amx" set's hooks into tile.h and
 * bwd_tile.h (isa/amx.c includes it after the float primitives, before
 * the templates; tile_amx.h, included after them, defines the functions
 * declared here).
 */
#define ATTN_AMX_MAX_E 256   /* E (and Ev) at most this: the K staging   */
#define ATTN_AMX_PV_KEYS 128 /* P V's key blocks: whole 32-key groups   */

static ATTR int SFX(amx_hook_pack_q)(const attn_plan *pl, char *sb,
                                const char *q_b, size_t i0, size_t nq,
                                size_t nqv);
static ATTR int SFX(amx_hook_scores)(const attn_plan *pl, char *sb, T *st,
                                size_t ldst, size_t nq, size_t nqv, int few,
                                const char *k_b, size_t j0, size_t nk,
                                int scaled);
static ATTR int SFX(amx_hook_pv)(const attn_plan *pl, char *sb, T *o, size_t ldo,
                            size_t nq, const T *pt, size_t ldp,
                            const T *alpha, const char *v_b, size_t j0,
                            size_t nk);
static ATTR void SFX(amx_hook_chunk_start)(const attn_plan *pl, const char *k_b,
                                      const char *v_b, size_t j, size_t jend,
                                      int few);
static ATTR int SFX(amx_hook_bwd_pack_q)(const attn_bwd_plan *bpl, T *qt,
                                    size_t nrv);
static ATTR int SFX(amx_hook_bwd_scores)(const attn_bwd_plan *bpl, char *sb,
                                    const T *qt, T *st, size_t nqv,
                                    size_t nk);
static ATTR int SFX(amx_hook_bwd_pack_k)(const attn_bwd_plan *bpl, char *sb,
                                    size_t b, size_t j0, size_t nk);

#define TILE_HOOKS 1
#define TILE_PACK_Q(pl, sb, q_b, i0, nq, nqv)                                  \
    SFX(amx_hook_pack_q)(pl, sb, q_b, i0, nq, nqv)
#define TILE_SCORES(pl, sb, st, ldst, nq, nqv, few, k_b, j0, nk, scaled)       \
    SFX(amx_hook_scores)(pl, sb, st, ldst, nq, nqv, few, k_b, j0, nk, scaled)
#define TILE_OWN_PV(pl) ((pl)->own_pv)
#define TILE_PV(pl, sb, o, ldo, nq, pt, ldp, alpha, v_b, j0, nk)               \
    SFX(amx_hook_pv)(pl, sb, o, ldo, nq, pt, ldp, alpha, v_b, j0, nk)
#define TILE_CHUNK_START(pl, k_b, v_b, j, jend, few)                           \
    SFX(amx_hook_chunk_start)(pl, k_b, v_b, j, jend, few)
#define BWD_HOOKS 1
#define BWD_PACK_Q(bpl, qt, nrv) SFX(amx_hook_bwd_pack_q)(bpl, qt, nrv)
#define BWD_SCORES(bpl, sb, qt, st, nqv, nk)                                   \
    SFX(amx_hook_bwd_scores)(bpl, sb, qt, st, nqv, nk)
#define BWD_PACK_K(bpl, sb, b, j0, nk)                                         \
    SFX(amx_hook_bwd_pack_k)(bpl, sb, b, j0, nk)
