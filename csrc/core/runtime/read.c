/*
 * runtime/read.c -- attn_read_bytes (attn.h): the streaming read the
 * benchmark sets beside decoding.
 *
 * Every buffer is cut into chunks of READ_CHUNK bytes; the chunks of all
 * buffers, in order, are the scheduler's work items (runtime/sched.h:
 * the same threads, thread-count rule and Ctrl-C poll as every kernel).
 * An item sums its chunk with the set in use's read_sum
 * (runtime/read_tmpl.h) into its own slot; the caller's thread adds the
 * slots. Integer sums: the total is the same for any thread count.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "isa/kernels.h"
#include "runtime/sched.h"

/* bytes an item (a multiple of 8, so that words start at multiples of 8
 * from a buffer's start): a few microseconds of reading, so that the
 * items' claiming costs nothing and the threads end together          */
#define READ_CHUNK ((size_t)1 << 16)

typedef struct {
    const attn_read_args *a;
    const size_t *first; /* the first item of buffer b; first[n] = items */
    uint64_t *part;      /* one sum an item                              */
    attn_read_fn fn;
} read_ctx;

static attn_status read_item(void *arg, void *scratch, size_t k)
{
    (void)scratch;
    const read_ctx *c = arg;
    /* the buffer: the last b with first[b] <= k (an empty buffer before
     * it has the same first, and comes earlier)                        */
    size_t lo = 0, hi = c->a->n;
    while (hi - lo > 1) {
        const size_t mid = lo + (hi - lo) / 2;
        if (c->first[mid] <= k)
            lo = mid;
        else
            hi = mid;
    }
    const size_t off = (k - c->first[lo]) * READ_CHUNK;
    const size_t nb = c->a->nbytes[lo] - off;
    const size_t len = nb < READ_CHUNK ? nb : READ_CHUNK;
    const unsigned char *p = (const unsigned char *)c->a->data[lo] + off;
    uint64_t s = c->fn(p, len / 8);
    if (len % 8) { /* the buffer's last partial word, zero-padded */
        uint64_t w = 0;
        memcpy(&w, p + len / 8 * 8, len % 8);
        s += w;
    }
    c->part[k] = s;
    return ATTN_OK;
}

attn_status attn_read_bytes(const attn_read_args *a, const attn_exec *ex)
{
    *a->sum = 0;
    if (a->n > SIZE_MAX / sizeof(size_t) - 1)
        return ATTN_ENOMEM;
    size_t *first = malloc((a->n + 1) * sizeof *first);
    if (!first)
        return ATTN_ENOMEM;
    size_t items = 0;
    double bytes = 0.0;
    for (size_t b = 0; b < a->n; b++) {
        first[b] = items;
        const size_t nb = a->nbytes[b];
        items += nb / READ_CHUNK + (nb % READ_CHUNK != 0);
        bytes += (double)nb;
    }
    first[a->n] = items;
    /* one slot an item (the count itself cannot overflow: the buffers
     * are in memory)                                                   */
    uint64_t *part = items <= SIZE_MAX / sizeof *part
                         ? malloc((items ? items : 1) * sizeof *part)
                         : NULL;
    if (!part) {
        free(first);
        return ATTN_ENOMEM;
    }
    read_ctx c = {a, first, part, attn__read_sum()};
    attn_job job = {read_item, &c, items, 0, NULL, bytes};
    const attn_status st = attn_sched_run(&job, ex);
    if (st == ATTN_OK) {
        uint64_t s = 0;
        for (size_t k = 0; k < items; k++)
            s += part[k];
        *a->sum = s;
    }
    free(part);
    free(first);
    return st;
}
