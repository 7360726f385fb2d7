/*
 * solver_core.h - the arithmetic of one step of the device-resident solver,
 * shared (one definition, two compilers) by the CUDA kernels in solver.cu and
 * their CPU twin in solver_ref.c.
 *
 * Everything that decides the trajectory of a replica is integer-exact or a
 * single IEEE double operation, so that the kernel and the twin take the
 * same decisions and reach the same layout hash:
 *   - random draws: Philox-4x32-10 with counter (step, replica, purpose, lane);
 *   - candidate points: integer arithmetic on the draws (an Irwin-Hall sum of
 *     four 16-bit uniforms stands in for a Gaussian step);
 *   - energy: E = sum_e w[c_e] with an int64 table w built by an integer
 *     recurrence (exponential in c around a reference K, then linear); two
 *     tables of different steepness, each ladder using one (sol_table);
 *   - Metropolis: accept when dE <= 0 or (double)dE <= T * L[u], L a table of
 *     -ln(u) built once on the host and copied to the device;
 *   - replica exchange: (E_i - E_j) * (1/T_i - 1/T_j) >= -L[u] in doubles,
 *     each operation rounded once (no fused multiply-add on either side).
 */
#ifndef LCN_GPU_SOLVER_CORE_H
#define LCN_GPU_SOLVER_CORE_H

#include <stdint.h>

#include "geom.h"
#include "hd.h"
#include "objective.h"
#include "rng.h"

#define SOL_DMAX 256       /* largest node degree the device solver handles */
#define SOL_WMAX 256       /* largest number of proposal workers (candidates per move) */
#define SOL_LTAB 4096      /* entries of the -ln(u) table */
#define SOL_W_BASE 4096    /* w[kref] */
#define SOL_W_EXP_CAP (1ll << 32) /* the exponential part stops growing here */
#define SOL_MAX_EDGES 4194304 /* the device solver's edge limit (slots: gpu_config.max_edges) */
#define SOL_EXACT_EDGES 32768 /* up to here every w[c] stays below 2^62 / m unclamped */
#define SOL_W_SUM_CAP (1ll << 62) /* above SOL_EXACT_EDGES, w[c] <= SOL_W_SUM_CAP / (m + 1) */

/* Job-wide constants: identical for every replica, passed by value. */
struct sol_params {
    int32_t n, m, width, height;
    int32_t W;            /* candidates per move (proposal workers), 1..SOL_WMAX */
    int32_t tournament;   /* edges sampled when choosing a bottleneck node */
    uint32_t p_hot;       /* P(bottleneck node choice) in 1/65536 */
    uint32_t p_local;     /* P(local Gaussian-like step) in 1/65536 */
    uint32_t p_bary;      /* P(neighbour barycentre step) in 1/65536 */
    uint32_t p_median;    /* P(neighbours' median step) in 1/65536; rest = global jump */
    int32_t bandit;       /* 1: each replica adapts its operator mix (sol_bandit_update) */
    uint32_t bandit_floor; /* the bandit's least probability per operator, in 1/65536 */
    int32_t sigma_min, sigma_max;
    uint32_t k0, k1; /* seed as key */
    int32_t alt_every; /* ladders l with l % alt_every == alt_every - 1 use the second table (0: none) */
    uint32_t r16_alt;  /* the second table's ratio */
    double beta_k;     /* > 0: the steepness follows K (sol_energy_tables' rk), 0: r16, r16_alt */
    double alt_ratio;  /* with beta_k: the second table's steepness over the first's */
    int32_t restart_steps; /* elite restarts after this many steps without a better best (0: none) */
    int32_t restart_slots; /* the slots of each ladder that restart: slot < restart_slots */
    int32_t restart_pool;  /* elites a restart wave draws from (sol_elite_pool), 1..SOL_POOL_MAX */
    uint32_t pn16;     /* the second table's balance-aware lower branch (issue 15): below kref,
                          w[c] = w[c+1] / (1 + pnorm_rho * kref / (c+1)), pnorm_rho in 1/65536;
                          0: the exponential branch */
    int32_t pn_up;     /* 1: the p-norm above kref too (sol_energy_table) */
    int32_t groups;      /* replica groups (sol_ngroups), 1..SOL_GROUPS_MAX */
    int32_t group_every; /* boundaries between elite imports across groups (>= 1) */
    int32_t group_take;  /* replicas per group that take the run's elite, 0..SOL_TAKE_MAX */
};

/*
 * The device's move operators: the candidate point kinds of a one-node move,
 * numbered as enum engine_op's first four (common/engine.h): a local step,
 * near the neighbours' barycentre, near their coordinate-wise median, a
 * uniform jump over the canvas.
 */
#define SOL_OP_LOCAL 0
#define SOL_OP_BARY 1
#define SOL_OP_MEDIAN 2
#define SOL_OP_GLOBAL 3
#define SOL_OPS 4

/* Per-replica scalars, in device memory (array of R), mirrored by the twin. */
struct sol_replica {
    uint64_t step;     /* steps done */
    int64_t E;         /* energy under the current table */
    struct lcn_obj cur, best;
    double T;          /* temperature of the last Metropolis test (ladder x schedule) */
    int32_t sigma;     /* local step radius */
    int32_t slot;      /* temperature slot within its ladder */
    uint32_t win_att, win_acc; /* acceptance window for sigma adaptation */
    uint64_t attempted, valid, evaluated, selected, accepted, rejected, committed;
    uint64_t best_updates, pair_tests;
    uint64_t restarts; /* times this replica restarted from the elite */
    uint64_t imports;  /* times it took the run's elite from another group (sol_groups_boundary) */
    /* operators: the candidate kind of draw word u is the first k with
     * u < op_cut[k] (SOL_OP_GLOBAL past the last); fixed from the knobs, or
     * adapted by the bandit from the window counters */
    uint32_t op_cut[SOL_OPS]; /* op_cut[SOL_OPS - 1] = 65536 (keeps the struct free of padding) */
    uint32_t win_tried[SOL_OPS], win_gain[SOL_OPS]; /* bandit window: candidates, winners accepted with dE < 0 */
    uint64_t op_tried[SOL_OPS], op_valid[SOL_OPS], op_acc[SOL_OPS], op_imp[SOL_OPS]; /* engine_op_stats */
    uint64_t grid_groups; /* candidate groups whose edges came from the replica's edge grid
                           * (issue 17; the device's alone: the twin scans, like pair_tests) */
};

enum sol_lane {
    SOL_LANE_NODE = 0x7fff0000u, /* node choice draws */
    SOL_LANE_ACCEPT = 0x7fff0001u,
    SOL_LANE_EXCHANGE = 0x7fff0002u,
    /* 0x7fff0003.. : tournament draws */
};

/* Four random words for (step, replica, purpose, lane) under the job key. */
LCN_HD static inline struct lcn_u32x4 sol_draw(const struct sol_params *sp, uint64_t step,
                                               uint32_t replica, uint32_t purpose, uint32_t lane)
{
    struct lcn_u32x4 c;
    c.v[0] = (uint32_t)step;
    c.v[1] = replica;
    c.v[2] = purpose | ((uint32_t)(step >> 32) << 8);
    c.v[3] = lane;
    return rng_philox(c, sp->k0, sp->k1);
}

/* Uniform integer in [0, n) from one word. */
LCN_HD static inline uint32_t sol_below(uint32_t word, uint32_t n)
{
    return (uint32_t)(((uint64_t)word * n) >> 32);
}

LCN_HD static inline int32_t sol_clamp(int64_t v, int32_t lo, int32_t hi)
{
    return (int32_t)(v < lo ? lo : (v > hi ? hi : v));
}

/* Approximately standard-normal step times sigma: Irwin-Hall of 4 x 16 bits. */
LCN_HD static inline int64_t sol_gauss(uint32_t a, uint32_t b, int32_t sigma)
{
    int64_t s = (int64_t)(a & 0xffff) + (a >> 16) + (b & 0xffff) + (b >> 16);
    /* mean 131070, standard deviation 37837 */
    return (s - 131070) * sigma / 37837;
}

/* Draw `word` of the move stream: candidate `lane` takes words 2 lane and 2 lane + 1. */
LCN_HD static inline struct lcn_u32x4 sol_candidate_draw(const struct sol_params *sp, uint64_t step,
                                                         uint32_t replica, uint32_t word)
{
    return sol_draw(sp, step, replica, RNG_PURPOSE_MOVE, word);
}

/* The operator of a candidate from its first draw (cut: sol_replica.op_cut). */
LCN_HD static inline int sol_op_of(struct lcn_u32x4 a, const uint32_t *cut)
{
    uint32_t u = a.v[0] & 0xffff;
    int k = 0;
    while (k < SOL_OPS - 1 && u >= cut[k])
        k++;
    return k;
}

/* The fixed operator mix of the knobs as cuts. */
LCN_HD static inline void sol_fixed_cuts(const struct sol_params *sp, uint32_t *cut)
{
    cut[0] = sp->p_local;
    cut[1] = sp->p_local + sp->p_bary;
    cut[2] = sp->p_local + sp->p_bary + sp->p_median;
    cut[3] = 65536;
}

/* The candidate from its two draws (sol_candidate_draw), so that a kernel can
 * draw before it knows p. bary and med: the neighbours' barycentre and
 * coordinate-wise median (sol_median_rank), p for an isolated node. */
LCN_HD static inline struct lcn_pt sol_candidate_of(const struct sol_params *sp, struct lcn_u32x4 a,
                                                    struct lcn_u32x4 b, struct lcn_pt p,
                                                    struct lcn_pt bary, struct lcn_pt med,
                                                    int32_t sigma, const uint32_t *cut)
{
    int op = sol_op_of(a, cut);
    int64_t x, y;
    if (op == SOL_OP_LOCAL) {
        x = p.x + sol_gauss(a.v[1], a.v[2], sigma);
        y = p.y + sol_gauss(a.v[3], b.v[0], sigma);
    } else if (op == SOL_OP_BARY || op == SOL_OP_MEDIAN) {
        struct lcn_pt c0 = op == SOL_OP_BARY ? bary : med;
        int32_t r = sigma / 4 + 1;
        x = c0.x + (int64_t)sol_below(a.v[1], 2 * (uint32_t)r + 1) - r;
        y = c0.y + (int64_t)sol_below(a.v[2], 2 * (uint32_t)r + 1) - r;
    } else {
        x = sol_below(a.v[1], (uint32_t)sp->width + 1);
        y = sol_below(a.v[2], (uint32_t)sp->height + 1);
    }
    struct lcn_pt q;
    q.x = sol_clamp(x, 0, sp->width);
    q.y = sol_clamp(y, 0, sp->height);
    if (q.x == p.x && q.y == p.y) {
        /* never propose the null move: step one unit in a random direction */
        uint32_t d = b.v[1] & 3;
        int32_t dx = d == 0 ? 1 : (d == 1 ? -1 : 0), dy = d == 2 ? 1 : (d == 3 ? -1 : 0);
        q.x = sol_clamp((int64_t)p.x + dx, 0, sp->width);
        q.y = sol_clamp((int64_t)p.y + dy, 0, sp->height);
        if (q.x == p.x && q.y == p.y) {
            q.x = sol_clamp((int64_t)p.x - dx, 0, sp->width);
            q.y = sol_clamp((int64_t)p.y - dy, 0, sp->height);
        }
    }
    return q;
}

/*
 * Candidate point `lane` for moving a node at p (sol_candidate_of with the
 * lane's draws). The result is inside the bounds and differs from p unless
 * the bounds hold a single point.
 */
LCN_HD static inline struct lcn_pt sol_candidate(const struct sol_params *sp, uint64_t step,
                                                 uint32_t replica, uint32_t lane, struct lcn_pt p,
                                                 struct lcn_pt bary, struct lcn_pt med,
                                                 int32_t sigma, const uint32_t *cut)
{
    return sol_candidate_of(sp, sol_candidate_draw(sp, step, replica, 2 * lane),
                            sol_candidate_draw(sp, step, replica, 2 * lane + 1), p, bary, med,
                            sigma, cut);
}

/*
 * The coordinate-wise median of a node's neighbours, by ranks: neighbour k's
 * x is the median's when its rank (the neighbours j with x_j < x_k, or x_j ==
 * x_k and j < k) is (d - 1) / 2; likewise y. One neighbour has each rank, so
 * the device lets each thread rank one neighbour (xs, ys: the d coordinates).
 */
LCN_HD static inline int32_t sol_median_rank(const int32_t *xs, int32_t d, int32_t k)
{
    int32_t r = 0;
    for (int32_t j = 0; j < d; j++)
        r += xs[j] < xs[k] || (xs[j] == xs[k] && j < k);
    return r;
}

/*
 * The bandit (sp->bandit): at a batch boundary, a replica whose window holds
 * at least 512 candidates gives operator k the probability bandit_floor +
 * (1 - SOL_OPS bandit_floor) s_k / sum s, s_k = (gain_k + 1) / (tried_k + 8)
 * (winners accepted with an energy decrease per candidate drawn, smoothed),
 * in integers (bit-exact on host and device), then halves the window: an
 * exponentially decayed record of recent success per unit of cost (every
 * candidate costs one evaluation).
 */
LCN_HD static inline void sol_bandit_update(const struct sol_params *sp, struct sol_replica *x)
{
    if (!sp->bandit)
        return;
    uint64_t tot = 0;
    for (int k = 0; k < SOL_OPS; k++)
        tot += x->win_tried[k];
    if (tot < 512)
        return;
    uint64_t sc[SOL_OPS], sum = 0;
    for (int k = 0; k < SOL_OPS; k++) {
        sc[k] = (((uint64_t)x->win_gain[k] + 1) << 24) / ((uint64_t)x->win_tried[k] + 8);
        sum += sc[k];
    }
    uint32_t fl = sp->bandit_floor, freep = 65536 - SOL_OPS * fl, acc = 0;
    for (int k = 0; k < SOL_OPS - 1; k++) {
        acc += fl + (uint32_t)((uint64_t)freep * sc[k] / sum);
        x->op_cut[k] = acc;
    }
    for (int k = 0; k < SOL_OPS; k++) {
        x->win_tried[k] >>= 1;
        x->win_gain[k] >>= 1;
    }
}

/*
 * Node to move at (step, replica). With probability p_hot a tournament over
 * `tournament` (1..SOL_TMAX) random edges picks the edge with the highest
 * count (ties: the first drawn) and one of its endpoints; otherwise a
 * uniform node. The kernel runs the tournament's draws in parallel and
 * reduces them (sol_tour_key); sol_pick_node is the sequential definition.
 * cnt: the replica's counts; ends: edge endpoints as pairs (ends[2e], ends[2e+1]).
 */
#define SOL_TMAX 256

LCN_HD static inline struct lcn_u32x4 sol_node_draw(const struct sol_params *sp, uint64_t step,
                                                    uint32_t replica)
{
    return sol_draw(sp, step, replica, RNG_PURPOSE_MOVE, SOL_LANE_NODE);
}

LCN_HD static inline int sol_node_hot(const struct sol_params *sp, struct lcn_u32x4 a)
{
    return (a.v[0] & 0xffff) < sp->p_hot && sp->m > 0;
}

LCN_HD static inline int32_t sol_tour_size(const struct sol_params *sp)
{
    return sp->tournament < 1 ? 1 : (sp->tournament > SOL_TMAX ? SOL_TMAX : sp->tournament);
}

/* Edge of tournament draw k. */
LCN_HD static inline int32_t sol_tour_edge(const struct sol_params *sp, uint64_t step,
                                           uint32_t replica, int32_t k)
{
    struct lcn_u32x4 b = sol_draw(sp, step, replica, RNG_PURPOSE_MOVE, SOL_LANE_NODE + 3 + (uint32_t)(k >> 2));
    return (int32_t)sol_below(b.v[k & 3], (uint32_t)sp->m);
}

/* Orders draws as the tournament does: higher count first, then lower k;
 * counts from 2^16 - 1 up tie (they occur only past SOL_EXACT_EDGES). The
 * maximum key names the winner. */
LCN_HD static inline uint32_t sol_tour_key(int32_t count, int32_t k)
{
    const uint32_t c = count > 0xffff ? 0xffffu : (uint32_t)count;
    return (c << 16) | (uint32_t)(0xffff - k);
}

LCN_HD static inline int32_t sol_tour_k(uint32_t key)
{
    return (int32_t)(0xffff - (key & 0xffff));
}

/* The node of a draw: the tournament winner's endpoint, or a uniform node. */
LCN_HD static inline int32_t sol_node_of(const struct sol_params *sp, struct lcn_u32x4 a,
                                         int32_t win_e, const int32_t *ends)
{
    if (win_e < 0)
        return (int32_t)sol_below(a.v[1], (uint32_t)sp->n);
    return ends[2 * win_e + ((a.v[0] >> 16) & 1)];
}

LCN_HD static inline int32_t sol_pick_node(const struct sol_params *sp, uint64_t step,
                                           uint32_t replica, const int32_t *cnt,
                                           const int32_t *ends)
{
    struct lcn_u32x4 a = sol_node_draw(sp, step, replica);
    if (!sol_node_hot(sp, a))
        return sol_node_of(sp, a, -1, ends);
    int32_t best_e = -1, t = sol_tour_size(sp);
    uint32_t best_key = 0;
    for (int32_t k = 0; k < t; k++) {
        int32_t e = sol_tour_edge(sp, step, replica, k);
        uint32_t key = sol_tour_key(cnt[e], k);
        if (best_e < 0 || key > best_key) {
            best_key = key;
            best_e = e;
        }
    }
    return sol_node_of(sp, a, best_e, ends);
}

/*
 * Energy table: w[c] for c in 0..m. w[kref] = SOL_W_BASE; each step up
 * multiplies by r16/65536 until SOL_W_EXP_CAP, then grows linearly by the
 * last increment; each step down divides likewise (floor), or, with pn16
 * nonzero, by 1 + (pn16/65536) * kref / (c+1): the ratio of (c+1)^p to c^p
 * to first order with p = pnorm_rho * kref, so below kref the table follows
 * a p-norm of the counts whose p tracks the best K (balance-aware, issue
 * 15), in integers, bit-exact on host and device. With pn_up (and pn16,
 * kref > 0) the steps up follow the same p-norm, w[c] = w[c-1] (1 +
 * (pn16/65536) kref / (c-1)), until the cap: the whole table is then a
 * p-norm, c^p / K^p. A linear term `lin` per crossing is added so that
 * total crossings still break ties.
 */
LCN_HD static inline void sol_energy_table(int64_t *w, int32_t m, int32_t kref, uint32_t r16,
                                           int64_t lin, uint32_t pn16, int pn_up)
{
    if (kref > m)
        kref = m;
    if (kref < 0)
        kref = 0;
    const int up = pn_up && pn16 && kref > 0;
    /* past SOL_EXACT_EDGES the table saturates, so that sum_e w[c_e] stays below 2^62 */
    const int64_t wcap = m > SOL_EXACT_EDGES ? SOL_W_SUM_CAP / ((int64_t)m + 1) : INT64_MAX;
    int64_t e = SOL_W_BASE, inc = 0;
    w[kref] = e;
    for (int32_t c = kref + 1; c <= m; c++) {
        if (e < SOL_W_EXP_CAP) {
            int64_t r = up ? 65536 + (int64_t)pn16 * kref / (c - 1) : (int64_t)r16;
            int64_t ne = (e * r) >> 16;
            if (ne <= e)
                ne = e + 1;
            inc = ne - e;
            e = ne;
        } else {
            e += inc;
        }
        if (e > wcap)
            e = wcap;
        w[c] = e;
    }
    e = SOL_W_BASE;
    for (int32_t c = kref - 1; c >= 0; c--) {
        int64_t r = pn16 ? 65536 + (int64_t)pn16 * kref / (c + 1) : (int64_t)r16;
        e = (e << 16) / r;
        w[c] = e;
    }
    for (int32_t c = 0; c <= m; c++)
        w[c] += lin * c;
}

/*
 * The two energy tables, one after the other (2 x (m+1) entries): the
 * first with ratio r16, the second with sp->r16_alt and, when pn16 is set,
 * the p-norm lower branch (and upper, pn_up) (a copy of the first when
 * alt_every is 0). Exchanges stay within a ladder, so each ladder is
 * a tempering chain of one energy: a portfolio of steepness across ladders.
 * With sp->beta_k > 0 the ratios follow K: rk[kref] and rk[m + 1 + kref]
 * (solref_fill_ratios, computed once on the host, so that both sides read
 * the same integers).
 */
LCN_HD static inline void sol_energy_tables(int64_t *w, const struct sol_params *sp, int32_t kref,
                                            uint32_t r16, int64_t lin, const uint32_t *rk)
{
    uint32_t a = r16, b = sp->alt_every > 0 ? sp->r16_alt : r16;
    if (sp->beta_k > 0 && rk) {
        int32_t k = kref < 0 ? 0 : (kref > sp->m ? sp->m : kref);
        a = rk[k];
        b = sp->alt_every > 0 ? rk[sp->m + 1 + k] : a;
    }
    sol_energy_table(w, sp->m, kref, a, lin, 0, 0);
    sol_energy_table(w + sp->m + 1, sp->m, kref, b, lin, sp->alt_every > 0 ? sp->pn16 : 0, sp->pn_up);
}

/* Which table replica r (ladders of L contiguous replicas) uses: 0 or 1. */
LCN_HD static inline int32_t sol_table(const struct sol_params *sp, int32_t r, int32_t L)
{
    return sp->alt_every > 0 && (r / L) % sp->alt_every == sp->alt_every - 1;
}

/* Metropolis on an integer energy change. */
LCN_HD static inline int sol_accept(int64_t dE, double T, const double *ltab, uint32_t word)
{
    if (dE <= 0)
        return 1;
    double thr = T * ltab[word >> 20]; /* one rounding */
    return (double)dE <= thr;
}

/* Replica exchange between temperatures Ti (holding Ei) and Tj (holding Ej). */
LCN_HD static inline int sol_exchange(int64_t Ei, int64_t Ej, double Ti, double Tj,
                                      const double *ltab, uint32_t word)
{
    double bi = 1.0 / Ti, bj = 1.0 / Tj;
    double db = bi - bj;
    double de = (double)(Ei - Ej);
    double x = de * db; /* log of the acceptance ratio */
    return x >= -ltab[word >> 20];
}

/*
 * Elite restarts, decided at a batch boundary after the best reduction:
 * when the best over all replicas has not improved for restart_steps steps
 * (counted on the slowest replica), the coldest restart_slots of every
 * ladder (engine_restart_slots of the knob restart_share: by default the cold half)
 * restart from the elite, the best replica's best layout with its counts,
 * and the stall count starts again.
 */
LCN_HD static inline int sol_restart_due(const struct sol_params *sp, uint64_t min_step,
                                         uint64_t last_improved)
{
    return sp->restart_steps > 0 && min_step - last_improved >= (uint64_t)sp->restart_steps;
}

LCN_HD static inline int sol_restarts_slot(const struct sol_params *sp, int32_t slot)
{
    return slot < sp->restart_slots;
}

/*
 * Replica groups (knob `groups`, issue 15): the ladders split into up to
 * SOL_GROUPS_MAX contiguous groups (ladder l of `lad` is in group
 * l * ng / lad), each a population of its own as an island on a device of
 * its own is: its own best, energy-table reference K (its pair of tables,
 * sol_wtab_of), stall count and restart waves from its own elites. Every
 * group_every boundaries, when the run's best is new since the last import,
 * the group_take worst replicas (by current tuple; ties: the highest index)
 * of every group whose best is worse take it, and such a group skips its
 * restart wave at that boundary. One group is the single population of
 * before, decision for decision.
 */
#define SOL_GROUPS_MAX 16
#define SOL_TAKE_MAX 8
#define SOL_POOL_MAX 8 /* elites of one restart wave (knob restart_pool) */

struct sol_group {
    struct lcn_obj best;    /* the group's best tuple after the last boundary */
    uint64_t last_improved; /* its slowest replica's step when that best last improved (or a wave) */
    uint64_t min_step;      /* its slowest replica's step at the last boundary */
    int32_t best_rep, kref; /* the replica holding it (ties: the lowest index); the tables' K */
    int32_t restart_now;    /* this boundary restarts the group's restarting slots */
    int32_t npool;          /* with restart_now: the wave's elites (sol_elite_pool) */
    int32_t pool[SOL_POOL_MAX];
    int32_t nimp, imp_src;  /* replicas imp[0..nimp) take replica imp_src's best this boundary */
    int32_t imp[SOL_TAKE_MAX];
};

LCN_HD static inline int32_t sol_ngroups(const struct sol_params *sp, int32_t R, int32_t L)
{
    const int32_t lad = L > 0 ? R / L : 0;
    int32_t g = sp->groups < 1 ? 1 : (sp->groups > SOL_GROUPS_MAX ? SOL_GROUPS_MAX : sp->groups);
    return lad < 1 ? 1 : (g < lad ? g : lad);
}

LCN_HD static inline int32_t sol_group_of(int32_t ng, int32_t r, int32_t R, int32_t L)
{
    return (int32_t)((int64_t)(r / L) * ng / (R / L));
}

/* Group h's replicas: [*r0, *r1), the ladders l with h <= l ng / lad < h + 1
 * (sol_group_of), so that its loops need not test every replica. */
LCN_HD static inline void sol_group_range(int32_t ng, int32_t h, int32_t R, int32_t L, int32_t *r0,
                                          int32_t *r1)
{
    const int64_t lad = R / L;
    *r0 = (int32_t)((h * lad + ng - 1) / ng) * L;
    *r1 = (int32_t)(((h + 1) * lad + ng - 1) / ng) * L;
}

/* Replica r's energy table: its group's pair (2 x (m+1) entries each), then
 * sol_table within the pair. */
LCN_HD static inline int32_t sol_wtab_of(const struct sol_params *sp, int32_t r, int32_t R, int32_t L)
{
    return 2 * sol_group_of(sol_ngroups(sp, R, L), r, R, L) + sol_table(sp, r, L);
}

/*
 * Up to k replicas of group h (of ng), one pick at a time over the group in
 * index order (sol_group_range): with worst 0 the lowest best tuple among those whose best
 * differs from every pick's (ties: the lowest index); with worst 1 the
 * highest current tuple among those not picked (ties: the highest index).
 * Returns how many. O(k^2 R): run once per boundary, by one thread.
 */
LCN_HD static inline int32_t sol_group_pick(const struct sol_replica *rep, int32_t R, int32_t L,
                                            int32_t ng, int32_t h, int32_t k, int worst,
                                            int32_t *out)
{
    int32_t np = 0, r0, r1;
    sol_group_range(ng, h, R, L, &r0, &r1);
    while (np < k) {
        int32_t b = -1;
        for (int32_t r = r0; r < r1; r++) {
            int skip = 0;
            for (int32_t i = 0; i < np && !skip; i++)
                skip = worst ? out[i] == r : obj_cmp(&rep[r].best, &rep[out[i]].best) == 0;
            if (!skip && (b < 0 || (worst ? obj_cmp(&rep[r].cur, &rep[b].cur) >= 0
                                          : obj_cmp(&rep[r].best, &rep[b].best) < 0)))
                b = r;
        }
        if (b < 0)
            break;
        out[np++] = b;
    }
    return np;
}

/*
 * The elite pool of a restart wave (knob restart_pool, issue 15): up to P
 * replicas of group h whose best tuples differ, best first (ties to the
 * lowest index), so that a wave spreads the cold slots over several basins
 * instead of collapsing every ladder onto one layout (>= 1 when the group
 * has a replica).
 */
LCN_HD static inline int32_t sol_elite_pool(const struct sol_replica *rep, int32_t R, int32_t L,
                                            int32_t ng, int32_t h, int32_t P, int32_t *pool)
{
    return sol_group_pick(rep, R, L, ng, h, P, 0, pool);
}

/* The replica whose best layout replica r restarts from: itself when it is
 * in the pool (a member's best is never written during a wave, so the
 * others may read it), else the pool member of its ladder's turn. */
LCN_HD static inline int32_t sol_restart_source(const int32_t *pool, int32_t np, int32_t r, int32_t L)
{
    for (int32_t i = 0; i < np; i++)
        if (pool[i] == r)
            return r;
    return pool[(r / L) % np];
}

/* The `take` worst replicas of group h by current tuple (ties: the highest
 * index), worst first, into out. */
LCN_HD static inline int32_t sol_group_worst(const struct sol_replica *rep, int32_t R, int32_t L,
                                             int32_t ng, int32_t h, int32_t take, int32_t *out)
{
    return sol_group_pick(rep, R, L, ng, h, take, 1, out);
}

/*
 * A batch boundary's group decisions (one thread on the device, the twin's
 * solref_boundary): each group's best and stall, restart waves
 * (sol_restart_due on the group's slowest replica) and the imports of the
 * run's best replica gb (ex: the tuple last imported, *ex_done once one
 * was). Returns the replicas that import.
 */
LCN_HD static inline int32_t sol_groups_boundary(const struct sol_params *sp,
                                                 const struct sol_replica *rep, int32_t R,
                                                 int32_t L, uint64_t batch, int32_t gb,
                                                 struct sol_group *grp, struct lcn_obj *ex,
                                                 int32_t *ex_done)
{
    const int32_t ng = sol_ngroups(sp, R, L);
    for (int32_t h = 0; h < ng; h++) {
        struct sol_group *x = &grp[h];
        int32_t b = -1, r0, r1;
        uint64_t ms = 0;
        sol_group_range(ng, h, R, L, &r0, &r1);
        for (int32_t r = r0; r < r1; r++) {
            if (b < 0 || rep[r].step < ms)
                ms = rep[r].step;
            if (b < 0 || obj_cmp(&rep[r].best, &rep[b].best) < 0)
                b = r;
        }
        if (obj_cmp(&rep[b].best, &x->best) < 0)
            x->last_improved = ms;
        x->best = rep[b].best;
        x->best_rep = b;
        x->min_step = ms;
        x->restart_now = sol_restart_due(sp, ms, x->last_improved);
        x->nimp = 0;
    }
    int32_t nimp = 0;
    if (ng > 1 && sp->group_take > 0 && sp->group_every > 0 &&
        batch % (uint64_t)sp->group_every == 0 && (!*ex_done || obj_cmp(&rep[gb].best, ex) < 0)) {
        for (int32_t h = 0; h < ng; h++) {
            struct sol_group *x = &grp[h];
            if (obj_cmp(&x->best, &rep[gb].best) <= 0)
                continue;
            x->nimp = sol_group_worst(rep, R, L, ng, h, sp->group_take, x->imp);
            x->imp_src = gb;
            x->restart_now = 0;
            nimp += x->nimp;
        }
        *ex = rep[gb].best;
        *ex_done = 1;
    }
    for (int32_t h = 0; h < ng; h++) {
        struct sol_group *x = &grp[h];
        if (x->restart_now) {
            x->last_improved = x->min_step;
            x->npool = sol_elite_pool(rep, R, L, ng, h, sp->restart_pool, x->pool);
        }
    }
    return nimp;
}

/* Where replica r (in temperature slot `slot`) takes a layout from at this
 * boundary: *src's best layout and counts, 1 for an import, 0 for a
 * restart wave; -1: neither. */
LCN_HD static inline int sol_group_source(const struct sol_params *sp, const struct sol_group *grp,
                                          int32_t R, int32_t L, int32_t r, int32_t slot,
                                          int32_t *src)
{
    const struct sol_group *x = &grp[sol_group_of(sol_ngroups(sp, R, L), r, R, L)];
    for (int32_t i = 0; i < x->nimp; i++)
        if (x->imp[i] == r) {
            *src = x->imp_src;
            return 1;
        }
    if (x->restart_now && sol_restarts_slot(sp, slot)) {
        *src = sol_restart_source(x->pool, x->npool, r, L);
        return 0;
    }
    return -1;
}

/* Adapts sigma towards an acceptance ratio of 20-40% over a window. */
LCN_HD static inline int32_t sol_adapt_sigma(int32_t sigma, uint32_t att, uint32_t acc,
                                             int32_t lo, int32_t hi)
{
    if (att < 64)
        return sigma;
    if ((uint64_t)acc * 10 > (uint64_t)att * 4)
        sigma = sigma + sigma / 4 + 1;
    else if ((uint64_t)acc * 5 < (uint64_t)att)
        sigma = sigma - sigma / 5;
    return sigma < lo ? lo : (sigma > hi ? hi : sigma);
}

/*
 * A star's crossings with one edge, orientations shared. The star is the
 * segments x -> pu[k] of a moving node at x, its far ends pu[k] (nodes u[k]);
 * the edge is ab, its ends the nodes ea and eb. geom_segments_meet(x, pu, a,
 * b) is the conjunction of three tests: the boxes meet, orient(x, pu, a) *
 * orient(x, pu, b) <= 0 and orient(a, b, x) * orient(a, b, pu) <= 0. The last
 * one's orient(a, b, pu) is the same for every position x of the node (the
 * old one, each candidate, the committed one), so sol_star_masks takes it
 * once per (edge, segment) into two bit masks, and orient(a, b, x) once per
 * (edge, position) selects the segments left to test: most of them drop out
 * without a test of their own. The device step (solver.cu) counts this way;
 * geom_segments_meet per segment is its slow twin (solver_ref.c, and
 * test_solref's random and degenerate fixtures).
 *
 * A mask covers the 64 segments [k0, k0 + 64) of the star: bit j of *pos
 * (*neg) is set when pu[k0 + j] lies left (right) of ab, both bits when that
 * segment is not to be counted (it shares an endpoint with the edge, or
 * k0 + j >= d). `small` selects geom_orient_small (every coordinate in
 * [0, GEOM_SMALL]) over geom_orient: the same signs, in 32-bit arithmetic.
 */
LCN_HD static inline int sol_orient(int small, struct lcn_pt a, struct lcn_pt b, struct lcn_pt c)
{
    return small ? geom_orient_small(a, b, c) : geom_orient(a, b, c);
}

LCN_HD static inline void sol_star_masks(int small, const struct lcn_pt *pu, const int32_t *u,
                                         int32_t d, int32_t k0, int32_t ea, int32_t eb,
                                         struct lcn_pt a, struct lcn_pt b, uint64_t *pos,
                                         uint64_t *neg)
{
    int32_t kn = d - k0 < 64 ? d - k0 : 64;
    uint64_t p = kn < 64 ? ~0ull << kn : 0, q = p;
    /* branch-free, so that the device overlaps the loads of several segments */
#ifdef __CUDA_ARCH__
#pragma unroll 4
#endif
    for (int32_t j = 0; j < kn; j++) {
        int32_t k = k0 + j;
        int skip = u[k] == ea || u[k] == eb;
        int o = sol_orient(small, a, b, pu[k]);
        uint64_t bit = 1ull << j;
        p |= (skip || o > 0) ? bit : 0;
        q |= (skip || o < 0) ? bit : 0;
    }
    *pos = p;
    *neg = q;
}

/* Segments of the mask's 64 that are counted (pair tests decided). */
LCN_HD static inline int32_t sol_star_counted(uint64_t pos, uint64_t neg)
{
#ifdef __CUDA_ARCH__
    return __popcll(~(pos & neg));
#else
    return __builtin_popcountll(~(pos & neg));
#endif
}

/*
 * Bit j set when segment x -> pu[k0 + j] meets ab, for the counted segments
 * of the mask (sol_star_masks of the same edge and k0).
 */
LCN_HD static inline uint64_t sol_star_meets(int small, struct lcn_pt x, struct lcn_pt a,
                                             struct lcn_pt b, uint64_t pos, uint64_t neg,
                                             const struct lcn_pt *pu, int32_t k0)
{
    int ox = sol_orient(small, a, b, x);
    uint64_t left = ox > 0 ? ~pos : ox < 0 ? ~neg : ~(pos & neg), out = 0;
    while (left) {
#ifdef __CUDA_ARCH__
        int j = __ffsll((long long)left) - 1;
#else
        int j = __builtin_ctzll(left);
#endif
        left &= left - 1;
        struct lcn_pt w = pu[k0 + j];
        if (geom_boxes_meet(x, w, a, b) &&
            sol_orient(small, x, w, a) * sol_orient(small, x, w, b) <= 0)
            out |= 1ull << j;
    }
    return out;
}

#endif
