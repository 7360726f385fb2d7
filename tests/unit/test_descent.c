/*
 * test_descent.c - the descent start (layout.h, common/layout_descent.c):
 * its surrogate against a slow twin written out here from the formula
 * (value, per-edge crossing counts) and its analytic gradient against
 * central finite differences of that twin; validity of the snapped start on
 * generated families and on tiny and huge bounds; fewer exact crossings than
 * the stress start on dense generated graphs; the stop; determinism.
 */
#include <math.h>
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
#include "geom.h"
#include "layout.h"
#include "objective.h"
#include "rng.h"
#include "stop.h"
#include "util.h"
#include "validate.h"

static void make(enum gen_family fam, int32_t n, int32_t w, int32_t h, uint64_t seed,
                 struct lcn_graph *g)
{
    struct gen_params gp = {.family = fam, .n = n, .seed = seed, .width = w, .height = h};
    struct lcn_pt *pts = NULL;
    char err[160];
    assert_int_equal(gen_instance(&gp, g, &pts, NULL, err, sizeof err), 0);
    free(pts);
}

/* ---- the slow twin ------------------------------------------------------ */

static double orient(const double *a, const double *b, const double *c)
{
    return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]);
}

/* the segments with rounded end points meet */
static int rounded_cross(const double *p1, const double *p2, const double *q1, const double *q2)
{
    struct lcn_pt a = {(int32_t)lround(p1[0]), (int32_t)lround(p1[1])};
    struct lcn_pt b = {(int32_t)lround(p2[0]), (int32_t)lround(p2[1])};
    struct lcn_pt c = {(int32_t)lround(q1[0]), (int32_t)lround(q1[1])};
    struct lcn_pt d = {(int32_t)lround(q2[0]), (int32_t)lround(q2[1])};
    return geom_segments_meet(a, b, c, d);
}

static double slow_energy(const struct lcn_graph *g, const double *xy, double tau, double r0,
                          int32_t *c)
{
    double e = 0;
    if (c)
        memset(c, 0, sizeof(int32_t) * (size_t)g->m);
    for (int32_t i = 0; i < g->m; i++)
        for (int32_t j = i + 1; j < g->m; j++) {
            const double *p1 = &xy[2 * g->eu[i]], *p2 = &xy[2 * g->ev[i]];
            const double *q1 = &xy[2 * g->eu[j]], *q2 = &xy[2 * g->ev[j]];
            if (g->eu[i] == g->eu[j] || g->eu[i] == g->ev[j] || g->ev[i] == g->eu[j] ||
                g->ev[i] == g->ev[j])
                continue;
            /* boxes widened by tau / 2 each must overlap */
            if (fmin(p1[0], p2[0]) - tau / 2 > fmax(q1[0], q2[0]) + tau / 2 ||
                fmin(q1[0], q2[0]) - tau / 2 > fmax(p1[0], p2[0]) + tau / 2 ||
                fmin(p1[1], p2[1]) - tau / 2 > fmax(q1[1], q2[1]) + tau / 2 ||
                fmin(q1[1], q2[1]) - tau / 2 > fmax(p1[1], p2[1]) + tau / 2)
                continue;
            double lp = hypot(p2[0] - p1[0], p2[1] - p1[1]),
                   lq = hypot(q2[0] - q1[0], q2[1] - q1[1]);
            double a1 = orient(p1, p2, q1) / lp, a2 = orient(p1, p2, q2) / lp;
            double b1 = orient(q1, q2, p1) / lq, b2 = orient(q1, q2, p2) / lq;
            if (c && rounded_cross(p1, p2, q1, q2))
                c[i]++, c[j]++;
            e += 1 / (1 + exp(a1 * a2 / (tau * tau))) * 1 / (1 + exp(b1 * b2 / (tau * tau)));
        }
    for (int32_t i = 0; i < g->n; i++)
        for (int32_t j = i + 1; j < g->n; j++) {
            double d = hypot(xy[2 * i] - xy[2 * j], xy[2 * i + 1] - xy[2 * j + 1]);
            if (d < r0)
                e += (1 - d / r0) * (1 - d / r0);
        }
    return e;
}

static void test_gradient(void **state)
{
    (void)state;
    int checked = 0;
    for (uint64_t seed = 1; seed <= 20; seed++) {
        struct lcn_graph g;
        make(GEN_RANDOM, 7 + (int32_t)(seed % 5), 100, 100, seed, &g);
        struct lcn_rng r;
        rng_init(&r, seed, 0x44455343u, RNG_PURPOSE_INIT);
        int32_t n = g.n, m = g.m;
        double *xy = xmalloc(sizeof(double) * 2 * (size_t)n);
        double *grad = xmalloc(sizeof(double) * 2 * (size_t)n);
        int32_t *c = xmalloc(sizeof(int32_t) * (size_t)m),
                *c2 = xmalloc(sizeof(int32_t) * (size_t)m);
        for (int32_t i = 0; i < 2 * n; i++)
            xy[i] = rng_unit53(&r) * 100;
        double tau = 5 + 30 * rng_unit53(&r), r0 = 10 + 20 * rng_unit53(&r);
        double v = layout_descent_energy(&g, xy, tau, r0, grad, c);
        double vs = slow_energy(&g, xy, tau, r0, c2);
        assert_true(fabs(v - vs) <= 1e-9 * (1 + fabs(vs)));
        assert_memory_equal(c, c2, sizeof(int32_t) * (size_t)m);
        for (int32_t i = 0; i < 2 * n; i++) {
            double h = 1e-5, x = xy[i];
            xy[i] = x + h;
            double ep = slow_energy(&g, xy, tau, r0, NULL);
            xy[i] = x - h;
            double em = slow_energy(&g, xy, tau, r0, NULL);
            xy[i] = x;
            double fd = (ep - em) / (2 * h);
            if (fabs(fd - grad[i]) > 1e-5 * (1 + fabs(fd)))
                print_error("seed %d coord %d: fd %.9g analytic %.9g\n", (int)seed, i, fd, grad[i]);
            assert_true(fabs(fd - grad[i]) <= 1e-5 * (1 + fabs(fd)));
            checked++;
        }
        free(c2);
        free(c);
        free(grad);
        free(xy);
        graph_release(&g);
    }
    assert_true(checked > 200);
}

/* ---- the start ---------------------------------------------------------- */

static void assert_valid(const struct lcn_graph *g, const struct lcn_pt *pts)
{
    struct lcn_report r;
    validate_layout(g, pts, 4, &r);
    assert_true(r.valid);
    report_release(&r);
}

static void test_valid(void **state)
{
    (void)state;
    struct gen_params gps[] = {
        {.family = GEN_GRID, .n = 150, .seed = 2},
        {.family = GEN_RANDOM, .n = 60, .seed = 3, .width = 16, .height = 16},
        {.family = GEN_LARGE, .n = 300, .seed = 4},
        {.family = GEN_DENSE, .n = 50, .seed = 5},
        {.family = GEN_PLANTED, .n = 80, .seed = 6},
        /* tiny bounds: 121 points for 30 nodes (the generator's least is 4 a node) */
        {.family = GEN_RANDOM, .n = 30, .m = 60, .seed = 7, .width = 10, .height = 10},
        /* huge bounds */
        {.family = GEN_RANDOM, .n = 100, .seed = 8, .width = 1000000, .height = 1000000},
        {.family = GEN_GRID, .n = 400, .seed = 9, .width = 1000000, .height = 100},
    };
    for (size_t i = 0; i < LCN_ARRAY_LEN(gps); i++) {
        struct lcn_graph g;
        struct lcn_pt *pts = NULL, *out;
        char err[160];
        int rc = gen_instance(&gps[i], &g, &pts, NULL, err, sizeof(err));
        if (rc)
            print_error("case %d: %s\n", (int)i, err);
        assert_int_equal(rc, 0);
        out = xmalloc(sizeof(*out) * (size_t)g.n);
        assert_int_equal(layout_make(&g, LAYOUT_DESCENT, 11, NULL, NULL, 0, NULL, out), 0);
        assert_valid(&g, out);
        free(out);
        free(pts);
        graph_release(&g);
    }
}

static int64_t total_crossings(const struct lcn_graph *g, const struct lcn_pt *pts)
{
    int32_t *c = xmalloc(sizeof(int32_t) * (size_t)g->m);
    crossings_grid(g, pts, c, 0);
    struct lcn_obj o;
    obj_from_counts(&o, c, g->m);
    free(c);
    return o.C;
}

static void test_fewer_crossings(void **state)
{
    (void)state;
    int lower = 0, runs = 0;
    for (uint64_t seed = 1; seed <= 5; seed++) {
        struct lcn_graph g;
        make(GEN_DENSE, 40 + 10 * (int32_t)seed, 0, 0, seed, &g);
        struct lcn_pt *a = xmalloc(sizeof(*a) * (size_t)g.n),
                      *b = xmalloc(sizeof(*b) * (size_t)g.n);
        assert_int_equal(layout_make(&g, LAYOUT_STRESS, seed, NULL, NULL, 0, NULL, a), 0);
        assert_int_equal(layout_make(&g, LAYOUT_DESCENT, seed, NULL, NULL, 0, NULL, b), 0);
        assert_valid(&g, b);
        int64_t ca = total_crossings(&g, a), cb = total_crossings(&g, b);
        print_message("dense n=%d m=%d: stress C %lld, descent C %lld\n", g.n, g.m, (long long)ca,
                      (long long)cb);
        lower += cb < ca;
        runs++;
        free(a);
        free(b);
        graph_release(&g);
    }
    assert_true(lower >= runs - 1);
}

static const atomic_int fired = 1;

static void test_stop(void **state)
{
    (void)state;
    struct lcn_graph g;
    make(GEN_DENSE, 80, 0, 0, 3, &g);
    struct lcn_pt *out = xmalloc(sizeof(*out) * (size_t)g.n);
    struct lcn_stop past = {lcn_now_ns() - 1, NULL, 0}, cancel = {0, &fired, 0};
    int64_t t0 = lcn_now_ns();
    assert_int_equal(layout_make(&g, LAYOUT_DESCENT, 1, NULL, NULL, 0, &past, out), LCN_EDEADLINE);
    assert_int_equal(layout_make(&g, LAYOUT_DESCENT, 1, NULL, NULL, 0, &cancel, out),
                     LCN_ECANCELLED);
    assert_true(lcn_now_ns() - t0 < 50000000LL);

    /* the drawer itself: a fired stop drops the first iteration and keeps xy */
    double *xy = xmalloc(sizeof(double) * 2 * (size_t)g.n),
           *xy0 = xmalloc(sizeof(double) * 2 * (size_t)g.n);
    layout_pivot_mds(&g, 1, xy);
    for (int32_t i = 0; i < 2 * g.n; i++)
        xy[i] = fabs(xy[i]);
    memcpy(xy0, xy, sizeof(double) * 2 * (size_t)g.n);
    /* the stop is read once per LCN_STOP_EVERY units: a dense graph's first pass has more */
    assert_int_equal(layout_descent_stop(&g, 50, &cancel, xy, NULL), 0);
    assert_memory_equal(xy, xy0, sizeof(double) * 2 * (size_t)g.n);

    /* a soft deadline in the near future cuts the descent, which still returns a drawing */
    struct lcn_stop soon = {lcn_now_ns() + 200000000LL, NULL, 0};
    t0 = lcn_now_ns();
    int32_t it = layout_descent_stop(&g, 1000000, &soon, xy, NULL);
    assert_true(it >= 1 && it < 1000000);
    assert_true(lcn_now_ns() - t0 < 1000000000LL);
    free(xy0);
    free(xy);
    free(out);
    graph_release(&g);
}

static void test_deterministic(void **state)
{
    (void)state;
    struct lcn_graph g;
    make(GEN_GRID, 200, 0, 0, 12, &g);
    struct lcn_pt *a = xmalloc(sizeof(*a) * (size_t)g.n), *b = xmalloc(sizeof(*b) * (size_t)g.n);
    assert_int_equal(layout_make(&g, LAYOUT_DESCENT, 9, NULL, NULL, 0, NULL, a), 0);
    assert_int_equal(layout_make(&g, LAYOUT_DESCENT, 9, NULL, NULL, 0, NULL, b), 0);
    assert_memory_equal(a, b, sizeof(*a) * (size_t)g.n);
    enum layout_kind k;
    assert_int_equal(layout_kind_parse("descent", &k), 0);
    assert_int_equal(k, LAYOUT_DESCENT);
    assert_string_equal(layout_kind_name(LAYOUT_DESCENT), "descent");
    free(a);
    free(b);
    graph_release(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gradient),        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_fewer_crossings), cmocka_unit_test(test_stop),
        cmocka_unit_test(test_deterministic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
