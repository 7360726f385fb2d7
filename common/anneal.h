/*
 * anneal.h - one annealing replica of the CPU engine: a private layout with
 * its incremental evaluator (state.h), a private RNG stream, moves drawn
 * from a mix of operators (enum engine_op; fixed, or adapted per replica by
 * a bandit), best-of-W candidate selection for single-node moves ("proposal
 * workers": W candidate points for one node, the best by energy goes to one
 * Metropolis test), compound moves of several nodes (PAIR, SWAP, CLUSTER:
 * node steps committed one by one, one Metropolis test on their summed exact
 * energy change, undone on rejection) and exact best tracking on the
 * objective tuple.
 *
 * Energy. The chain samples exp(-E / T) with
 *     E = a_K * K + a_nK * n_K + sum_e f(c[e]),
 *     f(c) = lin * c + quad * c^2 + exp_w * base^(c - Kref) / (1 - 1/base)
 *            + hinge_w * max(0, c - Kref + hinge_off)^2
 *            + pnorm_w * (c / Kref)^(pnorm_rho * Kref),
 * a sum that a move changes only on the edges in its change list, so its
 * delta is exact and O(changes). With Kref = the best K found, the
 * exponential term costs about 1 for pushing an edge from Kref-1 to Kref and
 * much less further down: a steep convex penalty that drives the worst edges
 * down while crossings elsewhere stay cheap. The best layout is tracked on
 * the exact tuple, never on E.
 *
 * A replica belongs to one thread at a time; everything it touches is
 * private except the energy table and the parameters (read-only while
 * sweeps run) and the stop flag (atomic).
 */
#ifndef LCN_ANNEAL_H
#define LCN_ANNEAL_H

#include <stdatomic.h>
#include <stdint.h>

#include "engine.h"
#include "graph.h"
#include "objective.h"
#include "rng.h"
#include "state.h"

/*
 * Operator selection (enum engine_op). FIXED draws from the probabilities
 * below; BANDIT adapts them per replica (struct anneal_bandit).
 */
/* the values of the ops knob (ENGINE_OPS_MODES in engine.h) */
enum anneal_ops_mode { ANNEAL_OPS_FIXED = 0, ANNEAL_OPS_BANDIT };

/* Move mix and energy weights. */
struct anneal_params {
    int32_t proposal_workers; /* W: candidate points per move (>= 1) */
    /* Multi-node (compound) operators: the share of moves that are one of
     * them (one candidate each, no best-of-W). */
    double p_pair, p_swap, p_cluster;
    /* Single-node operators: the share of the candidate points of the other
     * moves (the rest: a local Gaussian step). With p_median = p_empty = 0
     * and no compound operator this is the mix of before issue 15. */
    double p_global; /* uniform over the bounds */
    double p_bary;   /* near the barycentre of the node's neighbours */
    double p_median; /* near the coordinate-wise median of the node's neighbours */
    double p_empty;  /* in the emptiest of a few sampled cells of the node grid */
    /* adaptive operator selection (ops=bandit) */
    int32_t ops_mode;     /* enum anneal_ops_mode */
    double bandit_floor;  /* least probability of each operator (<= 1 / ENGINE_OPS) */
    int32_t bandit_every; /* replica moves between two updates */
    double bandit_decay;  /* weight of the past windows at an update, in [0, 1) */
    double bandit_bonus;  /* reward, in energy units, of a move that beats the replica best */
    /* which node moves (the rest: uniform) */
    double p_focus;      /* an endpoint of an edge with c[e] >= K - focus_slack */
    double p_partner;    /* an endpoint of an edge crossing such an edge */
    double p_weighted;   /* an endpoint of an edge drawn with probability ~ c[e] */
    int32_t focus_slack; /* >= 0 */
    /* energy */
    double a_K, a_nK, lin, quad, exp_w, base;
    double hinge_w;    /* weight of max(0, c - (Kref - hinge_off))^2 */
    int32_t hinge_off; /* 1: edges at Kref and above pay, those below are free */
    /* balance-aware p-norm term (issue 15): pnorm_w * (c / Kref)^p with
     * p = pnorm_rho * Kref, so p follows the best K; 0 = off */
    double pnorm_w, pnorm_rho;
    /* > 0: the exponential term's base is e^beta, beta = clamp(beta_k /
     * sqrt(Kref), 0.05, 2), following the best K (issue 15); 0: base */
    double beta_k;
};

/* The defaults the engine starts from. */
void anneal_params_default(struct anneal_params *ap);

/*
 * Per-edge energy table f(0..m) for a given Kref, in fixed point (units of
 * 2^-16, entries capped at 2^50): a move's energy change is an exact integer
 * sum, independent of the order of its change list, so both evaluators give
 * identical trajectories.
 */
struct anneal_energy {
    struct anneal_params ap;
    int32_t m, Kref;
    int64_t *f;        /* m + 1 entries */
    int64_t a_K, a_nK; /* the K and n_K weights, fixed point */
};

void anneal_energy_init(struct anneal_energy *en, const struct anneal_params *ap, int32_t m,
                        int32_t Kref);
/* Rebuilds the table for another Kref. */
void anneal_energy_set_kref(struct anneal_energy *en, int32_t Kref);
void anneal_energy_release(struct anneal_energy *en);
/* E of a state, from scratch (in energy units, as a double). */
double anneal_energy_of(const struct anneal_energy *en, const struct lcn_state *st);

/*
 * Counters of one replica (see struct engine_telemetry for their meaning).
 * A compound move (PAIR, SWAP, CLUSTER) counts as one proposal in
 * attempted, valid, evaluated and selected, whatever the number of node
 * steps it takes (those show in pair_tests only), so the sums of
 * ops[].tried, .valid and .accepted equal attempted, valid and accepted.
 */
struct anneal_counters {
    uint64_t attempted, valid, evaluated, selected, accepted, rejected, committed;
    uint64_t replica_best_updates;
    struct engine_op_stats ops[ENGINE_OPS];
};

/*
 * The operator selection of one replica. prob[] is the per-move
 * distribution over the operators; the draw thresholds follow from it.
 * BANDIT: every bandit_every moves of the replica, the window's reward
 * (energy decrease of the accepted moves, plus bandit_bonus for each move
 * that beat the replica best) and cost (node proposals evaluated, undo
 * steps included) per operator are folded into decayed sums
 * R = decay R + reward, C = decay C + cost, and
 * prob[op] = floor + (1 - ENGINE_OPS floor) * (R/C)[op] / sum (R/C).
 * Only replica-local data at replica-local move counts: deterministic
 * for a seed, whatever the thread count.
 */
struct anneal_bandit {
    int ready; /* set by anneal_replica_set_ops (anneal_sweep calls it first) */
    double prob[ENGINE_OPS];
    double R[ENGINE_OPS], C[ENGINE_OPS];   /* decayed sums */
    double wr[ENGINE_OPS], wc[ENGINE_OPS]; /* the current window */
    int64_t moves;                         /* moves of the replica so far */
    int64_t updates;                       /* bandit updates so far */
    /* thresholds: compound operators per move (cumulative over PAIR, SWAP,
     * CLUSTER), single-node kinds per candidate (cumulative over GLOBAL,
     * BARY, MEDIAN, EMPTY; the rest LOCAL) */
    double multi[3], single[4];
};

/* Called when a replica's best tuple strictly improves (on the replica's thread). */
typedef void (*anneal_improve_cb)(void *ctx, int32_t replica, const struct lcn_obj *best);

/* What a sweep needs from its driver. */
struct anneal_ctl {
    const struct anneal_energy *en;
    double T;           /* temperature */
    double sigma;       /* local step: standard deviation in grid units per axis */
    atomic_int *stop;   /* shared: nonzero = stop now (may be NULL) */
    atomic_int *cancel; /* the caller's cancel flag (may be NULL) */
    int64_t stop_ns;    /* absolute lcn_now_ns() limit (0 = none) */
    anneal_improve_cb on_improve;
    void *ctx;
};

struct anneal_replica {
    int32_t id;
    const struct lcn_graph *g;
    struct lcn_state st;
    struct lcn_rng rng;
    struct lcn_move *cand; /* W candidate moves */
    int32_t *cand_op;      /* their operators (enum engine_op) */
    int32_t W;
    double E; /* energy of the current state under the last energy table used */
    /* exact best tracking: best_pts is stale while best_pending is set (the
     * current state IS the best; it is copied out before the state leaves it) */
    struct lcn_obj best;
    struct lcn_pt *best_pts;
    int best_pending;
    /* edges with c[e] >= K - slack, rebuilt lazily */
    int32_t *hot;
    int32_t nhot, hot_K, hot_stale;
    int32_t *partners; /* scratch for state_edge_partners */
    int32_t *scratch;  /* 2 max degree + ANNEAL_CLUSTER_MAX entries: medians, clusters */
    struct lcn_pt *steps_to, *steps_from; /* compound moves: ANNEAL_CLUSTER_MAX + 1 steps */
    int32_t *steps_v;
    struct anneal_bandit bandit;
    /* gaussian pair cache */
    double gauss_spare;
    int have_spare;
    struct anneal_counters cnt;
};

/* The most neighbours a CLUSTER move carries along with its node. */
#define ANNEAL_CLUSTER_MAX 16

/* Sets the replica's operator mix from ap (FIXED: the probabilities; BANDIT:
 * the start of its adaptation: the fixed mix's per-move shares, lifted to
 * the floor) and clears its bandit. The first anneal_sweep of a replica
 * calls it with its parameters. */
void anneal_replica_set_ops(struct anneal_replica *r, const struct anneal_params *ap);

/*
 * Sets up a replica as a copy (state_clone) of `proto`, a state on a valid
 * start layout. The RNG is the stream `id` of key `seed`.
 */
void anneal_replica_init(struct anneal_replica *r, int32_t id, const struct lcn_state *proto,
                         uint64_t seed, int32_t workers);
/* The same, giving up with the stop's code (r zeroed, nothing to release)
 * when stop fires while the state is copied (stop.h). */
struct lcn_stop;
int anneal_replica_init_stop(struct anneal_replica *r, int32_t id, const struct lcn_state *proto,
                             uint64_t seed, int32_t workers, const struct lcn_stop *stop);
void anneal_replica_release(struct anneal_replica *r);

/* Replaces the current layout (a valid one, e.g. the elite); keeps best tracking. */
int anneal_replica_reset(struct anneal_replica *r, const struct lcn_pt *pts);

/* Copies the current layout into best_pts when a best is pending. */
void anneal_replica_flush_best(struct anneal_replica *r);

/*
 * Runs up to `moves` moves under ctl (the energy ctl->en is recomputed for
 * the replica first). Stops early when *ctl->stop or *ctl->cancel becomes
 * nonzero or lcn_now_ns() passes ctl->stop_ns (checked every few moves).
 * Returns the number of moves made.
 */
int64_t anneal_sweep(struct anneal_replica *r, const struct anneal_params *ap,
                     const struct anneal_ctl *ctl, int64_t moves);

#endif
