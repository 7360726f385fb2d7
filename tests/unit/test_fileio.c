/*
 * test_fileio.c - lcn_write_atomic (common/fileio.h): the bytes read back,
 * an overwrite replaces the old contents and keeps the file's mode, and every
 * failure (missing directory, read-only directory, a directory in the way,
 * an empty name) returns LCN_EIO with a message naming the path and leaves
 * no temporary file. Each case works in a fresh directory under $TMPDIR.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "err.h"
#include "fileio.h"
#include "util.h"

struct fx {
    char dir[PATH_MAX];
};

static int setup(void **state)
{
    struct fx *f = xcalloc(1, sizeof *f);
    const char *base = getenv("TMPDIR");
    snprintf(f->dir, sizeof f->dir, "%s/lcn-fileio-XXXXXX", base && *base ? base : "/tmp");
    assert_non_null(mkdtemp(f->dir));
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    chmod(f->dir, 0700);
    DIR *d = opendir(f->dir);
    struct dirent *e;
    char p[PATH_MAX + 256];
    while (d && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(p, sizeof p, "%s/%s", f->dir, e->d_name);
        if (rmdir(p) != 0)
            unlink(p);
    }
    if (d)
        closedir(d);
    rmdir(f->dir);
    free(f);
    return 0;
}

static void in_dir(const struct fx *f, const char *name, char *out, size_t n)
{
    snprintf(out, n, "%s/%s", f->dir, name);
}

/* Reads a whole file; returns its length, or -1. */
static long slurp(const char *path, char *buf, size_t cap)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return -1;
    size_t n = fread(buf, 1, cap, fp);
    fclose(fp);
    return (long)n;
}

/* Asserts that the directory holds exactly the names given (NULL-ended), in
 * any order: no temporary file is left over. */
static void assert_listing(const char *dir, const char *const *names)
{
    size_t want = 0;
    while (names[want])
        want++;
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t seen = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        int known = 0;
        for (size_t i = 0; i < want; i++)
            known |= strcmp(e->d_name, names[i]) == 0;
        if (!known)
            fail_msg("unexpected entry '%s' in '%s'", e->d_name, dir);
        seen++;
    }
    closedir(d);
    assert_int_equal(seen, want);
}

static void write_and_read_back(void **state)
{
    struct fx *f = *state;
    char path[PATH_MAX + 32], buf[64], err[256] = "";
    in_dir(f, "a.json", path, sizeof path);
    const char text[] = "{\"K\": 3}\n";
    assert_int_equal(lcn_write_atomic(path, text, sizeof text - 1, err, sizeof err), 0);
    assert_string_equal(err, "");
    assert_int_equal(slurp(path, buf, sizeof buf), (long)sizeof text - 1);
    assert_memory_equal(buf, text, sizeof text - 1);

    /* an empty file, with no data pointer */
    in_dir(f, "empty", path, sizeof path);
    assert_int_equal(lcn_write_atomic(path, NULL, 0, err, sizeof err), 0);
    assert_int_equal(slurp(path, buf, sizeof buf), 0);

    /* a binary payload larger than a pipe buffer, NUL bytes included */
    size_t big = 1u << 20;
    unsigned char *data = xmalloc(big), *back = xmalloc(big + 1);
    for (size_t i = 0; i < big; i++)
        data[i] = (unsigned char)(i * 2654435761u >> 13);
    in_dir(f, "big.bin", path, sizeof path);
    assert_int_equal(lcn_write_atomic(path, data, big, err, sizeof err), 0);
    assert_int_equal(slurp(path, (char *)back, big + 1), (long)big);
    assert_memory_equal(back, data, big);
    free(data);
    free(back);

    const char *const names[] = {"a.json", "empty", "big.bin", NULL};
    assert_listing(f->dir, names);
}

static void overwrite_keeps_mode(void **state)
{
    struct fx *f = *state;
    char path[PATH_MAX + 32], buf[64], err[256];
    in_dir(f, "out.svg", path, sizeof path);
    const char first[] = "a much longer first version\n";
    const char second[] = "short\n";
    assert_int_equal(lcn_write_atomic(path, first, sizeof first - 1, err, sizeof err), 0);
    assert_int_equal(chmod(path, 0640), 0);
    struct stat before;
    assert_int_equal(stat(path, &before), 0);

    assert_int_equal(lcn_write_atomic(path, second, sizeof second - 1, err, sizeof err), 0);
    assert_int_equal(slurp(path, buf, sizeof buf), (long)sizeof second - 1);
    assert_memory_equal(buf, second, sizeof second - 1);
    struct stat after;
    assert_int_equal(stat(path, &after), 0);
    assert_int_equal(after.st_mode & 07777, 0640);
    /* a new inode replaced the old one: a reader holding the old file keeps it whole */
    assert_true(after.st_ino != before.st_ino);

    const char *const names[] = {"out.svg", NULL};
    assert_listing(f->dir, names);
}

static void new_file_follows_umask(void **state)
{
    struct fx *f = *state;
    char path[PATH_MAX + 32], err[256];
    in_dir(f, "port", path, sizeof path);
    mode_t old = umask(027);
    int rc = lcn_write_atomic(path, "1\n", 2, err, sizeof err);
    umask(old);
    assert_int_equal(rc, 0);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0640);
}

static void relative_path(void **state)
{
    struct fx *f = *state;
    char cwd[PATH_MAX], err[256], buf[16];
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(f->dir), 0);
    int rc = lcn_write_atomic("plain.txt", "x", 1, err, sizeof err);
    long n = slurp("plain.txt", buf, sizeof buf);
    assert_int_equal(chdir(cwd), 0);
    assert_int_equal(rc, 0);
    assert_int_equal(n, 1);
    const char *const names[] = {"plain.txt", NULL};
    assert_listing(f->dir, names);
}

static void missing_directory_fails(void **state)
{
    struct fx *f = *state;
    char path[PATH_MAX + 32], err[PATH_MAX + 128] = "";
    in_dir(f, "no-such-dir/out.json", path, sizeof path);
    assert_int_equal(lcn_write_atomic(path, "x", 1, err, sizeof err), LCN_EIO);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, strerror(ENOENT)));
    const char *const none[] = {NULL};
    assert_listing(f->dir, none);
}

static void read_only_directory_fails(void **state)
{
    if (geteuid() == 0) {
        /* root writes into a 0555 directory anyway: nothing to observe */
        print_message("skipped: running as root, which ignores directory permissions\n");
        skip();
    }
    struct fx *f = *state;
    char path[PATH_MAX + 32], err[PATH_MAX + 128] = "";
    in_dir(f, "out.json", path, sizeof path);
    assert_int_equal(chmod(f->dir, 0555), 0);
    int rc = lcn_write_atomic(path, "x", 1, err, sizeof err);
    assert_int_equal(chmod(f->dir, 0700), 0);
    assert_int_equal(rc, LCN_EIO);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, strerror(EACCES)));
    const char *const none[] = {NULL};
    assert_listing(f->dir, none);
}

/* The rename fails after the temporary file was written (a directory holds
 * the name): the temporary file is removed. Runs as root too. */
static void failed_rename_removes_temp(void **state)
{
    struct fx *f = *state;
    char path[PATH_MAX + 32], inner[PATH_MAX + 32], err[PATH_MAX + 128] = "";
    in_dir(f, "taken", path, sizeof path);
    assert_int_equal(mkdir(path, 0700), 0);
    in_dir(f, "taken/inside", inner, sizeof inner);
    assert_int_equal(lcn_write_atomic(inner, "y", 1, NULL, 0), 0); /* not empty: rename fails */
    assert_int_equal(lcn_write_atomic(path, "x", 1, err, sizeof err), LCN_EIO);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, "rename"));
    const char *const names[] = {"taken", NULL};
    assert_listing(f->dir, names);
    assert_int_equal(unlink(inner), 0);
}

static void empty_name_fails(void **state)
{
    (void)state;
    char err[128] = "";
    assert_int_equal(lcn_write_atomic("", "x", 1, err, sizeof err), LCN_EIO);
    assert_non_null(strstr(err, strerror(ENOENT)));
    assert_int_equal(lcn_write_atomic("", "x", 1, NULL, 0), LCN_EIO);
}

/* A FIFO (as /dev/null, /dev/stdout on a pipe: not a regular file) is
 * written in place: renaming the temporary file over it replaced the node
 * with a regular file (probe 4: as root, --out /dev/full made /dev/full a
 * regular file and the write "succeeded"). */
static void fifo_written_in_place(void **state)
{
    struct fx *f = *state;
    char p[PATH_MAX + 16], buf[64];
    in_dir(f, "fifo", p, sizeof p);
    assert_int_equal(mkfifo(p, 0600), 0);
    int rd = open(p, O_RDONLY | O_NONBLOCK); /* a reader, so the write does not wait */
    assert_true(rd >= 0);
    char err[256] = "";
    assert_int_equal(lcn_write_atomic(p, "through", 7, err, sizeof err), 0);
    ssize_t n = read(rd, buf, sizeof buf);
    close(rd);
    assert_int_equal(n, 7);
    assert_memory_equal(buf, "through", 7);
    struct stat st;
    assert_int_equal(lstat(p, &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
    const char *const names[] = {"fifo", NULL};
    assert_listing(f->dir, names);
}

/* A symbolic link into /proc (as /dev/stdout is) names an open descriptor:
 * the file it is open on is written, the link stays (probe 4: as root,
 * `lcnctl render ... -o /dev/stdout > pic.svg` replaced /dev/stdout with a
 * regular file and left pic.svg empty). */
static void descriptor_link_written_in_place(void **state)
{
    struct fx *f = *state;
    char file[PATH_MAX + 16], link[PATH_MAX + 16], target[64], buf[64];
    in_dir(f, "file", file, sizeof file);
    in_dir(f, "stdout", link, sizeof link);
    int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    snprintf(target, sizeof target, "/proc/self/fd/%d", fd);
    assert_int_equal(symlink(target, link), 0);
    char err[256] = "";
    assert_int_equal(lcn_write_atomic(link, "through", 7, err, sizeof err), 0);
    close(fd);
    assert_int_equal(slurp(file, buf, sizeof buf), 7);
    assert_memory_equal(buf, "through", 7);
    struct stat st;
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    const char *const names[] = {"file", "stdout", NULL};
    assert_listing(f->dir, names);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(write_and_read_back, setup, teardown),
        cmocka_unit_test_setup_teardown(overwrite_keeps_mode, setup, teardown),
        cmocka_unit_test_setup_teardown(new_file_follows_umask, setup, teardown),
        cmocka_unit_test_setup_teardown(relative_path, setup, teardown),
        cmocka_unit_test_setup_teardown(missing_directory_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(read_only_directory_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(failed_rename_removes_temp, setup, teardown),
        cmocka_unit_test(empty_name_fails),
        cmocka_unit_test_setup_teardown(fifo_written_in_place, setup, teardown),
        cmocka_unit_test_setup_teardown(descriptor_link_written_in_place, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
