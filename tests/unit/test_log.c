/* server/log.c: a line the file cuts short (the file size limit reached in
 * its middle, as a full disk does) is ended by a newline before the next
 * line, lines the file refuses are counted as lost, and every line written
 * after the file takes lines again starts on a line of its own. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "server/log.h"

static off_t file_size(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return st.st_size;
}

static void set_fsize(rlim_t lim)
{
    struct rlimit rl;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &rl), 0);
    rl.rlim_cur = lim;
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &rl), 0);
}

static void test_cut_line_ended(void **state)
{
    (void)state;
    char path[] = "/tmp/lcn-test-log-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    signal(SIGXFSZ, SIG_IGN); /* past the limit a write fails with EFBIG instead */
    assert_int_equal(log_open(path, LOG_LEVEL_INFO, LOG_FORMAT_TEXT), 0);
    log_info("first line, whole");
    const unsigned long long lost0 = log_lines_lost();
    set_fsize((rlim_t)file_size(path) + 10); /* room for 10 bytes of the next line */
    log_info("second line, cut after ten bytes");
    log_info("third line, refused: the file is at its limit");
    set_fsize(RLIM_INFINITY);
    log_info("fourth line, whole again");
    log_close();
    assert_int_equal(log_lines_lost() - lost0, 2);

    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    unlink(path);
    buf[n] = 0;
    /* four lines: the first, the cut one (ten bytes, ended), the note of
     * the lost lines, the fourth */
    int lines = 0, cut = 0, fourth = 0;
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"), lines++) {
        if (strlen(line) == 10)
            cut++;
        else /* every other line is whole: it starts with its timestamp */
            assert_true(line[0] >= '0' && line[0] <= '9');
        if (strstr(line, "fourth line, whole again"))
            fourth++;
        assert_null(strstr(line, "third line"));
    }
    assert_int_equal(cut, 1);
    assert_int_equal(fourth, 1);
    assert_int_equal(lines, 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_cut_line_ended)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
