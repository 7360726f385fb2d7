/*
 * serve.c - `lcnd serve`: start-up, signals, timers, systemd notification
 * and the shutdown sequence.
 *
 * Start-up order (READY=1 is sent only at the end, after the device probe
 * and once the socket is bound and served):
 *   config -> log -> token -> state dir + lock -> bind (refuse a
 *   non-loopback address without a token) -> store -> engine probe ->
 *   recovery of stored jobs -> workers -> HTTP -> port file -> READY.
 * lcnd_serve_main runs configure (config, log) and serve (loop_init,
 * start, serve_ready, the loop; start_undo after a failed start), then
 * lcnd_free, the one teardown every exit goes through.
 *
 * Wiring: serve.c owns struct lcnd and is the only module that knows
 * every other one. It gives the job table its hooks (jobs.h: changed,
 * removed and store_failed go to the HTTP layer, counts to the STATUS=
 * notification, idle to the shutdown, fatal to stop_begin), the store
 * queue and the worker pool their callbacks into the job table, and the
 * HTTP server the route table of the API layer.
 *
 * Shutdown (SIGTERM/SIGINT, or a fatal GPU error) is one state machine on
 * the loop, in this file only (enum lcnd_stop_phase; stop_begin,
 * stop_advance, stop_force, on_http_closed), advanced whenever a run ends
 * or a commit lands (the job table's idle hook), by the shutdown timer and
 * by a second signal:
 *   STOP_JOBS: the listening socket is closed, new work is refused (503),
 *     every running engine is asked to stop; each reports its final best
 *     layout, which is stored as a checkpoint while the job stays
 *     "running" in the store (the next start resumes it);
 *   STOP_HTTP, once no run is left and the store queue is empty (or the
 *     shutdown was forced): streams end, parked requests get 503, MHD
 *     stops as soon as no request is in progress, after at most
 *     HTTP_DRAIN_NS and never past the shutdown deadline, closing every
 *     connection left (idle keep-alive ones included: no client can hold
 *     the stop);
 *   STOP_CLOSE, when the HTTP handles are closed: workers are joined, the
 *     store thread is stopped, the remaining handles are closed and the
 *     loop ends. The exit status is 0 for a signal, non-zero for a fatal
 *     error.
 * The shutdown timeout and a second SIGTERM/SIGINT force STOP_JOBS on.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/engines.h"
#include "err.h"
#include "fileio.h"
#include "server/lcnd.h"
#include "server/log.h"
#include "server/notify.h"
#include "server/store_pg.h"
#include "util.h"
#ifdef LCN_HAVE_CUDA
#include "gpu.h"
#endif

#define HTTP_DRAIN_NS (1000000000LL) /* STOP_HTTP: the longest wait for answers in progress */

static void stop_begin(struct lcnd *d, int exit_code, const char *why);
static void stop_advance(struct lcnd *d);

/* ------------------------------------------------------------ notifications */

static void on_status_timer(uv_timer_t *t)
{
    struct lcnd *d = t->data;
    char msg[160];
    struct jobs_stats st;
    jobs_stats(&d->jobs, &st);
    snprintf(msg, sizeof msg, "STATUS=%s: %lld queued, %lld running",
             d->stop_phase != STOP_NONE ? "stopping" : "serving", (long long)st.queued,
             (long long)st.running);
    notify_send(msg);
}

/* Schedules a STATUS= notification (the queue depth changed). */
static void status_changed(struct lcnd *d)
{
    if (!d->ready || uv_is_active((uv_handle_t *)&d->t_status))
        return;
    uv_timer_start(&d->t_status, on_status_timer, 100, 0);
}

/* No GPU was lost, or one is still healthy, or (gpu_required false) the
 * CPU pool serves on. */
static int gpus_ok(struct lcnd *d)
{
    if (!worker_pool_gpu_failed(&d->pool) || worker_pool_healthy_devices(&d->pool) > 0)
        return 1;
    struct worker_counts cpu;
    worker_pool_counts(&d->pool, WORKER_CPU, &cpu);
    return !d->cfg.gpu_required && cpu.healthy > 0;
}

static int health_ok(struct lcnd *d)
{
    return storeq_healthy(&d->sq) && store_ping(d->store) == 0 && gpus_ok(d);
}

static void on_watchdog(uv_timer_t *t)
{
    struct lcnd *d = t->data;
    if (health_ok(d))
        notify_send("WATCHDOG=1");
    else
        log_warn("health check failed: watchdog not petted");
}

static void on_heartbeat(uv_timer_t *t)
{
    struct lcnd *d = t->data;
    api_heartbeat(&d->api);
}

static void on_deadlines(uv_timer_t *t)
{
    struct lcnd *d = t->data;
    jobs_enforce_deadlines(&d->jobs);
}

static void on_retention(uv_timer_t *t)
{
    struct lcnd *d = t->data;
    jobs_retention(&d->jobs);
}

/* ------------------------------------------------------------ the job table's hooks */

/* A round of the shared queue ended: the table knows, then the GETs that
 * waited for it are answered. */
static void on_cluster_synced(void *ctx, uint64_t round)
{
    struct lcnd *d = ctx;
    jobs_cluster_synced(&d->jobs, round);
    api_jobs_synced(&d->api);
}

static void on_jobs_counts(void *ctx)
{
    status_changed(ctx);
}

static void on_jobs_idle(void *ctx)
{
    stop_advance(ctx);
}

static void on_jobs_fatal(void *ctx, int exit_code, const char *why)
{
    stop_begin(ctx, exit_code, why);
}

/* ------------------------------------------------------------ shutdown */

static void on_closed_handle(uv_handle_t *h)
{
    struct lcnd *d = h->data;
    d->handles_open--;
}

static void close_handle(struct lcnd *d, uv_handle_t *h)
{
    if (uv_is_closing(h))
        return;
    h->data = d;
    d->handles_open++;
    uv_close(h, on_closed_handle);
}

/* The loop's own handles: every signal and timer of struct lcnd. */
struct own_handles {
    uv_signal_t *signals[3];
    uv_timer_t *timers[6];
};

static struct own_handles own_handles(struct lcnd *d)
{
    return (struct own_handles){
        {&d->sig_term, &d->sig_int, &d->sig_hup},
        {&d->t_watchdog, &d->t_status, &d->t_retention, &d->t_heartbeat, &d->t_deadlines,
         &d->t_shutdown},
    };
}

/* Creates the loop and initialises its own handles (none is started). */
static void loop_init(struct lcnd *d)
{
    d->loop = xcalloc(1, sizeof *d->loop);
    uv_loop_init(d->loop);
    struct own_handles hs = own_handles(d);
    for (size_t i = 0; i < LCN_ARRAY_LEN(hs.signals); i++) {
        uv_signal_init(d->loop, hs.signals[i]);
        hs.signals[i]->data = d;
    }
    for (size_t i = 0; i < LCN_ARRAY_LEN(hs.timers); i++) {
        uv_timer_init(d->loop, hs.timers[i]);
        hs.timers[i]->data = d;
    }
}

/* SIGTERM, SIGINT and SIGHUP are held (blocked, so they stay pending)
 * from the first line of lcnd serve until serve_ready has their watchers:
 * before, one arriving during the start took the default action (SIGHUP
 * from a log rotation, SIGTERM from a quick stop: the process killed, the
 * start's work lost) or, had the watchers been started early, ran the stop
 * on a half-started daemon inside start()'s loop turns. The threads the
 * start creates inherit the mask and never take them; the loop's thread
 * takes them once serve_ready unblocks them. */
static void hold_signals(int how) /* SIG_BLOCK or SIG_UNBLOCK */
{
    sigset_t held;
    sigemptyset(&held);
    sigaddset(&held, SIGTERM);
    sigaddset(&held, SIGINT);
    sigaddset(&held, SIGHUP);
    pthread_sigmask(how, &held, NULL);
}

static void close_own_handles(struct lcnd *d)
{
    /* held again from here to the exit: with their watchers closed a
     * signal would take its default action in the middle of the teardown
     * (a logrotate SIGHUP, a supervisor's second SIGTERM) */
    hold_signals(SIG_BLOCK);
    struct own_handles hs = own_handles(d);
    for (size_t i = 0; i < LCN_ARRAY_LEN(hs.signals); i++)
        close_handle(d, (uv_handle_t *)hs.signals[i]);
    for (size_t i = 0; i < LCN_ARRAY_LEN(hs.timers); i++)
        close_handle(d, (uv_handle_t *)hs.timers[i]);
}

static void on_http_closed(void *arg)
{
    struct lcnd *d = arg;
    d->http = NULL;
    d->stop_phase = STOP_CLOSE;
    int detached = worker_pool_release(&d->pool, d->stop_deadline_ns);
    d->workers_started = 0;
    cluster_stop(&d->cluster);
    storeq_close(&d->sq);
    if (detached) {
        /* an engine ignored its cancel flag: its last checkpoint is durable;
         * leave without freeing what it may still read */
        log_error("%d engine(s) did not stop in time; exiting without waiting (status 4)",
                  detached);
        store_close(d->store);
        d->store = NULL;
        log_close();
        _exit(d->exit_code ? d->exit_code : 4);
    }
    close_own_handles(d);
}

/* STOP_JOBS -> STOP_HTTP once no run is left and every commit landed, or
 * at once when forced. */
static void stop_advance(struct lcnd *d)
{
    if (d->stop_phase != STOP_JOBS)
        return;
    struct jobs_stats st;
    jobs_stats(&d->jobs, &st);
    if (!d->stop_forced && (st.running > 0 || !storeq_idle(&d->sq)))
        return;
    if (st.running > 0)
        log_warn("shutdown timeout: %lld job(s) still running", (long long)st.running);
    d->stop_phase = STOP_HTTP;
    uv_timer_stop(&d->t_shutdown);
    api_shutdown(&d->api);
    /* answers in progress get a moment to leave, never past the shutdown
     * deadline; idle connections do not hold the stop (http_stop) */
    int64_t drain = lcn_now_ns() + HTTP_DRAIN_NS;
    http_stop(d->http, drain < d->stop_deadline_ns ? drain : d->stop_deadline_ns, on_http_closed,
              d);
}

/* Stops waiting for runs and commits (the shutdown timeout, a second
 * signal). */
static void stop_force(struct lcnd *d)
{
    d->stop_forced = 1;
    stop_advance(d);
}

static void on_shutdown_timer(uv_timer_t *t)
{
    stop_force(t->data);
}

/* STOP_NONE -> STOP_JOBS; exit_code is the process's exit status (the
 * highest asked for wins). */
static void stop_begin(struct lcnd *d, int exit_code, const char *why)
{
    if (exit_code > d->exit_code)
        d->exit_code = exit_code;
    if (d->stop_phase != STOP_NONE)
        return;
    log_info("stopping: %s", why);
    d->stop_phase = STOP_JOBS;
    api_stopping(&d->api);
    notify_send("STOPPING=1");
    d->stop_deadline_ns = lcn_now_ns() + (int64_t)(d->cfg.shutdown_timeout_s * 1e9);
    uv_timer_stop(&d->t_retention);
    uv_timer_stop(&d->t_watchdog);
    http_quiesce(d->http);
    jobs_stop_all(&d->jobs);
    uv_timer_start(&d->t_shutdown, on_shutdown_timer,
                   (uint64_t)(d->cfg.shutdown_timeout_s * 1000.0), 0);
    stop_advance(d);
}

static int read_token(const char *path, char **out, char *err, size_t errlen);

/* SIGHUP: the token_file read again, so that a token is rotated without a
 * restart. A file that does not hold a token now keeps the old one. */
static void reload_token(struct lcnd *d)
{
    char err[512], *token;
    if (!*d->cfg.token_file || !d->http)
        return;
    if (read_token(d->cfg.token_file, &token, err, sizeof err)) {
        log_error("token not reloaded, the old one stays: %s", err);
        return;
    }
    if (strcmp(token, d->token)) {
        http_set_token(d->http, token);
        log_info("token reloaded from %s", d->cfg.token_file);
    }
    free(d->token);
    d->token = token;
}

static void on_signal(uv_signal_t *s, int signum)
{
    struct lcnd *d = s->data;
    if (signum == SIGHUP) {
        if (log_reopen() == 0)
            log_info("log reopened");
        reload_token(d);
        return;
    }
    if (d->stop_phase != STOP_NONE) {
        log_info("second %s: not waiting for running jobs",
                 signum == SIGINT ? "SIGINT" : "SIGTERM");
        stop_force(d);
        return;
    }
    stop_begin(d, 0, signum == SIGINT ? "SIGINT" : "SIGTERM");
}

/* ------------------------------------------------------------ start-up */

static int read_token(const char *path, char **out, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "token_file %s: %s", path, strerror(errno));
        return LCN_EIO;
    }
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf, f);
    int rerr = ferror(f) ? errno : 0;
    fclose(f);
    if (rerr) {
        /* a directory opens, and only the read says what it is */
        snprintf(err, errlen, "token_file %s: %s", path, strerror(rerr));
        return LCN_EIO;
    }
    if (n == sizeof buf) {
        /* a longer token was cut, and every client locked out */
        snprintf(err, errlen, "token_file %s: longer than %zu bytes", path, sizeof buf - 1);
        return LCN_EINVAL;
    }
    size_t lo = 0, hi = n;
    while (lo < hi && buf[lo] && strchr(" \t\r\n", buf[lo]))
        lo++;
    while (hi > lo && buf[hi - 1] && strchr(" \t\r\n", buf[hi - 1]))
        hi--;
    /* only visible ASCII: a NUL cut the token short (its prefix opened the
     * API), and control bytes cannot be sent in a header */
    int visible = 1;
    for (size_t i = lo; i < hi; i++)
        visible &= buf[i] > ' ' && buf[i] < 0x7f;
    if (hi - lo < 16 || !visible) {
        snprintf(err, errlen,
                 "token_file %s: the token must be one word of at least 16 bytes of visible ASCII",
                 path);
        return LCN_EINVAL;
    }
    buf[hi] = 0;
    *out = xstrdup(buf + lo);
    return 0;
}

static int mkdir_p(const char *path)
{
    char *p = xstrdup(path);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = 0;
        if (mkdir(p, 0700) && errno != EEXIST) {
            free(p);
            return -1;
        }
        *s = '/';
    }
    int rc = mkdir(p, 0700);
    free(p);
    return rc && errno != EEXIST ? -1 : 0;
}

/* Creates the state directory and takes its locks for the life of the
 * process (the descriptors are never closed). Only a lock held elsewhere
 * means another lcnd; any other failure (read-only file system, not a
 * directory, permissions) is reported with the path and the system's
 * reason, since it needs a different fix. */
static int lock_state_dir(const char *dir, char *err, size_t errlen)
{
    struct stat sb;
    if (mkdir_p(dir) || stat(dir, &sb)) {
        snprintf(err, errlen, "state_dir %s: %s", dir, strerror(errno));
        return LCN_EIO;
    }
    if (!S_ISDIR(sb.st_mode)) {
        snprintf(err, errlen, "state_dir %s: %s", dir, strerror(ENOTDIR));
        return LCN_EIO;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/lcnd.lock", dir);
    int lock = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lock < 0) {
        snprintf(err, errlen, "state_dir %s: cannot open %s/lcnd.lock: %s", dir, dir,
                 strerror(errno));
        return LCN_EIO;
    }
    if (flock(lock, LOCK_EX | LOCK_NB)) {
        int e = errno;
        close(lock);
        if (e == EWOULDBLOCK) {
            snprintf(err, errlen, "state_dir %s is in use by another lcnd", dir);
            return LCN_EBUSY;
        }
        snprintf(err, errlen, "state_dir %s: cannot lock %s/lcnd.lock: %s", dir, dir, strerror(e));
        return LCN_EIO;
    }
    /* the directory too: once lcnd.lock is deleted (a "stale" lock cleared
     * by hand or by a tmpfiles rule), a second lcnd creates and locks a new
     * one and opens the same store; a directory holding the store is not
     * deleted that way. Where directories cannot be locked (some network
     * file systems), the lock file alone stands. */
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0 && flock(dfd, LOCK_EX | LOCK_NB)) {
        int e = errno;
        close(dfd);
        if (e == EWOULDBLOCK) {
            snprintf(err, errlen, "state_dir %s is in use by another lcnd", dir);
            return LCN_EBUSY;
        }
    }
    return 0;
}

/* The port file is read by scripts waiting for the daemon: they must see the
 * whole line or no file, never an empty one. The message names the path. */
static int write_port_file(const char *path, const char *bound, char *err, size_t errlen)
{
    char line[160];
    int n = snprintf(line, sizeof line, "%s\n", bound);
    return lcn_write_atomic(path, line, (size_t)n, err, errlen);
}

/* 1 when run parameters p use device dev (engine_params.devices). */
static int run_uses(const struct engine_params *p, int dev)
{
    int n = p->gpus > 1 ? p->gpus : 1;
    for (int i = 0; p->devices && i < n; i++)
        if (p->devices[i] == dev)
            return 1;
    return 0;
}

/* test_fake_gpu = cpu: a "GPU" run is the CPU engine on one thread; with
 * fault set (the test_gpu_fault device's first run) it runs for
 * test_gpu_fault_ms, then its devices are lost and it reports a sticky
 * error, as the real hook makes a device do. */
static int fake_gpu_run(struct lcnd *d, const struct lcn_graph *g, const struct engine_params *p,
                        struct engine_result *out, int fault)
{
    struct engine_params q = *p;
    q.threads = 1;
    q.gpus = 0;
    if (!fault)
        return engine_cpu_run(g, &q, out);
    int64_t cut = lcn_now_ns() + d->cfg.test_gpu_fault_ms * 1000000LL;
    if (q.deadline_ns > cut)
        q.deadline_ns = cut;
    log_warn("test_gpu_fault: fake gpu %lld fails in %lld ms", (long long)d->cfg.test_gpu_fault,
             (long long)d->cfg.test_gpu_fault_ms);
    if (engine_cpu_run(g, &q, out) == 0)
        engine_result_release(out);
    atomic_store(&d->engine.fake_lost[d->cfg.test_gpu_fault], 1);
    return LCN_EGPU_STICKY;
}

/* Workers call the backend dispatcher (engines.h) with their own kind. */
static int dispatch(void *ctx, const struct worker *w, const struct lcn_graph *g,
                    const struct engine_params *p, struct engine_result *out)
{
    struct lcnd *d = ctx;
    if (w->kind == WORKER_GPU && d->engine.fake_gpu_ns) {
        /* test hook: a "GPU" that runs the CPU engine briefly, then reports
         * a sticky device error */
        struct engine_params q = *p;
        int64_t cut = lcn_now_ns() + d->engine.fake_gpu_ns;
        if (q.deadline_ns > cut)
            q.deadline_ns = cut;
        int rc = engine_cpu_run(g, &q, out);
        if (rc == 0)
            engine_result_release(out);
        return LCN_EGPU_STICKY;
    }
    int fdev = (int)d->cfg.test_gpu_fault;
    if (w->kind == WORKER_GPU && d->engine.fake_cpu)
        return fake_gpu_run(d, g, p, out, fdev >= 0 && run_uses(p, fdev) &&
                                              !atomic_exchange(&d->engine.fault_armed, 1));
    if (w->kind == WORKER_GPU && fdev >= 0 && run_uses(p, fdev) &&
        !atomic_exchange(&d->engine.fault_armed, 1)) {
        /* test hook: that device's first launch test_gpu_fault_ms from now fails */
        log_warn("test_gpu_fault: gpu %d fails its first launch in %lld ms", fdev,
                 (long long)d->cfg.test_gpu_fault_ms);
        engines_gpu_inject_fault(fdev, lcn_now_ns() + d->cfg.test_gpu_fault_ms * 1000000LL);
    }
    return engines_run(w->kind == WORKER_GPU ? LCN_BACKEND_GPU : LCN_BACKEND_CPU, g, p, out);
}

/* After a sticky error: whether device dev still works (the fake GPU never does). */
static int device_ok(void *ctx, int dev)
{
    struct lcnd *d = ctx;
    if (d->engine.fake_cpu)
        return dev >= 0 && dev < ENGINE_MAX_DEVICES && !atomic_load(&d->engine.fake_lost[dev]);
    return !d->engine.fake_gpu_ns && engines_gpu_healthy(dev);
}

static uint64_t gpu_memory(void *ctx)
{
    (void)ctx;
    uint64_t sum = 0;
    for (int i = 0; i < engines_gpu_count(); i++) {
        struct engines_gpu_desc g;
        if (engines_gpu_describe(i, &g) == 0)
            sum += g.memory_bytes;
    }
    return sum;
}

#ifdef LCN_HAVE_CUDA
/* Every device can hold g (any of them may run the job). */
static int gpu_fits_real(void *ctx, const struct lcn_graph *g, char *why, size_t len)
{
    (void)ctx;
    int n = engines_gpu_count();
    for (int i = 0; i < n; i++) {
        struct gpu_ctx *c = engines_gpu_ctx_at(i);
        int rc = c ? gpu_fits(c, g, why, len) : LCN_ENOGPU;
        if (rc)
            return rc;
    }
    return n ? 0 : LCN_ENOGPU;
}

/* Opens the devices of the gpus option (all visible ones by default) and
 * lays out their workers. Returns 0 (d->engine.gpu_why says why no GPU
 * runs, when none does) or a start-up error with err filled. */
static int open_devices(struct lcnd *d, char *err, size_t errlen)
{
    char why[256] = "";
    int ord[ENGINES_MAX_GPUS];
    int visible = gpu_device_count();
    if (visible <= 0) {
        snprintf(d->engine.gpu_why, sizeof d->engine.gpu_why, "no usable CUDA device");
        return 0;
    }
    int n = config_gpus_parse(d->cfg.gpus, visible, ord, ENGINES_MAX_GPUS, err, errlen);
    if (n < 0)
        return n;
    struct gpu_config gc;
    gpu_config_default(&gc);
    gc.max_nodes = (int32_t)d->cfg.gpu_max_nodes;
    gc.max_edges = (int32_t)d->cfg.gpu_max_edges;
    if (n == 0 || engines_gpu_open_set(&gc, ord, n, why, sizeof why) != 0) {
        snprintf(d->engine.gpu_why, sizeof d->engine.gpu_why, "%s",
                 why[0] ? why : "no usable CUDA device");
        return 0;
    }
    for (int i = 0; i < n; i++) {
        struct gpu_ctx *c = engines_gpu_ctx_at(i);
        const struct gpu_device_info *info = gpu_ctx_device(c);
        int slots = (int)gpu_ctx_slots(c);
        int use = d->cfg.gpu_slots < 0 ? slots : (int)LCN_MIN(d->cfg.gpu_slots, slots);
        for (int k = 0; k < use && d->engine.n_gpu < LCND_MAX_GPU_WORKERS; k++)
            d->engine.worker_device[d->engine.n_gpu++] = i;
        log_info("gpu %d: device %d, %s (%s), %d workspace slots, %d used", i, info->ordinal,
                 info->name, info->uuid, slots, use);
    }
    d->engine.n_devices = n;
    d->engine.gpu_why[0] = 0;
    d->engine.gpu_fits = gpu_fits_real;
    return 0;
}
#endif

static int gpu_fits_any(void *ctx, const struct lcn_graph *g, char *why, size_t len)
{
    (void)ctx;
    (void)g;
    (void)why;
    (void)len;
    return 0;
}

/* A fake device's slot holds what a real one of this configuration would
 * (gpu_max_nodes, gpu_max_edges; gpu_fits' first test and message). */
static int gpu_fits_fake(void *ctx, const struct lcn_graph *g, char *why, size_t len)
{
    const struct lcnd *d = ctx;
    if (g->n <= d->cfg.gpu_max_nodes && g->m <= d->cfg.gpu_max_edges)
        return 0;
    snprintf(why, len, "graph of %d nodes and %d edges exceeds the gpu slot (%d nodes, %d edges)",
             g->n, g->m, (int)d->cfg.gpu_max_nodes, (int)d->cfg.gpu_max_edges);
    return LCN_ETOOBIG;
}

/* test_fake_gpu = cpu: one fake device per entry of gpus (all: one), with
 * gpu_slots workers each (-1: one). */
static int fake_devices(struct lcnd *d, char *err, size_t errlen)
{
    int ord[ENGINES_MAX_GPUS];
    int n = config_gpus_parse(d->cfg.gpus, 1, ord, ENGINES_MAX_GPUS, err, errlen);
    if (n == LCN_ENOGPU) /* any ordinal: the devices are fake */
        n = config_gpus_parse(d->cfg.gpus, -1, ord, ENGINES_MAX_GPUS, err, errlen);
    if (n < 0)
        return n;
    int per = d->cfg.gpu_slots < 0 ? 1 : (int)d->cfg.gpu_slots;
    for (int i = 0; i < (n ? n : 1); i++)
        for (int k = 0; k < per && d->engine.n_gpu < LCND_MAX_GPU_WORKERS; k++)
            d->engine.worker_device[d->engine.n_gpu++] = i;
    d->engine.n_devices = n ? n : 1;
    d->engine.fake_cpu = 1;
    d->engine.gpu_why[0] = 0;
    d->engine.gpu_fits = gpu_fits_fake;
    log_warn("test hook test_fake_gpu = cpu: %d fake GPU devices running the CPU engine",
             d->engine.n_devices);
    return 0;
}

/* Probes the devices: how many GPU workers to start on which, and why none. */
static int engine_setup(struct lcnd *d, char *err, size_t errlen)
{
    d->engine.run = dispatch;
    d->engine.ctx = d;
    d->engine.n_gpu = 0;
    d->engine.gpu_memory_bytes = gpu_memory;
    snprintf(d->engine.gpu_why, sizeof d->engine.gpu_why, "this build has no GPU engine");
    if (d->cfg.test_fake_gpu == CONFIG_FAKE_GPU_STICKY) {
        d->engine.fake_gpu_ns = d->cfg.test_fake_gpu_ms * 1000000LL;
        d->engine.n_gpu = 1;
        d->engine.n_devices = 1;
        d->engine.worker_device[0] = 0;
        d->engine.gpu_why[0] = 0;
        d->engine.gpu_fits = gpu_fits_any;
        log_warn("test hook test_fake_gpu = sticky: one fake GPU worker that fails every job");
        return 0;
    }
    int rc = 0;
    if (d->cfg.test_fake_gpu == CONFIG_FAKE_GPU_CPU) {
        rc = fake_devices(d, err, errlen);
    } else if (d->cfg.backend == LCN_BACKEND_CPU || d->cfg.gpu_slots == 0) {
        snprintf(d->engine.gpu_why, sizeof d->engine.gpu_why, "disabled by configuration");
        return 0;
    } else {
#ifdef LCN_HAVE_CUDA
        rc = open_devices(d, err, errlen);
#endif
    }
    if (rc)
        return rc;
    if (d->cfg.test_gpu_fault >= d->engine.n_devices && d->engine.n_devices > 0) {
        snprintf(err, errlen, "test_gpu_fault: no device %lld (%d opened)",
                 (long long)d->cfg.test_gpu_fault, d->engine.n_devices);
        return LCN_EINVAL;
    }
    if (d->cfg.test_gpu_fault >= 0 && d->engine.n_devices > 0)
        log_warn("test hook test_gpu_fault = %lld: that device fails a launch of its first job",
                 (long long)d->cfg.test_gpu_fault);
    if (d->cfg.backend == LCN_BACKEND_GPU && d->engine.n_gpu == 0) {
        snprintf(err, errlen, "backend gpu: no usable GPU (%s)", d->engine.gpu_why);
        return LCN_ENOGPU;
    }
    if (d->engine.n_gpu == 0 && d->cfg.backend == LCN_BACKEND_AUTO)
        log_info("no GPU worker: %s; running the CPU engine", d->engine.gpu_why);
    return 0;
}

/* Ids the shared queue takes from the database at a time. */
#define CLUSTER_ID_BLOCK 64

/* The shared queue (store_url): the cluster thread, once the listening
 * socket is bound (a daemon that could not bind never gives back the claims
 * of a live daemon of the same name), and its first block of ids. */
static int start_cluster(struct lcnd *d, char *err, size_t errlen)
{
    if (d->cfg.node_name[0]) {
        snprintf(d->node_name, sizeof d->node_name, "%s", d->cfg.node_name);
    } else {
        char host[200] = "";
        gethostname(host, sizeof host - 1);
        const char *port = strrchr(d->bound, ':');
        snprintf(d->node_name, sizeof d->node_name, "%s:%s", host, port ? port + 1 : d->bound);
    }
    struct cluster_config cc = {
        .url = d->cfg.store_url,
        .owner = d->node_name,
        .lease_ms = (int64_t)(d->cfg.lease_s * 1000),
        .poll_ms = d->cfg.queue_poll_ms,
        .id_block = CLUSTER_ID_BLOCK,
    };
    struct cluster_callbacks cb = {.synced = on_cluster_synced, .sctx = d};
    jobs_cluster_callbacks(&d->jobs, &cb);
    int rc = cluster_start(&d->cluster, d->loop, d->store, &cc, &cb, err, errlen);
    if (rc)
        return rc;
    char why[400];
    int64_t until = lcn_now_ns() + 10000000000LL;
    while (!jobs_shared_ready(&d->jobs, why, sizeof why) && lcn_now_ns() < until)
        uv_run(d->loop, UV_RUN_ONCE);
    if (!jobs_shared_ready(&d->jobs, why, sizeof why)) {
        snprintf(err, errlen, "shared queue: %s", why);
        return LCN_ESTORE;
    }
    log_info("shared queue: this daemon is '%s' (lease %.1f s)", d->node_name, d->cfg.lease_s);
    return 0;
}

static int start(struct lcnd *d, char *err, size_t errlen)
{
    int rc;
    if (*d->cfg.token_file && (rc = read_token(d->cfg.token_file, &d->token, err, errlen)))
        return rc;
    if ((rc = lock_state_dir(d->cfg.state_dir, err, errlen)))
        return rc;
    /* a port file left by an earlier run would send a watcher to its port
     * while this start (recovery, a long quick_check) goes on; only a
     * regular file goes: a device, FIFO or symlink (/dev/full, /dev/stdout)
     * is written in place (lcn_write_atomic), and root removed the node */
    struct stat pst;
    if (*d->cfg.port_file && lstat(d->cfg.port_file, &pst) == 0 && S_ISREG(pst.st_mode))
        unlink(d->cfg.port_file);
    int loopback = 0;
    if ((rc = http_listen(d->cfg.listen, &d->listen_fd, d->bound, sizeof d->bound, &loopback, err,
                          errlen)))
        return rc;
    if (!loopback && !d->token && !d->cfg.allow_insecure_listen) {
        snprintf(err, errlen,
                 "refusing to listen on non-loopback %s without a token_file "
                 "(set allow_insecure_listen to override)",
                 d->bound);
        return LCN_EINVAL; /* start_undo closes the socket */
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/jobs.db", d->cfg.state_dir);
    if (d->cfg.store_url && d->cfg.store_url[0]) {
        if (!pg_store_is_url(d->cfg.store_url)) {
            snprintf(err, errlen, "store_url: expected a postgresql:// URL");
            return LCN_EINVAL;
        }
        snprintf(path, sizeof path, "%s", d->cfg.store_url);
    }
    if ((rc = store_open(
             path, d->cfg.store_sync == CONFIG_SYNC_FULL ? STORE_SYNC_FULL : STORE_SYNC_NORMAL,
             &d->store, err, errlen)))
        return rc;
    if ((rc = engine_setup(d, err, errlen)))
        return rc;
    struct jobs_hooks h = {
        .counts = on_jobs_counts, .idle = on_jobs_idle, .fatal = on_jobs_fatal, .pctx = d};
    api_jobs_hooks(&d->api, &h); /* changed, removed, store_failed: the HTTP layer's */
    jobs_init(&d->jobs, &d->cfg, d->store, &d->sq, &d->pool, d->engine.gpu_fits, d, &h);
    if (store_is_shared(d->store))
        jobs_share(&d->jobs, &d->cluster, (int64_t)(d->cfg.lease_s * 1000), CLUSTER_ID_BLOCK);
    jobs_set_device_ok(&d->jobs, device_ok);
    api_init(&d->api, d->loop, &d->cfg, &d->jobs, d->store, &d->sq, &d->pool,
             d->engine.gpu_memory_bytes, d);
    if ((rc = storeq_init(&d->sq, d->loop, d->store, jobs_on_store_done, jobs_on_store_failed,
                          &d->jobs))) {
        snprintf(err, errlen, "cannot start the store thread");
        return rc;
    }
    if ((rc = jobs_recover(&d->jobs, err, errlen)))
        return rc;
    /* what recovery changed (resumed, interrupted) is durable before anyone
     * can ask */
    while (!storeq_idle(&d->sq) && d->sq.healthy)
        uv_run(d->loop, UV_RUN_ONCE);
    if (!d->sq.healthy) {
        snprintf(err, errlen, "the job store does not commit");
        return LCN_ESTORE;
    }
    int n_gpu = d->engine.n_gpu;
    int n_cpu = d->cfg.backend == LCN_BACKEND_GPU ? 0 : (int)d->cfg.cpu_workers;
    const int *devices = d->engine.worker_device;
    if (n_gpu + n_cpu == 0) {
        snprintf(err, errlen, "no worker to run jobs (cpu_workers 0 and no usable GPU)");
        return LCN_EINVAL;
    }
    if ((rc = worker_pool_init(&d->pool, d->loop, devices, n_gpu, n_cpu, d->engine.run,
                               d->engine.ctx, jobs_on_report, jobs_on_reaped, &d->jobs))) {
        snprintf(err, errlen, "cannot start the worker threads");
        return rc;
    }
    d->workers_started = 1;
    /* recovered jobs no worker here can run fail now, durably, before
     * anyone can ask */
    jobs_fail_unrunnable(&d->jobs);
    while (!storeq_idle(&d->sq) && d->sq.healthy)
        uv_run(d->loop, UV_RUN_ONCE);
    if (store_is_shared(d->store) && (rc = start_cluster(d, err, errlen)))
        return rc;
    struct http_config hc = {
        .listen_fd = d->listen_fd,
        .max_body = (size_t)d->cfg.max_body_bytes,
        .max_body_total = (size_t)(d->cfg.max_body_total_bytes &&
                                           d->cfg.max_body_total_bytes < d->cfg.max_body_bytes
                                       ? d->cfg.max_body_bytes
                                       : d->cfg.max_body_total_bytes),
        .max_connections = (unsigned)d->cfg.max_connections,
        .max_connections_per_ip = (unsigned)d->cfg.max_connections_per_ip,
        .connection_timeout_s = (unsigned)d->cfg.connection_timeout_s,
        .header_timeout_s = (unsigned)d->cfg.header_timeout_s,
        .connection_reserve = (unsigned)d->cfg.connection_reserve,
        .token = d->token,
        .allowed_origins = d->cfg.allowed_origins,
        .routes = api_routes,
        .n_routes = api_route_count,
        .ctx = &d->api,
        .on_answer = metrics_http_answer,
    };
    if ((rc = http_start(&d->http, d->loop, &hc, err, errlen)))
        return rc;
    if (*d->cfg.port_file)
        return write_port_file(d->cfg.port_file, d->bound, err, errlen);
    return 0;
}

/* After start() failed: stops what it started (in the reverse order),
 * closes the loop's own handles and runs the loop until they are closed. */
static void start_undo(struct lcnd *d)
{
    if (d->http) {
        http_stop(d->http, lcn_now_ns(), NULL, NULL);
        d->http = NULL;
    } else if (d->listen_fd >= 0) {
        close(d->listen_fd);
    }
    if (d->workers_started)
        worker_pool_release(&d->pool, lcn_now_ns() + 1000000000LL);
    cluster_stop(&d->cluster);
    if (d->sq.started)
        storeq_close(&d->sq);
    close_own_handles(d);
    uv_run(d->loop, UV_RUN_DEFAULT);
}

/* After start(): the signals and timers run, the job table gets its first
 * retention pass and schedule, and systemd hears READY=1. */
static void serve_ready(struct lcnd *d)
{
    uv_signal_start(&d->sig_term, on_signal, SIGTERM);
    uv_signal_start(&d->sig_int, on_signal, SIGINT);
    uv_signal_start(&d->sig_hup, on_signal, SIGHUP);
    /* a stop asked for during the start: the jobs it recovered are not
     * started only to be stopped on the next loop turn */
    sigset_t pending;
    int stop_pending = sigpending(&pending) == 0 &&
                       (sigismember(&pending, SIGTERM) == 1 || sigismember(&pending, SIGINT) == 1);
    hold_signals(SIG_UNBLOCK); /* one held during the start arrives now */
    uint64_t hb = (uint64_t)(d->cfg.sse_heartbeat_s * 500.0);
    uv_timer_start(&d->t_heartbeat, on_heartbeat, hb ? hb : 1, hb ? hb : 1);
    uv_timer_start(&d->t_deadlines, on_deadlines, DEADLINE_CHECK_MS, DEADLINE_CHECK_MS);
    uv_timer_start(&d->t_retention, on_retention, 60000, 60000);
    uint64_t wd = notify_watchdog_usec();
    if (wd) {
        uint64_t ms = wd / 2000 ? wd / 2000 : 1;
        uv_timer_start(&d->t_watchdog, on_watchdog, ms, ms);
    }
    jobs_retention(&d->jobs);
    if (!stop_pending)
        jobs_schedule(&d->jobs);
    d->ready = 1;
    api_serving(&d->api, d->http);
    struct worker_counts cpu, gpu;
    worker_pool_counts(&d->pool, WORKER_CPU, &cpu);
    worker_pool_counts(&d->pool, WORKER_GPU, &gpu);
    log_info("lcnd %s listening on %s (state %s, %d cpu + %d gpu workers)", LCND_VERSION, d->bound,
             d->cfg.state_dir, cpu.all, gpu.all);
    notify_send("READY=1");
    on_status_timer(&d->t_status);
}

/* The configuration from the command line, then the log. Returns -1 to go
 * on, or the exit status: 0 after --help or --print-config, 2 after a usage
 * error, 1 when the log file does not open. */
static int configure(struct lcnd *d, int argc, char **argv)
{
    config_defaults(&d->cfg);
    int help = 0, print = 0;
    char err[512] = "";
    if (config_parse_args(&d->cfg, argc, argv, &help, &print, err, sizeof err)) {
        fprintf(stderr, "lcnd serve: %s\n", err);
        return 2;
    }
    if (help) {
        config_write_help(stdout, "lcnd");
        return 0;
    }
    if (print) {
        config_write(stdout, &d->cfg);
        return 0;
    }
    int ord[ENGINES_MAX_GPUS];
    if (config_gpus_parse(d->cfg.gpus, -1, ord, ENGINES_MAX_GPUS, err, sizeof err) < 0) {
        fprintf(stderr, "lcnd serve: %s\n", err);
        return 2;
    }
    if (log_open(d->cfg.log_file, d->cfg.log_level, d->cfg.log_format)) {
        fprintf(stderr, "lcnd serve: log_file %s: %s\n", d->cfg.log_file, strerror(errno));
        return 1;
    }
    return -1;
}

/* Starts the daemon and serves until the shutdown ends the loop. Returns
 * the exit status. */
static int serve(struct lcnd *d)
{
    signal(SIGPIPE, SIG_IGN);
    if (notify_init() < 0)
        log_warn("NOTIFY_SOCKET is malformed; systemd notifications are off");
    loop_init(d);
    char err[512] = "";
    int rc = start(d, err, sizeof err);
    if (rc) {
        log_error("cannot start: %s", err);
        fprintf(stderr, "lcnd serve: %s\n", err);
        start_undo(d);
        return rc == LCN_EINVAL ? 2 : 1;
    }
    serve_ready(d);
    uv_run(d->loop, UV_RUN_DEFAULT);
#ifdef LCN_HAVE_CUDA
    engines_gpu_close();
#endif
    log_info("stopped (exit status %d)", d->exit_code);
    return d->exit_code;
}

/* What configure and serve left; every member may be unset. */
static void lcnd_free(struct lcnd *d)
{
    if (d->loop) {
        uv_loop_close(d->loop);
        free(d->loop);
    }
    jobs_release(&d->jobs);
    store_close(d->store);
    free(d->token);
    config_release(&d->cfg);
    notify_release();
    log_close();
    free(d);
}

int lcnd_serve_main(int argc, char **argv)
{
    hold_signals(SIG_BLOCK);
    /* a parent that ignores them (a shell's background job ignores
     * SIGINT; nohup, SIGHUP) would make one sent during the start vanish
     * instead of pending: blocked, the default action cannot run */
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    struct lcnd *d = xcalloc(1, sizeof *d);
    d->listen_fd = -1;
    int status = configure(d, argc, argv);
    if (status < 0)
        status = serve(d);
    lcnd_free(d);
    return status;
}
