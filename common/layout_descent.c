/*
 * layout_descent.c - the "descent" starting layout (layout.h): gradient
 * descent on a smooth surrogate of the total crossing count.
 *
 * For two non-adjacent edges p1p2 and q1q2 let A1 = orient(p1,p2,q1),
 * A2 = orient(p1,p2,q2), B1 = orient(q1,q2,p1), B2 = orient(q1,q2,p2)
 * (twice the signed areas) and Lp, Lq the edge lengths. The segments cross
 * properly iff A1 A2 < 0 and B1 B2 < 0. With the signed distances
 * a_i = A_i / Lp and b_i = B_i / Lq the pair's term is
 *
 *     S = sig(-a1 a2 / tau^2) * sig(-b1 b2 / tau^2),
 *
 * which tends to the crossing indicator as tau -> 0 and is smooth for
 * tau > 0 (the exact gradient, normalisations included, is computed here;
 * the unit test holds it to finite differences). tau is a length: the
 * descent anneals it geometrically from half the mean edge length to a
 * fiftieth of it (never under one grid unit), so early iterations see
 * deep crossings (whose sigmoids saturate at small tau) and late ones sharpen
 * the count. Only pairs whose bounding boxes, each widened by tau / 2,
 * overlap contribute (a sort-and-sweep on x): sparse drawings are cheap,
 * dense ones cost O(m^2) per iteration.
 *
 * A spacing term keeps nodes apart: w (1 - d / r0)^2 for each node pair
 * closer than r0 (a sweep on x as well), r0 = 0.4 sqrt(W H / n), at least
 * one grid unit. The step is Adam's (beta1 0.9, beta2 0.99) with a
 * learning rate of 0.2 tau, so the step length follows the annealed scale
 * whatever the canvas (100 x 100 or 10^6 x 10^6); each coordinate moves at
 * most 0.5 tau an iteration and is clamped to the bounds.
 *
 * Every iteration's pass also counts, at no extra cost, the exact crossings
 * per edge of the drawing rounded to integer points (the grid it will be
 * snapped to), touching segments counted as crossing (nodes that round onto
 * one point are not seen); the drawing
 * with the fewest crossings (then the least max per edge) by that count is
 * what the descent returns, so
 * it is never worse than its start by that measure (repair may still move
 * nodes). Counting the real-valued drawing instead picked drawings that
 * rounding spoilt: on generated dense graphs on 32 x 32 bounds the snapped
 * descent had 10-20 % more crossings than the stress start (and ranking by
 * the max first, as the engine ranks tuples, still 2-5 % more in two of five).
 *
 * Deterministic: one thread, fixed summation order (sorted indices with
 * ties broken by index).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "descent_core.h"
#include "geom.h"
#include "layout.h"
#include "stop.h"
#include "util.h"

#define DESC_ITERS     120         /* default iterations */
#define DESC_PAIRS     300000000LL /* default iterations visit at most this many pairs... */
#define DESC_MIN_ITERS 16          /* ...but make at least this many passes */

struct keyed {
    double key;
    int32_t id;
};

static int keyed_cmp(const void *a, const void *b)
{
    const struct keyed *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

struct desc_ws {
    struct keyed *ek; /* edges by widened left end */
    double *box;      /* per edge: xmin, xmax, ymin, ymax (widened) */
    struct keyed *nk; /* nodes by x */
};

static void ws_init(struct desc_ws *w, const struct lcn_graph *g)
{
    w->ek = xmalloc(sizeof(*w->ek) * (size_t)(g->m ? g->m : 1));
    w->box = xmalloc(sizeof(double) * 4 * (size_t)(g->m ? g->m : 1));
    w->nk = xmalloc(sizeof(*w->nk) * (size_t)(g->n ? g->n : 1));
}

static void ws_release(struct desc_ws *w)
{
    free(w->ek);
    free(w->box);
    free(w->nk);
}

/*
 * The surrogate and its gradient (grad: 2n doubles, overwritten), the exact
 * per-edge crossing counts of the rounded drawing (touching counted) in c
 * (m ints, may be NULL), the number of pairs visited added to *pairs.
 * Returns 0, or the stop's code (then grad and c are incomplete).
 */
static int energy(struct desc_ws *w, const struct lcn_graph *g, const double *xy, double tau,
                  double r0, double *grad, int32_t *c, double *value, const struct lcn_stop *stop,
                  int64_t *work, int64_t *pairs)
{
    int32_t n = g->n, m = g->m;
    double tau2 = tau * tau, h = tau / 2, e = 0;
    int rc = 0;
    memset(grad, 0, sizeof(double) * 2 * (size_t)n);
    if (c)
        memset(c, 0, sizeof(int32_t) * (size_t)m);
    for (int32_t i = 0; i < m; i++) {
        const double *p = &xy[2 * g->eu[i]], *q = &xy[2 * g->ev[i]];
        double *b = &w->box[4 * i];
        b[0] = fmin(p[0], q[0]) - h;
        b[1] = fmax(p[0], q[0]) + h;
        b[2] = fmin(p[1], q[1]) - h;
        b[3] = fmax(p[1], q[1]) + h;
        w->ek[i] = (struct keyed){b[0], i};
    }
    qsort(w->ek, (size_t)m, sizeof(*w->ek), keyed_cmp);
    for (int32_t ii = 0; ii < m && !rc; ii++) {
        int32_t i = w->ek[ii].id;
        const double *bi = &w->box[4 * i];
        int32_t u1 = g->eu[i], u2 = g->ev[i];
        const double *p1 = &xy[2 * u1], *p2 = &xy[2 * u2];
        double *gp1 = &grad[2 * u1], *gp2 = &grad[2 * u2];
        int32_t jj = ii + 1;
        for (; jj < m && w->ek[jj].key <= bi[1]; jj++) {
            int32_t j = w->ek[jj].id;
            const double *bj = &w->box[4 * j];
            if (bj[2] > bi[3] || bj[3] < bi[2])
                continue;
            int32_t v1 = g->eu[j], v2 = g->ev[j];
            if (v1 == u1 || v1 == u2 || v2 == u1 || v2 == u2)
                continue;
            const double *q1 = &xy[2 * v1], *q2 = &xy[2 * v2];
            (*pairs)++;
            if (c && desc_meets_rounded(p1, p2, q1, q2)) {
                c[i]++;
                c[j]++;
            }
            e += desc_pair(p1, p2, q1, q2, tau2, gp1, gp2, &grad[2 * v1], &grad[2 * v2]);
        }
        rc = lcn_stop_tick(stop, work, 1 + (jj - ii) / 8);
    }
    /* spacing */
    for (int32_t i = 0; i < n; i++)
        w->nk[i] = (struct keyed){xy[2 * i], i};
    qsort(w->nk, (size_t)n, sizeof(*w->nk), keyed_cmp);
    for (int32_t ii = 0; ii < n && !rc; ii++) {
        int32_t i = w->nk[ii].id;
        const double *p = &xy[2 * i];
        int32_t jj = ii + 1;
        for (; jj < n && w->nk[jj].key - p[0] < r0; jj++) {
            int32_t j = w->nk[jj].id;
            double gp[2];
            e += desc_spacing(p, &xy[2 * j], i, j, r0, gp);
            grad[2 * i] += gp[0];
            grad[2 * i + 1] += gp[1];
            grad[2 * j] -= gp[0];
            grad[2 * j + 1] -= gp[1];
        }
        rc = lcn_stop_tick(stop, work, 1 + (jj - ii) / 8);
    }
    *value = e;
    return rc;
}

double layout_descent_energy(const struct lcn_graph *g, const double *xy, double tau, double r0,
                             double *grad, int32_t *c)
{
    struct desc_ws w;
    ws_init(&w, g);
    double *tmp = grad ? NULL : xmalloc(sizeof(double) * 2 * (size_t)(g->n ? g->n : 1));
    double v = 0;
    int64_t work = 0;
    int64_t pairs = 0;
    energy(&w, g, xy, tau, r0, grad ? grad : tmp, c, &v, NULL, &work, &pairs);
    free(tmp);
    ws_release(&w);
    return v;
}

/* max and total of per-edge counts */
static void counts_key(const int32_t *c, int32_t m, int64_t *kmax, int64_t *total)
{
    int64_t k = 0, t = 0;
    for (int32_t i = 0; i < m; i++) {
        k = LCN_MAX(k, (int64_t)c[i]);
        t += c[i];
    }
    *kmax = k;
    *total = t / 2;
}

void layout_descent_scales(const struct lcn_graph *g, const double *xy, double *tau0,
                           double *tau1, double *r0)
{
    int32_t n = g->n, m = g->m;
    double lsum = 0;
    for (int32_t e = 0; e < m; e++) {
        double dx = xy[2 * g->eu[e]] - xy[2 * g->ev[e]],
               dy = xy[2 * g->eu[e] + 1] - xy[2 * g->ev[e] + 1];
        lsum += sqrt(dx * dx + dy * dy);
    }
    double spacing = sqrt(fmax(g->width, 1.0) * fmax(g->height, 1.0) / LCN_MAX(1, n));
    double lmean = m > 0 && lsum / m > 0 ? lsum / m : spacing;
    /* tau >= 1 grid unit: the boxes then come within 1 of each other, so the
     * pair sweep sees every pair that crosses once rounded */
    *tau0 = fmax(DESC_TAU0 * lmean, 1.0);
    *tau1 = fmin(*tau0, fmax(DESC_TAU1 * lmean, 1.0));
    *r0 = fmax(1.0, DESC_SPACING * spacing);
}

int32_t layout_descent_fit(int32_t iters, int64_t t0, const struct lcn_stop *stop)
{
    if (!stop || !stop->deadline_ns)
        return iters;
    /* fit the schedule to the time left: the anneal should end, not be cut */
    int64_t t_first = LCN_MAX(1, lcn_now_ns() - t0);
    int64_t left = stop->deadline_ns - lcn_now_ns();
    int64_t fit = left > 0 ? 1 + left / t_first : 1;
    return fit < iters ? (int32_t)LCN_MAX(1, fit) : iters;
}

int32_t layout_descent_stop(const struct lcn_graph *g, int32_t iters, const struct lcn_stop *stop,
                            double *xy, int64_t *crossings)
{
    int32_t n = g->n, m = g->m;
    if (crossings)
        *crossings = -1;
    if (n < 2 || m < 2)
        return 0;
    int by_default = iters <= 0;
    if (by_default)
        iters = DESC_ITERS;
    double W = g->width, H = g->height, tau0, tau1, r0;
    layout_descent_scales(g, xy, &tau0, &tau1, &r0);

    struct desc_ws w;
    ws_init(&w, g);
    double *grad = xmalloc(sizeof(double) * 2 * (size_t)n);
    double *m1 = xcalloc(2 * (size_t)n, sizeof(double));
    double *m2 = xcalloc(2 * (size_t)n, sizeof(double));
    double *best = xmalloc(sizeof(double) * 2 * (size_t)n);
    int32_t *c = xmalloc(sizeof(int32_t) * (size_t)m);
    memcpy(best, xy, sizeof(double) * 2 * (size_t)n);
    int64_t bk = INT64_MAX, bt = INT64_MAX, work = 0;
    double b1t = 1, b2t = 1;
    int32_t done = 0;
    int64_t t0 = lcn_now_ns();
    for (int32_t it = 0; it < iters; it++) {
        double frac = iters > 1 ? (double)it / (iters - 1) : 1.0;
        double tau = tau0 * pow(tau1 / tau0, frac);
        double v;
        int64_t pairs = 0;
        if (energy(&w, g, xy, tau, r0, grad, c, &v, stop, &work, &pairs))
            break; /* this iteration is incomplete: drop it */
        done++;
        int64_t k, t;
        counts_key(c, m, &k, &t);
        if (t < bt || (t == bt && k < bk)) {
            bk = k;
            bt = t;
            memcpy(best, xy, sizeof(double) * 2 * (size_t)n);
        }
        if (it == 0 && by_default && pairs > DESC_PAIRS / iters) {
            /* a dense drawing: fewer passes, fixed by its pair count (deterministic) */
            iters = (int32_t)LCN_MAX(DESC_MIN_ITERS, DESC_PAIRS / LCN_MAX(1, pairs));
        }
        if (it == 0)
            iters = layout_descent_fit(iters, t0, stop);
        if (it + 1 >= iters)
            break; /* the last pass only counts */
        /* Adam */
        double lr = DESC_ETA * tau, clip = DESC_CLIP * tau;
        b1t *= 0.9;
        b2t *= 0.99;
        for (int32_t i = 0; i < 2 * n; i++)
            xy[i] = desc_adam(xy[i], grad[i], &m1[i], &m2[i], b1t, b2t, lr, clip, (i & 1) ? H : W);
    }
    if (bk != INT64_MAX)
        memcpy(xy, best, sizeof(double) * 2 * (size_t)n);
    if (crossings)
        *crossings = bk != INT64_MAX ? bt : -1;
    free(c);
    free(best);
    free(m2);
    free(m1);
    free(grad);
    ws_release(&w);
    return done;
}
