/*
 * rng.h - counter-based random numbers (Philox-4x32-10).
 *
 * A random number is a pure function of (key, counter): key = the job seed,
 * counter = (stream, step, purpose, lane). The CPU engine and the CUDA
 * kernels include this same header, so a draw made on the device can be
 * replayed bit for bit on the host. Known-answer tests against the Random123
 * reference vectors live in tests/unit/test_rng.c.
 *
 * struct lcn_rng wraps one counter stream for sequential use on the host or
 * by one device thread: it draws blocks of four words and advances the low
 * counter word.
 */
#ifndef LCN_RNG_H
#define LCN_RNG_H

#include <stdint.h>

#include "hd.h"

struct lcn_u32x4 {
    uint32_t v[4];
};

LCN_HD static inline uint32_t rng_mulhilo(uint32_t a, uint32_t b, uint32_t *hi)
{
    uint64_t p = (uint64_t)a * b;
    *hi = (uint32_t)(p >> 32);
    return (uint32_t)p;
}

/* Philox-4x32 with 10 rounds: returns the block for counter ctr under key. */
LCN_HD static inline struct lcn_u32x4 rng_philox(struct lcn_u32x4 ctr, uint32_t k0, uint32_t k1)
{
    for (int r = 0; r < 10; r++) {
        uint32_t hi0, hi1;
        uint32_t lo0 = rng_mulhilo(0xD2511F53u, ctr.v[0], &hi0);
        uint32_t lo1 = rng_mulhilo(0xCD9E8D57u, ctr.v[2], &hi1);
        struct lcn_u32x4 n;
        n.v[0] = hi1 ^ ctr.v[1] ^ k0;
        n.v[1] = lo1;
        n.v[2] = hi0 ^ ctr.v[3] ^ k1;
        n.v[3] = lo0;
        ctr = n;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    return ctr;
}

/* Purposes: the third counter word, so draws for different uses never alias. */
enum rng_purpose {
    RNG_PURPOSE_MOVE = 1,
    RNG_PURPOSE_ACCEPT = 2,
    RNG_PURPOSE_EXCHANGE = 3,
    RNG_PURPOSE_INIT = 4,
    RNG_PURPOSE_GEN = 5,
    RNG_PURPOSE_REPAIR = 6,
};

struct lcn_rng {
    uint32_t k0, k1;      /* key: the 64-bit seed */
    struct lcn_u32x4 ctr; /* v[0] step, v[1] stream, v[2] purpose, v[3] lane */
    struct lcn_u32x4 buf;
    int have; /* unread words left in buf */
};

LCN_HD static inline void rng_init(struct lcn_rng *r, uint64_t seed, uint32_t stream,
                                   uint32_t purpose)
{
    r->k0 = (uint32_t)seed;
    r->k1 = (uint32_t)(seed >> 32);
    r->ctr.v[0] = 0;
    r->ctr.v[1] = stream;
    r->ctr.v[2] = purpose;
    r->ctr.v[3] = 0;
    r->have = 0;
}

LCN_HD static inline uint32_t rng_u32(struct lcn_rng *r)
{
    if (r->have == 0) {
        r->buf = rng_philox(r->ctr, r->k0, r->k1);
        if (++r->ctr.v[0] == 0)
            ++r->ctr.v[3];
        r->have = 4;
    }
    return r->buf.v[--r->have];
}

/* Uniform integer in [0, n) for n >= 1 (Lemire's multiply-shift, bias < 2^-32 * n). */
LCN_HD static inline uint32_t rng_below(struct lcn_rng *r, uint32_t n)
{
    return (uint32_t)(((uint64_t)rng_u32(r) * n) >> 32);
}

/* Uniform in [0, 1) with 24 random bits: exact in float and double. */
LCN_HD static inline float rng_unit(struct lcn_rng *r)
{
    return (float)(rng_u32(r) >> 8) * (1.0f / 16777216.0f);
}

/* Uniform in [0, 1) with 53 random bits (host use). */
LCN_HD static inline double rng_unit53(struct lcn_rng *r)
{
    uint64_t a = rng_u32(r) >> 5, b = rng_u32(r) >> 6;
    return (double)(a * 67108864u + b) * (1.0 / 9007199254740992.0);
}

#endif
