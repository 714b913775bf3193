/*
 * tools/count_decode.c -- one decoding call, for tools/count_aarch64.sh:
 * a query row (1, 1, 1, 128) against S keys stored as float32, float16
 * or bfloat16, on one thread, on the named instruction set. qemu counts
 * the instructions the kernels execute; the program only makes the call
 * and prints its status and first output.
 *
 *   count_decode SET DTYPE S      (DTYPE: float32, float16, bfloat16)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: count_decode SET DTYPE S\n");
        return 2;
    }
    const size_t E = 128, S = (size_t)strtoul(argv[3], NULL, 10);
    const attn_store st = !strcmp(argv[2], "float16")    ? ATTN_ST_F16
                          : !strcmp(argv[2], "bfloat16") ? ATTN_ST_BF16
                                                         : ATTN_ST_NATIVE;
    if (attn_set_isa(argv[1]) != 0 || S == 0 || S > ((size_t)1 << 24)) {
        fprintf(stderr, "count_decode: bad set or S\n");
        return 2;
    }
    const size_t esz = st == ATTN_ST_NATIVE ? 4 : 2;
    float *q = malloc(E * sizeof *q), *o = malloc(E * sizeof *o);
    unsigned char *k = malloc(S * E * esz), *v = malloc(S * E * esz);
    if (!q || !o || !k || !v) {
        fprintf(stderr, "count_decode: out of memory\n");
        return 1;
    }
    for (size_t e = 0; e < E; e++)
        q[e] = (float)e / (float)E - 0.5f;
    for (size_t i = 0; i < S * E; i++) { /* finite values of either kind */
        const float x = (float)(i * 2654435761u % 1000u) / 1000.0f - 0.5f;
        if (st == ATTN_ST_NATIVE) {
            ((float *)k)[i] = x;
            ((float *)v)[i] = -x;
        } else {
            ((unsigned short *)k)[i] = (unsigned short)(0x3800 ^ (i & 0x3ff));
            ((unsigned short *)v)[i] =
                (unsigned short)(0x3400 ^ (i * 7 & 0x3ff));
        }
    }
    attn_problem p;
    memset(&p, 0, sizeof p);
    p.dtype = ATTN_F32;
    p.B = p.L = 1;
    p.S = S;
    p.E = p.Ev = E;
    p.q = (attn_mat){q, NULL, (ptrdiff_t)E, 1, ATTN_ST_NATIVE};
    p.k = (attn_mat){k, NULL, (ptrdiff_t)E, 1, st};
    p.v = (attn_mat){v, NULL, (ptrdiff_t)E, 1, st};
    p.out = (attn_mat){o, NULL, (ptrdiff_t)E, 1, ATTN_ST_NATIVE};
    p.scale = 0.0883883476;
    const attn_exec ex = {1, NULL, NULL};
    const attn_status rc = attn_sdpa(&p, &ex);
    printf("status %d out[0] %.9g\n", (int)rc, (double)o[0]);
    free(q);
    free(o);
    free(k);
    free(v);
    return rc == ATTN_OK ? 0 : 1;
}
