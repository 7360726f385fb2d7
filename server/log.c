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

#include <jansson.h>

#include "err.h"
#include "job.h"
#include "util.h"

static atomic_int log_fd = 2;
static atomic_int log_level_cur = LOG_LEVEL_INFO;
static atomic_int log_format_cur = LOG_FORMAT_TEXT;
static char *log_path;
/* lines a failed write lost; 1 from a failed write to the next good one */
static atomic_ullong log_lost;
static atomic_int log_failing;
/* 1 after a line was cut short: the next line written ends it first */
static atomic_int log_partial;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

static int open_log(const char *path)
{
    return open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

int log_open(const char *path, int level, int format)
{
    atomic_store(&log_level_cur, level);
    atomic_store(&log_format_cur, format);
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

/* A line the file does not take is lost, not retried (a full disk would
 * stall every thread that logs). The first loss of a run of them is said
 * once on standard error, which a supervisor keeps (the journal), and the
 * next line written says how many were lost; /metrics counts them all. A
 * line cut short (the disk filled in its middle) is ended by a newline
 * before the next line, so every later line starts on a line of its own. */
static void write_line(const char *buf, size_t len)
{
    int fd = atomic_load(&log_fd);
    ssize_t w;
    if (atomic_exchange(&log_partial, 0) && (w = write(fd, "\n", 1)) != 1) {
        atomic_store(&log_partial, 1); /* still cut: this line is lost too */
    } else {
        w = write(fd, buf, len);
        if (w == (ssize_t)len) {
            if (atomic_exchange(&log_failing, 0))
                log_warn("the log file lost lines it could not take (%llu since the start)",
                         (unsigned long long)atomic_load(&log_lost));
            return;
        }
        if (w > 0)
            atomic_store(&log_partial, 1);
    }
    const char *why = w < 0 ? strerror(errno) : "short write";
    atomic_fetch_add(&log_lost, 1);
    if (fd != 2 && !atomic_exchange(&log_failing, 1)) {
        char note[512];
        int n = snprintf(note, sizeof note,
                         "lcnd: cannot write to log_file '%s': %s; log lines are lost until it "
                         "takes them again (lcn_log_lines_lost_total counts them)\n",
                         log_path ? log_path : "", why);
        w = write(2, note, LCN_MIN((size_t)n, sizeof note - 1));
    }
}

unsigned long long log_lines_lost(void)
{
    return atomic_load(&log_lost);
}

/* One line in the configured format; job_id < 0: not about a job. The
 * message is formatted first, so a JSON line escapes it whole. */
static void vlog(int level, int64_t job_id, const char *fmt, va_list ap)
{
    char when[32], id[24] = "", msg[2048];
    job_iso_time(lcn_wall_ms(), when, sizeof when);
    if (job_id >= 0)
        job_id_format(job_id, id, sizeof id);
    vsnprintf(msg, sizeof msg, fmt, ap);
    char buf[4096];
    size_t off;
    if (atomic_load(&log_format_cur) == LOG_FORMAT_JSON) {
        json_t *o = json_pack("{s:s, s:s}", "time", when, "level", level_names[level]);
        if (id[0])
            json_object_set_new(o, "job", json_string(id));
        /* a message cut inside a UTF-8 sequence is not a JSON string */
        json_t *m = json_string(msg);
        json_object_set_new(o, "message", m ? m : json_string("(message not UTF-8)"));
        off = json_dumpb(o, buf, sizeof buf - 1, JSON_COMPACT | JSON_PRESERVE_ORDER);
        json_decref(o);
        if (off == 0 || off > sizeof buf - 1)
            return; /* cannot be longer than msg escaped: never */
    } else {
        char esc[sizeof buf - 64];
        /* one line whatever the message holds: a job's name with a newline
         * and a forged line after it, terminal escapes, bidi overrides */
        lcn_printable(msg, esc, sizeof esc);
        int n = snprintf(buf, sizeof buf - 1, "%s %s %s%s%s%s", when, level_names[level],
                         id[0] ? "job " : "", id, id[0] ? ": " : "", esc);
        off = n < 0 ? 0 : LCN_MIN((size_t)n, sizeof buf - 2);
    }
    buf[off++] = '\n';
    write_line(buf, off);
}

void log_msg(int level, const char *fmt, ...)
{
    if (level > atomic_load(&log_level_cur))
        return;
    va_list ap;
    va_start(ap, fmt);
    vlog(level, -1, fmt, ap);
    va_end(ap);
}

void log_job(int level, int64_t job_id, const char *fmt, ...)
{
    if (level > atomic_load(&log_level_cur))
        return;
    va_list ap;
    va_start(ap, fmt);
    vlog(level, job_id, fmt, ap);
    va_end(ap);
}
