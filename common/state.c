#include "state.h"

#include <stdlib.h>
#include <string.h>

#include "crossings.h"
#include "err.h"
#include "stop.h"
#include "util.h"

/* Array length for m entries rounded up to whole blocks of 16 (SCAN kernels). */
static size_t padded16(int32_t m)
{
    return ((size_t)m + 16) & ~(size_t)15;
}

/* Rebuilds the edge grid from the points. */
/* Rebuilds the edge grid; gives up with the stop's code when stop fires
 * (the grid is then partial and marked stale). A long edge of a random
 * layout lies in hundreds of cells: 64 units of work an edge. */
static int eg_rebuild_stop(struct lcn_state *st, const struct lcn_stop *stop)
{
    const struct lcn_graph *g = st->g;
    int64_t work = 0;
    grid_clear(&st->eg);
    for (int32_t e = 0; e < g->m; e++) {
        int rc = lcn_stop_tick(stop, &work, 64);
        if (rc) {
            st->eg_stale = 1;
            return rc;
        }
        grid_add_segment(&st->eg, e, st->pts[g->eu[e]], st->pts[g->ev[e]]);
    }
    st->eg_stale = 0;
    return 0;
}

static void eg_rebuild(struct lcn_state *st)
{
    eg_rebuild_stop(st, NULL);
}

static void eg_fresh(struct lcn_state *st);

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

/* Refreshes edge e's structure-of-arrays coordinates from pts. */
static inline void soa_set(struct lcn_state *st, int32_t e)
{
    struct lcn_pt a = st->pts[st->g->eu[e]], b = st->pts[st->g->ev[e]];
    st->ex0[e] = a.x;
    st->ey0[e] = a.y;
    st->ex1[e] = b.x;
    st->ey1[e] = b.y;
}

/*
 * Rebuilds grids, counts (recounted, or copied from `counts`; left at zero
 * in a geometry-only state), histogram and SoA.
 */
static int build_indexes_from(struct lcn_state *st, const int32_t *counts,
                              const struct lcn_stop *stop)
{
    const struct lcn_graph *g = st->g;
    int rc = eg_rebuild_stop(st, stop);
    if (rc)
        return rc;
    grid_clear(&st->ng);
    for (int32_t v = 0; v < g->n; v++)
        grid_cell_add(&st->ng, grid_cell_of(&st->ng, st->pts[v]), v);
    if (st->geometry_only)
        memset(st->cnt, 0, sizeof(int32_t) * (size_t)g->m);
    else if (counts)
        memcpy(st->cnt, counts, sizeof(int32_t) * (size_t)g->m);
    else
        crossings_in_grid(g, st->pts, st->cnt, &st->eg);
    hist_release(&st->hist);
    hist_init(&st->hist, st->cnt, g->m);
    if (st->ex0) {
        for (int32_t e = 0; e < g->m; e++)
            soa_set(st, e);
        for (int32_t v = 0; v < g->n; v++) {
            st->nx[v] = st->pts[v].x;
            st->ny[v] = st->pts[v].y;
        }
    }
    st->ocache_v = -1;
    return 0;
}

static void build_indexes(struct lcn_state *st)
{
    build_indexes_from(st, NULL, NULL);
}

static int init_common(struct lcn_state *st, const struct lcn_graph *g, const struct lcn_pt *pts,
                       const int32_t *counts, int geometry_only, const struct lcn_stop *stop)
{
    st->g = g;
    st->geometry_only = geometry_only;
    st->pts = xmalloc(sizeof(*pts) * (size_t)(g->n ? g->n : 1));
    memcpy(st->pts, pts, sizeof(*pts) * (size_t)g->n);
    st->cnt = xcalloc(padded16(g->m), sizeof(int32_t)); /* padded for the SCAN kernels */
    st->acc = xcalloc(padded16(g->m), sizeof(int32_t));
    st->seen = xmalloc(sizeof(int32_t) * ((size_t)g->m + 1));
    for (int32_t e = 0; e < g->m; e++)
        st->seen[e] = -1;
    st->stamp = 0;
    st->eval = STATE_EVAL_GRID;
    st->ocache_v = -1;
    st->odc = xmalloc(sizeof(int32_t) * ((size_t)g->max_degree + 1));
    st->ndc = xmalloc(sizeof(int32_t) * ((size_t)g->max_degree + 1));
    grid_init(&st->eg, 0, 0, g->width, g->height, grid_side_for_edges(g->m));
    grid_init(&st->ng, 0, 0, g->width, g->height, node_side(g->n));
    hist_init(&st->hist, st->cnt, 0);
    return build_indexes_from(st, counts, stop);
}

static int init_in_bounds(struct lcn_state *st, const struct lcn_graph *g,
                          const struct lcn_pt *pts, const int32_t *counts, int geometry_only,
                          const struct lcn_stop *stop)
{
    memset(st, 0, sizeof(*st));
    for (int32_t v = 0; v < g->n; v++)
        if (!in_bounds(g, pts[v]))
            return LCN_ERANGE;
    int rc = init_common(st, g, pts, counts, geometry_only, stop);
    if (rc)
        state_release(st);
    return rc;
}

int state_init(struct lcn_state *st, const struct lcn_graph *g, const struct lcn_pt *pts)
{
    return init_in_bounds(st, g, pts, NULL, 0, NULL);
}

int state_init_counts(struct lcn_state *st, const struct lcn_graph *g, const struct lcn_pt *pts,
                      const int32_t *counts, const struct lcn_stop *stop)
{
    return init_in_bounds(st, g, pts, counts, 0, stop);
}

int state_init_geometry(struct lcn_state *st, const struct lcn_graph *g, const struct lcn_pt *pts)
{
    return init_in_bounds(st, g, pts, NULL, 1, NULL);
}

int state_init_geometry_stop(struct lcn_state *st, const struct lcn_graph *g,
                             const struct lcn_pt *pts, const struct lcn_stop *stop)
{
    return init_in_bounds(st, g, pts, NULL, 1, stop);
}

int state_clone_stop(struct lcn_state *dst, const struct lcn_state *src,
                     const struct lcn_stop *stop)
{
    memset(dst, 0, sizeof(*dst));
    int rc = init_common(dst, src->g, src->pts, src->cnt, src->geometry_only, stop);
    if (rc) {
        state_release(dst);
        return rc;
    }
    state_set_evaluator(dst, src->eval);
    return 0;
}

void state_clone(struct lcn_state *dst, const struct lcn_state *src)
{
    memset(dst, 0, sizeof(*dst));
    init_common(dst, src->g, src->pts, src->cnt, src->geometry_only, NULL);
    state_set_evaluator(dst, src->eval);
}

void state_release(struct lcn_state *st)
{
    hist_release(&st->hist);
    grid_release(&st->eg);
    grid_release(&st->ng);
    LCN_FREE_ALL(st->pts, st->cnt, st->acc, st->seen, st->ex0, st->ey0, st->ex1, st->ey1, st->oacc,
                 st->blk, st->sides, st->sides_p, st->sides_q, st->sides_tmp, st->nx, st->ny,
                 st->odc, st->olist, st->ndc);
    memset(st, 0, sizeof(*st));
}

void state_set_evaluator(struct lcn_state *st, enum state_eval ev)
{
    const struct lcn_graph *g = st->g;
    st->eval = ev;
    if (ev == STATE_EVAL_GRID)
        eg_fresh(st);
    if (ev == STATE_EVAL_SCAN && !st->ex0) {
        size_t m1 = (size_t)g->m + 1;
        st->ex0 = xmalloc(sizeof(int32_t) * m1);
        st->ey0 = xmalloc(sizeof(int32_t) * m1);
        st->ex1 = xmalloc(sizeof(int32_t) * m1);
        st->ey1 = xmalloc(sizeof(int32_t) * m1);
        st->oacc = xcalloc(padded16(g->m), sizeof(int32_t));
        st->blk = xmalloc(padded16(g->m) / 16 + 1);
        size_t rowb = sizeof(int32_t) * padded16(g->m);
        st->sides_p = xmalloc(rowb);
        st->sides_q = xmalloc(rowb);
        st->sides_tmp = xmalloc(rowb);
        /* per-neighbour sides of the node being moved, up to 32 MiB */
        size_t rows = (size_t)g->max_degree;
        if (rows * rowb > ((size_t)32 << 20))
            rows = ((size_t)32 << 20) / rowb;
        st->sides_rows = (int32_t)rows;
        st->sides = xmalloc(rows * rowb + 1);
        st->nx = xmalloc(sizeof(int32_t) * ((size_t)g->n + 1));
        st->ny = xmalloc(sizeof(int32_t) * ((size_t)g->n + 1));
        for (int32_t v = 0; v < g->n; v++) {
            st->nx[v] = st->pts[v].x;
            st->ny[v] = st->pts[v].y;
        }
        for (int32_t e = 0; e < g->m; e++)
            soa_set(st, e);
    }
    st->ocache_v = -1;
}

const char *state_evaluator_name(const struct lcn_state *st)
{
    return st->eval == STATE_EVAL_SCAN ? "scan-delta" : "grid-delta";
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

/* V2: a node other than v on q. */
static int occupied(const struct lcn_state *st, int32_t v, struct lcn_pt q)
{
    const struct lcn_cell *nc = &st->ng.cells[grid_cell_of(&st->ng, q)];
    for (int32_t i = 0; i < nc->len; i++) {
        int32_t w = nc->ids[i];
        if (w != v && geom_pt_eq(st->pts[w], q))
            return 1;
    }
    return 0;
}

/*
 * The SCAN evaluator never reads the edge grid, so its commits leave it
 * stale; whatever reads it (state_check_move, the GRID evaluator, GRID
 * partner lists) rebuilds it first.
 */
static void eg_fresh(struct lcn_state *st)
{
    if (st->eg_stale)
        eg_rebuild(st);
}

enum state_invalid state_check_move(struct lcn_state *st, int32_t v, struct lcn_pt q)
{
    const struct lcn_graph *g = st->g;
    const struct lcn_pt *pts = st->pts;
    eg_fresh(st);
    if (!in_bounds(g, q))
        return STATE_OUT_OF_BOUNDS;
    if (geom_pt_eq(q, pts[v]))
        return STATE_OK;
    /* V2: nobody else on q. */
    if (occupied(st, v, q))
        return STATE_OCCUPIED;
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

static void move_reserve(struct lcn_move *mv, int32_t need)
{
    if (need <= mv->cap)
        return;
    int32_t cap = mv->cap ? mv->cap : 64;
    while (cap < need)
        cap *= 2;
    mv->edge = xrealloc(mv->edge, sizeof(int32_t) * (size_t)cap);
    mv->d = xrealloc(mv->d, sizeof(int32_t) * (size_t)cap);
    mv->cap = cap;
}

static inline void move_push(struct lcn_move *mv, int32_t e, int32_t d)
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
 * Runs the statement that follows (BODY) once for every edge f of the edge
 * grid's cells along segment (a, b), each once (a fresh stamp), less those
 * with an end at v or u (they share a point with a segment from v to u and
 * never cross it), with fu, fv its ends: the candidates every exact segment
 * query tests. A macro, expanded in place, on purpose: the same walk as a
 * function-call iterator (56b9372) made the evaluator 9 % slower at a fixed
 * move count (instance_04, 12,000 moves, five pairs side by side:
 * bench/results/cpu15-20261202/README.md), so it was taken back (a1b9948).
 */
#define SEGMENT_CANDIDATES(st, a, b, v, u, f, fu, fv, ...)                                         \
    do {                                                                                           \
        const int32_t stamp_ = next_stamp(st);                                                     \
        const int32_t ncell_ = grid_segment_cells(&(st)->eg, (a), (b));                            \
        for (int32_t i_ = 0; i_ < ncell_; i_++) {                                                  \
            const struct lcn_cell *c_ = &(st)->eg.cells[(st)->eg.tmp[i_]];                         \
            for (int32_t j_ = 0; j_ < c_->len; j_++) {                                             \
                int32_t f = c_->ids[j_];                                                           \
                if ((st)->seen[f] == stamp_)                                                       \
                    continue;                                                                      \
                (st)->seen[f] = stamp_;                                                            \
                int32_t fu = (st)->g->eu[f], fv = (st)->g->ev[f];                                  \
                if (fu == (v) || fv == (v) || fu == (u) || fv == (u))                              \
                    continue;                                                                      \
                __VA_ARGS__                                                                        \
            }                                                                                      \
        }                                                                                          \
    } while (0)

/*
 * Adds sign (+1/-1) for every edge crossing segment (a, b) of edge e = (v, u),
 * over the grid candidates of the segment's cells.
 */
static void scan_segment(struct lcn_state *st, struct lcn_move *mv, int32_t e, int32_t v, int32_t u,
                         struct lcn_pt a, struct lcn_pt b, int32_t sign)
{
    const struct lcn_pt *pts = st->pts;
    uint64_t tests = 0;
    SEGMENT_CANDIDATES(st, a, b, v, u, f, fu, fv, {
        tests++;
        if (geom_segments_meet(a, b, pts[fu], pts[fv])) {
            acc_add(st, mv, f, sign);
            acc_add(st, mv, e, sign);
        }
    });
    st->pair_tests += tests;
}

/*
 * Appends to st->olist every edge crossing segment (a, b) of edge e = (v, u)
 * (the grid candidates, deduplicated) and returns their number.
 */
static int32_t collect_segment(struct lcn_state *st, int32_t v, int32_t u, struct lcn_pt a,
                               struct lcn_pt b)
{
    const struct lcn_pt *pts = st->pts;
    int32_t hits = 0;
    SEGMENT_CANDIDATES(st, a, b, v, u, f, fu, fv, {
        st->pair_tests++;
        if (geom_segments_meet(a, b, pts[fu], pts[fv])) {
            if (st->olen == st->ocap) {
                st->ocap = st->ocap ? 2 * st->ocap : 256;
                st->olist = xrealloc(st->olist, sizeof(int32_t) * (size_t)st->ocap);
            }
            st->olist[st->olen++] = f;
            hits++;
        }
    });
    return hits;
}

/*
 * SCAN kernels: for every edge f, 1 when segment ab and f's segment cross
 * with strict signs (a proper crossing), added to acc[f]; returns the number
 * of crossings. Degenerate segments (f with both ends on one point) never
 * cross, which is how the moved node's own edges are kept out.
 *
 * int32 variant: with coordinates in [0, 32767] every difference is at most
 * 32767 in magnitude, every product at most 32767^2 < 2^30 and every
 * determinant (a difference of two products) below 2^31: no overflow.
 */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(LCN_NO_CLONES) &&  \
    !defined(__SANITIZE_THREAD__) /* ifunc resolvers run before the TSan runtime */
#define LCN_CLONES __attribute__((target_clones("avx512f", "avx2", "default"), optimize("O3")))
#else
#define LCN_CLONES
#endif

/*
 * Defines kernel##32 and kernel##64 with the parameters given, BODY(T) run
 * on int32_t and on int64_t arithmetic: one parameter list for both widths.
 */
/* clang-format off */
#define WIDTH_PAIR(kernel, BODY, ...)                                                              \
    LCN_CLONES __attribute__((noinline)) static int32_t kernel##32(__VA_ARGS__)                    \
    {                                                                                              \
        BODY(int32_t)                                                                              \
    }                                                                                              \
    LCN_CLONES __attribute__((noinline)) static int32_t kernel##64(__VA_ARGS__)                    \
    {                                                                                              \
        BODY(int64_t)                                                                              \
    }
/* clang-format on */

/* The leading parameters of scan and cross: the m edges' ends (x0, y0)-(x1, y1), segment ab. */
#define EDGES_AND_SEGMENT                                                                          \
    const int32_t *restrict x0, const int32_t *restrict y0, const int32_t *restrict x1,            \
        const int32_t *restrict y1, int32_t m, int32_t ax, int32_t ay, int32_t bx, int32_t by

#define SCAN_BODY(T)                                                                               \
    const T dx = (T)bx - ax, dy = (T)by - ay;                                                      \
    int32_t hits = 0;                                                                              \
    for (int32_t f = 0; f < m; f++) {                                                              \
        const T px = (T)x0[f] - ax, py = (T)y0[f] - ay; /* f's first end, relative to a */         \
        const T qx = (T)x1[f] - ax, qy = (T)y1[f] - ay; /* f's second end */                       \
        const T fx = qx - px, fy = qy - py;                                                        \
        const T d1 = dx * py - dy * px;               /* side of f0 w.r.t. ab */                   \
        const T d2 = dx * qy - dy * qx;               /* side of f1 w.r.t. ab */                   \
        const T d3 = fy * px - fx * py;               /* side of a w.r.t. f */                     \
        const T d4 = fx * (dy - py) - fy * (dx - px); /* side of b w.r.t. f */                     \
        const int32_t h = (((d1 < 0) & (d2 > 0)) | ((d1 > 0) & (d2 < 0))) &                        \
                          (((d3 < 0) & (d4 > 0)) | ((d3 > 0) & (d4 < 0)));                         \
        acc[f] += h;                                                                               \
        hits += h;                                                                                 \
    }                                                                                              \
    return hits;

WIDTH_PAIR(scan, SCAN_BODY, EDGES_AND_SEGMENT, int32_t *restrict acc)
#undef SCAN_BODY

/*
 * side: s[f] = sign of det(f0, f1, p) (which side of edge f's line p is on),
 * and returns the number of edges whose closed segment contains p.
 * cross: for segment ab, 1 for every edge f it crosses with strict signs,
 * given sa and sb (the sides of a and b w.r.t. every f, from `side`): only
 * the two determinants of f's ends w.r.t. ab are left to compute. Hidden
 * (degenerate) edges have side 0 and never cross.
 */
#define SIDE_BODY(T)                                                                               \
    int32_t hits = 0;                                                                              \
    for (int32_t f = 0; f < m; f++) {                                                              \
        const T ax = x0[f], ay = y0[f], bx = x1[f], by = y1[f];                                    \
        const T d = (bx - ax) * ((T)py - ay) - (by - ay) * ((T)px - ax);                           \
        s[f] = (d > 0) - (d < 0);                                                                  \
        if (onseg)                                                                                 \
            hits += (d == 0) & (((ax <= px) & (px <= bx)) | ((bx <= px) & (px <= ax))) &           \
                    (((ay <= py) & (py <= by)) | ((by <= py) & (py <= ay)));                       \
    }                                                                                              \
    return hits;

WIDTH_PAIR(side, SIDE_BODY, const int32_t *restrict x0, const int32_t *restrict y0,
           const int32_t *restrict x1, const int32_t *restrict y1, int32_t m, int32_t px,
           int32_t py, int32_t *restrict s, const int onseg)
#undef SIDE_BODY

#define CROSS_BODY(T)                                                                              \
    const T dx = (T)bx - ax, dy = (T)by - ay;                                                      \
    int32_t hits = 0;                                                                              \
    for (int32_t f = 0; f < m; f++) {                                                              \
        const T d1 = dx * ((T)y0[f] - ay) - dy * ((T)x0[f] - ax);                                  \
        const T d2 = dx * ((T)y1[f] - ay) - dy * ((T)x1[f] - ax);                                  \
        const int32_t h = (((d1 < 0) & (d2 > 0)) | ((d1 > 0) & (d2 < 0))) & (sa[f] * sb[f] < 0);   \
        acc[f] += h;                                                                               \
        hits += h;                                                                                 \
    }                                                                                              \
    return hits;

WIDTH_PAIR(cross, CROSS_BODY, EDGES_AND_SEGMENT, const int32_t *restrict sa,
           const int32_t *restrict sb, int32_t *restrict acc)
#undef CROSS_BODY

/* Number of points w on the closed segment ab other than a and b. */
#define PTSEG_BODY(T)                                                                              \
    const T dx = (T)bx - ax, dy = (T)by - ay;                                                      \
    const int32_t lx = ax < bx ? ax : bx, hx = ax < bx ? bx : ax;                                  \
    const int32_t ly = ay < by ? ay : by, hy = ay < by ? by : ay;                                  \
    int32_t hits = 0;                                                                              \
    for (int32_t w = 0; w < n; w++) {                                                              \
        const int32_t wx = nx[w], wy = ny[w];                                                      \
        const T d = dx * ((T)wy - ay) - dy * ((T)wx - ax);                                         \
        const int32_t h = (d == 0) & (lx <= wx) & (wx <= hx) & (ly <= wy) & (wy <= hy) &           \
                          !((wx == ax) & (wy == ay)) & !((wx == bx) & (wy == by));                 \
        hits += h;                                                                                 \
    }                                                                                              \
    return hits;

WIDTH_PAIR(ptseg, PTSEG_BODY, const int32_t *restrict nx, const int32_t *restrict ny, int32_t n,
           int32_t ax, int32_t ay, int32_t bx, int32_t by)
#undef PTSEG_BODY
#undef WIDTH_PAIR
#undef EDGES_AND_SEGMENT

/*
 * One pass over whole blocks of 16 (all arrays are padded with zeros):
 * acc[f] -= oacc[f], leaving the move's count changes; flags the blocks with
 * a nonzero change; returns the maximum count after the move, max(cnt + d).
 */
LCN_CLONES __attribute__((noinline)) static int32_t diff_max(int32_t *restrict acc,
                                                             const int32_t *restrict oacc,
                                                             const int32_t *restrict cnt,
                                                             int32_t nblk, uint8_t *restrict flag)
{
    int32_t mx = 0;
    for (int32_t b = 0; b < nblk; b++) {
        int32_t any = 0;
        for (int32_t j = 0; j < 16; j++) {
            const int32_t f = 16 * b + j, d = acc[f] - oacc[f], c = cnt[f] + d;
            acc[f] = d;
            any |= d;
            mx = c > mx ? c : mx;
        }
        flag[b] = any != 0;
    }
    return mx;
}

/* The number of edges whose count after the move, cnt + d, equals K. */
LCN_CLONES __attribute__((noinline)) static int32_t
count_at(const int32_t *restrict cnt, const int32_t *restrict d, int32_t m, int32_t K)
{
    int32_t k = 0;
    for (int32_t f = 0; f < m; f++)
        k += cnt[f] + d[f] == K;
    return k;
}

static int32_t scan_any(struct lcn_state *st, struct lcn_pt a, struct lcn_pt b, int32_t *acc)
{
    const struct lcn_graph *g = st->g;
    st->pair_tests += (uint64_t)g->m;
    if (g->width <= 32767 && g->height <= 32767)
        return scan32(st->ex0, st->ey0, st->ex1, st->ey1, g->m, a.x, a.y, b.x, b.y, acc);
    return scan64(st->ex0, st->ey0, st->ex1, st->ey1, g->m, a.x, a.y, b.x, b.y, acc);
}

/* Sides of p w.r.t. every edge; with onseg, also the number of edges through p. */
static int32_t side_any(struct lcn_state *st, struct lcn_pt p, int32_t *sd, int onseg)
{
    const struct lcn_graph *g = st->g;
    const int32_t *x0 = st->ex0, *y0 = st->ey0, *x1 = st->ex1, *y1 = st->ey1;
    if (g->width <= 32767 && g->height <= 32767)
        return onseg ? side32(x0, y0, x1, y1, g->m, p.x, p.y, sd, 1)
                     : side32(x0, y0, x1, y1, g->m, p.x, p.y, sd, 0);
    return onseg ? side64(x0, y0, x1, y1, g->m, p.x, p.y, sd, 1)
                 : side64(x0, y0, x1, y1, g->m, p.x, p.y, sd, 0);
}

static int32_t cross_any(struct lcn_state *st, struct lcn_pt a, struct lcn_pt b, const int32_t *sa,
                         const int32_t *sb, int32_t *acc)
{
    const struct lcn_graph *g = st->g;
    st->pair_tests += (uint64_t)g->m;
    if (g->width <= 32767 && g->height <= 32767)
        return cross32(st->ex0, st->ey0, st->ex1, st->ey1, g->m, a.x, a.y, b.x, b.y, sa, sb, acc);
    return cross64(st->ex0, st->ey0, st->ex1, st->ey1, g->m, a.x, a.y, b.x, b.y, sa, sb, acc);
}

/* The sides of v's k-th neighbour w.r.t. every edge: cached per (node,
 * generation) when the buffer fits, else recomputed into one scratch row. */
static const int32_t *neighbour_sides(struct lcn_state *st, int32_t k, struct lcn_pt pu, int fresh)
{
    size_t row = padded16(st->g->m);
    if (st->sides_rows > k) {
        int32_t *sd = st->sides + row * (size_t)k;
        if (fresh)
            side_any(st, pu, sd, 0);
        return sd;
    }
    side_any(st, pu, st->sides_tmp, 0);
    return st->sides_tmp;
}

static inline void soa_hide(struct lcn_state *st, int32_t e)
{
    /* a degenerate segment outside the bounds: it crosses nothing and contains no q */
    st->ex0[e] = st->ey0[e] = st->ex1[e] = st->ey1[e] = -1;
}

/*
 * The SCAN evaluation of moving v from p to q (q != p, in bounds, not
 * occupied): the rest of the validity verdict in state_check_move's order,
 * then, for a valid move, the change list in mv. Returns the verdict.
 */
static enum state_invalid propose_scan(struct lcn_state *st, struct lcn_move *mv, int32_t v,
                                       struct lcn_pt p, struct lcn_pt q)
{
    const struct lcn_graph *g = st->g;
    const int32_t k0 = g->inc_off[v], deg = g->inc_off[v + 1] - k0;
    const int narrow = g->width <= 32767 && g->height <= 32767;
    for (int32_t k = 0; k < deg; k++)
        soa_hide(st, g->inc[k0 + k]);
    /* V3: q on a foreign edge; the sides of q w.r.t. every edge on the way */
    int32_t on = side_any(st, q, st->sides_q, 1);
    enum state_invalid why = on ? STATE_ON_EDGE : STATE_OK;
    /* V3: a new edge (q, u) through a node other than v and u (v itself is leaving p) */
    for (int32_t k = 0; k < deg && why == STATE_OK; k++) {
        struct lcn_pt pu = st->pts[graph_other(g, g->inc[k0 + k], v)];
        int32_t c = narrow ? ptseg32(st->nx, st->ny, g->n, q.x, q.y, pu.x, pu.y)
                           : ptseg64(st->nx, st->ny, g->n, q.x, q.y, pu.x, pu.y);
        if (geom_on_interior(q, pu, p))
            c--;
        if (c > 0)
            why = STATE_EDGE_ON_NODE;
    }
    if (why != STATE_OK) {
        for (int32_t k = 0; k < deg; k++)
            soa_set(st, g->inc[k0 + k]);
        return why;
    }
    int fresh = st->ocache_v != v || st->ocache_gen != st->generation;
    if (fresh) {
        memset(st->oacc, 0, sizeof(int32_t) * (size_t)g->m);
        side_any(st, p, st->sides_p, 0);
        for (int32_t k = 0; k < deg; k++) {
            struct lcn_pt pu = st->pts[graph_other(g, g->inc[k0 + k], v)];
            const int32_t *su = neighbour_sides(st, k, pu, 1);
            st->odc[k] = cross_any(st, p, pu, st->sides_p, su, st->oacc);
        }
        st->ocache_v = v;
        st->ocache_gen = st->generation;
    }
    for (int32_t k = 0; k < deg; k++) {
        struct lcn_pt pu = st->pts[graph_other(g, g->inc[k0 + k], v)];
        const int32_t *su = neighbour_sides(st, k, pu, 0);
        st->ndc[k] = cross_any(st, q, pu, st->sides_q, su, st->acc);
    }
    for (int32_t k = 0; k < deg; k++)
        soa_set(st, g->inc[k0 + k]);
    /* change list in ascending edge id; the differences are sparse, so only
     * flagged blocks are walked */
    int32_t *acc = st->acc;
    const int32_t nblk = (g->m + 15) / 16;
    for (int32_t k = 0; k < deg; k++) /* hidden during the scans: both slots were zero */
        acc[g->inc[k0 + k]] = st->ndc[k] - st->odc[k];
    /* the dense differences, their blocks, K and n_K after the move */
    mv->obj.K = diff_max(acc, st->oacc, st->cnt, nblk, st->blk);
    mv->obj.nK = g->m ? count_at(st->cnt, acc, g->m, mv->obj.K) : 0;
    int64_t dphi = 0, dsum = 0;
    for (int32_t b = 0; b < nblk; b++) {
        if (!st->blk[b])
            continue;
        if (mv->n + 16 > mv->cap)
            move_reserve(mv, mv->n + 16);
        /* branch-free compaction: always write, advance on nonzero; Phi and
         * the count sum change only where d is nonzero */
        int32_t n = mv->n, *ed = mv->edge, *dd = mv->d;
        for (int32_t f = 16 * b; f < 16 * b + 16; f++) {
            int32_t d = acc[f];
            ed[n] = f;
            dd[n] = d;
            n += d != 0;
            dphi += (int64_t)d * (2 * (int64_t)st->cnt[f] + d);
            dsum += d;
            acc[f] = 0;
        }
        mv->n = n;
    }
    mv->obj.Phi = st->hist.phi + dphi;
    mv->obj.C = (st->hist.sum + dsum) / 2;
    return STATE_OK;
}

int state_propose(struct lcn_state *st, int32_t v, struct lcn_pt q, struct lcn_move *mv)
{
    const struct lcn_graph *g = st->g;
    LCN_ASSERT(!st->geometry_only); /* no counts to evaluate against */
    mv->v = v;
    mv->from = st->pts[v];
    mv->to = q;
    mv->n = 0;
    mv->generation = st->generation;
    if (st->eval == STATE_EVAL_SCAN) {
        /* bounds and V2 by the cheap lookups, the rest inside the scans */
        mv->why = STATE_OK;
        if (!in_bounds(g, q))
            mv->why = STATE_OUT_OF_BOUNDS;
        else if (!geom_pt_eq(q, mv->from) && occupied(st, v, q))
            mv->why = STATE_OCCUPIED;
        if (mv->why == STATE_OK && !geom_pt_eq(q, mv->from))
            mv->why = propose_scan(st, mv, v, mv->from, q);
        if (mv->why != STATE_OK)
            return 0;
        if (geom_pt_eq(q, mv->from))
            state_obj(st, &mv->obj);
        return 1; /* propose_scan computed the tuple */
    }
    mv->why = state_check_move(st, v, q);
    if (mv->why != STATE_OK)
        return 0;
    if (geom_pt_eq(q, mv->from)) {
        state_obj(st, &mv->obj);
        return 1;
    }
    struct lcn_pt p = st->pts[v];
    const int32_t k0 = g->inc_off[v], deg = g->inc_off[v + 1] - k0;
    /* the before-move crossings, cached per (node, generation) for best-of-W */
    if (st->ocache_v != v || st->ocache_gen != st->generation) {
        st->olen = 0;
        for (int32_t k = 0; k < deg; k++)
            st->odc[k] = collect_segment(st, v, graph_other(g, g->inc[k0 + k], v), p,
                                         st->pts[graph_other(g, g->inc[k0 + k], v)]);
        st->ocache_v = v;
        st->ocache_gen = st->generation;
    }
    for (int32_t k = 0; k < deg; k++) {
        int32_t e = g->inc[k0 + k], u = graph_other(g, e, v);
        scan_segment(st, mv, e, v, u, q, st->pts[u], +1);
    }
    for (int32_t i = 0; i < st->olen; i++)
        acc_add(st, mv, st->olist[i], -1);
    for (int32_t k = 0; k < deg; k++)
        if (st->odc[k])
            acc_add(st, mv, g->inc[k0 + k], -st->odc[k]);
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

int32_t state_edge_partners(struct lcn_state *st, int32_t e, int32_t *out)
{
    const struct lcn_graph *g = st->g;
    struct lcn_pt a = st->pts[g->eu[e]], b = st->pts[g->ev[e]];
    int32_t k = 0;
    if (st->eval == STATE_EVAL_SCAN) {
        /* strict-sign scan: e itself and its neighbours share a point with it and never hit */
        scan_any(st, a, b, st->acc);
        for (int32_t bl = 0; bl < g->m; bl += 16) {
            int32_t end = LCN_MIN(g->m, bl + 16), any = 0;
            for (int32_t f = bl; f < end; f++)
                any |= st->acc[f];
            if (!any)
                continue;
            for (int32_t f = bl; f < end; f++) {
                if (st->acc[f])
                    out[k++] = f;
                st->acc[f] = 0;
            }
        }
        return k;
    }
    eg_fresh(st);
    /* the edges adjacent to e are those with an end at one of e's ends */
    SEGMENT_CANDIDATES(st, a, b, g->eu[e], g->ev[e], f, fu, fv, {
        st->pair_tests++;
        if (geom_segments_meet(a, b, st->pts[fu], st->pts[fv]))
            out[k++] = f;
    });
    /* ascending, like the SCAN path */
    for (int32_t i = 1; i < k; i++) {
        int32_t t = out[i], j = i;
        while (j > 0 && out[j - 1] > t) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = t;
    }
    return k;
}

/*
 * Moves node v from `from` (its point) to `to` in the points and both grids
 * (the edge grid only marked stale under SCAN, which never reads it).
 */
static void move_point(struct lcn_state *st, int32_t v, struct lcn_pt from, struct lcn_pt to)
{
    const struct lcn_graph *g = st->g;
    if (st->eval == STATE_EVAL_SCAN) {
        st->eg_stale = 1;
    } else {
        for (int32_t k = g->inc_off[v]; k < g->inc_off[v + 1]; k++) {
            int32_t e = g->inc[k], u = graph_other(g, e, v);
            grid_remove_segment(&st->eg, e, from, st->pts[u]);
            grid_add_segment(&st->eg, e, to, st->pts[u]);
        }
    }
    grid_cell_remove(&st->ng, grid_cell_of(&st->ng, from), v);
    grid_cell_add(&st->ng, grid_cell_of(&st->ng, to), v);
    st->pts[v] = to;
}

void state_commit(struct lcn_state *st, const struct lcn_move *mv)
{
    const struct lcn_graph *g = st->g;
    LCN_ASSERT(!st->geometry_only && mv->why == STATE_OK && mv->generation == st->generation);
    int32_t v = mv->v;
    if (!geom_pt_eq(mv->from, mv->to)) {
        move_point(st, v, mv->from, mv->to);
        if (st->ex0) {
            for (int32_t k = g->inc_off[v]; k < g->inc_off[v + 1]; k++)
                soa_set(st, g->inc[k]);
            st->nx[v] = mv->to.x;
            st->ny[v] = mv->to.y;
        }
    }
    for (int32_t i = 0; i < mv->n; i++) {
        int32_t e = mv->edge[i];
        hist_change(&st->hist, st->cnt[e], mv->d[i]);
        st->cnt[e] += mv->d[i];
    }
    st->generation++;
}

void state_move_geometry(struct lcn_state *st, int32_t v, struct lcn_pt q)
{
    const struct lcn_graph *g = st->g;
    LCN_ASSERT(st->geometry_only && st->eval == STATE_EVAL_GRID && in_bounds(g, q));
    if (geom_pt_eq(st->pts[v], q))
        return;
    move_point(st, v, st->pts[v], q);
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
