/*
 * objective.h: the tuple from counts, the lexicographic order, and the
 * histogram kept under single-edge changes against recomputation.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "err.h"
#include "objective.h"
#include "testkit.h"

static struct lcn_obj mk(int32_t K, int32_t nK, int64_t phi, int64_t c)
{
    struct lcn_obj o = {K, nK, phi, c};
    return o;
}

static void expect_obj(const struct lcn_obj *o, int32_t K, int32_t nK, int64_t phi, int64_t c)
{
    assert_int_equal(o->K, K);
    assert_int_equal(o->nK, nK);
    assert_int_equal(o->Phi, phi);
    assert_int_equal(o->C, c);
}

static void test_from_counts(void **s)
{
    struct lcn_obj o;
    const int32_t ex[] = {3, 3, 1, 1};
    assert_int_equal(obj_from_counts(&o, ex, 4), 0);
    expect_obj(&o, 3, 2, 20, 4); /* the example of ARCHITECTURE.md */
    const int32_t order[] = {1, 3, 1, 3};
    assert_int_equal(obj_from_counts(&o, order, 4), 0);
    expect_obj(&o, 3, 2, 20, 4);
    assert_int_equal(obj_from_counts(&o, NULL, 0), 0);
    expect_obj(&o, 0, 0, 0, 0);
    const int32_t zeros[] = {0, 0, 0};
    assert_int_equal(obj_from_counts(&o, zeros, 3), 0);
    expect_obj(&o, 0, 3, 0, 0); /* every edge holds the maximum 0 */
    const int32_t big[] = {100000, 100000};
    assert_int_equal(obj_from_counts(&o, big, 2), 0);
    expect_obj(&o, 100000, 2, 20000000000ll, 100000); /* Phi beyond 32 bits */
    /* an odd sum is reported, and the tuple is still filled */
    const int32_t odd[] = {2, 1, 0};
    memset(&o, 0xff, sizeof(o));
    assert_int_equal(obj_from_counts(&o, odd, 3), LCN_ECORRUPT);
    expect_obj(&o, 2, 1, 5, 1);
}

/* K / ceil(2C/m): against the floor computed by hand, and the degenerate cases. */
static void test_balance_ratio(void **s)
{
    (void)s;
    /* counts 3 3 2 0: C = 4 pairs, floor ceil(8/4) = 2, K = 3 */
    int32_t c[4] = {3, 3, 2, 0};
    struct lcn_obj o;
    obj_from_counts(&o, c, 4);
    assert_int_equal(o.C, 4);
    assert_true(obj_balance_ratio(&o, 4) == 1.5);
    /* perfectly balanced: every edge at K = 2C/m */
    int32_t b[4] = {2, 2, 2, 2};
    obj_from_counts(&o, b, 4);
    assert_true(obj_balance_ratio(&o, 4) == 1.0);
    /* the floor rounds up: C = 1 over 4 edges -> floor 1 */
    int32_t one[4] = {1, 1, 0, 0};
    obj_from_counts(&o, one, 4);
    assert_true(obj_balance_ratio(&o, 4) == 1.0);
    int32_t none[3] = {0, 0, 0};
    obj_from_counts(&o, none, 3);
    assert_true(obj_balance_ratio(&o, 3) == 0.0);
    assert_true(obj_balance_ratio(&o, 0) == 0.0);
}

static void test_compare(void **s)
{
    struct lcn_obj base = mk(3, 2, 20, 4);
    struct lcn_obj same = mk(3, 2, 20, 4);
    assert_int_equal(obj_cmp(&base, &same), 0);
    /* each component decides when the earlier ones are equal ... */
    struct lcn_obj better[] = {mk(2, 2, 20, 4), mk(3, 1, 20, 4), mk(3, 2, 19, 4), mk(3, 2, 20, 3)};
    for (size_t i = 0; i < LCN_ARRAY_LEN(better); i++) {
        assert_int_equal(obj_cmp(&better[i], &base), -1);
        assert_int_equal(obj_cmp(&base, &better[i]), 1);
    }
    /* ... and outranks every later one */
    struct lcn_obj a = mk(2, 99, 9999, 999), b = mk(3, 1, 9, 1);
    assert_int_equal(obj_cmp(&a, &b), -1);
    a = mk(3, 1, 9999, 999);
    b = mk(3, 2, 9, 1);
    assert_int_equal(obj_cmp(&a, &b), -1);
    a = mk(3, 2, 19, 999);
    b = mk(3, 2, 20, 1);
    assert_int_equal(obj_cmp(&a, &b), -1);
    /* values beyond 32 bits compare as 64-bit */
    a = mk(1, 1, (int64_t)1 << 40, 0);
    b = mk(1, 1, ((int64_t)1 << 40) + 1, 0);
    assert_int_equal(obj_cmp(&a, &b), -1);
    char buf[64];
    struct lcn_obj ex = mk(3, 2, 20, 4);
    obj_format(&ex, buf, sizeof(buf));
    assert_string_equal(buf, "(3, 2, 20, 4)");
}

static void expect_hist_matches(const struct lcn_hist *hs, const int32_t *c, int32_t m)
{
    struct lcn_obj want, got;
    obj_from_counts(&want, c, m); /* the sum may be odd mid-way: compare fields */
    hist_obj(hs, &got);
    assert_int_equal(obj_cmp(&want, &got), 0);
    int64_t sum = 0;
    for (int32_t e = 0; e < m; e++)
        sum += c[e];
    assert_int_equal(hs->sum, sum);
    assert_int_equal(hs->phi, want.Phi);
    for (int32_t k = 0; k <= m; k++) {
        int32_t n = 0;
        for (int32_t e = 0; e < m; e++)
            n += c[e] == k;
        assert_int_equal(hs->h[k], n);
    }
}

static void test_hist_random_changes(void **s)
{
    struct lcn_rng r;
    rng_init(&r, 4, 0, RNG_PURPOSE_GEN);
    static const int32_t ms[] = {1, 2, 5, 40};
    for (size_t mi = 0; mi < LCN_ARRAY_LEN(ms); mi++) {
        int32_t m = ms[mi];
        int32_t *c = xmalloc(sizeof(int32_t) * (size_t)m);
        for (int32_t e = 0; e < m; e++)
            c[e] = (int32_t)rng_below(&r, (uint32_t)m); /* counts never exceed m - 1 */
        struct lcn_hist hs;
        hist_init(&hs, c, m);
        expect_hist_matches(&hs, c, m);
        for (int i = 0; i < 20000; i++) {
            int32_t e = (int32_t)rng_below(&r, (uint32_t)m), d;
            if (i % 10 == 0) /* occasionally a larger step */
                d = (int32_t)rng_below(&r, (uint32_t)m) - c[e];
            else
                d = rng_below(&r, 2) ? 1 : -1;
            if (c[e] + d < 0 || c[e] + d > m - 1)
                d = -d;
            if (c[e] + d < 0 || c[e] + d > m - 1)
                continue;
            hist_change(&hs, c[e], d);
            c[e] += d;
            if (i % 7 == 0 || m < 10)
                expect_hist_matches(&hs, c, m);
            else {
                struct lcn_obj want, got;
                obj_from_counts(&want, c, m);
                hist_obj(&hs, &got);
                assert_int_equal(obj_cmp(&want, &got), 0);
            }
        }
        /* drive everything to zero: K falls to 0, n_K = m */
        for (int32_t e = 0; e < m; e++) {
            hist_change(&hs, c[e], -c[e]);
            c[e] = 0;
        }
        struct lcn_obj o;
        hist_obj(&hs, &o);
        expect_obj(&o, 0, m, 0, 0);
        /* hist_copy gives an independent equal histogram */
        struct lcn_hist cp;
        hist_init(&cp, c, m);
        c[0] = m - 1;
        hist_change(&hs, 0, m - 1);
        hist_copy(&cp, &hs);
        expect_hist_matches(&cp, c, m);
        hist_change(&hs, m - 1, -(m - 1));
        expect_hist_matches(&cp, c, m);
        hist_release(&cp);
        hist_release(&hs);
        free(c);
    }
    struct lcn_hist empty;
    hist_init(&empty, NULL, 0);
    struct lcn_obj o;
    hist_obj(&empty, &o);
    expect_obj(&o, 0, 0, 0, 0);
    hist_release(&empty);
}

/* The maximum moves down through gaps in the histogram. */
static void test_hist_k_drops_through_gaps(void **s)
{
    int32_t c[10] = {9, 0, 2, 2}; /* the rest 0 */
    struct lcn_hist hs;
    hist_init(&hs, c, 10);
    struct lcn_obj o;
    hist_obj(&hs, &o);
    expect_obj(&o, 9, 1, 89, 6);
    hist_change(&hs, 9, -8); /* 9 -> 1: K falls past the empty 8..3 to 2 */
    hist_obj(&hs, &o);
    expect_obj(&o, 2, 2, 9, 2);
    hist_change(&hs, 2, 5); /* one edge to 7 */
    hist_obj(&hs, &o);
    expect_obj(&o, 7, 1, 54, 5);
    hist_release(&hs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_from_counts),
        cmocka_unit_test(test_balance_ratio),
        cmocka_unit_test(test_compare),
        cmocka_unit_test(test_hist_random_changes),
        cmocka_unit_test(test_hist_k_drops_through_gaps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
