#include "server/engines.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "err.h"
#ifdef LCN_HAVE_CUDA
#include "gpu.h"
#endif


#ifdef LCN_HAVE_CUDA
/*
 * The process-wide GPU context: opened once (explicitly by the daemon with
 * its configuration, or lazily with defaults by the first user), closed at
 * exit. The mutex guards opening; the context itself is thread-safe.
 */
static pthread_mutex_t gpu_mu = PTHREAD_MUTEX_INITIALIZER;
static struct gpu_ctx *gpu;
static int gpu_tried;

int engines_gpu_open(const struct gpu_config *cfg, char *err, size_t errlen)
{
    int rc = 0;
    pthread_mutex_lock(&gpu_mu);
    if (!gpu) {
        struct gpu_config def;
        gpu_config_default(&def);
        gpu_tried = 1;
        rc = gpu_device_count() > 0 ? gpu_ctx_new(cfg ? cfg : &def, &gpu, err, errlen)
                                    : LCN_ENOGPU;
        if (rc == LCN_ENOGPU && errlen && !err[0])
            snprintf(err, errlen, "no CUDA device");
    }
    pthread_mutex_unlock(&gpu_mu);
    return rc;
}

void engines_gpu_close(void)
{
    pthread_mutex_lock(&gpu_mu);
    gpu_ctx_free(gpu);
    gpu = NULL;
    pthread_mutex_unlock(&gpu_mu);
}

struct gpu_ctx *engines_gpu_ctx(void)
{
    if (!gpu && !gpu_tried) {
        char err[256] = "";
        if (engines_gpu_open(NULL, err, sizeof(err)) != 0 && err[0])
            fprintf(stderr, "lcn: gpu unavailable: %s\n", err);
    }
    return gpu;
}

int engines_gpu_available(void)
{
    struct gpu_ctx *c = engines_gpu_ctx();
    return c && gpu_ctx_healthy(c);
}
#else
int engines_gpu_available(void)
{
    return 0; /* built without CUDA */
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
    {
        char why[200];
        if (gpu_fits(engines_gpu_ctx(), g, why, sizeof(why)) != 0) {
            if (b == LCN_BACKEND_AUTO)
                return engine_cpu_run(g, p, out); /* auto: the CPU takes what the GPU cannot */
            fprintf(stderr, "lcn: %s\n", why);
            return LCN_ETOOBIG;
        }
        return gpu_engine_run(engines_gpu_ctx(), g, p, NULL, out);
    }
#endif
    default:
        return LCN_ENOGPU;
    }
}
