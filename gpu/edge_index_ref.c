/*
 * edge_index_ref.c - the host twin of a replica's edge index (edge_index.h):
 * the counting-sort build, the dirty list and the query, with plain loops.
 * test_edge_index checks the query's contract against every edge.
 */
#include "edge_index.h"

#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "util.h"

struct eix_geom eix_geom_for(int32_t width, int32_t height, int32_t m)
{
    struct eix_geom g;
    const int32_t side = grid_side_for_edges(m);
    grid_dims(0, 0, width, height, side, &g.cs, &g.gx, &g.gy);
    g.cap = 4 * side;
    return g;
}

void eix_init(struct eix *x, const struct lcn_graph *g)
{
    memset(x, 0, sizeof(*x));
    x->g = eix_geom_for(g->width, g->height, g->m);
    x->m = g->m;
    const size_t cells = (size_t)x->g.gx * (size_t)x->g.gy, m = (size_t)(g->m ? g->m : 1);
    x->start = xcalloc(cells + 1, sizeof(int32_t));
    x->items = xmalloc(sizeof(int32_t) * m * (size_t)x->g.cap);
    x->long_e = xmalloc(sizeof(int32_t) * m);
    x->dirty = xmalloc(sizeof(int32_t) * m);
    x->is_dirty = xcalloc(m, 1);
    x->stamp = xcalloc(m, sizeof(uint32_t));
}

void eix_release(struct eix *x)
{
    LCN_FREE_ALL(x->start, x->items, x->long_e, x->dirty, x->is_dirty, x->stamp);
    memset(x, 0, sizeof(*x));
}

/* The cells of edge e, or 0 and the long list when there are too many. */
static int32_t edge_cells(struct eix *x, const struct lcn_graph *g, const struct lcn_pt *pts, int32_t e,
                          int32_t *cells)
{
    struct lcn_pt a = pts[g->eu[e]], b = pts[g->ev[e]];
    int64_t n = eix_seg_count(&x->g, a, b);
    if (n > x->g.cap)
        return 0;
    eix_seg_cells(&x->g, a, b, cells);
    return (int32_t)n;
}

void eix_build(struct eix *x, const struct lcn_graph *g, const struct lcn_pt *pts)
{
    const int32_t C = x->g.gx * x->g.gy;
    int32_t *cells = xmalloc(sizeof(int32_t) * (size_t)x->g.cap);
    memset(x->start, 0, sizeof(int32_t) * (size_t)(C + 1));
    x->nlong = 0;
    /* count per cell (shifted by one), prefix, scatter */
    for (int32_t e = 0; e < g->m; e++) {
        int32_t n = edge_cells(x, g, pts, e, cells);
        if (n == 0)
            x->long_e[x->nlong++] = e;
        for (int32_t i = 0; i < n; i++)
            x->start[cells[i] + 1]++;
    }
    for (int32_t c = 0; c < C; c++)
        x->start[c + 1] += x->start[c];
    int32_t *fill = xmalloc(sizeof(int32_t) * (size_t)C);
    memcpy(fill, x->start, sizeof(int32_t) * (size_t)C);
    for (int32_t e = 0; e < g->m; e++) {
        int32_t n = edge_cells(x, g, pts, e, cells);
        for (int32_t i = 0; i < n; i++)
            x->items[fill[cells[i]]++] = e;
    }
    for (int32_t i = 0; i < x->ndirty; i++)
        x->is_dirty[x->dirty[i]] = 0;
    x->ndirty = 0;
    free(fill);
    free(cells);
}

void eix_moved(struct eix *x, const struct lcn_graph *g, int32_t v)
{
    for (int32_t i = g->inc_off[v]; i < g->inc_off[v + 1]; i++) {
        int32_t e = g->inc[i];
        if (!x->is_dirty[e]) {
            x->is_dirty[e] = 1;
            x->dirty[x->ndirty++] = e;
        }
    }
}

/* Adds e to out once per query (the stamp), unless incident to v. */
static void take(struct eix *x, const struct lcn_graph *g, int32_t v, int32_t e, int32_t *out,
                 int32_t *n)
{
    if (x->stamp[e] == x->now || g->eu[e] == v || g->ev[e] == v)
        return;
    x->stamp[e] = x->now;
    out[(*n)++] = e;
}

/* The listed edges of the cells of segment ab (a point when a == b). */
static void take_segment(struct eix *x, const struct lcn_graph *g, int32_t v, struct lcn_pt a,
                         struct lcn_pt b, int32_t **cells, int64_t *cap, int32_t *out, int32_t *n)
{
    int64_t k = eix_seg_count(&x->g, a, b);
    if (k > *cap) {
        *cap = k;
        *cells = xrealloc(*cells, sizeof(int32_t) * (size_t)k);
    }
    eix_seg_cells(&x->g, a, b, *cells);
    for (int64_t i = 0; i < k; i++) {
        int32_t c = (*cells)[i];
        for (int32_t j = x->start[c]; j < x->start[c + 1]; j++)
            take(x, g, v, x->items[j], out, n);
    }
}

int32_t eix_query(struct eix *x, const struct lcn_graph *g, const struct lcn_pt *pts, int32_t v,
                  const struct lcn_pt *q, int32_t nq, int32_t *out)
{
    if (++x->now == 0) { /* the stamps wrapped: start them again */
        memset(x->stamp, 0, sizeof(uint32_t) * (size_t)(x->m ? x->m : 1));
        x->now = 1;
    }
    int32_t n = 0;
    int64_t cap = 0;
    int32_t *cells = NULL;
    for (int32_t i = 0; i < x->nlong; i++)
        take(x, g, v, x->long_e[i], out, &n);
    for (int32_t i = 0; i < x->ndirty; i++)
        take(x, g, v, x->dirty[i], out, &n);
    for (int32_t s = -1; s < nq; s++) {
        struct lcn_pt p = s < 0 ? pts[v] : q[s];
        take_segment(x, g, v, p, p, &cells, &cap, out, &n);
        for (int32_t i = g->inc_off[v]; i < g->inc_off[v + 1]; i++)
            take_segment(x, g, v, p, pts[graph_other(g, g->inc[i], v)], &cells, &cap, out, &n);
    }
    free(cells);
    return n;
}
