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

#include "job.h"
#include "store.h"
#include "worker.h"

struct lcnd;
struct sse;
struct waiter;

/* Why a run's cancel flag was set. CANCEL_DEADLINE: the engine overran its
 * budget by more than DEADLINE_GRACE_NS and the daemon stopped it. */
enum cancel_reason { CANCEL_NONE = 0, CANCEL_USER, CANCEL_SHUTDOWN, CANCEL_DEADLINE };

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
    char *pub_text;        /* pub as GET /jobs/<id> sends it, built on demand (api.c) */
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
    int64_t received_ns;    /* when POST /jobs arrived */
    int gpu_fits;           /* a GPU slot can hold the graph */

    /* queue links (cur.state == queued and durable) */
    struct job *qprev, *qnext;
    int in_queue;

    /* api.c */
    struct waiter *waiters;
    struct sse *streams;
};

struct jobs {
    struct job **v; /* by ascending id */
    size_t n, cap;
    struct job *qhead, *qtail;
    int64_t next_id;
    int64_t waiting;                   /* cur.state == queued, durable or not (admission) */
    int64_t running;                   /* runs with a worker */
    int64_t by_state[JOB_STATE_COUNT]; /* pub.state of durable jobs */
    struct job_limits recover_limits;
};

/* Loads every job from the store and resumes or marks the interrupted
 * ones. Returns 0 or LCN_ESTORE with err filled. */
int jobs_recover(struct lcnd *d, char *err, size_t errlen);

/* The durable job with this id, or NULL. */
struct job *jobs_find(struct lcnd *d, int64_t id);

/* Accepts a parsed request (req and body are taken over): the job exists
 * once the returned job's insert commits (api_job_changed). */
struct job *jobs_submit(struct lcnd *d, struct job_request *req, char *body, size_t len,
                        int64_t received_ns);

/* Cancels a queued or running job (no-op for a terminal one, or one whose
 * cancel is on its way): the request to cancel is committed first and
 * acted on then; a failed commit withdraws it (jobs.c explains why). */
void jobs_cancel(struct lcnd *d, struct job *j);

/* Fails the queued jobs whose backend has no worker in this process (a
 * backend=gpu job recovered by a daemon that found no usable GPU), so they
 * do not wait forever. */
void jobs_fail_unrunnable(struct lcnd *d);

/* Starts queued jobs on free workers. */
void jobs_schedule(struct lcnd *d);

/* storeq callbacks: a commit landed; a commit failed (op was in it or
 * waits behind it). */
void jobs_on_store_done(void *ctx, struct store_op *op);
void jobs_on_store_failed(void *ctx, struct store_op *op);

/* api.c: a commit carrying j's changes failed: answers the clients parked
 * on j (a POST: 503, not created; a DELETE: 503, not cancelled, or 202
 * when the request to cancel has committed). */
void api_job_store_failed(struct lcnd *d, struct job *j);
/* worker pool callbacks. */
void jobs_on_report(void *ctx, struct worker *w, struct worker_report *rep);
void jobs_on_reaped(void *ctx, struct run *run);

/* Asks every running engine to stop and checkpoint (shutdown). */
void jobs_stop_all(struct lcnd *d);

/* Stops runs whose engine overran its deadline by DEADLINE_GRACE_NS and
 * abandons those that ignore the cancel for ENGINE_ABANDON_NS (the engines
 * enforce the budget themselves; this is the daemon's backstop). */
void jobs_enforce_deadlines(struct lcnd *d);

/* Deletes finished jobs beyond retain_jobs / older than retain_days. */
void jobs_retention(struct lcnd *d);

/* Admission of the solver fields against the engine's limits: 0, or
 * LCN_ETOOBIG with the reason in why when the replicas asked for cannot
 * be held (memory) or set up within the budget (common/engine.h). */
int jobs_admit_solver(struct lcnd *d, const struct job_request *req, char *why, size_t len);

/* 1 when a worker of the backend a job asked for exists (and is healthy). */
int jobs_backend_available(struct lcnd *d, int backend);

/* Drops a reference to a request (frees it at zero). */
void jobs_req_put(struct job_request *req);

/* Frees every job (at exit). */
void jobs_release(struct lcnd *d);

#endif
