/* common/util.c: the text helpers (lcn_printable: what reaches a terminal
 * or a log line of a job's name). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "util.h"

/* Controls, C1 and the bidi overrides and isolates as \xNN per byte;
 * other characters as they are. */
static void test_printable_escapes(void **state)
{
    (void)state;
    char out[256];
    assert_string_equal(lcn_printable("a\nb\x7f", out, sizeof out), "a\\x0ab\\x7f");
    assert_string_equal(lcn_printable("A\xc2\x9b"
                                      "2J\xc2\xa0\xc3\xa9",
                                      out, sizeof out),
                        "A\\xc2\\x9b2J\xc2\xa0\xc3\xa9");
    /* U+202A..U+202E, U+2066..U+2069 escaped; U+2029, U+202F, U+2065 kept */
    const char *bidi[] = {"\xe2\x80\xaa", "\xe2\x80\xab", "\xe2\x80\xac",
                          "\xe2\x80\xad", "\xe2\x80\xae", "\xe2\x81\xa6",
                          "\xe2\x81\xa7", "\xe2\x81\xa8", "\xe2\x81\xa9"};
    for (size_t i = 0; i < LCN_ARRAY_LEN(bidi); i++) {
        char in[16], want[32];
        snprintf(in, sizeof in, "x%sy", bidi[i]);
        snprintf(want, sizeof want, "x\\xe2\\x%02x\\x%02xy", (unsigned char)bidi[i][1],
                 (unsigned char)bidi[i][2]);
        assert_string_equal(lcn_printable(in, out, sizeof out), want);
    }
    const char *kept = "\xe2\x80\xa9\xe2\x80\xaf\xe2\x81\xa5\xf0\x9f\x98\x80";
    assert_string_equal(lcn_printable(kept, out, sizeof out), kept);
    /* a lead byte without its continuation is one byte, not read past */
    assert_string_equal(lcn_printable("a\xe2", out, sizeof out), "a\xe2");
}

/* A full buffer cuts before an escape or a character, never inside. */
static void test_printable_cut_whole(void **state)
{
    (void)state;
    char out[8];
    /* "ab" + U+00E9 (2 bytes) + U+1F600 (4 bytes): 8 bytes, 7 fit */
    assert_string_equal(lcn_printable("ab\xc3\xa9\xf0\x9f\x98\x80", out, sizeof out), "ab\xc3\xa9");
    assert_string_equal(lcn_printable("abcdef\xc3\xa9", out, sizeof out), "abcdef");
    char wide[16];
    /* an escape of 12 bytes after 4 does not fit in 15 */
    assert_string_equal(lcn_printable("abcd\xe2\x80\xae"
                                      "x",
                                      wide, sizeof wide),
                        "abcd");
    assert_string_equal(lcn_printable("a\x1b", out, 5), "a");
    assert_string_equal(lcn_printable("abc", out, 1), "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_printable_escapes),
        cmocka_unit_test(test_printable_cut_whole),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
