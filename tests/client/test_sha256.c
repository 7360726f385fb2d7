/*
 * clients/sha256.c (libcrypto EVP): the FIPS 180-4 example vectors, and incremental updates
 * in every split (and random chunks) against the one-shot digest.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "clients/sha256.h"

static void hex_of(struct sha256 *s, char out[65])
{
    uint8_t d[32];
    sha256_final(s, d);
    for (int i = 0; i < 32; i++)
        sprintf(out + 2 * i, "%02x", d[i]);
}

static void test_vectors(void **st)
{
    (void)st;
    char h[65];
    sha256_hex("", 0, h);
    assert_string_equal(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    sha256_hex("abc", 3, h);
    assert_string_equal(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    sha256_hex(m448, strlen(m448), h);
    assert_string_equal(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    const char *m896 = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
                       "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";
    sha256_hex(m896, strlen(m896), h);
    assert_string_equal(h, "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
    struct sha256 s;
    sha256_init(&s);
    char a[1000];
    memset(a, 'a', sizeof a);
    for (int i = 0; i < 1000; i++)
        sha256_update(&s, a, sizeof a);
    hex_of(&s, h);
    assert_string_equal(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static void test_split_updates(void **st)
{
    (void)st;
    uint8_t buf[300];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)(i * 131 + 7);
    for (size_t len = 0; len <= sizeof buf; len += 13) {
        char one[65];
        sha256_hex(buf, len, one);
        for (size_t cut = 0; cut <= len; cut++) {
            struct sha256 s;
            char two[65];
            sha256_init(&s);
            sha256_update(&s, buf, cut);
            sha256_update(&s, buf + cut, len - cut);
            hex_of(&s, two);
            assert_string_equal(one, two);
        }
    }
}

/* A file's digest, read in blocks (larger than one block: 200,000 bytes),
 * equals the digest of the same bytes in memory; a missing file is -1. */
static void test_file(void **st)
{
    (void)st;
    char path[] = "/tmp/lcn-sha256-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    size_t n = 200000;
    unsigned char *b = malloc(n);
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)(i * 131 + (i >> 9));
    FILE *f = fdopen(fd, "wb");
    assert_int_equal(fwrite(b, 1, n, f), n);
    fclose(f);
    char a[65], c[65];
    sha256_hex(b, n, a);
    assert_int_equal(sha256_file_hex(path, c), 0);
    assert_string_equal(a, c);
    remove(path);
    assert_int_equal(sha256_file_hex(path, c), -1);
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vectors),
        cmocka_unit_test(test_split_updates),
        cmocka_unit_test(test_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
