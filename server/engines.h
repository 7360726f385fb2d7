/*
 * engines.h - the backend dispatcher: one function that runs the engine a
 * backend names, so that lcnd's job workers and `lcnd solve` choose
 * engines in one place.
 *
 * Backends: "cpu" (common/engine.h, always built), "gpu" (the CUDA engine,
 * when this build has one and a device is usable) and "auto" (gpu when
 * available, else cpu). The engine that actually ran is named in
 * engine_result.backend; callers report that, not the one requested.
 */
#ifndef LCN_ENGINES_H
#define LCN_ENGINES_H

#include "engine.h"


#ifdef LCN_HAVE_CUDA
struct gpu_config;
struct gpu_ctx;
/*
 * Opens the process-wide GPU context with cfg (NULL = defaults). Called by
 * the daemon at start; otherwise the first GPU user opens it with defaults.
 * Returns 0 or the gpu_ctx_new error, with a message in err.
 */
int engines_gpu_open(const struct gpu_config *cfg, char *err, size_t errlen);
void engines_gpu_close(void);
/* The context, opening it with defaults on first use; NULL when unusable. */
struct gpu_ctx *engines_gpu_ctx(void);
#endif

/* 1 when a GPU engine is compiled in and usable, else 0. */
int engines_gpu_available(void);

/*
 * The backend that `b` resolves to right now: AUTO becomes GPU or CPU.
 * Returns 0, or LCN_ENOGPU when b is GPU and no GPU engine is available.
 */
int engines_resolve(enum lcn_backend b, enum lcn_backend *resolved);

/*
 * Runs the engine for backend b (resolved as above) on g with p. Returns
 * what the engine returns (see engine.h), LCN_EINVAL for parameters beyond
 * the engine limits (engine_params_check), or LCN_ENOGPU for GPU without a
 * GPU engine (no callback runs in either case).
 */
int engines_run(enum lcn_backend b, const struct lcn_graph *g, const struct engine_params *p,
                struct engine_result *out);

#endif
