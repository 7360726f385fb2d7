/* SHA-256 through libcrypto's EVP interface (the library is linked anyway:
 * libcurl is built on OpenSSL). */
#include "clients/sha256.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>

static _Noreturn void crypto_fail(const char *call)
{
    fprintf(stderr, "sha256: '%s' failed (out of memory or no SHA-256 in libcrypto)\n", call);
    abort();
}

void sha256_init(struct sha256 *s)
{
    s->ctx = EVP_MD_CTX_new();
    if (!s->ctx)
        crypto_fail("EVP_MD_CTX_new");
    if (EVP_DigestInit_ex(s->ctx, EVP_sha256(), NULL) != 1)
        crypto_fail("EVP_DigestInit_ex");
}

void sha256_update(struct sha256 *s, const void *data, size_t len)
{
    if (len > 0 && EVP_DigestUpdate(s->ctx, data, len) != 1)
        crypto_fail("EVP_DigestUpdate");
}

void sha256_final(struct sha256 *s, uint8_t out[32])
{
    unsigned int n = 0;
    if (EVP_DigestFinal_ex(s->ctx, out, &n) != 1 || n != 32)
        crypto_fail("EVP_DigestFinal_ex");
    EVP_MD_CTX_free(s->ctx);
    s->ctx = NULL;
}

void sha256_hex(const void *data, size_t len, char out[65])
{
    struct sha256 s;
    uint8_t d[32];
    sha256_init(&s);
    sha256_update(&s, data, len);
    sha256_final(&s, d);
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}
