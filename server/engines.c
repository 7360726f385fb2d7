#include "server/engines.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "err.h"
#include "util.h"
#ifdef LCN_HAVE_CUDA
#include "gpu.h"
#endif


#ifdef LCN_HAVE_CUDA
/*
 * The process's device set: opened once (explicitly by the daemon or
 * `lcnd solve`, or lazily with defaults on device 0 by the first user),
 * closed at exit. The mutex guards opening and closing; the contexts
 * themselves are thread-safe.
 */
static pthread_mutex_t gpu_mu = PTHREAD_MUTEX_INITIALIZER;
static struct gpu_ctx *gpus[ENGINES_MAX_GPUS];
static int n_gpus;
static int gpu_tried;
static int32_t size_nodes, size_edges; /* engines_gpu_size; 0: gpu_config's default */

static void close_locked(void)
{
    for (int i = 0; i < n_gpus; i++)
        gpu_ctx_free(gpus[i]);
    memset(gpus, 0, sizeof gpus);
    n_gpus = 0;
}

/*
 * Replicas a slot holds: the default, or fewer when the per-replica arrays
 * (current and best coordinates, 16 bytes a node; current and best counts
 * and the count histogram, 12 bytes an edge) of that many would pass
 * SLOT_REPLICA_BYTES; never fewer than 264 (two blocks per SM on an H200,
 * more than any plan of a graph that large fills).
 */
#define SLOT_REPLICA_BYTES (4ll << 30)
static int32_t size_replicas(const struct gpu_config *c)
{
    const int64_t per = 16 * (int64_t)c->max_nodes + 12 * (int64_t)c->max_edges;
    return (int32_t)LCN_MIN((int64_t)c->max_replicas, LCN_MAX(264, SLOT_REPLICA_BYTES / per));
}

int engines_gpu_open_set(const struct gpu_config *cfg, const int *ordinals, int n, char *err,
                         size_t errlen)
{
    int rc = 0;
    if (errlen)
        err[0] = 0;
    if (n < 1 || n > ENGINES_MAX_GPUS) {
        snprintf(err, errlen, "gpus: %d devices, expected 1 to %d", n, ENGINES_MAX_GPUS);
        return LCN_EINVAL;
    }
    pthread_mutex_lock(&gpu_mu);
    gpu_tried = 1;
    if (n_gpus == 0) {
        struct gpu_config c;
        if (cfg)
            c = *cfg;
        else {
            gpu_config_default(&c);
            c.max_nodes = LCN_MAX(c.max_nodes, size_nodes);
            c.max_edges = LCN_MAX(c.max_edges, size_edges);
        }
        c.max_replicas = size_replicas(&c); /* also lcnd serve's gpu_max_nodes, gpu_max_edges */
        c.index_bytes = LCN_MAX(c.index_bytes, gpu_index_bytes_for(c.max_edges));
        int visible = gpu_device_count();
        for (int i = 0; i < n && !rc; i++) {
            char why[200] = "";
            c.device = ordinals[i];
            rc = visible > 0 ? gpu_ctx_new(&c, &gpus[i], why, sizeof why) : LCN_ENOGPU;
            if (rc)
                snprintf(err, errlen, "gpu %d (device %d): %s", i, ordinals[i],
                         why[0] ? why : "no CUDA device");
            else
                n_gpus = i + 1;
        }
        if (rc)
            close_locked();
    }
    pthread_mutex_unlock(&gpu_mu);
    return rc;
}

void engines_gpu_size(int32_t max_nodes, int32_t max_edges)
{
    pthread_mutex_lock(&gpu_mu);
    size_nodes = max_nodes;
    size_edges = max_edges;
    pthread_mutex_unlock(&gpu_mu);
}

int engines_gpu_open(const struct gpu_config *cfg, char *err, size_t errlen)
{
    int dev = cfg ? cfg->device : 0;
    int rc = engines_gpu_open_set(cfg, &dev, 1, err, errlen);
    if (rc == LCN_ENOGPU && errlen && !err[0])
        snprintf(err, errlen, "no CUDA device");
    return rc;
}

int engines_gpu_open_first(int n, char *err, size_t errlen)
{
    int visible = gpu_device_count();
    if (n <= 0)
        n = visible < ENGINES_MAX_GPUS ? visible : ENGINES_MAX_GPUS;
    if (visible <= 0 || n > visible) {
        snprintf(err, errlen, "%d GPUs asked, %d CUDA device%s visible", n, visible,
                 visible == 1 ? "" : "s");
        return LCN_ENOGPU;
    }
    int ord[ENGINES_MAX_GPUS];
    for (int i = 0; i < n && i < ENGINES_MAX_GPUS; i++)
        ord[i] = i;
    return engines_gpu_open_list(ord, n, err, errlen);
}

int engines_gpu_open_list(const int *ordinals, int n, char *err, size_t errlen)
{
    int rc = engines_gpu_open_set(NULL, ordinals, n, err, errlen);
    return rc ? rc : engines_gpu_count();
}

void engines_gpu_close(void)
{
    pthread_mutex_lock(&gpu_mu);
    close_locked();
    pthread_mutex_unlock(&gpu_mu);
}

struct gpu_ctx *engines_gpu_ctx_at(int i)
{
    pthread_mutex_lock(&gpu_mu);
    int tried = gpu_tried;
    pthread_mutex_unlock(&gpu_mu);
    if (!tried) {
        char err[256] = "";
        if (engines_gpu_open(NULL, err, sizeof(err)) != 0 && err[0])
            fprintf(stderr, "lcn: gpu unavailable: %s\n", err);
    }
    pthread_mutex_lock(&gpu_mu);
    struct gpu_ctx *c = i >= 0 && i < n_gpus ? gpus[i] : NULL;
    pthread_mutex_unlock(&gpu_mu);
    return c;
}

struct gpu_ctx *engines_gpu_ctx(void)
{
    return engines_gpu_ctx_at(0);
}

int engines_gpu_count(void)
{
    pthread_mutex_lock(&gpu_mu);
    int n = n_gpus;
    pthread_mutex_unlock(&gpu_mu);
    return n;
}

int engines_gpu_describe(int i, struct engines_gpu_desc *out)
{
    memset(out, 0, sizeof *out);
    struct gpu_ctx *c = i >= 0 && i < engines_gpu_count() ? engines_gpu_ctx_at(i) : NULL;
    if (!c)
        return LCN_ENOGPU;
    const struct gpu_device_info *info = gpu_ctx_device(c);
    struct gpu_counters k;
    gpu_ctx_counters(c, &k);
    out->ordinal = info->ordinal;
    snprintf(out->name, sizeof out->name, "%s", info->name);
    snprintf(out->uuid, sizeof out->uuid, "%s", info->uuid);
    out->memory_bytes = k.reserved_bytes;
    out->slots = (int)gpu_ctx_slots(c);
    out->healthy = gpu_ctx_healthy(c);
    return 0;
}

int engines_gpu_healthy(int i)
{
    struct gpu_ctx *c = i >= 0 && i < engines_gpu_count() ? engines_gpu_ctx_at(i) : NULL;
    return c && gpu_ctx_healthy(c);
}

void engines_gpu_inject_fault(int i, int64_t at_ns)
{
    struct gpu_ctx *c = i >= 0 && i < engines_gpu_count() ? engines_gpu_ctx_at(i) : NULL;
    if (c)
        gpu_ctx_inject_fault(c, at_ns);
}

int engines_gpu_available(void)
{
    if (!engines_gpu_ctx())
        return 0;
    int n = engines_gpu_count();
    for (int i = 0; i < n; i++)
        if (engines_gpu_healthy(i))
            return 1;
    return 0;
}

/* The contexts a GPU run uses (p->devices, else 0..); LCN_EINVAL when the
 * set lacks one, LCN_EGPU_STICKY when one is unhealthy. */
static int run_contexts(const struct engine_params *p, struct gpu_ctx **ctx, int *n)
{
    *n = p->gpus > 1 ? p->gpus : 1;
    for (int i = 0; i < *n; i++) {
        int d = p->devices ? p->devices[i] : i;
        ctx[i] = d >= 0 && d < engines_gpu_count() ? engines_gpu_ctx_at(d) : NULL;
        if (!ctx[i]) {
            fprintf(stderr, "lcn: gpu %d: no such device (%d open)\n", d, engines_gpu_count());
            return LCN_EINVAL;
        }
    }
    return 0;
}

static int run_gpu(enum lcn_backend b, const struct lcn_graph *g, const struct engine_params *p,
                   struct engine_result *out)
{
    struct gpu_ctx *ctx[ENGINES_MAX_GPUS];
    int n;
    int rc = run_contexts(p, ctx, &n);
    if (rc)
        return rc;
    for (int i = 0; i < n; i++) {
        char why[200];
        if (gpu_fits(ctx[i], g, why, sizeof(why)) != 0) {
            if (b == LCN_BACKEND_AUTO && n == 1)
                return engine_cpu_run(g, p, out); /* auto: the CPU takes what the GPU cannot */
            fprintf(stderr, "lcn: %s\n", why);
            return LCN_ETOOBIG;
        }
    }
    return n == 1 ? gpu_engine_run(ctx[0], g, p, NULL, out)
                  : gpu_engine_run_islands(ctx, n, g, p, NULL, out);
}
#else
int engines_gpu_available(void)
{
    return 0; /* built without CUDA */
}

void engines_gpu_size(int32_t max_nodes, int32_t max_edges)
{
    (void)max_nodes;
    (void)max_edges;
}

int engines_gpu_open_first(int n, char *err, size_t errlen)
{
    (void)n;
    snprintf(err, errlen, "this build has no GPU engine");
    return LCN_ENOGPU;
}

int engines_gpu_open_list(const int *ordinals, int n, char *err, size_t errlen)
{
    (void)ordinals;
    (void)n;
    snprintf(err, errlen, "this build has no GPU engine");
    return LCN_ENOGPU;
}

int engines_gpu_count(void)
{
    return 0;
}

int engines_gpu_describe(int i, struct engines_gpu_desc *out)
{
    (void)i;
    memset(out, 0, sizeof *out);
    return LCN_ENOGPU;
}

int engines_gpu_healthy(int i)
{
    (void)i;
    return 0;
}

void engines_gpu_inject_fault(int i, int64_t at_ns)
{
    (void)i;
    (void)at_ns;
}
#endif

int engines_resolve(enum lcn_backend b, enum lcn_backend *resolved)
{
    switch (b) {
    case LCN_BACKEND_AUTO:
        *resolved = engines_gpu_available() ? LCN_BACKEND_GPU : LCN_BACKEND_CPU;
        return 0;
    case LCN_BACKEND_CPU:
        *resolved = LCN_BACKEND_CPU;
        return 0;
    case LCN_BACKEND_GPU:
        if (!engines_gpu_available())
            return LCN_ENOGPU;
        *resolved = LCN_BACKEND_GPU;
        return 0;
    }
    return LCN_EINVAL;
}

int engines_run(enum lcn_backend b, const struct lcn_graph *g, const struct engine_params *p,
                struct engine_result *out)
{
    enum lcn_backend r;
    int rc = engine_params_check(p, NULL, 0); /* the GPU engine's run does not check them */
    if (!rc)
        rc = engines_resolve(b, &r);
    if (rc)
        return rc;
    switch (r) {
    case LCN_BACKEND_CPU:
        return engine_cpu_run(g, p, out);
    case LCN_BACKEND_GPU:
#ifdef LCN_HAVE_CUDA
        return run_gpu(b, g, p, out);
#endif
    default:
        return LCN_ENOGPU;
    }
}
