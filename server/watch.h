/*
 * watch.h - what the HTTP layer keeps per job: the requests parked on it
 * (api_jobs.c: a POST waiting for its insert, a DELETE for the terminal
 * state) and its progress streams (sse.c).
 *
 * It hangs on job->watch, which the job table never reads (jobs.h). It is
 * created when the first waiter or stream attaches and freed when the last
 * one leaves (job_watch_put), so a job nobody watches holds nothing, and
 * the HTTP layer empties it in the jobs hooks before a job is freed.
 * Loop thread only.
 */
#ifndef LCN_SERVER_WATCH_H
#define LCN_SERVER_WATCH_H

#include <stdlib.h>

#include "server/jobs.h"
#include "util.h"

struct waiter;
struct sse;

struct job_watch {
    struct waiter *waiters; /* api_jobs.c */
    struct sse *streams;    /* sse.c */
};

/* j's watch, created when it has none. */
static inline struct job_watch *job_watch_get(struct job *j)
{
    if (!j->watch)
        j->watch = xcalloc(1, sizeof *j->watch);
    return j->watch;
}

/* Frees j's watch once nothing is left on it. */
static inline void job_watch_put(struct job *j)
{
    if (j->watch && !j->watch->waiters && !j->watch->streams) {
        free(j->watch);
        j->watch = NULL;
    }
}

#endif
