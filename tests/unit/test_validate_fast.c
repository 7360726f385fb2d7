/*
 * The oracle's fast path (validate.c: horizontal strips, threads, canonical
 * listing) against its slow twin (validate_ref.c: the single x-sweep that
 * was the oracle before): identical reports (verdict, counts per kind,
 * total, the exact list for several caps, per-edge counts, tuple, return
 * code) and identical validate_counts, under the automatic tuning and under
 * forced thread, strip and chunk counts; on tiny canvases crowded with
 * shared, collinear and overlapping points, out-of-bounds and negative
 * coordinates, coordinates up to 2^30 and to the ends of the int32 range
 * (64-bit and 128-bit orientations), and on graphs large enough for the
 * automatic threads and strips, with long edges. And a stop that fires
 * while the threads sweep makes them give up with the stop's code.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "err.h"
#include "gen.h"
#include "stop.h"
#include "testkit.h"
#include "validate_ref.h"

/* Automatic, the single sweep, and splits far finer than any automatic
 * one (many strips, more threads than cores, items of one or two edges). */
static const struct validate_tuning tunings[] = {
    {0, 0, 0}, {1, 1, 0}, {1, 3, 1}, {2, 2, 1}, {3, 5, 2}, {4, 64, 3}, {2, 1000, 1}, {5, 7, 0},
};

static const int32_t caps[] = {0, 1, 2, 5, 17, 1000000};

/* Violations and crossings seen, so that each test can tell it tested something. */
struct seen {
    int64_t count[5], crossings, cases;
};

static void same_report(const struct lcn_report *want, const struct lcn_report *got, int32_t m)
{
    assert_int_equal(got->valid, want->valid);
    for (int k = 1; k <= 4; k++)
        assert_int_equal(got->count[k], want->count[k]);
    assert_int_equal(got->total, want->total);
    assert_int_equal(got->listed, want->listed);
    for (int32_t i = 0; i < want->listed; i++) {
        assert_int_equal(got->list[i].kind, want->list[i].kind);
        assert_int_equal(got->list[i].a, want->list[i].a);
        assert_int_equal(got->list[i].b, want->list[i].b);
    }
    if (m)
        assert_memory_equal(got->c, want->c, sizeof(int32_t) * (size_t)m);
    assert_int_equal(obj_cmp(&got->obj, &want->obj), 0);
}

/* validate_counts under every tuning against the twin. */
static void check_counts(const struct lcn_graph *g, const struct lcn_pt *pts,
                         const struct validate_tuning *ts, size_t nt, struct seen *seen)
{
    size_t sz = sizeof(int32_t) * (size_t)(g->m + 1);
    int32_t *want = xmalloc(sz), *got = xmalloc(sz);
    uint64_t tests = validate_counts_sweep(g, pts, want);
    assert_int_equal(validate_counts(g, pts, got), tests);
    assert_memory_equal(got, want, sizeof(int32_t) * (size_t)g->m);
    for (size_t t = 0; t < nt; t++) {
        memset(got, 0x5a, sz);
        assert_int_equal(validate_counts_tuned(g, pts, &ts[t], got), tests);
        assert_memory_equal(got, want, sizeof(int32_t) * (size_t)g->m);
    }
    for (int32_t e = 0; e < g->m; e++)
        seen->crossings += want[e];
    free(want);
    free(got);
}

/* The full report under every tuning and cap against the twin's. */
static void check_layout_with(const struct lcn_graph *g, const struct lcn_pt *pts,
                              const struct validate_tuning *ts, size_t nt, const int32_t *cs,
                              size_t nc, struct seen *seen)
{
    /* a stop that never fires: the threads tick and poll it all along */
    struct lcn_stop later = {lcn_now_ns() + 3600 * 1000000000LL, NULL, 0};
    for (size_t k = 0; k < nc; k++) {
        struct lcn_report want, got;
        int rc = validate_layout_sweep(g, pts, cs[k], NULL, &want);
        assert_int_equal(validate_layout(g, pts, cs[k], &got), rc);
        same_report(&want, &got, g->m);
        report_release(&got);
        for (size_t t = 0; t < nt; t++) {
            assert_int_equal(
                validate_layout_tuned(g, pts, cs[k], t % 2 ? &later : NULL, &ts[t], &got), rc);
            same_report(&want, &got, g->m);
            report_release(&got);
        }
        if (k == 0)
            for (int v = 1; v <= 4; v++)
                seen->count[v] += want.count[v];
        report_release(&want);
    }
    check_counts(g, pts, ts, nt, seen);
    seen->cases++;
}

static void check_layout(const struct lcn_graph *g, const struct lcn_pt *pts, struct seen *seen)
{
    check_layout_with(g, pts, tunings, LCN_ARRAY_LEN(tunings), caps, LCN_ARRAY_LEN(caps), seen);
}

/* Every testkit layout kind: tiny boxes, points on one line or three,
 * nodes on edges' midpoints, int32-scale and near-collinear huge points. */
static void test_testkit_layouts(void **state)
{
    (void)state;
    struct lcn_rng r;
    rng_init(&r, 0xfa57, 0, RNG_PURPOSE_GEN);
    struct seen seen = {0};
    for (int kind = 0; kind < TK_LAY_COUNT; kind++)
        for (int rep = 0; rep < 8; rep++) {
            struct lcn_graph g;
            int32_t n = 8 + 5 * rep;
            tk_random_graph(&g, &r, n, 3 * n, 10, 10);
            struct lcn_pt *pts = xmalloc(sizeof(*pts) * (size_t)n);
            tk_layout(&g, &r, (enum tk_layout)kind, pts);
            check_layout(&g, pts, &seen);
            free(pts);
            graph_release(&g);
        }
    for (int k = 1; k <= 4; k++)
        assert_true(seen.count[k] > 10);
    assert_true(seen.crossings > 1000);
}

/* Coordinates past 2^30, up to the ends of the int32 range, where the fast
 * path's 64-bit orientations would overflow and it must use the 128-bit
 * ones: uniform, on or next to the line y = x, and small with outliers;
 * and points at +-2^30 exactly, the largest the 64-bit path takes. */
static void test_int32_wide(void **state)
{
    (void)state;
    struct lcn_rng r;
    rng_init(&r, 0x3232, 0, RNG_PURPOSE_GEN);
    struct seen seen = {0};
    for (int rep = 0; rep < 24; rep++) {
        struct lcn_graph g;
        int32_t n = 10 + 4 * rep;
        tk_random_graph(&g, &r, n, 3 * n, TK_L, TK_L);
        struct lcn_pt *pts = xmalloc(sizeof(*pts) * (size_t)n);
        for (int32_t v = 0; v < n; v++) {
            struct lcn_pt q = tk_rand_pt(&r, INT32_MIN, INT32_MIN, INT32_MAX, INT32_MAX);
            if (rep % 3 == 1) /* y = x + {-1, 0, 1}, clamped */
                q.y = q.x == INT32_MIN || q.x == INT32_MAX ? q.x
                                                           : q.x + (int32_t)rng_below(&r, 3) - 1;
            if (rep % 3 == 2 && rng_below(&r, 4) != 0)
                q = tk_rand_pt(&r, -3, -3, 3, 3);
            if (rep % 4 == 3) { /* the 64-bit path's bound itself: products of 2^62 */
                static const int32_t at[] = {-(1 << 30), -(1 << 30) + 1, 0, (1 << 30) - 1, 1 << 30};
                q = PT(at[rng_below(&r, 5)], at[rng_below(&r, 5)]);
            }
            pts[v] = q;
        }
        check_layout(&g, pts, &seen);
        free(pts);
        graph_release(&g);
    }
    assert_true(seen.count[LCN_V1_OUT_OF_BOUNDS] > 100);
    assert_true(seen.crossings > 1000);
}

/* Points drawn from [x0, x0 + side) x [y0, y0 + side) for a graph on a
 * side - 2 square: out of bounds on every side when x0, y0 < 0, crowded. */
static void check_box(struct lcn_rng *r, int32_t n, int32_t m, int32_t x0, int32_t y0, int32_t side,
                      struct seen *seen)
{
    struct lcn_graph g;
    tk_random_graph(&g, r, n, m, LCN_MAX(side - 2, 0), LCN_MAX(side - 2, 0));
    struct lcn_pt *pts = xmalloc(sizeof(*pts) * (size_t)n);
    for (int32_t v = 0; v < n; v++)
        pts[v] = tk_rand_pt(r, x0, y0, x0 + side - 1, y0 + side - 1);
    check_layout(&g, pts, seen);
    free(pts);
    graph_release(&g);
}

static void test_crowded_and_negative(void **state)
{
    (void)state;
    struct lcn_rng r;
    rng_init(&r, 0xc40d, 0, RNG_PURPOSE_GEN);
    struct seen seen = {0};
    for (int rep = 0; rep < 12; rep++) {
        check_box(&r, 40, 120, -1, -1, 7, &seen);
        check_box(&r, 30, 90, -20, -3, 9, &seen);
        check_box(&r, 60, 100, -2, 1, 14, &seen);
    }
    /* one point for every node: V2 for each pair, nothing else but V1 */
    check_box(&r, 25, 60, 5, -7, 1, &seen);
    for (int k = 1; k <= 4; k++)
        assert_true(seen.count[k] > 10);
}

/* A k x k lattice (spacing 2, so that every edge's midpoint is a lattice
 * point) with its horizontal, vertical and every third diagonal edge. */
static struct lcn_pt *lattice(struct lcn_graph *g, int32_t k)
{
    int32_t n = k * k, m = 0;
    int32_t *src = xmalloc(sizeof(int32_t) * 3 * (size_t)n),
            *dst = xmalloc(sizeof(int32_t) * 3 * (size_t)n);
    struct lcn_pt *pts = xmalloc(sizeof(*pts) * (size_t)n);
    for (int32_t v = 0; v < n; v++) {
        int32_t x = v % k, y = v / k;
        pts[v] = PT(2 * x, 2 * y);
        if (x + 1 < k) {
            src[m] = v;
            dst[m++] = v + 1;
        }
        if (y + 1 < k) {
            src[m] = v;
            dst[m++] = v + k;
        }
        if (x + 1 < k && y + 1 < k && v % 3 == 0) {
            src[m] = v;
            dst[m++] = v + k + 1;
        }
    }
    tk_graph(g, n, m, src, dst, 2 * (k - 1), 2 * (k - 1));
    free(src);
    free(dst);
    return pts;
}

/* Adds violations of every kind to a layout, and throws a few nodes far
 * (their edges long). */
static void spoil(const struct lcn_graph *g, struct lcn_pt *pts, uint64_t seed)
{
    struct lcn_rng r;
    rng_init(&r, seed, 1, RNG_PURPOSE_GEN);
    for (int i = 0; i < 60; i++) {
        int32_t v = (int32_t)rng_below(&r, (uint32_t)g->n),
                w = (int32_t)rng_below(&r, (uint32_t)g->n);
        int32_t e = (int32_t)rng_below(&r, (uint32_t)g->m),
                f = (int32_t)rng_below(&r, (uint32_t)g->m);
        struct lcn_pt a = pts[g->eu[e]], b = pts[g->ev[e]];
        switch (i % 5) {
        case 0: /* V2 */
            pts[v] = pts[w];
            break;
        case 1: /* V3 where the midpoint is a lattice point */
            if ((a.x + b.x) % 2 == 0 && (a.y + b.y) % 2 == 0 && v != g->eu[e] && v != g->ev[e])
                pts[v] = PT((a.x + b.x) / 2, (a.y + b.y) / 2);
            break;
        case 2: /* V4: f drawn over e */
            pts[g->eu[f]] = a;
            pts[g->ev[f]] = b;
            break;
        case 3: /* V1 */
            pts[v] = PT(g->width + 1 + (int32_t)rng_below(&r, 5), -(int32_t)rng_below(&r, 3));
            break;
        default: /* long edges */
            pts[v] = tk_rand_pt(&r, 0, 0, g->width, g->height);
            break;
        }
    }
}

static struct lcn_pt *generated(struct lcn_graph *g, enum gen_family fam, int32_t n, uint64_t seed)
{
    struct gen_params gp = {.family = fam, .n = n, .seed = seed};
    char err[200];
    struct lcn_pt *pts;
    assert_int_equal(gen_instance(&gp, g, &pts, NULL, err, sizeof err), 0);
    return pts;
}

/* Graphs past the automatic thresholds: the automatic tuning takes several
 * strips and (with two cores or more) several threads. */
static void test_large_automatic(void **state)
{
    (void)state;
    static const struct validate_tuning few[] = {{0, 0, 0}, {2, 0, 0}, {3, 17, 100}, {1, 1, 0}};
    static const int32_t some[] = {0, 1, 10, 1000, 1000000};
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    struct seen seen = {0};
    for (int i = 0; i < 3; i++) {
        struct lcn_graph g;
        /* a lattice past the edge threshold; random and dense graphs: long edges */
        struct lcn_pt *pts = i == 0   ? lattice(&g, 110)
                             : i == 1 ? generated(&g, GEN_RANDOM, 800, 7)
                                      : generated(&g, GEN_DENSE, 200, 8);
        spoil(&g, pts, 9 + (uint64_t)i);
        struct validate_tuning at;
        validate_auto_tuning(&g, pts, &at);
        if (i == 0) {
            assert_true(g.m >= 20000);
            assert_int_equal(at.threads, cores < 2 ? 1 : LCN_MIN(cores, 16));
            assert_true(at.strips > 16);
        }
        assert_true(at.strips >= 1);
        check_layout_with(&g, pts, few, LCN_ARRAY_LEN(few), some, LCN_ARRAY_LEN(some), &seen);
        free(pts);
        graph_release(&g);
    }
    for (int k = 1; k <= 4; k++)
        assert_true(seen.count[k] > 0);
    assert_true(seen.crossings > 1000);
}

/* A stop that fires while the threads sweep a dense graph (about a second
 * of work): every thread gives up within a few ms and the code is the stop's. */
static void test_stop_in_threads(void **state)
{
    (void)state;
    struct gen_params gp = {.family = GEN_DENSE, .n = 1000, .seed = 3};
    struct lcn_graph g;
    struct lcn_pt *pts;
    char err[200];
    assert_int_equal(gen_instance(&gp, &g, &pts, NULL, err, sizeof err), 0);
    static const struct validate_tuning ts[] = {{0, 0, 0}, {4, 0, 0}, {3, 9, 5}};
    atomic_int flag = 1;
    for (size_t t = 0; t < LCN_ARRAY_LEN(ts); t++)
        for (int cancel = 0; cancel < 2; cancel++) {
            int64_t fire = lcn_now_ns() + 30000000; /* past the sorts, in the sweep */
            struct lcn_stop s = {cancel ? 0 : fire, cancel ? &flag : NULL, cancel ? fire : 0};
            struct lcn_report r;
            int rc = validate_layout_tuned(&g, pts, 10, &s, &ts[t], &r);
            int64_t late = lcn_now_ns() - fire;
            assert_int_equal(rc, cancel ? LCN_ECANCELLED : LCN_EDEADLINE);
            assert_int_equal(r.valid, 0);
            assert_true(late >= 0);
            assert_true(late < 150000000); /* the whole sweep takes several times that */
            report_release(&r);
        }
    /* the same stop, never reached: the full report */
    struct lcn_stop later = {lcn_now_ns() + 3600 * 1000000000LL, NULL, 0};
    struct lcn_report a, b;
    assert_int_equal(validate_layout_tuned(&g, pts, 10, &later, &ts[1], &a), 0);
    assert_int_equal(validate_layout_sweep(&g, pts, 10, NULL, &b), 0);
    same_report(&b, &a, g.m);
    assert_true(a.valid);
    report_release(&a);
    report_release(&b);
    free(pts);
    graph_release(&g);
}

int main(int argc, char **argv)
{
    if (argc > 1) /* one test by name, for timing */
        cmocka_set_test_filter(argv[1]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_testkit_layouts), cmocka_unit_test(test_crowded_and_negative),
        cmocka_unit_test(test_int32_wide),      cmocka_unit_test(test_large_automatic),
        cmocka_unit_test(test_stop_in_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
