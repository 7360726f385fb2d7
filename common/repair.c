#include "repair.h"

#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "state.h"
#include "util.h"
#include "validate.h"

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
 * success.
 */
static int relocate(struct lcn_state *st, struct lcn_move *mv, int32_t v, int64_t *shift)
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
                if (state_check_move(st, v, q) == STATE_OK && state_propose(st, v, q, mv)) {
                    state_commit(st, mv);
                    *shift += llabs(x - p.x) + llabs(y - p.y);
                    return 1;
                }
            }
        }
    }
    return 0;
}

int repair_layout(const struct lcn_graph *g, struct lcn_pt *pts, const uint8_t *has_xy,
                  struct repair_stats *stats)
{
    struct repair_stats s;
    memset(&s, 0, sizeof(s));
    if (((int64_t)g->width + 1) * ((int64_t)g->height + 1) < g->n)
        return LCN_EINVAL;

    /* Fill missing coordinates: barycentre of placed neighbours, else centre. */
    if (has_xy) {
        for (int32_t v = 0; v < g->n; v++) {
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
            s.filled++;
        }
    }
    for (int32_t v = 0; v < g->n; v++) {
        struct lcn_pt q = clamp_pt(g, pts[v].x, pts[v].y);
        if (!geom_pt_eq(q, pts[v])) {
            pts[v] = q;
            s.clamped++;
        }
    }

    struct lcn_state st;
    int rc = state_init(&st, g, pts);
    if (rc)
        return rc;
    struct lcn_move mv;
    move_init(&mv);
    uint8_t *mark = xcalloc((size_t)g->n + 1, 1);
    int32_t listed_cap = (int32_t)LCN_MIN(1 << 22, LCN_MAX(1024, 4 * ((int64_t)g->n + g->m)));
    rc = LCN_ECORRUPT;
    for (int round = 0; round < 64; round++) {
        struct lcn_report r;
        validate_layout(g, st.pts, listed_cap, &r);
        s.rounds++;
        if (r.valid) {
            report_release(&r);
            rc = 0;
            break;
        }
        memset(mark, 0, (size_t)g->n);
        for (int32_t i = 0; i < r.listed; i++) {
            const struct lcn_violation *x = &r.list[i];
            if (x->kind == LCN_V2_SHARED_POINT)
                mark[x->b] = 1;
            else if (x->kind == LCN_V3_NODE_ON_EDGE)
                mark[x->a] = 1;
            else if (x->kind == LCN_V4_EDGE_OVERLAP)
                mark[LCN_MAX(g->eu[x->b], g->ev[x->b])] = 1;
        }
        report_release(&r);
        int fail = 0;
        for (int32_t v = 0; v < g->n && !fail; v++) {
            if (!mark[v])
                continue;
            if (!relocate(&st, &mv, v, &s.total_shift))
                fail = 1;
            s.moved++;
        }
        if (fail) {
            rc = LCN_EINVAL;
            break;
        }
    }
    if (rc == 0)
        memcpy(pts, st.pts, sizeof(*pts) * (size_t)g->n);
    free(mark);
    move_release(&mv);
    state_release(&st);
    if (stats)
        *stats = s;
    return rc;
}
