/*
 * sse.h - progress streams: GET /jobs/<id>/progress with
 * Accept: text/event-stream (docs/API.md, docs/DAEMON.md "Progress
 * streams").
 *
 * Concurrency design: loop thread only. A stream is a chunked answer whose
 * bytes come from a read callback (http_respond_stream): it sends what it
 * has buffered, or reads up to 256 new events from the store (never past
 * the job's durable pub.progress_seq), or a keepalive comment once the
 * heartbeat has passed; with nothing to send it suspends. Streams are
 * woken when their job's events commit (sse_job_wake), by the heartbeat
 * timer (sse_heartbeat) and at shutdown (sse_shutdown). A stream is on its
 * job's watch (watch.h) and on the hub's list; it holds at most one batch
 * of events, and is freed when MHD completes its answer.
 */
#ifndef LCN_SERVER_SSE_H
#define LCN_SERVER_SSE_H

#include <stdint.h>

#include "server/http.h"
#include "server/jobs.h"
#include "server/store.h"

struct sse;

/* Every open stream, and what they read. */
struct sse_hub {
    struct store *store; /* borrowed: events are read on its read connection */
    int64_t heartbeat_ns;
    struct sse *all;
    int64_t n;
};

/* Sets up an empty hub (store borrowed, outlives it). */
void sse_hub_init(struct sse_hub *h, struct store *store, double heartbeat_s);

/* Answers r with a stream of j's events after seq `after` (the caller
 * checked the limits). */
void sse_start(struct sse_hub *h, struct http_req *r, struct job *j, int64_t after);

/* j's visible state changed (new events committed): wakes its streams. */
void sse_job_wake(struct job *j);

/* j is about to be freed: its streams end once they sent what they hold. */
void sse_job_end(struct job *j);

/* Wakes the streams due a keepalive. */
void sse_heartbeat(struct sse_hub *h);

/* Ends every stream (shutdown). */
void sse_shutdown(struct sse_hub *h);

/* Number of open streams. */
int64_t sse_count(const struct sse_hub *h);

#endif
