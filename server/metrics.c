/*
 * metrics.c - GET /metrics: the Prometheus text format, one gauge or
 * counter per line, built on the loop from what each module reports
 * through its own functions (jobs_stats, worker_pool_counts, sse_count,
 * storeq_healthy, http_responses).
 */
#include "build_id.h"
#include "server/api.h"
#include "sbuf.h"

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
}

void metrics_get(struct http_req *r, void *ctx)
{
    struct api *a = ctx;
    struct sbuf b = {0};
    jobs_part(&b, a);
    http_part(&b, a);
    workers_part(&b, a);
    store_part(&b, a);
    sbuf_printf(&b,
                "# HELP lcn_build_info Build identity.\n# TYPE lcn_build_info gauge\n"
                "lcn_build_info{version=\"%s\",commit=\"%s\"} 1\n",
                LCN_VERSION, lcn_build_commit);
    http_respond(r, 200, "text/plain; version=0.0.4; charset=utf-8", b.p, b.len);
}
