/*
 * log.h - the daemon's log: one line per message, to standard error or a
 * file that SIGHUP reopens (for logrotate).
 *
 * Threading: log_msg may be called from any thread. Each line is formatted
 * into a local buffer and written with one write(2) on an O_APPEND file
 * descriptor, so lines never interleave. log_reopen opens the file again
 * and dup2()s it over the descriptor in use, which is atomic for writers on
 * other threads; it is called from the loop thread only.
 */
#ifndef LCN_SERVER_LOG_H
#define LCN_SERVER_LOG_H

#include "server/config.h"

/* Starts logging to path (NULL or "" = standard error) at the given level
 * (enum config_log_level) in the given format (enum config_log_format).
 * Returns 0, or LCN_EIO when the file cannot be opened. */
int log_open(const char *path, int level, int format);

/* Reopens the log file (no-op for standard error). Returns 0 or LCN_EIO;
 * on failure the old descriptor stays in use. */
int log_reopen(void);

/* Closes the file (standard error is kept). */
void log_close(void);

/* Lines lost since the start because the log's write failed (a full disk,
 * --log-file /dev/full): counted here and in /metrics
 * (lcn_log_lines_lost_total), never retried. The first loss of a run of
 * failures is also said once on standard error, naming the file and the
 * reason, and the first line written after the run says so in the log. */
unsigned long long log_lines_lost(void);

/*
 * Writes one line when level is enabled. Text format:
 *   2026-11-29T16:00:00.123Z info message
 * JSON format (log_format = json), one object per line:
 *   {"time":"2026-11-29T16:00:00.123Z","level":"info","message":"..."}
 */
void log_msg(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * A line about one job, which it names by its API id: in text
 *   2026-11-29T16:00:00.123Z info job j0000000000000009: message
 * and in JSON with the id as a field of its own:
 *   {"time":"...","level":"info","job":"j0000000000000009","message":"..."}
 */
void log_job(int level, int64_t job_id, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define log_error(...) log_msg(LOG_LEVEL_ERROR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_LEVEL_DEBUG, __VA_ARGS__)

#endif
