/*
 * api.h - the HTTP API of docs/API.md, the layer above the job table.
 *
 *   api.c       the route table, the service endpoints (/healthz, /readyz,
 *               /version) and the layer's life (init, serving, stopping)
 *   api_jobs.c  the job resources: POST, GET and DELETE /jobs, progress
 *               pages, solutions; the requests parked on a job; the job
 *               table's changed / removed / store_failed hooks
 *   sse.c       progress streams (sse.h)
 *   metrics.c   GET /metrics
 *
 * Concurrency design: handlers run on the loop thread (http.h). Work that
 * could take long leaves the loop: request parsing and solution rendering
 * run on the libuv thread pool (the HTTP request is suspended meanwhile,
 * and answered from the after-work callback on the loop); everything the
 * pool job reads is either its own copy or held by a loop-side reference
 * (job_request.refs, changed on the loop only). Requests that wait for a
 * durable change (POST waits for its insert, DELETE for the terminal state)
 * are parked as waiters on their job and answered from the job table's
 * changed hook (api_jobs_hooks) after each store commit, or from its
 * store_failed hook when a commit fails (503 + Retry-After, or
 * 202 for a cancel whose request is durable): a parked client never waits
 * for the store to recover.
 *
 * The layer asks the modules below it (jobs, store, storeq, worker pool,
 * http) through their functions; it is told about jobs only through the
 * hooks the daemon wires (serve.c), and about the process's life through
 * api_serving / api_stopping / api_shutdown. It never calls up.
 */
#ifndef LCN_SERVER_API_H
#define LCN_SERVER_API_H

#include <stdint.h>

#include <uv.h>

#include "server/config.h"
#include "server/engines.h"
#include "server/histogram.h"
#include "server/http.h"
#include "server/jobs.h"
#include "server/sse.h"
#include "server/store.h"
#include "server/storeq.h"
#include "server/worker.h"

struct waiter;

/* The most routes api_routes may have (metrics.c keeps a latency
 * histogram per route; api.c checks the table against it). */
#define API_MAX_ROUTES 32
/* The method labels of the latency histograms: GET HEAD POST PUT DELETE
 * PATCH OPTIONS, and "other" for the rest (metrics.c). */
#define METRICS_METHODS 8

/* Device memory lcnd holds (workspaces), 0 without a GPU. */
typedef uint64_t (*api_gpu_memory_fn)(void *ctx);

struct parse_work;

/* POST bodies parsed at once in the libuv pool (4 threads by default). */
#define API_PARSES 2

struct api {
    /* wiring (api_init): borrowed, outlive the layer */
    uv_loop_t *loop;
    const struct lcnd_config *cfg;
    struct jobs *jobs;
    struct store *store; /* read and blob connections */
    struct storeq *sq;   /* health and commit count */
    struct worker_pool *pool;
    api_gpu_memory_fn gpu_memory; /* may be NULL */
    void *gpu_ctx;
    struct http_server *http; /* once serving (api_serving) */

    struct sse_hub sse;
    struct waiter *waiters; /* every parked request (api_jobs.c) */
    int ready;              /* serving (READY=1 sent) */
    int stopping;           /* the shutdown began: no new work */
    uint64_t jobs_rejected; /* POST bodies that did not parse */
    /* POST bodies in the thread pool (at most API_PARSES), the rest wait in
     * arrival order (api_jobs.c), so that large bodies leave the pool's other
     * threads to solutions and pictures */
    int parsing;
    struct parse_work *parse_head, *parse_tail;
    /* metrics.c: the time to answer, by route (api_routes' index, or
     * API_MAX_ROUTES for none) and method label; loop thread */
    struct histogram http_latency[API_MAX_ROUTES + 1][METRICS_METHODS];
};

/* The route table (handlers take the struct api as ctx). */
extern const struct http_route api_routes[];
extern const size_t api_route_count;

/* Wires the layer (everything borrowed). */
void api_init(struct api *a, uv_loop_t *loop, const struct lcnd_config *cfg, struct jobs *jobs,
              struct store *store, struct storeq *sq, struct worker_pool *pool,
              api_gpu_memory_fn gpu_memory, void *gpu_ctx);

/* The daemon serves on http: /readyz may say ready. */
void api_serving(struct api *a, struct http_server *http);

/* The shutdown began: new jobs, streams and cancels of running jobs get
 * 503 from now on. */
void api_stopping(struct api *a);

/* The shutdown's drain: every parked request gets 503 and every stream
 * ends. */
void api_shutdown(struct api *a);

/* Wakes the streams due a heartbeat (timer). */
void api_heartbeat(struct api *a);

/* api_jobs.c: the layer's side of the job table's hooks (jobs.h says when
 * each runs): fills h's changed, removed and store_failed, and ctx with a;
 * counts, idle, fatal and pctx stay the caller's. */
void api_jobs_hooks(struct api *a, struct jobs_hooks *h);
/* The jobs' synced hook (shared queue: GETs waiting for a round). */
void api_jobs_synced(struct api *a);

/* api_jobs.c: answers every parked request with 503 (shutdown). */
void api_jobs_shutdown(struct api *a);

/* api_jobs.c: the handlers of the job resources. */
void api_jobs_post(struct http_req *r, void *ctx);
void api_jobs_list(struct http_req *r, void *ctx);
void api_jobs_get(struct http_req *r, void *ctx);
void api_jobs_delete(struct http_req *r, void *ctx);
void api_jobs_progress(struct http_req *r, void *ctx);
void api_jobs_solution(struct http_req *r, void *ctx);
void api_jobs_solution_svg(struct http_req *r, void *ctx);

/* What the service endpoints show of one GPU device (metrics.c). */
struct api_device {
    int index;        /* in the daemon's device set (worker.device) */
    int described;    /* desc is filled (a real context; not the fake GPU) */
    struct engines_gpu_desc desc;
    int up;           /* it has a healthy worker: not lost */
    int workers, busy;
};

/* metrics.c: the daemon's GPU devices (1 + the largest worker device). */
int metrics_devices(struct api *a);

/* metrics.c: device i's state into *out. */
void metrics_device(struct api *a, int i, struct api_device *out);

/* metrics.c: GET /metrics (Prometheus text format). */
void metrics_get(struct http_req *r, void *ctx);

/* metrics.c: empties the latency histograms (api_init). */
void metrics_init(struct api *a);

/* metrics.c: the http_config on_answer hook (ctx: the struct api): counts
 * one answer in the latency histogram of its route and method. */
void metrics_http_answer(void *ctx, const struct http_route *route, const char *method,
                         int64_t latency_ns);

#endif
