#include "repair.h"

#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "state.h"
#include "stop.h"
#include "util.h"

static struct lcn_pt clamp_pt(const struct lcn_graph *g, int64_t x, int64_t y)
{
    struct lcn_pt p;
    p.x = (int32_t)(x < 0 ? 0 : (x > g->width ? g->width : x));
    p.y = (int32_t)(y < 0 ? 0 : (y > g->height ? g->height : y));
    return p;
}

/*
 * Moves v to the nearest point (Chebyshev rings around its current point,
 * each ring walked in a fixed order) where the move is valid. Returns 1 on
 * success, 0 when no point is valid, or the stop's code (negative) when the
 * stop fired first (each validity check is counted as 256 units of work:
 * on dense layouts one check walks hundreds of edges).
 */
static int relocate(struct lcn_state *st, int32_t v, int64_t *shift, const struct lcn_stop *stop,
                    int64_t *work)
{
    const struct lcn_graph *g = st->g;
    struct lcn_pt p = st->pts[v];
    const int64_t W = g->width, H = g->height;
    /* rings beyond the farthest side of the bounds hold no candidate */
    int64_t rmax = LCN_MAX(LCN_MAX(p.x, W - p.x), LCN_MAX(p.y, H - p.y));
    for (int64_t r = 1; r <= rmax; r++) {
        /*
         * Ring r: x in [p.x-r, p.x+r], y = p.y +- r, then the sides. Only the
         * t that can give an in-bounds candidate are walked (same order as
         * the whole ring), so a ring costs at most the bounds' extent rather
         * than O(r): on a long thin box most of every ring lies outside.
         */
        int64_t tlo = r + 1, thi = -r - 1;
        if (p.y - r >= 0 || p.y + r <= H) { /* top or bottom row: x = p.x + t */
            tlo = LCN_MIN(tlo, -(int64_t)p.x);
            thi = LCN_MAX(thi, W - p.x);
        }
        if (p.x - r >= 0 || p.x + r <= W) { /* left or right column: y = p.y + t */
            tlo = LCN_MIN(tlo, -(int64_t)p.y);
            thi = LCN_MAX(thi, H - p.y);
        }
        tlo = LCN_MAX(tlo, -r);
        thi = LCN_MIN(thi, r);
        for (int64_t t = tlo; t <= thi; t++) {
            int64_t cand[4][2] = {
                {p.x + t, p.y - r}, {p.x + t, p.y + r}, {p.x - r, p.y + t}, {p.x + r, p.y + t}};
            for (int k = 0; k < 4; k++) {
                if ((k >= 2) && (t == -r || t == r))
                    continue; /* corners already visited */
                int64_t x = cand[k][0], y = cand[k][1];
                if (x < 0 || y < 0 || x > g->width || y > g->height)
                    continue;
                struct lcn_pt q = {(int32_t)x, (int32_t)y};
                int rc = lcn_stop_tick(stop, work, 256);
                if (rc)
                    return rc;
                if (state_check_move(st, v, q) == STATE_OK) {
                    state_move_geometry(st, v, q);
                    *shift += llabs(x - p.x) + llabs(y - p.y);
                    return 1;
                }
            }
        }
    }
    return 0;
}

/*
 * Marks the nodes to move: the higher id of every pair sharing a point (V2)
 * and every node on the interior of an edge it does not belong to (V3),
 * found through the state's node and edge grids (an edge is in every cell
 * its segment passes through, so the cell of a node's point holds every
 * edge through it). V4 needs no marks: for simple graphs two edges overlap
 * along a positive length only when V2 or V3 fails. Returns the count.
 * (Repair used to ask validate_layout, which also counts every crossing:
 * seconds per round on a random layout of 20,000 edges.)
 */
static int32_t mark_violations(const struct lcn_state *st, uint8_t *mark,
                               const struct lcn_stop *stop, int *rc)
{
    int64_t work = 0;
    *rc = 0;
    const struct lcn_graph *g = st->g;
    const struct lcn_pt *pts = st->pts;
    int32_t marked = 0;
    for (int32_t v = 0; v < g->n; v++) {
        struct lcn_pt p = pts[v];
        int bad = 0;
        const struct lcn_cell *nc = &st->ng.cells[grid_cell_of(&st->ng, p)];
        for (int32_t i = 0; i < nc->len && !bad; i++)
            bad = nc->ids[i] < v && geom_pt_eq(pts[nc->ids[i]], p);
        const struct lcn_cell *ec = &st->eg.cells[grid_cell_of(&st->eg, p)];
        for (int32_t i = 0; i < ec->len && !bad; i++) {
            int32_t f = ec->ids[i];
            bad = g->eu[f] != v && g->ev[f] != v &&
                  geom_on_interior(pts[g->eu[f]], pts[g->ev[f]], p);
        }
        mark[v] = (uint8_t)bad;
        marked += bad;
        if ((*rc = lcn_stop_tick(stop, &work, 4 + nc->len + ec->len)) != 0)
            break;
    }
    return marked;
}

void repair_fill_clamp(const struct lcn_graph *g, struct lcn_pt *pts, const uint8_t *has_xy,
                       struct repair_stats *stats)
{
    for (int32_t v = 0; has_xy && v < g->n; v++) {
        if (has_xy[v])
            continue;
        int64_t sx = 0, sy = 0, k = 0;
        for (int32_t i = g->inc_off[v]; i < g->inc_off[v + 1]; i++) {
            int32_t u = graph_other(g, g->inc[i], v);
            if (has_xy[u]) {
                sx += pts[u].x;
                sy += pts[u].y;
                k++;
            }
        }
        pts[v] = k ? clamp_pt(g, sx / k, sy / k) : clamp_pt(g, g->width / 2, g->height / 2);
        stats->filled++;
    }
    for (int32_t v = 0; v < g->n; v++) {
        struct lcn_pt q = clamp_pt(g, pts[v].x, pts[v].y);
        if (!geom_pt_eq(q, pts[v])) {
            pts[v] = q;
            stats->clamped++;
        }
    }
}

int repair_layout(const struct lcn_graph *g, struct lcn_pt *pts, const uint8_t *has_xy,
                  struct repair_stats *stats)
{
    return repair_layout_stop(g, pts, has_xy, stats, NULL);
}

int repair_layout_stop(const struct lcn_graph *g, struct lcn_pt *pts, const uint8_t *has_xy,
                       struct repair_stats *stats, const struct lcn_stop *stop)
{
    struct repair_stats s;
    memset(&s, 0, sizeof(s));
    if (((int64_t)g->width + 1) * ((int64_t)g->height + 1) < g->n)
        return LCN_EINVAL;

    repair_fill_clamp(g, pts, has_xy, &s);

    /* validity only: no crossing counts up front, none per relocation */
    struct lcn_state st;
    int rc = state_init_geometry_stop(&st, g, pts, stop);
    if (rc)
        return rc;
    uint8_t *mark = xcalloc((size_t)g->n + 1, 1);
    int64_t work = 0;
    rc = LCN_ECORRUPT;
    for (int round = 0; round < 64; round++) {
        s.rounds++;
        int32_t marked = mark_violations(&st, mark, stop, &rc);
        if (rc)
            break;
        if (marked == 0)
            break; /* rc is 0 */
        int fail = 0;
        for (int32_t v = 0; v < g->n && !fail; v++) {
            if (!mark[v])
                continue;
            int r = relocate(&st, v, &s.total_shift, stop, &work);
            if (r <= 0)
                fail = r < 0 ? r : LCN_EINVAL;
            s.moved++;
        }
        if (fail) {
            rc = fail;
            break;
        }
        if ((rc = lcn_stop_check(stop)) != 0)
            break;
        rc = LCN_ECORRUPT;
    }
    if (rc == 0)
        memcpy(pts, st.pts, sizeof(*pts) * (size_t)g->n);
    free(mark);
    state_release(&st);
    if (stats)
        *stats = s;
    return rc;
}
