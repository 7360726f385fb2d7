/*
 * validate_layout's violation list against a brute-force twin built on the
 * engines' predicates (geom.h): every violation listed, in (kind, a, b)
 * order, on layouts crowded with shared points, nodes on edges and
 * overlaps. Regression test for the listed-violation sort, which was an
 * insertion sort (quadratic: about 18 s for the 436,485 violations of a
 * contest graph's stored layout).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "geom.h"
#include "graph.h"
#include "rng.h"
#include "util.h"
#include "validate.h"

struct vlist {
    struct lcn_violation *v;
    size_t len, cap;
};

static void push(struct vlist *l, enum lcn_vkind k, int32_t a, int32_t b)
{
    xgrow((void **)&l->v, sizeof(*l->v), &l->cap, l->len + 1);
    l->v[l->len++] = (struct lcn_violation){k, a, b};
}

/* All violations, by definition, in (kind, a, b) order by construction. */
static void brute(const struct lcn_graph *g, const struct lcn_pt *p, struct vlist *l)
{
    for (int32_t v = 0; v < g->n; v++)
        if (p[v].x < 0 || p[v].y < 0 || p[v].x > g->width || p[v].y > g->height)
            push(l, LCN_V1_OUT_OF_BOUNDS, v, -1);
    for (int32_t a = 0; a < g->n; a++)
        for (int32_t b = a + 1; b < g->n; b++)
            if (geom_pt_eq(p[a], p[b]))
                push(l, LCN_V2_SHARED_POINT, a, b);
    for (int32_t w = 0; w < g->n; w++)
        for (int32_t e = 0; e < g->m; e++)
            if (w != g->eu[e] && w != g->ev[e] && geom_on_interior(p[g->eu[e]], p[g->ev[e]], p[w]))
                push(l, LCN_V3_NODE_ON_EDGE, w, e);
    for (int32_t e = 0; e < g->m; e++)
        for (int32_t f = e + 1; f < g->m; f++)
            if (geom_collinear_overlap(p[g->eu[e]], p[g->ev[e]], p[g->eu[f]], p[g->ev[f]]))
                push(l, LCN_V4_EDGE_OVERLAP, e, f);
}

static void random_graph(struct lcn_graph *g, int32_t n, int32_t m, int32_t side, uint64_t seed,
                         struct lcn_pt **pts)
{
    struct lcn_rng r;
    rng_init(&r, seed, 0, RNG_PURPOSE_GEN);
    int32_t *src = xmalloc(sizeof(int32_t) * (size_t)m),
            *dst = xmalloc(sizeof(int32_t) * (size_t)m);
    uint8_t *used = xcalloc((size_t)n * (size_t)n, 1);
    int32_t k = 0;
    while (k < m) {
        int32_t a = (int32_t)rng_below(&r, (uint32_t)n), b = (int32_t)rng_below(&r, (uint32_t)n);
        if (a == b || used[(size_t)a * (size_t)n + (size_t)b])
            continue;
        used[(size_t)a * (size_t)n + (size_t)b] = used[(size_t)b * (size_t)n + (size_t)a] = 1;
        src[k] = a;
        dst[k++] = b;
    }
    assert_int_equal(graph_init(g, n, m, src, dst, side - 2, side - 2, NULL), 0);
    *pts = xmalloc(sizeof(**pts) * (size_t)n);
    for (int32_t v = 0; v < n; v++) {
        /* a few points just outside the bounds on purpose (V1) */
        (*pts)[v].x = (int32_t)rng_below(&r, (uint32_t)side) - 1;
        (*pts)[v].y = (int32_t)rng_below(&r, (uint32_t)side) - 1;
    }
    free(src);
    free(dst);
    free(used);
}

static void check_case(int32_t n, int32_t m, int32_t side, uint64_t seed)
{
    struct lcn_graph g;
    struct lcn_pt *pts;
    random_graph(&g, n, m, side, seed, &pts);
    struct vlist want = {0};
    brute(&g, pts, &want);
    assert_true(want.len > 0);

    struct lcn_report r;
    assert_int_equal(validate_layout(&g, pts, (int32_t)want.len + 5, &r), 0);
    assert_int_equal(r.total, (int64_t)want.len);
    assert_int_equal(r.listed, (int32_t)want.len);
    int64_t per[5] = {0};
    for (size_t i = 0; i < want.len; i++) {
        per[want.v[i].kind]++;
        assert_int_equal(r.list[i].kind, want.v[i].kind);
        assert_int_equal(r.list[i].a, want.v[i].a);
        assert_int_equal(r.list[i].b, want.v[i].b);
    }
    for (int k = 1; k <= 4; k++)
        assert_int_equal(r.count[k], per[k]);
    assert_false(r.valid);
    report_release(&r);

    /* a short list is sorted and drawn from the full one */
    assert_int_equal(validate_layout(&g, pts, 7, &r), 0);
    assert_int_equal(r.listed, LCN_MIN(7, (int32_t)want.len));
    assert_int_equal(r.total, (int64_t)want.len);
    for (int32_t i = 1; i < r.listed; i++) {
        const struct lcn_violation *x = &r.list[i - 1], *y = &r.list[i];
        assert_true(x->kind < y->kind ||
                    (x->kind == y->kind && (x->a < y->a || (x->a == y->a && x->b < y->b))));
    }
    report_release(&r);
    free(want.v);
    free(pts);
    graph_release(&g);
}

static void test_crowded_small(void **state)
{
    for (uint64_t seed = 1; seed <= 20; seed++)
        check_case(40, 120, 7, seed);
}

static void test_crowded_large(void **state)
{
    /* about 10^5 listed violations */
    check_case(300, 3000, 12, 77);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crowded_small),
        cmocka_unit_test(test_crowded_large),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
