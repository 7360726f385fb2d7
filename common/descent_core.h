/*
 * descent_core.h - the arithmetic of the crossing-surrogate descent
 * (layout_descent.c has the model), one definition for the CPU version and
 * the device's (gpu/descent.cu): the term of one edge pair and its
 * gradient, the rounded-crossing test, the Adam step of one coordinate.
 *
 * The two versions sum the terms in different orders (the CPU pair by pair
 * in sweep order, the device per edge row in a fixed tree), so they agree to
 * rounding, not bit for bit; each is deterministic on its own.
 */
#ifndef LCN_DESCENT_CORE_H
#define LCN_DESCENT_CORE_H

#include <math.h>
#include <stdint.h>

#include "geom.h"
#include "hd.h"

#define DESC_ETA       0.2 /* Adam's learning rate, in units of tau */
#define DESC_TAU0      0.5 /* the first tau, in mean edge lengths */
#define DESC_TAU1      0.02 /* the last tau, in mean edge lengths */
#define DESC_SPACING   0.4 /* r0 in units of sqrt(W H / n) */
#define DESC_CLIP      0.5 /* the largest move of a coordinate, in units of tau */
#define DESC_SPACING_W 1.0 /* weight of the spacing term per node pair */

LCN_HD static inline double desc_orient(const double *a, const double *b, const double *c)
{
    return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]);
}

/* Adds k * grad orient(a, b, c) to ga, gb, gc. */
LCN_HD static inline void desc_orient_grad(const double *a, const double *b, const double *c,
                                           double k, double *ga, double *gb, double *gc)
{
    /* d/dc = perp(b - a), d/da = perp(c - b), d/db = perp(a - c), perp(v) = (-vy, vx) */
    ga[0] += -k * (c[1] - b[1]);
    ga[1] += k * (c[0] - b[0]);
    gb[0] += -k * (a[1] - c[1]);
    gb[1] += k * (a[0] - c[0]);
    gc[0] += -k * (b[1] - a[1]);
    gc[1] += k * (b[0] - a[0]);
}

LCN_HD static inline struct lcn_pt desc_rounded(const double *p)
{
    struct lcn_pt q;
    q.x = (int32_t)floor(p[0] + 0.5);
    q.y = (int32_t)floor(p[1] + 0.5);
    return q;
}

/* Whether p1p2 and q1q2 meet (cross, touch or overlap) once every
 * coordinate is rounded to the nearest integer: on the grid a node on an
 * edge is a violation that repair moves away, often into many crossings, so
 * the count that picks the returned drawing charges it like a crossing.
 * The points are inside the bounds, so they fit int32. */
LCN_HD static inline int desc_meets_rounded(const double *p1, const double *p2, const double *q1,
                                            const double *q2)
{
    return geom_segments_meet(desc_rounded(p1), desc_rounded(p2), desc_rounded(q1),
                              desc_rounded(q2));
}

LCN_HD static inline double desc_sig(double u)
{
    return 1.0 / (1.0 + exp(-u));
}

/* u = -A1 A2 / (L2 tau2) of segment p1p2 against the points q1, q2, with
 * A1, A2 and L2 (the squared length) returned for the gradient. */
LCN_HD static inline double desc_side_u(const double *p1, const double *p2, const double *q1,
                                        const double *q2, double tau2, double *a1, double *a2,
                                        double *l2)
{
    *a1 = desc_orient(p1, p2, q1);
    *a2 = desc_orient(p1, p2, q2);
    double dx = p2[0] - p1[0], dy = p2[1] - p1[1];
    *l2 = dx * dx + dy * dy;
    return -(*a1) * (*a2) / (*l2 * tau2);
}

/* coef times the gradient of desc_side_u added to the four points' gradients. */
LCN_HD static inline void desc_side_grad(const double *p1, const double *p2, const double *q1,
                                         const double *q2, double tau2, double a1, double a2,
                                         double l2, double coef, double *gp1, double *gp2,
                                         double *gq1, double *gq2)
{
    /* u = -P / (l2 tau2), P = a1 a2: du = -(dP l2 - P dl2) / (l2^2 tau2) */
    double kP = -coef / (l2 * tau2);
    double kL = coef * a1 * a2 / (l2 * l2 * tau2);
    desc_orient_grad(p1, p2, q1, kP * a2, gp1, gp2, gq1);
    desc_orient_grad(p1, p2, q2, kP * a1, gp1, gp2, gq2);
    double dx = p2[0] - p1[0], dy = p2[1] - p1[1];
    gp2[0] += kL * 2 * dx;
    gp2[1] += kL * 2 * dy;
    gp1[0] -= kL * 2 * dx;
    gp1[1] -= kL * 2 * dy;
}

/*
 * The term S = sig(ua) sig(ub) of the non-adjacent edges p1p2 and q1q2 at
 * scale tau2 = tau^2, its gradient added to gp1, gp2, gq1, gq2 (2 doubles
 * each). A point-like edge has no direction to push along: term 0, no
 * gradient.
 */
LCN_HD static inline double desc_pair(const double *p1, const double *p2, const double *q1,
                                      const double *q2, double tau2, double *gp1, double *gp2,
                                      double *gq1, double *gq2)
{
    double a1, a2, lp, b1, b2, lq;
    double ua = desc_side_u(p1, p2, q1, q2, tau2, &a1, &a2, &lp);
    double ub = desc_side_u(q1, q2, p1, p2, tau2, &b1, &b2, &lq);
    if (!(lp > 0) || !(lq > 0))
        return 0;
    double sa = desc_sig(ua), sb = desc_sig(ub);
    double ca = sb * sa * (1 - sa), cb = sa * sb * (1 - sb);
    if (ca != 0)
        desc_side_grad(p1, p2, q1, q2, tau2, a1, a2, lp, ca, gp1, gp2, gq1, gq2);
    if (cb != 0)
        desc_side_grad(q1, q2, p1, p2, tau2, b1, b2, lq, cb, gq1, gq2, gp1, gp2);
    return sa * sb;
}

/* Whether two widened edge boxes (xmin, xmax, ymin, ymax) overlap: the
 * pairs the descent visits. */
LCN_HD static inline int desc_boxes_meet(const double *bi, const double *bj)
{
    return bj[0] <= bi[1] && bi[0] <= bj[1] && bj[2] <= bi[3] && bi[2] <= bj[3];
}

/*
 * The spacing term of nodes p and q (node ids i, j) within r0: its value,
 * and the gradient with respect to p in gp (the one of q is its negative).
 * 0 beyond r0.
 */
LCN_HD static inline double desc_spacing(const double *p, const double *q, int32_t i, int32_t j,
                                         double r0, double *gp)
{
    double dx = p[0] - q[0], dy = p[1] - q[1], d2 = dx * dx + dy * dy;
    gp[0] = gp[1] = 0;
    if (d2 >= r0 * r0)
        return 0;
    double d = sqrt(d2);
    if (d < 1e-9 * r0) {
        /* coincident: apart along a direction fixed by the ids (i < j) */
        int32_t lo = i < j ? i : j, hi = i < j ? j : i;
        double a = 2.399963 * (double)(lo + 7 * hi);
        dx = i < j ? cos(a) : -cos(a);
        dy = i < j ? sin(a) : -sin(a);
        d = 1;
    }
    double t = 1 - fmin(1.0, sqrt(d2) / r0);
    double k = -2 * DESC_SPACING_W * t / (r0 * d);
    gp[0] = k * dx;
    gp[1] = k * dy;
    return DESC_SPACING_W * t * t;
}

/* One Adam step of coordinate x with gradient g: moments m1, m2 updated,
 * b1t = 0.9^t, b2t = 0.99^t for step t >= 1; the step is clipped to clip
 * and the result to [0, hi]. */
LCN_HD static inline double desc_adam(double x, double g, double *m1, double *m2, double b1t,
                                      double b2t, double lr, double clip, double hi)
{
    *m1 = 0.9 * *m1 + 0.1 * g;
    *m2 = 0.99 * *m2 + 0.01 * g * g;
    double mh = *m1 / (1 - b1t), vh = *m2 / (1 - b2t);
    double step = vh > 0 ? lr * mh / sqrt(vh) : 0;
    step = fmax(-clip, fmin(clip, step));
    return fmax(0.0, fmin(hi, x - step));
}

#endif
