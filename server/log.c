#include "server/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "err.h"
#include "util.h"

static atomic_int log_fd = 2;
static atomic_int log_level_cur = LOG_LEVEL_INFO;
static char *log_path;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void log_iso_time(int64_t wall_ms, char *buf, size_t len)
{
    time_t s = (time_t)(wall_ms / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    char base[24];
    strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, len, "%s.%03dZ", base, (int)(wall_ms % 1000));
}

static int open_log(const char *path)
{
    return open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

int log_open(const char *path, int level)
{
    atomic_store(&log_level_cur, level);
    if (!path || !*path)
        return 0;
    int fd = open_log(path);
    if (fd < 0)
        return LCN_EIO;
    free(log_path);
    log_path = xstrdup(path);
    atomic_store(&log_fd, fd);
    return 0;
}

int log_reopen(void)
{
    if (!log_path)
        return 0;
    int fd = open_log(log_path);
    if (fd < 0) {
        log_error("cannot reopen log file '%s': %s", log_path, strerror(errno));
        return LCN_EIO;
    }
    int cur = atomic_load(&log_fd);
    /* dup2 swaps the file under the same descriptor number atomically */
    if (dup2(fd, cur) < 0) {
        close(fd);
        return LCN_EIO;
    }
    close(fd);
    return 0;
}

void log_close(void)
{
    int fd = atomic_exchange(&log_fd, 2);
    if (fd != 2)
        close(fd);
    free(log_path);
    log_path = NULL;
}

void log_msg(int level, const char *fmt, ...)
{
    if (level > atomic_load(&log_level_cur))
        return;
    char buf[2048];
    log_iso_time(lcn_wall_ms(), buf, 32);
    size_t off = strlen(buf);
    off += (size_t)snprintf(buf + off, sizeof buf - off, " %s ", level_names[level]);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + off, sizeof buf - off, fmt, ap);
    va_end(ap);
    off = n < 0 ? off : LCN_MIN(off + (size_t)n, sizeof buf - 2);
    buf[off++] = '\n';
    ssize_t w = write(atomic_load(&log_fd), buf, off);
    (void)w;
}
