/*
 * tests/c/sha256.h -- SHA-256 (FIPS 180-4, section 6.2) for the digest
 * battery (test_bits.c): byte-oriented, header-only, no I/O. The
 * constants are FIPS 180-4's (4.2.2: the first 32 bits of the fractional
 * parts of the cube roots of the first 64 primes; 5.3.3: of the square
 * roots of the first 8). test_bits checks the standard's examples.
 *
 *   sha256_ctx h;  sha256_init(&h);  sha256_add(&h, p, n) ...;
 *   sha256_hex(&h, hex)    (65 chars: 64 hex digits and a NUL; ends h)
 */
#ifndef ATTNPY_TEST_SHA256_H
#define ATTNPY_TEST_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t h[8];
    uint64_t bytes;     /* message length so far                          */
    unsigned char blk[64];
    size_t nblk;        /* bytes waiting in blk                            */
} sha256_ctx;

static const uint32_t sha256_k[64] = {
    0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u, 0x3956c25bu,
    0x59f111f1u, 0x923f82a4u, 0xab1c5ed5u, 0xd807aa98u, 0x12835b01u,
    0x243185beu, 0x550c7dc3u, 0x72be5d74u, 0x80deb1feu, 0x9bdc06a7u,
    0xc19bf174u, 0xe49b69c1u, 0xefbe4786u, 0x0fc19dc6u, 0x240ca1ccu,
    0x2de92c6fu, 0x4a7484aau, 0x5cb0a9dcu, 0x76f988dau, 0x983e5152u,
    0xa831c66du, 0xb00327c8u, 0xbf597fc7u, 0xc6e00bf3u, 0xd5a79147u,
    0x06ca6351u, 0x14292967u, 0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu,
    0x53380d13u, 0x650a7354u, 0x766a0abbu, 0x81c2c92eu, 0x92722c85u,
    0xa2bfe8a1u, 0xa81a664bu, 0xc24b8b70u, 0xc76c51a3u, 0xd192e819u,
    0xd6990624u, 0xf40e3585u, 0x106aa070u, 0x19a4c116u, 0x1e376c08u,
    0x2748774cu, 0x34b0bcb5u, 0x391c0cb3u, 0x4ed8aa4au, 0x5b9cca4fu,
    0x682e6ff3u, 0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u,
    0x90befffau, 0xa4506cebu, 0xbef9a3f7u, 0xc67178f2u};

static inline uint32_t sha256_rotr(uint32_t x, int n)
{
    return (x >> n) | (x << (32 - n));
}

static inline void sha256_init(sha256_ctx *c)
{
    static const uint32_t h0[8] = {0x6a09e667u, 0xbb67ae85u, 0x3c6ef372u,
                                   0xa54ff53au, 0x510e527fu, 0x9b05688cu,
                                   0x1f83d9abu, 0x5be0cd19u};
    for (int i = 0; i < 8; i++)
        c->h[i] = h0[i];
    c->bytes = 0;
    c->nblk = 0;
}

/* one 512-bit block (6.2.2) */
static inline void sha256_block(sha256_ctx *c, const unsigned char *p)
{
    uint32_t w[64];
    for (int t = 0; t < 16; t++)
        w[t] = (uint32_t)p[4 * t] << 24 | (uint32_t)p[4 * t + 1] << 16
               | (uint32_t)p[4 * t + 2] << 8 | (uint32_t)p[4 * t + 3];
    for (int t = 16; t < 64; t++) {
        const uint32_t s0 = sha256_rotr(w[t - 15], 7)
                            ^ sha256_rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
        const uint32_t s1 = sha256_rotr(w[t - 2], 17)
                            ^ sha256_rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
        w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    uint32_t a = c->h[0], b = c->h[1], cc = c->h[2], d = c->h[3];
    uint32_t e = c->h[4], f = c->h[5], g = c->h[6], h = c->h[7];
    for (int t = 0; t < 64; t++) {
        const uint32_t S1 = sha256_rotr(e, 6) ^ sha256_rotr(e, 11)
                            ^ sha256_rotr(e, 25);
        const uint32_t ch = (e & f) ^ (~e & g);
        const uint32_t t1 = h + S1 + ch + sha256_k[t] + w[t];
        const uint32_t S0 = sha256_rotr(a, 2) ^ sha256_rotr(a, 13)
                            ^ sha256_rotr(a, 22);
        const uint32_t maj = (a & b) ^ (a & cc) ^ (b & cc);
        const uint32_t t2 = S0 + maj;
        h = g, g = f, f = e, e = d + t1;
        d = cc, cc = b, b = a, a = t1 + t2;
    }
    c->h[0] += a, c->h[1] += b, c->h[2] += cc, c->h[3] += d;
    c->h[4] += e, c->h[5] += f, c->h[6] += g, c->h[7] += h;
}

static inline void sha256_add(sha256_ctx *c, const void *data, size_t n)
{
    const unsigned char *p = data;
    c->bytes += n;
    while (n > 0) {
        if (c->nblk == 0 && n >= 64) {
            sha256_block(c, p);
            p += 64, n -= 64;
            continue;
        }
        size_t take = 64 - c->nblk;
        if (take > n)
            take = n;
        for (size_t i = 0; i < take; i++)
            c->blk[c->nblk + i] = p[i];
        c->nblk += take, p += take, n -= take;
        if (c->nblk == 64) {
            sha256_block(c, c->blk);
            c->nblk = 0;
        }
    }
}

/* padding (5.1.1), the last blocks, the digest as lower-case hex */
static inline void sha256_hex(sha256_ctx *c, char hex[65])
{
    const uint64_t bits = c->bytes * 8;
    unsigned char pad[72] = {0x80};
    const size_t npad = (c->nblk < 56 ? 56 : 120) - c->nblk;
    for (int i = 0; i < 8; i++)
        pad[npad + i] = (unsigned char)(bits >> (56 - 8 * i));
    sha256_add(c, pad, npad + 8);
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        const unsigned byte = (c->h[i / 4] >> (24 - 8 * (i % 4))) & 0xffu;
        hex[2 * i] = digits[byte >> 4];
        hex[2 * i + 1] = digits[byte & 15];
    }
    hex[64] = '\0';
}

#endif /* ATTNPY_TEST_SHA256_H */
