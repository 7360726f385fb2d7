/* common/sbuf.c: the one growable text buffer (appends, formatted text on
 * both sides of its 512-byte stack path, NUL termination, len). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sbuf.h"

static void test_append(void **state)
{
    (void)state;
    struct sbuf b = {0};
    sbuf_add(&b, "ab\0cd", 5); /* bytes, NULs included */
    assert_int_equal(b.len, 5);
    assert_memory_equal(b.p, "ab\0cd", 6);
    b.len = 0;
    sbuf_puts(&b, "");
    assert_int_equal(b.len, 0);
    assert_string_equal(b.p, "");
    sbuf_puts(&b, "x=");
    sbuf_printf(&b, "%d,%s", 42, "y");
    assert_int_equal(b.len, strlen("x=42,y"));
    assert_string_equal(b.p, "x=42,y");
    free(b.p);
}

/* Formatted text longer than the stack buffer goes straight into the
 * buffer: the same bytes as snprintf makes, after what was there. */
static void test_long_printf(void **state)
{
    (void)state;
    char big[3000];
    memset(big, 'q', sizeof big - 1);
    big[sizeof big - 1] = 0;
    struct sbuf b = {0};
    sbuf_puts(&b, "<");
    for (int i = 0; i < 3; i++)
        sbuf_printf(&b, "%d:%s|", i, big + i * 1000);
    char want[8000];
    int n = snprintf(want, sizeof want, "<0:%s|1:%s|2:%s|", big, big + 1000, big + 2000);
    assert_int_equal(b.len, (size_t)n);
    assert_string_equal(b.p, want);
    free(b.p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_append),
        cmocka_unit_test(test_long_printf),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
