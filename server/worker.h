/*
 * worker.h - the threads that run engines: one worker per workspace slot
 * of each GPU device plus a pool of CPU workers, each running one job at a
 * time.
 *
 * Concurrency design:
 *   - The loop thread owns assignment. worker_start hands a struct run to
 *     an idle worker under the worker's mutex and signals its condition
 *     variable; the run's inputs (graph, params, initial layout) are
 *     immutable from then on. The only field the loop writes during the run
 *     is the atomic cancel flag (DELETE, shutdown).
 *   - The worker thread calls the engine. The engine's callbacks run on
 *     that thread; they copy what they get into the worker's report slot
 *     under the mutex, keeping only the *latest* improvement, telemetry and
 *     checkpoint layout (older ones are overwritten, the count of
 *     improvements is kept), and then uv_async_send the pool's one async
 *     handle. uv_async coalesces wake-ups, and so does the report slot: the
 *     loop sees the newest state, never a backlog, however fast the engine
 *     reports.
 *   - Checkpoint layouts and the final result are revalidated on the worker
 *     thread by the independent oracle (validate.h) before they are
 *     reported; a tuple that differs from the engine's claim fails the job
 *     (LCN_ECORRUPT) and nothing of it is published.
 *   - On the loop, the async callback swaps every worker's report slot out
 *     under its mutex and hands it to the pool's on_report callback
 *     (jobs.c), outside the lock. When the run has finished, the worker is
 *     idle again from the loop's point of view once on_report returns.
 *   - worker_pool_release asks the threads to quit and joins them; a
 *     worker still inside an engine is detached after the timeout instead
 *     (see worker_pool_release).
 *   - Devices: a GPU worker belongs to one device of the daemon's device
 *     set (worker.device, the set's index: two entries of `gpus = 0,0`
 *     are two devices here). A run across several GPUs holds one idle
 *     worker of each of its devices (worker_start_group): the first runs
 *     the engine, the others are only marked busy, and all are free again
 *     when its finished report is handed over (or, when its engine was
 *     abandoned, when the zombie is reaped, since it still uses their
 *     devices). A device is retired as a whole (worker_fail_device).
 *   - Abandonment: a worker whose engine ignores its cancel flag is
 *     abandoned (worker_abandon): its thread state moves to the pool's
 *     zombie list with the run it still reads, and the slot gets a fresh
 *     thread at once, so the queue moves on. Nothing the zombie reports
 *     reaches the loop; when its engine finally returns, the thread exits
 *     and on_async joins it and hands the run back (on_reaped) to be freed.
 */
#ifndef LCN_SERVER_WORKER_H
#define LCN_SERVER_WORKER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <uv.h>

#include "engine.h"
#include "graph.h"

enum worker_kind { WORKER_CPU = 0, WORKER_GPU = 1 };

/* Why a run's cancel flag was set (the job table sets it, jobs.c).
 * CANCEL_DEADLINE: the engine overran its budget by more than
 * DEADLINE_GRACE_NS (jobs.h) and the daemon stopped it. */
enum cancel_reason { CANCEL_NONE = 0, CANCEL_USER, CANCEL_SHUTDOWN, CANCEL_DEADLINE };

/* One engine run. Inputs are set by the loop before worker_start and are
 * read-only afterwards; outputs are written by the worker before it
 * reports `finished`. */
struct run {
    int64_t job_id;
    const struct lcn_graph *g;   /* borrowed; outlives the run */
    void *hold;                  /* the owner's reference that keeps g alive (jobs.c) */
    struct engine_params params; /* callbacks and cancel are filled by the worker */
    struct lcn_pt *init;         /* owned: initial layout (n points) or NULL */
    uint8_t *has_xy;             /* owned or NULL */
    char *tuning;                /* owned or NULL */
    atomic_int cancel;
    enum cancel_reason cancel_reason; /* loop only: why cancel was set */
    /* set by worker_start / worker_start_group: the devices the run uses
     * (worker.device of each, the engine's engine_params.devices; none on
     * a CPU worker) and the workers it holds (group[0] runs it) */
    int32_t n_devices;
    int32_t devices[ENGINE_MAX_DEVICES];
    struct worker *group[ENGINE_MAX_DEVICES];
    int64_t assigned_ns; /* loop only */
    int64_t cancel_ns;   /* loop only: when cancel was set, 0 = not yet */

    /* outputs, valid once the report says finished */
    int rc;                   /* engine return code, or LCN_ECORRUPT from revalidation */
    struct engine_result res; /* valid when rc == 0; layout validated */
    char diag[256];           /* failure detail, lower case */
    int64_t engine_start_ns;  /* lcn_now_ns() right before the engine was called */
    int from_checkpoint;      /* res.layout is the last checkpoint: the newest best could not
                                 be validated in time */

    /* worker thread only: the last layout the worker's oracle passed */
    struct lcn_pt *valid;
    struct lcn_obj valid_obj;
};

/* Frees what a run owns (the result's layout included). Runs belong to the
 * job table (jobs.c); workers only borrow them. */
void run_free(struct run *r);

/* The latest state of a worker's run, swapped out by the loop. */
struct worker_report {
    struct run *run;
    int started;
    int64_t started_ns;
    int has_improve;
    struct engine_event improve; /* the latest improvement */
    uint64_t improves;           /* improvements since the last report */
    int has_telemetry;
    struct engine_telemetry tel;
    struct lcn_pt *ckpt; /* latest validated layout, owned, or NULL */
    struct lcn_obj ckpt_obj;
    double ckpt_elapsed_s;
    int finished;
};

void worker_report_release(struct worker_report *rep);

struct worker_pool;
struct worker;

/* How many workers of one kind (or one device) exist, are healthy, and are busy. */
struct worker_counts {
    int all, healthy, busy;
};

/* A worker's thread and what it shares with the loop (under mu). Moves to
 * the pool's zombie list when the worker is abandoned. */
struct worker_thread {
    struct worker_pool *pool;
    struct worker *w; /* the slot it serves (kind, device, index) */
    pthread_t th;
    int thread_started; /* 1 running, 2 exited */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* under mu */
    struct run *run; /* assigned, until the loop collects the finished report */
    int todo;        /* run assigned and not yet picked up by the thread */
    int quit;
    int abandoned; /* the loop gave up on this thread: exit once the engine returns */
    struct worker_report rep;
    int in_engine;
    struct worker_thread *next_zombie; /* loop only */
};

struct worker {
    struct worker_pool *pool;
    int index;
    enum worker_kind kind;
    int device; /* GPU workers: the index of their device in the daemon's device set
                   (engines.h); -1 for CPU workers */
    struct worker_thread *t;
    /* loop only */
    int busy;
    int healthy;
};

/* Runs the engine for worker w: the daemon passes a dispatcher to the CPU
 * or GPU engine; tests pass a fake. Same contract as engine_cpu_run. */
typedef int (*worker_engine_fn)(void *ctx, const struct worker *w, const struct lcn_graph *g,
                                const struct engine_params *p, struct engine_result *out);
/* Called on the loop with a report to consume; it may take rep->ckpt (set
 * it to NULL) and must release the run when rep->finished. */
typedef void (*worker_report_fn)(void *ctx, struct worker *w, struct worker_report *rep);
/* Called on the loop when an abandoned worker's engine has returned and
 * its thread is joined: the owner frees run (run->hold too). */
typedef void (*worker_reaped_fn)(void *ctx, struct run *run);

struct worker_pool {
    struct worker *w;
    int n;
    uv_async_t async;
    worker_engine_fn engine;
    void *engine_ctx;
    worker_report_fn on_report;
    worker_reaped_fn on_reaped;
    void *ctx;
    struct worker_thread *zombies; /* abandoned threads still inside an engine */
    int n_zombies;
    int abandoned_total; /* workers abandoned during the process's life */
    int gpu_failed;      /* a GPU worker failed for good (worker_fail) */
};

/* Starts n_gpu GPU workers (worker i on device gpu_devices[i], an index
 * of the device set) and n_cpu CPU workers. Returns 0 or LCN_EIO. */
int worker_pool_init(struct worker_pool *p, uv_loop_t *loop, const int *gpu_devices, int n_gpu,
                     int n_cpu, worker_engine_fn engine, void *engine_ctx,
                     worker_report_fn on_report, worker_reaped_fn on_reaped, void *ctx);

/* Hands run to idle worker w (loop thread). */
void worker_start(struct worker *w, struct run *run);

/* A run across n GPUs (loop thread): ws[0..n) are idle workers of n
 * distinct devices (worker_pool_idle_group); all become busy, ws[0] runs
 * the engine with run->devices = their devices. */
void worker_start_group(struct worker *const *ws, int n, struct run *run);

/*
 * Gives up on busy worker w, whose engine does not return (loop thread):
 * its thread keeps the run (the owner must keep run->hold alive until
 * on_reaped) and becomes a zombie; w gets a new thread and is idle.
 * Returns 0, or LCN_EIO when no new thread could be started (w is then
 * unhealthy).
 */
int worker_abandon(struct worker *w);

/* Marks w unusable for the life of the process after an unrecoverable
 * device error (loop thread): it gets no run again; a GPU worker's whole
 * device is retired with it (worker_fail_device). */
void worker_fail(struct worker *w);

/* Retires device dev (loop thread): every GPU worker on it is unusable for
 * the life of the process and worker_pool_gpu_failed reports it. Returns
 * the number of workers retired now (0 when it was retired already). */
int worker_fail_device(struct worker_pool *p, int dev);

/* 1 once a GPU worker has failed (worker_fail). */
int worker_pool_gpu_failed(const struct worker_pool *p);

/* Devices of the GPU workers: 1 + the largest device index (0: none). */
int worker_pool_devices(const struct worker_pool *p);

/* Devices that still have a healthy GPU worker. */
int worker_pool_healthy_devices(const struct worker_pool *p);

/* Devices that have an idle healthy GPU worker now: the most a run across
 * devices could start on at once (worker_pool_idle_group). */
int worker_pool_idle_devices(const struct worker_pool *p);

/* Counts device dev's GPU workers into *out (loop thread). */
void worker_pool_device_counts(const struct worker_pool *p, int dev, struct worker_counts *out);

/*
 * n idle healthy GPU workers on n distinct devices, the devices with the
 * fewest busy workers first (ties: the lowest device), into out[0..n)
 * (loop thread). Returns 0, or -1 (out untouched) when fewer than n
 * devices have an idle worker.
 */
int worker_pool_idle_group(struct worker_pool *p, int n, struct worker **out);



/* Counts the workers of kind into *out (loop thread). */
void worker_pool_counts(const struct worker_pool *p, enum worker_kind kind,
                        struct worker_counts *out);

/* An idle healthy worker of kind, or NULL (loop thread): for the CPU the
 * lowest index; for the GPU one on the device with the fewest busy
 * workers (ties: the lowest index), so jobs spread over the devices. */
struct worker *worker_pool_idle(struct worker_pool *p, enum worker_kind kind);

/* Number of workers currently inside an engine call (any thread). */
int worker_pool_in_engine(struct worker_pool *p);

/*
 * Stops the threads: idle ones quit at once; a worker still running is
 * waited for until timeout_ns (lcn_now_ns() deadline) and then detached,
 * leaving its run to the process exit; so is every zombie. Closes the
 * async handle. Returns the number of detached workers and zombies.
 */
int worker_pool_release(struct worker_pool *p, int64_t deadline_ns);

#endif
