#include "server/storeq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "server/log.h"
#include "util.h"

static void *store_thread(void *arg)
{
    struct storeq *q = arg;
    pthread_mutex_lock(&q->mu);
    for (;;) {
        while (!q->inflight && !q->quit)
            pthread_cond_wait(&q->cv, &q->mu);
        if (!q->inflight && q->quit)
            break;
        struct store_op *batch = q->inflight;
        pthread_mutex_unlock(&q->mu);
        char err[256] = "";
        int rc = store_apply(q->st, batch, err, sizeof err);
        pthread_mutex_lock(&q->mu);
        q->inflight = NULL;
        q->inflight_since_ns = 0;
        q->done = batch;
        q->done_rc = rc;
        snprintf(q->done_err, sizeof q->done_err, "%s", err);
        uv_async_send(&q->async);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

static void hand_over(struct storeq *q, struct store_op *batch)
{
    q->busy = 1;
    pthread_mutex_lock(&q->mu);
    q->inflight = batch;
    q->inflight_since_ns = lcn_now_ns();
    pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

static void kick(struct storeq *q)
{
    if (q->busy || !q->pend_head)
        return;
    struct store_op *batch = q->pend_head;
    for (struct store_op *op = batch; op; op = op->next)
        op->sealed = 1;
    q->pend_head = q->pend_tail = NULL;
    hand_over(q, batch);
}

static void on_retry(uv_timer_t *t)
{
    struct storeq *q = t->data;
    struct store_op *batch = q->retry_batch;
    q->retry_batch = NULL;
    if (batch)
        hand_over(q, batch);
    else
        q->busy = 0;
}

/* The owners of the failed batch and of every op queued behind it learn
 * of the failure now, not when (if ever) the store recovers. */
static void tell_failed(struct storeq *q, struct store_op *batch)
{
    if (!q->on_fail)
        return;
    for (struct store_op *op = batch; op; op = op->next)
        q->on_fail(q->ctx, op);
    for (struct store_op *op = q->pend_head; op; op = op->next)
        q->on_fail(q->ctx, op);
}

static void on_async(uv_async_t *a)
{
    struct storeq *q = a->data;
    pthread_mutex_lock(&q->mu);
    struct store_op *batch = q->done;
    int rc = q->done_rc;
    char err[256];
    snprintf(err, sizeof err, "%s", q->done_err);
    q->done = NULL;
    pthread_mutex_unlock(&q->mu);
    if (!batch)
        return;
    if (rc) {
        q->failures++;
        if (q->healthy)
            log_error("job store: commit failed, retrying every %lld ms: %s",
                      (long long)q->retry_ms, err);
        q->healthy = 0;
        for (struct store_op *op = batch; op; op = op->next)
            op->rc = 0;
        tell_failed(q, batch);
        q->retry_batch = batch;
        uv_timer_start(&q->retry, on_retry, (uint64_t)q->retry_ms, 0);
        return; /* busy stays set: order is kept */
    }
    if (!q->healthy)
        log_info("job store: commits succeed again");
    q->healthy = 1;
    q->batches++;
    q->busy = 0;
    while (batch) {
        struct store_op *next = batch->next;
        q->ops_committed++;
        if (q->on_done)
            q->on_done(q->ctx, batch);
        store_op_free(batch);
        batch = next;
    }
    kick(q);
}

int storeq_init(struct storeq *q, uv_loop_t *loop, struct store *st, storeq_done_cb on_done,
                storeq_fail_cb on_fail, void *ctx)
{
    *q = (struct storeq){.loop = loop,
                         .st = st,
                         .on_done = on_done,
                         .on_fail = on_fail,
                         .ctx = ctx,
                         .retry_ms = 1000,
                         .healthy = 1};
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
    uv_async_init(loop, &q->async, on_async);
    q->async.data = q;
    uv_timer_init(loop, &q->retry);
    q->retry.data = q;
    if (pthread_create(&q->th, NULL, store_thread, q)) {
        uv_close((uv_handle_t *)&q->async, NULL);
        uv_close((uv_handle_t *)&q->retry, NULL);
        return LCN_EIO;
    }
    q->started = 1;
    return 0;
}

void storeq_submit(struct storeq *q, struct store_op *op)
{
    op->next = NULL;
    if (q->pend_tail)
        q->pend_tail->next = op;
    else
        q->pend_head = op;
    q->pend_tail = op;
    kick(q);
}

int storeq_healthy(struct storeq *q)
{
    return q->st && q->healthy && storeq_inflight_age_ns(q) < STOREQ_STUCK_NS;
}

uint64_t storeq_commits(const struct storeq *q)
{
    return q->batches;
}

int storeq_idle(const struct storeq *q)
{
    return !q->busy && !q->pend_head;
}

int64_t storeq_inflight_age_ns(struct storeq *q)
{
    pthread_mutex_lock(&q->mu);
    int64_t since = q->inflight_since_ns;
    pthread_mutex_unlock(&q->mu);
    return since ? lcn_now_ns() - since : 0;
}

/* Ops dropped uncommitted at the close, owners included (storeq.h): a
 * shutdown forced past a failing store left them, and their owners, to
 * leak. */
static void free_list(struct store_op *op)
{
    while (op) {
        struct store_op *next = op->next;
        free(op->owner);
        store_op_free(op);
        op = next;
    }
}

void storeq_close(struct storeq *q)
{
    if (q->started) {
        pthread_mutex_lock(&q->mu);
        q->quit = 1;
        pthread_cond_signal(&q->cv);
        pthread_mutex_unlock(&q->mu);
        pthread_join(q->th, NULL);
        q->started = 0;
        uv_close((uv_handle_t *)&q->async, NULL);
        uv_close((uv_handle_t *)&q->retry, NULL);
    }
    free_list(q->done);
    free_list(q->retry_batch);
    free_list(q->pend_head);
    q->done = q->retry_batch = q->pend_head = q->pend_tail = NULL;
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->cv);
}
