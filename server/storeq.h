/*
 * storeq.h - the durable write path: group commit on a dedicated store
 * thread, completions on the loop.
 *
 * Concurrency design:
 *   - The loop thread owns the pending list. storeq_submit appends an op;
 *     the caller may keep modifying an op until it is sealed (op->sealed),
 *     which lets the job table coalesce one job's changes into one op.
 *   - At most one batch is in flight. When the store thread is idle and ops
 *     are pending, the loop seals the whole pending list and hands it over
 *     (mutex + condition variable). The store thread runs it as one
 *     transaction (store_apply), then moves it to the done slot and wakes
 *     the loop with uv_async_send.
 *   - On the loop, the async callback takes the done batch, calls on_done
 *     for every op in order (this is where a change becomes visible to
 *     clients: it is durable by then), frees the ops, and hands over the
 *     next batch. So commits are serial, in submission order, and every
 *     fsync covers everything that queued up during the previous one.
 *   - A failed batch is not lost: the store is marked unhealthy, and the
 *     same batch is retried after retry_ms (ahead of newer ops) until it
 *     commits. Before that, on_fail runs on the loop for every op of the
 *     failed batch and every pending op, so that their owners can answer
 *     the clients waiting for them instead of leaving them parked for as
 *     long as the store fails; an owner may rewrite its op then (the batch
 *     is back on the loop: no thread reads it), e.g. turn an insert it
 *     gives up into an id reservation (jobs.c).
 * Only storeq_close and storeq_inflight_age_ns may be called while a batch
 * is in flight from other contexts; everything else is loop-thread only.
 */
#ifndef LCN_SERVER_STOREQ_H
#define LCN_SERVER_STOREQ_H

#include <pthread.h>
#include <stdint.h>

#include <uv.h>

#include "server/store.h"

/* Called on the loop for every committed op, in order; the op is freed
 * after the call. */
typedef void (*storeq_done_cb)(void *ctx, struct store_op *op);
/* Called on the loop for every op of a failed batch and every pending op
 * (each failure again); the op stays queued, and is retried as it is when
 * the call returns. */
typedef void (*storeq_fail_cb)(void *ctx, struct store_op *op);

struct storeq {
    uv_loop_t *loop;
    struct store *st;
    storeq_done_cb on_done;
    storeq_fail_cb on_fail; /* may be NULL */
    void *ctx;
    int64_t retry_ms;

    /* loop thread only */
    struct store_op *pend_head, *pend_tail;
    int busy; /* a batch is with the store thread, or waiting for a retry */
    int healthy;
    uint64_t batches, ops_committed, failures;
    uv_async_t async;
    uv_timer_t retry;
    struct store_op *retry_batch;

    /* shared, under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct store_op *inflight; /* handed to the thread */
    struct store_op *done;     /* back from the thread */
    int done_rc;
    char done_err[256];
    int64_t inflight_since_ns; /* 0 when idle */
    int quit;
    pthread_t th;
    int started;
};

/* Starts the store thread. on_fail may be NULL. Returns 0 or a negative
 * LCN_E* code. */
int storeq_init(struct storeq *q, uv_loop_t *loop, struct store *st, storeq_done_cb on_done,
                storeq_fail_cb on_fail, void *ctx);

/* Queues op (ownership passes to the queue) and starts a batch when idle. */
void storeq_submit(struct storeq *q, struct store_op *op);

/* A batch with the store thread this long means a disk that hangs rather
 * than fails: the store counts as unhealthy from then on. */
#define STOREQ_STUCK_NS (30LL * 1000000000LL)

/* 1 while the store commits: no failed batch waits for a retry and none
 * has been in flight for STOREQ_STUCK_NS (loop thread). */
int storeq_healthy(struct storeq *q);

/* Batches committed since storeq_init. */
uint64_t storeq_commits(const struct storeq *q);

/* 1 when nothing is pending or in flight. */
int storeq_idle(const struct storeq *q);

/* Nanoseconds the current batch has been with the store thread (0 when
 * idle); any thread. */
int64_t storeq_inflight_age_ns(struct storeq *q);

/* Stops the thread (after the batch in flight, if any, finishes) and
 * closes the loop handles. Ops still pending are freed without being
 * committed, with their owners (plain allocations: free()), as after a
 * shutdown that stopped waiting for a store that cannot commit; otherwise
 * call it once storeq_idle() holds. */
void storeq_close(struct storeq *q);

#endif
