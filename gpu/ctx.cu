/*
 * ctx.cu - device context, workspace pool, counters and error handling.
 *
 * Concurrency: gpu_ctx_new/free run on one thread. Slot acquisition takes
 * ctx->lock; a slot, once acquired, is used by one thread only (its job's
 * worker). Counters are updated with relaxed atomics from any thread.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.cuh"

extern "C" {
#include "solver_ref.h"
#include "util.h"
}

static void count(uint64_t *c, uint64_t n)
{
    __atomic_fetch_add(c, n, __ATOMIC_RELAXED);
}

int gpu_check_fail(struct gpu_ctx *ctx, cudaError_t e, const char *stmt, const char *file,
                   int line)
{
    int dev = -1;
    cudaGetDevice(&dev);
    fprintf(stderr, "lcn gpu: %s failed at %s:%d on device %d: %s\n", stmt, file, line, dev,
            cudaGetErrorString(e));
    /* Out of memory and invalid arguments are recoverable: clear and report. */
    if (e == cudaErrorMemoryAllocation || e == cudaErrorInvalidValue ||
        e == cudaErrorInvalidConfiguration || e == cudaErrorLaunchOutOfResources) {
        cudaGetLastError();
        return LCN_EGPU;
    }
    if (ctx)
        ctx->healthy = 0;
    return LCN_EGPU_STICKY;
}

extern "C" int gpu_device_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return n;
}

extern "C" int gpu_device_info(int dev, struct gpu_device_info *info)
{
    memset(info, 0, sizeof(*info));
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, dev) != cudaSuccess) {
        cudaGetLastError();
        return LCN_ENOGPU;
    }
    info->ordinal = dev;
    snprintf(info->name, sizeof(info->name), "%s", p.name);
    const unsigned char *u = (const unsigned char *)p.uuid.bytes;
    snprintf(info->uuid, sizeof(info->uuid),
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
             u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
    info->cc_major = p.major;
    info->cc_minor = p.minor;
    info->sms = p.multiProcessorCount;
    info->global_mem = p.totalGlobalMem;
    info->smem_per_block_optin = (int)p.sharedMemPerBlockOptin;
    cudaDriverGetVersion(&info->driver_version);
    cudaRuntimeGetVersion(&info->runtime_version);
    return 0;
}

extern "C" void gpu_config_default(struct gpu_config *cfg)
{
    cfg->device = 0;
    cfg->slots = 2;
    cfg->max_nodes = 20000;
    cfg->max_edges = 32768; /* larger graphs: a configured workspace (gpu_max_edges, lcnd solve) */
    cfg->max_replicas = 2048;
    cfg->index_bytes = 512ll << 20;
}

template <typename T> static int dalloc(struct gpu_ctx *ctx, T **p, size_t count)
{
    size_t bytes = sizeof(T) * (count ? count : 1);
    cudaError_t e = cudaMalloc((void **)p, bytes);
    __atomic_fetch_add(&ctx->mallocs, 1, __ATOMIC_RELAXED);
    if (e != cudaSuccess) {
        *p = NULL;
        return gpu_check_fail(ctx, e, "cudaMalloc", __FILE__, __LINE__);
    }
    ctx->reserved += bytes;
    return 0;
}

static void dfree(struct gpu_ctx *ctx, void *p)
{
    if (!p)
        return;
    cudaFree(p);
    count(&ctx->frees, 1);
}

/* One counted asynchronous copy on the slot's stream (bytes and copies
 * counted per direction). */
static int copy_async(struct gpu_ctx *ctx, struct gpu_slot *s, void *dst, const void *src, size_t n,
                      enum cudaMemcpyKind kind, uint64_t *bytes, uint64_t *copies)
{
    if (n == 0)
        return 0;
    count(bytes, n);
    count(copies, 1);
    GPU_CHECK(ctx, cudaMemcpyAsync(dst, src, n, kind, s->stream));
    return 0;
}

int gpu_h2d(struct gpu_ctx *ctx, struct gpu_slot *s, void *dst, const void *src, size_t n)
{
    return copy_async(ctx, s, dst, src, n, cudaMemcpyHostToDevice, &ctx->h2d_bytes,
                      &ctx->h2d_copies);
}

int gpu_d2h(struct gpu_ctx *ctx, struct gpu_slot *s, void *dst, const void *src, size_t n)
{
    return copy_async(ctx, s, dst, src, n, cudaMemcpyDeviceToHost, &ctx->d2h_bytes,
                      &ctx->d2h_copies);
}

int gpu_upload_graph(struct gpu_ctx *ctx, struct gpu_slot *s, const struct lcn_graph *g)
{
    int2 *e = (int2 *)xmalloc(sizeof(int2) * (size_t)(g->m ? g->m : 1));
    for (int32_t i = 0; i < g->m; i++)
        e[i] = make_int2(g->eu[i], g->ev[i]);
    int rc = gpu_h2d(ctx, s, s->edges, e, sizeof(int2) * (size_t)g->m);
    if (!rc)
        rc = gpu_h2d(ctx, s, s->inc_off, g->inc_off, sizeof(int) * ((size_t)g->n + 1));
    if (!rc)
        rc = gpu_h2d(ctx, s, s->inc, g->inc, sizeof(int) * 2 * (size_t)g->m);
    if (!rc) {
        cudaError_t err = cudaStreamSynchronize(s->stream);
        if (err != cudaSuccess)
            rc = gpu_check_fail(ctx, err, "cudaStreamSynchronize", __FILE__, __LINE__);
    }
    free(e);
    return rc;
}

static int slot_init(struct gpu_ctx *ctx, struct gpu_slot *s)
{
    const struct gpu_config *c = &ctx->cfg;
    size_t N = (size_t)c->max_nodes, M = (size_t)c->max_edges, R = (size_t)c->max_replicas;
    int rc = 0;
    GPU_CHECK(ctx, cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking));
    GPU_CHECK(ctx, cudaEventCreate(&s->ev0));
    GPU_CHECK(ctx, cudaEventCreate(&s->ev1));
    /* grid evaluator capacity: cells up to 1024^2, items up to 64 per edge */
    s->max_cells = 1025 * 1025;
    s->scan_tmp_bytes = gpu_scan_bytes(s->max_cells);
    s->max_items = (int32_t)(64 * M);
    if ((rc = dalloc(ctx, &s->edges, M)) || (rc = dalloc(ctx, &s->inc_off, N + 1)) ||
        (rc = dalloc(ctx, &s->inc, 2 * M)) || (rc = dalloc(ctx, &s->cur, R * N)) ||
        (rc = dalloc(ctx, &s->best, R * N)) || (rc = dalloc(ctx, &s->cnt, R * M)) ||
        (rc = dalloc(ctx, &s->bcnt, R * M)) ||
        (rc = dalloc(ctx, &s->hist, R * (M + 1))) || (rc = dalloc(ctx, &s->rep, R)) ||
        (rc = dalloc(ctx, &s->wtab, 2 * SOL_GROUPS_MAX * (M + 1))) || (rc = dalloc(ctx, &s->rk, 2 * (M + 1))) ||
        (rc = dalloc(ctx, &s->temps, R)) ||
        (rc = dalloc(ctx, &s->rec, 1)) || (rc = dalloc(ctx, &s->pts, N)) ||
        (rc = dalloc(ctx, &s->q, (size_t)SOL_WMAX)) || (rc = dalloc(ctx, &s->v, (size_t)SOL_WMAX)) ||
        (rc = dalloc(ctx, &s->counts, M)) || (rc = dalloc(ctx, &s->out, (size_t)SOL_WMAX * M)) ||
        (rc = dalloc(ctx, &s->valid, (size_t)SOL_WMAX)) || (rc = dalloc(ctx, &s->tests, 1)) ||
        (rc = dalloc(ctx, &s->cell_count, (size_t)s->max_cells + 1)) ||
        (rc = dalloc(ctx, &s->cell_start, (size_t)s->max_cells + 1)) ||
        (rc = dalloc(ctx, &s->cell_items, (size_t)s->max_items)) ||
        (rc = dalloc(ctx, &s->long_list, M)) || (rc = dalloc(ctx, &s->long_n, 1)) ||
        (rc = dalloc(ctx, &s->fpos, 2 * N)) ||
        (rc = dalloc(ctx, (char **)&s->scan_tmp, s->scan_tmp_bytes)) ||
        (rc = dalloc(ctx, &s->ix_pool, (size_t)(c->index_bytes > 0 ? c->index_bytes / sizeof(int) : 0))))
        return rc;
    s->ix_ints = c->index_bytes > 0 ? (size_t)c->index_bytes / sizeof(int) : 0;
    GPU_CHECK(ctx, cudaMallocHost((void **)&s->rec_host, sizeof(struct gpu_record)));
    return 0;
}

static void slot_release(struct gpu_ctx *ctx, struct gpu_slot *s)
{
    void *ptrs[] = {s->edges, s->inc_off, s->inc, s->cur, s->best, s->cnt, s->bcnt, s->hist, s->rep,
                    s->wtab, s->rk, s->temps, s->rec, s->pts, s->q, s->v, s->counts, s->out, s->valid,
                    s->tests, s->cell_count, s->cell_start, s->cell_items, s->long_list,
                    s->long_n, s->fpos, s->scan_tmp, s->ix_pool};
    for (size_t i = 0; i < sizeof(ptrs) / sizeof(ptrs[0]); i++)
        dfree(ctx, ptrs[i]);
    if (s->rec_host)
        cudaFreeHost(s->rec_host);
    if (s->stream) {
        cudaEventDestroy(s->ev0);
        cudaEventDestroy(s->ev1);
        cudaStreamDestroy(s->stream);
    }
    memset(s, 0, sizeof(*s));
}

extern "C" int gpu_ctx_new(const struct gpu_config *cfg, struct gpu_ctx **out, char *err, size_t errlen)
{
    *out = NULL;
    if (errlen > 0)
        err[0] = 0;
    int ndev = gpu_device_count();
    if (ndev <= 0 || cfg->device < 0 || cfg->device >= ndev) {
        snprintf(err, errlen, "no usable CUDA device %d (%d found)", cfg->device, ndev);
        return LCN_ENOGPU;
    }
    if (cfg->slots < 1 || cfg->slots > 64 || cfg->max_nodes < 2 || cfg->max_edges < 1 ||
        cfg->max_edges > SOL_MAX_EDGES || cfg->max_replicas < 1 || cfg->max_nodes > LCN_MAX_NODES) {
        snprintf(err, errlen, "invalid gpu configuration (slots 1..64, max_edges 1..%d, max_nodes 2..%d)",
                 SOL_MAX_EDGES, LCN_MAX_NODES);
        return LCN_EINVAL;
    }
    if (cudaSetDevice(cfg->device) != cudaSuccess) {
        cudaGetLastError();
        snprintf(err, errlen, "cannot select CUDA device %d", cfg->device);
        return LCN_ENOGPU;
    }
    struct gpu_ctx *ctx = (struct gpu_ctx *)xcalloc(1, sizeof(*ctx));
    ctx->cfg = *cfg;
    ctx->healthy = 1;
    gpu_device_info(cfg->device, &ctx->info);
    pthread_mutex_init(&ctx->lock, NULL);
    int rc = dalloc(ctx, &ctx->ltab, SOL_LTAB);
    if (!rc) {
        double lt[SOL_LTAB];
        solref_fill_ltab(lt);
        count(&ctx->h2d_bytes, sizeof(lt));
        count(&ctx->h2d_copies, 1);
        cudaError_t e = cudaMemcpy(ctx->ltab, lt, sizeof(lt), cudaMemcpyHostToDevice);
        if (e != cudaSuccess)
            rc = gpu_check_fail(ctx, e, "cudaMemcpy(ltab)", __FILE__, __LINE__);
    }
    ctx->slots = (struct gpu_slot *)xcalloc((size_t)cfg->slots, sizeof(struct gpu_slot));
    for (int32_t i = 0; i < cfg->slots && !rc; i++)
        rc = slot_init(ctx, &ctx->slots[i]);
    if (rc) {
        snprintf(err, errlen,
                 "cannot allocate the gpu workspace pool (%d slots of %d nodes, %d edges, %d "
                 "replicas): %s",
                 cfg->slots, cfg->max_nodes, cfg->max_edges, cfg->max_replicas, lcn_strerror(rc));
        gpu_ctx_free(ctx);
        return rc;
    }
    *out = ctx;
    return 0;
}

extern "C" void gpu_ctx_free(struct gpu_ctx *ctx)
{
    if (!ctx)
        return;
    if (ctx->slots) {
        for (int32_t i = 0; i < ctx->cfg.slots; i++)
            slot_release(ctx, &ctx->slots[i]);
        free(ctx->slots);
    }
    dfree(ctx, ctx->ltab);
    pthread_mutex_destroy(&ctx->lock);
    free(ctx);
}

extern "C" int gpu_ctx_healthy(const struct gpu_ctx *ctx)
{
    return ctx && ctx->healthy;
}

extern "C" void gpu_ctx_inject_fault(struct gpu_ctx *ctx, int64_t at_ns)
{
    __atomic_store_n(&ctx->fault_at_ns, at_ns, __ATOMIC_RELAXED);
}

int gpu_fault_due(struct gpu_ctx *ctx)
{
    int64_t at = __atomic_load_n(&ctx->fault_at_ns, __ATOMIC_RELAXED);
    if (!at || lcn_now_ns() < at)
        return 0;
    fprintf(stderr, "lcn gpu: test_gpu_fault: injected sticky error on device %d (%s)\n",
            ctx->cfg.device, ctx->info.uuid);
    __atomic_store_n(&ctx->fault_at_ns, 0, __ATOMIC_RELAXED);
    ctx->healthy = 0;
    return LCN_EGPU_STICKY;
}

extern "C" void gpu_ctx_counters(const struct gpu_ctx *ctx, struct gpu_counters *c)
{
    struct gpu_ctx *x = (struct gpu_ctx *)ctx;
    c->mallocs = __atomic_load_n(&x->mallocs, __ATOMIC_RELAXED);
    c->frees = __atomic_load_n(&x->frees, __ATOMIC_RELAXED);
    c->h2d_bytes = __atomic_load_n(&x->h2d_bytes, __ATOMIC_RELAXED);
    c->d2h_bytes = __atomic_load_n(&x->d2h_bytes, __ATOMIC_RELAXED);
    c->h2d_copies = __atomic_load_n(&x->h2d_copies, __ATOMIC_RELAXED);
    c->d2h_copies = __atomic_load_n(&x->d2h_copies, __ATOMIC_RELAXED);
    c->launches = __atomic_load_n(&x->launches, __ATOMIC_RELAXED);
    c->reserved_bytes = x->reserved;
}

extern "C" const struct gpu_device_info *gpu_ctx_device(const struct gpu_ctx *ctx)
{
    return &ctx->info;
}

extern "C" int32_t gpu_ctx_slots(const struct gpu_ctx *ctx)
{
    return ctx->cfg.slots;
}

extern "C" int gpu_slot_acquire(struct gpu_ctx *ctx)
{
    int got = LCN_EBUSY;
    pthread_mutex_lock(&ctx->lock);
    for (int32_t i = 0; i < ctx->cfg.slots; i++) {
        if (!ctx->slots[i].busy) {
            ctx->slots[i].busy = 1;
            got = i;
            break;
        }
    }
    pthread_mutex_unlock(&ctx->lock);
    return got;
}

extern "C" void gpu_slot_release(struct gpu_ctx *ctx, int slot)
{
    pthread_mutex_lock(&ctx->lock);
    ctx->slots[slot].busy = 0;
    pthread_mutex_unlock(&ctx->lock);
}
