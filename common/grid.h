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
#include "hd.h"

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
/* The side and cell counts grid_init gives such a grid (for a caller that
 * keeps its own cells: the device's edge index, gpu/edge_index.h). */
void grid_dims(int64_t x0, int64_t y0, int64_t x1, int64_t y1, int32_t per_side, int64_t *cs,
               int32_t *gx, int32_t *gy);
void grid_release(struct lcn_grid *gr);
/* Empties every cell, keeping the memory. */
void grid_clear(struct lcn_grid *gr);

/* Number of cells per side suggested for m edges: about sqrt(m)/1.5, clamped. */
int32_t grid_side_for_edges(int32_t m);

/* Index of the cell holding point p. */
int32_t grid_cell_of(const struct lcn_grid *gr, struct lcn_pt p);

/*
 * The supercover of a closed segment, column by column, as plain arithmetic
 * (LCN_HD: the device's edge index walks it too, docs/GPU.md): in a grid of
 * side cs whose origin is (0, 0), the segment from (ax, ay) to (bx, by)
 * (grid-relative, ax <= bx, every coordinate >= 0) passes through columns
 * ax / cs .. bx / cs, and in column cx through rows *ry0 .. *ry1: its y over
 * the column's closed x-range, rounded outwards (a few cells it only comes
 * close to may be included, none it touches is left out). Rows are not
 * clamped to the grid.
 */
LCN_HD static inline int64_t grid_floor_div(int64_t a, int64_t b) /* b > 0 */
{
    int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

LCN_HD static inline int64_t grid_ceil_div(int64_t a, int64_t b) /* b > 0 */
{
    int64_t q = a / b;
    return (a % b != 0 && a > 0) ? q + 1 : q;
}

LCN_HD static inline void grid_column_rows(int64_t cs, int64_t ax, int64_t ay, int64_t bx, int64_t by,
                                           int64_t cx, int64_t *ry0, int64_t *ry1)
{
    const int64_t dx = bx - ax, dy = by - ay;
    int64_t ylo, yhi;
    if (dx == 0) {
        ylo = ay < by ? ay : by;
        yhi = ay < by ? by : ay;
    } else {
        const int64_t xl = ax > cx * cs ? ax : cx * cs, xr = bx < (cx + 1) * cs ? bx : (cx + 1) * cs;
        const int64_t nl = (xl - ax) * dy, nr = (xr - ax) * dy;
        const int64_t y0f = ay + grid_floor_div(nl, dx), y0c = ay + grid_ceil_div(nl, dx);
        const int64_t y1f = ay + grid_floor_div(nr, dx), y1c = ay + grid_ceil_div(nr, dx);
        ylo = y0f < y1f ? y0f : y1f;
        yhi = y0c > y1c ? y0c : y1c;
    }
    *ry0 = ylo / cs;
    *ry1 = yhi / cs;
}

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
