/* Differential tests: full vs grid vs delta (state), per edge. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "crossings.h"
#include "err.h"
#include "gen.h"
#include "rng.h"
#include "state.h"
#include "util.h"
#include "validate.h"

static void check_counts_equal(const struct lcn_graph *g, const struct lcn_pt *pts,
                               const int32_t *c)
{
    int32_t *full = xmalloc(sizeof(int32_t) * (size_t)(g->m + 1));
    int32_t *grid = xmalloc(sizeof(int32_t) * (size_t)(g->m + 1));
    int32_t *ind = xmalloc(sizeof(int32_t) * (size_t)(g->m + 1));
    crossings_full(g, pts, full);
    crossings_grid(g, pts, grid, 0);
    validate_counts(g, pts, ind);
    for (int32_t e = 0; e < g->m; e++) {
        assert_int_equal(full[e], grid[e]);
        assert_int_equal(full[e], ind[e]);
        if (c)
            assert_int_equal(full[e], c[e]);
    }
    free(full);
    free(grid);
    free(ind);
}

static void random_walk(enum gen_family fam, int32_t n, uint64_t seed, int moves)
{
    struct gen_params p = {.family = fam, .n = n, .seed = seed};
    struct lcn_graph g;
    struct lcn_pt *pts;
    char err[160];
    assert_int_equal(gen_instance(&p, &g, &pts, NULL, err, sizeof(err)), 0);
    struct lcn_report r;
    validate_layout(&g, pts, 10, &r);
    assert_true(r.valid);
    report_release(&r);
    check_counts_equal(&g, pts, NULL);

    struct lcn_state st;
    assert_int_equal(state_init(&st, &g, pts), 0);
    check_counts_equal(&g, st.pts, st.cnt);
    struct lcn_move mv;
    move_init(&mv);
    struct lcn_rng rng;
    rng_init(&rng, seed, 7, RNG_PURPOSE_MOVE);
    int committed = 0;
    for (int i = 0; i < moves; i++) {
        int32_t v = (int32_t)rng_below(&rng, (uint32_t)g.n);
        struct lcn_pt q;
        if (rng_below(&rng, 2)) {
            q.x = (int32_t)rng_below(&rng, (uint32_t)g.width + 1);
            q.y = (int32_t)rng_below(&rng, (uint32_t)g.height + 1);
        } else {
            q.x = st.pts[v].x + (int32_t)rng_below(&rng, 5) - 2;
            q.y = st.pts[v].y + (int32_t)rng_below(&rng, 5) - 2;
        }
        if (!state_propose(&st, v, q, &mv))
            continue;
        /* the claimed tuple must match an independent evaluation after applying */
        struct lcn_obj claimed = mv.obj;
        state_commit(&st, &mv);
        committed++;
        struct lcn_obj now;
        state_obj(&st, &now);
        assert_int_equal(obj_cmp(&claimed, &now), 0);
        if (i % 50 == 0) {
            check_counts_equal(&g, st.pts, st.cnt);
            validate_layout(&g, st.pts, 10, &r);
            assert_true(r.valid);
            assert_int_equal(obj_cmp(&r.obj, &now), 0);
            report_release(&r);
        }
    }
    assert_true(committed > 0);
    check_counts_equal(&g, st.pts, st.cnt);
    assert_int_equal(state_check(&st), 0);
    assert_int_equal(state_recount(&st), 0);
    move_release(&mv);
    state_release(&st);
    graph_release(&g);
    free(pts);
}

static void test_walk_random(void **s)
{
    for (uint64_t seed = 1; seed <= 5; seed++)
        random_walk(GEN_RANDOM, 40, seed, 2000);
}

static void test_walk_grid(void **s)
{
    for (uint64_t seed = 1; seed <= 5; seed++)
        random_walk(GEN_GRID, 100, seed, 2000);
}

static void test_walk_dense(void **s)
{
    random_walk(GEN_DENSE, 40, 3, 1000);
}

static void test_walk_large(void **s)
{
    random_walk(GEN_LARGE, 80, 4, 1000);
}

static void test_walk_planted(void **s)
{
    random_walk(GEN_PLANTED, 60, 5, 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_walk_random), cmocka_unit_test(test_walk_grid),
        cmocka_unit_test(test_walk_dense),  cmocka_unit_test(test_walk_large),
        cmocka_unit_test(test_walk_planted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
