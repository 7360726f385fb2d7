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

static void hex_of(const uint8_t d[32], char out[65])
{
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

void sha256_hex(const void *data, size_t len, char out[65])
{
    struct sha256 s;
    uint8_t d[32];
    sha256_init(&s);
    sha256_update(&s, data, len);
    sha256_final(&s, d);
    hex_of(d, out);
}

int sha256_file_hex(const char *path, char out[65])
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    struct sha256 s;
    uint8_t buf[1 << 16], d[32];
    size_t k;
    sha256_init(&s);
    while ((k = fread(buf, 1, sizeof(buf), f)) > 0)
        sha256_update(&s, buf, k);
    int bad = ferror(f);
    fclose(f);
    sha256_final(&s, d);
    if (bad)
        return -1;
    hex_of(d, out);
    return 0;
}
