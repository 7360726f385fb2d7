/*
 * test_stop.c - the stop condition (common/stop.h) inside every phase of a
 * run's start: a stop that never fires changes nothing (the result equals
 * the plain function's, per edge), a fired cancel flag or a past deadline
 * makes each phase return its code instead of finishing. Graphs come from
 * the generator (dense: millions of crossings on its own layout).
 */
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
#include "layout.h"
#include "repair.h"
#include "stop.h"
#include "util.h"
#include "validate.h"

struct fx {
    struct lcn_graph g;
    struct lcn_pt *pts, *planted;
};

static void make(struct fx *f, enum gen_family fam, int32_t n, uint64_t seed)
{
    struct gen_params gp = {.family = fam, .n = n, .seed = seed};
    char err[160];
    assert_int_equal(gen_instance(&gp, &f->g, &f->pts, &f->planted, err, sizeof err), 0);
}

static void drop(struct fx *f)
{
    graph_release(&f->g);
    free(f->pts);
    free(f->planted);
}

static const atomic_int fired = 1, quiet = 0;

/* never fires: a deadline a day away and a clear flag */
static struct lcn_stop never(void)
{
    return (struct lcn_stop){lcn_now_ns() + 86400LL * 1000000000LL, &quiet, 0};
}

static void test_check(void **state)
{
    assert_int_equal(lcn_stop_check(NULL), 0);
    struct lcn_stop s = never();
    assert_int_equal(lcn_stop_check(&s), 0);
    s.cancel = &fired;
    assert_int_equal(lcn_stop_check(&s), LCN_ECANCELLED);
    s = (struct lcn_stop){lcn_now_ns() - 1, NULL, 0};
    assert_int_equal(lcn_stop_check(&s), LCN_EDEADLINE);
    s.deadline_ns = 0; /* none */
    assert_int_equal(lcn_stop_check(&s), 0);
    /* the flag counts only from cancel_from_ns on */
    s = (struct lcn_stop){0, &fired, lcn_now_ns() + 86400LL * 1000000000LL};
    assert_int_equal(lcn_stop_check(&s), 0);
    s.cancel_from_ns = lcn_now_ns() - 1;
    assert_int_equal(lcn_stop_check(&s), LCN_ECANCELLED);
    /* the tick reads the clock only once enough work was done */
    s = (struct lcn_stop){lcn_now_ns() - 1, NULL, 0};
    int64_t work = 0;
    assert_int_equal(lcn_stop_tick(&s, &work, 1), 0);
    assert_int_equal(lcn_stop_tick(&s, &work, LCN_STOP_EVERY), LCN_EDEADLINE);
    assert_int_equal(work, 0);
}

/* crossings_grid_stop: the same counts per edge as crossings_grid when the
 * stop never fires; its code when it has fired. */
static void test_crossings(void **state)
{
    for (int fam = 0; fam < 3; fam++) {
        struct fx f;
        make(&f, fam == 2 ? GEN_DENSE : (enum gen_family)fam, fam == 2 ? 600 : 3000, 11 + fam);
        int32_t *a = xmalloc(sizeof(int32_t) * (size_t)f.g.m);
        int32_t *b = xmalloc(sizeof(int32_t) * (size_t)f.g.m);
        uint64_t ta = crossings_grid(&f.g, f.pts, a, 0), tb = 0;
        struct lcn_stop s = never();
        assert_int_equal(crossings_grid_stop(&f.g, f.pts, b, 0, &s, &tb), 0);
        assert_int_equal(ta, tb);
        assert_memory_equal(a, b, sizeof(int32_t) * (size_t)f.g.m);
        s.cancel = &fired;
        assert_int_equal(crossings_grid_stop(&f.g, f.pts, b, 0, &s, &tb), LCN_ECANCELLED);
        s = (struct lcn_stop){lcn_now_ns() - 1, NULL, 0};
        assert_int_equal(crossings_grid_stop(&f.g, f.pts, b, 0, &s, &tb), LCN_EDEADLINE);
        free(a);
        free(b);
        drop(&f);
    }
}

/* validate_layout_stop: the same report as validate_layout (per edge, the
 * violations) when the stop never fires; its code when it has fired. */
static void test_validate(void **state)
{
    struct fx f;
    make(&f, GEN_DENSE, 600, 3);
    /* a few violations too: node 1 on node 0's point */
    f.pts[1] = f.pts[0];
    struct lcn_report a, b;
    assert_int_equal(validate_layout(&f.g, f.pts, 16, &a), 0);
    struct lcn_stop s = never();
    assert_int_equal(validate_layout_stop(&f.g, f.pts, 16, &s, &b), 0);
    assert_int_equal(a.valid, b.valid);
    assert_int_equal(a.total, b.total);
    assert_int_equal(a.listed, b.listed);
    assert_memory_equal(a.list, b.list, sizeof(*a.list) * (size_t)a.listed);
    assert_memory_equal(a.c, b.c, sizeof(int32_t) * (size_t)f.g.m);
    assert_int_equal(obj_cmp(&a.obj, &b.obj), 0);
    report_release(&b);
    s.cancel = &fired;
    assert_int_equal(validate_layout_stop(&f.g, f.pts, 16, &s, &b), LCN_ECANCELLED);
    assert_int_equal(b.valid, 0);
    report_release(&b);
    s = (struct lcn_stop){lcn_now_ns() - 1, NULL, 0};
    assert_int_equal(validate_layout_stop(&f.g, f.pts, 16, &s, &b), LCN_EDEADLINE);
    report_release(&b);
    report_release(&a);
    drop(&f);
}

/* repair and the start drawers: the same points when the stop never
 * fires; the stop's code when it has fired, for every kind. */
static void test_layouts(void **state)
{
    struct fx f;
    make(&f, GEN_RANDOM, 2000, 9);
    size_t bytes = sizeof(struct lcn_pt) * (size_t)f.g.n;
    struct lcn_pt *a = xmalloc(bytes), *b = xmalloc(bytes);
    /* a crowded start: every node in a small square, so the repair has work */
    for (int32_t v = 0; v < f.g.n; v++)
        f.pts[v] = (struct lcn_pt){f.pts[v].x / 4, f.pts[v].y / 4};
    memcpy(a, f.pts, bytes);
    memcpy(b, f.pts, bytes);
    struct lcn_stop s = never();
    assert_int_equal(repair_layout(&f.g, a, NULL, NULL), 0);
    assert_int_equal(repair_layout_stop(&f.g, b, NULL, NULL, &s), 0);
    assert_memory_equal(a, b, bytes);
    memcpy(b, f.pts, bytes);
    struct lcn_stop c = {0, &fired, 0};
    assert_int_equal(repair_layout_stop(&f.g, b, NULL, NULL, &c), LCN_ECANCELLED);

    for (int k = 0; k < LAYOUT_KINDS; k++) {
        assert_int_equal(layout_make(&f.g, (enum layout_kind)k, 5, f.pts, NULL, 0, NULL, a), 0);
        assert_int_equal(layout_make(&f.g, (enum layout_kind)k, 5, f.pts, NULL, 0, &s, b), 0);
        assert_memory_equal(a, b, bytes);
        assert_int_equal(layout_make(&f.g, (enum layout_kind)k, 5, f.pts, NULL, 0, &c, b),
                         LCN_ECANCELLED);
    }
    double *xy = xmalloc(sizeof(double) * 2 * (size_t)f.g.n);
    assert_int_equal(layout_pivot_mds_stop(&f.g, 3, &c, xy), LCN_ECANCELLED);
    free(xy);
    free(a);
    free(b);
    drop(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check),
        cmocka_unit_test(test_crossings),
        cmocka_unit_test(test_validate),
        cmocka_unit_test(test_layouts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
