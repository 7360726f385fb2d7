/*
 * metrics.c - GET /metrics: the Prometheus text format, gauges, counters
 * and histograms, built on the loop from what each module reports through
 * its own functions (jobs_stats, jobs_timings, worker_pool_counts,
 * sse_count, storeq_healthy, http_responses) and from the HTTP latency
 * histograms kept here (fed by the http on_answer hook, on the loop too:
 * no locks). Everything counts from the process's start: a restart of
 * the daemon resets every counter and histogram to 0, which Prometheus'
 * rate() and increase() read as a counter reset.
 */
#include <string.h>

#include "build_id.h"
#include "server/api.h"
#include "server/log.h"
#include "sbuf.h"
#include "util.h"

#ifndef LCN_VERSION
#define LCN_VERSION "unknown"
#endif

static void jobs_part(struct sbuf *b, struct api *a)
{
    struct jobs_stats st;
    jobs_stats(a->jobs, &st);
    sbuf_puts(b, "# HELP lcn_jobs Jobs in the store by state.\n# TYPE lcn_jobs gauge\n");
    for (int s = 0; s < JOB_STATE_COUNT; s++)
        sbuf_printf(b, "lcn_jobs{state=\"%s\"} %lld\n", job_state_name((enum job_state)s),
                    (long long)st.by_state[s]);
    sbuf_printf(b,
                "# HELP lcn_queue_depth Jobs waiting for a worker.\n# TYPE lcn_queue_depth gauge\n"
                "lcn_queue_depth %lld\n",
                (long long)st.queued);
    sbuf_printf(b,
                "# HELP lcn_running_jobs Jobs a worker is running.\n# TYPE lcn_running_jobs gauge\n"
                "lcn_running_jobs %lld\n",
                (long long)st.running);
    sbuf_printf(
        b,
        "# HELP lcn_evaluations_total Candidate positions evaluated by engines since start.\n"
        "# TYPE lcn_evaluations_total counter\nlcn_evaluations_total %llu\n",
        (unsigned long long)st.evaluations);
    sbuf_printf(b,
                "# HELP lcn_jobs_submitted_total Jobs accepted since start.\n"
                "# TYPE lcn_jobs_submitted_total counter\nlcn_jobs_submitted_total %llu\n",
                (unsigned long long)st.submitted);
}

static void timings_part(struct sbuf *b, struct api *a)
{
    const struct jobs_timings *tm = jobs_timings(a->jobs);
    sbuf_puts(b, "# HELP lcn_jobs_finished_total Jobs that reached a terminal state since start, "
                 "by outcome.\n# TYPE lcn_jobs_finished_total counter\n");
    for (int s = 0; s < JOB_STATE_COUNT; s++)
        if (job_state_terminal((enum job_state)s))
            sbuf_printf(b, "lcn_jobs_finished_total{outcome=\"%s\"} %llu\n",
                        job_state_name((enum job_state)s), (unsigned long long)tm->finished[s]);
    histogram_write_head(b, "lcn_job_queue_wait_seconds",
                         "Time from a job's admission to its engine's start.");
    histogram_write(b, &tm->queue_wait, "lcn_job_queue_wait_seconds", "");
    histogram_write_head(b, "lcn_job_run_seconds",
                         "Time from a job's engine start to its terminal state.");
    histogram_write(b, &tm->run, "lcn_job_run_seconds", "");
    histogram_write_head(b, "lcn_job_time_to_target_seconds",
                         "Engine time until a job's best K met its target_k.");
    histogram_write(b, &tm->time_to_target, "lcn_job_time_to_target_seconds", "");
}

/*
 * The bucket bounds (seconds) of the HTTP latency. Answers built on the
 * loop (a status from its cached text, /healthz, a progress page) take
 * about 0.1 ms; POST /jobs parses on the thread pool and waits for its
 * insert's commit (an fsync: ms to tens of ms, more for big graphs);
 * solutions render on the pool (ms to a second with n); DELETE of a
 * running job waits for its terminal state (the engine stops within ms,
 * ENGINE_ABANDON_NS = 2 s at worst). So 1-2.5-5 steps per decade from
 * 100 us to 10 s; past 10 s (header_timeout_s' default) is a fault: +Inf.
 */
static const double http_seconds[] = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
};

/* The method labels: a method outside the list (anything a client sends
 * to a path with no route) is "other", so that clients cannot make series
 * without bound. */
static const char *const methods[METRICS_METHODS] = {"GET",    "HEAD",  "POST",    "PUT",
                                                     "DELETE", "PATCH", "OPTIONS", "other"};

static int method_index(const char *method)
{
    for (int k = 0; k < METRICS_METHODS - 1; k++)
        if (!strcmp(method, methods[k]))
            return k;
    return METRICS_METHODS - 1;
}

void metrics_init(struct api *a)
{
    for (int i = 0; i <= API_MAX_ROUTES; i++)
        for (int k = 0; k < METRICS_METHODS; k++)
            histogram_init(&a->http_latency[i][k], http_seconds, LCN_ARRAY_LEN(http_seconds));
}

void metrics_http_answer(void *ctx, const struct http_route *route, const char *method,
                         int64_t latency_ns)
{
    struct api *a = ctx;
    size_t i = API_MAX_ROUTES;
    if (route) {
        i = (size_t)(route - api_routes);
        LCN_ASSERT(i < api_route_count);
    }
    histogram_observe(&a->http_latency[i][method_index(method)], (double)latency_ns / 1e9);
}

/* Every route's series for its own method, even at 0 (a dashboard finds
 * them before the first request); the rest (HEAD, no route) once seen. */
static void latency_part(struct sbuf *b, struct api *a)
{
    static const char name[] = "lcn_http_request_duration_seconds";
    histogram_write_head(b, name,
                         "Time from a request's arrival to its answer being handed over, by route "
                         "and method.");
    for (size_t i = 0; i <= api_route_count; i++) {
        size_t at = i < api_route_count ? i : API_MAX_ROUTES;
        const char *route = i < api_route_count ? api_routes[i].pattern : "none";
        int own = i < api_route_count ? method_index(api_routes[i].method) : -1;
        for (int k = 0; k < METRICS_METHODS; k++) {
            const struct histogram *h = &a->http_latency[at][k];
            if (k != own && !h->count)
                continue;
            char labels[160];
            snprintf(labels, sizeof labels, "route=\"%s\",method=\"%s\"", route, methods[k]);
            histogram_write(b, h, name, labels);
        }
    }
}

static void http_part(struct sbuf *b, struct api *a)
{
    sbuf_puts(b, "# HELP lcn_http_responses_total HTTP responses by status code.\n"
                 "# TYPE lcn_http_responses_total counter\n");
    for (int c = 100; c < 600; c++) {
        uint64_t n = http_responses(a->http, c);
        if (n)
            sbuf_printf(b, "lcn_http_responses_total{code=\"%d\"} %llu\n", c,
                        (unsigned long long)n);
    }
}

static void workers_part(struct sbuf *b, struct api *a)
{
    uint64_t gmem = a->gpu_memory ? a->gpu_memory(a->gpu_ctx) : 0;
    sbuf_printf(b,
                "# HELP lcn_gpu_memory_bytes Device memory held by lcnd.\n"
                "# TYPE lcn_gpu_memory_bytes gauge\nlcn_gpu_memory_bytes %llu\n",
                (unsigned long long)gmem);
    struct worker_counts cpu, gpu;
    worker_pool_counts(a->pool, WORKER_CPU, &cpu);
    worker_pool_counts(a->pool, WORKER_GPU, &gpu);
    sbuf_printf(
        b,
        "# HELP lcn_workers Engine workers by kind and state.\n# TYPE lcn_workers gauge\n"
        "lcn_workers{kind=\"cpu\",state=\"busy\"} %d\nlcn_workers{kind=\"cpu\",state=\"idle\"} %d\n"
        "lcn_workers{kind=\"gpu\",state=\"busy\"} %d\nlcn_workers{kind=\"gpu\",state=\"idle\"} "
        "%d\n",
        cpu.busy, cpu.all - cpu.busy, gpu.busy, gpu.all - gpu.busy);
}

int metrics_devices(struct api *a)
{
    return worker_pool_devices(a->pool);
}

void metrics_device(struct api *a, int i, struct api_device *out)
{
    memset(out, 0, sizeof *out);
    out->index = i;
    out->described = engines_gpu_describe(i, &out->desc) == 0;
    struct worker_counts c;
    worker_pool_device_counts(a->pool, i, &c);
    out->up = c.healthy > 0;
    out->workers = c.all;
    out->busy = c.busy;
}

/* A label value with its quote and backslash escaped (GPU names). */
static void label_value(struct sbuf *b, const char *s)
{
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            sbuf_add(b, "\\", 1);
        if (*s == '\n')
            sbuf_puts(b, "\\n");
        else
            sbuf_add(b, s, 1);
    }
}

/* Per GPU device (label device: its index in the daemon's device set). */
static void devices_part(struct sbuf *b, struct api *a)
{
    int n = metrics_devices(a);
    if (!n)
        return;
    static const struct {
        const char *name, *type, *help;
    } series[] = {
        {"lcn_gpu_device_info", "gauge", "A GPU device of the daemon: its ordinal, name and UUID."},
        {"lcn_gpu_device_up", "gauge", "1 while the device is usable, 0 once a sticky error lost it."},
        {"lcn_gpu_device_busy", "gauge", "Workers of the device running a job."},
        {"lcn_gpu_device_memory_bytes", "gauge", "Device memory lcnd holds on the device."},
        {"lcn_gpu_device_jobs_total", "counter", "Runs started on the device (a run across GPUs counts on each)."},
        {"lcn_gpu_device_evaluations_total", "counter", "Candidate evaluations of the runs on the device."},
        {"lcn_gpu_device_requeued_total", "counter", "Jobs queued again because the device was lost under them."},
    };
    for (size_t k = 0; k < LCN_ARRAY_LEN(series); k++) {
        sbuf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", series[k].name, series[k].help,
                    series[k].name, series[k].type);
        for (int i = 0; i < n; i++) {
            struct api_device d;
            struct jobs_device_stats js;
            metrics_device(a, i, &d);
            jobs_device_stats(a->jobs, i, &js);
            sbuf_printf(b, "%s{device=\"%d\"", series[k].name, i);
            uint64_t v = 0;
            switch (k) {
            case 0:
                sbuf_printf(b, ",ordinal=\"%d\",name=\"", d.described ? d.desc.ordinal : -1);
                label_value(b, d.described ? d.desc.name : "");
                sbuf_puts(b, "\",uuid=\"");
                label_value(b, d.described ? d.desc.uuid : "");
                sbuf_puts(b, "\"");
                v = 1;
                break;
            case 1: v = (uint64_t)d.up; break;
            case 2: v = (uint64_t)d.busy; break;
            case 3: v = d.desc.memory_bytes; break;
            case 4: v = js.runs; break;
            case 5: v = js.evaluations; break;
            default: v = js.requeued; break;
            }
            sbuf_printf(b, "} %llu\n", (unsigned long long)v);
        }
    }
}

static void store_part(struct sbuf *b, struct api *a)
{
    sbuf_printf(b,
                "# HELP lcn_sse_streams Open progress streams.\n# TYPE lcn_sse_streams gauge\n"
                "lcn_sse_streams %lld\n",
                (long long)sse_count(&a->sse));
    sbuf_printf(b,
                "# HELP lcn_store_healthy 1 while the job store commits.\n"
                "# TYPE lcn_store_healthy gauge\nlcn_store_healthy %d\n",
                storeq_healthy(a->sq));
    sbuf_printf(b,
                "# HELP lcn_store_commits_total Store transactions committed.\n"
                "# TYPE lcn_store_commits_total counter\nlcn_store_commits_total %llu\n",
                (unsigned long long)storeq_commits(a->sq));
    sbuf_printf(b,
                "# HELP lcn_log_lines_lost_total Log lines a failed write of the log lost.\n"
                "# TYPE lcn_log_lines_lost_total counter\nlcn_log_lines_lost_total %llu\n",
                log_lines_lost());
}

void metrics_get(struct http_req *r, void *ctx)
{
    struct api *a = ctx;
    struct sbuf b = {0};
    jobs_part(&b, a);
    timings_part(&b, a);
    http_part(&b, a);
    latency_part(&b, a);
    workers_part(&b, a);
    devices_part(&b, a);
    store_part(&b, a);
    sbuf_printf(&b,
                "# HELP lcn_build_info Build identity.\n# TYPE lcn_build_info gauge\n"
                "lcn_build_info{version=\"%s\",commit=\"%s\"} 1\n",
                LCN_VERSION, lcn_build_commit);
    http_respond(r, 200, "text/plain; version=0.0.4; charset=utf-8", b.p, b.len);
}
