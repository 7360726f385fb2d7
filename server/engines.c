#include "engines.h"

#include <string.h>

#include "err.h"

static const char *const names[] = {"auto", "cpu", "gpu"};

int engines_backend_parse(const char *name, enum engine_backend *b)
{
    for (int i = 0; i < 3; i++) {
        if (strcmp(name, names[i]) == 0) {
            *b = (enum engine_backend)i;
            return 0;
        }
    }
    return LCN_EINVAL;
}

const char *engines_backend_name(enum engine_backend b)
{
    return (unsigned)b < 3 ? names[b] : "?";
}

int engines_gpu_available(void)
{
    return 0; /* no GPU engine in this build yet */
}

int engines_resolve(enum engine_backend b, enum engine_backend *resolved)
{
    switch (b) {
    case ENGINE_BACKEND_AUTO:
        *resolved = engines_gpu_available() ? ENGINE_BACKEND_GPU : ENGINE_BACKEND_CPU;
        return 0;
    case ENGINE_BACKEND_CPU:
        *resolved = ENGINE_BACKEND_CPU;
        return 0;
    case ENGINE_BACKEND_GPU:
        if (!engines_gpu_available())
            return LCN_ENOGPU;
        *resolved = ENGINE_BACKEND_GPU;
        return 0;
    }
    return LCN_EINVAL;
}

int engines_run(enum engine_backend b, const struct lcn_graph *g, const struct engine_params *p,
                struct engine_result *out)
{
    enum engine_backend r;
    int rc = engines_resolve(b, &r);
    if (rc)
        return rc;
    switch (r) {
    case ENGINE_BACKEND_CPU:
        return engine_cpu_run(g, p, out);
    default:
        return LCN_ENOGPU;
    }
}
