#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "err.h"
#include "util.h"

static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}

/* open(O_CREAT | O_EXCL, 0666) rather than mkstemp: mkstemp creates 0600 and
 * restoring "0666 less the umask" would need umask(), which is process-wide
 * and racy in the threaded daemon. The pid keeps processes apart, the counter
 * threads; a name left by a crashed process with the same pid is skipped. */
static int create_temp(const char *path, char **tmp_out)
{
    static atomic_uint counter;
    size_t n = strlen(path) + 48;
    char *tmp = xmalloc(n);
    for (int tries = 0; tries < 1000; tries++) {
        snprintf(tmp, n, "%s.tmp.%ld.%u", path, (long)getpid(), atomic_fetch_add(&counter, 1));
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0 || errno != EEXIST) {
            *tmp_out = tmp;
            return fd;
        }
    }
    *tmp_out = tmp;
    return -1; /* errno is EEXIST */
}

static int write_all(int fd, const unsigned char *p, size_t len)
{
    while (len) {
        size_t chunk = len < (1u << 30) ? len : (1u << 30);
        ssize_t w = write(fd, p, chunk);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        if (w == 0) {
            errno = EIO; /* a regular file that takes nothing: give up, do not spin */
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

static int fsync_retry(int fd)
{
    int rc;
    do
        rc = fsync(fd);
    while (rc != 0 && errno == EINTR);
    return rc;
}

/* Makes the rename durable. EINVAL means the file system cannot sync a
 * directory (it then has nothing to make durable), which is not a failure. */
static int sync_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir;
    if (!slash) {
        dir = xstrdup(".");
    } else {
        size_t n = slash == path ? 1 : (size_t)(slash - path);
        dir = xmalloc(n + 1);
        memcpy(dir, path, n);
        dir[n] = '\0';
    }
    int rc = 0;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || (fsync_retry(fd) != 0 && errno != EINVAL))
        rc = -1;
    int saved = errno;
    if (fd >= 0)
        close(fd);
    free(dir);
    errno = saved;
    return rc;
}

/* Writes into what is at path as it is (fileio.h: a device, a FIFO, a name
 * of a descriptor). A regular file reached so is truncated first. */
static int write_in_place(const char *path, int is_reg, const void *data, size_t len, char *err,
                          size_t errlen)
{
    int fd = open(path, O_WRONLY | (is_reg ? O_TRUNC : 0) | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return fail(err, errlen, LCN_EIO, "cannot open '%s': %s", path, strerror(errno));
    int rc = write_all(fd, data, len);
    int e = errno;
    if (close(fd) != 0 && rc == 0) {
        rc = -1;
        e = errno;
    }
    if (rc)
        return fail(err, errlen, LCN_EIO, "cannot write '%s': %s", path, strerror(e));
    return 0;
}

/* Whether path names an open descriptor (fileio.h): a path in /proc or
 * /dev/fd, or a symbolic link into /proc (/dev/stdout). */
static int names_descriptor(const char *path)
{
    if (!strncmp(path, "/proc/", 6) || !strncmp(path, "/dev/fd/", 8))
        return 1;
    char link[16];
    ssize_t n = readlink(path, link, sizeof link - 1);
    return n >= 6 && !strncmp(link, "/proc/", 6);
}

/* This process's descriptor that path names (/proc/self/fd/N, /dev/fd/N,
 * or a link to one: /dev/stdout), or -1. */
static int own_descriptor(const char *path)
{
    char link[64];
    const char *p = path;
    ssize_t n = readlink(path, link, sizeof link - 1);
    if (n > 0 && strncmp(path, "/proc/", 6) && strncmp(path, "/dev/fd/", 8)) {
        link[n] = '\0';
        p = link;
    }
    const char *num = !strncmp(p, "/proc/self/fd/", 14) ? p + 14
                      : !strncmp(p, "/dev/fd/", 8)      ? p + 8
                                                        : NULL;
    if (!num || !*num || strlen(num) > 6 || strspn(num, "0123456789") != strlen(num))
        return -1;
    int fd = atoi(num);
    return fcntl(fd, F_GETFD) == -1 ? -1 : fd;
}

/* What is at path, when it is to be written in place rather than replaced
 * (fileio.h); 0 when not. */
static int in_place(const char *path, const void *data, size_t len, char *err, size_t errlen,
                    int *done)
{
    struct stat at;
    *done = 0;
    if (stat(path, &at) != 0 || S_ISDIR(at.st_mode))
        return 0;
    int desc = names_descriptor(path);
    if (S_ISREG(at.st_mode) && !desc)
        return 0;
    *done = 1;
    int own = desc ? own_descriptor(path) : -1;
    if (own < 0)
        return write_in_place(path, S_ISREG(at.st_mode), data, len, err, errlen);
    /* the descriptor itself, at its offset: as a write to stdout would */
    if (write_all(own, data, len) != 0)
        return fail(err, errlen, LCN_EIO, "cannot write '%s': %s", path, strerror(errno));
    return 0;
}

int lcn_write_atomic(const char *path, const void *data, size_t len, char *err, size_t errlen)
{
    if (!path || !*path) /* as open("") would say; the temp name would land in "." */
        return fail(err, errlen, LCN_EIO, "cannot write '': %s", strerror(ENOENT));
    int done, rc = in_place(path, data, len, err, errlen, &done);
    if (done)
        return rc;
    char *tmp;
    int fd = create_temp(path, &tmp);
    if (fd < 0) {
        int e = errno;
        free(tmp);
        return fail(err, errlen, LCN_EIO, "cannot create a temporary file for '%s': %s", path,
                    strerror(e));
    }
    const char *what = NULL;
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && fchmod(fd, st.st_mode & 0777) != 0)
        what = "set the mode of";
    else if (write_all(fd, data, len) != 0)
        what = "write";
    else if (fsync_retry(fd) != 0)
        what = "sync";
    int e = errno;
    /* close once, even on EINTR: Linux has released the descriptor anyway */
    if (close(fd) != 0 && !what) {
        what = "close";
        e = errno;
    }
    if (!what && rename(tmp, path) != 0) {
        what = "rename a temporary file to";
        e = errno;
    }
    if (what) {
        unlink(tmp);
        free(tmp);
        return fail(err, errlen, LCN_EIO, "cannot %s '%s': %s", what, path, strerror(e));
    }
    free(tmp);
    if (sync_dir(path) != 0)
        return fail(err, errlen, LCN_EIO, "cannot sync the directory of '%s': %s", path,
                    strerror(errno));
    return 0;
}
