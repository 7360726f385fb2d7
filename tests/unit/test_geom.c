/*
 * geom.h: exact predicates. Hand-made boundary fixtures, an exhaustive
 * comparison on a small lattice against a reference written differently
 * (parametric intersection with 128-bit products), and huge coordinates at
 * +-(2^30 - 1) where a double or int32 evaluation is provably wrong.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testkit.h"

typedef __int128 i128;

/* ---- reference predicates: parametric form, 128-bit, no orientation signs ---- */

static i128 cross(i128 ax, i128 ay, i128 bx, i128 by)
{
    return ax * by - ay * bx;
}

static int ref_on_closed(struct lcn_pt a, struct lcn_pt b, struct lcn_pt p)
{
    if (geom_pt_eq(a, b))
        return geom_pt_eq(a, p);
    if (cross((i128)b.x - a.x, (i128)b.y - a.y, (i128)p.x - a.x, (i128)p.y - a.y) != 0)
        return 0;
    return p.x >= LCN_MIN(a.x, b.x) && p.x <= LCN_MAX(a.x, b.x) && p.y >= LCN_MIN(a.y, b.y) &&
           p.y <= LCN_MAX(a.y, b.y);
}

enum ref_kind { REF_NONE, REF_PROPER, REF_TOUCH, REF_OVERLAP };

/* Classifies the intersection of closed segments ab and cd. */
static enum ref_kind ref_classify(struct lcn_pt a, struct lcn_pt b, struct lcn_pt c,
                                  struct lcn_pt d)
{
    if (geom_pt_eq(a, b) || geom_pt_eq(c, d)) {
        int m = geom_pt_eq(a, b) ? ref_on_closed(c, d, a) : ref_on_closed(a, b, c);
        return m ? REF_TOUCH : REF_NONE;
    }
    i128 rx = (i128)b.x - a.x, ry = (i128)b.y - a.y, sx = (i128)d.x - c.x, sy = (i128)d.y - c.y;
    i128 qx = (i128)c.x - a.x, qy = (i128)c.y - a.y;
    i128 den = cross(rx, ry, sx, sy);
    if (den != 0) {
        /* a + t r = c + u s with t = tn/den, u = un/den */
        i128 tn = cross(qx, qy, sx, sy), un = cross(qx, qy, rx, ry);
        if (den < 0) {
            den = -den;
            tn = -tn;
            un = -un;
        }
        if (tn < 0 || tn > den || un < 0 || un > den)
            return REF_NONE;
        return (tn > 0 && tn < den && un > 0 && un < den) ? REF_PROPER : REF_TOUCH;
    }
    if (cross(qx, qy, rx, ry) != 0)
        return REF_NONE; /* parallel, distinct lines */
    /* collinear: project c and d on r, compare with [0, |r|^2] */
    i128 rr = rx * rx + ry * ry;
    i128 t0 = qx * rx + qy * ry, t1 = ((i128)d.x - a.x) * rx + ((i128)d.y - a.y) * ry;
    i128 lo = t0 < t1 ? t0 : t1, hi = t0 < t1 ? t1 : t0;
    i128 L = lo > 0 ? lo : 0, H = hi < rr ? hi : rr;
    if (L > H)
        return REF_NONE;
    return L < H ? REF_OVERLAP : REF_TOUCH;
}

static int ref_on_interior(struct lcn_pt a, struct lcn_pt b, struct lcn_pt p)
{
    return !geom_pt_eq(a, b) && !geom_pt_eq(a, p) && !geom_pt_eq(b, p) && ref_on_closed(a, b, p);
}

static void check_against_ref(struct lcn_pt a, struct lcn_pt b, struct lcn_pt c, struct lcn_pt d)
{
    enum ref_kind k = ref_classify(a, b, c, d);
    assert_int_equal(geom_segments_meet(a, b, c, d), k != REF_NONE);
    assert_int_equal(geom_proper_cross(a, b, c, d), k == REF_PROPER);
    assert_int_equal(geom_collinear_overlap(a, b, c, d), k == REF_OVERLAP);
    assert_int_equal(geom_on_interior(a, b, c), ref_on_interior(a, b, c));
    i128 det = cross((i128)b.x - a.x, (i128)b.y - a.y, (i128)c.x - a.x, (i128)c.y - a.y);
    assert_true((i128)geom_det(a, b, c) == det);
    assert_int_equal(geom_orient(a, b, c), (det > 0) - (det < 0));
    assert_int_equal(geom_boxes_meet(a, b, c, d), geom_boxes_meet(c, d, a, b));
    /* symmetry of the predicates under swapping segments and endpoints */
    assert_int_equal(geom_segments_meet(a, b, c, d), geom_segments_meet(d, c, b, a));
    assert_int_equal(geom_proper_cross(a, b, c, d), geom_proper_cross(c, d, b, a));
    assert_int_equal(geom_collinear_overlap(a, b, c, d), geom_collinear_overlap(d, c, a, b));
}

/* ---- fixtures ---- */

static void test_proper_interior_crossing(void **s)
{
    struct lcn_pt a = PT(0, 0), b = PT(2, 2), c = PT(0, 2), d = PT(2, 0);
    assert_true(geom_segments_meet(a, b, c, d));
    assert_true(geom_proper_cross(a, b, c, d));
    assert_false(geom_collinear_overlap(a, b, c, d));
    /* crossing at a non-lattice point */
    assert_true(geom_proper_cross(PT(0, 0), PT(3, 1), PT(1, 1), PT(2, 0)));
    check_against_ref(a, b, c, d);
}

static void test_shared_endpoint(void **s)
{
    /* geometrically the segments meet at the shared point ... */
    struct lcn_pt o = PT(0, 0), x = PT(4, 0), y = PT(0, 4), z = PT(8, 0);
    assert_true(geom_segments_meet(o, x, o, y));
    assert_false(geom_proper_cross(o, x, o, y));
    /* ... even collinear and overlapping (o-x inside o-z) */
    assert_true(geom_collinear_overlap(o, x, o, z));
    /* ... but adjacent edges never count as crossing */
    int32_t src[] = {0, 0, 0}, dst[] = {1, 2, 3};
    struct lcn_graph g;
    tk_graph(&g, 4, 3, src, dst, 10, 10);
    struct lcn_pt pts[] = {o, x, y, z};
    int32_t c[3];
    crossings_full(&g, pts, c);
    for (int e = 0; e < 3; e++)
        assert_int_equal(c[e], 0);
    assert_int_equal(tk_check_counts(&g, pts, NULL), 0);
    graph_release(&g);
}

static void test_collinear_contact_at_point(void **s)
{
    struct lcn_pt a = PT(0, 0), b = PT(2, 2), c = PT(2, 2), d = PT(5, 5);
    assert_true(geom_segments_meet(a, b, c, d));
    assert_false(geom_proper_cross(a, b, c, d));
    assert_false(geom_collinear_overlap(a, b, c, d));
    /* vertical and horizontal variants */
    assert_true(geom_segments_meet(PT(3, 0), PT(3, 4), PT(3, 4), PT(3, 9)));
    assert_false(geom_collinear_overlap(PT(3, 0), PT(3, 4), PT(3, 9), PT(3, 4)));
    assert_true(geom_segments_meet(PT(0, 1), PT(4, 1), PT(8, 1), PT(4, 1)));
    assert_false(geom_collinear_overlap(PT(0, 1), PT(4, 1), PT(8, 1), PT(4, 1)));
    /* two distinct edges touching end to end are counted (on a valid layout it
     * cannot happen: the common point would hold two nodes) */
    int32_t src[] = {0, 2}, dst[] = {1, 3};
    struct lcn_graph g;
    tk_graph(&g, 4, 2, src, dst, 10, 10);
    struct lcn_pt pts[] = {a, b, c, d};
    assert_int_equal(tk_check_counts(&g, pts, NULL), 2);
    graph_release(&g);
}

static void test_collinear_overlap(void **s)
{
    /* horizontal, vertical, diagonal, containment, identical, reversed */
    assert_true(geom_collinear_overlap(PT(0, 0), PT(3, 0), PT(1, 0), PT(5, 0)));
    assert_true(geom_collinear_overlap(PT(2, 0), PT(2, 3), PT(2, 5), PT(2, 1)));
    assert_true(geom_collinear_overlap(PT(0, 0), PT(4, 4), PT(2, 2), PT(6, 6)));
    assert_true(geom_collinear_overlap(PT(0, 0), PT(6, 3), PT(2, 1), PT(4, 2)));
    assert_true(geom_collinear_overlap(PT(4, 2), PT(2, 1), PT(0, 0), PT(6, 3)));
    assert_true(geom_collinear_overlap(PT(1, 7), PT(3, 2), PT(1, 7), PT(3, 2)));
    assert_true(geom_collinear_overlap(PT(1, 7), PT(3, 2), PT(3, 2), PT(1, 7)));
    /* touching at one point or disjoint on the same line: no positive length */
    assert_false(geom_collinear_overlap(PT(0, 0), PT(2, 0), PT(2, 0), PT(5, 0)));
    assert_false(geom_collinear_overlap(PT(0, 0), PT(2, 0), PT(3, 0), PT(5, 0)));
    /* parallel but not collinear */
    assert_false(geom_collinear_overlap(PT(0, 0), PT(4, 0), PT(0, 1), PT(4, 1)));
    struct lcn_pt a = PT(0, 0), b = PT(3, 0), c = PT(1, 0), d = PT(5, 0);
    assert_true(geom_segments_meet(a, b, c, d));
    assert_false(geom_proper_cross(a, b, c, d));
    check_against_ref(a, b, c, d);
}

static void test_t_junction(void **s)
{
    struct lcn_pt a = PT(0, 0), b = PT(4, 0), c = PT(2, 0), d = PT(2, 3);
    assert_true(geom_segments_meet(a, b, c, d));
    assert_false(geom_proper_cross(a, b, c, d));
    assert_false(geom_collinear_overlap(a, b, c, d));
    assert_true(geom_on_interior(a, b, c));
    assert_false(geom_on_interior(c, d, a));
    /* the stem stopping one unit short does not touch */
    assert_false(geom_segments_meet(a, b, PT(2, 1), d));
    /* T-junction at a non-axis-parallel edge */
    assert_true(geom_segments_meet(PT(0, 0), PT(6, 4), PT(3, 2), PT(1, 5)));
    assert_true(geom_on_interior(PT(0, 0), PT(6, 4), PT(3, 2)));
    check_against_ref(a, b, c, d);
}

static void test_parallel_disjoint(void **s)
{
    assert_false(geom_segments_meet(PT(0, 0), PT(4, 0), PT(0, 1), PT(4, 1)));
    assert_false(geom_segments_meet(PT(0, 0), PT(4, 4), PT(1, 0), PT(5, 4)));
    assert_false(geom_segments_meet(PT(0, 0), PT(1, 1), PT(2, 2), PT(3, 3)));
    /* bounding boxes meet but the segments do not */
    assert_true(geom_boxes_meet(PT(0, 0), PT(4, 4), PT(3, 0), PT(4, 2)));
    assert_false(geom_segments_meet(PT(0, 0), PT(4, 4), PT(3, 0), PT(4, 2)));
    check_against_ref(PT(0, 0), PT(4, 4), PT(3, 0), PT(4, 2));
}

static void test_degenerate_segments(void **s)
{
    struct lcn_pt p = PT(1, 1), q = PT(1, 2), a = PT(0, 0), b = PT(2, 2);
    /* a point on a segment (interior and endpoint), off it, two points */
    assert_true(geom_segments_meet(p, p, a, b));
    assert_true(geom_segments_meet(a, b, p, p));
    assert_true(geom_segments_meet(a, a, a, b));
    assert_false(geom_segments_meet(q, q, a, b));
    assert_true(geom_segments_meet(p, p, p, p));
    assert_false(geom_segments_meet(p, p, q, q));
    /* collinear with the segment's line but beyond its end */
    assert_false(geom_segments_meet(PT(3, 3), PT(3, 3), a, b));
    /* never a proper crossing or an overlap; empty interior */
    assert_false(geom_proper_cross(p, p, a, b));
    assert_false(geom_collinear_overlap(p, p, a, b));
    assert_false(geom_collinear_overlap(a, b, p, p));
    assert_false(geom_on_interior(p, p, p));
    assert_false(geom_on_interior(a, a, p));
    assert_int_equal(geom_orient(p, p, q), 0);
    check_against_ref(p, p, a, b);
    check_against_ref(p, p, q, q);
}

/* Naive evaluations the exact predicates must beat. */
static int orient_double(struct lcn_pt a, struct lcn_pt b, struct lcn_pt c)
{
    /* each product rounded to double (volatile: no fused multiply-add) */
    volatile double l = ((double)b.x - a.x) * ((double)c.y - a.y);
    volatile double r = ((double)b.y - a.y) * ((double)c.x - a.x);
    double d = l - r;
    return (d > 0) - (d < 0);
}

static int orient_int32_wrapping(struct lcn_pt a, struct lcn_pt b, struct lcn_pt c)
{
    /* int32 products, wrapped modulo 2^32 (what an un-widened int32 test computes) */
    uint32_t l = (uint32_t)(b.x - a.x) * (uint32_t)(c.y - a.y);
    uint32_t r = (uint32_t)(b.y - a.y) * (uint32_t)(c.x - a.x);
    int32_t d = (int32_t)(l - r);
    return (d > 0) - (d < 0);
}

static void test_overflow_limit(void **s)
{
    const int32_t L = TK_L; /* 2^30 - 1 */
    /* det = 2L(2L-2) - (2L-1)^2 = -1: products near 2^62 differing by one */
    struct lcn_pt a = PT(-L, -L), b = PT(L, L - 1), c = PT(L - 1, L - 2);
    assert_int_equal(geom_det(a, b, c), -1);
    assert_int_equal(geom_orient(a, b, c), -1);
    assert_int_equal(orient_double(a, b, c), 0); /* the fixture defeats doubles */
    /* c is strictly right of ab: not on it, no touching */
    assert_false(geom_on_interior(a, b, c));
    struct lcn_pt far_right = PT(L, -L), far_left = PT(-L, L);
    assert_false(geom_segments_meet(a, b, c, far_right)); /* both right: no contact */
    assert_true(geom_segments_meet(a, b, c, far_left));
    assert_true(geom_proper_cross(a, b, c, far_left)); /* a double test sees a touch */
    check_against_ref(a, b, c, far_right);
    check_against_ref(a, b, c, far_left);
    /* the point just on the line is on the interior */
    assert_true(geom_on_interior(PT(-L, -L), PT(L, L), PT(L - 2, L - 2)));

    /* det = 4L = 2^32 - 4: an int32 product wraps and flips the sign */
    struct lcn_pt e = PT(-L, 0), f = PT(L, 0), g = PT(5, 2);
    assert_int_equal(geom_det(e, f, g), 4 * (int64_t)L);
    assert_int_equal(geom_orient(e, f, g), 1);
    assert_int_equal(orient_int32_wrapping(e, f, g), -1);
    assert_true(geom_segments_meet(e, f, g, PT(5, -2)));
    assert_false(geom_segments_meet(e, f, g, PT(-L, 1)));

    /* the largest determinants: 4L^2, the full range of both axes */
    assert_int_equal(geom_det(PT(-L, -L), PT(L, -L), PT(-L, L)), 4 * (int64_t)L * L);
    assert_int_equal(geom_det(PT(-L, L), PT(L, -L), PT(L, L)), 4 * (int64_t)L * L);
    assert_int_equal(geom_det(PT(L, L), PT(-L, L), PT(L, -L)), 4 * (int64_t)L * L);
    /* crossing diagonals of the full square, and their collinear overlap */
    assert_true(geom_proper_cross(PT(-L, -L), PT(L, L), PT(-L, L), PT(L, -L)));
    assert_true(geom_collinear_overlap(PT(-L, -L), PT(L, L), PT(L - 1, L - 1), PT(0, 0)));
    assert_false(geom_collinear_overlap(PT(-L, -L), PT(L, L - 1), PT(L - 1, L - 2), PT(0, 0)));
    /* coordinates too close for float: L and L-1 are the same float */
    assert_true((float)L == (float)(L - 1));
    assert_false(geom_segments_meet(PT(L - 1, -L), PT(L - 1, L), PT(L, -L), PT(L, L)));
    check_against_ref(PT(L - 1, -L), PT(L - 1, L), PT(L, -L), PT(L, L));
}

/* Every pair of segments (including degenerate) with endpoints in a 5x5 lattice. */
static void test_exhaustive_small_lattice(void **s)
{
    enum { S = 5 };
    struct lcn_pt p[S * S];
    for (int i = 0; i < S * S; i++)
        p[i] = PT(i % S, i / S);
    int64_t kinds[4] = {0};
    for (int a = 0; a < S * S; a++)
        for (int b = 0; b < S * S; b++)
            for (int c = 0; c < S * S; c++)
                for (int d = c; d < S * S; d++) {
                    check_against_ref(p[a], p[b], p[c], p[d]);
                    kinds[ref_classify(p[a], p[b], p[c], p[d])]++;
                }
    /* every outcome occurs many times */
    for (int k = 0; k < 4; k++)
        assert_true(kinds[k] > 1000);
}

/* Random segments at huge coordinates, including near-collinear ones. */
static void test_random_huge(void **s)
{
    struct lcn_rng r;
    rng_init(&r, 0x5eed, 1, RNG_PURPOSE_GEN);
    const int32_t L = TK_L;
    int64_t kinds[4] = {0};
    for (int i = 0; i < 200000; i++) {
        struct lcn_pt q[4];
        int mode = i % 4;
        for (int j = 0; j < 4; j++) {
            if (mode == 0) {
                q[j] = tk_rand_pt(&r, -L, -L, L, L);
            } else {
                /* on or one step off a long lattice line of direction (2,2)
                 * (mode 1), (2,1) (mode 2) or (1,0) (mode 3) */
                int64_t t = tk_rand_pt(&r, 0, 0, L, 0).x;
                int64_t x = -(int64_t)L + 2 * t, nudge = (int64_t)rng_below(&r, 3) - 1;
                int64_t y = mode == 1 ? x : (mode == 2 ? -(int64_t)L + t : 777);
                y += nudge;
                y = y < -L ? -L : (y > L ? L : y);
                q[j] = PT((int32_t)x, (int32_t)y);
            }
        }
        if (i % 7 == 0)
            q[2] = q[0]; /* shared endpoints */
        if (i % 11 == 0)
            q[3] = q[2]; /* degenerate */
        check_against_ref(q[0], q[1], q[2], q[3]);
        kinds[ref_classify(q[0], q[1], q[2], q[3])]++;
    }
    for (int k = 0; k < 4; k++)
        assert_true(kinds[k] > 100);
}

/*
 * geom_orient_small (32-bit) against geom_orient on [0, GEOM_SMALL]: the
 * corners and edges of that square (the largest products), near-collinear
 * triples and random ones.
 */
static void test_orient_small(void **s)
{
    (void)s;
    struct lcn_rng r;
    rng_init(&r, 0x0512, 1, RNG_PURPOSE_GEN);
    const int32_t M = GEOM_SMALL;
    const int32_t edge[] = {0, 1, 2, M / 2, M - 2, M - 1, M};
    int64_t signs[3] = {0};
    for (int a = 0; a < 7; a++)
        for (int b = 0; b < 7; b++)
            for (int c = 0; c < 7; c++)
                for (int d = 0; d < 7; d++)
                    for (int e = 0; e < 7; e++)
                        for (int f = 0; f < 7; f++) {
                            struct lcn_pt p = PT(edge[a], edge[b]), q = PT(edge[c], edge[d]),
                                          w = PT(edge[e], edge[f]);
                            int o = geom_orient(p, q, w);
                            assert_int_equal(geom_orient_small(p, q, w), o);
                            signs[o + 1]++;
                        }
    for (int i = 0; i < 300000; i++) {
        struct lcn_pt p = tk_rand_pt(&r, 0, 0, M, M), q = tk_rand_pt(&r, 0, 0, M, M), w;
        if (i % 2) {
            /* on or next to the line pq */
            int64_t t = rng_below(&r, 1001);
            w.x = (int32_t)(p.x + (q.x - p.x) * t / 1000) + (int32_t)rng_below(&r, 3) - 1;
            w.y = (int32_t)(p.y + (q.y - p.y) * t / 1000) + (int32_t)rng_below(&r, 3) - 1;
            w.x = w.x < 0 ? 0 : w.x > M ? M : w.x;
            w.y = w.y < 0 ? 0 : w.y > M ? M : w.y;
        } else {
            w = tk_rand_pt(&r, 0, 0, M, M);
        }
        int o = geom_orient(p, q, w);
        assert_int_equal(geom_orient_small(p, q, w), o);
        signs[o + 1]++;
    }
    for (int k = 0; k < 3; k++)
        assert_true(signs[k] > 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_proper_interior_crossing),
        cmocka_unit_test(test_shared_endpoint),
        cmocka_unit_test(test_collinear_contact_at_point),
        cmocka_unit_test(test_collinear_overlap),
        cmocka_unit_test(test_t_junction),
        cmocka_unit_test(test_parallel_disjoint),
        cmocka_unit_test(test_degenerate_segments),
        cmocka_unit_test(test_overflow_limit),
        cmocka_unit_test(test_exhaustive_small_lattice),
        cmocka_unit_test(test_random_huge),
        cmocka_unit_test(test_orient_small),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
