#include "worker.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "err.h"
#include "util.h"
#include "validate.h"

void run_free(struct run *r)
{
    if (!r)
        return;
    free(r->init);
    free(r->has_xy);
    free(r->tuning);
    if (r->rc == 0)
        engine_result_release(&r->res);
    free(r);
}

void worker_report_release(struct worker_report *rep)
{
    free(rep->ckpt);
    rep->ckpt = NULL;
}

/* Revalidates a layout with the oracle; returns 0 when it is valid and its
 * tuple equals the claim, else LCN_ECORRUPT with diag filled. */
static int revalidate(const struct lcn_graph *g, const struct lcn_pt *pts,
                      const struct lcn_obj *claim, char *diag, size_t len)
{
    struct lcn_report rep;
    int rc = validate_layout(g, pts, 1, &rep);
    if (rc == 0 && !rep.valid) {
        const struct lcn_violation *v = rep.listed ? &rep.list[0] : NULL;
        snprintf(diag, len, "engine published an invalid layout (%lld violations, first %s %d %d)",
                 (long long)rep.total, v ? validate_kind_name(v->kind) : "?", v ? v->a : -1,
                 v ? v->b : -1);
        rc = LCN_ECORRUPT;
    } else if (rc == 0 && obj_cmp(&rep.obj, claim) != 0) {
        char a[96], b[96];
        obj_format(claim, a, sizeof a);
        obj_format(&rep.obj, b, sizeof b);
        snprintf(diag, len, "engine claimed %s but the oracle counts %s", a, b);
        rc = LCN_ECORRUPT;
    } else if (rc) {
        snprintf(diag, len, "oracle recount failed: %s", lcn_strerror(rc));
    }
    report_release(&rep);
    return rc;
}

static void wake(struct worker *w)
{
    uv_async_send(&w->pool->async);
}

static void on_progress(void *ctx, const struct engine_event *ev)
{
    struct worker *w = ctx;
    pthread_mutex_lock(&w->mu);
    w->rep.has_improve = 1;
    w->rep.improve = *ev;
    w->rep.improves++;
    pthread_mutex_unlock(&w->mu);
    wake(w);
}

static void on_telemetry(void *ctx, const struct engine_telemetry *t)
{
    struct worker *w = ctx;
    pthread_mutex_lock(&w->mu);
    w->rep.has_telemetry = 1;
    w->rep.tel = *t;
    pthread_mutex_unlock(&w->mu);
    wake(w);
}

static void on_layout(void *ctx, const struct lcn_pt *layout, const struct lcn_obj *obj,
                      double elapsed_s)
{
    struct worker *w = ctx;
    struct run *run = w->run; /* set before the engine runs, stable during it */
    char diag[256];
    if (revalidate(run->g, layout, obj, diag, sizeof diag)) {
        /* never publish it; stop the run and fail the job */
        pthread_mutex_lock(&w->mu);
        if (!run->diag[0])
            snprintf(run->diag, sizeof run->diag, "checkpoint rejected: %.230s", diag);
        pthread_mutex_unlock(&w->mu);
        atomic_store(&run->cancel, 1);
        return;
    }
    size_t bytes = sizeof *layout * (size_t)run->g->n;
    struct lcn_pt *copy = xmalloc(bytes + 1);
    memcpy(copy, layout, bytes);
    pthread_mutex_lock(&w->mu);
    free(w->rep.ckpt);
    w->rep.ckpt = copy;
    w->rep.ckpt_obj = *obj;
    w->rep.ckpt_elapsed_s = elapsed_s;
    pthread_mutex_unlock(&w->mu);
    wake(w);
}

static void execute(struct worker *w, struct run *run)
{
    run->params.cancel = &run->cancel;
    run->params.on_progress = on_progress;
    run->params.on_telemetry = on_telemetry;
    run->params.on_layout = on_layout;
    run->params.ctx = w;
    run->params.init = run->init;
    run->params.has_xy = run->has_xy;
    run->params.tuning = run->tuning;

    pthread_mutex_lock(&w->mu);
    w->rep.started = 1;
    w->rep.started_ns = lcn_now_ns();
    w->in_engine = 1;
    pthread_mutex_unlock(&w->mu);
    wake(w);

    run->engine_start_ns = lcn_now_ns();
    struct engine_result res;
    memset(&res, 0, sizeof res);
    int rc = w->pool->engine(w->pool->engine_ctx, w, run->g, &run->params, &res);
    if (rc == 0) {
        char diag[256];
        int vr = run->diag[0] ? LCN_ECORRUPT
                              : revalidate(run->g, res.layout, &res.best, diag, sizeof diag);
        if (vr) {
            if (!run->diag[0])
                snprintf(run->diag, sizeof run->diag, "final layout rejected: %.230s", diag);
            engine_result_release(&res);
            rc = vr;
        }
    } else if (!run->diag[0]) {
        snprintf(run->diag, sizeof run->diag, "%s", lcn_strerror(rc));
    }
    pthread_mutex_lock(&w->mu);
    run->rc = rc;
    if (rc == 0)
        run->res = res;
    w->in_engine = 0;
    w->rep.finished = 1;
    pthread_mutex_unlock(&w->mu);
    wake(w);
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->quit && !w->todo)
            pthread_cond_wait(&w->cv, &w->mu);
        if (w->quit)
            break;
        w->todo = 0;
        struct run *run = w->run;
        pthread_mutex_unlock(&w->mu);
        execute(w, run);
        pthread_mutex_lock(&w->mu);
    }
    w->thread_started = 2; /* exited */
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

static void on_async(uv_async_t *a)
{
    struct worker_pool *p = a->data;
    for (int i = 0; i < p->n; i++) {
        struct worker *w = &p->w[i];
        struct worker_report rep;
        pthread_mutex_lock(&w->mu);
        rep = w->rep;
        rep.run = w->run;
        memset(&w->rep, 0, sizeof w->rep);
        if (rep.finished)
            w->run = NULL;
        pthread_mutex_unlock(&w->mu);
        if (!rep.run ||
            !(rep.started || rep.has_improve || rep.has_telemetry || rep.ckpt || rep.finished)) {
            worker_report_release(&rep);
            continue;
        }
        if (rep.finished)
            w->busy = 0;
        p->on_report(p->ctx, w, &rep);
        worker_report_release(&rep);
    }
}

int worker_pool_init(struct worker_pool *p, uv_loop_t *loop, const int *gpu_devices, int n_gpu,
                     int n_cpu, worker_engine_fn engine, void *engine_ctx,
                     worker_report_fn on_report, void *ctx)
{
    memset(p, 0, sizeof *p);
    p->n = n_gpu + n_cpu;
    p->w = xcalloc((size_t)(p->n ? p->n : 1), sizeof *p->w);
    p->engine = engine;
    p->engine_ctx = engine_ctx;
    p->on_report = on_report;
    p->ctx = ctx;
    uv_async_init(loop, &p->async, on_async);
    p->async.data = p;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    for (int i = 0; i < p->n; i++) {
        struct worker *w = &p->w[i];
        w->pool = p;
        w->index = i;
        w->kind = i < n_gpu ? WORKER_GPU : WORKER_CPU;
        w->device = i < n_gpu ? gpu_devices[i] : -1;
        w->healthy = 1;
        pthread_mutex_init(&w->mu, NULL);
        pthread_cond_init(&w->cv, &ca);
    }
    pthread_condattr_destroy(&ca);
    for (int i = 0; i < p->n; i++) {
        struct worker *w = &p->w[i];
        if (pthread_create(&w->th, NULL, worker_main, w))
            return LCN_EIO;
        w->thread_started = 1;
    }
    return 0;
}

void worker_start(struct worker *w, struct run *run)
{
    LCN_ASSERT(!w->busy);
    w->busy = 1;
    run->assigned_ns = lcn_now_ns();
    pthread_mutex_lock(&w->mu);
    w->run = run;
    w->todo = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

int worker_pool_in_engine(struct worker_pool *p)
{
    int n = 0;
    for (int i = 0; i < p->n; i++) {
        pthread_mutex_lock(&p->w[i].mu);
        n += p->w[i].in_engine;
        pthread_mutex_unlock(&p->w[i].mu);
    }
    return n;
}

int worker_pool_release(struct worker_pool *p, int64_t deadline_ns)
{
    int detached = 0;
    for (int i = 0; i < p->n; i++) {
        struct worker *w = &p->w[i];
        pthread_mutex_lock(&w->mu);
        w->quit = 1;
        pthread_cond_broadcast(&w->cv);
        pthread_mutex_unlock(&w->mu);
    }
    for (int i = 0; i < p->n; i++) {
        struct worker *w = &p->w[i];
        if (!w->thread_started)
            continue;
        pthread_mutex_lock(&w->mu);
        while (w->thread_started != 2) {
            int64_t now = lcn_now_ns();
            if (now >= deadline_ns)
                break;
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            int64_t wait = LCN_MIN(deadline_ns - now, 100000000LL);
            ts.tv_sec += (time_t)(wait / 1000000000LL);
            ts.tv_nsec += (long)(wait % 1000000000LL);
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&w->cv, &w->mu, &ts);
        }
        int exited = w->thread_started == 2;
        pthread_mutex_unlock(&w->mu);
        if (exited) {
            pthread_join(w->th, NULL);
        } else {
            pthread_detach(w->th);
            detached++;
        }
    }
    uv_close((uv_handle_t *)&p->async, NULL);
    if (!detached) {
        for (int i = 0; i < p->n; i++) {
            pthread_mutex_destroy(&p->w[i].mu);
            pthread_cond_destroy(&p->w[i].cv);
            free(p->w[i].rep.ckpt);
        }
        free(p->w);
        p->w = NULL;
    }
    return detached;
}
