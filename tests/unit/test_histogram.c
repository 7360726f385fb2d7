/* server/histogram.c: bucket placement at and around the bounds, +Inf, sum and
 * count, and the exposition text byte for byte. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "server/histogram.h"

static const double bounds3[] = {0.001, 0.5, 10};

/* A value equal to a bound belongs to that bound's bucket ("le"); the
 * next double above it to the next bucket; past the last bound, +Inf. */
static void test_placement(void **state)
{
    (void)state;
    struct histogram h;
    histogram_init(&h, bounds3, 3);
    histogram_observe(&h, -1);                 /* below everything: first bucket */
    histogram_observe(&h, 0);                  /* first */
    histogram_observe(&h, 0.001);              /* first: equal to its bound */
    histogram_observe(&h, 0.0011);             /* second */
    histogram_observe(&h, 0.5);                /* second */
    histogram_observe(&h, 10);                 /* third */
    histogram_observe(&h, 10.000000000000002); /* +Inf: just above the last bound */
    histogram_observe(&h, 1e9);                /* +Inf */
    assert_int_equal(h.buckets[0], 3);
    assert_int_equal(h.buckets[1], 2);
    assert_int_equal(h.buckets[2], 1);
    assert_int_equal(h.buckets[3], 2);
    assert_int_equal(h.count, 8);
    double sum = -1 + 0 + 0.001 + 0.0011 + 0.5 + 10 + 10.000000000000002 + 1e9;
    assert_true(h.sum == sum);
    /* init empties a used histogram, here with the last bound cut off */
    histogram_init(&h, bounds3, 2);
    assert_int_equal(h.count, 0);
    assert_true(h.sum == 0);
    histogram_observe(&h, 3); /* above 0.5, now the last bound: +Inf */
    assert_int_equal(h.buckets[2], 1);
    assert_int_equal(h.buckets[0] + h.buckets[1], 0);
}

static void test_empty_text(void **state)
{
    (void)state;
    struct histogram h;
    histogram_init(&h, bounds3, 3);
    struct sbuf b = {0};
    histogram_write(&b, &h, "x_seconds", "");
    assert_string_equal(b.p, "x_seconds_bucket{le=\"0.001\"} 0\n"
                             "x_seconds_bucket{le=\"0.5\"} 0\n"
                             "x_seconds_bucket{le=\"10\"} 0\n"
                             "x_seconds_bucket{le=\"+Inf\"} 0\n"
                             "x_seconds_sum 0\n"
                             "x_seconds_count 0\n");
    free(b.p);
}

/* Buckets are cumulative, +Inf equals count, labels come before le, and
 * numbers are written in their shortest exact form. */
static void test_text(void **state)
{
    (void)state;
    static const double bounds[] = {0.0001, 0.00025, 1, 86400};
    struct histogram h;
    histogram_init(&h, bounds, 4);
    histogram_observe(&h, 0.0001);
    histogram_observe(&h, 0.2);
    histogram_observe(&h, 0.1);
    histogram_observe(&h, 90000);
    struct sbuf b = {0};
    histogram_write_head(&b, "lcn_t_seconds", "Time of t.");
    histogram_write(&b, &h, "lcn_t_seconds", "route=\"/jobs/{id}\",method=\"GET\"");
    assert_string_equal(
        b.p, "# HELP lcn_t_seconds Time of t.\n"
             "# TYPE lcn_t_seconds histogram\n"
             "lcn_t_seconds_bucket{route=\"/jobs/{id}\",method=\"GET\",le=\"0.0001\"} 1\n"
             "lcn_t_seconds_bucket{route=\"/jobs/{id}\",method=\"GET\",le=\"0.00025\"} 1\n"
             "lcn_t_seconds_bucket{route=\"/jobs/{id}\",method=\"GET\",le=\"1\"} 3\n"
             "lcn_t_seconds_bucket{route=\"/jobs/{id}\",method=\"GET\",le=\"86400\"} 3\n"
             "lcn_t_seconds_bucket{route=\"/jobs/{id}\",method=\"GET\",le=\"+Inf\"} 4\n"
             "lcn_t_seconds_sum{route=\"/jobs/{id}\",method=\"GET\"} 90000.3001\n"
             "lcn_t_seconds_count{route=\"/jobs/{id}\",method=\"GET\"} 4\n");
    free(b.p);
}

/* A sum that %.15g cannot represent exactly is written with more digits,
 * so that it reads back as the same double. */
static void test_sum_exact(void **state)
{
    (void)state;
    struct histogram h;
    histogram_init(&h, bounds3, 3);
    histogram_observe(&h, 0.1);
    histogram_observe(&h, 0.2);
    struct sbuf b = {0};
    histogram_write(&b, &h, "s", "");
    assert_non_null(strstr(b.p, "\ns_sum 0.30000000000000004\ns_count 2\n"));
    free(b.p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_placement),
        cmocka_unit_test(test_empty_text),
        cmocka_unit_test(test_text),
        cmocka_unit_test(test_sum_exact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
