/*
 * state.h - the incremental evaluator: a layout with its per-edge crossing
 * counts, count histogram and spatial indexes, updated one node move at a
 * time (crossings_delta).
 *
 * A move of node v from p to q re-tests only v's incident edges, each before
 * and after the move, against the partners the edge grid offers along the
 * segment's cells; nothing else is recomputed and the layout is not copied.
 * Validity of the move (V1 bounds, V2 distinct points, V3 no node on a
 * foreign edge, for the moved node and its new edges) is checked
 * incrementally with the node and edge grids; V4 follows from V2 and V3 for
 * simple graphs.
 *
 * Ownership: the state owns copies of the layout and all indexes; it borrows
 * the graph, which must outlive it. A state, and every struct lcn_move used
 * with it, belongs to one thread.
 */
#ifndef LCN_STATE_H
#define LCN_STATE_H

#include <stdint.h>

#include "graph.h"
#include "grid.h"
#include "objective.h"

/*
 * Evaluators for the crossing delta of a proposal (both exact; both leave
 * the same counts, change lists and tuples; tests compare them per edge):
 *   GRID  re-tests the moved node's incident edges against the partners the
 *         edge grid offers along each segment's cells (cost ~ local density);
 *   SCAN  tests each incident edge, before and after the move, against every
 *         edge, in a branch-free loop over structure-of-arrays coordinates
 *         that compilers vectorise (int32 arithmetic when both bounds are at
 *         most 32767, where every determinant fits; int64 otherwise). Its
 *         strict-sign predicate equals geom_segments_meet on valid layouts
 *         only, which is all the engines ever hold; on an invalid layout use
 *         GRID.
 * Both cache the before-move half of a node's evaluation per (node,
 * generation), so best-of-W proposals for one node pay for it once.
 * state_init starts with GRID.
 */
enum state_eval {
    STATE_EVAL_GRID = 0,
    STATE_EVAL_SCAN,
};

enum state_invalid {
    STATE_OK = 0,
    STATE_OUT_OF_BOUNDS, /* V1 */
    STATE_OCCUPIED,      /* V2: another node is on the target point */
    STATE_ON_EDGE,       /* V3: the target point is on a foreign edge */
    STATE_EDGE_ON_NODE,  /* V3: a new incident edge runs through a node */
};

struct lcn_state {
    const struct lcn_graph *g;
    struct lcn_pt *pts; /* current layout */
    int32_t *cnt;       /* c[e] of the current layout */
    struct lcn_hist hist;
    struct lcn_grid eg;  /* edges by segment supercover */
    struct lcn_grid ng;  /* nodes by point */
    uint64_t generation; /* bumped by every commit */
    /* scratch, zero/idle between calls */
    int32_t *acc;  /* per-edge accumulated delta of the proposal being evaluated */
    int32_t *seen; /* per-edge stamp for deduplicating grid candidates */
    int32_t stamp;
    /* telemetry */
    uint64_t pair_tests; /* segment pair tests performed by proposals */
    /* before-move cache (both evaluators) and the SCAN evaluator (state_set_evaluator) */
    enum state_eval eval;
    int32_t *ex0, *ey0, *ex1, *ey1; /* edge e runs from (ex0, ey0) = pts[eu] to pts[ev] */
    int32_t *oacc;                  /* before-move crossings per edge of the cached node */
    int32_t *odc, *ndc;             /* per incident edge: crossings before / after */
    uint8_t *blk;                   /* per block of 16 edges: a nonzero difference */
    int eg_stale;                   /* SCAN commits left the edge grid behind */
    int32_t *sides_p, *sides_q;     /* side (-1, 0, 1) of the old / new point w.r.t. every edge */
    int32_t *sides, *sides_tmp;     /* sides of the moved node's neighbours (rows of m) */
    int32_t sides_rows;             /* neighbours whose sides are cached */
    int32_t *nx, *ny;               /* node coordinates, structure of arrays */
    int32_t *olist;                 /* GRID: before-move crossing partners of the cached node */
    int32_t olen, ocap;
    int32_t ocache_v;    /* node whose before-move half is cached, or -1 */
    uint64_t ocache_gen; /* generation it was computed on */
    int geometry_only;   /* state_init_geometry: grids and points, no counts */
};

/* A proposed single-node move and its evaluation. Owns its change list. */
struct lcn_move {
    int32_t v;
    struct lcn_pt from, to;
    enum state_invalid why; /* STATE_OK when the move keeps the layout valid */
    int32_t n;              /* number of edges whose count changes */
    int32_t *edge, *d;      /* edge[i] changes by d[i] (d != 0) */
    int32_t cap;
    struct lcn_obj obj;  /* tuple after the move (valid moves only) */
    uint64_t generation; /* state generation the move was evaluated on */
};

/*
 * Builds the state for layout pts (n points, copied). Every point must lie
 * within the graph's bounds (LCN_ERANGE otherwise); the layout need not be
 * valid, but move validity checks assume it is. Counts are computed with
 * crossings_grid. Returns 0 or a negative LCN_E* code.
 */
int state_init(struct lcn_state *st, const struct lcn_graph *g, const struct lcn_pt *pts);

/* state_init with the layout's per-edge crossing counts already known (m
 * entries, e.g. from the oracle's report): no recount. The caller vouches
 * for them; state_check compares them with a full recount. stop (NULL =
 * none) ends the grid building with its code (nothing to release). */
struct lcn_stop;
int state_init_counts(struct lcn_state *st, const struct lcn_graph *g, const struct lcn_pt *pts,
                      const int32_t *counts, const struct lcn_stop *stop);

/*
 * A geometry-only state: the points and both grids, no crossing counts (all
 * zero, the tuple meaningless). state_check_move and state_move_geometry
 * work on it; state_propose and state_commit must not be called. For
 * callers that only keep a layout valid (repair_layout): no full count up
 * front and no crossing delta per move.
 */
int state_init_geometry(struct lcn_state *st, const struct lcn_graph *g, const struct lcn_pt *pts);
/* The same, giving up with the stop's code (nothing to release) when stop
 * fires while the edge grid is built (stop.h). */
struct lcn_stop;
int state_init_geometry_stop(struct lcn_state *st, const struct lcn_graph *g,
                             const struct lcn_pt *pts, const struct lcn_stop *stop);

/* Moves v to q (in bounds) in a geometry-only state, validity unchecked. */
void state_move_geometry(struct lcn_state *st, int32_t v, struct lcn_pt q);

void state_release(struct lcn_state *st);

/*
 * Initialises dst as a copy of src (layout, counts, histogram, evaluator)
 * without recounting: the grids are rebuilt from the points. dst is
 * independent of src afterwards. src must be consistent (see state_check).
 */
void state_clone(struct lcn_state *dst, const struct lcn_state *src);
/* The same, giving up with the stop's code (nothing to release) when stop
 * fires while the grids are built (stop.h; a state of 400,000 edges takes
 * a hundred ms or more). */
int state_clone_stop(struct lcn_state *dst, const struct lcn_state *src,
                     const struct lcn_stop *stop);

/* Switches the evaluator used by state_propose (see enum state_eval). */
void state_set_evaluator(struct lcn_state *st, enum state_eval ev);

/* "grid-delta" or "scan-delta": the evaluator the state runs. */
const char *state_evaluator_name(const struct lcn_state *st);

/* Current tuple. */
void state_obj(const struct lcn_state *st, struct lcn_obj *o);

void move_init(struct lcn_move *mv);
void move_release(struct lcn_move *mv);

/*
 * Evaluates moving v to q without changing the state: fills mv with the
 * validity verdict and, for valid moves, the per-edge count changes and the
 * resulting tuple. Returns 1 for a valid move, 0 for an invalid one.
 */
int state_propose(struct lcn_state *st, int32_t v, struct lcn_pt q, struct lcn_move *mv);

/*
 * Validity of moving v to q only (no crossing counts): returns STATE_OK or
 * the first rule the move breaks.
 */
enum state_invalid state_check_move(struct lcn_state *st, int32_t v, struct lcn_pt q);

/*
 * Writes the edges crossing edge e in the current layout to out (room for
 * g->m entries) in ascending order and returns their number (equal to
 * cnt[e] on a valid layout).
 */
int32_t state_edge_partners(struct lcn_state *st, int32_t e, int32_t *out);

/* Applies a valid move evaluated on the current generation. */
void state_commit(struct lcn_state *st, const struct lcn_move *mv);

/*
 * Replaces the whole layout (e.g. restart from an elite); every point must be
 * within bounds. Rebuilds indexes and counts. Returns 0 or LCN_ERANGE.
 */
int state_reset(struct lcn_state *st, const struct lcn_pt *pts);

/*
 * Cheap invariant check: the sum of counts is even and K/n_K match the
 * histogram. Returns 0 or LCN_ECORRUPT.
 */
int state_check(const struct lcn_state *st);

/*
 * Recomputes counts and histogram from scratch with crossings_grid and
 * compares them with the incremental ones. Returns 0 when they were equal,
 * LCN_ECORRUPT when they differed (the state is repaired either way).
 */
int state_recount(struct lcn_state *st);

#endif
