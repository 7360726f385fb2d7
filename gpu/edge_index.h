/*
 * edge_index.h - a replica's uniform grid over its edges, for the device
 * step's candidate edges (issue 17): one definition of the arithmetic for the
 * kernel (next) and for its slow twin here (edge_index_ref.c, test_edge_index).
 *
 * Why this shape (docs/GPU.md, "Edge index"): the step scans every edge and
 * keeps those whose box meets the star's box; a star with a long segment
 * (a far jump, a far neighbour) keeps most of the drawing, and its pair
 * tests dominate the rate graph's (pairbox17-20261202). A grid lists each
 * edge in the cells its segment passes through (grid.h's supercover, the
 * CPU engine's, so two segments that meet share a cell), so a star needs
 * only the edges listed in its own segments' cells. On the device a commit
 * cannot cheaply edit variable-length cell lists, so the index is rebuilt
 * from the layout (a counting sort: count, prefix, scatter) every few steps,
 * and the edges that moved since (their nodes' incident edges) are taken as
 * they are: a replica's dirty list, scanned by every query. Edges whose
 * supercover exceeds `cap` cells are not listed: the long list, scanned by
 * every query too.
 *
 * What a query returns for a node v moving from p to candidate points q_i:
 * every edge not incident to v that meets a segment (x, pu[k]) for x in
 * {p, q_i} or holds x on its interior, possibly more, possibly repeated
 * (callers deduplicate): the cells of those segments and of the points x
 * themselves (a node without edges still needs the edges through its
 * point), the long list and the dirty list.
 */
#ifndef LCN_GPU_EDGE_INDEX_H
#define LCN_GPU_EDGE_INDEX_H

#include <stdint.h>

#include "geom.h"
#include "grid.h"
#include "hd.h"

/* The grid of a drawing [0, width] x [0, height]: side cs, gx x gy cells. */
struct eix_geom {
    int64_t cs;
    int32_t gx, gy;
    int32_t cap; /* an edge listed in more cells than this goes to the long list */
};

/* The grid for m edges on a width x height drawing: the CPU engine's
 * (grid_side_for_edges cells along the longer side, grid_dims), and edges
 * of more than 4 x that many cells long. Host only: the device takes the
 * result. */
struct eix_geom eix_geom_for(int32_t width, int32_t height, int32_t m);

/* The cell holding p (inside the drawing). */
LCN_HD static inline int32_t eix_cell_of(const struct eix_geom *g, struct lcn_pt p)
{
    return (int32_t)(p.y / g->cs) * g->gx + (int32_t)(p.x / g->cs);
}

/* Segment ab left to right (grid.h's supercover takes ax <= bx). */
LCN_HD static inline void eix_order(struct lcn_pt *a, struct lcn_pt *b)
{
    if (a->x > b->x) {
        struct lcn_pt t = *a;
        *a = *b;
        *b = t;
    }
}

/* Column cx's rows of segment ab (ordered, eix_order), clamped to the grid. */
LCN_HD static inline void eix_rows(const struct eix_geom *g, struct lcn_pt a, struct lcn_pt b,
                                   int64_t cx, int64_t *r0, int64_t *r1)
{
    grid_column_rows(g->cs, a.x, a.y, b.x, b.y, cx, r0, r1);
    if (*r1 >= g->gy)
        *r1 = g->gy - 1;
}

/* How many cells segment ab passes through (its supercover). */
LCN_HD static inline int64_t eix_seg_count(const struct eix_geom *g, struct lcn_pt a, struct lcn_pt b)
{
    eix_order(&a, &b);
    int64_t n = 0;
    for (int64_t cx = a.x / g->cs; cx <= b.x / g->cs; cx++) {
        int64_t r0, r1;
        eix_rows(g, a, b, cx, &r0, &r1);
        n += r1 - r0 + 1;
    }
    return n;
}

/* The cells of segment ab into out (eix_seg_count of them). */
LCN_HD static inline void eix_seg_cells(const struct eix_geom *g, struct lcn_pt a, struct lcn_pt b,
                                        int32_t *out)
{
    eix_order(&a, &b);
    int64_t n = 0;
    for (int64_t cx = a.x / g->cs; cx <= b.x / g->cs; cx++) {
        int64_t r0, r1;
        eix_rows(g, a, b, cx, &r0, &r1);
        for (int64_t r = r0; r <= r1; r++)
            out[n++] = (int32_t)(r * g->gx + cx);
    }
}

/*
 * One replica's index (host twin; the device keeps the same arrays per
 * replica): cell c lists items[start[c] .. start[c + 1]), long_e[0..nlong)
 * are the edges not listed, dirty marks and lists the edges that moved since
 * the build. Built by eix_build, queried by eix_query (edge_index_ref.c).
 */
struct eix {
    struct eix_geom g;
    int32_t m;
    int32_t *start;          /* gx gy + 1 */
    int32_t *items;          /* start[gx gy] entries (at most m cap) */
    int32_t *long_e, nlong;  /* m */
    int32_t *dirty, ndirty;  /* m: edges moved since the build, once each */
    uint8_t *is_dirty;       /* m */
    uint32_t *stamp, now;    /* m: query deduplication */
};

struct lcn_graph;
void eix_init(struct eix *x, const struct lcn_graph *g);
void eix_release(struct eix *x);
/* Lists every edge of layout pts; the dirty list empties. */
void eix_build(struct eix *x, const struct lcn_graph *g, const struct lcn_pt *pts);
/* Node v moved: its incident edges join the dirty list. */
void eix_moved(struct eix *x, const struct lcn_graph *g, int32_t v);
/*
 * The edges a move of node v (at pts[v]) to the points q[0..nq) must test
 * (the header's contract), each once, into out (at least m entries).
 * Returns how many.
 */
int32_t eix_query(struct eix *x, const struct lcn_graph *g, const struct lcn_pt *pts, int32_t v,
                  const struct lcn_pt *q, int32_t nq, int32_t *out);

#endif
