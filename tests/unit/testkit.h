/*
 * testkit.h - small helpers shared by the unit tests (header-only, test code
 * only): point literals, graph construction that must succeed, layouts that
 * break the validity rules on purpose, and the per-edge comparison of every
 * full-layout evaluator.
 *
 * Include after <cmocka.h>.
 */
#ifndef LCN_TESTKIT_H
#define LCN_TESTKIT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crossings.h"
#include "engine.h"
#include "geom.h"
#include "graph.h"
#include "rng.h"
#include "util.h"
#include "validate.h"

#define PT(x_, y_) ((struct lcn_pt){(x_), (y_)})
#define TK_L       LCN_COORD_LIMIT

/* Builds a graph that must be accepted. */
static inline void tk_graph(struct lcn_graph *g, int32_t n, int32_t m, const int32_t *src,
                            const int32_t *dst, int32_t w, int32_t h)
{
    struct lcn_graph_error why;
    int rc = graph_init(g, n, m, src, dst, w, h, &why);
    if (rc)
        fprintf(stderr, "graph_init: %s\n", why.msg);
    assert_int_equal(rc, 0);
}

/* A random simple graph G(n, m) (m must be attainable). */
static inline void tk_random_graph(struct lcn_graph *g, struct lcn_rng *r, int32_t n, int32_t m,
                                   int32_t w, int32_t h)
{
    int32_t *src = xmalloc(sizeof(int32_t) * (size_t)(m + 1));
    int32_t *dst = xmalloc(sizeof(int32_t) * (size_t)(m + 1));
    uint8_t *adj = xcalloc((size_t)n * (size_t)n, 1);
    int32_t k = 0;
    while (k < m) {
        int32_t a = (int32_t)rng_below(r, (uint32_t)n), b = (int32_t)rng_below(r, (uint32_t)n);
        if (a == b || adj[a * n + b])
            continue;
        adj[a * n + b] = adj[b * n + a] = 1;
        src[k] = a;
        dst[k++] = b;
    }
    tk_graph(g, n, m, src, dst, w, h);
    free(adj);
    free(src);
    free(dst);
}

/* Uniform random point in [x0, x1] x [y0, y1] (inclusive, int64 spans). */
static inline struct lcn_pt tk_rand_pt(struct lcn_rng *r, int64_t x0, int64_t y0, int64_t x1,
                                       int64_t y1)
{
    uint64_t sx = (uint64_t)(x1 - x0 + 1), sy = (uint64_t)(y1 - y0 + 1);
    uint64_t ux = (((uint64_t)rng_u32(r) << 32) | rng_u32(r)) % sx;
    uint64_t uy = (((uint64_t)rng_u32(r) << 32) | rng_u32(r)) % sy;
    return PT((int32_t)(x0 + (int64_t)ux), (int32_t)(y0 + (int64_t)uy));
}

/* Kinds of (mostly invalid) layouts the differential tests draw from. */
enum tk_layout {
    TK_LAY_TINY_BOX,  /* points in a 4x4 box: shared points, collinear triples */
    TK_LAY_LINE,      /* every node on one line (collinear chains, overlaps) */
    TK_LAY_FEW_LINES, /* nodes on three axis-parallel or diagonal lines */
    TK_LAY_ON_EDGES,  /* random, then some nodes moved onto lattice points of edges */
    TK_LAY_HUGE,      /* uniform in [-L, L]^2, L = 2^30 - 1 */
    TK_LAY_HUGE_NEAR, /* huge points on or next to one long line (det of +-1) */
    TK_LAY_MIXED,     /* small cluster plus a few huge outliers */
    TK_LAY_COUNT
};

/* Fills pts (g->n points) with a layout of the given kind. */
static inline void tk_layout(const struct lcn_graph *g, struct lcn_rng *r, enum tk_layout kind,
                             struct lcn_pt *pts)
{
    int32_t n = g->n;
    switch (kind) {
    case TK_LAY_TINY_BOX:
        for (int32_t v = 0; v < n; v++)
            pts[v] = tk_rand_pt(r, 0, 0, 3, 3);
        break;
    case TK_LAY_LINE: {
        /* x = t, y = s*t for a random slope s in {0, 1, -1, 2} (or vertical) */
        int shape = (int)rng_below(r, 5);
        for (int32_t v = 0; v < n; v++) {
            int32_t t = (int32_t)rng_below(r, (uint32_t)(n + 3));
            static const int32_t slope[4] = {0, 1, -1, 2};
            pts[v] = shape == 4 ? PT(7, t) : PT(t, 5 + slope[shape] * t);
        }
        break;
    }
    case TK_LAY_FEW_LINES:
        for (int32_t v = 0; v < n; v++) {
            int32_t t = (int32_t)rng_below(r, 12);
            switch (rng_below(r, 3)) {
            case 0:
                pts[v] = PT(t, 3);
                break;
            case 1:
                pts[v] = PT(4, t);
                break;
            default:
                pts[v] = PT(t, t);
                break;
            }
        }
        break;
    case TK_LAY_ON_EDGES:
        for (int32_t v = 0; v < n; v++)
            pts[v] = PT(2 * (int32_t)rng_below(r, 10), 2 * (int32_t)rng_below(r, 10));
        /* even coordinates: every edge's midpoint is a lattice point */
        for (int32_t i = 0; i < n / 3 && g->m > 0; i++) {
            int32_t e = (int32_t)rng_below(r, (uint32_t)g->m);
            int32_t w = (int32_t)rng_below(r, (uint32_t)n);
            if (w == g->eu[e] || w == g->ev[e])
                continue;
            struct lcn_pt a = pts[g->eu[e]], b = pts[g->ev[e]];
            pts[w] = PT((a.x + b.x) / 2, (a.y + b.y) / 2);
        }
        break;
    case TK_LAY_HUGE:
        for (int32_t v = 0; v < n; v++)
            pts[v] = tk_rand_pt(r, -TK_L, -TK_L, TK_L, TK_L);
        break;
    case TK_LAY_HUGE_NEAR:
        /*
         * Huge lattice points on the line y = x or one step off it: the
         * orientation determinants are differences of products near 2^62
         * whose exact value is small, where a double or int32 test fails.
         */
        for (int32_t v = 0; v < n; v++) {
            int64_t x = tk_rand_pt(r, -TK_L, 0, TK_L, 0).x;
            int64_t y = x + (int64_t)rng_below(r, 3) - 1;
            y = y > TK_L ? TK_L : (y < -TK_L ? -TK_L : y);
            pts[v] = PT((int32_t)x, (int32_t)y);
        }
        break;
    case TK_LAY_MIXED:
        for (int32_t v = 0; v < n; v++) {
            if (rng_below(r, 8) == 0)
                pts[v] = tk_rand_pt(r, -TK_L, -TK_L, TK_L, TK_L);
            else
                pts[v] = tk_rand_pt(r, -5, -5, 5, 5);
        }
        break;
    default:
        assert_true(0);
    }
}

/*
 * Asserts the per-operator identities (engine_op_stats): improved <=
 * accepted <= valid <= tried per operator, and the sums of tried, valid and
 * accepted equal the run's attempted, valid and accepted. Returns the sum of
 * improved (callers compare it with their own count of best updates).
 */
static inline uint64_t tk_check_ops(const struct engine_op_stats *ops, uint64_t attempted,
                                    uint64_t valid, uint64_t accepted)
{
    uint64_t t = 0, v = 0, a = 0, imp = 0;
    for (int op = 0; op < ENGINE_OPS; op++) {
        assert_true(ops[op].improved <= ops[op].accepted);
        assert_true(ops[op].accepted <= ops[op].valid);
        assert_true(ops[op].valid <= ops[op].tried);
        t += ops[op].tried;
        v += ops[op].valid;
        a += ops[op].accepted;
        imp += ops[op].improved;
    }
    assert_int_equal(t, attempted);
    assert_int_equal(v, valid);
    assert_int_equal(a, accepted);
    return imp;
}

/*
 * Asserts that crossings_full, crossings_grid (several grid sizes) and
 * validate_counts give identical per-edge counts; when c is not NULL it must
 * equal them too. Returns the sum of the counts.
 */
static inline int64_t tk_check_counts(const struct lcn_graph *g, const struct lcn_pt *pts,
                                      const int32_t *c)
{
    size_t sz = sizeof(int32_t) * (size_t)(g->m + 1);
    int32_t *full = xmalloc(sz), *grid = xmalloc(sz), *ind = xmalloc(sz);
    uint64_t t_full = crossings_full(g, pts, full);
    assert_int_equal(t_full, (uint64_t)g->m * (uint64_t)(g->m > 0 ? g->m - 1 : 0));
    validate_counts(g, pts, ind);
    static const int32_t sides[] = {0, 1, 3, 17};
    for (size_t s = 0; s < LCN_ARRAY_LEN(sides); s++) {
        uint64_t t_grid = crossings_grid(g, pts, grid, sides[s]);
        assert_true(t_grid <= (uint64_t)g->m * (uint64_t)(g->m > 0 ? g->m - 1 : 0) / 2);
        for (int32_t e = 0; e < g->m; e++)
            assert_int_equal(full[e], grid[e]);
    }
    int64_t sum = 0;
    for (int32_t e = 0; e < g->m; e++) {
        assert_int_equal(full[e], ind[e]);
        if (c)
            assert_int_equal(full[e], c[e]);
        sum += full[e];
    }
    assert_int_equal(sum % 2, 0);
    free(full);
    free(grid);
    free(ind);
    return sum;
}

#endif
