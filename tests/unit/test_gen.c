/*
 * gen.h: every family gives a valid layout of the requested size; planted
 * drawings really respect their k (checked by the independent validator);
 * the output is a deterministic function of the parameters; bad parameters
 * are refused with a message.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "err.h"
#include "gen.h"
#include "testkit.h"

struct made {
    struct lcn_graph g;
    struct lcn_pt *pts, *planted;
    uint64_t gh, lh, ph;
};

static void make(const struct gen_params *p, struct made *out)
{
    char err[160] = "x";
    out->planted = NULL;
    int rc = gen_instance(p, &out->g, &out->pts, &out->planted, err, sizeof(err));
    if (rc)
        fprintf(stderr, "gen %s n=%d: %s\n", gen_family_name(p->family), p->n, err);
    assert_int_equal(rc, 0);
    assert_string_equal(err, "");
    out->gh = graph_hash(&out->g);
    out->lh = layout_hash(out->pts, out->g.n);
    out->ph = out->planted ? layout_hash(out->planted, out->g.n) : 0;
}

static void unmake(struct made *m)
{
    free(m->pts);
    free(m->planted);
    graph_release(&m->g);
}

static void expect_valid(const struct lcn_graph *g, const struct lcn_pt *pts, struct lcn_obj *obj)
{
    struct lcn_report r;
    assert_int_equal(validate_layout(g, pts, 4, &r), 0);
    assert_true(r.valid);
    for (int32_t v = 0; v < g->n; v++)
        assert_true(pts[v].x >= 0 && pts[v].y >= 0 && pts[v].x <= g->width &&
                    pts[v].y <= g->height);
    if (obj)
        *obj = r.obj;
    report_release(&r);
}

static void test_defaults(void **s)
{
    struct gen_params p = {.family = GEN_RANDOM, .n = 100};
    gen_defaults(&p);
    assert_true(p.m == 300 && p.width == 40 && p.height == 40 && p.k == 2);
    p = (struct gen_params){.family = GEN_GRID, .n = 2519};
    gen_defaults(&p);
    assert_true(p.m == 5038 && p.width == 204 && p.height == 204);
    p = (struct gen_params){.family = GEN_DENSE, .n = 200};
    gen_defaults(&p);
    assert_int_equal(p.m, 3000);
    p = (struct gen_params){.family = GEN_LARGE, .n = 10};
    gen_defaults(&p);
    assert_true(p.m == 20 && p.width == 250000 && p.height == 250000);
    p = (struct gen_params){.family = GEN_PLANTED, .n = 4, .m = 3, .width = 7, .k = 5};
    gen_defaults(&p);
    assert_true(p.m == 3 && p.width == 7 && p.height == 10 && p.k == 5);
    /* out-of-range n (refused later by gen_instance) still gives defined,
     * non-negative defaults (regression: NaN-to-int and int32 overflow) */
    static const int32_t wild[] = {-5, INT32_MIN, 1000000000, INT32_MAX};
    for (size_t i = 0; i < LCN_ARRAY_LEN(wild); i++) {
        for (int f = GEN_RANDOM; f <= GEN_PLANTED; f++) {
            p = (struct gen_params){.family = (enum gen_family)f, .n = wild[i]};
            gen_defaults(&p);
            assert_true(p.m >= 0 && p.m <= 15 * LCN_MAX_NODES);
            assert_true(p.width >= 10 && p.width <= LCN_COORD_LIMIT);
            assert_true(p.height >= 10 && p.height <= LCN_COORD_LIMIT);
        }
    }
    for (int f = GEN_RANDOM; f <= GEN_PLANTED; f++) {
        enum gen_family got;
        assert_int_equal(gen_family_parse(gen_family_name((enum gen_family)f), &got), 0);
        assert_int_equal(got, f);
    }
    enum gen_family got = GEN_GRID;
    assert_int_equal(gen_family_parse("Grid", &got), LCN_EINVAL);
    assert_int_equal(gen_family_parse("", &got), LCN_EINVAL);
    assert_int_equal(got, GEN_GRID);
    assert_string_equal(gen_family_name((enum gen_family)99), "?");
}

static void test_every_family_valid(void **s)
{
    static const struct {
        enum gen_family f;
        int32_t n, m, w, h;
    } cases[] = {
        {GEN_RANDOM, 2, 1, 0, 0},       {GEN_RANDOM, 50, 0, 0, 0},
        {GEN_RANDOM, 50, 100, 0, 0},    {GEN_RANDOM, 30, 435, 0, 0}, /* complete */
        {GEN_GRID, 9, 0, 0, 0},         {GEN_GRID, 50, 0, 0, 0},
        {GEN_GRID, 50, 60, 0, 0},       {GEN_GRID, 101, 0, 0, 0},
        {GEN_GRID, 400, 0, 90, 60},     {GEN_DENSE, 31, 0, 0, 0},
        {GEN_DENSE, 60, 0, 0, 0},       {GEN_DENSE, 40, 500, 0, 0},
        {GEN_LARGE, 60, 0, 0, 0},       {GEN_LARGE, 60, 100, 1000, 500},
        {GEN_LARGE, 40, 0, TK_L, TK_L}, {GEN_PLANTED, 50, 0, 0, 0},
        {GEN_PLANTED, 30, 40, 20, 20},
    };
    for (size_t i = 0; i < LCN_ARRAY_LEN(cases); i++) {
        for (uint64_t seed = 1; seed <= 3; seed++) {
            struct gen_params p = {.family = cases[i].f,
                                   .n = cases[i].n,
                                   .m = cases[i].m,
                                   .width = cases[i].w,
                                   .height = cases[i].h,
                                   .seed = seed};
            struct gen_params d = p;
            gen_defaults(&d);
            struct made mk;
            make(&p, &mk);
            assert_int_equal(mk.g.n, p.n);
            assert_int_equal(mk.g.m, d.m);
            if (p.m > 0)
                assert_int_equal(mk.g.m, p.m);
            assert_int_equal(mk.g.width, d.width);
            assert_int_equal(mk.g.height, d.height);
            expect_valid(&mk.g, mk.pts, NULL);
            assert_int_equal(mk.planted != NULL, p.family == GEN_PLANTED);
            unmake(&mk);
        }
    }
}

/* The grid family's edges join grid neighbours or nodes at most two rows or
 * columns apart, like the contest's sparse graphs. */
static void test_grid_family_shape(void **s)
{
    struct gen_params p = {.family = GEN_GRID, .n = 2519, .m = 4938, .seed = 1};
    struct made mk;
    make(&p, &mk);
    int32_t w = 51; /* ceil(sqrt(2519)) */
    int64_t grid_edges = 0;
    for (int32_t e = 0; e < mk.g.m; e++) {
        int32_t a = mk.g.eu[e], b = mk.g.ev[e];
        int32_t dx = abs(a % w - b % w), dy = abs(a / w - b / w);
        assert_true(dx <= 2 && dy <= 2);
        grid_edges += dx + dy == 1;
    }
    assert_true(grid_edges > mk.g.m * 8 / 10);
    assert_true(mk.g.max_degree <= 24);
    expect_valid(&mk.g, mk.pts, NULL);
    unmake(&mk);
}

static void test_planted_k(void **s)
{
    static const struct {
        int32_t n, m, k;
    } cases[] = {{40, 40, 1}, {50, 0, 2}, {60, 120, 3}, {80, 200, 5}, {30, 60, 0}};
    for (size_t i = 0; i < LCN_ARRAY_LEN(cases); i++) {
        for (uint64_t seed = 1; seed <= 3; seed++) {
            struct gen_params p = {.family = GEN_PLANTED,
                                   .n = cases[i].n,
                                   .m = cases[i].m,
                                   .k = cases[i].k,
                                   .seed = seed};
            struct gen_params d = p;
            gen_defaults(&d);
            struct made mk;
            make(&p, &mk);
            assert_non_null(mk.planted);
            struct lcn_obj obj;
            expect_valid(&mk.g, mk.planted, &obj);
            assert_true(obj.K <= d.k);
            /* recounted with every evaluator too */
            int32_t *c = xmalloc(sizeof(int32_t) * (size_t)mk.g.m);
            tk_check_counts(&mk.g, mk.planted, NULL);
            crossings_full(&mk.g, mk.planted, c);
            for (int32_t e = 0; e < mk.g.m; e++)
                assert_true(c[e] <= d.k);
            free(c);
            /* the starting layout is a scrambled one */
            assert_memory_not_equal(mk.pts, mk.planted, sizeof(struct lcn_pt) * (size_t)mk.g.n);
            expect_valid(&mk.g, mk.pts, NULL);
            unmake(&mk);
        }
    }
}

static void test_deterministic(void **s)
{
    for (int f = GEN_RANDOM; f <= GEN_PLANTED; f++) {
        struct gen_params p = {.family = (enum gen_family)f, .n = 64, .seed = 12345};
        struct made a, b, c;
        make(&p, &a);
        make(&p, &b);
        assert_true(a.gh == b.gh && a.lh == b.lh && a.ph == b.ph);
        assert_memory_equal(a.pts, b.pts, sizeof(struct lcn_pt) * 64);
        assert_memory_equal(a.g.eu, b.g.eu, sizeof(int32_t) * (size_t)a.g.m);
        assert_memory_equal(a.g.ev, b.g.ev, sizeof(int32_t) * (size_t)a.g.m);
        p.seed = 12346;
        make(&p, &c);
        assert_true(a.lh != c.lh);
        if (f != GEN_GRID && f != GEN_LARGE) /* grid-like graphs may repeat; layouts not */
            assert_true(a.gh != c.gh);
        unmake(&a);
        unmake(&b);
        unmake(&c);
    }
    /* the 64-bit seed is used whole */
    struct gen_params p = {.family = GEN_RANDOM, .n = 30, .seed = 1};
    struct made a, b;
    make(&p, &a);
    p.seed = 1 + (1ull << 32);
    make(&p, &b);
    assert_true(a.gh != b.gh);
    unmake(&a);
    unmake(&b);
}

static void test_refusals(void **s)
{
    static const struct gen_params bad[] = {
        {.family = GEN_RANDOM, .n = 1},
        {.family = GEN_RANDOM, .n = 0},
        {.family = GEN_RANDOM, .n = -5},
        {.family = GEN_RANDOM, .n = LCN_MAX_NODES + 1},
        {.family = GEN_RANDOM, .n = 10, .m = 46},               /* more than K10 */
        {.family = GEN_DENSE, .n = 30},                         /* 450 > 435 */
        {.family = GEN_GRID, .n = 10, .width = 2, .height = 2}, /* 9 points for 10 nodes */
        {.family = GEN_GRID, .n = 10, .width = 5, .height = 5}, /* 36 < 4 per node */
        {.family = GEN_LARGE, .n = 10, .width = LCN_COORD_LIMIT + 1},
        {.family = GEN_PLANTED, .n = 20, .m = 150, .k = 1}, /* cannot stay 1-plane */
    };
    for (size_t i = 0; i < LCN_ARRAY_LEN(bad); i++) {
        struct lcn_graph g;
        struct lcn_pt *pts = NULL, *planted = NULL;
        char err[160] = "";
        int rc = gen_instance(&bad[i], &g, &pts, &planted, err, sizeof(err));
        if (rc == 0)
            fprintf(stderr, "case %zu accepted\n", i);
        assert_int_equal(rc, LCN_ERANGE);
        size_t len = strlen(err);
        assert_true(len > 0);
        assert_true(err[0] >= 'a' && err[0] <= 'z');
        assert_true(err[len - 1] != '.');
        assert_null(pts);
        assert_null(planted);
    }
    /* a zero-length message buffer is not written */
    struct gen_params p = {.family = GEN_RANDOM, .n = 1};
    struct lcn_graph g;
    struct lcn_pt *pts = NULL;
    char guard = 'g';
    assert_int_equal(gen_instance(&p, &g, &pts, NULL, &guard, 0), LCN_ERANGE);
    assert_int_equal(guard, 'g');
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),          cmocka_unit_test(test_every_family_valid),
        cmocka_unit_test(test_grid_family_shape), cmocka_unit_test(test_planted_k),
        cmocka_unit_test(test_deterministic),     cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
