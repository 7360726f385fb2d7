/*
 * jobs.h - the job table, the queue and the scheduler.
 *
 * Concurrency design: everything here belongs to the loop thread. A job
 * has two copies of its status:
 *   pub  what clients see; changed only when a store commit that carries
 *        the change has landed (jobs_on_store_done), so every state change,
 *        event and checkpoint is durable before it is reported;
 *   cur  the newest intended status, pub plus changes still on their way
 *        to the store. Changes are made to cur and shipped as a store op
 *        carrying a snapshot of cur; one job's changes coalesce into one op
 *        until the store queue seals it (storeq.h), and of several
 *        improvement events that coalesce only the newest is kept.
 * Workers run engines on their own threads (worker.h) and report through
 * jobs_on_report on the loop.
 *
 * A job's life: submit (op: insert + "queued" event) -> on commit: queued,
 * enters the FIFO queue -> schedule: a free worker of the right backend
 * gets a struct run (op: "running") -> reports: improve events, telemetry,
 * checkpoints -> finished: the final layout (revalidated by the worker) is
 * stored as the final checkpoint with the terminal state. After a crash,
 * jobs_recover finds jobs the store says are running and resumes them from
 * their last checkpoint with the remaining budget (or marks them
 * interrupted). A cancel is stored as a request first and acted on once
 * that commits. A failed commit answers the clients parked on its jobs
 * (jobs_on_store_failed): an insert is given up, a request to cancel not
 * yet stored is withdrawn.
 */
#ifndef LCN_SERVER_JOBS_H
#define LCN_SERVER_JOBS_H

#include <stddef.h>
#include <stdint.h>

#include "server/cluster.h"
#include "server/config.h"
#include "server/histogram.h"
#include "job.h"
#include "server/store.h"
#include "server/storeq.h"
#include "server/worker.h"

struct job_watch;

/* The engines end within milliseconds of the deadline themselves; past
 * this the daemon sets the cancel flag, and ENGINE_ABANDON_NS after any
 * cancel (but the shutdown's, which has its own timeout) it abandons the
 * worker (jobs_enforce_deadlines). */
#define DEADLINE_GRACE_NS 100000000LL
#define ENGINE_ABANDON_NS 2000000000LL
/* How often the daemon looks (serve.c's deadline timer). */
#define DEADLINE_CHECK_MS 50

struct job {
    int64_t id;
    struct job_status pub; /* durable, visible */
    struct job_status cur; /* newest intended */
    char *pub_text;        /* pub as JSON text, built on demand (jobs_status_text) */
    size_t pub_len;
    int durable;  /* the insert has committed */
    int removing; /* a delete op is on its way */

    /* parsed request while queued or running, else NULL; req->refs counts
     * the job's reference and solution renders in flight (loop thread) */
    struct job_request *req;

    struct run *run; /* while a worker runs it */
    struct worker *worker;

    /* the latest durable layout while the job is in memory as active or
     * until freed (solution of a running job); for finished jobs the store
     * has it */
    struct lcn_pt *ckpt;
    struct lcn_obj ckpt_obj;
    double ckpt_elapsed_s;
    int ckpt_final;
    int has_ckpt; /* a checkpoint committed during this process's life */

    /* resume state (after a restart) */
    struct lcn_pt *resume_layout;
    double elapsed_base;
    int resumed_now;

    int64_t last_seq;       /* last seq assigned (pub.progress_seq <= last_seq) */
    struct store_op *op;    /* this job's unsealed op, or NULL */
    int64_t improve_ev;     /* index+1 in op->events of a coalescible improve event */
    uint64_t tel_evaluated; /* evaluations already added to the metric */
    uint64_t tel_dev_evaluated[ENGINE_MAX_DEVICES]; /* the same per island (run across GPUs) */
    int64_t received_ns;    /* when POST /jobs arrived */
    int64_t admitted_ns;    /* jobs_submit in this process, until its engine starts; else 0 */
    int64_t run_started_ns; /* its engine started in this process, until terminal; else 0 */
    int gpu_fits;           /* a GPU slot can hold the graph */
    int gpus;               /* devices its run needs (jobs_gpus_needed, fixed at admission) */

    /* The shared queue (store_url: several daemons, cluster.h). claim: the
     * claim under which this daemon runs or ran the job (its ops are
     * fenced by it), 0 when it never held it; mirror: a job this daemon
     * does not run, whose pub follows the store's rows (it holds no request
     * or layout: its solution comes from the store); lost: the run is being
     * stopped because the claim was lost (its result is discarded). */
    int64_t claim;
    int mirror;
    int lost;

    /* queue links (cur.state == queued and durable) */
    struct job *qprev, *qnext;
    int in_queue;

    /* Owned by the layer that wired the hooks (the HTTP layer: its parked
     * requests and streams on this job), NULL when it keeps nothing. jobs.c
     * never reads it; the owner empties it in the removed and store_failed
     * hooks, before the job is freed. */
    struct job_watch *watch;
};

/*
 * What the table reports to the module that wired it. Every hook runs on
 * the loop thread, from inside a jobs_* call or a store / worker callback;
 * a NULL hook is skipped. Two sides, each with its own context: changed,
 * removed and store_failed concern the clients of a job (ctx: the HTTP
 * layer fills them, api_jobs_hooks); counts, idle and fatal the process's
 * life (pctx: the daemon's).
 *   changed       a commit made a change of j visible (j->pub): answer
 *                 what waits for it, wake its streams;
 *   removed       j is about to be freed (retention deleted it);
 *   store_failed  a commit carrying j's changes failed: answer the clients
 *                 parked on j (jobs_on_store_failed says how); when j's
 *                 insert failed, j is freed right after the hook;
 *   counts        the number of queued or running jobs may have changed;
 *   idle          a run ended or a commit landed: a shutdown waiting for
 *                 jobs_running() == 0 and an idle store queue may advance;
 *                 called last, when the table is consistent again;
 *   fatal         the process must stop with exit_code (a GPU context is
 *                 broken); the table has already failed the job.
 */
struct jobs_hooks {
    void (*changed)(void *ctx, struct job *j);
    void (*removed)(void *ctx, struct job *j);
    void (*store_failed)(void *ctx, struct job *j);
    void *ctx;
    void (*counts)(void *pctx);
    void (*idle)(void *pctx);
    void (*fatal)(void *pctx, int exit_code, const char *why);
    void *pctx;
};

/*
 * The job timings GET /metrics shows (docs/API.md), in seconds, for what
 * happened in this process: they start empty with it, like every counter
 * of the daemon (a restart is a counter reset to Prometheus). Observed on
 * the loop thread, where the table lives.
 *   queue_wait      from the admission (jobs_submit) to the engine's start
 *                   report, once per job; jobs recovered after a restart
 *                   were admitted by another process and are not in it;
 *   run             from the engine's start report to the terminal state
 *                   (the change to cur: the commit follows within ms);
 *   time_to_target  the job's time_to_target_s (engine time, summed over
 *                   resumes), when its target is reached in this process;
 *   finished        terminal states that became durable (visible), by
 *                   state: succeeded, failed, cancelled, interrupted.
 */
struct jobs_timings {
    struct histogram queue_wait;
    struct histogram run;
    struct histogram time_to_target;
    uint64_t finished[JOB_STATE_COUNT];
};

/* 0 when a GPU workspace slot can hold g, else a negative LCN_E* code with
 * the reason in why. */
typedef int (*jobs_gpu_fits_fn)(void *ctx, const struct lcn_graph *g, char *why, size_t len);

/* 1 when device dev (worker.device) is still usable, 0 when a sticky error
 * broke it (asked after a run failed with LCN_EGPU_STICKY). */
typedef int (*jobs_device_ok_fn)(void *ctx, int dev);

/* What the table counts per GPU device (GET /metrics), since the start. */
struct jobs_device_stats {
    uint64_t runs;        /* runs started on the device (a run across GPUs counts on each) */
    uint64_t evaluations; /* engine evaluations reported by its runs */
    uint64_t requeued;    /* jobs put back in the queue when the device was lost under them */
};

struct jobs {
    /* wiring (jobs_init): borrowed, outlive the table */
    const struct lcnd_config *cfg;
    struct store *store;
    struct storeq *sq;
    struct worker_pool *pool;
    jobs_gpu_fits_fn gpu_fits; /* NULL: no GPU can hold anything */
    void *gpu_ctx;
    jobs_device_ok_fn device_ok; /* NULL: a sticky error blames the run's first device */
    struct jobs_hooks hooks;

    struct job **v; /* by ascending id */
    size_t n, cap;
    struct job *qhead, *qtail;
    int64_t next_id;
    int64_t waiting;                   /* cur.state == queued, durable or not (admission) */
    int64_t running;                   /* runs with a worker */
    int64_t by_state[JOB_STATE_COUNT]; /* pub.state of durable jobs */
    uint64_t submitted;                /* jobs accepted since start */
    uint64_t evaluations;              /* engine evaluations reported since start */
    int stopping;                      /* jobs_stop_all ran: start nothing more */
    struct jobs_timings timings;       /* GET /metrics (jobs_timings) */
    struct jobs_device_stats dev[ENGINE_MAX_DEVICES]; /* GET /metrics, by worker.device */
    struct job_limits recover_limits;

    /* the shared queue (jobs_share): NULL with the SQLite store */
    struct cluster *cl;
    int64_t lease_ms;
    int64_t ids_next, ids_end; /* the block of ids this daemon gives out */
    int64_t id_block;
    uint64_t synced; /* the last round of the cluster thread that ended */
};

/* What the table holds, for the service endpoints. */
struct jobs_stats {
    int64_t queued;  /* in the queue, waiting for a worker */
    int64_t waiting; /* queued, durable or not (what admission counts) */
    int64_t running;
    int64_t by_state[JOB_STATE_COUNT]; /* durable jobs by visible state */
    uint64_t submitted;
    uint64_t evaluations;
};

/* Wires an empty table to its collaborators (all borrowed: they must
 * outlive it; the pool may still be empty and be started later). */
void jobs_init(struct jobs *t, const struct lcnd_config *cfg, struct store *store,
               struct storeq *sq, struct worker_pool *pool, jobs_gpu_fits_fn gpu_fits,
               void *gpu_ctx, const struct jobs_hooks *hooks);

/* Wires the device health check a sticky error consults (serve.c: the
 * GPU contexts' health); ctx is jobs_init's gpu_ctx. */
void jobs_set_device_ok(struct jobs *t, jobs_device_ok_fn ok);

/* Device dev's counters (zeros for an index beyond the table). */
void jobs_device_stats(const struct jobs *t, int dev, struct jobs_device_stats *out);

/* The devices a request's run needs: 1 for one (or a CPU job), every
 * healthy device for solver.gpus = "all", else solver.gpus. */
int jobs_gpus_needed(const struct jobs *t, const struct job_request *req);

/* Loads every job from the store and resumes or marks the interrupted
 * ones. Returns 0 or LCN_ESTORE with err filled. */
int jobs_recover(struct jobs *t, char *err, size_t errlen);

/* The durable job with this id, or NULL. */
struct job *jobs_find(struct jobs *t, int64_t id);

/* The durable job with the largest id below `before`, or NULL: walks the
 * table from the newest job down. */
struct job *jobs_before(struct jobs *t, int64_t before);

/* Fills *out (loop thread). */
void jobs_stats(const struct jobs *t, struct jobs_stats *out);

/* The timings of the jobs since the process started (borrowed: valid
 * while the table lives; loop thread). */
const struct jobs_timings *jobs_timings(const struct jobs *t);

/* Admission of a parsed request against the workers this process has:
 * its backend has a healthy worker, a backend=gpu graph fits a GPU slot,
 * and the replicas asked for can be held and set up within the budget.
 * Returns 0, or LCN_ENOGPU / LCN_ETOOBIG with *e filled (422, code and
 * field path). */
int jobs_admit(struct jobs *t, const struct job_request *req, struct job_error *e);

/* Accepts a parsed request (req and body are taken over): the job exists
 * once the returned job's insert commits (the changed hook). */
struct job *jobs_submit(struct jobs *t, struct job_request *req, char *body, size_t len,
                        int64_t received_ns);

/* Cancels a queued or running job (no-op for a terminal one, or one whose
 * cancel is on its way): the request to cancel is committed first and
 * acted on then; a failed commit withdraws it (jobs.c explains why). */
void jobs_cancel(struct jobs *t, struct job *j);

/* Fails the queued jobs whose backend has no worker in this process (a
 * backend=gpu job recovered by a daemon that found no usable GPU), so they
 * do not wait forever. */
void jobs_fail_unrunnable(struct jobs *t);

/* Starts queued jobs on free workers. */
void jobs_schedule(struct jobs *t);

/* storeq callbacks (ctx: the struct jobs): a commit landed; a commit
 * failed (op was in it or waits behind it). */
void jobs_on_store_done(void *ctx, struct store_op *op);
void jobs_on_store_failed(void *ctx, struct store_op *op);

/* worker pool callbacks (ctx: the struct jobs). */
void jobs_on_report(void *ctx, struct worker *w, struct worker_report *rep);
void jobs_on_reaped(void *ctx, struct run *run);

/* Asks every running engine to stop and checkpoint, and starts no run from
 * now on (shutdown). */
void jobs_stop_all(struct jobs *t);

/* Stops runs whose engine overran its deadline by DEADLINE_GRACE_NS and
 * abandons those that ignore the cancel for ENGINE_ABANDON_NS (the engines
 * enforce the budget themselves; this is the daemon's backstop). */
void jobs_enforce_deadlines(struct jobs *t);

/* Deletes finished jobs beyond retain_jobs / older than retain_days. */
void jobs_retention(struct jobs *t);

/* Admission of the solver fields against the engine's limits: 0, or
 * LCN_ETOOBIG with the reason in why when the replicas asked for cannot
 * be held (memory) or set up within the budget (common/engine.h). The
 * replicas asked for are solver.replicas, or without it two per thread of
 * solver.threads (LCN_CPU_REPLICAS); a request with neither runs the
 * daemon's configured cpu_threads and is not judged here. */
int jobs_admit_solver(struct jobs *t, const struct job_request *req, char *why, size_t len);

/* 1 when a worker of the backend a job asked for exists (and is healthy). */
int jobs_backend_available(struct jobs *t, int backend);

/* j->pub as JSON text with a trailing newline (*len bytes, owned by j and
 * valid until the next commit changes pub), or NULL when it cannot be
 * built. Pollers ask far more often than a status changes, so the text is
 * kept until then. */
const char *jobs_status_text(struct job *j, size_t *len);

/* A new reference to j's parsed request (released with jobs_req_put), or
 * NULL when the job holds none. */
struct job_request *jobs_req_hold(struct job *j);

/* Drops a reference to a request (frees it at zero). */
void jobs_req_put(struct job_request *req);

/*
 * The shared queue (store_url; docs/DAEMON.md "Several daemons, one
 * queue"). jobs_share, before jobs_recover, makes the table one of several
 * daemons on one database: ids come in blocks from the database; a job
 * accepted here is not queued here but committed, and any daemon's cluster
 * thread claims it; every other job is a mirror of the store's row (its
 * status answers GET, its events are read from the store); DELETE of a
 * job another daemon runs sets its cancel column.
 */
void jobs_share(struct jobs *t, struct cluster *cl, int64_t lease_ms, int64_t id_block);

/* The table's side of the cluster's callbacks (cluster.h): fills cb's rows,
 * claimed, ids and lost, and ctx with t; synced and sctx stay the caller's. */
void jobs_cluster_callbacks(struct jobs *t, struct cluster_callbacks *cb);

/*
 * Shared queue: j's status may be older than the store's (a job another
 * daemon runs: its mirror follows the rows a round reads). Returns 1 with
 * *ticket, a round of the cluster thread that begins after this call (it
 * reads every commit made before), when an answer that must be at least as
 * new as what the client saw elsewhere (GET ?min_seq) has to wait for it;
 * else 0 (answer now: no shared queue, a job this daemon runs, a finished
 * job). jobs_synced says when the round has ended (the synced hook runs
 * then): whether it reached the database or not, the mirror is then as
 * fresh as it can be.
 */
int jobs_fresh_ticket(struct jobs *t, const struct job *j, uint64_t *ticket);
int jobs_synced(const struct jobs *t, uint64_t ticket);
/* A round ended (the cluster's synced callback goes through the module
 * that wired both, which then answers the requests waiting for it). */
void jobs_cluster_synced(struct jobs *t, uint64_t round);

/* 1 when a job can be accepted as far as the shared queue goes (ids in
 * hand, the database reachable); else 0 with the reason. Always 1 without
 * the shared queue. */
int jobs_shared_ready(struct jobs *t, char *why, size_t len);

/* Frees every job (at exit). */
void jobs_release(struct jobs *t);

#endif
