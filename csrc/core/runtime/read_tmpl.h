/*
 * runtime/read_tmpl.h -- the streaming read of attn_read_bytes (attn.h):
 * the sum of nwords native 64-bit words at p, as one instruction set
 * runs it. A template: isa/set_tmpl.h includes it for float only;
 * defines read_sum<SFX> (e.g. read_sum_avx2_f32).
 *
 * Plain C on purpose: integer adds are associative, so the compiler
 * vectorizes the loop at the set's width (ATTR) by itself at -O3, the 32
 * partial sums spread over 4 zmm, 8 ymm or 16 xmm registers: the loads
 * bound it, not the adds. Integers, not floats: the bytes may be any
 * (16-bit data read as floats would meet subnormals, whose microcode
 * assists would time the adds rather than the memory). memcpy: the
 * buffers need no alignment; it compiles to plain (unaligned) loads.
 */
#include <stdint.h>
#include <string.h>

#define READ_LANES 32

static ATTR uint64_t SFX(read_sum)(const unsigned char *p, size_t nwords)
{
    uint64_t acc[READ_LANES] = {0};
    size_t i = 0;
    for (; i + READ_LANES <= nwords; i += READ_LANES)
        for (size_t l = 0; l < READ_LANES; l++) {
            uint64_t w;
            memcpy(&w, p + 8 * (i + l), 8);
            acc[l] += w;
        }
    uint64_t s = 0;
    for (; i < nwords; i++) {
        uint64_t w;
        memcpy(&w, p + 8 * i, 8);
        s += w;
    }
    for (size_t l = 0; l < READ_LANES; l++)
        s += acc[l];
    return s;
}

#undef READ_LANES
