/*
 * grid.h - a uniform grid of square cells holding item ids (edges or nodes).
 *
 * An edge is stored in every cell its segment passes through (a conservative
 * supercover computed with exact integer arithmetic), so two segments that
 * meet share at least one cell: the cell holding their common point. A node
 * is stored in the one cell holding its point. Queries therefore never miss
 * a partner; they may return an id more than once (callers deduplicate).
 *
 * The grid covers the rectangle [ox, ox + gx*cs) x [oy, oy + gy*cs); points
 * outside it are a programmer error. A grid is owned by one thread.
 */
#ifndef LCN_GRID_H
#define LCN_GRID_H

#include <stdint.h>

#include "geom.h"

struct lcn_cell {
    int32_t *ids;
    int32_t len, cap;
};

struct lcn_grid {
    int64_t ox, oy; /* origin (lower left corner) */
    int64_t cs;     /* cell side, >= 1 */
    int32_t gx, gy; /* cells per axis */
    struct lcn_cell *cells;
    /* scratch for segment supercovers */
    int32_t *tmp;
    int32_t tmp_cap;
};

/*
 * Sets up an empty grid covering the points [x0, x1] x [y0, y1] (inclusive)
 * with about `per_side` cells along the longer side (at least 1).
 */
void grid_init(struct lcn_grid *gr, int64_t x0, int64_t y0, int64_t x1, int64_t y1,
               int32_t per_side);
void grid_release(struct lcn_grid *gr);
/* Empties every cell, keeping the memory. */
void grid_clear(struct lcn_grid *gr);

/* Number of cells per side suggested for m edges: about sqrt(m)/1.5, clamped. */
int32_t grid_side_for_edges(int32_t m);

/* Index of the cell holding point p. */
int32_t grid_cell_of(const struct lcn_grid *gr, struct lcn_pt p);

/*
 * Computes the cells the closed segment ab passes through (conservative: may
 * include a few cells it only comes close to). Returns the count; the cell
 * indices are in gr->tmp until the next call.
 */
int32_t grid_segment_cells(struct lcn_grid *gr, struct lcn_pt a, struct lcn_pt b);

/*
 * The same into a caller's buffer (*buf of *cap entries, grown with
 * xrealloc as needed), leaving the grid untouched: several threads may query
 * one grid at once this way.
 */
int32_t grid_segment_cells_buf(const struct lcn_grid *gr, struct lcn_pt a, struct lcn_pt b,
                               int32_t **buf, int32_t *cap);

void grid_cell_add(struct lcn_grid *gr, int32_t cell, int32_t id);
/* Removes one occurrence of id from the cell; it must be present. */
void grid_cell_remove(struct lcn_grid *gr, int32_t cell, int32_t id);

/* Adds / removes id along the supercover of segment ab. */
void grid_add_segment(struct lcn_grid *gr, int32_t id, struct lcn_pt a, struct lcn_pt b);
void grid_remove_segment(struct lcn_grid *gr, int32_t id, struct lcn_pt a, struct lcn_pt b);

#endif
