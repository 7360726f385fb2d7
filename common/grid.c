#include "grid.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

void grid_dims(int64_t x0, int64_t y0, int64_t x1, int64_t y1, int32_t per_side, int64_t *cs,
               int32_t *gx, int32_t *gy)
{
    LCN_ASSERT(x1 >= x0 && y1 >= y0);
    if (per_side < 1)
        per_side = 1;
    int64_t span = LCN_MAX(x1 - x0, y1 - y0) + 1;
    *cs = (span + per_side - 1) / per_side;
    if (*cs < 1)
        *cs = 1;
    *gx = (int32_t)((x1 - x0) / *cs + 1);
    *gy = (int32_t)((y1 - y0) / *cs + 1);
}

void grid_init(struct lcn_grid *gr, int64_t x0, int64_t y0, int64_t x1, int64_t y1,
               int32_t per_side)
{
    grid_dims(x0, y0, x1, y1, per_side, &gr->cs, &gr->gx, &gr->gy);
    gr->ox = x0;
    gr->oy = y0;
    gr->cells = xcalloc((size_t)gr->gx * (size_t)gr->gy, sizeof(*gr->cells));
    gr->tmp_cap = 64;
    gr->tmp = xmalloc(sizeof(int32_t) * (size_t)gr->tmp_cap);
}

void grid_release(struct lcn_grid *gr)
{
    if (gr->cells) {
        for (int64_t i = 0; i < (int64_t)gr->gx * gr->gy; i++)
            free(gr->cells[i].ids);
    }
    free(gr->cells);
    free(gr->tmp);
    memset(gr, 0, sizeof(*gr));
}

void grid_clear(struct lcn_grid *gr)
{
    for (int64_t i = 0; i < (int64_t)gr->gx * gr->gy; i++)
        gr->cells[i].len = 0;
}

int32_t grid_side_for_edges(int32_t m)
{
    int32_t s = (int32_t)ceil(sqrt((double)m) / 1.5);
    return LCN_MAX(1, LCN_MIN(s, 1024));
}

int32_t grid_cell_of(const struct lcn_grid *gr, struct lcn_pt p)
{
    int64_t cx = ((int64_t)p.x - gr->ox) / gr->cs, cy = ((int64_t)p.y - gr->oy) / gr->cs;
    LCN_ASSERT(cx >= 0 && cx < gr->gx && cy >= 0 && cy < gr->gy);
    return (int32_t)(cy * gr->gx + cx);
}

static void buf_push(int32_t **buf, int32_t *cap, int32_t *n, int32_t cell)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        *buf = xrealloc(*buf, sizeof(int32_t) * (size_t)*cap);
    }
    (*buf)[(*n)++] = cell;
}

int32_t grid_segment_cells(struct lcn_grid *gr, struct lcn_pt a, struct lcn_pt b)
{
    return grid_segment_cells_buf(gr, a, b, &gr->tmp, &gr->tmp_cap);
}

int32_t grid_segment_cells_buf(const struct lcn_grid *gr, struct lcn_pt a, struct lcn_pt b,
                               int32_t **buf, int32_t *cap)
{
    /* Work in grid-relative coordinates, left to right. */
    int64_t ax = a.x - gr->ox, ay = a.y - gr->oy, bx = b.x - gr->ox, by = b.y - gr->oy;
    if (ax > bx) {
        int64_t t = ax;
        ax = bx;
        bx = t;
        t = ay;
        ay = by;
        by = t;
    }
    LCN_ASSERT(ax >= 0 && ay >= 0 && by >= 0);
    const int64_t cs = gr->cs;
    int64_t cx0 = ax / cs, cx1 = bx / cs;
    LCN_ASSERT(cx1 < gr->gx);
    int32_t n = 0;
    for (int64_t cx = cx0; cx <= cx1; cx++) {
        int64_t ry0, ry1;
        grid_column_rows(cs, ax, ay, bx, by, cx, &ry0, &ry1);
        if (ry1 >= gr->gy)
            ry1 = gr->gy - 1;
        for (int64_t ry = ry0; ry <= ry1; ry++)
            buf_push(buf, cap, &n, (int32_t)(ry * gr->gx + cx));
    }
    return n;
}

void grid_cell_add(struct lcn_grid *gr, int32_t cell, int32_t id)
{
    struct lcn_cell *c = &gr->cells[cell];
    if (c->len == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 4;
        c->ids = xrealloc(c->ids, sizeof(int32_t) * (size_t)c->cap);
    }
    c->ids[c->len++] = id;
}

void grid_cell_remove(struct lcn_grid *gr, int32_t cell, int32_t id)
{
    struct lcn_cell *c = &gr->cells[cell];
    for (int32_t i = 0; i < c->len; i++) {
        if (c->ids[i] == id) {
            c->ids[i] = c->ids[--c->len];
            return;
        }
    }
    LCN_ASSERT(!"grid_cell_remove: id not in cell");
}

void grid_add_segment(struct lcn_grid *gr, int32_t id, struct lcn_pt a, struct lcn_pt b)
{
    int32_t k = grid_segment_cells(gr, a, b);
    for (int32_t i = 0; i < k; i++)
        grid_cell_add(gr, gr->tmp[i], id);
}

void grid_remove_segment(struct lcn_grid *gr, int32_t id, struct lcn_pt a, struct lcn_pt b)
{
    int32_t k = grid_segment_cells(gr, a, b);
    for (int32_t i = 0; i < k; i++)
        grid_cell_remove(gr, gr->tmp[i], id);
}
