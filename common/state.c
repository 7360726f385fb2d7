#include "state.h"

#include <stdlib.h>
#include <string.h>

#include "crossings.h"
#include "err.h"
#include "util.h"

static int32_t node_side(int32_t n)
{
    int32_t s = 1;
    while ((int64_t)s * s < n)
        s++;
    return LCN_MIN(s, 1024);
}

static int in_bounds(const struct lcn_graph *g, struct lcn_pt p)
{
    return p.x >= 0 && p.y >= 0 && p.x <= g->width && p.y <= g->height;
}

static void build_indexes(struct lcn_state *st)
{
    const struct lcn_graph *g = st->g;
    grid_clear(&st->eg);
    grid_clear(&st->ng);
    for (int32_t e = 0; e < g->m; e++)
        grid_add_segment(&st->eg, e, st->pts[g->eu[e]], st->pts[g->ev[e]]);
    for (int32_t v = 0; v < g->n; v++)
        grid_cell_add(&st->ng, grid_cell_of(&st->ng, st->pts[v]), v);
    crossings_in_grid(g, st->pts, st->cnt, &st->eg);
    hist_release(&st->hist);
    hist_init(&st->hist, st->cnt, g->m);
}

int state_init(struct lcn_state *st, const struct lcn_graph *g, const struct lcn_pt *pts)
{
    memset(st, 0, sizeof(*st));
    for (int32_t v = 0; v < g->n; v++)
        if (!in_bounds(g, pts[v]))
            return LCN_ERANGE;
    st->g = g;
    st->pts = xmalloc(sizeof(*pts) * (size_t)(g->n ? g->n : 1));
    memcpy(st->pts, pts, sizeof(*pts) * (size_t)g->n);
    st->cnt = xcalloc((size_t)g->m + 1, sizeof(int32_t));
    st->acc = xcalloc((size_t)g->m + 1, sizeof(int32_t));
    st->seen = xmalloc(sizeof(int32_t) * ((size_t)g->m + 1));
    for (int32_t e = 0; e < g->m; e++)
        st->seen[e] = -1;
    st->stamp = 0;
    grid_init(&st->eg, 0, 0, g->width, g->height, grid_side_for_edges(g->m));
    grid_init(&st->ng, 0, 0, g->width, g->height, node_side(g->n));
    hist_init(&st->hist, st->cnt, 0);
    build_indexes(st);
    return 0;
}

void state_release(struct lcn_state *st)
{
    free(st->pts);
    free(st->cnt);
    free(st->acc);
    free(st->seen);
    hist_release(&st->hist);
    grid_release(&st->eg);
    grid_release(&st->ng);
    memset(st, 0, sizeof(*st));
}

void state_obj(const struct lcn_state *st, struct lcn_obj *o)
{
    hist_obj(&st->hist, o);
}

void move_init(struct lcn_move *mv)
{
    memset(mv, 0, sizeof(*mv));
}

void move_release(struct lcn_move *mv)
{
    free(mv->edge);
    free(mv->d);
    memset(mv, 0, sizeof(*mv));
}

static int32_t next_stamp(struct lcn_state *st)
{
    if (st->stamp == INT32_MAX) {
        for (int32_t e = 0; e < st->g->m; e++)
            st->seen[e] = -1;
        st->stamp = 0;
    }
    return ++st->stamp;
}

enum state_invalid state_check_move(struct lcn_state *st, int32_t v, struct lcn_pt q)
{
    const struct lcn_graph *g = st->g;
    const struct lcn_pt *pts = st->pts;
    if (!in_bounds(g, q))
        return STATE_OUT_OF_BOUNDS;
    if (geom_pt_eq(q, pts[v]))
        return STATE_OK;
    /* V2: nobody else on q. */
    const struct lcn_cell *nc = &st->ng.cells[grid_cell_of(&st->ng, q)];
    for (int32_t i = 0; i < nc->len; i++) {
        int32_t w = nc->ids[i];
        if (w != v && geom_pt_eq(pts[w], q))
            return STATE_OCCUPIED;
    }
    /* V3: q on the interior of an edge not incident to v. */
    const struct lcn_cell *ec = &st->eg.cells[grid_cell_of(&st->eg, q)];
    for (int32_t i = 0; i < ec->len; i++) {
        int32_t f = ec->ids[i];
        if (g->eu[f] == v || g->ev[f] == v)
            continue;
        if (geom_on_interior(pts[g->eu[f]], pts[g->ev[f]], q))
            return STATE_ON_EDGE;
    }
    /* V3: a new incident edge (q, u) through some node w other than v and u. */
    for (int32_t k = g->inc_off[v]; k < g->inc_off[v + 1]; k++) {
        int32_t u = graph_other(g, g->inc[k], v);
        struct lcn_pt pu = pts[u];
        int32_t ncell = grid_segment_cells(&st->ng, q, pu);
        for (int32_t i = 0; i < ncell; i++) {
            const struct lcn_cell *c = &st->ng.cells[st->ng.tmp[i]];
            for (int32_t j = 0; j < c->len; j++) {
                int32_t w = c->ids[j];
                if (w == v || w == u)
                    continue;
                if (geom_on_interior(q, pu, pts[w]))
                    return STATE_EDGE_ON_NODE;
            }
        }
    }
    return STATE_OK;
}

static void move_push(struct lcn_move *mv, int32_t e, int32_t d)
{
    if (mv->n == mv->cap) {
        mv->cap = mv->cap ? mv->cap * 2 : 64;
        mv->edge = xrealloc(mv->edge, sizeof(int32_t) * (size_t)mv->cap);
        mv->d = xrealloc(mv->d, sizeof(int32_t) * (size_t)mv->cap);
    }
    mv->edge[mv->n] = e;
    mv->d[mv->n] = d;
    mv->n++;
}

/* Touches edge f in the accumulator, remembering it in the move's list. */
static inline void acc_add(struct lcn_state *st, struct lcn_move *mv, int32_t f, int32_t d)
{
    if (st->acc[f] == 0)
        move_push(mv, f, 0); /* (re)touched: the total is read back when compacting */
    st->acc[f] += d;
}

/*
 * Adds sign (+1/-1) for every edge crossing segment (a, b) of edge e = (v, u),
 * over the grid candidates of the segment's cells.
 */
static void scan_segment(struct lcn_state *st, struct lcn_move *mv, int32_t e, int32_t v, int32_t u,
                         struct lcn_pt a, struct lcn_pt b, int32_t sign)
{
    const struct lcn_graph *g = st->g;
    const struct lcn_pt *pts = st->pts;
    int32_t stamp = next_stamp(st);
    int32_t k = grid_segment_cells(&st->eg, a, b);
    uint64_t tests = 0;
    for (int32_t i = 0; i < k; i++) {
        const struct lcn_cell *c = &st->eg.cells[st->eg.tmp[i]];
        for (int32_t j = 0; j < c->len; j++) {
            int32_t f = c->ids[j];
            if (st->seen[f] == stamp)
                continue;
            st->seen[f] = stamp;
            int32_t fu = g->eu[f], fv = g->ev[f];
            if (fu == v || fv == v || fu == u || fv == u)
                continue;
            tests++;
            if (geom_segments_meet(a, b, pts[fu], pts[fv])) {
                acc_add(st, mv, f, sign);
                acc_add(st, mv, e, sign);
            }
        }
    }
    st->pair_tests += tests;
}

int state_propose(struct lcn_state *st, int32_t v, struct lcn_pt q, struct lcn_move *mv)
{
    const struct lcn_graph *g = st->g;
    mv->v = v;
    mv->from = st->pts[v];
    mv->to = q;
    mv->n = 0;
    mv->generation = st->generation;
    mv->why = state_check_move(st, v, q);
    if (mv->why != STATE_OK)
        return 0;
    if (geom_pt_eq(q, mv->from)) {
        state_obj(st, &mv->obj);
        return 1;
    }
    struct lcn_pt p = st->pts[v];
    for (int32_t k = g->inc_off[v]; k < g->inc_off[v + 1]; k++) {
        int32_t e = g->inc[k], u = graph_other(g, e, v);
        struct lcn_pt pu = st->pts[u];
        scan_segment(st, mv, e, v, u, p, pu, -1);
        scan_segment(st, mv, e, v, u, q, pu, +1);
    }
    /*
     * The list holds every edge touched at least once; an edge touched again
     * after its accumulator returned to zero was pushed twice. Compact: keep
     * the first occurrence of each edge with a nonzero total.
     */
    int32_t w = 0;
    for (int32_t i = 0; i < mv->n; i++) {
        int32_t f = mv->edge[i];
        int32_t d = st->acc[f];
        if (d == 0)
            continue;
        st->acc[f] = 0;
        mv->edge[w] = f;
        mv->d[w] = d;
        w++;
    }
    mv->n = w;
    /* Tuple after the move: apply to the histogram, read, revert. */
    struct lcn_hist *hs = &st->hist;
    for (int32_t i = 0; i < mv->n; i++)
        hist_change(hs, st->cnt[mv->edge[i]], mv->d[i]);
    hist_obj(hs, &mv->obj);
    for (int32_t i = mv->n - 1; i >= 0; i--)
        hist_change(hs, st->cnt[mv->edge[i]] + mv->d[i], -mv->d[i]);
    return 1;
}

void state_commit(struct lcn_state *st, const struct lcn_move *mv)
{
    const struct lcn_graph *g = st->g;
    LCN_ASSERT(mv->why == STATE_OK && mv->generation == st->generation);
    int32_t v = mv->v;
    if (!geom_pt_eq(mv->from, mv->to)) {
        for (int32_t k = g->inc_off[v]; k < g->inc_off[v + 1]; k++) {
            int32_t e = g->inc[k], u = graph_other(g, e, v);
            grid_remove_segment(&st->eg, e, mv->from, st->pts[u]);
            grid_add_segment(&st->eg, e, mv->to, st->pts[u]);
        }
        grid_cell_remove(&st->ng, grid_cell_of(&st->ng, mv->from), v);
        grid_cell_add(&st->ng, grid_cell_of(&st->ng, mv->to), v);
        st->pts[v] = mv->to;
    }
    for (int32_t i = 0; i < mv->n; i++) {
        int32_t e = mv->edge[i];
        hist_change(&st->hist, st->cnt[e], mv->d[i]);
        st->cnt[e] += mv->d[i];
    }
    st->generation++;
}

int state_reset(struct lcn_state *st, const struct lcn_pt *pts)
{
    for (int32_t v = 0; v < st->g->n; v++)
        if (!in_bounds(st->g, pts[v]))
            return LCN_ERANGE;
    memcpy(st->pts, pts, sizeof(*pts) * (size_t)st->g->n);
    build_indexes(st);
    st->generation++;
    return 0;
}

int state_check(const struct lcn_state *st)
{
    if (st->hist.sum & 1)
        return LCN_ECORRUPT;
    struct lcn_obj o;
    int rc = obj_from_counts(&o, st->cnt, st->g->m);
    struct lcn_obj h;
    hist_obj(&st->hist, &h);
    if (rc || obj_cmp(&o, &h) != 0)
        return LCN_ECORRUPT;
    return 0;
}

int state_recount(struct lcn_state *st)
{
    int32_t m = st->g->m;
    int32_t *fresh = xmalloc(sizeof(int32_t) * (size_t)(m + 1));
    crossings_grid(st->g, st->pts, fresh, 0);
    int same = memcmp(fresh, st->cnt, sizeof(int32_t) * (size_t)m) == 0;
    free(fresh);
    if (!same || state_check(st) != 0) {
        build_indexes(st);
        return LCN_ECORRUPT;
    }
    return 0;
}
