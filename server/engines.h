/*
 * engines.h - the backend dispatcher: one function that runs the engine a
 * backend names, so that lcnd's job workers and `lcnd solve` choose
 * engines in one place; and the process's GPU device set.
 *
 * Backends: "cpu" (common/engine.h, always built), "gpu" (the CUDA engine,
 * when this build has one and a device is usable) and "auto" (gpu when
 * available, else cpu). The engine that actually ran is named in
 * engine_result.backend; callers report that, not the one requested.
 *
 * The device set: one GPU context per entry, opened once (by the daemon
 * with its `gpus` list, by `lcnd solve --gpus`, or lazily with defaults on
 * device 0 by the first GPU user) and closed at exit. Entries are named by
 * their index in the set (0, 1, ...), which is what engine_params.devices
 * holds; an ordinal may appear twice (`gpus = 0,0`): two contexts on one
 * device, each with its own workspace slots and streams, which share the
 * device's CUDA primary context. Opening and closing take a mutex; the
 * contexts are thread-safe (gpu.h).
 */
#ifndef LCN_ENGINES_H
#define LCN_ENGINES_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"

/* The most contexts in the device set (one run may use all of them). */
#define ENGINES_MAX_GPUS ENGINE_MAX_DEVICES

#ifdef LCN_HAVE_CUDA
struct gpu_config;
struct gpu_ctx;
/*
 * Opens the device set: one context per ordinal of ordinals[0..n) with cfg
 * (NULL = defaults; its device field is replaced by each ordinal). Called
 * once, before any other GPU use. Returns 0, or the first gpu_ctx_new
 * error with a message in err naming the ordinal; on failure no context
 * stays open.
 */
int engines_gpu_open_set(const struct gpu_config *cfg, const int *ordinals, int n, char *err,
                         size_t errlen);
/* The set with one context on cfg->device (NULL: defaults, device 0). */
int engines_gpu_open(const struct gpu_config *cfg, char *err, size_t errlen);
void engines_gpu_close(void);
/* Context i of the set (opening device 0 with defaults on first use when
 * nothing was opened); NULL when there is none. */
struct gpu_ctx *engines_gpu_ctx_at(int i);
/* engines_gpu_ctx_at(0). */
struct gpu_ctx *engines_gpu_ctx(void);
#endif

/* What the API shows of a device of the set. */
struct engines_gpu_desc {
    int ordinal;
    char name[128];
    char uuid[48];
    uint64_t memory_bytes; /* device memory its workspace pool holds */
    int slots;             /* workspace slots */
    int healthy;           /* 0 after a sticky error (or the test fault) */
};

/*
 * The workspace every context opened with defaults from now on holds per
 * slot: at least max_nodes nodes and max_edges edges (gpu_config's; 0 keeps
 * its default). `lcnd solve` sizes it to its graph before opening.
 */
void engines_gpu_size(int32_t max_nodes, int32_t max_edges);

/*
 * Opens the set on devices 0 .. n-1 with defaults (n <= 0: every visible
 * device), for `lcnd solve --gpus`. Returns the number of contexts open, or
 * LCN_ENOGPU (no device, or fewer visible than n: err says how many) or
 * another gpu_ctx_new error with err filled.
 */
int engines_gpu_open_first(int n, char *err, size_t errlen);

/* Opens the set on the listed ordinals with defaults (repeats allowed),
 * for `lcnd solve --devices`. Returns the number of contexts open, or
 * LCN_ENOGPU (no CUDA in this build or no device) or the first
 * gpu_ctx_new error, with err filled. */
int engines_gpu_open_list(const int *ordinals, int n, char *err, size_t errlen);

/* Contexts open in the set (0 without CUDA or before any was opened). */
int engines_gpu_count(void);

/* Describes context i. Returns 0 or LCN_ENOGPU when there is none. */
int engines_gpu_describe(int i, struct engines_gpu_desc *out);

/* 1 when context i exists and is healthy. */
int engines_gpu_healthy(int i);

/* Test hook (the daemon's test_gpu_fault): context i's first solver batch
 * at or after lcn_now_ns() at_ns fails as a sticky error (gpu.h,
 * gpu_ctx_inject_fault). No-op without that context. */
void engines_gpu_inject_fault(int i, int64_t at_ns);

/* 1 when a GPU engine is compiled in and some context of the set is usable. */
int engines_gpu_available(void);

/*
 * The backend that `b` resolves to right now: AUTO becomes GPU or CPU.
 * Returns 0, or LCN_ENOGPU when b is GPU and no GPU engine is available.
 */
int engines_resolve(enum lcn_backend b, enum lcn_backend *resolved);

/*
 * Runs the engine for backend b (resolved as above) on g with p. A GPU run
 * uses context p->devices[0] (0 when devices is NULL), or, with p->gpus >
 * 1, one island per context p->devices[0..gpus) (0..gpus-1 when NULL;
 * gpu_engine_run_islands). Returns what the engine returns (see engine.h),
 * LCN_EINVAL for parameters beyond the engine limits (engine_params_check)
 * or more GPUs than the set holds, or LCN_ENOGPU for GPU without a GPU
 * engine (no callback runs in any of these cases).
 */
int engines_run(enum lcn_backend b, const struct lcn_graph *g, const struct engine_params *p,
                struct engine_result *out);

#endif
