/*
 * api.c - the route table of docs/API.md, the service endpoints and the
 * HTTP layer's life (api.h has the design and the map of its files).
 */
#include <string.h>

#include "server/api.h"
#include "server/openapi.h"
#include "server/web.h"
#include "build_id.h"
#include "util.h"

#ifndef LCN_VERSION
#define LCN_VERSION "unknown"
#endif

void api_init(struct api *a, uv_loop_t *loop, const struct lcnd_config *cfg, struct jobs *jobs,
              struct store *store, struct storeq *sq, struct worker_pool *pool,
              api_gpu_memory_fn gpu_memory, void *gpu_ctx)
{
    *a = (struct api){.loop = loop,
                      .cfg = cfg,
                      .jobs = jobs,
                      .store = store,
                      .sq = sq,
                      .pool = pool,
                      .gpu_memory = gpu_memory,
                      .gpu_ctx = gpu_ctx};
    sse_hub_init(&a->sse, store, cfg->sse_heartbeat_s);
    metrics_init(a);
}

void api_serving(struct api *a, struct http_server *http)
{
    a->http = http;
    a->ready = 1;
}

void api_stopping(struct api *a)
{
    a->stopping = 1;
}

void api_shutdown(struct api *a)
{
    api_jobs_shutdown(a);
    sse_shutdown(&a->sse);
}

void api_heartbeat(struct api *a)
{
    sse_heartbeat(&a->sse);
}

/* ------------------------------------------------------------ service */

static void h_healthz(struct http_req *r, void *ctx)
{
    (void)ctx;
    http_respond_json(r, 200, json_pack("{s:s}", "status", "ok"));
}

/* "absent" (no GPU worker), "ok", "degraded" (a device was lost, another
 * is healthy) or "unhealthy" (every device was lost). */
static const char *gpu_state(struct api *a)
{
    struct worker_counts gpu;
    worker_pool_counts(a->pool, WORKER_GPU, &gpu);
    if (!gpu.all)
        return "absent";
    if (!worker_pool_gpu_failed(a->pool))
        return "ok";
    return worker_pool_healthy_devices(a->pool) > 0 ? "degraded" : "unhealthy";
}

/* Every device: index, ordinal, name, UUID, state (ok, lost), workers. */
static json_t *devices_json(struct api *a, int with_workers)
{
    json_t *arr = json_array();
    for (int i = 0; i < metrics_devices(a); i++) {
        struct api_device d;
        metrics_device(a, i, &d);
        json_t *o = json_pack("{s:i, s:s}", "index", i, "state", d.up ? "ok" : "lost");
        json_object_set_new(o, "ordinal", d.described ? json_integer(d.desc.ordinal) : json_null());
        json_object_set_new(o, "name", d.described ? json_string(d.desc.name) : json_null());
        json_object_set_new(o, "uuid", d.described ? json_string(d.desc.uuid) : json_null());
        if (with_workers) {
            json_object_set_new(o, "workers", json_integer(d.workers));
            json_object_set_new(o, "busy", json_integer(d.busy));
        }
        json_array_append_new(arr, o);
    }
    return arr;
}

static void h_readyz(struct http_req *r, void *ctx)
{
    struct api *a = ctx;
    char why[400] = "";
    int store_ok = storeq_healthy(a->sq);
    if (!store_ok)
        snprintf(why, sizeof why, "the job store cannot commit");
    else
        store_ok = jobs_shared_ready(a->jobs, why, sizeof why);
    const char *gpu = gpu_state(a);
    /* ready while a device is healthy, or (gpu_required false) the CPU pool */
    struct worker_counts cpu;
    worker_pool_counts(a->pool, WORKER_CPU, &cpu);
    int gpu_ok = strcmp(gpu, "unhealthy") || (!a->cfg->gpu_required && cpu.healthy > 0);
    int ready = a->ready && !a->stopping && store_ok && gpu_ok;
    json_t *j = json_pack("{s:b, s:s, s:s}", "ready", ready, "store", store_ok ? "ok" : "unhealthy",
                          "gpu", gpu);
    if (!store_ok && a->jobs->cl) /* the shared queue says why (issue 20) */
        json_object_set_new(j, "reason", json_string(why));
    if (metrics_devices(a) > 0) {
        json_t *devs = devices_json(a, 1), *lost = json_array();
        for (size_t i = 0; i < json_array_size(devs); i++)
            if (!strcmp(json_string_value(json_object_get(json_array_get(devs, i), "state")), "lost"))
                json_array_append_new(lost, json_integer((json_int_t)i));
        json_object_set_new(j, "devices", devs);
        json_object_set_new(j, "lost_devices", lost);
    }
    if (a->stopping)
        json_object_set_new(j, "stopping", json_true());
    http_respond_json(r, ready ? 200 : 503, j);
}

static void h_version(struct http_req *r, void *ctx)
{
    struct api *a = ctx;
    json_t *b = json_array();
    struct worker_counts cpu, gpu;
    worker_pool_counts(a->pool, WORKER_CPU, &cpu);
    worker_pool_counts(a->pool, WORKER_GPU, &gpu);
    if (cpu.all)
        json_array_append_new(b, json_string(lcn_backend_name(LCN_BACKEND_CPU)));
    if (gpu.all)
        json_array_append_new(b, json_string(lcn_backend_name(LCN_BACKEND_GPU)));
#ifdef LCN_HAVE_CUDA
    int cuda = 1;
#else
    int cuda = 0;
#endif
    http_respond_json(r, 200,
                      json_pack("{s:s, s:s, s:b, s:o, s:o}", "version", LCN_VERSION, "commit",
                                lcn_build_commit, "cuda", cuda, "backends", b, "devices",
                                devices_json(a, 0)));
}

/* ------------------------------------------------------------ the table */

const struct http_route api_routes[] = {
    {"POST", "/jobs", api_jobs_post, HTTP_BODY},
    {"GET", "/jobs", api_jobs_list, 0},
    {"GET", "/jobs/{id}", api_jobs_get, 0},
    {"DELETE", "/jobs/{id}", api_jobs_delete, 0},
    {"GET", "/jobs/{id}/progress", api_jobs_progress, 0},
    {"GET", "/jobs/{id}/solution", api_jobs_solution, 0},
    {"GET", "/jobs/{id}/solution.svg", api_jobs_solution_svg, 0},
    {"GET", "/healthz", h_healthz, HTTP_NO_AUTH},
    {"GET", "/readyz", h_readyz, 0},
    {"GET", "/metrics", metrics_get, 0},
    {"GET", "/version", h_version, 0},
    {"GET", "/openapi.json", openapi_get, 0},
    {"GET", "/", web_index, HTTP_NO_AUTH},
};
const size_t api_route_count = LCN_ARRAY_LEN(api_routes);
_Static_assert(LCN_ARRAY_LEN(api_routes) <= API_MAX_ROUTES, "raise API_MAX_ROUTES (api.h)");
