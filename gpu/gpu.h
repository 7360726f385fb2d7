/*
 * gpu.h - the CUDA engine's public interface. Plain C: no CUDA header is
 * included and every device object is opaque.
 *
 * A struct gpu_ctx owns one device, its CUDA context and a pool of workspace
 * slots. Every device buffer is allocated by gpu_ctx_new, sized by the
 * configuration (max nodes, max edges, max replicas per slot); a job takes a
 * slot (and the slot's stream) for its whole run and performs no cudaMalloc
 * or cudaFree. A job that does not fit a slot is refused before launch.
 *
 * Threading: gpu_ctx_new/gpu_ctx_free on one thread; slots may be used
 * concurrently from different threads (one thread per slot at a time);
 * counters are atomic.
 *
 * Errors: functions return 0 or a negative LCN_E* code. LCN_EGPU is a
 * recoverable failure of one call (the error was cleared); LCN_EGPU_STICKY
 * means the CUDA context is broken: the context is marked unhealthy, every
 * later call fails, and the process should exit so its supervisor restarts
 * it.
 */
#ifndef LCN_GPU_H
#define LCN_GPU_H

#include <stdint.h>

#include "engine.h"
#include "graph.h"

struct gpu_ctx;

struct gpu_config {
    int device;           /* CUDA device ordinal */
    int32_t slots;        /* workspace slots (concurrent jobs), >= 1 */
    int32_t max_nodes;    /* per slot */
    int32_t max_edges;    /* per slot, <= 32768 for the solver */
    int32_t max_replicas; /* per slot */
    int64_t index_bytes;  /* per slot: the solver replicas' edge grids (issue 17); a job whose
                           * grids need more runs the scan */
};

/* Counters since gpu_ctx_new (the residency evidence). */
struct gpu_counters {
    uint64_t mallocs, frees;     /* cudaMalloc / cudaFree calls */
    uint64_t h2d_bytes, d2h_bytes;
    uint64_t h2d_copies, d2h_copies;
    uint64_t launches;
    uint64_t reserved_bytes; /* device memory held by the pool */
};

struct gpu_device_info {
    int ordinal;   /* the CUDA device ordinal (CUDA_VISIBLE_DEVICES applies) */
    char name[128];
    char uuid[48]; /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi prints it */
    int cc_major, cc_minor;
    int sms;
    uint64_t global_mem;
    int smem_per_block_optin;
    int driver_version, runtime_version;
};

/* Number of usable CUDA devices (0 when none or no driver). Never fails hard. */
int gpu_device_count(void);

/* Describes device `dev`. Returns 0 or LCN_ENOGPU. */
int gpu_device_info(int dev, struct gpu_device_info *info);

void gpu_config_default(struct gpu_config *cfg);

/*
 * The edge grids' pool (index_bytes) a slot of max_edges edges wants: the
 * default 512 MiB, or past it 48 bytes an edge for each of 132 replicas
 * (what a graph too large for shared memory runs on an H200: one block an
 * SM), room for the cell lists and about 8 grid entries an edge (solver.cu,
 * sjob_ix_pool); 2.5 GB at 400,000 edges.
 */
static inline int64_t gpu_index_bytes_for(int32_t max_edges)
{
    const int64_t want = 48ll * 132 * (int64_t)max_edges, dflt = 512ll << 20;
    return want > dflt ? want : dflt;
}

/*
 * Creates the context and allocates the whole pool. Returns 0, LCN_ENOGPU
 * (no device), LCN_EINVAL (bad configuration) or LCN_EGPU (allocation
 * failed: the pool does not fit). err receives a message.
 */
int gpu_ctx_new(const struct gpu_config *cfg, struct gpu_ctx **out, char *err, size_t errlen);
void gpu_ctx_free(struct gpu_ctx *ctx);

int gpu_ctx_healthy(const struct gpu_ctx *ctx);

/*
 * Test hook (the daemon's test_gpu_fault option, docs/DAEMON.md): the
 * first solver batch this context launches at or after lcn_now_ns() at_ns
 * fails as a sticky error would: the context is marked unhealthy, the run
 * returns LCN_EGPU_STICKY and every later call fails. Only this context is
 * hit, also when another context was opened on the same device ordinal (the
 * two "devices" of gpus = 0,0 share the CUDA primary context, so a real
 * sticky error would break both). at_ns 0 disarms. Any thread.
 */
void gpu_ctx_inject_fault(struct gpu_ctx *ctx, int64_t at_ns);
void gpu_ctx_counters(const struct gpu_ctx *ctx, struct gpu_counters *c);
const struct gpu_device_info *gpu_ctx_device(const struct gpu_ctx *ctx);
int32_t gpu_ctx_slots(const struct gpu_ctx *ctx);

/* Takes a free slot: returns its index, or LCN_EBUSY when all are taken. */
int gpu_slot_acquire(struct gpu_ctx *ctx);
void gpu_slot_release(struct gpu_ctx *ctx, int slot);

/*
 * Whether the graph fits a slot and the solver's limits (edges, degree,
 * shared memory). Returns 0 or LCN_ETOOBIG with the reason in why.
 */
int gpu_fits(const struct gpu_ctx *ctx, const struct lcn_graph *g, char *why, size_t len);

/* ---- evaluators (tests and benchmarks) ---- */

/*
 * Per-edge crossing counts of a layout on the device. kind "full": one
 * thread per edge against every edge; kind "grid": a uniform grid over edge
 * bounding boxes, each pair tested once in its canonical cell. c: m ints
 * out. *pair_tests receives the number of pair tests the kernel performed.
 */
int gpu_eval_counts(struct gpu_ctx *ctx, int slot, const struct lcn_graph *g,
                    const struct lcn_pt *pts, const char *kind, int32_t *c, uint64_t *pair_tests);

/*
 * Batch delta evaluation: W independent single-node proposals (v[i] -> q[i])
 * on one base layout. out: W x m counts (row i = the counts after proposal
 * i alone); valid: W flags (V1-V3 of the moved node). Base counts are
 * computed on the device. *pair_tests as above.
 */
int gpu_eval_delta(struct gpu_ctx *ctx, int slot, const struct lcn_graph *g,
                   const struct lcn_pt *pts, int32_t W, const int32_t *v, const struct lcn_pt *q,
                   int32_t *out, uint8_t *valid, uint64_t *pair_tests);

/*
 * Kernel timing for the benchmark tool: uploads the inputs once, then times
 * `batches` batches of `launches` launches of the named kernel ("full",
 * "grid", "delta") with CUDA events after `warmup` launches. ms: batches
 * floats (milliseconds per launch, one per batch).
 */
int gpu_bench_kernel(struct gpu_ctx *ctx, int slot, const struct lcn_graph *g,
                     const struct lcn_pt *pts, const char *kind, int32_t W, const int32_t *v,
                     const struct lcn_pt *q, int warmup, int batches, int launches, float *ms);

/* ---- force-directed layout ---- */

/*
 * Fruchterman-Reingold on the device (the CPU drawer's model with exact
 * all-pairs repulsion; every iteration in one cooperative launch), from the
 * CPU drawer's random start for `seed`. iterations <= 0 picks the CPU
 * drawer's default for n. xy: 2n doubles out (x then y per node), real
 * coordinates to be mapped onto the bounds and repaired by layout_snap.
 */
int gpu_layout_force(struct gpu_ctx *ctx, int slot, const struct lcn_graph *g, int32_t iterations,
                     uint64_t seed, double *xy);

/* ---- crossing-surrogate descent ---- */

struct lcn_stop;

/*
 * The descent start on the device: layout_descent_stop's model and schedule
 * (common/descent_core.h holds the shared arithmetic) with every edge pair
 * of an iteration on the device, a block per edge row, the sums in a fixed
 * order (deterministic). xy (2n doubles, in the frame of the bounds) in and
 * out: the drawing with the fewest crossings once rounded (total, then max)
 * among those visited. iters <= 0 asks for the device default
 * (GPU_DESC_ITERS, fewer when the pair tests of the whole run would pass
 * GPU_DESC_PAIRS). A stop with a deadline fits the schedule to the time left
 * after the first iteration; the stop is also checked every few iterations
 * (a fired stop ends the descent with its best drawing so far). Returns 0 or
 * an error code; *done (may be NULL): the iterations run, *crossings (may
 * be NULL): the returned drawing's total (-1 when none was counted).
 */
#define GPU_DESC_ITERS 1000
#define GPU_DESC_PAIRS 20000000000LL
int gpu_layout_descent(struct gpu_ctx *ctx, int slot, const struct lcn_graph *g, int32_t iters,
                       const struct lcn_stop *stop, double *xy, int64_t *crossings, int32_t *done);

/* The surrogate at scale tau with spacing radius r0 on the device, for
 * tests: the value, its gradient (2n doubles) and the rounded drawing's
 * per-edge counts (m ints), layout_descent_energy's twin. */
int gpu_descent_energy(struct gpu_ctx *ctx, int slot, const struct lcn_graph *g, const double *xy,
                       double tau, double r0, double *grad, int32_t *c, double *value);

/* ---- the device-resident solver ---- */

struct gpu_solver_params {
    int32_t replicas;     /* 0 = fill the device (SMs x resident blocks), rounded to ladders */
    int32_t ladder;       /* temperatures per parallel-tempering ladder */
    int32_t W;            /* proposal workers: candidate points per move (best-of-W) */
    int32_t block;        /* threads per replica block */
    int32_t batch_steps;  /* steps per launch; 0 = adaptive (launch ~20 ms) */
    int64_t max_steps;    /* stop after this many steps per replica (0 = none; deterministic runs) */
    double t_lo, t_hi;    /* ladder ends, in units of w[K] (the weight of an edge at K) */
    double cool;          /* temperature scale at the end of the run (1 = no cooling) */
    double beta;          /* energy steepness: w[c+1]/w[c] = e^beta near K */
    double beta_alt;      /* steepness of the ladders picked by alt_every */
    double beta_k;        /* > 0: the steepness follows the best K, beta_k / sqrt(K) clamped to
                           * [0.05, 2], the alt ladders' beta_alt / beta times that (issue 15) */
    int32_t alt_every;    /* every alt_every-th ladder uses beta_alt (0: all use beta) */
    double pnorm_rho;     /* > 0: those ladders' table follows a p-norm with p = pnorm_rho * K
                           * below K (issue 15; 0: exponential) */
    int32_t pnorm_up;     /* 1: that p-norm above K too (the whole table c^p / K^p) */
    int32_t tournament;
    double p_hot, p_local, p_bary;
    double p_median;       /* P(candidate near the neighbours' median); rest: uniform jump */
    int32_t ops_bandit;    /* 1: each replica adapts its operator mix (sol_bandit_update) */
    double bandit_floor;   /* the bandit's least probability per operator */
    double lin;            /* weight of one crossing on any edge, in units of w[K] (0: the
                            * table's least unit, a tie-break) */
    int32_t restart_steps; /* the cold half of each ladder restarts from the elite after this
                            * many steps per replica without a better best (0: never) */
    int32_t restart_node;  /* when > 0, that wait is at least restart_node x n steps */
    double restart_share;  /* the share of each ladder's slots, coldest first, that restart
                            * from the elite (0.5: the cold half; 0: none, 1: all) */
    int32_t restart_pool;  /* a wave's elites: up to this many replicas' bests with distinct
                            * tuples, one per ladder in turn (sol_elite_pool; 1: the best alone) */
    int32_t reuse;         /* 1: the commit reuses the scan's kept edges and the winner's
                            * crossings when they fit (one chunk, one group); 0: it scans again */
    int32_t island_every;  /* a run across GPUs: batches between elite exchanges (>= 1) */
    int32_t island_take;   /* replicas per island that take the run's elite at an exchange:
                            * the worst by their current tuple (0: no exchange) */
    int32_t groups;        /* replica groups within one device's run (1..SOL_GROUPS_MAX): each
                            * its own best, table K and restarts, importing the run's elite
                            * by island_every and island_take (at most SOL_TAKE_MAX) */
    int32_t evaluator;     /* which edges a step tests (issue 17; GPU_EVAL_*): scan (every edge,
                            * box-filtered), index (the replica's edge grid, edge_index.h) or auto
                            * (the default: both timed during the run, the faster kept: the scan
                            * on the shared graphs measured, the grid at 50,000 nodes /
                            * 100,000 edges, docs/GPU.md); all give the same trajectory */
    int32_t index_items;   /* the grid's cell entries per edge a replica may hold (default 16); a
                            * build that needs more leaves that replica on the scan until the
                            * next one */
    int32_t index_rebuild; /* edges moved since the build that trigger a rebuild (0: m / 8, at
                            * least 64; past 32,768 edges 2 sqrt(m)); every launch also starts
                            * with one */
    int32_t chunk;         /* largest scan chunk in edges (0: the shared-memory plan's; tests) */
    int32_t layout_mem;    /* where a replica block keeps its layout (GPU_MEM_*): auto (shared
                            * memory when the plan fits, else global), shared, global (issue 17) */
    int32_t debug;         /* 1: the job's plan and evaluator=auto's trials on stderr */
};

/* evaluator knob values */
#define GPU_EVAL_AUTO 0
#define GPU_EVAL_INDEX 1
#define GPU_EVAL_SCAN 2
#define GPU_EVAL_CHOICES "auto|index|scan"

/* layout_mem knob values */
#define GPU_MEM_AUTO 0
#define GPU_MEM_SHARED 1
#define GPU_MEM_GLOBAL 2
#define GPU_MEM_CHOICES "auto|shared|global"

void gpu_solver_params_default(struct gpu_solver_params *sp);

/*
 * Applies "key=value,..." knobs (replicas, ladder, W, block, batch_steps,
 * tournament, t_lo, t_hi, cool, beta, beta_alt, beta_k, alt_every, pnorm_rho, pnorm_up, p_hot,
 * p_local, p_bary, p_median, ops (fixed or bandit), bandit_floor, lin, restart_steps, restart_node,
 * restart_share, restart_pool, reuse, island_every, island_take, groups, evaluator,
 * index_items, index_rebuild, chunk, layout_mem, debug) to sp.
 * Returns 0, or LCN_EINVAL with a message for an unknown key or a value out
 * of range.
 */
int gpu_solver_params_parse(struct gpu_solver_params *sp, const char *spec, char *err, size_t errlen);

/*
 * Runs the solver under the engine contract (engine.h): progress on every
 * strict improvement of the best tuple, telemetry, validated layouts.
 * sp may be NULL for defaults. Takes a free slot for the run (LCN_EBUSY when
 * none). Returns 0 or a negative LCN_E* code.
 */
int gpu_engine_run(struct gpu_ctx *ctx, const struct lcn_graph *g, const struct engine_params *p,
                   const struct gpu_solver_params *sp, struct engine_result *out);

/*
 * One run across n contexts (devices): an island of replicas on each, the
 * replica count of the run (sp / p->replicas; 0 fills each device) split
 * over the islands in whole ladders, island i seeded from p->seed and i
 * (island 0 runs exactly the single-device run's chains). The host drives
 * every island from the calling thread, each on its context's slot and
 * stream; every island_every batches the best layout of the run (fetched
 * from its island) replaces the island_take worst replicas of every other
 * island whose best is worse. One progress stream, one best, revalidated
 * by the oracle like gpu_engine_run's; telemetry is the islands' sums with
 * each island in tel.devices (device = p->devices[i], else i). n == 1 is
 * gpu_engine_run. Takes a slot on every context (LCN_EBUSY when one has
 * none free). A sticky error on one context marks that context unhealthy
 * (the others stay healthy) and the run returns LCN_EGPU_STICKY.
 */
int gpu_engine_run_islands(struct gpu_ctx *const *ctx, int n, const struct lcn_graph *g,
                           const struct engine_params *p, const struct gpu_solver_params *sp,
                           struct engine_result *out);

/*
 * Residency evidence of the last engine run on this context, counted from
 * the first batch to the last (start layouts and set-up excluded): device
 * allocations, bytes each way, and what the bytes were. A resident run has
 * mallocs == frees == 0, h2d_bytes == 0 and d2h_bytes == batches *
 * record_bytes + layout_fetches * layout_bytes. The counters are the
 * context's: the figures describe one run only when it had the context alone.
 */
struct gpu_run_stats {
    uint64_t batches, mallocs, frees, h2d_bytes, d2h_bytes;
    uint64_t record_bytes, layout_fetches, layout_bytes;
};
void gpu_ctx_last_run(const struct gpu_ctx *ctx, struct gpu_run_stats *st);

/*
 * Test hook: runs exactly `batches` batches of `steps` steps from `start`
 * (valid) with fixed temperature scale schedule, then copies back every
 * replica's current layout, best layout, counts and scalars (arrays sized
 * R x n, R x n, R x m, R). R and L as in the solver params (both required).
 */
struct sol_replica;
int gpu_solver_debug_run(struct gpu_ctx *ctx, int slot, const struct lcn_graph *g,
                         const struct lcn_pt *start, const struct gpu_solver_params *sp,
                         uint64_t seed, int32_t batches, int32_t steps, struct lcn_pt *cur,
                         struct lcn_pt *best, int32_t *cnt, struct sol_replica *rep);

#endif
