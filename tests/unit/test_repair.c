/*
 * repair.h: any input becomes valid (checked by the independent
 * validate_layout), the same input always gives the same output, and a
 * valid input is returned unchanged.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "err.h"
#include "gen.h"
#include "repair.h"
#include "state.h"
#include "testkit.h"

/*
 * The slow twin of repair_layout's violation pass: marks from the
 * independent validator's list instead of the grids, and each relocation
 * evaluated and committed through the full state (state_propose with its
 * crossing counts), as repair did before it kept a geometry-only state.
 * The ring walk is the one repair.h documents. Fills and clamps first with
 * repair's own first phase (repair_fill_clamp: the twin is of the violation
 * pass only). Returns 0 or LCN_EINVAL (a node found no valid point).
 */
static int ref_repair(const struct lcn_graph *g, struct lcn_pt *pts, const uint8_t *has_xy)
{
    struct repair_stats unused = {0};
    repair_fill_clamp(g, pts, has_xy, &unused);
    struct lcn_state st;
    assert_int_equal(state_init(&st, g, pts), 0);
    struct lcn_move mv;
    move_init(&mv);
    uint8_t *mark = xcalloc((size_t)g->n + 1, 1);
    int rc = LCN_ECORRUPT;
    for (int round = 0; round < 64 && rc == LCN_ECORRUPT; round++) {
        struct lcn_report r;
        /* room for every V2 pair and V3 (node, edge) pair: the list is complete */
        validate_layout(g, st.pts, (int32_t)((int64_t)g->n * (g->n + g->m) + 16), &r);
        memset(mark, 0, (size_t)g->n);
        assert_true(r.listed == r.total);
        int32_t marked = 0;
        for (int32_t i = 0; i < r.listed; i++) {
            const struct lcn_violation *x = &r.list[i];
            int32_t w = x->kind == LCN_V2_SHARED_POINT ? LCN_MAX(x->a, x->b)
                        : x->kind == LCN_V3_NODE_ON_EDGE ? x->a
                                                         : -1;
            if (w >= 0 && !mark[w]) {
                mark[w] = 1;
                marked++;
            }
        }
        report_release(&r);
        if (marked == 0) {
            rc = 0;
            break;
        }
        for (int32_t v = 0; v < g->n && rc == LCN_ECORRUPT; v++) {
            if (!mark[v])
                continue;
            struct lcn_pt p = st.pts[v];
            int64_t rmax = LCN_MAX(LCN_MAX(p.x, g->width - p.x), LCN_MAX(p.y, g->height - p.y));
            int done = 0;
            for (int64_t rr = 1; rr <= rmax && !done; rr++)
                for (int64_t t = -rr; t <= rr && !done; t++) {
                    int64_t cand[4][2] = {{p.x + t, p.y - rr},
                                          {p.x + t, p.y + rr},
                                          {p.x - rr, p.y + t},
                                          {p.x + rr, p.y + t}};
                    for (int k = 0; k < 4 && !done; k++) {
                        if (k >= 2 && (t == -rr || t == rr))
                            continue;
                        int64_t x = cand[k][0], y = cand[k][1];
                        if (x < 0 || y < 0 || x > g->width || y > g->height)
                            continue;
                        if (state_propose(&st, v, PT((int32_t)x, (int32_t)y), &mv)) {
                            state_commit(&st, &mv);
                            done = 1;
                        }
                    }
                }
            if (!done)
                rc = LCN_EINVAL;
        }
    }
    if (rc == 0)
        memcpy(pts, st.pts, sizeof(*pts) * (size_t)g->n);
    free(mark);
    move_release(&mv);
    state_release(&st);
    return rc;
}

/*
 * Repairs a copy of pts twice; both runs must agree bit for bit and the
 * result must be valid. Returns the stats of the first run; the repaired
 * layout is left in out (n points) when out is not NULL.
 */
static struct repair_stats repair_checked(const struct lcn_graph *g, const struct lcn_pt *pts,
                                          const uint8_t *has_xy, struct lcn_pt *out)
{
    size_t sz = sizeof(struct lcn_pt) * (size_t)(g->n + 1);
    struct lcn_pt *a = xmalloc(sz), *b = xmalloc(sz);
    memcpy(a, pts, sz - sizeof(struct lcn_pt));
    memcpy(b, pts, sz - sizeof(struct lcn_pt));
    struct repair_stats sa, sb;
    assert_int_equal(repair_layout(g, a, has_xy, &sa), 0);
    assert_int_equal(repair_layout(g, b, has_xy, &sb), 0);
    assert_memory_equal(a, b, sz - sizeof(struct lcn_pt));
    assert_memory_equal(&sa, &sb, sizeof(sa));
    /* the slow twin reaches the same points */
    memcpy(b, pts, sz - sizeof(struct lcn_pt));
    assert_int_equal(ref_repair(g, b, has_xy), 0);
    assert_memory_equal(a, b, sz - sizeof(struct lcn_pt));
    struct lcn_report r;
    validate_layout(g, a, 8, &r);
    if (!r.valid) {
        for (int32_t i = 0; i < r.listed; i++)
            fprintf(stderr, "  %s %d %d\n", validate_kind_name(r.list[i].kind), r.list[i].a,
                    r.list[i].b);
    }
    assert_true(r.valid);
    report_release(&r);
    /* a repaired layout is a fixed point */
    struct repair_stats again;
    memcpy(b, a, sz - sizeof(struct lcn_pt));
    assert_int_equal(repair_layout(g, b, NULL, &again), 0);
    assert_memory_equal(a, b, sz - sizeof(struct lcn_pt));
    assert_int_equal(again.moved, 0);
    assert_int_equal(again.rounds, 1);
    if (out)
        memcpy(out, a, sz - sizeof(struct lcn_pt));
    free(a);
    free(b);
    return sa;
}

static void test_all_on_one_point(void **s)
{
    struct lcn_rng r;
    rng_init(&r, 1, 0, RNG_PURPOSE_REPAIR);
    struct lcn_graph g;
    tk_random_graph(&g, &r, 40, 100, 20, 20);
    struct lcn_pt pts[40];
    static const struct lcn_pt where[] = {PT(10, 10), PT(0, 0), PT(20, 20), PT(0, 20)};
    for (size_t w = 0; w < LCN_ARRAY_LEN(where); w++) {
        for (int v = 0; v < 40; v++)
            pts[v] = where[w];
        struct repair_stats st = repair_checked(&g, pts, NULL, NULL);
        assert_true(st.moved >= 39);
        assert_int_equal(st.clamped, 0);
    }
    graph_release(&g);
    /* as many nodes as points: a 4-cycle on the 2 x 2 lattice */
    int32_t src[] = {0, 1, 2, 3}, dst[] = {1, 2, 3, 0};
    tk_graph(&g, 4, 4, src, dst, 1, 1);
    for (int v = 0; v < 4; v++)
        pts[v] = PT(0, 0);
    repair_checked(&g, pts, NULL, NULL);
    graph_release(&g);
}

static void test_out_of_bounds(void **s)
{
    struct lcn_rng r;
    rng_init(&r, 2, 0, RNG_PURPOSE_REPAIR);
    struct lcn_graph g;
    tk_random_graph(&g, &r, 30, 60, 25, 15);
    struct lcn_pt pts[30];
    for (int v = 0; v < 30; v++) {
        switch (v % 5) {
        case 0:
            pts[v] = tk_rand_pt(&r, -1000000, -1000000, -1, 1000000);
            break;
        case 1:
            pts[v] = tk_rand_pt(&r, 26, -5, 1000000, 5);
            break;
        case 2:
            pts[v] = PT(INT32_MIN, INT32_MAX);
            break;
        case 3:
            pts[v] = PT(INT32_MAX, (int32_t)rng_below(&r, 16));
            break;
        default:
            pts[v] = PT((int32_t)rng_below(&r, 26), 16 + (int32_t)rng_below(&r, 100));
            break;
        }
    }
    struct repair_stats st = repair_checked(&g, pts, NULL, NULL);
    assert_int_equal(st.clamped, 30);
    graph_release(&g);
    /* huge bounds, nodes piled up beyond the top corner */
    rng_init(&r, 3, 0, RNG_PURPOSE_REPAIR);
    tk_random_graph(&g, &r, 30, 60, TK_L, TK_L);
    for (int v = 0; v < 30; v++)
        pts[v] = v % 2 ? PT(INT32_MAX, INT32_MAX) : PT(TK_L, TK_L);
    st = repair_checked(&g, pts, NULL, NULL);
    assert_int_equal(st.clamped, 15);
    graph_release(&g);
}

static void test_missing_coordinates(void **s)
{
    struct lcn_rng r;
    rng_init(&r, 4, 0, RNG_PURPOSE_REPAIR);
    struct lcn_graph g;
    tk_random_graph(&g, &r, 30, 50, 20, 20);
    struct lcn_pt pts[30];
    uint8_t has[30];
    /* none given: the garbage in pts must be ignored */
    for (int v = 0; v < 30; v++) {
        pts[v] = PT(INT32_MIN + v, -77);
        has[v] = 0;
    }
    struct repair_stats st = repair_checked(&g, pts, has, NULL);
    assert_int_equal(st.filled, 30);
    /* every other one given */
    for (int v = 0; v < 30; v++) {
        has[v] = v % 2;
        pts[v] = has[v] ? tk_rand_pt(&r, 0, 0, 20, 20) : PT(12345, -1);
    }
    st = repair_checked(&g, pts, has, NULL);
    assert_int_equal(st.filled, 15);
    graph_release(&g);
}

static void test_nodes_on_edges_and_chains(void **s)
{
    static const enum tk_layout kinds[] = {TK_LAY_ON_EDGES, TK_LAY_LINE, TK_LAY_FEW_LINES,
                                           TK_LAY_TINY_BOX};
    struct lcn_rng r;
    rng_init(&r, 5, 0, RNG_PURPOSE_REPAIR);
    for (size_t k = 0; k < LCN_ARRAY_LEN(kinds); k++) {
        for (int rep = 0; rep < 6; rep++) {
            struct lcn_graph g;
            int32_t n = 10 + 6 * rep;
            tk_random_graph(&g, &r, n, 2 * n, 30, 30);
            struct lcn_pt pts[64];
            tk_layout(&g, &r, kinds[k], pts); /* line layouts may leave the bounds too */
            struct lcn_report before;
            validate_layout(&g, pts, 0, &before);
            assert_false(before.valid);
            report_release(&before);
            struct repair_stats st = repair_checked(&g, pts, NULL, NULL);
            assert_true(st.moved + st.clamped > 0);
            graph_release(&g);
        }
    }
    /* a path drawn along one line, and its chords: every chord covers nodes */
    struct lcn_graph g;
    int32_t src[40], dst[40], m = 0;
    for (int v = 0; v + 1 < 20; v++) {
        src[m] = v;
        dst[m++] = v + 1;
    }
    for (int v = 0; v + 3 < 20; v += 3) {
        src[m] = v;
        dst[m++] = v + 3;
    }
    tk_graph(&g, 20, m, src, dst, 40, 3);
    struct lcn_pt pts[20];
    for (int v = 0; v < 20; v++)
        pts[v] = PT(2 * v, 1);
    repair_checked(&g, pts, NULL, NULL);
    for (int v = 0; v < 20; v++) /* the same on a diagonal */
        pts[v] = PT(2 * v, v / 7);
    repair_checked(&g, pts, NULL, NULL);
    graph_release(&g);
}

static void test_valid_input_unchanged(void **s)
{
    static const enum gen_family fams[] = {GEN_RANDOM, GEN_GRID, GEN_DENSE, GEN_LARGE, GEN_PLANTED};
    for (size_t f = 0; f < LCN_ARRAY_LEN(fams); f++) {
        struct gen_params p = {.family = fams[f], .n = 40, .seed = 8};
        struct lcn_graph g;
        struct lcn_pt *pts, *planted = NULL;
        char err[160];
        assert_int_equal(gen_instance(&p, &g, &pts, &planted, err, sizeof(err)), 0);
        struct lcn_pt out[40];
        struct repair_stats st = repair_checked(&g, pts, NULL, out);
        assert_memory_equal(out, pts, sizeof(out));
        assert_int_equal(st.moved, 0);
        assert_int_equal(st.clamped, 0);
        assert_int_equal(st.filled, 0);
        assert_int_equal(st.rounds, 1);
        assert_int_equal(st.total_shift, 0);
        if (planted) {
            repair_checked(&g, planted, NULL, out);
            assert_memory_equal(out, planted, sizeof(out));
        }
        /* all coordinates flagged as given: same */
        uint8_t has[40];
        memset(has, 1, sizeof(has));
        repair_checked(&g, pts, has, out);
        assert_memory_equal(out, pts, sizeof(out));
        free(pts);
        free(planted);
        graph_release(&g);
    }
}

static void test_too_small_bounds(void **s)
{
    struct lcn_graph g;
    tk_graph(&g, 5, 0, NULL, NULL, 1, 1);
    struct lcn_pt pts[5] = {PT(0, 0), PT(0, 0), PT(0, 0), PT(0, 0), PT(0, 0)};
    struct lcn_pt keep[5];
    memcpy(keep, pts, sizeof(pts));
    assert_int_equal(repair_layout(&g, pts, NULL, NULL), LCN_EINVAL);
    assert_memory_equal(pts, keep, sizeof(pts));
    graph_release(&g);
    /* enough points, but no valid layout exists: K4 on four collinear points
     * always has a node inside an edge; the failure is reported, not looped on */
    int32_t src[] = {0, 0, 0, 1, 1, 2}, dst[] = {1, 2, 3, 2, 3, 3};
    tk_graph(&g, 4, 6, src, dst, 3, 0);
    struct lcn_pt k4[4] = {PT(0, 0), PT(1, 0), PT(2, 0), PT(3, 7)};
    struct repair_stats st;
    assert_int_equal(repair_layout(&g, k4, NULL, &st), LCN_EINVAL);
    assert_true(geom_pt_eq(k4[3], PT(3, 0))); /* clamped */
    assert_int_equal(st.clamped, 1);
    graph_release(&g);
    /* the same on a long thin box: the ring search must not cost O(r) per ring
     * when only O(1) of each ring lies inside the bounds (regression: this
     * took ~10^11 steps) */
    tk_graph(&g, 4, 6, src, dst, 300000, 0);
    struct lcn_pt k4b[4] = {PT(150000, 0), PT(150001, 0), PT(150002, 0), PT(150003, 0)};
    int64_t t0 = lcn_now_ns();
    assert_int_equal(repair_layout(&g, k4b, NULL, &st), LCN_EINVAL);
    print_message("K4 on a 300000 x 0 box refused in %.3f s\n", (lcn_now_ns() - t0) / 1e9);
    graph_release(&g);
    /* one point, one node */
    tk_graph(&g, 1, 0, NULL, NULL, 0, 0);
    pts[0] = PT(5, -5);
    assert_int_equal(repair_layout(&g, pts, NULL, NULL), 0);
    assert_true(geom_pt_eq(pts[0], PT(0, 0)));
    graph_release(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_on_one_point),
        cmocka_unit_test(test_out_of_bounds),
        cmocka_unit_test(test_missing_coordinates),
        cmocka_unit_test(test_nodes_on_edges_and_chains),
        cmocka_unit_test(test_valid_input_unchanged),
        cmocka_unit_test(test_too_small_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
