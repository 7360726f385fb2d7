/* The scheduler (server/jobs.c) on its own: queue order, admission, resume
 * after a restart, and what it reports through its hooks.
 *
 * Linked against lcnd_jobs only (the job table, the store and its queue,
 * the worker pool, the options): no HTTP, API or process lifecycle. The
 * seams stand in for the rest: the worker pool runs a fake engine that
 * blocks until the test releases its job (or the run's cancel flag is
 * set), the hooks only count, and the store is a real SQLite file in a
 * temporary directory, so that recovery reads what the first "process"
 * committed. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <uv.h>

#include "server/config.h"
#include "err.h"
#include "server/jobs.h"
#include "server/log.h"
#include "server/store.h"
#include "server/storeq.h"
#include "util.h"
#include "server/worker.h"

/* ------------------------------------------------------------ the fake engine */

#define MAX_SEED 32

/* Shared with the worker threads, under mu. A run is named by its seed
 * (each test job gets its own). */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int released[MAX_SEED];
static int sticky[MAX_SEED];                 /* the run fails with a sticky GPU error */
static int started[MAX_SEED * 2], n_started; /* seeds in the order their runs began */
static int kind_of[MAX_SEED];                /* the kind of worker that ran each seed */
static int sticky_once[MAX_SEED];            /* the next run fails with a sticky GPU error */
static int dev_of[MAX_SEED], gpus_of[MAX_SEED], dev2_of[MAX_SEED]; /* its devices (-1: none) */
static int sticky_on_cancel[MAX_SEED]; /* the run's cancel meets a sticky GPU error */
static uint64_t tel_of[MAX_SEED];      /* evaluations each run reports at its start */

static int fake_engine(void *ctx, const struct worker *w, const struct lcn_graph *g,
                       const struct engine_params *p, struct engine_result *out)
{
    (void)ctx;
    (void)g;
    (void)out;
    int seed = (int)p->seed;
    if (seed <= 0 || seed >= MAX_SEED)
        return LCN_EINVAL; /* no cmocka assertion on a worker thread: it would longjmp across */
    pthread_mutex_lock(&mu);
    started[n_started++] = seed;
    kind_of[seed] = w->kind;
    dev_of[seed] = p->devices ? p->devices[0] : -1;
    dev2_of[seed] = p->devices && p->gpus > 1 ? p->devices[1] : -1;
    gpus_of[seed] = p->gpus;
    int once = sticky_once[seed];
    sticky_once[seed] = 0;
    uint64_t evals = tel_of[seed];
    pthread_mutex_unlock(&mu);
    if (evals && p->on_telemetry) {
        struct engine_telemetry tel;
        memset(&tel, 0, sizeof tel);
        tel.evaluated = evals;
        p->on_telemetry(p->ctx, &tel);
    }
    if (once)
        return LCN_EGPU_STICKY;
    for (;;) {
        pthread_mutex_lock(&mu);
        int go = released[seed], bad = sticky[seed];
        pthread_mutex_unlock(&mu);
        if (bad)
            return LCN_EGPU_STICKY;
        if (p->cancel && atomic_load(p->cancel)) {
            pthread_mutex_lock(&mu);
            int soc = sticky_on_cancel[seed];
            pthread_mutex_unlock(&mu);
            return soc ? LCN_EGPU_STICKY : LCN_ECANCELLED;
        }
        if (go)
            return LCN_EDEADLINE; /* ended without a result: the job fails, the worker frees */
        uv_sleep(2);
    }
}

static void release(int seed)
{
    pthread_mutex_lock(&mu);
    released[seed] = 1;
    pthread_mutex_unlock(&mu);
}

static int n_started_now(void)
{
    pthread_mutex_lock(&mu);
    int n = n_started;
    pthread_mutex_unlock(&mu);
    return n;
}

/* ------------------------------------------------------------ the fixture */

struct hooks_seen {
    int changed, removed, store_failed, counts, idle, fatal, fatal_code;
    int idle_drained; /* idle hooks that saw no run and an idle store queue */
};

struct fx {
    char dir[64];
    uv_loop_t loop;
    uv_timer_t tick;
    struct lcnd_config cfg;
    struct store *store;
    struct storeq sq;
    struct worker_pool pool;
    int pool_up;
    struct jobs t;
    struct hooks_seen seen;
    int gpu_fits; /* what the fake GPU-fit probe answers: 1 fits */
};

static void on_changed(void *ctx, struct job *j)
{
    (void)j;
    ((struct fx *)ctx)->seen.changed++;
}

static void on_removed(void *ctx, struct job *j)
{
    (void)j;
    ((struct fx *)ctx)->seen.removed++;
}

static void on_store_failed(void *ctx, struct job *j)
{
    (void)j;
    ((struct fx *)ctx)->seen.store_failed++;
}

static void on_counts(void *ctx)
{
    ((struct fx *)ctx)->seen.counts++;
}

static void on_idle(void *ctx)
{
    struct fx *f = ctx;
    f->seen.idle++;
    if (f->t.running == 0 && storeq_idle(&f->sq))
        f->seen.idle_drained++; /* a shutdown waiting for this would advance now */
}

static void on_fatal(void *ctx, int code, const char *why)
{
    (void)why;
    struct fx *f = ctx;
    f->seen.fatal++;
    f->seen.fatal_code = code;
}

static int fake_gpu_fits(void *ctx, const struct lcn_graph *g, char *why, size_t len)
{
    (void)g;
    struct fx *f = ctx;
    if (f->gpu_fits)
        return 0;
    snprintf(why, len, "too large for the fake slot");
    return LCN_ETOOBIG;
}

static void on_tick(uv_timer_t *t)
{
    (void)t;
}

/* Opens the store in f->dir and wires a job table to it (no workers yet). */
static void open_table(struct fx *f)
{
    char path[128], err[256] = "";
    snprintf(path, sizeof path, "%s/jobs.db", f->dir);
    assert_int_equal(store_open(path, STORE_SYNC_NORMAL, &f->store, err, sizeof err), 0);
    struct jobs_hooks h = {on_changed, on_removed, on_store_failed, f,
                           on_counts,  on_idle,    on_fatal,        f};
    jobs_init(&f->t, &f->cfg, f->store, &f->sq, &f->pool, fake_gpu_fits, f, &h);
    assert_int_equal(
        storeq_init(&f->sq, &f->loop, f->store, jobs_on_store_done, jobs_on_store_failed, &f->t),
        0);
}

static void start_pool(struct fx *f, int n_gpu, int n_cpu)
{
    int devices[4] = {0, 0, 0, 0};
    assert_int_equal(worker_pool_init(&f->pool, &f->loop, devices, n_gpu, n_cpu, fake_engine, NULL,
                                      jobs_on_report, jobs_on_reaped, &f->t),
                     0);
    f->pool_up = 1;
}

/* n_gpu GPU workers, worker i on device devices[i], and n_cpu CPU workers. */
static void start_pool_on(struct fx *f, const int *devices, int n_gpu, int n_cpu)
{
    assert_int_equal(worker_pool_init(&f->pool, &f->loop, devices, n_gpu, n_cpu, fake_engine, NULL,
                                      jobs_on_report, jobs_on_reaped, &f->t),
                     0);
    f->pool_up = 1;
}

static struct fx *fx_new(void)
{
    struct fx *f = xcalloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/lcn-test-jobs-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    config_defaults(&f->cfg);
    f->cfg.cpu_threads = 1;
    f->gpu_fits = 1;
    uv_loop_init(&f->loop);
    uv_timer_init(&f->loop, &f->tick);
    uv_timer_start(&f->tick, on_tick, 5, 5); /* uv_run(ONCE) never sleeps long */
    pthread_mutex_lock(&mu);
    memset(released, 0, sizeof released);
    memset(sticky, 0, sizeof sticky);
    memset(sticky_once, 0, sizeof sticky_once);
    memset(sticky_on_cancel, 0, sizeof sticky_on_cancel);
    memset(tel_of, 0, sizeof tel_of);
    n_started = 0;
    pthread_mutex_unlock(&mu);
    open_table(f);
    return f;
}

/* Runs the loop until cond(f) holds (or fails the test after 10 s). */
static void run_until(struct fx *f, int (*cond)(struct fx *f))
{
    int64_t end = lcn_now_ns() + 10 * 1000000000LL;
    while (!cond(f)) {
        assert_true(lcn_now_ns() < end);
        uv_run(&f->loop, UV_RUN_ONCE);
    }
}

static int store_idle(struct fx *f)
{
    return storeq_idle(&f->sq);
}

static int none_running(struct fx *f)
{
    return f->t.running == 0 && storeq_idle(&f->sq);
}

static int started_target;
static int started_reached(struct fx *f)
{
    return n_started_now() >= started_target && storeq_idle(&f->sq);
}

static void wait_started(struct fx *f, int n)
{
    started_target = n;
    run_until(f, started_reached);
}

/* Stops what runs, closes the store and the table ("the process exits"),
 * keeping the directory. */
static void close_table(struct fx *f)
{
    if (f->pool_up) {
        jobs_stop_all(&f->t);
        run_until(f, none_running);
        assert_int_equal(worker_pool_release(&f->pool, lcn_now_ns() + 2000000000LL), 0);
        f->pool_up = 0;
    }
    run_until(f, store_idle);
    storeq_close(&f->sq);
    uv_run(&f->loop, UV_RUN_NOWAIT); /* the closed handles' memory is reused */
    jobs_release(&f->t);
    store_close(f->store);
    f->store = NULL;
}

static void fx_free(struct fx *f)
{
    close_table(f);
    uv_close((uv_handle_t *)&f->tick, NULL);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&f->loop), 0);
    config_release(&f->cfg);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    assert_int_equal(system(cmd), 0);
    free(f);
}

#define GRAPH                                                                                      \
    "{\"nodes\":[{\"id\":0,\"x\":0,\"y\":0},{\"id\":1,\"x\":2,\"y\":2},{\"id\":2}],"               \
    "\"edges\":[{\"source\":0,\"target\":1},{\"source\":1,\"target\":2}],"                         \
    "\"width\":5,\"height\":5}"

/* A parsed request; *text gets its body when text is not NULL. */
static struct job_request *request(int seed, const char *backend, double budget_s,
                                   const char *extra, char **text)
{
    char *body = xmalloc(1024);
    snprintf(body, 1024, "{\"graph\":" GRAPH ",\"budget_s\":%g,\"seed\":%d,\"backend\":\"%s\"%s}",
             budget_s, seed, backend, extra ? extra : "");
    struct job_request *req = xcalloc(1, sizeof *req);
    struct job_limits lim = {1000, 1000, 3600, 60};
    struct job_error e;
    int rc = job_request_parse(req, body, strlen(body), &lim, &e);
    if (rc)
        fprintf(stderr, "request: %s: %s\n", e.field, e.msg);
    assert_int_equal(rc, 0);
    if (text)
        *text = body;
    else
        free(body);
    return req;
}

static struct job *submit(struct fx *f, int seed, const char *backend)
{
    char *body;
    struct job_request *req = request(seed, backend, 30, NULL, &body);
    return jobs_submit(&f->t, req, body, strlen(body), lcn_now_ns()); /* recovery re-parses it */
}

/* The seeds of the queued jobs, front first, into out; returns how many. */
static int queue_seeds(struct fx *f, int *out, int max)
{
    int n = 0;
    for (struct job *j = f->t.qhead; j && n < max; j = j->qnext)
        out[n++] = (int)j->cur.seed;
    return n;
}

/* ------------------------------------------------------------ tests */

/* One CPU worker: jobs start in the order they were submitted, one at a
 * time, each when the previous one's run ends. */
static void test_fifo_order(void **state)
{
    (void)state;
    struct fx *f = fx_new();
    start_pool(f, 0, 1);
    struct job *a = submit(f, 1, "cpu");
    submit(f, 2, "cpu");
    submit(f, 3, "cpu");
    /* nothing is queued before its insert commits, so nothing starts */
    assert_int_equal(f->t.running, 0);
    assert_null(f->t.qhead);
    assert_int_equal(f->seen.changed, 0);
    wait_started(f, 1);
    assert_int_equal(started[0], 1);
    assert_ptr_equal(jobs_find(&f->t, a->id), a);
    assert_int_equal(a->pub.state, JOB_RUNNING);
    int q[8];
    assert_int_equal(queue_seeds(f, q, 8), 2);
    assert_int_equal(q[0], 2);
    assert_int_equal(q[1], 3);
    struct jobs_stats st;
    jobs_stats(&f->t, &st);
    assert_int_equal(st.queued, 2);
    assert_int_equal(st.waiting, 2);
    assert_int_equal(st.running, 1);
    assert_int_equal(st.submitted, 3);
    assert_true(f->seen.changed >= 3); /* three inserts and a start became visible */
    assert_true(f->seen.counts >= 4);  /* three submits and a start */

    release(1);
    wait_started(f, 2);
    assert_int_equal(started[1], 2);
    assert_int_equal(a->pub.state, JOB_FAILED); /* the fake ends without a result */
    assert_true(f->seen.idle >= 1);             /* a run ended */
    release(2);
    wait_started(f, 3);
    assert_int_equal(started[2], 3);
    release(3);
    run_until(f, none_running);
    jobs_stats(&f->t, &st);
    assert_int_equal(st.queued, 0);
    assert_int_equal(st.by_state[JOB_FAILED], 3);
    assert_int_equal(f->seen.fatal, 0);
    assert_int_equal(f->seen.store_failed, 0);
    fx_free(f);
}

/* The idle hook is what a shutdown waits for: once no run is left and the
 * last commit landed, it must have fired with nothing left to wait for,
 * also when that last commit only removed a job past the retention limit
 * (a daemon once waited out its shutdown timeout there: a remove commit
 * ended the batch and no hook fired after it). */
static void test_idle_after_last_commit(void **state)
{
    (void)state;
    struct fx *f = fx_new();
    f->cfg.retain_jobs = 1;
    start_pool(f, 0, 1);
    submit(f, 1, "cpu");
    wait_started(f, 1);
    release(1);
    run_until(f, none_running);
    submit(f, 2, "cpu");
    wait_started(f, 2);
    int removed = f->seen.removed;
    f->seen.idle_drained = 0;
    release(2);
    run_until(f, none_running);
    assert_int_equal(f->seen.removed, removed + 1); /* job 1 went: retention */
    assert_true(f->seen.idle_drained >= 1);
    fx_free(f);
}

/* A job waiting for a busy GPU does not hold up a CPU job behind it; auto
 * jobs go to a GPU that can hold them, else to the CPU. */
static void test_kinds(void **state)
{
    (void)state;
    struct fx *f = fx_new();
    start_pool(f, 1, 1);
    submit(f, 1, "gpu");
    submit(f, 2, "gpu");
    submit(f, 3, "cpu");
    wait_started(f, 2); /* 1 and 3, on two threads: in either order */
    assert_int_equal(started[0] + started[1], 1 + 3);
    assert_int_equal(kind_of[1], WORKER_GPU);
    assert_int_equal(kind_of[3], WORKER_CPU);
    int q[8];
    assert_int_equal(queue_seeds(f, q, 8), 1);
    assert_int_equal(q[0], 2);
    release(1);
    wait_started(f, 3);
    assert_int_equal(started[2], 2);
    assert_int_equal(kind_of[2], WORKER_GPU);
    release(2);
    release(3);
    run_until(f, none_running);

    /* auto: the GPU when the graph fits, the CPU when it does not */
    submit(f, 4, "auto");
    wait_started(f, 4);
    assert_int_equal(kind_of[4], WORKER_GPU);
    release(4);
    run_until(f, none_running);
    f->gpu_fits = 0;
    submit(f, 5, "auto");
    wait_started(f, 5);
    assert_int_equal(kind_of[5], WORKER_CPU);
    release(5);
    run_until(f, none_running);
    fx_free(f);
}

/* Admission asks the table about the workers this process has. */
static void test_admission(void **state)
{
    (void)state;
    struct fx *f = fx_new();
    start_pool(f, 0, 1);
    struct job_error e;
    struct job_request *cpu = request(1, "cpu", 30, NULL, NULL);
    struct job_request *gpu = request(2, "gpu", 30, NULL, NULL);
    /* 4096 replicas of this graph take about 20 ms to set up (common/engine.h) */
    struct job_request *big = request(3, "cpu", 0.01, ",\"solver\":{\"replicas\":4096}", NULL);
    assert_true(jobs_backend_available(&f->t, LCN_BACKEND_CPU));
    assert_true(jobs_backend_available(&f->t, LCN_BACKEND_AUTO));
    assert_false(jobs_backend_available(&f->t, LCN_BACKEND_GPU));
    assert_int_equal(jobs_admit(&f->t, cpu, &e), 0);
    assert_int_equal(jobs_admit(&f->t, gpu, &e), LCN_ENOGPU);
    assert_int_equal(e.status, 422);
    assert_string_equal(e.code, "backend_unavailable");
    assert_string_equal(e.field, "backend");
    assert_int_equal(jobs_admit(&f->t, big, &e), LCN_ETOOBIG);
    assert_int_equal(e.status, 422);
    assert_string_equal(e.code, "too_large");
    assert_string_equal(e.field, "solver.replicas");
    jobs_req_put(cpu);
    jobs_req_put(gpu);
    jobs_req_put(big);

    /* what admission counts against max_queued: queued jobs, durable or
     * not, and not the running one */
    submit(f, 4, "cpu");
    submit(f, 5, "cpu");
    struct jobs_stats st;
    jobs_stats(&f->t, &st);
    assert_int_equal(st.waiting, 2);
    assert_int_equal(st.queued, 0); /* not durable yet */
    wait_started(f, 1);
    jobs_stats(&f->t, &st);
    assert_int_equal(st.waiting, 1);
    assert_int_equal(st.queued, 1);
    release(4);
    release(5);
    run_until(f, none_running);
    fx_free(f);
}

/* A cancelled queued job leaves the queue once the request to cancel has
 * committed, and is reported through the changed hook. The timings count
 * the one run (its queue wait and run time) and both outcomes, once they
 * are durable; the cancelled job never started, so it has neither. */
static void test_cancel_queued(void **state)
{
    (void)state;
    struct fx *f = fx_new();
    start_pool(f, 0, 1);
    submit(f, 1, "cpu");
    struct job *b = submit(f, 2, "cpu");
    wait_started(f, 1);
    jobs_cancel(&f->t, b);
    assert_ptr_equal(f->t.qhead, b); /* not acted on before it is durable */
    int changed = f->seen.changed;
    run_until(f, store_idle);
    assert_null(f->t.qhead);
    assert_int_equal(b->pub.state, JOB_CANCELLED);
    assert_true(f->seen.changed > changed);
    const struct jobs_timings *tm = jobs_timings(&f->t);
    assert_int_equal(tm->finished[JOB_CANCELLED], 1);
    assert_int_equal(tm->run.count, 0);
    release(1);
    run_until(f, none_running);
    run_until(f, store_idle);
    assert_int_equal(n_started_now(), 1);
    assert_int_equal(tm->queue_wait.count, 1);
    assert_int_equal(tm->run.count, 1);
    assert_true(tm->run.sum > 0);
    assert_int_equal(tm->time_to_target.count, 0); /* no target */
    assert_int_equal(tm->finished[JOB_FAILED], 1); /* the fake ends without a result */
    assert_int_equal(tm->finished[JOB_CANCELLED], 1);
    assert_int_equal(tm->finished[JOB_SUCCEEDED], 0);
    fx_free(f);
}

/* A sticky GPU error fails the job, marks the GPU failed in the pool and
 * asks the wiring module to stop the process with status 3 (fatal hook). */
static void test_sticky_gpu_is_fatal(void **state)
{
    (void)state;
    struct fx *f = fx_new();
    start_pool(f, 1, 0);
    pthread_mutex_lock(&mu);
    sticky[1] = 1;
    pthread_mutex_unlock(&mu);
    struct job *j = submit(f, 1, "gpu");
    run_until(f, none_running);
    wait_started(f, 1);
    assert_int_equal(f->seen.fatal, 1);
    assert_int_equal(f->seen.fatal_code, 3);
    assert_true(worker_pool_gpu_failed(&f->pool));
    assert_false(jobs_backend_available(&f->t, LCN_BACKEND_GPU));
    assert_int_equal(j->pub.state, JOB_FAILED);
    assert_string_equal(j->pub.error_code, "gpu_fatal");
    fx_free(f);
}

/* Two devices, one worker each: two GPU jobs run at once, one per device,
 * and the engine is told which device (engine_params.devices); /metrics'
 * per-device counters count a run on each. */
static void test_devices_spread(void **state)
{
    (void)state;
    struct fx *f = fx_new();
    int devs[2] = {0, 1};
    start_pool_on(f, devs, 2, 0);
    assert_int_equal(worker_pool_devices(&f->pool), 2);
    assert_int_equal(worker_pool_healthy_devices(&f->pool), 2);
    submit(f, 1, "gpu");
    submit(f, 2, "gpu");
    wait_started(f, 2);
    assert_int_equal(dev_of[1] + dev_of[2], 0 + 1); /* one on each device */
    assert_int_equal(gpus_of[1], 0);                /* one-device runs */
    struct worker_counts c0, c1;
    worker_pool_device_counts(&f->pool, 0, &c0);
    worker_pool_device_counts(&f->pool, 1, &c1);
    assert_int_equal(c0.busy, 1);
    assert_int_equal(c1.busy, 1);
    struct jobs_device_stats s0, s1;
    jobs_device_stats(&f->t, 0, &s0);
    jobs_device_stats(&f->t, 1, &s1);
    assert_int_equal(s0.runs, 1);
    assert_int_equal(s1.runs, 1);
    release(1);
    release(2);
    run_until(f, none_running);
    fx_free(f);
}

/* The first job's run started twice (it was queued again after a loss). */
static int resumed_once(struct fx *f)
{
    return n_started_now() >= 2 && storeq_idle(&f->sq);
}

/* A sticky error on one of two devices retires that device only: its job
 * goes back to the queue (events interrupted, queued; resumes 1) and runs
 * on the other device; nothing is fatal, GPU jobs are still admitted. */
static void test_device_lost_requeues(void **state)
{
    (void)state;
    struct fx *f = fx_new();
    int devs[2] = {0, 1};
    start_pool_on(f, devs, 2, 0);
    pthread_mutex_lock(&mu);
    sticky_once[1] = 1;
    pthread_mutex_unlock(&mu);
    struct job *j = submit(f, 1, "gpu");
    run_until(f, resumed_once);
    assert_int_equal(started[0], 1);
    assert_int_equal(started[1], 1); /* the same job, again */
    int lost = dev_of[1] == 0 ? 1 : 0; /* the device it runs on now is the other one */
    assert_int_equal(f->seen.fatal, 0);
    assert_true(worker_pool_gpu_failed(&f->pool));
    assert_int_equal(worker_pool_healthy_devices(&f->pool), 1);
    struct worker_counts c;
    worker_pool_device_counts(&f->pool, lost, &c);
    assert_int_equal(c.healthy, 0);
    assert_int_equal(j->pub.state, JOB_RUNNING);
    assert_int_equal(j->pub.resumes, 1);
    struct jobs_device_stats ds;
    jobs_device_stats(&f->t, lost, &ds);
    assert_int_equal(ds.requeued, 1);
    assert_true(jobs_backend_available(&f->t, LCN_BACKEND_GPU));
    release(1);
    run_until(f, none_running);
    assert_int_equal(j->pub.state, JOB_FAILED); /* the fake ends without a result */
    assert_string_equal(j->pub.error_code, "deadline");

    /* the second device lost too: that is the last one, and fatal */
    pthread_mutex_lock(&mu);
    sticky_once[2] = 1;
    pthread_mutex_unlock(&mu);
    struct job *k = submit(f, 2, "gpu");
    run_until(f, none_running);
    wait_started(f, 3);
    run_until(f, none_running);
    assert_int_equal(f->seen.fatal, 1);
    assert_int_equal(f->seen.fatal_code, 3);
    assert_int_equal(k->pub.state, JOB_FAILED);
    assert_string_equal(k->pub.error_code, "gpu_fatal");
    assert_int_equal(worker_pool_healthy_devices(&f->pool), 0);
    fx_free(f);
}

/* gpu_required = false: losing the last GPU is not fatal and an auto job
 * goes on on the CPU pool. */
static void test_device_lost_cpu_fallback(void **state)
{
    (void)state;
    struct fx *f = fx_new();
    f->cfg.gpu_required = 0;
    int devs[1] = {0};
    start_pool_on(f, devs, 1, 1);
    pthread_mutex_lock(&mu);
    sticky_once[1] = 1;
    pthread_mutex_unlock(&mu);
    struct job *j = submit(f, 1, "auto");
    run_until(f, resumed_once);
    assert_int_equal(kind_of[1], WORKER_CPU);
    assert_int_equal(f->seen.fatal, 0);
    assert_int_equal(j->pub.resumes, 1);
    release(1);
    run_until(f, none_running);
    fx_free(f);
}

/* solver.tuning: knobs that an engine which may run the job refuses are
 * refused at admission (422, solver.tuning, naming the engine and the
 * knob) instead of failing the job when it starts. Backend auto asks the
 * engine the scheduler would give it: the GPU's when a GPU is usable and a
 * slot holds the graph, the CPU's when not, both with gpu_required false
 * (the CPU takes it after the last GPU is lost). */
static void test_tuning_admission(void **state)
{
    (void)state;
    struct fx *f = fx_new();
    int devs[1] = {0};
    start_pool_on(f, devs, 1, 1); /* one GPU worker, one CPU worker */
    struct job_error e;
    struct job_request *cpu_bad = request(9, "cpu", 30, ",\"solver\":{\"tuning\":\"groups=3\"}", NULL);
    struct job_request *gpu_ok = request(9, "gpu", 30, ",\"solver\":{\"tuning\":\"groups=3\"}", NULL);
    struct job_request *gpu_bad = request(9, "gpu", 30, ",\"solver\":{\"tuning\":\"groups=99\"}", NULL);
    struct job_request *auto_gpu = request(9, "auto", 30, ",\"solver\":{\"tuning\":\"groups=3\"}", NULL);
    struct job_request *auto_cpu = request(9, "auto", 30, ",\"solver\":{\"tuning\":\"p_swap=0.1\"}", NULL);
    struct job_request *both = request(9, "auto", 30, ",\"solver\":{\"tuning\":\"p_bary=0.2\"}", NULL);
    assert_int_equal(jobs_admit(&f->t, cpu_bad, &e), LCN_EINVAL);
    assert_int_equal(e.status, 422);
    assert_string_equal(e.code, "invalid_field");
    assert_string_equal(e.field, "solver.tuning");
    assert_non_null(strstr(e.msg, "cpu engine"));
    assert_non_null(strstr(e.msg, "groups"));
    assert_int_equal(jobs_admit(&f->t, gpu_ok, &e), 0);
    assert_int_equal(jobs_admit(&f->t, gpu_bad, &e), LCN_EINVAL);
    assert_string_equal(e.field, "solver.tuning");
    assert_non_null(strstr(e.msg, "gpu engine"));
    assert_int_equal(jobs_admit(&f->t, both, &e), 0); /* a knob both engines have */
    /* auto, the graph fits the GPU: the GPU's knobs */
    f->gpu_fits = 1;
    assert_int_equal(jobs_admit(&f->t, auto_gpu, &e), 0);
    assert_int_equal(jobs_admit(&f->t, auto_cpu, &e), LCN_EINVAL);
    assert_non_null(strstr(e.msg, "gpu engine"));
    assert_non_null(strstr(e.msg, "backend auto"));
    /* the graph fits no slot: the CPU runs it */
    f->gpu_fits = 0;
    assert_int_equal(jobs_admit(&f->t, auto_cpu, &e), 0);
    assert_int_equal(jobs_admit(&f->t, auto_gpu, &e), LCN_EINVAL);
    assert_non_null(strstr(e.msg, "cpu engine"));
    /* gpu_required false: the CPU may take it after the last GPU is lost */
    f->gpu_fits = 1;
    f->cfg.gpu_required = 0;
    assert_int_equal(jobs_admit(&f->t, auto_gpu, &e), LCN_EINVAL);
    assert_non_null(strstr(e.msg, "cpu engine"));
    assert_int_equal(jobs_admit(&f->t, both, &e), 0);
    jobs_req_put(cpu_bad);
    jobs_req_put(gpu_ok);
    jobs_req_put(gpu_bad);
    jobs_req_put(auto_gpu);
    jobs_req_put(auto_cpu);
    jobs_req_put(both);
    fx_free(f);
}

/* solver.gpus: more devices than exist is refused (422, solver.gpus), as is
 * the CPU backend; a run across two devices takes a worker of each (the
 * engine gets both devices), and a GPU job behind it waits for them. */
static void test_gpus_admission(void **state)
{
    (void)state;
    struct fx *f = fx_new();
    int devs[2] = {0, 1};
    start_pool_on(f, devs, 2, 1);
    struct job_error e;
    struct job_request *three = request(9, "gpu", 30, ",\"solver\":{\"gpus\":3}", NULL);
    struct job_request *cpu2 = request(9, "cpu", 30, ",\"solver\":{\"gpus\":2}", NULL);
    struct job_request *all = request(9, "auto", 30, ",\"solver\":{\"gpus\":\"all\"}", NULL);
    assert_int_equal(jobs_admit(&f->t, three, &e), LCN_ETOOBIG);
    assert_int_equal(e.status, 422);
    assert_string_equal(e.code, "too_large");
    assert_string_equal(e.field, "solver.gpus");
    assert_int_equal(jobs_admit(&f->t, cpu2, &e), LCN_ETOOBIG);
    assert_int_equal(e.status, 422);
    assert_string_equal(e.code, "backend_unavailable");
    assert_string_equal(e.field, "solver.gpus");
    assert_int_equal(jobs_admit(&f->t, all, &e), 0);
    assert_int_equal(jobs_gpus_needed(&f->t, all), 2);
    jobs_req_put(three);
    jobs_req_put(cpu2);
    jobs_req_put(all);

    submit(f, 1, "gpu"); /* on one device */
    char *body;
    struct job_request *r2 = request(2, "gpu", 30, ",\"solver\":{\"gpus\":2}", &body);
    assert_int_equal(jobs_admit(&f->t, r2, &e), 0);
    jobs_submit(&f->t, r2, body, strlen(body), lcn_now_ns());
    submit(f, 3, "gpu"); /* behind the two-device job: it waits too */
    submit(f, 4, "cpu"); /* the CPU pool is not held up */
    wait_started(f, 2);
    assert_int_equal(started[0] + started[1], 1 + 4);
    int q[8];
    assert_int_equal(queue_seeds(f, q, 8), 2);
    assert_int_equal(q[0], 2);
    assert_int_equal(q[1], 3);
    release(1);
    wait_started(f, 3);
    assert_int_equal(started[2], 2);
    assert_int_equal(gpus_of[2], 2);
    assert_int_equal(dev_of[2] + dev2_of[2], 0 + 1);
    struct worker_counts c0, c1;
    worker_pool_device_counts(&f->pool, 0, &c0);
    worker_pool_device_counts(&f->pool, 1, &c1);
    assert_int_equal(c0.busy + c1.busy, 2); /* both held by the one run */
    assert_int_equal(queue_seeds(f, q, 8), 1);
    release(2);
    wait_started(f, 4);
    assert_int_equal(started[3], 3);
    release(3);
    release(4);
    run_until(f, none_running);
    fx_free(f);
}

/*
 * Stopped with jobs running on the CPU and the GPU and one queued, the
 * next start resumes the running ones first (in id order), then the one
 * that never ran; a backend=gpu job that the new process cannot run fails
 * instead of waiting forever.
 */
static void test_resume_after_restart(void **state)
{
    (void)state;
    struct fx *f = fx_new();
    start_pool(f, 1, 1);
    struct job *a = submit(f, 1, "cpu");
    struct job *b = submit(f, 2, "cpu");
    struct job *c = submit(f, 3, "gpu");
    int64_t ida = a->id, idb = b->id, idc = c->id;
    wait_started(f, 2); /* a on the CPU, c on the GPU; b waits */
    int q[8];
    assert_int_equal(queue_seeds(f, q, 8), 1);
    assert_int_equal(q[0], 2);
    close_table(f); /* the shutdown: runs stop and stay "running" in the store */

    /* the next process: recovery alone, before any worker exists */
    memset(&f->seen, 0, sizeof f->seen);
    open_table(f);
    char err[256] = "";
    assert_int_equal(jobs_recover(&f->t, err, sizeof err), 0);
    run_until(f, store_idle);
    assert_int_equal(queue_seeds(f, q, 8), 3);
    assert_int_equal(q[0], 1); /* resumed, in id order */
    assert_int_equal(q[1], 3);
    assert_int_equal(q[2], 2); /* then the job that never ran */
    a = jobs_find(&f->t, ida);
    b = jobs_find(&f->t, idb);
    c = jobs_find(&f->t, idc);
    assert_non_null(a);
    assert_int_equal(a->pub.state, JOB_QUEUED);
    assert_int_equal(a->pub.resumes, 1);
    assert_int_equal(b->pub.resumes, 0);
    assert_int_equal(c->pub.resumes, 1);
    assert_true(f->t.next_id > idc);

    /* this process has no GPU: the GPU job fails, the others run in order */
    start_pool(f, 0, 1);
    jobs_fail_unrunnable(&f->t);
    run_until(f, store_idle);
    assert_int_equal(c->pub.state, JOB_FAILED);
    assert_string_equal(c->pub.error_code, "gpu_unavailable");
    pthread_mutex_lock(&mu);
    n_started = 0;
    pthread_mutex_unlock(&mu);
    jobs_schedule(&f->t);
    wait_started(f, 1);
    assert_int_equal(started[0], 1);
    release(1);
    wait_started(f, 2);
    assert_int_equal(started[1], 2);
    release(2);
    run_until(f, none_running);
    fx_free(f);
}

static struct job *watched;
static int watched_requeued(struct fx *f)
{
    return watched->pub.state == JOB_QUEUED && watched->pub.resumes == 1 && storeq_idle(&f->sq);
}

/*
 * A job queued again after a lost GPU, before any checkpoint, and stopped
 * before it ran again: the next start keeps the engine time its first run
 * used (elapsed_s) as spent budget, though there is no checkpoint to
 * resume from, and counts it once among the jobs waiting.
 */
static void test_requeued_without_checkpoint_keeps_its_time(void **state)
{
    (void)state;
    struct fx *f = fx_new();
    int devs[2] = {0, 1};
    start_pool_on(f, devs, 2, 0);
    struct job *a = submit(f, 1, "gpu");
    struct job *b = submit(f, 2, "gpu");
    int64_t ida = a->id, idb = b->id;
    wait_started(f, 2); /* one on each device */
    uv_sleep(300);
    pthread_mutex_lock(&mu);
    sticky[2] = 1;
    pthread_mutex_unlock(&mu);
    watched = b;
    run_until(f, watched_requeued); /* a holds the last device: b waits */
    double ran = b->pub.elapsed_s;
    assert_true(ran >= 0.25);
    close_table(f);

    open_table(f);
    char err[256] = "";
    assert_int_equal(jobs_recover(&f->t, err, sizeof err), 0);
    run_until(f, store_idle);
    a = jobs_find(&f->t, ida);
    b = jobs_find(&f->t, idb);
    assert_int_equal(a->cur.state, JOB_QUEUED);
    assert_int_equal(b->cur.state, JOB_QUEUED);
    assert_false(b->has_ckpt);
    assert_true(b->elapsed_base >= ran - 1e-6); /* its next run gets budget_s - ran */
    assert_int_equal(f->t.waiting, 2);
    fx_free(f);
}

static int watched_ended(struct fx *f)
{
    return job_state_terminal(watched->pub.state) && storeq_idle(&f->sq);
}

/* A DELETE whose cancel reaches a run that then ends with a sticky GPU
 * error: the device is retired and the job ends cancelled; it is not
 * queued again to run its whole budget (a second DELETE would be a no-op). */
static void test_cancel_meets_device_lost(void **state)
{
    (void)state;
    struct fx *f = fx_new();
    int devs[2] = {0, 1};
    start_pool_on(f, devs, 2, 0);
    pthread_mutex_lock(&mu);
    sticky_on_cancel[1] = 1;
    pthread_mutex_unlock(&mu);
    struct job *j = submit(f, 1, "gpu");
    wait_started(f, 1);
    jobs_cancel(&f->t, j);
    watched = j;
    run_until(f, watched_ended);
    assert_int_equal(j->pub.state, JOB_CANCELLED);
    assert_string_equal(j->pub.stop_reason, "cancelled");
    assert_int_equal(worker_pool_healthy_devices(&f->pool), 1);
    assert_int_equal(f->seen.fatal, 0);
    assert_int_equal(n_started_now(), 1);
    assert_int_equal(f->t.waiting, 0);
    fx_free(f);
}

/* Each run's telemetry counts from 0: the run after a re-queue (a lost
 * GPU) adds its own evaluations to the daemon's, not only what passes the
 * first run's count. */
static void test_requeued_run_counts_its_evaluations(void **state)
{
    (void)state;
    struct fx *f = fx_new();
    int devs[2] = {0, 1};
    start_pool_on(f, devs, 2, 0);
    pthread_mutex_lock(&mu);
    sticky_once[1] = 1;
    tel_of[1] = 100;
    pthread_mutex_unlock(&mu);
    struct job *j = submit(f, 1, "gpu");
    run_until(f, resumed_once);
    release(1);
    run_until(f, none_running);
    assert_int_equal(j->pub.resumes, 1);
    struct jobs_stats st;
    jobs_stats(&f->t, &st);
    assert_int_equal(st.evaluations, 200);
    fx_free(f);
}

/* With resume_interrupted off, a job found running is interrupted, not
 * queued again. */
static void test_no_resume(void **state)
{
    (void)state;
    struct fx *f = fx_new();
    start_pool(f, 0, 1);
    struct job *a = submit(f, 1, "cpu");
    int64_t ida = a->id;
    wait_started(f, 1);
    close_table(f);
    f->cfg.resume_interrupted = 0;
    open_table(f);
    char err[256] = "";
    assert_int_equal(jobs_recover(&f->t, err, sizeof err), 0);
    run_until(f, store_idle);
    a = jobs_find(&f->t, ida);
    assert_int_equal(a->pub.state, JOB_INTERRUPTED);
    assert_string_equal(a->pub.stop_reason, "interrupted");
    assert_null(f->t.qhead);
    /* the new process made it interrupted: counted there; it admitted and
     * ran nothing */
    const struct jobs_timings *tm = jobs_timings(&f->t);
    assert_int_equal(tm->finished[JOB_INTERRUPTED], 1);
    assert_int_equal(tm->queue_wait.count, 0);
    assert_int_equal(tm->run.count, 0);
    fx_free(f);
}

int main(void)
{
    log_open("", LOG_LEVEL_ERROR, LOG_FORMAT_TEXT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifo_order),          cmocka_unit_test(test_kinds),
        cmocka_unit_test(test_admission),           cmocka_unit_test(test_cancel_queued),
        cmocka_unit_test(test_sticky_gpu_is_fatal), cmocka_unit_test(test_resume_after_restart),
        cmocka_unit_test(test_devices_spread),      cmocka_unit_test(test_device_lost_requeues),
        cmocka_unit_test(test_device_lost_cpu_fallback), cmocka_unit_test(test_tuning_admission), cmocka_unit_test(test_gpus_admission),
        cmocka_unit_test(test_no_resume),           cmocka_unit_test(test_idle_after_last_commit),
        cmocka_unit_test(test_requeued_without_checkpoint_keeps_its_time),
        cmocka_unit_test(test_cancel_meets_device_lost),
        cmocka_unit_test(test_requeued_run_counts_its_evaluations),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    log_close();
    return rc;
}
