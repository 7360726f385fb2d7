/*
 * cluster.h - several daemons on one PostgreSQL job store (issue 20): the
 * cluster thread, which does everything the shared queue asks of the
 * database off the loop, and hands the results to the job table.
 *
 * Concurrency design:
 *   - The thread owns its own connection (store_pg_queue.h) and blocks on
 *     it (queries, reconnections): the loop never waits for the database
 *     on the queue's account. It also reconnects the store's read
 *     connection (store_heal), which the loop's reads no longer do.
 *   - Each round (at most poll_ms apart; at once when a job is queued or
 *     a DELETE comes through any daemon: LISTEN/NOTIFY, or when the loop
 *     asks for something) it: renews the leases of the claims this daemon
 *     holds (every lease/5); reserves a block of ids when the loop asked;
 *     reads every jobs row written since the previous round; claims the
 *     queued jobs with a DELETE pending, and as many runnable ones as the
 *     loop has idle workers for, and reads what they need to run (request,
 *     checkpoint, last event seq) and parses the request.
 *   - Results go to the loop as lists under mu and a uv_async; on the
 *     loop the callbacks run in the order rows, claims, ids, so a claim is
 *     never followed by an older row of its job.
 *   - The loop tells the thread what it wants (idle workers, ids, claims it
 *     gave up) under mu and wakes it through a pipe.
 *   - Lease safety is judged on the loop, by time alone: once no renewal
 *     has succeeded for give_up_ms (3/4 of the lease), the lost callback
 *     stops every run this daemon holds, before any other daemon may claim
 *     them (the lease counts from the start of the last renewal that
 *     succeeded). A thread stuck in a query does not delay that.
 */
#ifndef LCN_SERVER_CLUSTER_H
#define LCN_SERVER_CLUSTER_H

#include <pthread.h>
#include <stdint.h>

#include <uv.h>

#include "job.h"
#include "server/store.h"

struct pg_queue;

/* One jobs row, its status parsed on the cluster thread. */
struct cluster_job {
    int64_t id;
    int64_t claim; /* the row's claim (0: none) */
    int cancel;    /* a DELETE through some daemon is pending */
    int status_ok; /* st holds the parsed status */
    struct job_status st;
    /* claimed by this daemon (the claimed callback) */
    struct job_request *req; /* parsed request (the callee may take it: set NULL), or NULL */
    char why[256];           /* why req is NULL */
    int retry; /* req is NULL because a statement failed: give the claim back, not the job up */
    struct store_checkpoint ck;
    int have_ck; /* the callee may take ck.layout (set NULL) */
    int64_t last_seq;
    struct cluster_job *next;
};

/* Loop-thread callbacks; each list is freed after its call. */
struct cluster_callbacks {
    void (*rows)(void *ctx, struct cluster_job *list);    /* rows written since the last round */
    void (*claimed)(void *ctx, struct cluster_job *list); /* jobs this daemon now holds */
    void (*ids)(void *ctx, int64_t first, int64_t n);     /* a block of ids to give out */
    void (*lost)(void *ctx);                              /* leases not renewed: stop every run */
    void *ctx;
    /* rounds up to this one ended, after the other callbacks (its own ctx) */
    void (*synced)(void *sctx, uint64_t round);
    void *sctx;
};

struct cluster_config {
    const char *url;
    const char *owner; /* this daemon's name in the owner column */
    int64_t lease_ms;
    int64_t poll_ms;
    int64_t id_block;
};

struct cluster {
    uv_loop_t *loop;
    struct store *store;
    struct cluster_callbacks cb;
    struct cluster_config cfg;
    struct pg_queue *q; /* the thread's */
    int64_t give_up_ns;

    /* loop thread only */
    uv_async_t async;
    uv_timer_t lease_timer;
    int started;

    /* shared, under mu */
    pthread_mutex_t mu;
    int quit;
    int want_cpu, want_gpu; /* idle workers the loop has for claims */
    int devices;            /* devices a run could start on now: claims need at most this many */
    int healthy_devices;    /* healthy devices: an older job needing <= this many holds newer GPU jobs */
    int want_ids;
    int64_t *held; /* claims this daemon holds (renewed) */
    size_t n_held, cap_held;
    int64_t renewed_ns; /* start of the last renewal that covered every held claim */
    int healthy;
    char why[300];
    struct cluster_job *rows, *rows_tail, *claims, *claims_tail;
    int64_t ids_first, ids_n;
    uint64_t rounds;
    uint64_t begun; /* rounds begun (a round's snapshot is taken after it counts) */
    uint64_t ended; /* the last round that ended (whether it reached the database or not) */
    int want_sync;     /* a round is wanted at once (cluster_sync) */

    pthread_t th;
    int wake[2]; /* pipe: the loop wakes the thread */
};

/* Connects (blocking: at start-up, before the daemon serves), gives back
 * the claims a previous life of this daemon (the same owner name) held,
 * and starts the thread. Returns 0, or LCN_ESTORE with the reason in err. */
int cluster_start(struct cluster *c, uv_loop_t *loop, struct store *st,
                  const struct cluster_config *cfg, const struct cluster_callbacks *cb, char *err,
                  size_t errlen);

/* The loop has this many idle workers of each kind (claims follow), can
 * start a run across this many devices now (a job whose run needs more is
 * left to another daemon) and has this many healthy ones (newer GPU jobs
 * wait behind an older one it could run on them: pg_queue_claim); -1, -1:
 * claim nothing any more (shutdown). */
void cluster_want(struct cluster *c, int cpu_idle, int gpu_idle, int devices, int healthy);
/* The loop's block of ids runs low. */
void cluster_want_ids(struct cluster *c);
/* A round that begins after this call: its number (the synced callback
 * reports it once it ended, with the rows it read); the thread is woken
 * for it. Every commit made before the call is seen by that round. */
uint64_t cluster_sync(struct cluster *c);
/* A claim the loop held is over (its job ended, was released or lost). */
void cluster_drop(struct cluster *c, int64_t claim);

/* 1 when the last round reached the database; else 0 with the reason. */
int cluster_healthy(struct cluster *c, char *why, size_t len);

/* Stops the thread and closes the loop handles (then run the loop). */
void cluster_stop(struct cluster *c);

#endif
