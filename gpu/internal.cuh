/*
 * internal.cuh - what the .cu files of gpu/ share: the context and slot
 * layout, the error-checking macro and the counted copy helpers. Not
 * included outside gpu/.
 */
#ifndef LCN_GPU_INTERNAL_CUH
#define LCN_GPU_INTERNAL_CUH

#include <cuda_runtime.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

extern "C" {
#include "err.h"
#include "gpu.h"
#include "solver_core.h"
}

/* Device-side record copied to the host after every batch. */
struct gpu_record {
    struct lcn_obj best;
    int32_t best_rep;
    int32_t ex_done;         /* an elite import across groups ran (sol_groups_boundary) */
    struct lcn_obj ex;       /* the tuple it imported last */
    uint64_t attempted, valid, evaluated, selected, accepted, rejected, committed;
    uint64_t best_updates, pair_tests;
    uint64_t ex_att, ex_acc;
    uint64_t min_step;
    uint64_t restarts;      /* replica restarts from a group's elite, summed */
    uint64_t imports;       /* replicas that took the run's elite from another group, summed */
    struct sol_group grp[SOL_GROUPS_MAX]; /* set by k_best (sol_groups_boundary), read by k_energy */
    uint64_t op[SOL_OPS][4]; /* per operator: tried, valid, accepted, improved (engine_op_stats) */
};

/* One workspace slot: every buffer a job needs, allocated at context start. */
struct gpu_slot {
    int busy;
    cudaStream_t stream;
    cudaEvent_t ev0, ev1;
    /* graph */
    int2 *edges;
    int *inc_off, *inc;
    /* solver replicas */
    int2 *cur, *best;
    int *cnt, *hist, *bcnt; /* bcnt: counts of each replica's best layout */
    struct sol_replica *rep;
    long long *wtab; /* 2 SOL_GROUPS_MAX x (max_edges + 1): each group's pair of tables */
    uint32_t *rk; /* 2 x (max_edges + 1): energy-table ratios per K (solref_fill_ratios) */
    double *temps;
    struct gpu_record *rec, *rec_host; /* device record, pinned host mirror */
    /* evaluators */
    int2 *pts, *q;
    int *v, *counts, *out, *valid;
    unsigned long long *tests;
    int *cell_count, *cell_start, *cell_items, *long_list, *long_n;
    int2 *fpos; /* force layout: float2 positions stored as bits */
    void *scan_tmp;
    size_t scan_tmp_bytes;
    int32_t max_cells, max_items;
    int *ix_pool;   /* the solver's edge grids (struct sol_eix), ix_ints ints */
    size_t ix_ints;
};

struct gpu_ctx {
    struct gpu_config cfg;
    struct gpu_device_info info;
    int healthy;
    double *ltab; /* SOL_LTAB, shared by all slots */
    struct gpu_slot *slots;
    pthread_mutex_t lock;
    uint64_t mallocs, frees, h2d_bytes, d2h_bytes, h2d_copies, d2h_copies, launches; /* __atomic */
    uint64_t reserved;
    struct gpu_run_stats last_run; /* of the last gpu_engine_run to finish its batches */
    int64_t fault_at_ns;           /* gpu_ctx_inject_fault (__atomic); 0 = none */
};

/* The test hook of gpu_ctx_inject_fault: LCN_EGPU_STICKY (the context is
 * then unhealthy) when the armed time has come, else 0. */
int gpu_fault_due(struct gpu_ctx *ctx);

/* Logs statement, file, line and device; turns the failure into an error code. */
int gpu_check_fail(struct gpu_ctx *ctx, cudaError_t e, const char *stmt, const char *file,
                   int line);
#define GPU_CHECK(ctx, stmt)                                                                 \
    do {                                                                                     \
        cudaError_t e_ = (stmt);                                                             \
        if (e_ != cudaSuccess)                                                               \
            return gpu_check_fail((ctx), e_, #stmt, __FILE__, __LINE__);                     \
    } while (0)
/* After a kernel launch. */
#define GPU_LAUNCHED(ctx)                                                                    \
    do {                                                                                     \
        __atomic_fetch_add(&(ctx)->launches, 1, __ATOMIC_RELAXED);                          \
        GPU_CHECK(ctx, cudaGetLastError());                                                  \
    } while (0)

int gpu_h2d(struct gpu_ctx *ctx, struct gpu_slot *s, void *dst, const void *src, size_t n);
int gpu_d2h(struct gpu_ctx *ctx, struct gpu_slot *s, void *dst, const void *src, size_t n);
/* Uploads the graph arrays into the slot. */
int gpu_upload_graph(struct gpu_ctx *ctx, struct gpu_slot *s, const struct lcn_graph *g);

/* Temporary storage bytes of the grid evaluator's prefix scan over `cells`. */
size_t gpu_scan_bytes(int cells);

/* Kernels shared between files. */
int gpu_run_full(struct gpu_ctx *ctx, struct gpu_slot *s, int m, int n);

#endif
