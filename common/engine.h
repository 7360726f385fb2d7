/*
 * engine.h - the contract every solving engine (CPU and GPU) implements.
 *
 * An engine takes a graph, an optional initial layout, parameters, an
 * absolute deadline and a cancel flag, and searches for a layout with a
 * small objective tuple. It reports:
 *   - a progress event on every strict improvement of its best tuple
 *     (engine-claimed tuple, elapsed time, stage);
 *   - periodic telemetry whose counters name their denominators;
 *   - validated best layouts: at most every checkpoint_interval_ns and once
 *     at the end, each revalidated by the independent oracle (validate.h)
 *     before the callback runs, with the oracle's tuple equal to the claimed
 *     one. A mismatch ends the run with LCN_ECORRUPT: nothing wrong is ever
 *     published.
 * The same (graph, initial layout, parameters, backend, thread count) gives
 * the same result, except that a run stopped by the deadline or the cancel
 * flag stops at a timing-dependent point (and an engine whose start phase
 * is bounded by a share of the budget may build fewer starting layouts when
 * that share runs out).
 *
 * Threading: callbacks run on the engine's calling thread (the one that
 * called engine_*_run), never concurrently with each other. They must not
 * block for long; a callback that wants to stop the run sets *cancel.
 */
#ifndef LCN_ENGINE_H
#define LCN_ENGINE_H

#include <stddef.h>
#include <stdint.h>

/*
 * The cancel flag is a C11 atomic_int. C++ translation units (the CUDA
 * engine's host code) see it as a plain int of the same size and alignment
 * and access it only through __atomic builtins.
 */
#ifndef __cplusplus
#include <stdatomic.h>
#define LCN_ATOMIC_INT atomic_int
#else
#define LCN_ATOMIC_INT int
#endif

#include "graph.h"
#include "objective.h"

/*
 * Move operators (issue 15): the kinds of move the engines draw. Both
 * engines count them alike in engine_telemetry.ops; an engine that does not
 * draw an operator leaves its counters at zero.
 *   LOCAL    one node, a Gaussian-like step of its temperature slot's radius
 *   BARY     one node, near its neighbours' barycentre
 *   MEDIAN   one node, near its neighbours' coordinate-wise median
 *   GLOBAL   one node, uniform over the canvas (a long jump)
 *   EMPTY    one node, into the emptiest of a few sampled regions of the canvas
 *   PAIR     both endpoints of a most-crossed edge, one translation
 *   SWAP     two nodes exchange their positions
 *   CLUSTER  a node with its neighbours of degree 1 and 2, one translation
 */
enum engine_op {
    ENGINE_OP_LOCAL = 0,
    ENGINE_OP_BARY,
    ENGINE_OP_MEDIAN,
    ENGINE_OP_GLOBAL,
    ENGINE_OP_EMPTY,
    ENGINE_OP_PAIR,
    ENGINE_OP_SWAP,
    ENGINE_OP_CLUSTER,
    ENGINE_OPS
};

/*
 * The backends a job or a run may ask for: the one enum of the project
 * (the wire format, the daemon's configuration and its engine choice all
 * use it; names on the wire and in files, never the numbers).
 */
enum lcn_backend {
    LCN_BACKEND_AUTO = 0, /* the GPU engine when one is usable, else the CPU engine */
    LCN_BACKEND_GPU,
    LCN_BACKEND_CPU,
};
#define LCN_BACKENDS 3
/* Their names in the enum's order, as an opts.h OPT_ENUM row wants them
 * (the row writes the index as an int into an enum lcn_backend field). */
#define LCN_BACKEND_CHOICES "auto|gpu|cpu"
#ifndef __cplusplus
_Static_assert(sizeof(enum lcn_backend) == sizeof(int), "OPT_ENUM stores an int");
#endif

/* "auto", "gpu", "cpu"; "?" for anything else. */
const char *lcn_backend_name(enum lcn_backend b);
/* Parses one of those names; returns 0 or LCN_EINVAL (b untouched). */
int lcn_backend_parse(const char *name, enum lcn_backend *b);

/*
 * The names of the `ops` knob of both engines' tuning tables (opts.h
 * OPT_ENUM): "fixed" stores 0 (the knobs' mix), "bandit" 1 (each replica
 * adapts its mix).
 */
#define ENGINE_OPS_MODES "fixed|bandit"

/*
 * Elite restarts, both engines: when the best has been flat long enough,
 * the coldest engine_restart_slots(share, L) replicas of each ladder of L
 * restart from the elite (the knob restart_share): round(share x L), at
 * least one when share > 0, at most L. 0.5 gives the cold half, (L + 1) / 2.
 */
int32_t engine_restart_slots(double share, int32_t L);

/* "local", "bary", "median", "global", "empty", "pair", "swap", "cluster". */
const char *engine_op_name(enum engine_op op);

/*
 * Per-operator counters: tried (candidates of this kind drawn; a move of
 * several nodes is one candidate), valid (those that kept the layout
 * valid), accepted (Metropolis winners of this kind committed), improved
 * (accepted moves after which the replica's tuple was strictly below the
 * replica's best before the move). improved <= accepted <= valid <= tried.
 */
struct engine_op_stats {
    uint64_t tried, valid, accepted, improved;
};

/* Counters of one run. Every rate reported elsewhere names one of these. */
/* The most devices one run may use (engine_params.gpus). */
#define ENGINE_MAX_DEVICES 16

/* One device's island of a run across GPUs (engine_telemetry.devices). */
struct engine_device_stats {
    int32_t device;     /* the caller's device index (engine_params.devices[i]) */
    uint64_t evaluated; /* candidate evaluations of this island */
    uint64_t accepted;  /* Metropolis accepts of this island */
    uint64_t imports;   /* replicas that took the run's elite from another island */
};

struct engine_telemetry {
    uint64_t attempted;           /* proposals drawn (node + target point) */
    uint64_t valid;               /* proposals that passed V1-V3 */
    uint64_t evaluated;           /* candidate positions whose crossing delta was computed */
    uint64_t selected;            /* best-of-W winners put to the Metropolis test */
    uint64_t accepted;            /* Metropolis accepts */
    uint64_t rejected;            /* Metropolis rejects */
    uint64_t committed;           /* moves applied to a replica's state */
    uint64_t best_updates;        /* strict improvements of the global best */
    uint64_t exchanges_attempted; /* parallel-tempering swaps proposed */
    uint64_t exchanges_accepted;
    uint64_t restarts;   /* replicas restarted from the elite */
    uint64_t pair_tests; /* segment pair tests performed */
    uint64_t recounts;   /* full recounts (invariant checks) */
    struct engine_op_stats ops[ENGINE_OPS]; /* per move operator (enum engine_op) */
    double elapsed_s;
    /* A run across several GPUs (engine_params.gpus > 1): the counters of
     * each device's island, in the order of engine_params.devices; the
     * counters above are their sums. 0 devices for every other run. */
    int32_t n_devices;
    struct engine_device_stats devices[ENGINE_MAX_DEVICES];
};

/* The uint64_t counters of struct engine_telemetry, in the order the API
 * lists them (docs/API.md, "telemetry"; proto/job.c's table). */
#define ENGINE_TEL_COUNTERS(X)                                                                     \
    X(attempted) X(valid) X(evaluated) X(selected) X(accepted) X(rejected) X(committed)          \
        X(best_updates) X(exchanges_attempted) X(exchanges_accepted) X(restarts) X(pair_tests)   \
            X(recounts)

/* Adds b's counters (ENGINE_TEL_COUNTERS and the per-operator ones) to a:
 * the sum of a run's islands. elapsed_s and the devices are a's own. */
void engine_telemetry_add(struct engine_telemetry *a, const struct engine_telemetry *b);

struct engine_event {
    double elapsed_s;
    const char *stage; /* "start", "start:force", "anneal", ... (static string) */
    struct lcn_obj best;
};

typedef void (*engine_progress_cb)(void *ctx, const struct engine_event *ev);
typedef void (*engine_telemetry_cb)(void *ctx, const struct engine_telemetry *t);
/* layout: n points, valid for the duration of the call only. */
typedef void (*engine_layout_cb)(void *ctx, const struct lcn_pt *layout, const struct lcn_obj *obj,
                                 double elapsed_s);

/* Why a run stopped: one row gives the enum (ENGINE_STOP_DEADLINE = 0, ...)
 * and the name engine_stop_name returns. */
#define ENGINE_STOP_MAP(X)                                                                         \
    X(DEADLINE, "deadline")                                                                        \
    X(CANCELLED, "cancelled")                                                                      \
    X(TARGET, "target")   /* stop_at_target and best K <= target_k */                              \
    X(ERROR, "error")                                                                              \
    X(LIMIT, "limit")     /* move_limit reached (deterministic stop) */                            \
    X(OPTIMAL, "optimal") /* no crossing left: the tuple cannot improve */

#define ENGINE_STOP_ENUM(name, str) ENGINE_STOP_##name,
enum engine_stop { ENGINE_STOP_MAP(ENGINE_STOP_ENUM) };
#undef ENGINE_STOP_ENUM

/* The row's name ("deadline", ...); "?" for a value outside the enum. */
const char *engine_stop_name(enum engine_stop s);

/*
 * Engine limits: the largest values of the run parameters that every
 * engine accepts, defined here once. The API refuses larger values at
 * admission (422 limit_exceeded with the field path, proto/job.c), `lcnd
 * solve` with exit status 2, the daemon's configuration at start, and
 * engine_params_check (before any engine runs) with LCN_EINVAL. Graph sizes
 * are the graph model's: LCN_MAX_NODES and LCN_MAX_EDGES in graph.h.
 */
#define LCN_MAX_THREADS  1024 /* engine_params.threads: CPU worker threads */
#define LCN_MAX_REPLICAS 4096
/* engine_params.proposal_workers, and the CPU engine's proposal_workers
 * knob: the GPU solver runs at most this many candidates per move (its
 * SOL_WMAX, which tests/unit/test_solref.c holds equal to this). */
#define LCN_MAX_PROPOSAL_WORKERS 256

struct engine_params {
    uint64_t seed;
    int32_t threads;          /* CPU worker threads; 0 = number of online cores */
    int32_t replicas;         /* parallel-tempering replicas; 0 = engine default */
    int32_t proposal_workers; /* candidate points evaluated per move (best-of-W); 0 = default */
    int32_t target_k;         /* < 0: none */
    int stop_at_target;
    int64_t start_ns;               /* lcn_now_ns() at job start (elapsed times count from here) */
    int64_t deadline_ns;            /* absolute lcn_now_ns() deadline */
    LCN_ATOMIC_INT *cancel;         /* nonzero = stop as soon as possible; may be NULL */
    int64_t telemetry_interval_ns;  /* 0 = 1 s */
    int64_t checkpoint_interval_ns; /* 0 = 1 s */
    /* Moves per replica after which the run stops at the next replica-exchange
     * boundary; 0 = none. A run stopped this way (or by the target or the
     * optimum, which also stop at the next boundary) is a deterministic
     * function of (graph, initial layout, parameters), whatever the thread
     * count. */
    int64_t move_limit;
    /* Engine-specific knobs, "key=value,key=value" (docs/ENGINE.md lists the
     * CPU engine's); NULL or "" = defaults. An unknown key or a bad value
     * fails the run with LCN_EINVAL before any callback. */
    const char *tuning;
    /* GPUs for one run (islands of replicas on each device, exchanging the
     * elite through the host; the GPU engine only): 0 or 1 = one device.
     * devices (may be NULL: 0, 1, ..., gpus - 1) names them as indexes of
     * the caller's device set (server/engines.h); a single-device run uses
     * devices[0] when devices is set. At most ENGINE_MAX_DEVICES. */
    int32_t gpus;
    const int32_t *devices;
    /* Oracle passes the caller runs on the final layout after the engine
     * returns (the daemon's worker and `lcnd solve` revalidate it: 1). The
     * engine stops searching early enough for its own pass and these to
     * end by the deadline. */
    int32_t caller_validations;

    /* Optional initial layout: n points; has_xy (may be NULL) marks nodes whose
     * coordinates are present. Repaired before use. */
    const struct lcn_pt *init;
    const uint8_t *has_xy;

    engine_progress_cb on_progress;
    engine_telemetry_cb on_telemetry;
    engine_layout_cb on_layout;
    void *ctx;
};

struct engine_result {
    struct lcn_obj best;
    struct lcn_pt *layout; /* n points, xmalloc'd, owned by the caller; validated */
    double elapsed_s;
    double time_to_target_s; /* < 0 when target_k was not reached (or none given) */
    enum engine_stop stop;
    const char *backend;                         /* "cpu" or "gpu": what actually ran */
    const char *evaluator;                       /* e.g. "grid-delta": what actually ran */
    int32_t threads, replicas, proposal_workers; /* what actually ran */
    struct engine_telemetry tel;
};

/*
 * What preparing R replicas of a graph costs the CPU engine, as the
 * daemon's admission estimates it (issue 14): each replica holds its own
 * state (points, counts, the edge and node grids), about 16 bytes a node
 * and 48 an edge before the grids, and building it takes some hundreds of
 * nanoseconds per node and edge (2 us per unit measured on dense
 * 1,000 / 15,000, 2 cores; 11 us per replica of a 5-node graph). The
 * figures below are a quarter of those: admission refuses only what
 * certainly cannot fit; the engine's own checks hold the budget anyway.
 */
#define LCN_REPLICA_BYTES(n, m) (16 * (int64_t)(n) + 48 * (int64_t)(m))
#define LCN_REPLICA_SETUP_NS(n, m) (2500 + 500 * ((int64_t)(n) + (int64_t)(m)))
#define LCN_REPLICA_MEMORY_MAX ((int64_t)4 << 30)

/* The replicas the CPU engine runs for engine_params threads T (> 0) and
 * replicas R: R when it is positive, else two a thread and at least 4. */
#define LCN_CPU_REPLICAS(T, R) ((R) > 0 ? (int64_t)(R) : LCN_MAX(4, 2 * (int64_t)(T)))

/* Fills defaults: seed 1, no target, 10 s budget from now, everything else 0. */
void engine_params_default(struct engine_params *p);

/*
 * Checks threads, replicas and proposal_workers against the engine limits
 * above (each in [0, its limit]; 0 is the engine's default). Returns 0, or
 * LCN_EINVAL with a message naming the parameter in err ("proposal_workers:
 * 300 is outside [0, 256]") when err is not NULL and errlen.
 * engine_cpu_run starts with it; the backend dispatcher (server/engines.h)
 * runs it before any engine, the GPU engine included.
 */
int engine_params_check(const struct engine_params *p, char *err, size_t errlen);

/* Checks a tuning string ("key=value,...") against the CPU engine's knobs
 * (docs/ENGINE.md). Returns 0, or LCN_EINVAL with err naming the knob. The
 * daemon refuses a job whose tuning the engine that would run it does not
 * accept (422 at solver.tuning); the GPU engine's check is gpu_tuning_check
 * (gpu/gpu_knobs.h). */
int engine_cpu_tuning_check(const char *tuning, char *err, size_t errlen);

/*
 * Whether tuning ("key=value,...") sets one of the CPU engine's
 * fault-injection knobs (the fault_* rows of its knob table: a run deaf to
 * its deadline and cancel, a final pass that counts as out of time), which
 * exist for the tests only. Returns 1 with the knob's name as written in
 * knob (when knob and len), else 0; malformed items are left to the parse.
 */
int engine_tuning_fault(const char *tuning, char *knob, size_t len);

void engine_result_release(struct engine_result *r);

/*
 * Runs the CPU engine until the deadline, the cancel flag or (with
 * stop_at_target) the target. Returns 0 with *out filled, or a negative
 * LCN_E* code (LCN_EINVAL for a graph that cannot be laid out in its bounds,
 * LCN_ECORRUPT when the oracle rejected a layout the engine produced); on
 * failure *out holds nothing to release.
 */
int engine_cpu_run(const struct lcn_graph *g, const struct engine_params *p,
                   struct engine_result *out);

#endif
