/*
 * crossings.h: crossings_full (the oracle), crossings_grid and, from
 * validate.h, the independent validate_counts give identical per-edge counts
 * on fixtures and on thousands of layouts of graphs from every generator
 * family, valid and invalid (shared points, collinear chains, nodes on
 * edges), at small and huge coordinates.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gen.h"
#include "grid.h"
#include "testkit.h"

static void expect_counts(const struct lcn_graph *g, const struct lcn_pt *pts, const int32_t *want)
{
    int32_t c[64];
    assert_true(g->m <= 64);
    crossings_full(g, pts, c);
    for (int32_t e = 0; e < g->m; e++)
        assert_int_equal(c[e], want[e]);
    tk_check_counts(g, pts, want);
}

static void test_fixtures(void **s)
{
    struct lcn_graph g;
    /* K4 on a square: only the diagonals cross */
    {
        int32_t src[] = {0, 1, 2, 3, 0, 1}, dst[] = {1, 2, 3, 0, 2, 3};
        struct lcn_pt pts[] = {PT(0, 0), PT(2, 0), PT(2, 2), PT(0, 2)};
        int32_t want[] = {0, 0, 0, 0, 1, 1};
        tk_graph(&g, 4, 6, src, dst, 2, 2);
        expect_counts(&g, pts, want);
        graph_release(&g);
    }
    /* one horizontal edge crossed by three verticals, one of them only touching
     * it with an endpoint (T-junction), plus an isolated node */
    {
        int32_t src[] = {0, 2, 4, 6}, dst[] = {1, 3, 5, 7};
        struct lcn_pt pts[] = {PT(0, 5), PT(10, 5), PT(2, 4), PT(2, 6), PT(4, 4),
                               PT(4, 6), PT(6, 5),  PT(6, 9), PT(3, 3)};
        int32_t want[] = {3, 1, 1, 1};
        tk_graph(&g, 9, 4, src, dst, 10, 10);
        expect_counts(&g, pts, want);
        graph_release(&g);
    }
    /* a path drawn on one line: consecutive edges are adjacent, the others
     * overlap or touch and count */
    {
        int32_t src[] = {0, 1, 2}, dst[] = {1, 2, 3};
        struct lcn_pt pts[] = {PT(0, 0), PT(4, 0), PT(1, 0), PT(3, 0)};
        /* e0 = [0,4], e1 = [1,4] (adjacent to e0 and e2), e2 = [1,3]: e0-e2 overlap */
        int32_t want[] = {1, 0, 1};
        tk_graph(&g, 4, 3, src, dst, 4, 4);
        expect_counts(&g, pts, want);
        graph_release(&g);
    }
    /* no edges, one edge */
    {
        struct lcn_pt pts[] = {PT(0, 0), PT(1, 1)};
        int32_t c[1] = {77};
        tk_graph(&g, 2, 0, NULL, NULL, 1, 1);
        assert_int_equal(crossings_full(&g, pts, c), 0);
        assert_int_equal(crossings_grid(&g, pts, c, 0), 0);
        assert_int_equal(c[0], 77); /* nothing written */
        graph_release(&g);
        int32_t src[] = {0}, dst[] = {1}, want[] = {0};
        tk_graph(&g, 2, 1, src, dst, 1, 1);
        expect_counts(&g, pts, want);
        graph_release(&g);
    }
}

static void test_bbox(void **s)
{
    struct lcn_pt pts[] = {PT(3, -4), PT(-7, 9), PT(TK_L, 0), PT(0, -TK_L)};
    int64_t x0, y0, x1, y1;
    layout_bbox(pts, 4, &x0, &y0, &x1, &y1);
    assert_int_equal(x0, -7);
    assert_int_equal(y0, -TK_L);
    assert_int_equal(x1, TK_L);
    assert_int_equal(y1, 9);
    layout_bbox(pts, 1, &x0, &y0, &x1, &y1);
    assert_true(x0 == 3 && x1 == 3 && y0 == -4 && y1 == -4);
}

/* crossings_in_grid on a caller-built grid, and the grid's pair-test savings
 * on a spread-out drawing. */
static void test_in_grid_and_savings(void **s)
{
    /* a 20 x 20 grid graph drawn on the lattice, step 3 */
    enum { W = 20 };
    int32_t src[2 * W * W], dst[2 * W * W], m = 0;
    for (int32_t v = 0; v < W * W; v++) {
        if (v % W + 1 < W) {
            src[m] = v;
            dst[m++] = v + 1;
        }
        if (v + W < W * W) {
            src[m] = v;
            dst[m++] = v + W;
        }
    }
    struct lcn_graph g;
    tk_graph(&g, W * W, m, src, dst, 3 * W, 3 * W);
    struct lcn_pt pts[W * W];
    for (int32_t v = 0; v < W * W; v++)
        pts[v] = PT(3 * (v % W), 3 * (v / W));
    pts[0] = PT(3 * W - 2, 3 * W - 1); /* one long edge pair across the drawing */
    int32_t *a = xmalloc(sizeof(int32_t) * (size_t)m), *b = xmalloc(sizeof(int32_t) * (size_t)m);
    uint64_t full = crossings_full(&g, pts, a);
    uint64_t grid = crossings_grid(&g, pts, b, 0);
    for (int32_t e = 0; e < m; e++)
        assert_int_equal(a[e], b[e]);
    assert_true(grid * 20 < full / 2);
    struct lcn_grid gr;
    grid_init(&gr, 0, 0, 3 * W, 3 * W, 9);
    for (int32_t e = 0; e < m; e++)
        grid_add_segment(&gr, e, pts[g.eu[e]], pts[g.ev[e]]);
    memset(b, 0xff, sizeof(int32_t) * (size_t)m);
    crossings_in_grid(&g, pts, b, &gr);
    for (int32_t e = 0; e < m; e++)
        assert_int_equal(a[e], b[e]);
    assert_true(tk_check_counts(&g, pts, a) > 0);
    grid_release(&gr);
    free(a);
    free(b);
    graph_release(&g);
}

struct fam_case {
    enum gen_family family;
    int32_t n, m;
};

static const struct fam_case fams[] = {
    {GEN_RANDOM, 24, 0}, {GEN_GRID, 30, 0},    {GEN_DENSE, 32, 0},
    {GEN_LARGE, 30, 0},  {GEN_PLANTED, 24, 0}, {GEN_RANDOM, 12, 66}, /* K12 */
};

static void test_differential_families(void **s)
{
    int64_t layouts = 0, crossing_sum = 0;
    for (size_t f = 0; f < LCN_ARRAY_LEN(fams); f++) {
        for (uint64_t seed = 1; seed <= 3; seed++) {
            struct gen_params p = {
                .family = fams[f].family, .n = fams[f].n, .m = fams[f].m, .seed = seed};
            struct lcn_graph g;
            struct lcn_pt *pts, *planted = NULL;
            char err[160];
            int rc = gen_instance(&p, &g, &pts, &planted, err, sizeof(err));
            if (rc)
                fprintf(stderr, "gen %s: %s\n", gen_family_name(p.family), err);
            assert_int_equal(rc, 0);
            crossing_sum += tk_check_counts(&g, pts, NULL);
            layouts++;
            if (planted) {
                tk_check_counts(&g, planted, NULL);
                layouts++;
            }
            struct lcn_rng r;
            rng_init(&r, seed * 100 + f, 0, RNG_PURPOSE_GEN);
            int reps = g.m > 300 ? 6 : 18;
            for (int kind = 0; kind < TK_LAY_COUNT; kind++) {
                for (int rep = 0; rep < reps; rep++) {
                    tk_layout(&g, &r, (enum tk_layout)kind, pts);
                    crossing_sum += tk_check_counts(&g, pts, NULL);
                    layouts++;
                }
            }
            free(pts);
            free(planted);
            graph_release(&g);
        }
    }
    assert_true(layouts >= 2000);
    assert_true(crossing_sum > 0);
}

/* Small random graphs of every density, many layouts each. */
static void test_differential_random_graphs(void **s)
{
    struct lcn_rng r;
    rng_init(&r, 77, 0, RNG_PURPOSE_GEN);
    int64_t layouts = 0;
    for (int32_t n = 2; n <= 14; n++) {
        int32_t mmax = n * (n - 1) / 2;
        for (int32_t m = 1; m <= mmax; m += 1 + mmax / 5) {
            struct lcn_graph g;
            tk_random_graph(&g, &r, n, m, 10, 10);
            struct lcn_pt pts[14];
            for (int rep = 0; rep < 30; rep++) {
                tk_layout(&g, &r, (enum tk_layout)(rep % TK_LAY_COUNT), pts);
                tk_check_counts(&g, pts, NULL);
                layouts++;
            }
            graph_release(&g);
        }
    }
    assert_true(layouts > 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixtures),
        cmocka_unit_test(test_bbox),
        cmocka_unit_test(test_in_grid_and_savings),
        cmocka_unit_test(test_differential_families),
        cmocka_unit_test(test_differential_random_graphs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
