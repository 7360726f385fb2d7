/*
 * lcnd.h - the state of one `lcnd serve` process and the entry points its
 * modules share.
 *
 * Concurrency design (docs/DAEMON.md tells the whole story):
 *   - One libuv loop thread owns everything in struct lcnd: the job table,
 *     the queue, the HTTP server (MHD in external epoll mode, see http.h),
 *     signals, timers, metrics. Nothing in here is locked, because nothing
 *     in here is touched by another thread.
 *   - Other threads and what they may touch:
 *       the store thread (storeq.h): the ops handed to it, the write
 *         connection; reports back through a uv_async;
 *       the worker threads (worker.h): their struct run and report slot
 *         (under the worker's mutex); report back through a uv_async;
 *       the libuv thread pool: request parsing and solution rendering
 *         (api.c), on private copies or read-only shared data (the parsed
 *         graph document of an active job, whose jansson refcounts are
 *         atomic), plus blob reads on the store's blob connection;
 *         results come back in uv after-work callbacks on the loop.
 *   - A change becomes visible to clients only in a store commit callback
 *     (jobs_on_store_done): "durable before reported".
 */
#ifndef LCN_SERVER_LCND_H
#define LCN_SERVER_LCND_H

#include <stdint.h>

#include <uv.h>

#include "config.h"
#include "http.h"
#include "jobs.h"
#include "store.h"
#include "storeq.h"
#include "worker.h"

#ifndef LCN_VERSION
#define LCN_VERSION "unknown"
#endif
#define LCND_VERSION LCN_VERSION

struct sse;
struct lcnd;

/* The engines the workers call and what the device probe found (serve.c). */
struct lcnd_engine {
    worker_engine_fn run;
    void *ctx;
    int n_gpu;           /* GPU workers to start (workspace slots of the GPU context) */
    int gpu_device;      /* CUDA device ordinal of those workers */
    char gpu_why[256];   /* why no GPU worker runs, "" when some do */
    int fake_gpu;        /* test hook test_fake_gpu (docs/DAEMON.md) */
    int64_t fake_gpu_ns; /* how long the fake GPU runs the CPU engine */
    /* device memory lcnd holds (workspaces), 0 without a GPU */
    uint64_t (*gpu_memory_bytes)(struct lcnd *d);
    /* 0 when a GPU slot can hold g, else LCN_ETOOBIG with the reason in why */
    int (*gpu_fits)(struct lcnd *d, const struct lcn_graph *g, char *why, int len);
};

struct lcnd {
    struct lcnd_config cfg;
    uv_loop_t *loop;
    char *token;
    char bound[128];
    int listen_fd;

    struct store *store;
    struct storeq sq;
    struct http_server *http;
    struct worker_pool pool;
    struct lcnd_engine engine;
    struct jobs jobs;

    /* lifecycle */
    int ready;    /* READY=1 sent */
    int stopping; /* SIGTERM seen (or a fatal error): no new work */
    int stop_phase;
    int exit_code;
    int64_t stop_deadline_ns;
    int gpu_unhealthy;
    int workers_started;

    /* streams (api.c) */
    struct sse *streams;
    int64_t n_streams;

    /* metrics */
    uint64_t evaluations_total;
    uint64_t jobs_submitted, jobs_rejected;

    /* loop handles */
    uv_signal_t sig_term, sig_int, sig_hup;
    uv_timer_t t_watchdog, t_status, t_retention, t_heartbeat, t_deadlines, t_shutdown;
    int handles_open;
};

/* api.c: the route table. */
extern const struct http_route api_routes[];
extern const size_t api_route_count;

/* api.c: a committed change of job j became visible (wake waiters and
 * streams). */
void api_job_changed(struct lcnd *d, struct job *j);
/* api.c: job j is about to be freed (retention): end its streams and
 * answer its waiters. */
void api_job_removed(struct lcnd *d, struct job *j);
/* api.c: wakes streams due a heartbeat. */
void api_heartbeat(struct lcnd *d);
/* api.c: ends every stream and answers every waiter (shutdown). */
void api_shutdown(struct lcnd *d);

/* serve.c: the shutdown state machine advances (a run ended, a commit
 * landed). */
void lcnd_shutdown_step(struct lcnd *d);
/* serve.c: starts a shutdown; exit_code is the process's exit status. */
void lcnd_stop(struct lcnd *d, int exit_code, const char *why);
/* serve.c: 1 while the store commits and answers. */
int lcnd_store_healthy(struct lcnd *d);
/* serve.c: schedules a STATUS= notification (queue depth changed). */
void lcnd_status_changed(struct lcnd *d);

/* `lcnd serve` (serve.c): returns the process exit status. */
int lcnd_serve_main(int argc, char **argv);

#endif
