/*
 * sha256.h - SHA-256 (FIPS 180-4), for the input hashes of benchmark
 * manifests. Tested against the standard's vectors and Python's hashlib.
 */
#ifndef LCN_CLIENTS_SHA256_H
#define LCN_CLIENTS_SHA256_H

#include <stddef.h>
#include <stdint.h>

struct sha256 {
    uint32_t h[8];
    uint64_t bytes;
    uint8_t block[64];
    size_t fill;
};

void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *data, size_t len);
/* Writes the 32-byte digest; s must be re-initialised before reuse. */
void sha256_final(struct sha256 *s, uint8_t out[32]);
/* The digest of len bytes as 64 lower-case hex digits and a NUL. */
void sha256_hex(const void *data, size_t len, char out[65]);

#endif
