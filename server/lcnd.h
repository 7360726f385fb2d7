/*
 * lcnd.h - the state of one `lcnd serve` process: the modules serve.c
 * wires together, and the process lifecycle around them.
 *
 * Layers (each calls only down; a lower one reports up through callbacks
 * it was given, never by name):
 *   serve.c                      start-up, signals, timers, the shutdown
 *                                state machine; wires everything below
 *   api.c api_jobs.c sse.c       the HTTP API (api.h): handlers, parked
 *   metrics.c                    requests, streams, metrics
 *   jobs.c                       the job table, queue, scheduler, recovery
 *   worker.c storeq.c http.c     engine threads, group commit, HTTP server
 *   store.c engines.c config.c   SQLite, the engine dispatcher, options
 *   log.c notify.c               (and common/'s sbuf, the text buffer)
 * tools/server_calls.py checks that no call goes up (a test does).
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
 *         (api_jobs.c), on private copies or read-only shared data (the
 *         parsed graph document of an active job, whose jansson refcounts
 *         are atomic), plus blob reads on the store's blob connection;
 *         results come back in uv after-work callbacks on the loop.
 *   - A change becomes visible to clients only in a store commit callback
 *     (jobs_on_store_done): "durable before reported".
 */
#ifndef LCN_SERVER_LCND_H
#define LCN_SERVER_LCND_H

#include <stdatomic.h>
#include <stdint.h>

#include <uv.h>

#include "server/api.h"
#include "server/config.h"
#include "server/http.h"
#include "server/jobs.h"
#include "server/store.h"
#include "server/storeq.h"
#include "server/worker.h"

#ifndef LCN_VERSION
#define LCN_VERSION "unknown"
#endif
#define LCND_VERSION LCN_VERSION

/* The engines the workers call and what the device probe found (serve.c). */
#define LCND_MAX_GPU_WORKERS 256

struct lcnd_engine {
    worker_engine_fn run;
    void *ctx;
    int n_gpu;      /* GPU workers to start (workspace slots of every device) */
    int n_devices;  /* devices in the set (engines.h; the fake GPU counts one) */
    int worker_device[LCND_MAX_GPU_WORKERS]; /* GPU worker i's device index */
    atomic_int fault_armed; /* the test_gpu_fault hook has been armed (worker threads) */
    int fake_cpu;           /* test_fake_gpu = cpu: the GPU workers run the CPU engine */
    atomic_int fake_lost[ENGINE_MAX_DEVICES]; /* fake_cpu: devices the fault hook broke */
    char gpu_why[256];   /* why no GPU worker runs, "" when some do */
    int64_t fake_gpu_ns; /* > 0: the test_fake_gpu hook (docs/DAEMON.md) runs this long */
    /* device memory lcnd holds (workspaces), 0 without a GPU; ctx unused */
    api_gpu_memory_fn gpu_memory_bytes;
    /* 0 when a GPU slot can hold g, else LCN_ETOOBIG with the reason */
    jobs_gpu_fits_fn gpu_fits;
};

/* The shutdown state machine (serve.c). */
enum lcnd_stop_phase {
    STOP_NONE = 0, /* serving */
    STOP_JOBS,     /* engines asked to stop; waiting for runs and commits */
    STOP_HTTP,     /* parked requests answered, streams ended; HTTP closing */
    STOP_CLOSE,    /* HTTP closed: workers joined, handles closing */
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
    struct api api;
    struct cluster cluster; /* the shared queue (store_url), cluster.started when it runs */
    char node_name[256];

    /* lifecycle */
    int ready; /* READY=1 sent */
    enum lcnd_stop_phase stop_phase;
    int stop_forced; /* the shutdown timeout fired, or a second signal came */
    int exit_code;
    int64_t stop_deadline_ns;
    int workers_started;

    /* loop handles */
    uv_signal_t sig_term, sig_int, sig_hup;
    uv_timer_t t_watchdog, t_status, t_retention, t_heartbeat, t_deadlines, t_shutdown;
    int handles_open;
};

/* `lcnd serve` (serve.c): returns the process exit status. */
int lcnd_serve_main(int argc, char **argv);

#endif
