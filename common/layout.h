/*
 * layout.h - starting layouts for the engines.
 *
 * Every function that returns integer points returns a VALID layout (V1-V4
 * hold; it went through repair_layout) or an error. The real-valued drawers
 * (force-directed, pivot MDS) work at any scale; layout_snap maps their
 * output onto the graph's bounds, stretching each axis to fill them, rounds
 * to integer points and repairs collisions.
 *
 * Kinds:
 *   input   the caller's layout (missing coordinates filled), repaired;
 *   force   Fruchterman-Reingold from a random start, repulsion by a
 *           Barnes-Hut quadtree (O(n log n) per iteration);
 *   stress  pivot MDS (classical scaling of BFS distances to a few pivots,
 *           a fast stress-style layout) refined by a short, cool
 *           Fruchterman-Reingold pass;
 *   random  uniform random points;
 *   circle  nodes on the ellipse inscribed in the bounds, in BFS order;
 *   descent the stress drawing (same seed), stretched onto the bounds, then
 *           gradient descent on a smooth surrogate of the total crossing
 *           count (layout_descent_stop) before it is snapped and repaired.
 *
 * Every function is a deterministic function of its inputs and seed, except
 * that a drawer cut short by its deadline stops at a timing-dependent
 * iteration. None of them keeps state; all are thread-safe.
 */
#ifndef LCN_LAYOUT_H
#define LCN_LAYOUT_H

#include <stdint.h>

#include "graph.h"

enum layout_kind {
    LAYOUT_INPUT = 0,
    LAYOUT_FORCE,
    LAYOUT_STRESS,
    LAYOUT_RANDOM,
    LAYOUT_CIRCLE,
    LAYOUT_DESCENT,
    LAYOUT_KINDS /* number of kinds */
};

/* "input", "force", "stress", "random", "circle", "descent". */
const char *layout_kind_name(enum layout_kind k);

/* Parses a kind name; returns 0 or LCN_EINVAL. */
int layout_kind_parse(const char *name, enum layout_kind *k);

/*
 * Fruchterman-Reingold with Barnes-Hut repulsion on real coordinates xy
 * (2n doubles, x then y per node). When `from_xy` is nonzero, xy holds the
 * starting positions and the run starts cool (a refinement); otherwise the
 * start is random from `seed`. Runs `iters` iterations (0 = a default that
 * depends on n) or until deadline_ns (0 = none).
 */
void layout_force_real(const struct lcn_graph *g, uint64_t seed, int from_xy, int32_t iters,
                       int64_t deadline_ns, double *xy);

/* The same, ending when stop fires (stop.h: its deadline or its cancel
 * flag; checked inside each iteration, whose partial step is dropped). */
struct lcn_stop;
void layout_force_stop(const struct lcn_graph *g, uint64_t seed, int from_xy, int32_t iters,
                       const struct lcn_stop *stop, double *xy);

/* Pivot MDS into xy (2n doubles). Pivots are chosen max-min from a seeded node. */
void layout_pivot_mds(const struct lcn_graph *g, uint64_t seed, double *xy);
/* The same; returns 0, or the stop's code with xy undefined. */
int layout_pivot_mds_stop(const struct lcn_graph *g, uint64_t seed, const struct lcn_stop *stop,
                          double *xy);

/*
 * Gradient descent on a smooth surrogate of the total crossing count
 * (layout_descent.c has the formula): xy (2n doubles) holds the starting
 * drawing in the frame of the bounds, [0,W] x [0,H], and receives the
 * drawing with the fewest exact crossings (total, then max per edge, of the
 * drawing rounded to integer points, touching counted as crossing) among
 * those the descent visited,
 * its start included, every coordinate inside the bounds. Runs `iters`
 * iterations, each O(n log n + m log m + P) for the P edge pairs whose boxes
 * come within tau of each other (m^2 / 2 on dense drawings); iters = 0 asks
 * for the default: 120, fewer when the first pass visits more than 2.5
 * million pairs (then 3 * 10^8 / P, at least 16: a dense drawing's budget in
 * pair visits, deterministic). When stop has a deadline the number of iterations is cut after
 * the first one so that the schedule ends by then; a stop that fires
 * mid-iteration drops that iteration and ends the descent (a cut-short
 * descent still returns its best drawing). Deterministic for given inputs
 * unless cut by the stop's deadline. Returns the number of iterations done;
 * *crossings (may be NULL) receives the returned drawing's total crossings,
 * -1 when none was counted.
 */
int32_t layout_descent_stop(const struct lcn_graph *g, int32_t iters, const struct lcn_stop *stop,
                            double *xy, int64_t *crossings);

/*
 * The descent's scales for a drawing xy in the frame of the bounds: the
 * first and last tau (half and a fiftieth of the mean edge length, at least
 * one grid unit) and the spacing radius r0. Shared by the CPU version and
 * the device's (gpu_layout_descent).
 */
void layout_descent_scales(const struct lcn_graph *g, const double *xy, double *tau0,
                           double *tau1, double *r0);

/*
 * The iterations that fit: after the first one (begun at t0, lcn_now_ns()),
 * as many as the stop's deadline leaves time for at that pace, at most
 * iters (iters itself without a deadline). Both descents call it once, so
 * their tau schedule ends by the deadline instead of being cut.
 */
int32_t layout_descent_fit(int32_t iters, int64_t t0, const struct lcn_stop *stop);

/*
 * The surrogate itself at scale tau with spacing radius r0, for tests:
 * returns its value, writes its gradient to grad (2n doubles, NULL = not
 * wanted) and the drawing's exact per-edge crossing counts to c (m ints,
 * NULL = not wanted).
 */
double layout_descent_energy(const struct lcn_graph *g, const double *xy, double tau, double r0,
                             double *grad, int32_t *c);

/*
 * Maps xy (2n doubles) onto integer points filling [0,W] x [0,H] and
 * repairs the result into out (n points). Returns 0 or LCN_EINVAL when the
 * bounds hold fewer than n points.
 */
int layout_snap(const struct lcn_graph *g, const double *xy, struct lcn_pt *out);
/* The same, its repair ending with the stop's code when stop fires. */
int layout_snap_stop(const struct lcn_graph *g, const double *xy, const struct lcn_stop *stop,
                     struct lcn_pt *out);

/*
 * Builds a starting layout of the given kind into out (n points). For
 * LAYOUT_INPUT, init (n points) and has_xy (NULL = all present) give the
 * caller's layout; init == NULL yields LCN_ENOTFOUND. deadline_ns (0 = none)
 * bounds the iterative drawers, whose cut-short drawing is still snapped
 * and repaired. stop (NULL = none) is the hard limit: when it fires in any
 * phase the call returns its code (LCN_EDEADLINE, LCN_ECANCELLED) and out
 * is not a layout. Returns 0 or a negative LCN_E* code (LCN_EINVAL when
 * the bounds hold fewer than n points).
 */
int layout_make(const struct lcn_graph *g, enum layout_kind kind, uint64_t seed,
                const struct lcn_pt *init, const uint8_t *has_xy, int64_t deadline_ns,
                const struct lcn_stop *stop, struct lcn_pt *out);

/*
 * A descent run elsewhere (the GPU engine's device descent,
 * gpu_layout_descent): it takes xy (2n doubles, in the frame of the bounds)
 * and leaves its drawing there, as layout_descent_stop does, ending by the
 * stop's deadline. Returns 0, or an error code: then the CPU descent runs
 * instead (from xy as it was).
 */
struct layout_descender {
    int (*run)(void *ctx, const struct lcn_graph *g, const struct lcn_stop *stop, double *xy);
    void *ctx;
};

/*
 * Whether a start of kind k is worth building at this point of a start
 * phase that ends at start_deadline_ns, in a run that ends at deadline_ns
 * (have: a start was already made), the rule both engines' start phases
 * share: not a random or circle layout of a graph past 2,000 edges once
 * there is a start (long chords: quadratic crossing counts), not a
 * force-directed layout of a graph past 3,000 nodes that would be cut
 * short, not the caller's layout init (has_xy as layout_make's) when its
 * crossings, estimated from a sample, would take more than a quarter of
 * the time left to repair and count. Returns 1 or 0.
 */
int layout_start_worth(const struct lcn_graph *g, enum layout_kind k, int have,
                       const struct lcn_pt *init, const uint8_t *has_xy, int64_t start_deadline_ns,
                       int64_t deadline_ns);

/*
 * Past LAYOUT_QUICK_NODES nodes both engines' start phases make a quick
 * stress first, reported at once: the same drawer with its refinement cut
 * at layout_quick_deadline (a fifth of what is left of the start phase),
 * so that a first layout of a large graph comes early.
 */
#define LAYOUT_QUICK_NODES 20000
int64_t layout_quick_deadline(int64_t start_deadline_ns);

/* layout_make with LAYOUT_DESCENT's descent done by d (NULL: the CPU's). */
int layout_make_with(const struct lcn_graph *g, enum layout_kind kind, uint64_t seed,
                     const struct lcn_pt *init, const uint8_t *has_xy, int64_t deadline_ns,
                     const struct lcn_stop *stop, const struct layout_descender *d,
                     struct lcn_pt *out);

#endif
