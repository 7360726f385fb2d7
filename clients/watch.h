/*
 * watch.h - following one job until it ends: live progress over Server-Sent
 * Events (GET /jobs/ID/progress with Accept: text/event-stream), falling
 * back to polling the same endpoint when the stream is refused, is not an
 * event stream, or keeps breaking. Used by watch, wait, submit --wait and
 * bench.
 *
 * Display modes:
 *   WATCH_BAR    one line redrawn in place (\r) on a terminal: state, a bar
 *                of elapsed/budget, the best tuple, time to target;
 *   WATCH_LINES  one plain line per event (for logs and pipes);
 *   WATCH_JSON   each event as one JSON object per line, as the API sends it;
 *   WATCH_QUIET  nothing.
 * The caller prints the final summary.
 *
 * Resilience: the event cursor (seq) survives reconnects, so no event is
 * shown twice; a lost connection is retried for WATCH_RECONNECT_S seconds
 * (long enough for a supervisor to restart the daemon, which resumes the
 * job) before the server counts as unreachable. The first request is not
 * retried: a server that is not there at all fails at once.
 */
#ifndef LCN_CLIENTS_WATCH_H
#define LCN_CLIENTS_WATCH_H

#include <signal.h>
#include <stdio.h>

#include <jansson.h>

#include "clients/http.h"
#include "clients/lcnctl.h"

#define WATCH_RECONNECT_S 30.0
/* watch_job's return values when opts.timeout_s ran out, and when
 * *opts.interrupted was set (not exit statuses). */
#define WATCH_TIMED_OUT   100
#define WATCH_INTERRUPTED 101

enum watch_display { WATCH_QUIET, WATCH_LINES, WATCH_BAR, WATCH_JSON };

struct watch_opts {
    enum watch_display display;
    int poll_only;           /* never try the event stream */
    const char *render_path; /* when set: re-render this SVG on each new validated layout */
    double timeout_s;        /* > 0: give up watching after this many seconds */
    const char *label;       /* text in front of the bar (default: the job id) */
    /* when not NULL: a flag a signal handler sets (SIGINT); watching stops
     * within a tick of it being set */
    const volatile sig_atomic_t *interrupted;
};

/*
 * Follows job id until it is terminal. Returns 0 with *final set to the
 * job's final status (GET /jobs/ID, a new reference); WATCH_TIMED_OUT when
 * opts->timeout_s ran out (*final is the latest status, or NULL);
 * WATCH_INTERRUPTED when *opts->interrupted was set (*final NULL); or an
 * exit status (3 not found, 4 unreachable, 5 refused) after printing the
 * error. The picture, when asked for, follows every validated layout the
 * daemon publishes (checkpoint events, and at most one fetch a second on
 * improvements) and is redrawn from the final solution at the end.
 */
int watch_job(const struct lcnctl_cmd *cmd, struct lcnhttp *h, const char *id,
              const struct watch_opts *opts, json_t **final);

/* The display to use for stdout: WATCH_JSON with --json, WATCH_BAR on a
 * terminal, else WATCH_LINES. */
enum watch_display watch_default_display(void);

#endif
