/*
 * jobs.c - the job table, the queue, the scheduler, and the translation of
 * worker reports into durable state changes. Loop thread only; see jobs.h
 * for the pub/cur scheme and the hooks through which the table reports to
 * the module that wired it (it calls nothing above itself), and lcnd.h for
 * the threads around it.
 */
#include "server/jobs.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "err.h"
#include "gpu_knobs.h"
#include "server/log.h"
#include "util.h"

/* What an op carries besides the SQL: the status snapshot it makes visible. */
struct jobop {
    struct job *job;
    int has_snap;
    struct job_status snap;
    int cancel; /* a DELETE's cancel_requested: acted on once it commits (jobs_cancel) */
};

/* ------------------------------------------------------------ hooks */

static void hook_changed(struct jobs *t, struct job *j)
{
    if (t->hooks.changed)
        t->hooks.changed(t->hooks.ctx, j);
}

static void hook_removed(struct jobs *t, struct job *j)
{
    if (t->hooks.removed)
        t->hooks.removed(t->hooks.ctx, j);
}

static void hook_store_failed(struct jobs *t, struct job *j)
{
    if (t->hooks.store_failed)
        t->hooks.store_failed(t->hooks.ctx, j);
}

static void hook_counts(struct jobs *t)
{
    if (t->hooks.counts)
        t->hooks.counts(t->hooks.pctx);
}

static void hook_idle(struct jobs *t)
{
    if (t->hooks.idle)
        t->hooks.idle(t->hooks.pctx);
}

static void hook_fatal(struct jobs *t, int exit_code, const char *why)
{
    if (t->hooks.fatal)
        t->hooks.fatal(t->hooks.pctx, exit_code, why);
}

/*
 * The bucket bounds (seconds) of the job timings (jobs.h, docs/API.md).
 * A queue wait is a few ms on an idle daemon (the insert's commit and a
 * worker's wake-up) and as long as the jobs ahead run on a busy one; a run
 * or a time to target is ms (a tiny graph, a target met at once, a cancel)
 * up to the budget, which max_budget_s allows up to hours (a year, even).
 * So: 1-2.5-5 steps per decade from 1 ms to 10 s, where interactive use
 * and the benchmarks' short budgets fall, then the minute and hour marks
 * an operator reads budgets in, up to a day; beyond that, +Inf. One table
 * for the three, so that they compare bucket by bucket.
 */
static const double job_seconds[] = {
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,  0.25, 0.5,  1,     2.5,   5,
    10,    30,     60,    120,  300,   600,  1800, 3600, 7200, 14400, 28800, 86400,
};

void jobs_init(struct jobs *t, const struct lcnd_config *cfg, struct store *store,
               struct storeq *sq, struct worker_pool *pool, jobs_gpu_fits_fn gpu_fits,
               void *gpu_ctx, const struct jobs_hooks *hooks)
{
    memset(t, 0, sizeof *t);
    t->cfg = cfg;
    t->store = store;
    t->sq = sq;
    t->pool = pool;
    t->gpu_fits = gpu_fits;
    t->gpu_ctx = gpu_ctx;
    if (hooks)
        t->hooks = *hooks;
    histogram_init(&t->timings.queue_wait, job_seconds, LCN_ARRAY_LEN(job_seconds));
    histogram_init(&t->timings.run, job_seconds, LCN_ARRAY_LEN(job_seconds));
    histogram_init(&t->timings.time_to_target, job_seconds, LCN_ARRAY_LEN(job_seconds));
}

void jobs_set_device_ok(struct jobs *t, jobs_device_ok_fn ok)
{
    t->device_ok = ok;
}

void jobs_device_stats(const struct jobs *t, int dev, struct jobs_device_stats *out)
{
    memset(out, 0, sizeof *out);
    if (dev >= 0 && dev < ENGINE_MAX_DEVICES)
        *out = t->dev[dev];
}

int jobs_gpus_needed(const struct jobs *t, const struct job_request *req)
{
    if (req->gpus == JOB_GPUS_ALL)
        return worker_pool_healthy_devices(t->pool);
    return req->gpus > 1 ? req->gpus : 1;
}

const struct jobs_timings *jobs_timings(const struct jobs *t)
{
    return &t->timings;
}

/* ------------------------------------------------------------ the table */

static size_t lower_bound(const struct jobs *t, int64_t id)
{
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (t->v[mid]->id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void table_add(struct jobs *t, struct job *j)
{
    size_t at = lower_bound(t, j->id);
    xgrow((void **)&t->v, sizeof *t->v, &t->cap, t->n + 1);
    memmove(t->v + at + 1, t->v + at, (t->n - at) * sizeof *t->v);
    t->v[at] = j;
    t->n++;
}

static void table_del(struct jobs *t, struct job *j)
{
    size_t at = lower_bound(t, j->id);
    if (at < t->n && t->v[at] == j) {
        memmove(t->v + at, t->v + at + 1, (t->n - at - 1) * sizeof *t->v);
        t->n--;
    }
}

static struct job *fetch_mirror(struct jobs *t, int64_t id);

struct job *jobs_find(struct jobs *t, int64_t id)
{
    size_t at = lower_bound(t, id);
    if (at < t->n && t->v[at]->id == id && t->v[at]->durable)
        return t->v[at];
    /* shared queue: committed through another daemon since this one's
     * last round (a client that POSTs through one daemon and asks another
     * at once) */
    return t->cl ? fetch_mirror(t, id) : NULL;
}

struct job *jobs_before(struct jobs *t, int64_t before)
{
    for (size_t at = lower_bound(t, before); at-- > 0;)
        if (t->v[at]->durable)
            return t->v[at];
    return NULL;
}

void jobs_stats(const struct jobs *t, struct jobs_stats *out)
{
    memset(out, 0, sizeof *out);
    for (const struct job *j = t->qhead; j; j = j->qnext)
        out->queued++;
    out->waiting = t->waiting;
    out->running = t->running;
    memcpy(out->by_state, t->by_state, sizeof out->by_state);
    out->submitted = t->submitted;
    out->evaluations = t->evaluations;
}

static void queue_push(struct jobs *t, struct job *j, int front)
{
    LCN_ASSERT(!j->in_queue);
    j->in_queue = 1;
    if (front)
        LCN_QUEUE_PUSH_FRONT(t->qhead, t->qtail, j, qprev, qnext);
    else
        LCN_QUEUE_PUSH_BACK(t->qhead, t->qtail, j, qprev, qnext);
}

static void queue_del(struct jobs *t, struct job *j)
{
    LCN_QUEUE_REMOVE(t->qhead, t->qtail, j, qprev, qnext, j->in_queue);
}

static void *release_main(void *arg)
{
    struct job_request *req = arg;
    job_request_release(req);
    free(req);
    return NULL;
}

/* Releasing a parsed document of hundreds of thousands of nodes and edges
 * (millions of jansson values) takes about 100 ms: done on a thread of its
 * own, so the loop answers the DELETE or the poll waiting on this job. */
#define RELEASE_ASIDE_ITEMS 100000

void jobs_req_put(struct job_request *req)
{
    if (req && --req->refs == 0) {
        pthread_t th;
        pthread_attr_t at;
        if ((int64_t)req->doc.g.n + req->doc.g.m >= RELEASE_ASIDE_ITEMS &&
            pthread_attr_init(&at) == 0) {
            pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
            int rc = pthread_create(&th, &at, release_main, req);
            pthread_attr_destroy(&at);
            if (rc == 0)
                return;
        }
        job_request_release(req);
        free(req);
    }
}

struct job_request *jobs_req_hold(struct job *j)
{
    if (j->req)
        j->req->refs++;
    return j->req;
}

/* Frees a run and the request reference that kept its graph alive. */
static void run_release(struct run *run)
{
    if (!run)
        return;
    jobs_req_put(run->hold);
    run_free(run);
}

void jobs_on_reaped(void *ctx, struct run *run)
{
    log_job(LOG_LEVEL_WARN, run->job_id,
            "the abandoned engine returned after all; its result is discarded");
    run_release(run);
}

static void job_free(struct job *j)
{
    jobs_req_put(j->req);
    if (j->run)
        run_release(j->run);
    free(j->ckpt);
    free(j->resume_layout);
    free(j->pub_text);
    free(j);
}

static void drop_request(struct job *j)
{
    jobs_req_put(j->req);
    j->req = NULL;
    free(j->resume_layout);
    j->resume_layout = NULL;
}

/* ------------------------------------------------------------ ops */

/* The job's op to add changes to: its unsealed one, or a new one that
 * op_commit submits. */
static struct store_op *op_get(struct job *j, int *fresh)
{
    /* an op is fenced by the claim it was made under (store.h): one made
     * under another claim (or none) takes no more changes */
    if (j->op && !j->op->sealed && j->op->claim == j->claim) {
        *fresh = 0;
        return j->op;
    }
    struct store_op *op = store_op_new(j->id);
    op->claim = j->claim;
    struct jobop *jo = xcalloc(1, sizeof *jo);
    jo->job = j;
    op->owner = jo;
    j->improve_ev = 0;
    *fresh = 1;
    return op;
}

static void op_discard(struct store_op *op)
{
    free(op->owner);
    op->owner = NULL;
    store_op_free(op);
}

static void op_put(struct jobs *t, struct job *j, struct store_op *op, int fresh)
{
    if (fresh) {
        j->op = op;
        op->lease_ms = t->lease_ms;
        storeq_submit(t->sq, op);
    }
}

static char *status_text(const struct job_status *s)
{
    json_t *st = job_status_json(s, 1);
    char *text = json_dumps(st, JSON_COMPACT | JSON_REAL_PRECISION(12));
    json_decref(st);
    LCN_ASSERT(text);
    return text;
}

const char *jobs_status_text(struct job *j, size_t *len)
{
    if (!j->pub_text) {
        json_t *st = job_status_json(&j->pub, 1);
        char *s = json_dumps(st, JSON_COMPACT | JSON_REAL_PRECISION(12));
        json_decref(st);
        if (!s)
            return NULL;
        j->pub_len = strlen(s);
        j->pub_text = xmalloc(j->pub_len + 2);
        memcpy(j->pub_text, s, j->pub_len);
        j->pub_text[j->pub_len++] = '\n';
        j->pub_text[j->pub_len] = 0;
        free(s);
    }
    *len = j->pub_len;
    return j->pub_text;
}

/* Puts a snapshot of cur into op (the row update and the visible status). */
static void op_status(struct job *j, struct store_op *op)
{
    struct jobop *jo = op->owner;
    j->cur.progress_seq = j->last_seq;
    char *text = status_text(&j->cur);
    free(op->status);
    free(op->state);
    op->status = text;
    op->state = xstrdup(job_state_name(j->cur.state));
    op->updated_ms = lcn_wall_ms();
    jo->has_snap = 1;
    jo->snap = j->cur;
}

static void ev_state(struct job *j, struct store_op *op)
{
    const char *code = j->cur.error_code[0] ? j->cur.error_code : NULL;
    int64_t seq = ++j->last_seq;
    store_op_add_event(
        op, seq, job_event_state(seq, j->cur.elapsed_s, j->cur.state, code, j->cur.error_msg));
    j->improve_ev = 0;
}

static void ev_improve(struct job *j, struct store_op *op, const struct engine_event *ev)
{
    if (j->improve_ev && j->improve_ev == op->n_events) {
        /* the newest pending event is an improvement nobody has seen: replace it */
        struct store_event *e = &op->events[j->improve_ev - 1];
        free(e->body);
        e->body = job_event_improve(e->seq, ev->elapsed_s, ev->stage, &ev->best);
        return;
    }
    int64_t seq = ++j->last_seq;
    store_op_add_event(op, seq, job_event_improve(seq, ev->elapsed_s, ev->stage, &ev->best));
    j->improve_ev = op->n_events;
}

static void ev_checkpoint(struct job *j, struct store_op *op, struct lcn_pt *layout,
                          const struct lcn_obj *obj, double elapsed, int final)
{
    int64_t seq = ++j->last_seq;
    store_op_add_event(op, seq, job_event_checkpoint(seq, elapsed, obj));
    j->improve_ev = 0;
    free(op->layout);
    op->layout = layout;
    op->n = j->cur.n;
    op->obj = *obj;
    op->elapsed_s = elapsed;
    op->ckpt_seq = j->last_seq;
    op->final = final;
}

static void set_state(struct jobs *t, struct job *j, enum job_state state)
{
    if (j->cur.state == JOB_QUEUED && state != JOB_QUEUED)
        t->waiting--;
    if (j->cur.state != JOB_QUEUED && state == JOB_QUEUED)
        t->waiting++;
    if (job_state_terminal(state) && !job_state_terminal(j->cur.state) && j->run_started_ns) {
        histogram_observe(&t->timings.run, (double)(lcn_now_ns() - j->run_started_ns) / 1e9);
        j->run_started_ns = 0;
    }
    j->cur.state = state;
    if (job_state_terminal(state) && !j->cur.finished_ms)
        j->cur.finished_ms = lcn_wall_ms();
}

/* The job met its target in this process (once: callers check that it had
 * not before). */
static void reached_target(struct jobs *t, struct job *j, double time_to_target_s)
{
    j->cur.time_to_target_s = time_to_target_s;
    histogram_observe(&t->timings.time_to_target, time_to_target_s);
}

/* ------------------------------------------------------------ submit, cancel */

static int64_t next_shared_id(struct jobs *t);

static int gpu_fits(struct jobs *t, const struct job_request *req)
{
    char why[200];
    return t->gpu_fits && t->gpu_fits(t->gpu_ctx, &req->doc.g, why, sizeof why) == 0;
}

struct job *jobs_submit(struct jobs *t, struct job_request *req, char *body, size_t len,
                        int64_t received_ns)
{
    struct job *j = xcalloc(1, sizeof *j);
    j->id = t->cl ? next_shared_id(t) : t->next_id++;
    j->req = req;
    j->received_ns = received_ns;
    j->admitted_ns = lcn_now_ns();
    int64_t now = lcn_wall_ms();
    job_status_from_request(&j->cur, j->id, now, req);
    j->gpu_fits = gpu_fits(t, req);
    j->gpus = jobs_gpus_needed(t, req);
    table_add(t, j);
    t->waiting++;
    t->submitted++;

    int fresh;
    struct store_op *op = op_get(j, &fresh);
    op->create = 1;
    op->created_ms = now;
    op->request = body;
    op->request_len = len;
    op->backend = lcn_backend_name(req->backend);
    op->gpus = req->gpus == JOB_GPUS_ALL ? 1 : req->gpus;
    ev_state(j, op);
    op_status(j, op);
    op_put(t, j, op, fresh);
    hook_counts(t);
    log_job(LOG_LEVEL_INFO, j->id, "submitted: n=%d m=%d, budget %g s, seed %llu, backend %s%s%s",
            req->doc.g.n, req->doc.g.m, req->budget_s, (unsigned long long)req->seed,
            lcn_backend_name(req->backend), req->name ? ", name " : "", req->name ? req->name : "");
    return j;
}

static void finish_state_op(struct jobs *t, struct job *j)
{
    int fresh;
    struct store_op *op = op_get(j, &fresh);
    ev_state(j, op);
    op_status(j, op);
    op_put(t, j, op, fresh);
}

/*
 * A cancel is made durable before it is acted on: the request to cancel
 * (cancel_requested in the status) is committed first, and only then is
 * the job taken out of the queue or its engine stopped (cancel_apply). A
 * commit that fails withdraws the request (jobs_on_store_failed) and the
 * client is told to retry, so a cancel is never half applied: no job is
 * stopped that a restart would resume, and none resumes that a client was
 * told is being cancelled (recovery honours a durable request).
 */
static void cancel_mirror(struct jobs *t, struct job *j);

void jobs_cancel(struct jobs *t, struct job *j)
{
    if (job_state_terminal(j->cur.state) || j->cur.cancel_requested)
        return;
    j->cur.cancel_requested = 1;
    if (j->mirror)
        return cancel_mirror(t, j);
    int fresh;
    struct store_op *op = op_get(j, &fresh);
    ((struct jobop *)op->owner)->cancel = 1;
    op_status(j, op);
    op_put(t, j, op, fresh);
}

/* The request to cancel j has committed: stop it. */
static void cancel_apply(struct jobs *t, struct job *j)
{
    if (job_state_terminal(j->cur.state))
        return;
    if (j->run) {
        if (!atomic_load(&j->run->cancel)) {
            j->run->cancel_reason = CANCEL_USER;
            j->run->cancel_ns = lcn_now_ns();
            atomic_store(&j->run->cancel, 1);
        }
        return;
    }
    queue_del(t, j);
    set_state(t, j, JOB_CANCELLED);
    snprintf(j->cur.stop_reason, sizeof j->cur.stop_reason, "cancelled");
    drop_request(j);
    finish_state_op(t, j);
    hook_counts(t);
    log_job(LOG_LEVEL_INFO, j->id, "cancelled before it started");
}

static void fail_job(struct job *j, const char *code, const char *msg);

/* ------------------------------------------------------------ scheduling */

int jobs_admit_solver(struct jobs *t, const struct job_request *req, char *why, size_t len)
{
    if ((req->replicas <= 0 && req->threads <= 0) || (req->backend == LCN_BACKEND_GPU) ||
        (req->backend == LCN_BACKEND_AUTO && jobs_backend_available(t, LCN_BACKEND_GPU)))
        return 0; /* the engine's default for cpu_threads, or device replicas (gpu_fits) */
    /* solver.threads alone sets the count too (two replicas a thread) */
    int64_t reps = LCN_CPU_REPLICAS(req->threads, req->replicas);
    char via[64] = "";
    if (req->replicas <= 0)
        snprintf(via, sizeof via, " (2 per thread of solver.threads %d)", (int)req->threads);
    const struct lcn_graph *g = &req->doc.g;
    int64_t bytes = reps * LCN_REPLICA_BYTES(g->n, g->m);
    double setup_s = (double)reps * (double)LCN_REPLICA_SETUP_NS(g->n, g->m) / 1e9;
    if (bytes > LCN_REPLICA_MEMORY_MAX) {
        snprintf(why, len,
                 "%lld replicas%s of this graph need at least %.1f GiB of states, more than the "
                 "%.0f GiB a job may hold",
                 (long long)reps, via, (double)bytes / (1 << 30),
                 (double)LCN_REPLICA_MEMORY_MAX / (1 << 30));
        return LCN_ETOOBIG;
    }
    if (setup_s > req->budget_s) {
        snprintf(why, len,
                 "%lld replicas%s of this graph take at least %.2f s to set up, more than the "
                 "budget of %.2f s",
                 (long long)reps, via, setup_s, req->budget_s);
        return LCN_ETOOBIG;
    }
    return 0;
}

/* solver.gpus: a run across GPUs needs the GPU backend and no more devices
 * than are healthy here (then it waits until they are free). Returns 0 or
 * -1 with *e filled (422). */
static int admit_gpus(struct jobs *t, const struct job_request *req, struct job_error *e)
{
    if (req->gpus == 0 || req->gpus == 1)
        return 0;
    int have = worker_pool_healthy_devices(t->pool);
    snprintf(e->field, sizeof e->field, "solver.gpus");
    if (req->backend == LCN_BACKEND_CPU || have == 0) {
        snprintf(e->code, sizeof e->code, "backend_unavailable");
        snprintf(e->msg, sizeof e->msg, "solver.gpus needs the gpu backend and a usable GPU");
        return -1;
    }
    if (req->gpus > have) {
        snprintf(e->code, sizeof e->code, "too_large");
        snprintf(e->msg, sizeof e->msg, "%d GPUs asked, this daemon has %d usable", (int)req->gpus,
                 have);
        return -1;
    }
    e->field[0] = 0;
    return 0;
}

/* solver.tuning: every engine that may run the job must accept its knobs,
 * or the job would fail when it starts. Backend cpu or gpu names one; auto
 * runs on a GPU when one is usable and a slot holds the graph (the
 * scheduler), on the CPU otherwise, and with gpu_required false also on the
 * CPU after the last GPU is lost. Returns 0 or -1 with *e filled (422). */
static int admit_tuning(struct jobs *t, const struct job_request *req, struct job_error *e)
{
    if (!req->tuning)
        return 0;
    struct worker_counts cpu, gpu;
    worker_pool_counts(t->pool, WORKER_CPU, &cpu);
    worker_pool_counts(t->pool, WORKER_GPU, &gpu);
    const int auto_ = req->backend == LCN_BACKEND_AUTO;
    const int on_gpu = req->backend == LCN_BACKEND_GPU || (auto_ && gpu.healthy > 0 && gpu_fits(t, req));
    const int on_cpu = req->backend == LCN_BACKEND_CPU ||
                       (auto_ && cpu.healthy > 0 && (!on_gpu || !t->cfg->gpu_required));
    char why[200] = "";
    const char *engine = NULL;
    if (on_cpu && engine_cpu_tuning_check(req->tuning, why, sizeof why))
        engine = "cpu";
    if (!engine && on_gpu && gpu_tuning_check(req->tuning, why, sizeof why))
        engine = "gpu";
    if (!engine)
        return 0;
    snprintf(e->code, sizeof e->code, "invalid_field");
    snprintf(e->field, sizeof e->field, "solver.tuning");
    snprintf(e->msg, sizeof e->msg, "the %s engine refuses it: %s%s", engine, why,
             auto_ ? " (backend auto may run the job on that engine here)" : "");
    return -1;
}

int jobs_admit(struct jobs *t, const struct job_request *req, struct job_error *e)
{
    char why[200];
    memset(e, 0, sizeof *e);
    e->status = 422;
    if (!jobs_backend_available(t, req->backend)) {
        snprintf(e->code, sizeof e->code, "backend_unavailable");
        snprintf(e->field, sizeof e->field, "backend");
        snprintf(e->msg, sizeof e->msg, "no usable %s worker", lcn_backend_name(req->backend));
        return LCN_ENOGPU;
    }
    if (admit_gpus(t, req, e))
        return LCN_ETOOBIG;
    if (admit_tuning(t, req, e))
        return LCN_EINVAL;
    if ((req->backend == LCN_BACKEND_GPU || jobs_gpus_needed(t, req) > 1) && t->gpu_fits &&
        t->gpu_fits(t->gpu_ctx, &req->doc.g, why, sizeof why)) {
        snprintf(e->code, sizeof e->code, "backend_unavailable");
        snprintf(e->field, sizeof e->field, "backend");
        snprintf(e->msg, sizeof e->msg, "the GPU cannot hold this graph: %s", why);
        return LCN_ETOOBIG;
    }
    if (jobs_admit_solver(t, req, why, sizeof why)) {
        snprintf(e->code, sizeof e->code, "too_large");
        snprintf(e->field, sizeof e->field, "%s",
                 req->replicas > 0 ? "solver.replicas" : "solver.threads");
        snprintf(e->msg, sizeof e->msg, "%s", why);
        return LCN_ETOOBIG;
    }
    e->status = 0;
    return 0;
}

int jobs_backend_available(struct jobs *t, int backend)
{
    struct worker_counts cpu, gpu;
    worker_pool_counts(t->pool, WORKER_CPU, &cpu);
    worker_pool_counts(t->pool, WORKER_GPU, &gpu);
    if (backend == LCN_BACKEND_GPU)
        return gpu.healthy > 0;
    if (backend == LCN_BACKEND_CPU)
        return cpu.healthy > 0;
    return backend == LCN_BACKEND_AUTO && cpu.healthy + gpu.healthy > 0;
}

static int has_healthy_gpu(struct jobs *t)
{
    struct worker_counts gpu;
    worker_pool_counts(t->pool, WORKER_GPU, &gpu);
    return gpu.healthy > 0;
}

static int32_t default_threads(struct jobs *t)
{
    if (t->cfg->cpu_threads > 0)
        return (int32_t)t->cfg->cpu_threads;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int64_t per = (cores > 0 ? cores : 1) / (t->cfg->cpu_workers > 0 ? t->cfg->cpu_workers : 1);
    return (int32_t)(per > 0 ? per : 1);
}

static void start_job(struct jobs *t, struct job *j, struct worker *const *ws, int nw)
{
    struct worker *w = ws[0];
    struct job_request *req = j->req;
    int32_t n = req->doc.g.n;
    struct run *run = xcalloc(1, sizeof *run);
    run->job_id = j->id;
    run->g = &req->doc.g;
    run->hold = req; /* an abandoned engine may read the graph after the job let go */
    req->refs++;
    struct engine_params *p = &run->params;
    p->seed = req->seed;
    p->threads =
        w->kind == WORKER_CPU ? (req->threads ? req->threads : default_threads(t)) : req->threads;
    p->replicas = req->replicas;
    p->proposal_workers = req->proposal_workers;
    p->gpus = nw > 1 ? nw : 0;
    p->target_k = req->target_k;
    p->stop_at_target = req->stop_at_target;
    p->telemetry_interval_ns = (int64_t)(t->cfg->telemetry_interval_s * 1e9);
    p->checkpoint_interval_ns = (int64_t)(t->cfg->checkpoint_interval_s * 1e9);
    int64_t now = lcn_now_ns();
    double remaining = j->cur.budget_s - j->elapsed_base;
    if (remaining < 0)
        remaining = 0;
    p->start_ns = now - (int64_t)(j->elapsed_base * 1e9);
    p->deadline_ns = now + (int64_t)(remaining * 1e9);
    size_t bytes = sizeof(struct lcn_pt) * (size_t)n;
    run->init = xmalloc(bytes + 1);
    if (j->resume_layout) {
        memcpy(run->init, j->resume_layout, bytes);
    } else {
        memcpy(run->init, req->doc.pts, bytes);
        if (req->doc.n_missing) {
            run->has_xy = xmalloc((size_t)n + 1);
            memcpy(run->has_xy, req->doc.has_xy, (size_t)n);
        }
    }
    if (req->tuning)
        run->tuning = xstrdup(req->tuning);

    j->run = run;
    j->worker = w;
    /* the engine's telemetry counts from 0 in every run: a run after a
     * lost GPU's re-queue (or a re-claim) would add nothing to the
     * evaluations until it passed the previous run's count */
    j->tel_evaluated = 0;
    memset(j->tel_dev_evaluated, 0, sizeof j->tel_dev_evaluated);
    t->running++;
    queue_del(t, j);
    set_state(t, j, JOB_RUNNING);
    if (!j->cur.started_ms)
        j->cur.started_ms = lcn_wall_ms();
    snprintf(j->cur.backend, sizeof j->cur.backend, "%s",
             lcn_backend_name(w->kind == WORKER_GPU ? LCN_BACKEND_GPU : LCN_BACKEND_CPU));
    finish_state_op(t, j);
    if (nw > 1)
        worker_start_group(ws, nw, run);
    else
        worker_start(w, run);
    for (int i = 0; i < run->n_devices; i++)
        if (run->devices[i] >= 0 && run->devices[i] < ENGINE_MAX_DEVICES)
            t->dev[run->devices[i]].runs++;
    if (nw > 1)
        log_job(LOG_LEVEL_INFO, j->id, "started on %d gpus, workers %d..: devices %d..%d (%.3f s of budget left)",
                nw, w->index, run->devices[0], run->devices[nw - 1], remaining);
    else if (w->kind == WORKER_GPU)
        log_job(LOG_LEVEL_INFO, j->id, "started on %s worker %d, device %d (%.3f s of budget left)",
                j->cur.backend, w->index, w->device, remaining);
    else
        log_job(LOG_LEVEL_INFO, j->id, "started on %s worker %d (%.3f s of budget left)",
                j->cur.backend, w->index, remaining);
    hook_counts(t);
}

static void want_claims(struct jobs *t);

/* A queued run across GPUs that needs more devices than are healthy now
 * (some were lost since its admission) fails instead of waiting forever. */
static int fail_too_few_devices(struct jobs *t, struct job *j)
{
    int have = worker_pool_healthy_devices(t->pool);
    if (j->gpus <= have)
        return 0;
    char msg[200];
    snprintf(msg, sizeof msg, "the job needs %d GPUs and %d are usable (the others were lost)",
             j->gpus, have);
    queue_del(t, j);
    set_state(t, j, JOB_FAILED);
    fail_job(j, lcn_errcode(LCN_ENOGPU), msg);
    drop_request(j);
    finish_state_op(t, j);
    hook_counts(t);
    log_job(LOG_LEVEL_WARN, j->id, "failed: %s", msg);
    return 1;
}

/*
 * In queue order, each job gets a free worker of its kind (a run across
 * GPUs: one idle worker on each of as many devices). A job waiting for its
 * kind does not block others, except that once a run across GPUs waits, no
 * GPU job behind it starts in this pass: the devices it waits for are not
 * taken from under it.
 */
void jobs_schedule(struct jobs *t)
{
    if (t->stopping)
        return;
    int gpu = has_healthy_gpu(t), gpu_blocked = 0;
    struct job *j = t->qhead;
    while (j) {
        struct job *next = j->qnext;
        struct worker *ws[ENGINE_MAX_DEVICES];
        if (j->gpus > 1) {
            if (fail_too_few_devices(t, j)) {
            } else if (!gpu_blocked && worker_pool_idle_group(t->pool, j->gpus, ws) == 0) {
                start_job(t, j, ws, j->gpus);
            } else {
                gpu_blocked = 1;
            }
            j = next;
            continue;
        }
        enum worker_kind kind = j->cur.backend_requested == LCN_BACKEND_CPU   ? WORKER_CPU
                                : j->cur.backend_requested == LCN_BACKEND_GPU ? WORKER_GPU
                                : gpu && j->gpu_fits                          ? WORKER_GPU
                                                                              : WORKER_CPU;
        ws[0] = kind == WORKER_GPU && gpu_blocked ? NULL : worker_pool_idle(t->pool, kind);
        if (ws[0])
            start_job(t, j, ws, 1);
        j = next;
    }
    if (t->cl)
        want_claims(t);
}

void jobs_fail_unrunnable(struct jobs *t)
{
    struct job *j = t->qhead;
    while (j) {
        struct job *next = j->qnext;
        j->gpus = jobs_gpus_needed(t, j->req); /* "all": the devices this process has */
        if (!jobs_backend_available(t, j->cur.backend_requested)) {
            queue_del(t, j);
            set_state(t, j, JOB_FAILED);
            fail_job(j, lcn_errcode(LCN_ENOGPU),
                     "no usable GPU worker after a restart for this backend=gpu job");
            drop_request(j);
            finish_state_op(t, j);
            log_job(LOG_LEVEL_WARN, j->id, "failed: its backend has no worker");
        }
        j = next;
    }
}

/* ------------------------------------------------------------ reports */

static void fail_job(struct job *j, const char *code, const char *msg)
{
    snprintf(j->cur.error_code, sizeof j->cur.error_code, "%s", code);
    snprintf(j->cur.error_msg, sizeof j->cur.error_msg, "%.250s", msg);
    snprintf(j->cur.stop_reason, sizeof j->cur.stop_reason, "error");
}

/*
 * A run ended without a result of its own (deadline or cancel before its
 * first validated layout) or with one worse than the checkpoint it resumed
 * from: the job's best validated layout is that checkpoint, so it becomes
 * the run's result (a job's solution never goes backwards). Returns 1 when
 * run->res now holds it.
 */
static int result_from_checkpoint(struct job *j, struct run *run)
{
    if (!j->has_ckpt || !j->ckpt || j->ckpt_final)
        return 0;
    int stopped = run->rc == LCN_EDEADLINE || run->rc == LCN_ECANCELLED;
    if (!stopped && !(run->rc == 0 && obj_cmp(&j->ckpt_obj, &run->res.best) < 0))
        return 0;
    if (run->rc == 0) {
        engine_result_release(&run->res);
    } else {
        memset(&run->res, 0, sizeof run->res);
        run->res.stop = run->rc == LCN_ECANCELLED ? ENGINE_STOP_CANCELLED : ENGINE_STOP_DEADLINE;
        run->res.time_to_target_s = -1;
        run->res.elapsed_s = j->cur.elapsed_s;
        run->res.backend = j->cur.backend;
        run->res.evaluator = j->cur.evaluator;
        run->res.tel = j->cur.tel;
        run->rc = 0;
    }
    size_t bytes = sizeof(struct lcn_pt) * (size_t)j->cur.n;
    run->res.layout = xmalloc(bytes + 1);
    memcpy(run->res.layout, j->ckpt, bytes);
    run->res.best = j->ckpt_obj;
    run->from_checkpoint = 1;
    return 1;
}

/* A run stopped for the shutdown: the engine time it used counts even when
 * it validated nothing new (its start phase), or a restart would give the
 * job that time again, at every restart (API.md: elapsed_s is engine time
 * summed over resumes; the next run gets the budget minus it). */
static void keep_run_time(struct job *j, const struct run *run)
{
    double ran = (double)(lcn_now_ns() - run->params.start_ns) / 1e9;
    if (ran > j->cur.elapsed_s)
        j->cur.elapsed_s = ran;
}

static void lost_run_ended(struct jobs *t, struct job *j, struct run *run);

/* Adds what a run's telemetry counts beyond what the job reported before
 * to the daemon's evaluations, and to its devices': a one-device run's
 * to its device, a run across GPUs' island by island. */
static void count_evaluations(struct jobs *t, struct job *j, const struct run *run,
                              const struct engine_telemetry *tel)
{
    if (tel->evaluated > j->tel_evaluated) {
        uint64_t d = tel->evaluated - j->tel_evaluated;
        t->evaluations += d;
        j->tel_evaluated = tel->evaluated;
        int dev = run->n_devices == 1 ? run->devices[0] : -1;
        if (dev >= 0 && dev < ENGINE_MAX_DEVICES)
            t->dev[dev].evaluations += d;
    }
    for (int32_t i = 0; i < tel->n_devices && i < ENGINE_MAX_DEVICES; i++) {
        const struct engine_device_stats *x = &tel->devices[i];
        if (x->device < 0 || x->device >= ENGINE_MAX_DEVICES || x->evaluated <= j->tel_dev_evaluated[i])
            continue;
        t->dev[x->device].evaluations += x->evaluated - j->tel_dev_evaluated[i];
        j->tel_dev_evaluated[i] = x->evaluated;
    }
}

/* Retires the devices a sticky error broke under run (those device_ok
 * says are lost; the run's first device when it names none, as for the
 * test_fake_gpu hook). Returns how many devices were retired now. */
static int retire_devices(struct jobs *t, struct worker *w, const struct run *run)
{
    int n = 0, blamed = 0;
    for (int i = 0; i < run->n_devices; i++) {
        int d = run->devices[i];
        if (t->device_ok && t->device_ok(t->gpu_ctx, d))
            continue;
        blamed = 1;
        if (worker_fail_device(t->pool, d)) {
            n++;
            log_job(LOG_LEVEL_ERROR, run->job_id, "gpu %d lost under this job (sticky error); "
                    "its workers are retired", d);
        }
    }
    if (!blamed && worker_fail_device(t->pool, w->device)) {
        n++;
        log_job(LOG_LEVEL_ERROR, run->job_id, "gpu %d lost under this job (sticky error); its "
                "workers are retired", w->device);
    }
    return n;
}

/*
 * A sticky GPU error ended j's run: its devices are retired. While another
 * device is healthy (or, with gpu_required false, the CPU pool can take an
 * auto job), j goes back to the head of the queue and resumes from its best
 * validated layout (the worker's last, or the durable checkpoint) with the
 * budget it has left: events interrupted, then queued, and resumes + 1, as
 * after a restart. Returns 1 when j was queued again, 0 when it must fail.
 */
static int device_lost(struct jobs *t, struct worker *w, struct job *j, struct run *run,
                       struct store_op *op)
{
    retire_devices(t, w, run);
    /* a DELETE's committed cancel reached the run (cancel_apply) before or
     * after the error: the job ends cancelled, it does not run again */
    if (run->cancel_reason == CANCEL_USER)
        return 0;
    int gpus = worker_pool_healthy_devices(t->pool);
    struct worker_counts cpu;
    worker_pool_counts(t->pool, WORKER_CPU, &cpu);
    int on_cpu = !t->cfg->gpu_required && cpu.healthy > 0 && j->gpus <= 1 &&
                 j->cur.backend_requested == LCN_BACKEND_AUTO;
    if ((gpus == 0 || j->gpus > gpus) && !on_cpu)
        return 0;
    const struct lcn_pt *from = run->valid;
    const struct lcn_obj *fo = &run->valid_obj;
    if (j->has_ckpt && j->ckpt && (!from || obj_cmp(&j->ckpt_obj, fo) < 0)) {
        from = j->ckpt;
        fo = &j->ckpt_obj;
    }
    if (from) {
        size_t bytes = sizeof(struct lcn_pt) * (size_t)j->cur.n;
        free(j->resume_layout);
        j->resume_layout = xmalloc(bytes + 1);
        memcpy(j->resume_layout, from, bytes);
    }
    keep_run_time(j, run);
    j->elapsed_base = j->cur.elapsed_s;
    j->cur.state = JOB_INTERRUPTED; /* not terminal for good: no finish time, no run timing */
    ev_state(j, op);
    j->cur.resumes++;
    j->cur.state = JOB_QUEUED;
    t->waiting++;
    ev_state(j, op);
    /* shared queue: the commit gives the claim back (finished's
     * op->release) and any daemon claims it; queued here too, this daemon
     * could start it again before that commit lands */
    if (!t->cl)
        queue_push(t, j, 1);
    for (int i = 0; i < run->n_devices; i++)
        if (run->devices[i] >= 0 && run->devices[i] < ENGINE_MAX_DEVICES)
            t->dev[run->devices[i]].requeued++;
    return 1;
}

static void finished(struct jobs *t, struct worker *w, struct job *j, struct run *run)
{
    if (j->lost) {
        /* its claim is gone, but a sticky error still broke its devices:
         * retired, or the next job here runs on a broken GPU */
        if (run->rc == LCN_EGPU_STICKY && retire_devices(t, w, run) && t->cfg->gpu_required &&
            worker_pool_healthy_devices(t->pool) == 0) {
            lost_run_ended(t, j, run);
            hook_fatal(t, 3, "sticky GPU error");
            return;
        }
        return lost_run_ended(t, j, run);
    }
    int fresh, requeued = 0, fatal = 0;
    result_from_checkpoint(j, run);
    struct store_op *op = op_get(j, &fresh);
    int terminal = 1;
    if (run->rc == LCN_ECANCELLED && run->cancel_reason == CANCEL_SHUTDOWN) {
        terminal = 0; /* nothing validated yet: the next start runs it again */
    } else if (run->rc == LCN_ECANCELLED && run->cancel_reason == CANCEL_USER) {
        set_state(t, j, JOB_CANCELLED);
        snprintf(j->cur.stop_reason, sizeof j->cur.stop_reason, "cancelled");
    } else if (run->rc == 0) {
        struct engine_result *res = &run->res;
        /* best never goes backwards: after a kill -9 lost an improvement no
         * checkpoint recorded, the solution may be worse than it (API.md) */
        if (!j->cur.has_best || obj_cmp(&res->best, &j->cur.best) < 0) {
            j->cur.has_best = 1;
            j->cur.best = res->best;
        }
        if (res->elapsed_s > j->cur.elapsed_s)
            j->cur.elapsed_s = res->elapsed_s;
        if (res->time_to_target_s >= 0 && j->cur.time_to_target_s < 0)
            reached_target(t, j, res->time_to_target_s);
        snprintf(j->cur.backend, sizeof j->cur.backend, "%s", res->backend ? res->backend : "");
        snprintf(j->cur.evaluator, sizeof j->cur.evaluator, "%s",
                 res->evaluator ? res->evaluator : "");
        j->cur.has_telemetry = 1;
        j->cur.tel = res->tel;
        count_evaluations(t, j, run, &res->tel);
        int shutdown = res->stop == ENGINE_STOP_CANCELLED && run->cancel_reason == CANCEL_SHUTDOWN;
        struct lcn_pt *layout = res->layout;
        res->layout = NULL; /* the op owns it now */
        ev_checkpoint(j, op, layout, &res->best, res->elapsed_s, !shutdown);
        if (shutdown) {
            /* stays "running" in the store: the next start resumes it */
            terminal = 0;
        } else if (res->stop == ENGINE_STOP_CANCELLED && run->cancel_reason == CANCEL_USER) {
            set_state(t, j, JOB_CANCELLED);
            snprintf(j->cur.stop_reason, sizeof j->cur.stop_reason, "cancelled");
        } else {
            set_state(t, j, JOB_SUCCEEDED);
            snprintf(j->cur.stop_reason, sizeof j->cur.stop_reason, "%s",
                     run->cancel_reason == CANCEL_DEADLINE ? "deadline"
                                                           : engine_stop_name(res->stop));
        }
    } else if (run->rc == LCN_EGPU_STICKY && (requeued = device_lost(t, w, j, run, op))) {
        terminal = 0;
    } else if (run->rc == LCN_EGPU_STICKY) {
        char msg[400];
        int left = worker_pool_healthy_devices(t->pool);
        fatal = t->cfg->gpu_required && left == 0;
        if (run->cancel_reason == CANCEL_USER) {
            set_state(t, j, JOB_CANCELLED);
            snprintf(j->cur.stop_reason, sizeof j->cur.stop_reason, "cancelled");
        } else {
            set_state(t, j, JOB_FAILED);
            snprintf(msg, sizeof msg, "gpu %d: unrecoverable error, %s: %s", w->device,
                     fatal ? "the daemon restarts" : left ? "too few usable GPUs are left"
                                                          : "no usable GPU is left",
                     run->diag);
            fail_job(j, lcn_errcode(fatal ? run->rc : LCN_ENOGPU), msg);
        }
    } else {
        int rc = run->rc == LCN_ECANCELLED && run->cancel_reason == CANCEL_DEADLINE
                     ? LCN_EDEADLINE
                     : run->rc;
        set_state(t, j, JOB_FAILED);
        fail_job(j, lcn_errcode(rc), run->diag[0] ? run->diag : lcn_strerror(rc));
    }
    if (terminal)
        ev_state(j, op);
    else if (!requeued)
        keep_run_time(j, run);
    op_status(j, op);
    /* shared queue: another daemon may resume it at once */
    op->release = !terminal && t->cl;
    op_put(t, j, op, fresh);

    if (requeued)
        log_job(LOG_LEVEL_WARN, j->id, "its gpu was lost after %.3f s: queued again%s",
                j->cur.elapsed_s, j->resume_layout ? " from its last checkpoint" : "");
    else if (!terminal)
        log_job(LOG_LEVEL_INFO, j->id, "stopped for shutdown after %.3f s", j->cur.elapsed_s);
    else if (j->cur.state == JOB_FAILED)
        log_job(LOG_LEVEL_WARN, j->id, "failed: %s: %s", j->cur.error_code, j->cur.error_msg);
    else
        log_job(LOG_LEVEL_INFO, j->id, "%s after %.3f s, stop %s, K=%d%s",
                job_state_name(j->cur.state), j->cur.elapsed_s, j->cur.stop_reason,
                j->cur.has_best ? j->cur.best.K : -1,
                run->from_checkpoint ? " (solution: the last checkpoint)" : "");

    j->run = NULL;
    j->worker = NULL;
    t->running--;
    run_release(run);
    if (terminal)
        drop_request(j);
    hook_counts(t);
    if (fatal)
        hook_fatal(t, 3, "sticky GPU error");
}

void jobs_on_report(void *ctx, struct worker *w, struct worker_report *rep)
{
    struct jobs *t = ctx;
    struct run *run = rep->run;
    struct job *j = NULL;
    size_t at = lower_bound(t, run->job_id);
    if (at < t->n && t->v[at]->id == run->job_id)
        j = t->v[at];
    LCN_ASSERT(j && j->run == run);

    int fresh, touched = 0;
    struct store_op *op = op_get(j, &fresh);
    /* only a strict improvement of the job's best is an event: a resumed
     * run starts over and reports tuples the job has already beaten */
    if (rep->has_improve &&
        (!j->cur.has_best || obj_cmp(&rep->improve.best, &j->cur.best) < 0)) {
        ev_improve(j, op, &rep->improve);
        /* one line per better K, not per improvement: K is what a reader follows */
        if (!j->cur.has_best || rep->improve.best.K < j->cur.best.K)
            log_job(LOG_LEVEL_INFO, j->id, "K=%d (nK=%d C=%lld) at %.3f s (%s)",
                    rep->improve.best.K, rep->improve.best.nK, (long long)rep->improve.best.C,
                    rep->improve.elapsed_s, rep->improve.stage);
        j->cur.has_best = 1;
        j->cur.best = rep->improve.best;
        if (rep->improve.elapsed_s > j->cur.elapsed_s)
            j->cur.elapsed_s = rep->improve.elapsed_s;
        if (j->cur.target_k >= 0 && j->cur.time_to_target_s < 0 &&
            rep->improve.best.K <= j->cur.target_k)
            reached_target(t, j, rep->improve.elapsed_s);
        touched = 1;
    }
    if (rep->has_telemetry) {
        j->cur.has_telemetry = 1;
        j->cur.tel = rep->tel;
        if (rep->tel.elapsed_s > j->cur.elapsed_s)
            j->cur.elapsed_s = rep->tel.elapsed_s;
        count_evaluations(t, j, run, &rep->tel);
        touched = 1;
    }
    /* a checkpoint worse than the one the job holds would replace it in the
     * store (one per job): only better ones are kept */
    if (rep->ckpt && (!j->has_ckpt || obj_cmp(&rep->ckpt_obj, &j->ckpt_obj) < 0)) {
        if (rep->ckpt_elapsed_s > j->cur.elapsed_s)
            j->cur.elapsed_s = rep->ckpt_elapsed_s;
        if (!j->cur.has_best || obj_cmp(&rep->ckpt_obj, &j->cur.best) < 0) {
            j->cur.has_best = 1;
            j->cur.best = rep->ckpt_obj;
        }
        ev_checkpoint(j, op, rep->ckpt, &rep->ckpt_obj, rep->ckpt_elapsed_s, 0);
        rep->ckpt = NULL;
        touched = 1;
    }
    if (rep->started && j->cur.start_latency_s < 0 && j->received_ns)
        j->cur.start_latency_s = (double)(rep->started_ns - j->received_ns) / 1e9;
    if (rep->started && j->admitted_ns) {
        histogram_observe(&t->timings.queue_wait, (double)(rep->started_ns - j->admitted_ns) / 1e9);
        j->admitted_ns = 0;
    }
    if (rep->started) {
        j->run_started_ns = rep->started_ns;
        touched = 1;
    }
    if (touched)
        op_status(j, op);
    if (touched || !fresh)
        op_put(t, j, op, fresh);
    else
        op_discard(op);

    if (rep->finished) {
        finished(t, w, j, run);
        jobs_schedule(t);
        jobs_retention(t);
        hook_idle(t);
    }
}

/* ------------------------------------------------------------ commits */

static void lose(struct jobs *t, struct job *j, const char *why);
static void become_mirror(struct jobs *t, struct job *j);

/* What a landed commit changes in its job (none for an owner-less op). */
static void op_landed(struct jobs *t, struct store_op *op)
{
    struct jobop *jo = op->owner;
    if (!jo)
        return;
    struct job *j = jo->job;
    if (j->op == op)
        j->op = NULL;
    if (op->fenced) {
        /* the claim it was made under is not this job's any more: nothing
         * of it was written (shared queue) */
        int cancel = jo->cancel;
        free(jo);
        op->owner = NULL;
        if (j->claim == op->claim && j->claim)
            lose(t, j, "its lease expired or another daemon claimed it");
        /* a DELETE's request to cancel went with it (one made while the
         * claim was being given back: a re-queue after a lost GPU, a
         * shutdown): made again as a DELETE of a job this daemon does not
         * hold, or it is dropped and its client waits for the job's end */
        if (cancel && j->mirror && !job_state_terminal(j->pub.state) &&
            !j->pub.cancel_requested) {
            j->cur.cancel_requested = 0;
            jobs_cancel(t, j);
        }
        return;
    }
    int was_durable = j->durable;
    if (op->create)
        j->durable = 1;
    if (jo->has_snap) {
        if (was_durable)
            t->by_state[j->pub.state]--;
        if (job_state_terminal(jo->snap.state) && !job_state_terminal(j->pub.state))
            t->timings.finished[jo->snap.state]++;
        j->pub = jo->snap;
        t->by_state[j->pub.state]++;
        free(j->pub_text);
        j->pub_text = NULL;
    }
    if (op->layout) {
        free(j->ckpt);
        j->ckpt = op->layout;
        op->layout = NULL;
        j->ckpt_obj = op->obj;
        j->ckpt_elapsed_s = op->elapsed_s;
        j->ckpt_final = op->final;
        j->has_ckpt = 1;
    }
    if (job_state_terminal(j->pub.state)) {
        /* finished jobs serve their solution from the store */
        free(j->ckpt);
        j->ckpt = NULL;
    }
    int cancel = jo->cancel;
    int ended = jo->has_snap && job_state_terminal(jo->snap.state);
    free(jo);
    op->owner = NULL;
    if (op->remove) {
        t->by_state[j->pub.state]--;
        hook_removed(t, j);
        table_del(t, j);
        job_free(j);
        return;
    }
    if (j->claim && op->claim == j->claim && (op->release || ended)) {
        cluster_drop(t->cl, j->claim); /* nothing of it to renew any more */
        if (op->release)
            become_mirror(t, j);
    }
    if (op->create && !was_durable && t->cl && !j->claim) {
        /* shared queue: any daemon claims it from the store */
        j->mirror = 1;
        drop_request(j);
    } else if (op->create && !was_durable && j->cur.state == JOB_QUEUED && j->req &&
               !j->in_queue) {
        queue_push(t, j, 0);
        jobs_schedule(t);
    }
    if (cancel)
        cancel_apply(t, j);
    hook_changed(t, j);
}

void jobs_on_store_done(void *ctx, struct store_op *op)
{
    struct jobs *t = ctx;
    op_landed(t, op);
    /* after every landed commit, whatever it carried (a retention remove
     * too): a shutdown waiting for the last one advances here */
    hook_idle(t);
}

/* ------------------------------------------------------------ failed commits */

/* The insert of a job no client has heard of failed: forget the job, tell
 * its client so (the store_failed hook: the HTTP layer answers 503), and
 * keep only the id reservation in the op. The retried commit then cannot
 * create the job behind the client's back, and the id is never issued
 * again. */
static void give_up_insert(struct jobs *t, struct job *j, struct store_op *op)
{
    LCN_ASSERT(!j->durable && j->op == op);
    log_job(LOG_LEVEL_WARN, j->id, "not created: the job store cannot commit");
    hook_store_failed(t, j);
    store_op_make_reserve(op);
    free(op->owner);
    op->owner = NULL;
    if (j->cur.state == JOB_QUEUED)
        t->waiting--;
    t->submitted--;
    table_del(t, j);
    job_free(j);
    hook_counts(t);
}

/*
 * storeq: the commit that carried op failed, or op waits behind it. No
 * client stays parked while the store fails (each failure answers the
 * ones parked since the last):
 *   - an insert is given up (give_up_insert: 503, the job was not created);
 *   - a request to cancel that has not committed is withdrawn: the job
 *     goes on as if the DELETE never came, the status the retried commit
 *     stores does not carry it, and the client is told to retry (503);
 *   - a client waiting for a cancel whose request has committed is told
 *     it will complete (202): the next commit or the next start does it.
 */
void jobs_on_store_failed(void *ctx, struct store_op *op)
{
    struct jobs *t = ctx;
    struct jobop *jo = op->owner;
    if (!jo)
        return;
    struct job *j = jo->job;
    if (op->create) {
        give_up_insert(t, j, op);
        return;
    }
    if (jo->cancel && !j->pub.cancel_requested) {
        jo->cancel = 0;
        j->cur.cancel_requested = 0;
    }
    if (op->cancel_flag && !j->pub.cancel_requested) {
        /* a DELETE through this daemon of a job another one runs */
        op->cancel_flag = 0;
        jo->has_snap = 0;
        j->cur.cancel_requested = 0;
    }
    if (jo->has_snap && jo->snap.cancel_requested && !j->cur.cancel_requested) {
        jo->snap.cancel_requested = 0;
        free(op->status);
        op->status = status_text(&jo->snap);
    }
    hook_store_failed(t, j);
}

/* ------------------------------------------------------------ shutdown */

static void release_claim(struct jobs *t, struct job *j);

void jobs_stop_all(struct jobs *t)
{
    t->stopping = 1;
    if (t->cl) {
        cluster_want(t->cl, -1, -1, 0, 0); /* no more claims */
        /* claimed, not started: another daemon may run them at once */
        while (t->qhead) {
            struct job *j = t->qhead;
            queue_del(t, j);
            release_claim(t, j);
        }
    }
    for (size_t i = 0; i < t->n; i++) {
        struct job *j = t->v[i];
        if (j->run && !atomic_load(&j->run->cancel)) {
            j->run->cancel_reason = CANCEL_SHUTDOWN;
            j->run->cancel_ns = lcn_now_ns();
            atomic_store(&j->run->cancel, 1);
        }
    }
}

/*
 * A worker whose engine ignored its cancel flag for ENGINE_ABANDON_NS is
 * given up: the slot gets a new thread, the run stays with the old one
 * (which keeps the graph alive through run->hold) until it returns, and
 * the job ends now. A user's cancel ends it cancelled, anything else
 * failed; its last checkpoint stays its solution.
 */
static void abandon(struct jobs *t, struct job *j)
{
    struct run *run = j->run;
    double late = (double)(lcn_now_ns() - run->cancel_ns) / 1e9;
    log_job(LOG_LEVEL_ERROR, j->id,
            "the engine did not stop %.1f s after it was asked to; worker %d abandoned and "
            "replaced",
            late, j->worker->index);
    if (worker_abandon(j->worker))
        log_error("worker %d: no thread could replace it", j->worker->index);
    j->run = NULL;
    j->worker = NULL;
    t->running--;
    if (j->lost) {
        /* its claim is gone (lose kept a user's or the deadline's cancel):
         * nothing of it is this daemon's to store, as in lost_run_ended
         * (the run itself stays with the abandoned thread); left lost, the
         * job would never follow the store again here */
        j->lost = 0;
        release_claim(t, j);
        hook_counts(t);
        return;
    }
    j->cur.engine_overran = 1;
    if (run->cancel_reason == CANCEL_USER) {
        set_state(t, j, JOB_CANCELLED);
        snprintf(j->cur.stop_reason, sizeof j->cur.stop_reason, "cancelled");
    } else {
        char msg[200];
        snprintf(msg, sizeof msg,
                 "the engine did not stop %.1f s after it was asked to (budget overrun) and was "
                 "abandoned; the last checkpoint (if any) is the solution",
                 late);
        set_state(t, j, JOB_FAILED);
        fail_job(j, lcn_errcode(LCN_EDEADLINE), msg);
    }
    drop_request(j);
    finish_state_op(t, j);
    hook_counts(t);
}

void jobs_enforce_deadlines(struct jobs *t)
{
    int64_t now = lcn_now_ns();
    int gave_up = 0;
    for (size_t i = 0; i < t->n; i++) {
        struct job *j = t->v[i];
        struct run *run = j->run;
        if (!run)
            continue;
        if (!atomic_load(&run->cancel) && now > run->params.deadline_ns + DEADLINE_GRACE_NS) {
            log_job(LOG_LEVEL_WARN, run->job_id,
                    "engine overran its deadline by %.3f s; stopping it",
                    (double)(now - run->params.deadline_ns) / 1e9);
            run->cancel_reason = CANCEL_DEADLINE;
            run->cancel_ns = now;
            atomic_store(&run->cancel, 1);
            /* durable at once: a restart does not resume it to overrun again */
            j->cur.engine_overran = 1;
            int fresh;
            struct store_op *op = op_get(j, &fresh);
            op_status(j, op);
            op_put(t, j, op, fresh);
        } else if (run->cancel_ns && now - run->cancel_ns > ENGINE_ABANDON_NS &&
                   run->cancel_reason != CANCEL_SHUTDOWN) {
            abandon(t, j);
            gave_up = 1;
        }
    }
    if (gave_up)
        jobs_schedule(t);
}

/* ------------------------------------------------------------ retention */

void jobs_retention(struct jobs *t)
{
    int64_t terminal = 0;
    for (size_t i = 0; i < t->n; i++)
        terminal +=
            t->v[i]->durable && !t->v[i]->removing && job_state_terminal(t->v[i]->cur.state);
    int64_t excess = terminal - t->cfg->retain_jobs;
    int64_t cutoff = t->cfg->retain_days > 0
                         ? lcn_wall_ms() - (int64_t)(t->cfg->retain_days * 86400.0 * 1000.0)
                         : INT64_MIN;
    for (size_t i = 0; i < t->n; i++) {
        struct job *j = t->v[i];
        if (!j->durable || j->removing || !job_state_terminal(j->cur.state))
            continue;
        int old = j->cur.finished_ms && j->cur.finished_ms < cutoff;
        if (excess <= 0 && !old)
            continue;
        excess--;
        j->removing = 1;
        int fresh;
        struct store_op *op = op_get(j, &fresh);
        if (fresh)
            op->claim = 0; /* any daemon may delete a finished job */
        op->remove = 1;
        op_put(t, j, op, fresh);
        log_job(LOG_LEVEL_DEBUG, j->id, "deleted by retention");
    }
}

/* ------------------------------------------------------------ recovery */

struct recover_ctx {
    struct jobs *t;
    int rc;
    char *err;
    size_t errlen;
};

static int recover_row(void *ctx, int64_t id, const char *state, const char *status)
{
    struct recover_ctx *rc = ctx;
    struct jobs *t = rc->t;
    json_error_t je;
    json_t *js = json_loads(status, 0, &je);
    struct job *j = xcalloc(1, sizeof *j);
    j->id = id;
    if (!js || job_status_parse(&j->cur, js) || j->cur.id != id) {
        log_job(LOG_LEVEL_ERROR, id, "unreadable status in the store (state %s); marked failed",
                state);
        memset(&j->cur, 0, sizeof j->cur);
        j->cur.id = id;
        j->cur.state = JOB_FAILED;
        j->cur.time_to_target_s = -1;
        j->cur.start_latency_s = -1;
        j->cur.target_k = -1;
        fail_job(j, "corrupt_state", "the stored status could not be read");
    }
    json_decref(js);
    j->durable = 1;
    j->pub = j->cur;
    int64_t last = store_last_seq(t->store, id);
    j->last_seq = LCN_MAX(j->cur.progress_seq, last > 0 ? last : 0);
    t->by_state[j->pub.state]++;
    table_add(t, j);
    if (id >= t->next_id)
        t->next_id = id + 1;
    return 0;
}

static int load_request(struct jobs *t, struct job *j, char *why, size_t len)
{
    char *body = NULL;
    size_t blen = 0;
    int rc = store_load_request(t->store, j->id, &body, &blen);
    if (rc) {
        snprintf(why, len, "request not found in the store");
        return rc;
    }
    struct job_request *req = xcalloc(1, sizeof *req);
    struct job_error e;
    rc = job_request_parse(req, body, blen, &t->recover_limits, &e);
    free(body);
    if (rc) {
        snprintf(why, len, "stored request does not parse: %.100s: %.150s", e.field, e.msg);
        free(req);
        return rc;
    }
    j->req = req;
    return 0;
}

/* A stored checkpoint of j's graph becomes where its next run starts (and
 * the checkpoint the job holds); ck keeps what is not taken. */
static void take_checkpoint(struct job *j, struct store_checkpoint *ck)
{
    if (ck->n != j->req->doc.g.n)
        return;
    free(j->resume_layout);
    j->resume_layout = ck->layout;
    ck->layout = NULL;
    free(j->ckpt);
    j->ckpt = xmalloc(sizeof *j->ckpt * (size_t)(ck->n + 1));
    memcpy(j->ckpt, j->resume_layout, sizeof *j->ckpt * (size_t)ck->n);
    j->ckpt_obj = ck->obj;
    j->ckpt_elapsed_s = ck->elapsed_s;
    j->has_ckpt = 1;
}

enum recovered { REC_QUEUED, REC_RESUMED, REC_INTERRUPTED, REC_ENDED };

/*
 * A job the store says is queued or running, at start or when this daemon
 * claims it (shared queue): j->req holds its parsed request (NULL: why
 * says what is wrong), ck its checkpoint (NULL: none). Honours a durable
 * request to cancel, fails a job whose request cannot be read, and resumes
 * (or marks interrupted) one that was running. The caller queues what
 * comes back REC_QUEUED or REC_RESUMED.
 */
static enum recovered recover_active(struct jobs *t, struct job *j, struct store_checkpoint *ck,
                                     const char *why)
{
    int was_running = j->cur.state == JOB_RUNNING;
    if (!was_running && j->cur.cancel_requested) {
        /* its DELETE's request to cancel committed, the cancel did not */
        j->cur.state = JOB_CANCELLED;
        j->cur.finished_ms = lcn_wall_ms();
        snprintf(j->cur.stop_reason, sizeof j->cur.stop_reason, "cancelled");
        drop_request(j);
        finish_state_op(t, j);
        return REC_ENDED;
    }
    if (!j->req) {
        /* not set_state: a queued job is not counted in t->waiting here
         * (recovery counts what comes back queued; claimed_one took it
         * off already), so set_state's decrement would count it twice */
        j->cur.state = JOB_FAILED;
        j->cur.finished_ms = lcn_wall_ms();
        fail_job(j, "corrupt_state", why);
        finish_state_op(t, j);
        return REC_ENDED;
    }
    j->gpu_fits = gpu_fits(t, j->req);
    j->gpus = jobs_gpus_needed(t, j->req);
    if (!was_running) {
        t->waiting++;
        /* it ran before: queued again after a lost GPU, or resumed and
         * stopped again before it restarted; it goes on from its
         * checkpoint with what is left of its budget, which its engine
         * time counts against with or without a checkpoint (a GPU lost
         * before the first one: keep_run_time's elapsed_s alone) */
        if (ck)
            take_checkpoint(j, ck);
        j->elapsed_base = LCN_MAX(j->cur.elapsed_s, ck ? ck->elapsed_s : 0);
        return REC_QUEUED;
    }
    /* found running: the daemon stopped (or died) under it */
    double done = j->cur.elapsed_s;
    if (ck && ck->elapsed_s > done)
        done = ck->elapsed_s;
    j->cur.elapsed_s = done;
    j->cur.cancel_requested = 0;
    j->cur.state = JOB_INTERRUPTED;
    int fresh;
    struct store_op *op = op_get(j, &fresh);
    ev_state(j, op);
    if (j->pub.engine_overran)
        log_job(LOG_LEVEL_WARN, j->id,
                "its engine overran the budget before the restart; not resumed");
    const int worn = t->cfg->max_resumes > 0 && j->cur.resumes >= t->cfg->max_resumes;
    if (worn && t->cfg->resume_interrupted && !j->pub.cancel_requested)
        log_job(LOG_LEVEL_WARN, j->id,
                "found running after %d resumes (max_resumes %lld); not resumed again",
                (int)j->cur.resumes, (long long)t->cfg->max_resumes);
    enum recovered out;
    if (t->cfg->resume_interrupted && !j->pub.cancel_requested && !j->pub.engine_overran &&
        !worn) {
        j->cur.resumes++;
        j->cur.state = JOB_QUEUED;
        t->waiting++;
        ev_state(j, op);
        if (ck)
            take_checkpoint(j, ck);
        j->elapsed_base = done;
        j->resumed_now = 1;
        out = REC_RESUMED;
    } else {
        j->cur.finished_ms = lcn_wall_ms();
        if (j->pub.cancel_requested) {
            j->cur.state = JOB_CANCELLED;
            snprintf(j->cur.stop_reason, sizeof j->cur.stop_reason, "cancelled");
        } else {
            snprintf(j->cur.stop_reason, sizeof j->cur.stop_reason, "interrupted");
        }
        ev_state(j, op);
        drop_request(j);
        out = REC_INTERRUPTED;
    }
    op_status(j, op);
    op_put(t, j, op, fresh);
    return out;
}

int jobs_recover(struct jobs *t, char *err, size_t errlen)
{
    t->recover_limits.max_nodes = LCN_MAX_NODES;
    t->recover_limits.max_edges = LCN_MAX_EDGES;
    t->recover_limits.max_budget_s = 1e12;
    t->recover_limits.default_budget_s = t->cfg->default_budget_s;
    /* the stored next id, not the largest id left: retention may have
     * deleted the newest jobs, and ids are never reused (the shared queue
     * takes its ids in blocks instead) */
    t->next_id = t->cl ? 0 : store_next_id(t->store);
    if (!t->cl && t->next_id < 1) {
        snprintf(err, errlen, "cannot read next_id from the job store");
        return LCN_ESTORE;
    }
    struct recover_ctx rc = {t, 0, err, errlen};
    if (store_load_jobs(t->store, recover_row, &rc)) {
        snprintf(err, errlen, "cannot read the jobs table");
        return LCN_ESTORE;
    }
    if (t->cl) {
        /* every job is a mirror: the cluster thread claims what is
         * claimable (those a previous life of this daemon held included) */
        for (size_t i = 0; i < t->n; i++) {
            t->v[i]->mirror = 1;
            t->waiting += t->v[i]->cur.state == JOB_QUEUED;
        }
        return 0;
    }
    int n[4] = {0};
    for (size_t i = 0; i < t->n; i++) {
        struct job *j = t->v[i];
        if (j->cur.state != JOB_QUEUED && j->cur.state != JOB_RUNNING)
            continue;
        char why[300] = "";
        int cancelled = j->cur.state != JOB_RUNNING && j->cur.cancel_requested;
        if (!cancelled)
            load_request(t, j, why, sizeof why);
        struct store_checkpoint ck;
        /* running: the daemon stopped under it; queued after it ran: a lost
         * GPU queued it again (both go on from the checkpoint) */
        int have = j->req && (j->cur.state == JOB_RUNNING || j->cur.elapsed_s > 0) &&
                   store_load_checkpoint(t->store, j->id, &ck) == 0;
        n[recover_active(t, j, have ? &ck : NULL, why)]++;
        if (have)
            store_checkpoint_release(&ck);
    }
    /* resumed jobs go first, in id order, then the jobs that never ran */
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < t->n; i++) {
            struct job *j = t->v[i];
            if (j->cur.state == JOB_QUEUED && j->req && j->resumed_now == (pass == 0))
                queue_push(t, j, 0);
        }
    if (n[REC_QUEUED] || n[REC_RESUMED] || n[REC_INTERRUPTED])
        log_info("recovered %zu jobs: %d queued, %d resumed, %d interrupted", t->n, n[REC_QUEUED],
                 n[REC_RESUMED], n[REC_INTERRUPTED]);
    return 0;
}

void jobs_release(struct jobs *t)
{
    for (size_t i = 0; i < t->n; i++)
        job_free(t->v[i]);
    free(t->v);
    memset(t, 0, sizeof *t);
}

/* ------------------------------------------------------------ the shared queue */

/* The ids left in hand before the cluster thread is asked for a block. */
static int64_t ids_left(const struct jobs *t)
{
    return t->ids_end - t->ids_next;
}

static int64_t next_shared_id(struct jobs *t)
{
    LCN_ASSERT(ids_left(t) > 0); /* admission checks jobs_shared_ready */
    int64_t id = t->ids_next++;
    if (ids_left(t) == t->id_block / 2)
        cluster_want_ids(t->cl);
    return id;
}

void jobs_share(struct jobs *t, struct cluster *cl, int64_t lease_ms, int64_t id_block)
{
    t->cl = cl;
    t->lease_ms = lease_ms;
    t->id_block = id_block;
}

int jobs_shared_ready(struct jobs *t, char *why, size_t len)
{
    if (!t->cl)
        return 1;
    char r[300];
    if (!cluster_healthy(t->cl, r, sizeof r)) {
        snprintf(why, len, "the job store cannot be reached: %s", r);
        return 0;
    }
    if (ids_left(t) <= 0) {
        snprintf(why, len, "no job ids from the job store yet");
        return 0;
    }
    return 1;
}

static void on_cluster_ids(void *ctx, int64_t first, int64_t n)
{
    struct jobs *t = ctx;
    if (ids_left(t) > 0 && t->ids_end == first) {
        t->ids_end += n;
    } else if (ids_left(t) > 0) {
        /* a block not next to the one in hand: use this one up first (the
         * ids it skips stay unused: they are never given out again) */
        log_debug("cluster: ids %lld.. dropped for a new block", (long long)t->ids_next);
        t->ids_next = first;
        t->ids_end = first + n;
    } else {
        t->ids_next = first;
        t->ids_end = first + n;
    }
}

/* Idle workers the cluster thread may claim jobs for: those the jobs
 * claimed already (in the local queue) do not take. */
static void want_claims(struct jobs *t)
{
    if (t->stopping)
        return;
    struct worker_counts cpu, gpu;
    worker_pool_counts(t->pool, WORKER_CPU, &cpu);
    worker_pool_counts(t->pool, WORKER_GPU, &gpu);
    int c = cpu.healthy - cpu.busy, g = gpu.healthy - gpu.busy;
    for (const struct job *j = t->qhead; j; j = j->qnext) {
        if (c > 0)
            c--;
        else if (g > 0)
            g--;
    }
    /* a run across devices is claimed only by a daemon that can start it
     * now: as many devices with an idle worker, and no job of its own
     * waiting for them (else it would sit in this daemon's queue while
     * another daemon has the devices free) */
    cluster_want(t->cl, c, g, t->qhead ? 1 : worker_pool_idle_devices(t->pool),
                 worker_pool_healthy_devices(t->pool));
}

/* Any job with this id, durable or not. */
static struct job *find_any(struct jobs *t, int64_t id)
{
    size_t at = lower_bound(t, id);
    return at < t->n && t->v[at]->id == id ? t->v[at] : NULL;
}

/* cur takes st, keeping the admission count (t->waiting) right. */
static void cur_set(struct jobs *t, struct job *j, const struct job_status *st)
{
    t->waiting -= j->cur.state == JOB_QUEUED;
    j->cur = *st;
    t->waiting += j->cur.state == JOB_QUEUED;
}

/* pub takes st (a durable status: a row of the store). */
static void pub_set(struct jobs *t, struct job *j, const struct job_status *st)
{
    if (j->durable)
        t->by_state[j->pub.state]--;
    j->pub = *st;
    j->durable = 1;
    t->by_state[j->pub.state]++;
    free(j->pub_text);
    j->pub_text = NULL;
}

/* A job first seen in the store: a mirror of its row. */
static struct job *mirror_new(struct jobs *t, const struct job_status *st)
{
    struct job *j = xcalloc(1, sizeof *j);
    j->id = st->id;
    j->mirror = 1;
    j->cur = *st;
    t->waiting += st->state == JOB_QUEUED;
    pub_set(t, j, st);
    j->last_seq = st->progress_seq;
    table_add(t, j);
    return j;
}

/* This daemon no longer holds j (released, lost): its status follows the
 * store again. */
static void become_mirror(struct jobs *t, struct job *j)
{
    if (j->claim)
        cluster_drop(t->cl, j->claim);
    j->claim = 0;
    j->mirror = 1;
    queue_del(t, j);
    drop_request(j);
    free(j->ckpt);
    j->ckpt = NULL;
    j->has_ckpt = 0;
    cur_set(t, j, &j->pub);
}

/* Gives a claim back (after the ops queued before it): any daemon may
 * claim the job at once. */
static void give_back(struct jobs *t, int64_t id, int64_t claim)
{
    struct store_op *op = store_op_new(id);
    op->claim = claim;
    op->lease_ms = t->lease_ms;
    op->release = 1;
    storeq_submit(t->sq, op);
    cluster_drop(t->cl, claim);
    log_job(LOG_LEVEL_INFO, id, "given back to the shared queue");
}

static void release_claim(struct jobs *t, struct job *j)
{
    give_back(t, j->id, j->claim);
    become_mirror(t, j);
}

/*
 * This daemon lost its claim on j (no renewal within the lease, or a
 * fenced commit): a run is stopped and its result discarded
 * (lost_run_ended), and what was not stored of it is lost; the job resumes
 * elsewhere from its last stored checkpoint.
 */
static void lose(struct jobs *t, struct job *j, const char *why)
{
    if (j->lost)
        return;
    log_job(LOG_LEVEL_WARN, j->id, "no longer held by this daemon: %s", why);
    if (j->run) {
        j->lost = 1;
        if (!atomic_load(&j->run->cancel)) {
            j->run->cancel_reason = CANCEL_SHUTDOWN;
            j->run->cancel_ns = lcn_now_ns();
            atomic_store(&j->run->cancel, 1);
        }
        cluster_drop(t->cl, j->claim);
        return;
    }
    become_mirror(t, j);
}

static void lost_run_ended(struct jobs *t, struct job *j, struct run *run)
{
    j->run = NULL;
    j->worker = NULL;
    t->running--;
    run_release(run);
    j->lost = 0;
    log_job(LOG_LEVEL_INFO, j->id, "its run stopped; the result is not stored (claim lost)");
    /* in case the lease has not expired in the database yet (a fenced
     * commit): let another daemon have it now */
    release_claim(t, j);
    hook_counts(t);
}

static void on_cluster_lost(void *ctx)
{
    struct jobs *t = ctx;
    for (size_t i = 0; i < t->n; i++) {
        struct job *j = t->v[i];
        if (j->claim && !j->mirror && !job_state_terminal(j->cur.state))
            lose(t, j, "the job store could not be reached for most of the lease");
    }
    hook_counts(t);
}

/* A DELETE of a job another daemon runs (or nobody has claimed yet): its
 * cancel column is set, and the daemon that runs it, or claims it next,
 * cancels it. Visible here at once (the commit's snapshot). */
static void cancel_mirror(struct jobs *t, struct job *j)
{
    (void)t;
    struct store_op *op = store_op_new(j->id);
    struct jobop *jo = xcalloc(1, sizeof *jo);
    jo->job = j;
    jo->has_snap = 1;
    jo->snap = j->pub;
    jo->snap.cancel_requested = 1;
    op->owner = jo;
    op->cancel_flag = 1;
    storeq_submit(t->sq, op);
}

/* The row of a job this daemon runs says a DELETE came through another
 * daemon: the request is durable already (the cancel column). */
static void cancel_from_row(struct jobs *t, struct job *j)
{
    log_job(LOG_LEVEL_INFO, j->id, "cancel requested through another daemon");
    j->cur.cancel_requested = 1;
    int fresh;
    struct store_op *op = op_get(j, &fresh);
    op_status(j, op);
    op_put(t, j, op, fresh);
    cancel_apply(t, j);
}

static void mirror_row(struct jobs *t, struct cluster_job *r)
{
    struct job *j = find_any(t, r->id);
    if (j && !j->durable)
        return; /* its insert's commit is on its way back to the loop */
    if (j && j->claim && !j->mirror && r->claim == j->claim) {
        if (r->cancel && !job_state_terminal(j->cur.state) && !j->cur.cancel_requested)
            cancel_from_row(t, j);
        return; /* its status is this daemon's own */
    }
    if (j && j->claim && !j->mirror && !job_state_terminal(j->cur.state))
        lose(t, j, "another daemon claimed it");
    if (!r->status_ok) {
        log_job(LOG_LEVEL_WARN, r->id, "unreadable status in the store; not shown");
        return;
    }
    struct job_status st = r->st;
    if (r->cancel && !job_state_terminal(st.state))
        st.cancel_requested = 1;
    if (!j) {
        hook_changed(t, mirror_new(t, &st));
        return;
    }
    if (!j->mirror || j->lost)
        return; /* a run this daemon is still stopping */
    int same = j->pub.state == st.state && j->pub.progress_seq == st.progress_seq &&
               j->pub.cancel_requested == st.cancel_requested;
    pub_set(t, j, &st);
    cur_set(t, j, &st);
    if (st.progress_seq > j->last_seq)
        j->last_seq = st.progress_seq;
    if (!same)
        hook_changed(t, j);
}

static void on_cluster_rows(void *ctx, struct cluster_job *list)
{
    struct jobs *t = ctx;
    for (struct cluster_job *r = list; r; r = r->next)
        mirror_row(t, r);
    hook_counts(t);
}

/* A job the cluster thread claimed for this daemon: it is this daemon's
 * now, recovered the way a restart recovers its jobs (resumed from its
 * checkpoint, resumes + 1, when another daemon's run of it was cut). */
static void claimed_one(struct jobs *t, struct cluster_job *c)
{
    struct job *j = find_any(t, c->id);
    if (t->stopping || !c->status_ok || c->retry || (j && j->claim && !j->mirror)) {
        /* shutting down, unreadable, a read of it failed (the database
         * went away: not the job's fault), or a run of it is still being
         * stopped here (lost): another daemon, or a later round, may have it */
        if (!c->status_ok)
            log_job(LOG_LEVEL_ERROR, c->id, "claimed, but its status does not parse");
        else if (c->retry)
            log_job(LOG_LEVEL_WARN, c->id, "claimed, given back: %s", c->why);
        give_back(t, c->id, c->claim);
        return;
    }
    if (!j) {
        /* first seen here (its row came after this round's changes): not
         * counted in t->waiting, though its zeroed state reads "queued" */
        j = xcalloc(1, sizeof *j);
        j->id = c->id;
        table_add(t, j);
    } else {
        t->waiting -= j->cur.state == JOB_QUEUED; /* recover_active counts it again */
    }
    struct job_status st = c->st;
    if (c->cancel)
        st.cancel_requested = 1;
    j->cur = st;
    pub_set(t, j, &st);
    j->claim = c->claim;
    j->mirror = 0;
    j->resumed_now = 0;
    j->elapsed_base = 0;
    if (c->last_seq > j->last_seq || st.progress_seq > j->last_seq)
        j->last_seq = LCN_MAX(c->last_seq, st.progress_seq);
    jobs_req_put(j->req);
    j->req = c->req;
    c->req = NULL;
    enum recovered rec = recover_active(t, j, c->have_ck ? &c->ck : NULL, c->why);
    if (rec == REC_QUEUED || rec == REC_RESUMED)
        queue_push(t, j, rec == REC_RESUMED);
    log_job(LOG_LEVEL_INFO, j->id, "claimed (claim %lld)%s", (long long)c->claim,
            rec == REC_RESUMED ? ", resumed from its last checkpoint" : "");
}

static void on_cluster_claimed(void *ctx, struct cluster_job *list)
{
    struct jobs *t = ctx;
    for (struct cluster_job *c = list; c; c = c->next)
        claimed_one(t, c);
    jobs_schedule(t);
    hook_counts(t);
}

static int fetched_row(void *ctx, int64_t id, const char *state, const char *status)
{
    (void)state;
    struct job_status *st = ctx;
    json_error_t je;
    json_t *js = json_loads(status, 0, &je);
    int ok = js && job_status_parse(st, js) == 0 && st->id == id;
    json_decref(js);
    if (!ok)
        st->id = -1;
    return 0;
}

/* A job this daemon has not seen yet, read from the store (a short read
 * on the loop, like a progress page's; it fails at once while the database
 * is unreachable). */
static struct job *fetch_mirror(struct jobs *t, int64_t id)
{
    if (find_any(t, id))
        return NULL; /* its insert is on its way back: not visible yet */
    struct job_status st;
    memset(&st, 0, sizeof st);
    if (store_load_job(t->store, id, fetched_row, &st) != 1 || st.id != id)
        return NULL;
    return mirror_new(t, &st);
}

int jobs_fresh_ticket(struct jobs *t, const struct job *j, uint64_t *ticket)
{
    if (!t->cl || !j->mirror || job_state_terminal(j->pub.state))
        return 0;
    *ticket = cluster_sync(t->cl);
    return 1;
}

int jobs_synced(const struct jobs *t, uint64_t ticket)
{
    return t->synced >= ticket;
}

void jobs_cluster_synced(struct jobs *t, uint64_t round)
{
    t->synced = round;
}

void jobs_cluster_callbacks(struct jobs *t, struct cluster_callbacks *cb)
{
    cb->rows = on_cluster_rows;
    cb->claimed = on_cluster_claimed;
    cb->ids = on_cluster_ids;
    cb->lost = on_cluster_lost;
    cb->ctx = t;
}
