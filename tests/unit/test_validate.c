/*
 * validate.h: one fixture per violation kind with the exact ids, listing
 * caps with complete counts, valid layouts, and the 128-bit predicates at
 * the ends of the int32 range.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "err.h"
#include "testkit.h"

struct vio {
    enum lcn_vkind kind;
    int32_t a, b;
};

/* Validates and expects exactly the listed violations, in order. */
static void expect_report(const struct lcn_graph *g, const struct lcn_pt *pts,
                          const struct vio *want, int32_t nwant)
{
    struct lcn_report r;
    assert_int_equal(validate_layout(g, pts, 1000, &r), 0);
    if (r.listed != nwant) {
        for (int32_t i = 0; i < r.listed; i++)
            fprintf(stderr, "  %s %d %d\n", validate_kind_name(r.list[i].kind), r.list[i].a,
                    r.list[i].b);
    }
    assert_int_equal(r.listed, nwant);
    assert_int_equal(r.total, nwant);
    assert_int_equal(r.valid, nwant == 0);
    int64_t per[5] = {0};
    for (int32_t i = 0; i < nwant; i++) {
        assert_int_equal(r.list[i].kind, want[i].kind);
        assert_int_equal(r.list[i].a, want[i].a);
        assert_int_equal(r.list[i].b, want[i].b);
        per[want[i].kind]++;
    }
    for (int k = 1; k <= 4; k++)
        assert_int_equal(r.count[k], per[k]);
    /* the tuple and counts are computed even for invalid layouts */
    int32_t *c = xmalloc(sizeof(int32_t) * (size_t)(g->m + 1));
    crossings_full(g, pts, c);
    for (int32_t e = 0; e < g->m; e++)
        assert_int_equal(r.c[e], c[e]);
    struct lcn_obj o;
    obj_from_counts(&o, c, g->m);
    assert_int_equal(obj_cmp(&o, &r.obj), 0);
    free(c);
    report_release(&r);
}

static void test_v1_out_of_bounds(void **s)
{
    struct lcn_graph g;
    int32_t src[] = {0}, dst[] = {1};
    tk_graph(&g, 7, 1, src, dst, 10, 10);
    /* the corners are inside (bounds inclusive); one step out on each side is not */
    struct lcn_pt pts[] = {
        PT(0, 0), PT(10, 10), PT(-1, 5), PT(5, 11), PT(11, 0), PT(3, -1), PT(INT32_MIN, INT32_MAX)};
    struct vio want[] = {{LCN_V1_OUT_OF_BOUNDS, 2, -1},
                         {LCN_V1_OUT_OF_BOUNDS, 3, -1},
                         {LCN_V1_OUT_OF_BOUNDS, 4, -1},
                         {LCN_V1_OUT_OF_BOUNDS, 5, -1},
                         {LCN_V1_OUT_OF_BOUNDS, 6, -1}};
    expect_report(&g, pts, want, 5);
    graph_release(&g);
}

static void test_v2_shared_point(void **s)
{
    struct lcn_graph g;
    int32_t src[] = {0, 2}, dst[] = {2, 3};
    tk_graph(&g, 5, 2, src, dst, 10, 10);
    struct lcn_pt pts[] = {PT(0, 0), PT(3, 3), PT(0, 9), PT(9, 9), PT(3, 3)};
    struct vio want[] = {{LCN_V2_SHARED_POINT, 1, 4}};
    expect_report(&g, pts, want, 1);
    /* three nodes on one point: three pairs, smaller id first */
    pts[0] = PT(3, 3);
    pts[2] = PT(0, 8);
    struct vio want3[] = {
        {LCN_V2_SHARED_POINT, 0, 1}, {LCN_V2_SHARED_POINT, 0, 4}, {LCN_V2_SHARED_POINT, 1, 4}};
    expect_report(&g, pts, want3, 3);
    graph_release(&g);
}

static void test_v3_node_on_edge(void **s)
{
    struct lcn_graph g;
    int32_t src[] = {0, 2}, dst[] = {1, 3};
    tk_graph(&g, 5, 2, src, dst, 10, 10);
    /* node 4 on the interior of edge 1 (a diagonal, at a lattice point) */
    struct lcn_pt pts[] = {PT(0, 0), PT(4, 0), PT(1, 2), PT(7, 8), PT(5, 6)};
    struct vio want[] = {{LCN_V3_NODE_ON_EDGE, 4, 1}};
    expect_report(&g, pts, want, 1);
    /* on an endpoint's point it is a V2 with that endpoint, not a V3 */
    pts[4] = PT(4, 0);
    struct vio want2[] = {{LCN_V2_SHARED_POINT, 1, 4}};
    expect_report(&g, pts, want2, 1);
    /* beyond the end on the same line, or next to the edge: valid */
    pts[4] = PT(9, 10);
    expect_report(&g, pts, NULL, 0);
    pts[4] = PT(5, 7);
    expect_report(&g, pts, NULL, 0);
    graph_release(&g);
}

static void test_v4_overlap(void **s)
{
    struct lcn_graph g;
    int32_t src[] = {0, 2}, dst[] = {1, 3};
    tk_graph(&g, 4, 2, src, dst, 10, 10);
    /* e0 = [0,2], e1 = [1,3] on the x-axis: each has a foreign node inside,
     * and they overlap along [1,2] */
    struct lcn_pt pts[] = {PT(0, 0), PT(2, 0), PT(1, 0), PT(3, 0)};
    struct vio want[] = {
        {LCN_V3_NODE_ON_EDGE, 1, 1}, {LCN_V3_NODE_ON_EDGE, 2, 0}, {LCN_V4_EDGE_OVERLAP, 0, 1}};
    expect_report(&g, pts, want, 3);
    /* the same segment drawn twice: two V2 and the overlap */
    struct lcn_pt twice[] = {PT(0, 0), PT(2, 4), PT(0, 0), PT(2, 4)};
    struct vio want2[] = {
        {LCN_V2_SHARED_POINT, 0, 2}, {LCN_V2_SHARED_POINT, 1, 3}, {LCN_V4_EDGE_OVERLAP, 0, 1}};
    expect_report(&g, twice, want2, 3);
    /* touching end to end on one line is not an overlap (but a V2) */
    struct lcn_pt touch[] = {PT(0, 0), PT(2, 2), PT(2, 2), PT(5, 5)};
    struct vio want3[] = {{LCN_V2_SHARED_POINT, 1, 2}};
    expect_report(&g, touch, want3, 1);
    graph_release(&g);
    /* adjacent edges overlapping: 0-1 inside 0-2 */
    int32_t src2[] = {0, 0}, dst2[] = {1, 2};
    tk_graph(&g, 3, 2, src2, dst2, 10, 10);
    struct lcn_pt adj[] = {PT(0, 0), PT(2, 1), PT(4, 2)};
    struct vio want4[] = {{LCN_V3_NODE_ON_EDGE, 1, 1}, {LCN_V4_EDGE_OVERLAP, 0, 1}};
    expect_report(&g, adj, want4, 2);
    graph_release(&g);
}

static void test_listing_cap(void **s)
{
    struct lcn_graph g;
    /* ten nodes on one point: 45 pairs; five listed */
    tk_graph(&g, 10, 0, NULL, NULL, 5, 5);
    struct lcn_pt pts[12];
    for (int v = 0; v < 10; v++)
        pts[v] = PT(2, 2);
    struct lcn_report r;
    validate_layout(&g, pts, 5, &r);
    assert_false(r.valid);
    assert_int_equal(r.listed, 5);
    assert_int_equal(r.count[LCN_V2_SHARED_POINT], 45);
    assert_int_equal(r.total, 45);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(r.list[i].kind, LCN_V2_SHARED_POINT);
        assert_int_equal(r.list[i].a, 0);
        assert_int_equal(r.list[i].b, i + 1);
    }
    report_release(&r);
    validate_layout(&g, pts, 0, &r);
    assert_int_equal(r.listed, 0);
    assert_int_equal(r.total, 45);
    report_release(&r);
    validate_layout(&g, pts, -3, &r);
    assert_int_equal(r.listed, 0);
    assert_int_equal(r.total, 45);
    report_release(&r);
    graph_release(&g);

    /* ten nodes inside one edge plus two out of bounds: V1 listed first */
    int32_t src[] = {0}, dst[] = {1};
    tk_graph(&g, 12, 1, src, dst, 20, 20);
    pts[0] = PT(0, 0);
    pts[1] = PT(20, 0);
    for (int v = 2; v < 12; v++)
        pts[v] = PT(v - 1, 0);
    pts[5] = PT(21, 0);
    pts[7] = PT(-4, 0);
    validate_layout(&g, pts, 3, &r);
    assert_int_equal(r.count[LCN_V1_OUT_OF_BOUNDS], 2);
    assert_int_equal(r.count[LCN_V3_NODE_ON_EDGE], 8);
    assert_int_equal(r.total, 10);
    assert_int_equal(r.listed, 3);
    assert_int_equal(r.list[0].kind, LCN_V1_OUT_OF_BOUNDS);
    assert_int_equal(r.list[0].a, 5);
    assert_int_equal(r.list[1].kind, LCN_V1_OUT_OF_BOUNDS);
    assert_int_equal(r.list[1].a, 7);
    assert_int_equal(r.list[2].kind, LCN_V3_NODE_ON_EDGE);
    assert_int_equal(r.list[2].b, 0);
    report_release(&r);
    graph_release(&g);
}

static void test_valid_layout(void **s)
{
    struct lcn_graph g;
    int32_t src[] = {0, 1, 2, 3, 0, 1}, dst[] = {1, 2, 3, 0, 2, 3};
    tk_graph(&g, 5, 6, src, dst, 4, 4);
    /* K4 on a square (diagonals cross at (2,2), where no node is) + isolated node */
    struct lcn_pt pts[] = {PT(0, 0), PT(4, 0), PT(4, 4), PT(0, 4), PT(1, 2)};
    struct lcn_report r;
    assert_int_equal(validate_layout(&g, pts, 10, &r), 0);
    assert_true(r.valid);
    assert_int_equal(r.total, 0);
    assert_int_equal(r.listed, 0);
    for (int k = 0; k < 5; k++)
        assert_int_equal(r.count[k], 0);
    assert_true(r.obj.K == 1 && r.obj.nK == 2 && r.obj.Phi == 2 && r.obj.C == 1);
    assert_int_equal(r.c[4], 1);
    assert_int_equal(r.c[5], 1);
    report_release(&r);
    graph_release(&g);
    /* the empty graph */
    tk_graph(&g, 0, 0, NULL, NULL, 0, 0);
    assert_int_equal(validate_layout(&g, NULL, 10, &r), 0);
    assert_true(r.valid);
    report_release(&r);
    graph_release(&g);
    assert_string_equal(validate_kind_name(LCN_V1_OUT_OF_BOUNDS), "V1");
    assert_string_equal(validate_kind_name(LCN_V2_SHARED_POINT), "V2");
    assert_string_equal(validate_kind_name(LCN_V3_NODE_ON_EDGE), "V3");
    assert_string_equal(validate_kind_name(LCN_V4_EDGE_OVERLAP), "V4");
}

/* validate_claim: the oracle's verdict on an engine's claim, with its
 * diagnosis, for a valid layout claimed right and wrong and an invalid one */
static void test_validate_claim(void **s)
{
    struct lcn_graph g;
    int32_t src[] = {0, 1, 2, 3, 0, 1}, dst[] = {1, 2, 3, 0, 2, 3};
    tk_graph(&g, 5, 6, src, dst, 4, 4);
    struct lcn_pt pts[] = {PT(0, 0), PT(4, 0), PT(4, 4), PT(0, 4), PT(1, 2)};
    struct lcn_obj right = {1, 2, 2, 1}, wrong = {1, 2, 2, 2}, got;
    char diag[200];
    assert_int_equal(validate_claim(&g, pts, &right, NULL, &got, diag, sizeof(diag)), 0);
    assert_int_equal(obj_cmp(&got, &right), 0);
    assert_string_equal(diag, "");
    assert_int_equal(validate_claim(&g, pts, &wrong, NULL, &got, diag, sizeof(diag)), LCN_ECORRUPT);
    assert_int_equal(obj_cmp(&got, &right), 0); /* the oracle's tuple, not the claim */
    assert_non_null(strstr(diag, "engine claimed (1, 2, 2, 2) but the oracle counts (1, 2, 2, 1)"));
    assert_int_equal(validate_claim(&g, pts, &wrong, NULL, NULL, NULL, 0), LCN_ECORRUPT);
    /* node 4 where the diagonals cross: on both (V3 twice) */
    pts[4] = PT(2, 2);
    assert_int_equal(validate_claim(&g, pts, &right, NULL, NULL, diag, sizeof(diag)), LCN_ECORRUPT);
    assert_non_null(strstr(diag, "engine published an invalid layout (2 violations, first V3"));
    graph_release(&g);
}

/* The checker's own predicates hold at the ends of the int32 range (beyond
 * the parser's limit: it must not overflow even there). */
static void test_int32_extremes(void **s)
{
    const int32_t m = INT32_MIN, M = INT32_MAX;
    struct lcn_graph g;
    int32_t src[] = {0, 2}, dst[] = {1, 3};
    tk_graph(&g, 5, 2, src, dst, TK_L, TK_L);
    /* det((m,m),(M,M-1),(M-1,M-2)) = (2^32-1)(2^32-3) - (2^32-2)^2 = -1 */
    struct lcn_pt pts[] = {PT(m, m), PT(M, M - 1), PT(M - 1, M - 2), PT(M, m), PT(0, 0)};
    int32_t c[2];
    validate_counts(&g, pts, c);
    assert_true(c[0] == 0 && c[1] == 0); /* both ends of e1 strictly right of e0 */
    pts[3] = PT(m, M);
    validate_counts(&g, pts, c);
    assert_true(c[0] == 1 && c[1] == 1);
    struct lcn_report r;
    validate_layout(&g, pts, 10, &r);
    assert_int_equal(r.count[LCN_V1_OUT_OF_BOUNDS], 4);
    assert_int_equal(r.count[LCN_V3_NODE_ON_EDGE], 0); /* (0,0) is not on e0's line */
    report_release(&r);
    /* the full diagonal y = x passes (0,0) */
    pts[1] = PT(M, M);
    pts[0] = PT(m + 1, m + 1);
    validate_layout(&g, pts, 10, &r);
    assert_int_equal(r.count[LCN_V3_NODE_ON_EDGE], 1);
    assert_int_equal(r.list[r.listed - 1].a, 4);
    report_release(&r);
    graph_release(&g);
}

/*
 * The sweep (x-ranges, then y-ranges, then shared side tests) against a
 * brute force over every pair with geom.h's predicates, an independent
 * slow twin: V4 pairs and per-edge counts on every testkit layout kind
 * (shared points, collinear chains, overlaps, int32-scale coordinates).
 */
static void test_sweep_vs_brute_force(void **s)
{
    (void)s;
    struct lcn_rng r;
    rng_init(&r, 0x5eeb, 0, RNG_PURPOSE_GEN);
    int64_t overlaps = 0, crossings = 0;
    for (int kind = 0; kind < TK_LAY_COUNT; kind++)
        for (int rep = 0; rep < 12; rep++) {
            struct lcn_graph g;
            int32_t n = 8 + 4 * rep;
            tk_random_graph(&g, &r, n, 3 * n, TK_L, TK_L);
            struct lcn_pt *pts = xmalloc(sizeof(*pts) * (size_t)n);
            tk_layout(&g, &r, (enum tk_layout)kind, pts);
            struct lcn_report rep_;
            validate_layout(&g, pts, 0, &rep_);
            int64_t v4 = 0;
            int32_t *c = xcalloc((size_t)g.m + 1, sizeof(int32_t));
            for (int32_t e = 0; e < g.m; e++)
                for (int32_t f = e + 1; f < g.m; f++) {
                    struct lcn_pt a = pts[g.eu[e]], b = pts[g.ev[e]];
                    struct lcn_pt cc = pts[g.eu[f]], d = pts[g.ev[f]];
                    int same_seg = (geom_pt_eq(a, cc) && geom_pt_eq(b, d)) ||
                                   (geom_pt_eq(a, d) && geom_pt_eq(b, cc));
                    v4 += geom_collinear_overlap(a, b, cc, d) || (same_seg && !geom_pt_eq(a, b));
                    if (g.eu[e] == g.eu[f] || g.eu[e] == g.ev[f] || g.ev[e] == g.eu[f] ||
                        g.ev[e] == g.ev[f])
                        continue;
                    if (geom_segments_meet(a, b, cc, d)) {
                        c[e]++;
                        c[f]++;
                    }
                }
            assert_int_equal(rep_.count[LCN_V4_EDGE_OVERLAP], v4);
            assert_memory_equal(rep_.c, c, sizeof(int32_t) * (size_t)g.m);
            overlaps += v4;
            for (int32_t e = 0; e < g.m; e++)
                crossings += c[e];
            free(c);
            report_release(&rep_);
            free(pts);
            graph_release(&g);
        }
    assert_true(overlaps > 20);
    assert_true(crossings > 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_v1_out_of_bounds), cmocka_unit_test(test_v2_shared_point),
        cmocka_unit_test(test_v3_node_on_edge),  cmocka_unit_test(test_v4_overlap),
        cmocka_unit_test(test_listing_cap),      cmocka_unit_test(test_valid_layout),
        cmocka_unit_test(test_int32_extremes),     cmocka_unit_test(test_validate_claim),
        cmocka_unit_test(test_sweep_vs_brute_force),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
