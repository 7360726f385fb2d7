/*
 * validate_pred.h - the oracle's own predicates (private to validate.c and
 * its slow twin validate_ref.c; no other module includes this).
 *
 * They share the problem's definitions with geom.h but none of its code:
 * written separately, with 128-bit products, so that they hold at the ends
 * of the int32 range (and 64-bit ones where every coordinate is within
 * VP_SMALL, exact there), and a bug in the engines' predicates cannot hide
 * here.
 */
#ifndef LCN_VALIDATE_PRED_H
#define LCN_VALIDATE_PRED_H

#include <stdint.h>

#include "graph.h"
#include "util.h"
#include "validate.h"

typedef __int128 lcn_vwide;

/* Sign of the cross product (b - a) x (c - a), with 128-bit products. */
static inline int vp_side(struct lcn_pt a, struct lcn_pt b, struct lcn_pt c)
{
    lcn_vwide l = (lcn_vwide)((int64_t)b.x - a.x) * (lcn_vwide)((int64_t)c.y - a.y);
    lcn_vwide r = (lcn_vwide)((int64_t)b.y - a.y) * (lcn_vwide)((int64_t)c.x - a.x);
    return l > r ? 1 : (l < r ? -1 : 0);
}

/* vp_side_small is exact when every coordinate lies in [-VP_SMALL, VP_SMALL]:
 * differences within 2^31, products within 2^62, in int64. */
#define VP_SMALL (1 << 30)

/* vp_side for points within VP_SMALL (the parser's limit, LCN_COORD_LIMIT,
 * is below it), with 64-bit products: the same sign, cheaper. */
static inline int vp_side_small(struct lcn_pt a, struct lcn_pt b, struct lcn_pt c)
{
    int64_t l = ((int64_t)b.x - a.x) * ((int64_t)c.y - a.y);
    int64_t r = ((int64_t)b.y - a.y) * ((int64_t)c.x - a.x);
    return (l > r) - (l < r);
}

static inline int vp_same(struct lcn_pt a, struct lcn_pt b)
{
    return a.x == b.x && a.y == b.y;
}

/* p strictly between a and b on the line through them (a != b, collinear given). */
static inline int vp_between_open(struct lcn_pt a, struct lcn_pt b, struct lcn_pt p)
{
    /* (p - a) . (b - p) > 0 exactly when p lies strictly inside ab */
    lcn_vwide dot = (lcn_vwide)((int64_t)p.x - a.x) * ((int64_t)b.x - p.x) +
                    (lcn_vwide)((int64_t)p.y - a.y) * ((int64_t)b.y - p.y);
    return dot > 0;
}

/* p on closed segment ab, given collinear */
static inline int vp_between_closed(struct lcn_pt a, struct lcn_pt b, struct lcn_pt p)
{
    lcn_vwide dot = (lcn_vwide)((int64_t)p.x - a.x) * ((int64_t)b.x - p.x) +
                    (lcn_vwide)((int64_t)p.y - a.y) * ((int64_t)b.y - p.y);
    return dot >= 0;
}

static inline int vp_node_on_edge_interior(struct lcn_pt a, struct lcn_pt b, struct lcn_pt p)
{
    if (vp_same(a, b))
        return 0;
    return vp_side(a, b, p) == 0 && vp_between_open(a, b, p);
}

/*
 * Closed segments ab and cd have a point in common, given s1 = side(a, b, c)
 * and s2 = side(a, b, d). When c and d lie strictly on one side of the line
 * ab (s1 * s2 > 0), or a and b strictly on one side of cd, no point of one
 * segment reaches the other's line: no common point.
 */
static inline int vp_meet_sides(struct lcn_pt a, struct lcn_pt b, struct lcn_pt c, struct lcn_pt d,
                                int s1, int s2)
{
    if (s1 * s2 > 0)
        return 0;
    int s3 = vp_side(c, d, a), s4 = vp_side(c, d, b);
    if (s3 * s4 > 0)
        return 0;
    if (s1 * s2 < 0 && s3 * s4 < 0)
        return 1;
    if (s1 == 0 && vp_between_closed(a, b, c))
        return 1;
    if (s2 == 0 && vp_between_closed(a, b, d))
        return 1;
    if (s3 == 0 && vp_between_closed(c, d, a))
        return 1;
    if (s4 == 0 && vp_between_closed(c, d, b))
        return 1;
    return 0;
}

static inline int vp_meet(struct lcn_pt a, struct lcn_pt b, struct lcn_pt c, struct lcn_pt d)
{
    return vp_meet_sides(a, b, c, d, vp_side(a, b, c), vp_side(a, b, d));
}

/* Collinear overlap along a positive length, given s1 = side(a, b, c), s2 = side(a, b, d). */
static inline int vp_overlap_sides(struct lcn_pt a, struct lcn_pt b, struct lcn_pt c,
                                   struct lcn_pt d, int s1, int s2)
{
    if (vp_same(a, b) || vp_same(c, d))
        return 0;
    if (s1 != 0 || s2 != 0)
        return 0;
    /* Positive-length overlap iff an endpoint of one lies strictly inside the
     * other, or both segments are the same segment. */
    if (vp_between_open(a, b, c) || vp_between_open(a, b, d) || vp_between_open(c, d, a) ||
        vp_between_open(c, d, b))
        return 1;
    return (vp_same(a, c) && vp_same(b, d)) || (vp_same(a, d) && vp_same(b, c));
}

static inline int vp_shares_endpoint(const struct lcn_graph *g, int32_t e, int32_t f)
{
    return g->eu[e] == g->eu[f] || g->eu[e] == g->ev[f] || g->ev[e] == g->eu[f] ||
           g->ev[e] == g->ev[f];
}

/* qsort order of violations: by kind, then a, then b (the listing order). */
static inline int vp_violation_cmp(const void *p, const void *q)
{
    const struct lcn_violation *x = p, *y = q;
    return lcn_cmp3(x->kind, x->a, x->b, y->kind, y->a, y->b);
}

#endif
