#include "server/worker.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "err.h"
#include "stop.h"
#include "util.h"
#include "validate.h"

void run_free(struct run *r)
{
    if (!r)
        return;
    free(r->init);
    free(r->has_xy);
    free(r->tuning);
    free(r->valid);
    if (r->rc == 0)
        engine_result_release(&r->res);
    free(r);
}

void worker_report_release(struct worker_report *rep)
{
    free(rep->ckpt);
    rep->ckpt = NULL;
}

/* How long past the deadline (or past the engine's return, for a cancelled
 * run) the worker's own oracle may run before the last checkpoint is taken
 * instead: the engine keeps time for this pass before the deadline. One
 * absolute limit for every pass of a run, so the graces never add up. */
#define REVALIDATE_GRACE_NS 50000000LL

static void wake(struct worker_thread *t)
{
    uv_async_send(&t->pool->async);
}

static void on_progress(void *ctx, const struct engine_event *ev)
{
    struct worker_thread *t = ctx;
    pthread_mutex_lock(&t->mu);
    t->rep.has_improve = 1;
    t->rep.improve = *ev;
    t->rep.improves++;
    pthread_mutex_unlock(&t->mu);
    wake(t);
}

static void on_telemetry(void *ctx, const struct engine_telemetry *tel)
{
    struct worker_thread *t = ctx;
    pthread_mutex_lock(&t->mu);
    t->rep.has_telemetry = 1;
    t->rep.tel = *tel;
    pthread_mutex_unlock(&t->mu);
    wake(t);
}

static void keep_valid(struct run *run, const struct lcn_pt *layout, const struct lcn_obj *obj)
{
    size_t bytes = sizeof *layout * (size_t)run->g->n;
    if (!run->valid)
        run->valid = xmalloc(bytes + 1);
    memcpy(run->valid, layout, bytes);
    run->valid_obj = *obj;
}

static int same_as_valid(const struct run *run, const struct lcn_pt *layout,
                         const struct lcn_obj *obj)
{
    return run->valid && obj_cmp(obj, &run->valid_obj) == 0 &&
           memcmp(layout, run->valid, sizeof *layout * (size_t)run->g->n) == 0;
}

static void on_layout(void *ctx, const struct lcn_pt *layout, const struct lcn_obj *obj,
                      double elapsed_s)
{
    struct worker_thread *t = ctx;
    struct run *run = t->run; /* set before the engine runs, stable during it */
    char diag[256];
    /* a checkpoint that cannot be checked before the stop is dropped */
    struct lcn_stop stop = {run->params.deadline_ns + REVALIDATE_GRACE_NS, &run->cancel, 0};
    int rc = same_as_valid(run, layout, obj) ? 0 : validate_claim(run->g, layout, obj, &stop, NULL, diag,
                                                              sizeof diag);
    if (rc == LCN_EDEADLINE || rc == LCN_ECANCELLED)
        return;
    if (rc) {
        /* never publish it; stop the run and fail the job */
        pthread_mutex_lock(&t->mu);
        if (!run->diag[0])
            snprintf(run->diag, sizeof run->diag, "checkpoint rejected: %.230s", diag);
        pthread_mutex_unlock(&t->mu);
        atomic_store(&run->cancel, 1);
        return;
    }
    keep_valid(run, layout, obj);
    size_t bytes = sizeof *layout * (size_t)run->g->n;
    struct lcn_pt *copy = xmalloc(bytes + 1);
    memcpy(copy, layout, bytes);
    pthread_mutex_lock(&t->mu);
    free(t->rep.ckpt);
    t->rep.ckpt = copy;
    t->rep.ckpt_obj = *obj;
    t->rep.ckpt_elapsed_s = elapsed_s;
    pthread_mutex_unlock(&t->mu);
    wake(t);
}

/*
 * The engine's final layout, revalidated; when the oracle cannot finish in
 * time (REVALIDATE_GRACE_NS past the deadline, or past the engine's return
 * for a cancelled run), the last checkpoint this worker validated is the
 * result instead, so the job ends on time with a layout it can vouch for.
 */
static int finish_result(struct run *run, struct engine_result *res)
{
    if (same_as_valid(run, res->layout, &res->best))
        return 0;
    char diag[256];
    /* a cancelled run (a DELETE, or the daemon's backstop for an engine
     * that overran) gets the grace from the engine's return */
    int64_t base = atomic_load(&run->cancel) ? lcn_now_ns() : run->params.deadline_ns;
    struct lcn_stop stop = {base + REVALIDATE_GRACE_NS, NULL, 0};
    int rc = validate_claim(run->g, res->layout, &res->best, &stop, NULL, diag, sizeof diag);
    if (rc == LCN_EDEADLINE && run->valid) {
        size_t bytes = sizeof(struct lcn_pt) * (size_t)run->g->n;
        memcpy(res->layout, run->valid, bytes);
        res->best = run->valid_obj;
        run->from_checkpoint = 1;
        return 0;
    }
    if (rc == LCN_EDEADLINE)
        snprintf(run->diag, sizeof run->diag,
                 "the final layout could not be validated within the budget");
    else if (rc)
        snprintf(run->diag, sizeof run->diag, "final layout rejected: %.230s", diag);
    return rc;
}

static void execute(struct worker_thread *t, struct run *run)
{
    run->params.cancel = &run->cancel;
    run->params.on_progress = on_progress;
    run->params.on_telemetry = on_telemetry;
    run->params.on_layout = on_layout;
    run->params.ctx = t;
    run->params.init = run->init;
    run->params.has_xy = run->has_xy;
    run->params.tuning = run->tuning;
    run->params.devices = run->n_devices ? run->devices : NULL;
    run->params.caller_validations = 1; /* finish_result */

    pthread_mutex_lock(&t->mu);
    t->rep.started = 1;
    t->rep.started_ns = lcn_now_ns();
    t->in_engine = 1;
    pthread_mutex_unlock(&t->mu);
    wake(t);

    run->engine_start_ns = lcn_now_ns();
    struct engine_result res;
    memset(&res, 0, sizeof res);
    int rc = t->pool->engine(t->pool->engine_ctx, t->w, run->g, &run->params, &res);
    if (rc == 0) {
        int vr = run->diag[0] ? LCN_ECORRUPT : finish_result(run, &res);
        if (vr) {
            engine_result_release(&res);
            rc = vr;
        }
    } else if (!run->diag[0]) {
        if (rc == LCN_EDEADLINE)
            snprintf(run->diag, sizeof run->diag,
                     "the budget ran out before a first layout of this graph was validated");
        else if (rc == LCN_ECANCELLED)
            snprintf(run->diag, sizeof run->diag,
                     "stopped before a first layout of this graph was validated");
        else
            snprintf(run->diag, sizeof run->diag, "%s", lcn_strerror(rc));
    }
    pthread_mutex_lock(&t->mu);
    run->rc = rc;
    if (rc == 0)
        run->res = res;
    t->in_engine = 0;
    t->rep.finished = 1;
    pthread_mutex_unlock(&t->mu);
    wake(t);
}

static void *worker_main(void *arg)
{
    struct worker_thread *t = arg;
    pthread_mutex_lock(&t->mu);
    for (;;) {
        while (!t->quit && !t->todo && !t->abandoned)
            pthread_cond_wait(&t->cv, &t->mu);
        if (t->quit || t->abandoned)
            break;
        t->todo = 0;
        struct run *run = t->run;
        pthread_mutex_unlock(&t->mu);
        execute(t, run);
        pthread_mutex_lock(&t->mu);
    }
    t->thread_started = 2; /* exited */
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
    if (t->abandoned)
        wake(t); /* the loop joins it */
    return NULL;
}

static struct worker_thread *thread_new(struct worker_pool *p, struct worker *w)
{
    struct worker_thread *t = xcalloc(1, sizeof *t);
    t->pool = p;
    t->w = w;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, &ca);
    pthread_condattr_destroy(&ca);
    return t;
}

static void thread_free(struct worker_thread *t)
{
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
    free(t->rep.ckpt);
    free(t);
}

static int thread_start(struct worker_thread *t)
{
    if (pthread_create(&t->th, NULL, worker_main, t))
        return LCN_EIO;
    t->thread_started = 1;
    return 0;
}

/* The workers run holds are free again (w ran it). */
static void release_group(struct worker *w, struct run *run)
{
    w->busy = 0;
    for (int i = 1; i < run->n_devices; i++)
        if (run->group[i])
            run->group[i]->busy = 0;
}

/* Joins the zombies whose engine has returned and hands their runs back. */
static void reap(struct worker_pool *p)
{
    struct worker_thread **link = &p->zombies;
    while (*link) {
        struct worker_thread *t = *link;
        pthread_mutex_lock(&t->mu);
        int exited = t->thread_started == 2;
        struct run *run = t->run;
        pthread_mutex_unlock(&t->mu);
        if (!exited) {
            link = &t->next_zombie;
            continue;
        }
        *link = t->next_zombie;
        p->n_zombies--;
        pthread_join(t->th, NULL);
        /* the other devices of its run were kept busy until now */
        for (int i = 1; run && i < run->n_devices; i++)
            if (run->group[i])
                run->group[i]->busy = 0;
        if (p->on_reaped)
            p->on_reaped(p->ctx, run);
        thread_free(t);
    }
}

static void on_async(uv_async_t *a)
{
    struct worker_pool *p = a->data;
    for (int i = 0; i < p->n; i++) {
        struct worker *w = &p->w[i];
        struct worker_thread *t = w->t;
        struct worker_report rep;
        pthread_mutex_lock(&t->mu);
        rep = t->rep;
        rep.run = t->run;
        memset(&t->rep, 0, sizeof t->rep);
        if (rep.finished)
            t->run = NULL;
        pthread_mutex_unlock(&t->mu);
        if (!rep.run ||
            !(rep.started || rep.has_improve || rep.has_telemetry || rep.ckpt || rep.finished)) {
            worker_report_release(&rep);
            continue;
        }
        if (rep.finished)
            release_group(w, rep.run);
        p->on_report(p->ctx, w, &rep);
        worker_report_release(&rep);
    }
    if (p->zombies)
        reap(p);
}

int worker_pool_init(struct worker_pool *p, uv_loop_t *loop, const int *gpu_devices, int n_gpu,
                     int n_cpu, worker_engine_fn engine, void *engine_ctx,
                     worker_report_fn on_report, worker_reaped_fn on_reaped, void *ctx)
{
    memset(p, 0, sizeof *p);
    p->n = n_gpu + n_cpu;
    p->w = xcalloc((size_t)(p->n ? p->n : 1), sizeof *p->w);
    p->engine = engine;
    p->engine_ctx = engine_ctx;
    p->on_report = on_report;
    p->on_reaped = on_reaped;
    p->ctx = ctx;
    uv_async_init(loop, &p->async, on_async);
    p->async.data = p;
    for (int i = 0; i < p->n; i++) {
        struct worker *w = &p->w[i];
        w->pool = p;
        w->index = i;
        w->kind = i < n_gpu ? WORKER_GPU : WORKER_CPU;
        w->device = i < n_gpu ? gpu_devices[i] : -1;
        w->healthy = 1;
        w->t = thread_new(p, w);
    }
    for (int i = 0; i < p->n; i++)
        if (thread_start(p->w[i].t))
            return LCN_EIO;
    return 0;
}

/* Marks w busy and hands run to its thread: run's inputs, its devices
 * included, are final from here on (the thread reads them at once). */
static void hand_over(struct worker *w, struct run *run)
{
    LCN_ASSERT(!w->busy);
    w->busy = 1;
    run->assigned_ns = lcn_now_ns();
    struct worker_thread *t = w->t;
    pthread_mutex_lock(&t->mu);
    t->run = run;
    t->todo = 1;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

void worker_start(struct worker *w, struct run *run)
{
    run->n_devices = w->kind == WORKER_GPU ? 1 : 0;
    run->devices[0] = w->device;
    run->group[0] = w;
    hand_over(w, run);
}

void worker_start_group(struct worker *const *ws, int n, struct run *run)
{
    LCN_ASSERT(n >= 1 && n <= ENGINE_MAX_DEVICES);
    run->n_devices = n;
    for (int i = 0; i < n; i++) {
        LCN_ASSERT(!ws[i]->busy && ws[i]->kind == WORKER_GPU);
        run->devices[i] = ws[i]->device;
        run->group[i] = ws[i];
    }
    for (int i = 1; i < n; i++)
        ws[i]->busy = 1;
    hand_over(ws[0], run);
}

int worker_abandon(struct worker *w)
{
    struct worker_pool *p = w->pool;
    struct worker_thread *t = w->t;
    pthread_mutex_lock(&t->mu);
    t->abandoned = 1;
    worker_report_release(&t->rep);
    memset(&t->rep, 0, sizeof t->rep);
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
    t->next_zombie = p->zombies;
    p->zombies = t;
    p->n_zombies++;
    p->abandoned_total++;
    w->busy = 0;
    w->t = thread_new(p, w);
    int rc = thread_start(w->t);
    if (rc)
        w->healthy = 0;
    /* it may have returned between the caller's look and now */
    uv_async_send(&p->async);
    return rc;
}

void worker_fail(struct worker *w)
{
    w->healthy = 0;
    if (w->kind == WORKER_GPU)
        worker_fail_device(w->pool, w->device);
}

int worker_fail_device(struct worker_pool *p, int dev)
{
    int n = 0;
    for (int i = 0; i < p->n; i++) {
        struct worker *w = &p->w[i];
        if (w->kind != WORKER_GPU || w->device != dev)
            continue;
        n += w->healthy;
        w->healthy = 0;
        p->gpu_failed = 1;
    }
    return n;
}

int worker_pool_devices(const struct worker_pool *p)
{
    int n = 0;
    for (int i = 0; i < p->n; i++)
        if (p->w[i].kind == WORKER_GPU && p->w[i].device + 1 > n)
            n = p->w[i].device + 1;
    return n;
}

void worker_pool_device_counts(const struct worker_pool *p, int dev, struct worker_counts *out)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < p->n; i++) {
        const struct worker *w = &p->w[i];
        if (w->kind != WORKER_GPU || w->device != dev)
            continue;
        out->all++;
        out->healthy += w->healthy;
        out->busy += w->busy;
    }
}

int worker_pool_healthy_devices(const struct worker_pool *p)
{
    int n = 0, devs = worker_pool_devices(p);
    for (int d = 0; d < devs; d++) {
        struct worker_counts c;
        worker_pool_device_counts(p, d, &c);
        n += c.healthy > 0;
    }
    return n;
}

/* The idle healthy GPU worker of device dev with the lowest index, or NULL. */
static struct worker *idle_on(const struct worker_pool *p, int dev)
{
    for (int i = 0; i < p->n; i++) {
        struct worker *w = &p->w[i];
        if (w->kind == WORKER_GPU && w->device == dev && w->healthy && !w->busy)
            return w;
    }
    return NULL;
}

int worker_pool_idle_devices(const struct worker_pool *p)
{
    int n = 0, devs = worker_pool_devices(p);
    for (int d = 0; d < devs; d++)
        n += idle_on(p, d) != NULL;
    return n;
}

int worker_pool_idle_group(struct worker_pool *p, int n, struct worker **out)
{
    int devs = worker_pool_devices(p), got = 0;
    struct worker *pick[ENGINE_MAX_DEVICES];
    if (n < 1 || n > ENGINE_MAX_DEVICES)
        return -1;
    /* devices by their busy count, then index: a selection, devices are few */
    unsigned char used[1024] = {0};
    while (got < n) {
        int best = -1, best_busy = 0;
        for (int d = 0; d < devs && d < (int)sizeof used; d++) {
            if (used[d] || !idle_on(p, d))
                continue;
            struct worker_counts c;
            worker_pool_device_counts(p, d, &c);
            if (best < 0 || c.busy < best_busy) {
                best = d;
                best_busy = c.busy;
            }
        }
        if (best < 0)
            return -1;
        used[best] = 1;
        pick[got++] = idle_on(p, best);
    }
    memcpy(out, pick, sizeof *out * (size_t)n);
    return 0;
}

int worker_pool_gpu_failed(const struct worker_pool *p)
{
    return p->gpu_failed;
}

void worker_pool_counts(const struct worker_pool *p, enum worker_kind kind,
                        struct worker_counts *out)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < p->n; i++) {
        const struct worker *w = &p->w[i];
        if (w->kind != kind)
            continue;
        out->all++;
        out->healthy += w->healthy;
        out->busy += w->busy;
    }
}

struct worker *worker_pool_idle(struct worker_pool *p, enum worker_kind kind)
{
    struct worker *w1;
    if (kind == WORKER_GPU)
        return worker_pool_idle_group(p, 1, &w1) == 0 ? w1 : NULL;
    for (int i = 0; i < p->n; i++) {
        struct worker *w = &p->w[i];
        if (w->kind == kind && w->healthy && !w->busy)
            return w;
    }
    return NULL;
}

int worker_pool_in_engine(struct worker_pool *p)
{
    int n = 0;
    for (int i = 0; i < p->n; i++) {
        pthread_mutex_lock(&p->w[i].t->mu);
        n += p->w[i].t->in_engine;
        pthread_mutex_unlock(&p->w[i].t->mu);
    }
    return n;
}

/* How long past the deadline a thread outside any engine call may take to
 * see its quit flag and exit: microseconds, but it has to be scheduled. */
#define QUIT_GRACE_NS (1000000000LL)

/* Waits until thread t exited or deadline_ns passed; returns 1 if it exited.
 * A thread not in an engine call exits as soon as it runs, so it is waited
 * for past the deadline too (up to QUIT_GRACE_NS): a shutdown forced at
 * its deadline (a store that cannot commit) once took every idle worker,
 * not yet woken, for an engine left behind and exited with status 4. */
static int wait_exit(struct worker_thread *t, int64_t deadline_ns)
{
    const int64_t grace_ns = LCN_MAX(deadline_ns, lcn_now_ns()) + QUIT_GRACE_NS;
    pthread_mutex_lock(&t->mu);
    while (t->thread_started != 2) {
        int64_t now = lcn_now_ns();
        if (now >= deadline_ns) {
            if (t->in_engine || now >= grace_ns)
                break;
            deadline_ns = grace_ns; /* not in an engine: it is about to exit */
        }
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int64_t wait = LCN_MIN(deadline_ns - now, 100000000LL);
        ts.tv_sec += (time_t)(wait / 1000000000LL);
        ts.tv_nsec += (long)(wait % 1000000000LL);
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&t->cv, &t->mu, &ts);
    }
    int exited = t->thread_started == 2;
    pthread_mutex_unlock(&t->mu);
    return exited;
}

int worker_pool_release(struct worker_pool *p, int64_t deadline_ns)
{
    int detached = 0;
    for (int i = 0; i < p->n; i++) {
        struct worker_thread *t = p->w[i].t;
        pthread_mutex_lock(&t->mu);
        t->quit = 1;
        pthread_cond_broadcast(&t->cv);
        pthread_mutex_unlock(&t->mu);
    }
    for (int i = 0; i < p->n; i++) {
        struct worker_thread *t = p->w[i].t;
        if (!t->thread_started)
            continue;
        if (wait_exit(t, deadline_ns)) {
            pthread_join(t->th, NULL);
        } else {
            pthread_detach(t->th);
            detached++;
        }
    }
    /* zombies: joined if their engine has returned by now, else left */
    for (struct worker_thread *t = p->zombies; t; t = t->next_zombie) {
        if (wait_exit(t, deadline_ns))
            pthread_join(t->th, NULL);
        else {
            pthread_detach(t->th);
            detached++;
        }
    }
    uv_close((uv_handle_t *)&p->async, NULL);
    if (!detached) {
        for (int i = 0; i < p->n; i++)
            thread_free(p->w[i].t);
        while (p->zombies) {
            struct worker_thread *t = p->zombies;
            p->zombies = t->next_zombie;
            if (p->on_reaped)
                p->on_reaped(p->ctx, t->run);
            thread_free(t);
        }
        free(p->w);
        p->w = NULL;
    }
    return detached;
}
