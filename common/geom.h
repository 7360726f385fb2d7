/*
 * geom.h - exact integer predicates on grid points.
 *
 * Every predicate that decides validity or a crossing lives here and uses
 * integer arithmetic only: operands are widened to int64 before any
 * multiplication. Coordinates are limited to |x|, |y| <= LCN_COORD_LIMIT
 * (2^30 - 1; the parser rejects larger values), so a difference fits in 32
 * bits plus sign, a product of two differences is below 2^62 and the
 * difference of two such products (the orientation determinant) is below
 * 2^63: no intermediate value can overflow.
 *
 * The functions are LCN_HD static inline so the CUDA kernels compile the very
 * same definitions.
 */
#ifndef LCN_GEOM_H
#define LCN_GEOM_H

#include <stdint.h>

#include "hd.h"

#define LCN_COORD_LIMIT 1073741823 /* 2^30 - 1 */

struct lcn_pt {
    int32_t x, y;
};

/* Twice the signed area of triangle abc: > 0 when c is left of a->b. */
LCN_HD static inline int64_t geom_det(struct lcn_pt a, struct lcn_pt b, struct lcn_pt c)
{
    return ((int64_t)b.x - a.x) * ((int64_t)c.y - a.y) -
           ((int64_t)b.y - a.y) * ((int64_t)c.x - a.x);
}

/*
 * geom_orient in 32-bit arithmetic, exact when every coordinate lies in
 * [0, GEOM_SMALL] (each product at most 32767^2, their difference below
 * 2^31): the device solver's fast path on such grids; geom_orient is its
 * slow twin (test_geom).
 */
#define GEOM_SMALL 32767
LCN_HD static inline int geom_orient_small(struct lcn_pt a, struct lcn_pt b, struct lcn_pt c)
{
    int32_t d = (b.x - a.x) * (c.y - a.y) - (b.y - a.y) * (c.x - a.x);
    return (d > 0) - (d < 0);
}

/* Orientation of c relative to a->b: 1 left, -1 right, 0 collinear. */
LCN_HD static inline int geom_orient(struct lcn_pt a, struct lcn_pt b, struct lcn_pt c)
{
    int64_t d = geom_det(a, b, c);
    return (d > 0) - (d < 0);
}

LCN_HD static inline int geom_pt_eq(struct lcn_pt a, struct lcn_pt b)
{
    return a.x == b.x && a.y == b.y;
}

/* 1 when c lies in the closed bounding box of a and b. */
LCN_HD static inline int geom_in_box(struct lcn_pt a, struct lcn_pt b, struct lcn_pt c)
{
    int32_t x0 = a.x < b.x ? a.x : b.x, x1 = a.x < b.x ? b.x : a.x;
    int32_t y0 = a.y < b.y ? a.y : b.y, y1 = a.y < b.y ? b.y : a.y;
    return c.x >= x0 && c.x <= x1 && c.y >= y0 && c.y <= y1;
}

/* 1 when the closed bounding boxes of segments ab and cd intersect. */
LCN_HD static inline int geom_boxes_meet(struct lcn_pt a, struct lcn_pt b, struct lcn_pt c,
                                         struct lcn_pt d)
{
    int32_t ax0 = a.x < b.x ? a.x : b.x, ax1 = a.x < b.x ? b.x : a.x;
    int32_t cx0 = c.x < d.x ? c.x : d.x, cx1 = c.x < d.x ? d.x : c.x;
    if (ax1 < cx0 || cx1 < ax0)
        return 0;
    int32_t ay0 = a.y < b.y ? a.y : b.y, ay1 = a.y < b.y ? b.y : a.y;
    int32_t cy0 = c.y < d.y ? c.y : d.y, cy1 = c.y < d.y ? d.y : c.y;
    return !(ay1 < cy0 || cy1 < ay0);
}

/*
 * 1 when p lies on the relative interior of segment ab (on the segment and
 * different from both endpoints). A degenerate segment (a == b) has an empty
 * interior.
 */
LCN_HD static inline int geom_on_interior(struct lcn_pt a, struct lcn_pt b, struct lcn_pt p)
{
    if (geom_pt_eq(a, b) || geom_pt_eq(p, a) || geom_pt_eq(p, b))
        return 0;
    return geom_in_box(a, b, p) && geom_det(a, b, p) == 0;
}

/*
 * 1 when the closed segments ab and cd have at least one point in common.
 * This is the crossing predicate used for counting: two edges that share no
 * endpoint cross exactly when their segments intersect. On a valid layout
 * (V2, V3 hold) every such intersection is a proper crossing of interiors.
 */
LCN_HD static inline int geom_segments_meet(struct lcn_pt a, struct lcn_pt b, struct lcn_pt c,
                                            struct lcn_pt d)
{
    if (!geom_boxes_meet(a, b, c, d))
        return 0;
    int o1 = geom_orient(a, b, c), o2 = geom_orient(a, b, d);
    if (o1 * o2 > 0)
        return 0;
    int o3 = geom_orient(c, d, a), o4 = geom_orient(c, d, b);
    if (o3 * o4 > 0)
        return 0;
    if (o1 != 0 || o2 != 0 || o3 != 0 || o4 != 0)
        return 1; /* general position, or one endpoint touching the other segment */
    /* All four collinear: the boxes of collinear segments meet iff they meet. */
    return 1;
}

/* 1 when the interiors of ab and cd cross at a single point (strict signs). */
LCN_HD static inline int geom_proper_cross(struct lcn_pt a, struct lcn_pt b, struct lcn_pt c,
                                           struct lcn_pt d)
{
    return geom_orient(a, b, c) * geom_orient(a, b, d) < 0 &&
           geom_orient(c, d, a) * geom_orient(c, d, b) < 0;
}

/*
 * 1 when ab and cd are collinear and overlap along a positive length (their
 * common part is a segment, not a point). Degenerate segments never overlap
 * along a positive length.
 */
LCN_HD static inline int geom_collinear_overlap(struct lcn_pt a, struct lcn_pt b, struct lcn_pt c,
                                                struct lcn_pt d)
{
    if (geom_pt_eq(a, b) || geom_pt_eq(c, d))
        return 0;
    if (geom_det(a, b, c) != 0 || geom_det(a, b, d) != 0)
        return 0;
    /* Project on the dominant axis of ab; exact since all points are collinear. */
    int use_x = a.x != b.x;
    int64_t s0 = use_x ? a.x : a.y, s1 = use_x ? b.x : b.y;
    int64_t t0 = use_x ? c.x : c.y, t1 = use_x ? d.x : d.y;
    if (s0 > s1) {
        int64_t t = s0;
        s0 = s1;
        s1 = t;
    }
    if (t0 > t1) {
        int64_t t = t0;
        t0 = t1;
        t1 = t;
    }
    int64_t lo = s0 > t0 ? s0 : t0, hi = s1 < t1 ? s1 : t1;
    return hi > lo;
}

#endif
