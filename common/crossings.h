/*
 * crossings.h - per-edge crossing counts of a whole layout.
 *
 * Two edges cross when they share no endpoint and their closed segments have
 * a point in common (geom_segments_meet). c[e] is the number of edges
 * crossing e. Both functions below produce the identical array for any
 * layout (valid or not); the incremental twin is state.h.
 */
#ifndef LCN_CROSSINGS_H
#define LCN_CROSSINGS_H

#include <stdint.h>

#include "graph.h"

/*
 * The oracle: for every edge e, tests every other edge f (O(m^2) pair tests,
 * one writer per edge). Slow and obviously correct; the reference for every
 * other evaluator. Returns the number of pair tests performed.
 */
uint64_t crossings_full(const struct lcn_graph *g, const struct lcn_pt *pts, int32_t *c);

/*
 * Uniform-grid evaluator: edges are bucketed into grid cells by their
 * segment supercover, and only pairs sharing a cell are tested (each pair
 * once). `per_side` is the number of cells along the longer side (0 picks
 * grid_side_for_edges(m)). Returns the number of pair tests performed.
 */
uint64_t crossings_grid(const struct lcn_graph *g, const struct lcn_pt *pts, int32_t *c,
                        int32_t per_side);

/*
 * crossings_grid that gives up when stop fires (stop.h; NULL never does):
 * returns 0 with c and *tests filled, or the stop's code (LCN_EDEADLINE,
 * LCN_ECANCELLED) with c partial.
 */
struct lcn_stop;
int crossings_grid_stop(const struct lcn_graph *g, const struct lcn_pt *pts, int32_t *c,
                        int32_t per_side, const struct lcn_stop *stop, uint64_t *tests);

/* Threads crossings_grid counts with for m edges: one per online core (at
 * most 8) from 8192 edges on, else 1. Benchmarks record it. */
int32_t crossings_grid_threads(int32_t m);

struct lcn_grid;
/*
 * The counting step of crossings_grid on a grid that already holds every
 * edge of the layout by segment (grid_add_segment). Returns pair tests.
 */
uint64_t crossings_in_grid(const struct lcn_graph *g, const struct lcn_pt *pts, int32_t *c,
                           struct lcn_grid *gr);

/* Bounding box of n points (all of them, including any out of bounds). */
void layout_bbox(const struct lcn_pt *pts, int32_t n, int64_t *x0, int64_t *y0, int64_t *x1,
                 int64_t *y1);

#endif
