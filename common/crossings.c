#include "crossings.h"

#include <stdlib.h>
#include <string.h>

#include "grid.h"
#include "util.h"

static int edges_cross(const struct lcn_graph *g, const struct lcn_pt *pts, int32_t e, int32_t f)
{
    if (graph_adjacent(g, e, f))
        return 0;
    return geom_segments_meet(pts[g->eu[e]], pts[g->ev[e]], pts[g->eu[f]], pts[g->ev[f]]);
}

uint64_t crossings_full(const struct lcn_graph *g, const struct lcn_pt *pts, int32_t *c)
{
    uint64_t tests = 0;
    for (int32_t e = 0; e < g->m; e++) {
        int32_t k = 0;
        for (int32_t f = 0; f < g->m; f++) {
            if (f == e)
                continue;
            tests++;
            k += edges_cross(g, pts, e, f);
        }
        c[e] = k;
    }
    return tests;
}

void layout_bbox(const struct lcn_pt *pts, int32_t n, int64_t *x0, int64_t *y0, int64_t *x1,
                 int64_t *y1)
{
    int64_t a = 0, b = 0, c = 0, d = 0;
    for (int32_t v = 0; v < n; v++) {
        if (v == 0 || pts[v].x < a)
            a = pts[v].x;
        if (v == 0 || pts[v].y < b)
            b = pts[v].y;
        if (v == 0 || pts[v].x > c)
            c = pts[v].x;
        if (v == 0 || pts[v].y > d)
            d = pts[v].y;
    }
    *x0 = a;
    *y0 = b;
    *x1 = c;
    *y1 = d;
}

uint64_t crossings_grid(const struct lcn_graph *g, const struct lcn_pt *pts, int32_t *c,
                        int32_t per_side)
{
    memset(c, 0, sizeof(int32_t) * (size_t)g->m);
    if (g->m == 0)
        return 0;
    int64_t x0, y0, x1, y1;
    layout_bbox(pts, g->n, &x0, &y0, &x1, &y1);
    struct lcn_grid gr;
    grid_init(&gr, x0, y0, x1, y1, per_side > 0 ? per_side : grid_side_for_edges(g->m));
    for (int32_t e = 0; e < g->m; e++)
        grid_add_segment(&gr, e, pts[g->eu[e]], pts[g->ev[e]]);
    uint64_t tests = crossings_in_grid(g, pts, c, &gr);
    grid_release(&gr);
    return tests;
}

uint64_t crossings_in_grid(const struct lcn_graph *g, const struct lcn_pt *pts, int32_t *c,
                           struct lcn_grid *gr)
{
    memset(c, 0, sizeof(int32_t) * (size_t)g->m);
    /* For each e, visit the partners f > e in its cells once (stamped). */
    int32_t *seen = xmalloc(sizeof(int32_t) * (size_t)g->m);
    for (int32_t f = 0; f < g->m; f++)
        seen[f] = -1;
    uint64_t tests = 0;
    for (int32_t e = 0; e < g->m; e++) {
        struct lcn_pt a = pts[g->eu[e]], b = pts[g->ev[e]];
        int32_t k = grid_segment_cells(gr, a, b);
        for (int32_t i = 0; i < k; i++) {
            const struct lcn_cell *cell = &gr->cells[gr->tmp[i]];
            for (int32_t j = 0; j < cell->len; j++) {
                int32_t f = cell->ids[j];
                if (f <= e || seen[f] == e)
                    continue;
                seen[f] = e;
                tests++;
                if (edges_cross(g, pts, e, f)) {
                    c[e]++;
                    c[f]++;
                }
            }
        }
    }
    free(seen);
    return tests;
}
