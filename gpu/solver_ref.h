/*
 * solver_ref.h - the CPU twin of the device-resident solver.
 *
 * It runs the very step the CUDA kernel runs (same draws, same candidate
 * points, same integer energy, same decisions; see solver_core.h), one
 * replica after another, with plain loops and no spatial filtering. Its
 * uses: the GPU tests compare the kernel's replica states (layout hashes,
 * counts, tuples, counters) with it after a fixed number of steps, and it
 * lets the solver's parameters be studied on a machine without a GPU.
 * It is not a fast solver.
 */
#ifndef LCN_GPU_SOLVER_REF_H
#define LCN_GPU_SOLVER_REF_H

#include <stdint.h>

#include "graph.h"
#include "solver_core.h"

/* Host-side twin of one job's device state. All arrays are owned. */
struct solref {
    const struct lcn_graph *g;
    struct sol_params sp;
    int32_t R, L;            /* replicas, ladder length (R % L == 0) */
    struct lcn_pt *cur, *best; /* R x n */
    int32_t *cnt, *hist;     /* R x m, R x (m+1) */
    int32_t *bcnt;           /* R x m: the counts of each replica's best layout */
    struct sol_replica *rep; /* R */
    int32_t *ends;           /* 2m endpoint pairs */
    int64_t *wtab;           /* groups x 2 x (m+1): each group's sol_energy_tables */
    uint32_t *rk;            /* 2 x (m+1): the ratios per K (solref_fill_ratios) */
    uint32_t r16;
    int64_t lin;
    double *ltab;  /* SOL_LTAB */
    double *temps; /* L */
    uint64_t batch;
    struct lcn_obj gbest; /* best over replicas after the last boundary */
    int32_t gbest_rep;
    uint64_t ex_att, ex_acc; /* replica exchanges attempted / accepted */
    struct sol_group grp[SOL_GROUPS_MAX]; /* sol_groups_boundary's state, as the device's record */
    struct lcn_obj ex;       /* the tuple imported last across groups */
    int32_t ex_done;
};

struct gpu_solver_params;
/*
 * Derives the kernel-level constants from the user-facing solver parameters
 * (gpu.h), shared by the device engine and the twin so both run the same
 * chain: sol_params, the ladder temps (L entries, in energy units), the
 * energy table ratio r16, the linear term lin and the initial sigma.
 */
void solref_derive(const struct gpu_solver_params *gp, const struct lcn_graph *g, uint64_t seed,
                   struct sol_params *sp, double *temps, uint32_t *r16, int64_t *lin,
                   int32_t *sigma0);

/* The -ln(u) table: ltab[i] = -ln((i + 0.5) / SOL_LTAB). */
void solref_fill_ltab(double *ltab);

/* Geometric ladder temps[s] = t_lo * (t_hi / t_lo)^(s / (L - 1)). */
void solref_fill_temps(double *temps, int32_t L, double t_lo, double t_hi);

/*
 * Sets up R replicas, all starting from the valid layout `start`, with the
 * energy table referenced at the start layout's K. sigma0: initial local
 * step radius. Returns 0 or LCN_EINVAL (bad sizes, layout out of bounds).
 */
/*
 * The energy tables' ratios per reference K (2 x (m+1) entries: the first
 * table's, then the second's), in 1/65536: with sp->beta_k > 0 the first
 * table's steepness is clamp(beta_k / sqrt(max(K, 1)), 0.05, 2) and the
 * second's alt_ratio times that (at most 5); otherwise r16 and sp->r16_alt
 * for every K. Host only (exp and sqrt of the C library): the device reads
 * the same integers.
 */
void solref_fill_ratios(const struct sol_params *sp, uint32_t r16, uint32_t *rk);

int solref_init(struct solref *s, const struct lcn_graph *g, const struct sol_params *sp,
                int32_t R, int32_t L, const struct lcn_pt *start, const double *temps,
                uint32_t r16, int64_t lin, int32_t sigma0);
void solref_release(struct solref *s);

/* Runs S steps of every replica, then the batch boundary (best reduction,
 * table re-reference, elite restarts, energies, exchanges, sigma
 * adaptation). */
void solref_batch(struct solref *s, int32_t S, double tscale);

/* One step of replica r (exposed for tests). */
void solref_step(struct solref *s, int32_t r, double tscale);

/* The batch boundary alone. */
void solref_boundary(struct solref *s, double tscale);

/* Recomputes replica r's energy under the current table. */
int64_t solref_energy(const struct solref *s, int32_t r);

#endif
