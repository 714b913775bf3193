/*
 * attn_sdpa.c -- the attention fast path and its instruction-set dispatch.
 * Placeholder: delegates to the naive kernel until the tiled kernel lands.
 */
#include <string.h>

#include "attn.h"

static const char *isa_current = "portable";

const char *attn_isa_name(void) { return isa_current; }

int attn_set_isa(const char *name)
{
    if (strcmp(name, "portable") == 0 || strcmp(name, "auto") == 0) {
        isa_current = "portable";
        return 0;
    }
    return -1;
}

attn_status attn_sdpa(attn_problem *p, const attn_exec *ex)
{
    (void)ex;
    return attn_sdpa_naive(p);
}
