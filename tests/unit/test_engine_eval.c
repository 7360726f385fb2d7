/*
 * The SCAN evaluator (state.h) against the GRID evaluator and the oracles:
 * per proposal the verdict (and its reason), the change list as a set and
 * the tuple; after commits, the per-edge counts against crossings_full.
 * Best-of-W style bursts of proposals for one node exercise the cached
 * before-move half.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "crossings.h"
#include "gen.h"
#include "rng.h"
#include "state.h"
#include "util.h"
#include "validate.h"

/* Expands a move's change list into a dense per-edge delta (d must be zeroed). */
static void dense(const struct lcn_move *mv, int32_t *d)
{
    for (int32_t i = 0; i < mv->n; i++) {
        assert_int_equal(d[mv->edge[i]], 0); /* each edge listed once */
        assert_true(mv->d[i] != 0);
        d[mv->edge[i]] = mv->d[i];
    }
}

static void same_move(const struct lcn_graph *g, const struct lcn_move *a, const struct lcn_move *b,
                      int32_t *da, int32_t *db)
{
    assert_int_equal(a->why, b->why);
    if (a->why != STATE_OK)
        return;
    assert_int_equal(a->n, b->n);
    assert_int_equal(obj_cmp(&a->obj, &b->obj), 0);
    memset(da, 0, sizeof(int32_t) * (size_t)g->m);
    memset(db, 0, sizeof(int32_t) * (size_t)g->m);
    dense(a, da);
    dense(b, db);
    assert_memory_equal(da, db, sizeof(int32_t) * (size_t)g->m);
}

static void check_counts(const struct lcn_graph *g, const struct lcn_state *st)
{
    int32_t *full = xmalloc(sizeof(int32_t) * (size_t)(g->m + 1));
    crossings_full(g, st->pts, full);
    assert_memory_equal(full, st->cnt, sizeof(int32_t) * (size_t)g->m);
    free(full);
    assert_int_equal(state_check(st), 0);
}

/* state_edge_partners on both evaluators against a brute-force list. */
static void check_partners(const struct lcn_graph *g, struct lcn_state *a, struct lcn_state *b,
                           struct lcn_rng *r)
{
    int32_t *pa = xmalloc(sizeof(int32_t) * (size_t)(g->m + 1));
    int32_t *pb = xmalloc(sizeof(int32_t) * (size_t)(g->m + 1));
    int32_t *want = xmalloc(sizeof(int32_t) * (size_t)(g->m + 1));
    for (int t = 0; t < 5 && g->m > 0; t++) {
        int32_t e = (int32_t)rng_below(r, (uint32_t)g->m), k = 0;
        for (int32_t f = 0; f < g->m; f++)
            if (!graph_adjacent(g, e, f) &&
                geom_segments_meet(a->pts[g->eu[e]], a->pts[g->ev[e]], a->pts[g->eu[f]],
                                   a->pts[g->ev[f]]))
                want[k++] = f;
        assert_int_equal(k, a->cnt[e]);
        assert_int_equal(state_edge_partners(a, e, pa), k);
        assert_int_equal(state_edge_partners(b, e, pb), k);
        assert_memory_equal(pa, want, sizeof(int32_t) * (size_t)k);
        assert_memory_equal(pb, want, sizeof(int32_t) * (size_t)k);
    }
    for (int32_t f = 0; f < g->m; f++)
        assert_int_equal(b->acc[f], 0); /* the scratch is idle again */
    free(pa);
    free(pb);
    free(want);
}

static struct lcn_pt draw_point(struct lcn_rng *r, const struct lcn_graph *g, struct lcn_pt p,
                                int32_t rad)
{
    struct lcn_pt q;
    switch (rng_below(r, 4)) {
    case 0: /* anywhere, including a little outside the bounds */
        q.x = (int32_t)rng_below(r, (uint32_t)g->width + 3) - 1;
        q.y = (int32_t)rng_below(r, (uint32_t)g->height + 3) - 1;
        break;
    case 1: /* next door: many collinear and occupied cases on small grids */
        q.x = p.x + (int32_t)rng_below(r, 5) - 2;
        q.y = p.y + (int32_t)rng_below(r, 5) - 2;
        break;
    default:
        q.x = p.x + (int32_t)rng_below(r, 2 * (uint32_t)rad + 1) - rad;
        q.y = p.y + (int32_t)rng_below(r, 2 * (uint32_t)rad + 1) - rad;
        break;
    }
    return q;
}

/* verdicts seen, by reason, since the last reset */
static int reasons[5];
/* >= 0: cache the sides of only this many neighbours (exercises the fallback) */
static int32_t force_side_rows = -1;

static void walk(const struct gen_params *gp, int moves, int burst)
{
    struct lcn_graph g;
    struct lcn_pt *pts;
    char err[160];
    assert_int_equal(gen_instance(gp, &g, &pts, NULL, err, sizeof(err)), 0);
    struct lcn_state a, b;
    assert_int_equal(state_init(&a, &g, pts), 0);
    assert_int_equal(state_init(&b, &g, pts), 0);
    state_set_evaluator(&b, STATE_EVAL_SCAN);
    if (force_side_rows >= 0 && force_side_rows < b.sides_rows)
        b.sides_rows = force_side_rows;
    assert_string_equal(state_evaluator_name(&a), "grid-delta");
    assert_string_equal(state_evaluator_name(&b), "scan-delta");
    struct lcn_move *ma = xmalloc(sizeof(*ma) * (size_t)burst);
    struct lcn_move *mb = xmalloc(sizeof(*mb) * (size_t)burst);
    for (int w = 0; w < burst; w++) {
        move_init(&ma[w]);
        move_init(&mb[w]);
    }
    int32_t *da = xmalloc(sizeof(int32_t) * (size_t)(g.m + 1));
    int32_t *db = xmalloc(sizeof(int32_t) * (size_t)(g.m + 1));
    struct lcn_rng r;
    rng_init(&r, gp->seed, 99, RNG_PURPOSE_MOVE);
    int32_t rad = LCN_MAX(2, LCN_MAX(g.width, g.height) / 8);
    int valid = 0, invalid = 0, commits = 0;
    for (int i = 0; i < moves; i++) {
        int32_t v = (int32_t)rng_below(&r, (uint32_t)g.n);
        int pick = -1;
        for (int w = 0; w < burst; w++) {
            struct lcn_pt q = draw_point(&r, &g, a.pts[v], rad);
            int ra = state_propose(&a, v, q, &ma[w]);
            int rb = state_propose(&b, v, q, &mb[w]);
            assert_int_equal(ra, rb);
            assert_int_equal(mb[w].why, state_check_move(&b, v, q));
            same_move(&g, &ma[w], &mb[w], da, db);
            reasons[mb[w].why]++;
            if (ra) {
                valid++;
                if (pick < 0 || rng_below(&r, 2))
                    pick = w;
            } else {
                invalid++;
            }
        }
        if (pick >= 0 && rng_below(&r, 3) != 0) {
            state_commit(&a, &ma[pick]);
            state_commit(&b, &mb[pick]);
            commits++;
            struct lcn_obj oa, ob;
            state_obj(&a, &oa);
            state_obj(&b, &ob);
            assert_int_equal(obj_cmp(&oa, &ob), 0);
            assert_int_equal(obj_cmp(&oa, &ma[pick].obj), 0);
        }
        if (i % 97 == 0) {
            assert_memory_equal(a.pts, b.pts, sizeof(struct lcn_pt) * (size_t)g.n);
            check_counts(&g, &b);
            check_partners(&g, &a, &b, &r);
            struct lcn_report rep;
            validate_layout(&g, b.pts, 4, &rep);
            assert_true(rep.valid);
            report_release(&rep);
        }
    }
    check_counts(&g, &a);
    check_counts(&g, &b);
    assert_int_equal(state_recount(&b), 0);
    assert_true(valid > 0 && invalid > 0 && commits > 0);
    /* a clone starts equal and evolves like the original */
    struct lcn_state c;
    state_clone(&c, &b);
    assert_string_equal(state_evaluator_name(&c), "scan-delta");
    assert_memory_equal(c.pts, b.pts, sizeof(struct lcn_pt) * (size_t)g.n);
    assert_memory_equal(c.cnt, b.cnt, sizeof(int32_t) * (size_t)g.m);
    for (int i = 0; i < 50; i++) {
        int32_t v = (int32_t)rng_below(&r, (uint32_t)g.n);
        struct lcn_pt q = draw_point(&r, &g, a.pts[v], rad);
        int ra = state_propose(&a, v, q, &ma[0]);
        assert_int_equal(ra, state_propose(&c, v, q, &mb[0]));
        same_move(&g, &ma[0], &mb[0], da, db);
        if (ra) {
            state_commit(&a, &ma[0]);
            state_commit(&c, &mb[0]);
        }
    }
    check_counts(&g, &c);
    state_release(&c);
    /* reset keeps the structure-of-arrays copy in step */
    assert_int_equal(state_reset(&b, pts), 0);
    assert_int_equal(state_reset(&a, pts), 0);
    for (int i = 0; i < 50; i++) {
        int32_t v = (int32_t)rng_below(&r, (uint32_t)g.n);
        struct lcn_pt q = draw_point(&r, &g, a.pts[v], rad);
        assert_int_equal(state_propose(&a, v, q, &ma[0]), state_propose(&b, v, q, &mb[0]));
        same_move(&g, &ma[0], &mb[0], da, db);
    }
    for (int w = 0; w < burst; w++) {
        move_release(&ma[w]);
        move_release(&mb[w]);
    }
    free(ma);
    free(mb);
    free(da);
    free(db);
    state_release(&a);
    state_release(&b);
    graph_release(&g);
    free(pts);
}

static void test_scan_random(void **s)
{
    for (uint64_t seed = 1; seed <= 4; seed++) {
        struct gen_params gp = {.family = GEN_RANDOM, .n = 40, .seed = seed};
        walk(&gp, 600, 1 + (int)(seed % 4));
    }
}

static void test_scan_tiny_bounds(void **s)
{
    /* few points per node: many occupied points, many collinear triples */
    memset(reasons, 0, sizeof(reasons));
    for (uint64_t seed = 1; seed <= 4; seed++) {
        struct gen_params gp = {
            .family = GEN_GRID, .n = 30, .width = 11, .height = 11, .seed = seed};
        walk(&gp, 800, 4);
    }
    for (int k = STATE_OK; k <= STATE_EDGE_ON_NODE; k++)
        assert_true(reasons[k] > 0); /* every verdict was compared at least once */
}

static void test_scan_dense(void **s)
{
    struct gen_params gp = {.family = GEN_DENSE, .n = 40, .seed = 5};
    walk(&gp, 300, 4);
    /* the neighbour-sides cache holding only some rows (large graphs) */
    for (int32_t rows = 0; rows <= 3; rows += 3) {
        force_side_rows = rows;
        walk(&gp, 200, 4);
    }
    force_side_rows = -1;
}

static void test_scan_planted(void **s)
{
    struct gen_params gp = {.family = GEN_PLANTED, .n = 60, .seed = 6};
    walk(&gp, 500, 2);
}

static void test_scan_wide_bounds(void **s)
{
    /* bounds above 32767 take the int64 kernels; right at the limit the int32 ones */
    struct gen_params big = {.family = GEN_LARGE, .n = 80, .seed = 7};
    walk(&big, 500, 4);
    struct gen_params edge = {
        .family = GEN_RANDOM, .n = 40, .width = 32767, .height = 32767, .seed = 8};
    walk(&edge, 500, 4);
    struct gen_params over = {
        .family = GEN_RANDOM, .n = 40, .width = 32768, .height = 100, .seed = 9};
    walk(&over, 500, 4);
    struct gen_params huge = {.family = GEN_RANDOM,
                              .n = 30,
                              .width = LCN_COORD_LIMIT,
                              .height = LCN_COORD_LIMIT,
                              .seed = 10};
    walk(&huge, 300, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scan_random),      cmocka_unit_test(test_scan_tiny_bounds),
        cmocka_unit_test(test_scan_dense),       cmocka_unit_test(test_scan_planted),
        cmocka_unit_test(test_scan_wide_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
