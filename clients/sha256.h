/*
 * sha256.h - SHA-256 (FIPS 180-4) for the input and binary hashes of
 * benchmark manifests, computed by libcrypto (OpenSSL's EVP interface): no
 * hand-written hash to maintain. Tested against the standard's vectors.
 *
 * Ownership: sha256_init allocates the digest context inside *s and
 * sha256_final frees it, so every initialised struct must be finalised
 * exactly once. Out of memory, or a libcrypto that refuses SHA-256, aborts
 * (like xmalloc): the callers have no recovery that would still be honest.
 */
#ifndef LCN_CLIENTS_SHA256_H
#define LCN_CLIENTS_SHA256_H

#include <stddef.h>
#include <stdint.h>

struct evp_md_ctx_st; /* libcrypto's EVP_MD_CTX */

struct sha256 {
    struct evp_md_ctx_st *ctx; /* owned between sha256_init and sha256_final */
};

/* Starts a digest in s. */
void sha256_init(struct sha256 *s);
/* Adds len bytes at data (data may be NULL when len is 0). */
void sha256_update(struct sha256 *s, const void *data, size_t len);
/* Writes the 32-byte digest and releases s; s must be re-initialised before reuse. */
void sha256_final(struct sha256 *s, uint8_t out[32]);
/* The digest of len bytes as 64 lower-case hex digits and a NUL. */
void sha256_hex(const void *data, size_t len, char out[65]);
/* The digest of a file's bytes, read in blocks; 0, or -1 when it cannot be
 * opened or read (out untouched). */
int sha256_file_hex(const char *path, char out[65]);

#endif
