#include "layout.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "repair.h"
#include "stop.h"
#include "rng.h"
#include "util.h"

static const char *const kind_names[LAYOUT_KINDS] = {"input",  "force",  "stress",
                                                     "random", "circle", "descent"};

const char *layout_kind_name(enum layout_kind k)
{
    return (unsigned)k < LAYOUT_KINDS ? kind_names[k] : "?";
}

int layout_kind_parse(const char *name, enum layout_kind *k)
{
    for (int i = 0; i < LAYOUT_KINDS; i++) {
        if (strcmp(name, kind_names[i]) == 0) {
            *k = (enum layout_kind)i;
            return 0;
        }
    }
    return LCN_EINVAL;
}

/* ---- Barnes-Hut quadtree ---------------------------------------------- */

#define QT_MAX_DEPTH 40

struct qnode {
    double cx, cy, half; /* square: centre and half side */
    double sx, sy, mass; /* sums of the bodies below */
    int32_t child[4];
    int32_t body; /* leaf: the one body (-1 empty or internal); -2: several bodies at max depth */
};

struct qtree {
    struct qnode *q;
    size_t len, cap;
};

static int32_t qt_new(struct qtree *t, double cx, double cy, double half)
{
    xgrow((void **)&t->q, sizeof(*t->q), &t->cap, t->len + 1);
    struct qnode *n = &t->q[t->len];
    n->cx = cx;
    n->cy = cy;
    n->half = half;
    n->sx = n->sy = n->mass = 0;
    n->child[0] = n->child[1] = n->child[2] = n->child[3] = -1;
    n->body = -1;
    return (int32_t)t->len++;
}

static int qt_quad(const struct qnode *n, double x, double y)
{
    return (x >= n->cx ? 1 : 0) + (y >= n->cy ? 2 : 0);
}

static int32_t qt_child(struct qtree *t, int32_t node, int quad)
{
    int32_t c = t->q[node].child[quad];
    if (c >= 0)
        return c;
    double h = t->q[node].half / 2;
    double cx = t->q[node].cx + ((quad & 1) ? h : -h);
    double cy = t->q[node].cy + ((quad & 2) ? h : -h);
    c = qt_new(t, cx, cy, h); /* may move t->q */
    t->q[node].child[quad] = c;
    return c;
}

static void qt_insert(struct qtree *t, const double *xy, int32_t b)
{
    double x = xy[2 * b], y = xy[2 * b + 1];
    int32_t node = 0;
    for (int depth = 0;; depth++) {
        struct qnode *n = &t->q[node];
        int was_empty = n->mass == 0;
        n->mass += 1;
        n->sx += x;
        n->sy += y;
        if (was_empty) {
            n->body = b;
            return;
        }
        if (n->body == -2)
            return;
        if (n->body >= 0) {
            if (depth >= QT_MAX_DEPTH) {
                n->body = -2;
                return;
            }
            /* push the resident body one level down */
            int32_t old = n->body;
            n->body = -1;
            double ox = xy[2 * old], oy = xy[2 * old + 1];
            int32_t c = qt_child(t, node, qt_quad(&t->q[node], ox, oy));
            struct qnode *cn = &t->q[c];
            cn->mass = 1;
            cn->sx = ox;
            cn->sy = oy;
            cn->body = old;
        }
        node = qt_child(t, node, qt_quad(&t->q[node], x, y));
    }
}

static void qt_build(struct qtree *t, const double *xy, int32_t n)
{
    t->len = 0;
    double x0 = xy[0], x1 = xy[0], y0 = xy[1], y1 = xy[1];
    for (int32_t i = 1; i < n; i++) {
        x0 = fmin(x0, xy[2 * i]);
        x1 = fmax(x1, xy[2 * i]);
        y0 = fmin(y0, xy[2 * i + 1]);
        y1 = fmax(y1, xy[2 * i + 1]);
    }
    double half = fmax(x1 - x0, y1 - y0) / 2 + 1e-9;
    qt_new(t, (x0 + x1) / 2, (y0 + y1) / 2, half * 1.0001);
    for (int32_t i = 0; i < n; i++)
        qt_insert(t, xy, i);
}

/* Adds the repulsion on body b (k2 / d per unit mass) to (*fx, *fy). */
static void qt_repulse(const struct qtree *t, const double *xy, int32_t b, double k2, double theta2,
                       int32_t *stack, double *fx, double *fy)
{
    double x = xy[2 * b], y = xy[2 * b + 1], ax = 0, ay = 0;
    int32_t sp = 0;
    stack[sp++] = 0;
    while (sp > 0) {
        const struct qnode *n = &t->q[stack[--sp]];
        if (n->mass == 0 || n->body == b)
            continue;
        double mx = n->sx / n->mass, my = n->sy / n->mass;
        double dx = x - mx, dy = y - my, d2 = dx * dx + dy * dy;
        double side = 2 * n->half;
        if (n->body != -1 || side * side < theta2 * d2) {
            double mass = n->mass;
            if (n->body == -2 && n->sx == x * mass && n->sy == y * mass)
                continue; /* a pile of coincident bodies including b */
            if (d2 < 1e-12) {
                /* coincident: push apart along a direction fixed by the ids */
                double a = 2.399963 * (double)b;
                dx = cos(a) * 1e-6;
                dy = sin(a) * 1e-6;
                d2 = 1e-12;
            }
            double s = mass * k2 / d2;
            ax += dx * s;
            ay += dy * s;
            continue;
        }
        for (int i = 0; i < 4; i++)
            if (n->child[i] >= 0)
                stack[sp++] = n->child[i];
    }
    *fx += ax;
    *fy += ay;
}

void layout_force_real(const struct lcn_graph *g, uint64_t seed, int from_xy, int32_t iters,
                       int64_t deadline_ns, double *xy)
{
    struct lcn_stop st = {deadline_ns, NULL, 0};
    layout_force_stop(g, seed, from_xy, iters, deadline_ns ? &st : NULL, xy);
}

void layout_force_stop(const struct lcn_graph *g, uint64_t seed, int from_xy, int32_t iters,
                       const struct lcn_stop *stop, double *xy)
{
    int32_t n = g->n;
    if (n == 0)
        return;
    const double k = 1.0, k2 = k * k, theta2 = 0.81;
    double side = sqrt((double)n) * k;
    if (!from_xy) {
        struct lcn_rng r;
        rng_init(&r, seed, 0x464f5243u, RNG_PURPOSE_INIT);
        for (int32_t i = 0; i < 2 * n; i++)
            xy[i] = rng_unit53(&r) * side;
    } else {
        /* rescale so that the mean edge length is k */
        double sum = 0;
        for (int32_t e = 0; e < g->m; e++) {
            double dx = xy[2 * g->eu[e]] - xy[2 * g->ev[e]],
                   dy = xy[2 * g->eu[e] + 1] - xy[2 * g->ev[e] + 1];
            sum += sqrt(dx * dx + dy * dy);
        }
        double mean = g->m ? sum / g->m : 0;
        if (mean > 0)
            for (int32_t i = 0; i < 2 * n; i++)
                xy[i] *= k / mean;
    }
    if (n == 1)
        return;
    if (iters <= 0)
        iters = n <= 1000 ? 500 : (n <= 5000 ? 300 : 150);
    double t0 = side * (from_xy ? 0.02 : 0.1);
    double *disp = xmalloc(sizeof(double) * 2 * (size_t)n);
    int32_t *stack = xmalloc(sizeof(int32_t) * (4 * QT_MAX_DEPTH + 8) * 4);
    struct qtree t = {0};
    int64_t work = 0;
    for (int32_t it = 0; it < iters; it++) {
        if (lcn_stop_check(stop))
            break;
        double temp = t0 * (1.0 - (double)it / iters) + 1e-3 * k;
        qt_build(&t, xy, n);
        double gx = 0, gy = 0;
        for (int32_t i = 0; i < n; i++) {
            gx += xy[2 * i];
            gy += xy[2 * i + 1];
        }
        gx /= n;
        gy /= n;
        int stopped = 0;
        for (int32_t i = 0; i < n && !stopped; i++) {
            /* a Barnes-Hut walk is some hundreds of operations */
            stopped = lcn_stop_tick(stop, &work, 64) != 0;
            disp[2 * i] = disp[2 * i + 1] = 0;
            qt_repulse(&t, xy, i, k2, theta2, stack, &disp[2 * i], &disp[2 * i + 1]);
            /* weak gravity keeps components together */
            disp[2 * i] -= 0.02 * (xy[2 * i] - gx);
            disp[2 * i + 1] -= 0.02 * (xy[2 * i + 1] - gy);
        }
        if (stopped)
            break; /* this iteration's displacements are incomplete: drop them */
        for (int32_t e = 0; e < g->m; e++) {
            int32_t u = g->eu[e], v = g->ev[e];
            double dx = xy[2 * u] - xy[2 * v], dy = xy[2 * u + 1] - xy[2 * v + 1];
            double d = sqrt(dx * dx + dy * dy);
            double s = d / k; /* (d^2 / k) / d */
            disp[2 * u] -= dx * s;
            disp[2 * u + 1] -= dy * s;
            disp[2 * v] += dx * s;
            disp[2 * v + 1] += dy * s;
        }
        for (int32_t i = 0; i < n; i++) {
            double dx = disp[2 * i], dy = disp[2 * i + 1];
            double d = sqrt(dx * dx + dy * dy);
            if (d > 0) {
                double s = fmin(d, temp) / d;
                xy[2 * i] += dx * s;
                xy[2 * i + 1] += dy * s;
            }
        }
    }
    free(t.q);
    free(stack);
    free(disp);
}

/* ---- pivot MDS ------------------------------------------------------- */

static void bfs(const struct lcn_graph *g, int32_t src, int32_t *dist, int32_t *queue)
{
    for (int32_t i = 0; i < g->n; i++)
        dist[i] = -1;
    int32_t head = 0, tail = 0;
    dist[src] = 0;
    queue[tail++] = src;
    while (head < tail) {
        int32_t v = queue[head++];
        for (int32_t k = g->inc_off[v]; k < g->inc_off[v + 1]; k++) {
            int32_t u = graph_other(g, g->inc[k], v);
            if (dist[u] < 0) {
                dist[u] = dist[v] + 1;
                queue[tail++] = u;
            }
        }
    }
}

/* Removes from v (k entries) its component along the unit vector ortho (none when NULL). */
static void project_out(double *v, int32_t k, const double *ortho)
{
    if (!ortho)
        return;
    double dot = 0;
    for (int32_t i = 0; i < k; i++)
        dot += v[i] * ortho[i];
    for (int32_t i = 0; i < k; i++)
        v[i] -= dot * ortho[i];
}

/* Top eigenvector of the symmetric k x k matrix b, orthogonal to `ortho` (may be NULL). */
static void power_iter(const double *b, int32_t k, const double *ortho, double *v)
{
    double *w = xmalloc(sizeof(double) * (size_t)k);
    for (int32_t i = 0; i < k; i++)
        v[i] = 1.0 + 0.01 * (double)((i * 7919) % 101);
    for (int it = 0; it < 200; it++) {
        project_out(v, k, ortho);
        double norm = 0;
        for (int32_t i = 0; i < k; i++) {
            double s = 0;
            for (int32_t j = 0; j < k; j++)
                s += b[(size_t)i * k + j] * v[j];
            w[i] = s;
            norm += s * s;
        }
        norm = sqrt(norm);
        if (norm < 1e-300)
            break;
        for (int32_t i = 0; i < k; i++)
            v[i] = w[i] / norm;
    }
    project_out(v, k, ortho);
    free(w);
}

void layout_pivot_mds(const struct lcn_graph *g, uint64_t seed, double *xy)
{
    layout_pivot_mds_stop(g, seed, NULL, xy);
}

int layout_pivot_mds_stop(const struct lcn_graph *g, uint64_t seed, const struct lcn_stop *stop,
                          double *xy)
{
    int32_t n = g->n;
    if (n == 0)
        return 0;
    int rc = 0;
    int64_t work = 0;
    int32_t k = LCN_MIN(n, 50);
    int32_t *dist = xmalloc(sizeof(int32_t) * (size_t)n);
    int32_t *queue = xmalloc(sizeof(int32_t) * (size_t)n);
    int32_t *mind = xmalloc(sizeof(int32_t) * (size_t)n);
    double *c = xmalloc(sizeof(double) * (size_t)n * (size_t)k); /* n x k, row-major */
    struct lcn_rng r;
    rng_init(&r, seed, 0x50495654u, RNG_PURPOSE_INIT);
    int32_t pivot = (int32_t)rng_below(&r, (uint32_t)n);
    for (int32_t i = 0; i < n; i++)
        mind[i] = INT32_MAX;
    for (int32_t j = 0; j < k && !rc; j++) {
        if ((rc = lcn_stop_tick(stop, &work, (int64_t)n + g->m)) != 0)
            break;
        bfs(g, pivot, dist, queue);
        int32_t maxd = 0;
        for (int32_t i = 0; i < n; i++)
            maxd = LCN_MAX(maxd, dist[i]);
        for (int32_t i = 0; i < n; i++) {
            int32_t d = dist[i] < 0 ? maxd + 1 : dist[i];
            c[(size_t)i * k + j] = (double)d * d;
            mind[i] = LCN_MIN(mind[i], d);
        }
        /* next pivot: the node farthest from all chosen pivots */
        int32_t best = 0;
        for (int32_t i = 1; i < n; i++)
            if (mind[i] > mind[best])
                best = i;
        pivot = best;
    }
    /* one cleanup path: a fired stop skips the passes below */
    double *colm = xcalloc((size_t)k, sizeof(double));
    double *b = xcalloc((size_t)k * k, sizeof(double));
    double *v1 = xmalloc(sizeof(double) * (size_t)k), *v2 = xmalloc(sizeof(double) * (size_t)k);
    if (rc)
        goto done;
    /* double centring (each pass over the n x k matrix is tens of ms at
     * 200,000 nodes: the stop is polled per row) */
    double grand = 0;
    for (int32_t i = 0; i < n && !rc; i++) {
        rc = lcn_stop_tick(stop, &work, k);
        for (int32_t j = 0; j < k; j++)
            colm[j] += c[(size_t)i * k + j];
    }
    for (int32_t j = 0; j < k; j++) {
        grand += colm[j];
        colm[j] /= n;
    }
    grand /= (double)n * k;
    for (int32_t i = 0; i < n && !rc; i++) {
        rc = lcn_stop_tick(stop, &work, 2 * k);
        double rowm = 0;
        for (int32_t j = 0; j < k; j++)
            rowm += c[(size_t)i * k + j];
        rowm /= k;
        for (int32_t j = 0; j < k; j++) {
            double *x = &c[(size_t)i * k + j];
            *x = -0.5 * (*x - rowm - colm[j] + grand);
        }
    }
    /* B = C^T C, top two eigenvectors */
    for (int32_t i = 0; i < n && !rc; i++)
        for (int32_t a = 0; a < k && !(rc = lcn_stop_tick(stop, &work, k)); a++) {
            double ca = c[(size_t)i * k + a];
            for (int32_t bb = 0; bb < k; bb++)
                b[(size_t)a * k + bb] += ca * c[(size_t)i * k + bb];
        }
    if (rc)
        goto done;
    power_iter(b, k, NULL, v1);
    power_iter(b, k, v1, v2);
    for (int32_t i = 0; i < n && !rc; i++) {
        rc = lcn_stop_tick(stop, &work, k);
        double x = 0, y = 0;
        for (int32_t j = 0; j < k; j++) {
            x += c[(size_t)i * k + j] * v1[j];
            y += c[(size_t)i * k + j] * v2[j];
        }
        xy[2 * i] = x;
        xy[2 * i + 1] = y;
    }
done:
    free(v1);
    free(v2);
    free(b);
    free(colm);
    free(c);
    free(mind);
    free(queue);
    free(dist);
    return rc;
}

/* ---- integer layouts --------------------------------------------------- */

int layout_snap(const struct lcn_graph *g, const double *xy, struct lcn_pt *out)
{
    return layout_snap_stop(g, xy, NULL, out);
}

/*
 * Where point i of a real-valued drawing (n points, x y interleaved) lies
 * within the drawing's bounding box, per axis in [0, 1] (0.5 on an axis the
 * drawing does not span, or for a value that is not finite): the stretch
 * onto the canvas that snapping and the descent start share.
 */
struct xy_box {
    double x0, x1, y0, y1;
};

static struct xy_box xy_box_of(const double *xy, int32_t n)
{
    struct xy_box b = {xy[0], xy[0], xy[1], xy[1]};
    for (int32_t i = 1; i < n; i++) {
        b.x0 = fmin(b.x0, xy[2 * i]);
        b.x1 = fmax(b.x1, xy[2 * i]);
        b.y0 = fmin(b.y0, xy[2 * i + 1]);
        b.y1 = fmax(b.y1, xy[2 * i + 1]);
    }
    return b;
}

static double frac_in(double v, double lo, double hi)
{
    double f = hi > lo ? (v - lo) / (hi - lo) : 0.5;
    return isfinite(f) ? f : 0.5;
}

int layout_snap_stop(const struct lcn_graph *g, const double *xy, const struct lcn_stop *stop,
                     struct lcn_pt *out)
{
    int32_t n = g->n;
    if (n == 0)
        return 0;
    const struct xy_box b = xy_box_of(xy, n);
    for (int32_t i = 0; i < n; i++) {
        double fx = frac_in(xy[2 * i], b.x0, b.x1), fy = frac_in(xy[2 * i + 1], b.y0, b.y1);
        out[i].x = (int32_t)LCN_MIN((double)g->width, LCN_MAX(0.0, floor(fx * g->width + 0.5)));
        out[i].y = (int32_t)LCN_MIN((double)g->height, LCN_MAX(0.0, floor(fy * g->height + 0.5)));
    }
    return repair_layout_stop(g, out, NULL, NULL, stop);
}

static int random_layout(const struct lcn_graph *g, uint64_t seed, const struct lcn_stop *stop,
                         struct lcn_pt *out)
{
    struct lcn_rng r;
    rng_init(&r, seed, 0x52414e44u, RNG_PURPOSE_INIT);
    for (int32_t i = 0; i < g->n; i++) {
        out[i].x = (int32_t)rng_below(&r, (uint32_t)g->width + 1);
        out[i].y = (int32_t)rng_below(&r, (uint32_t)g->height + 1);
    }
    return repair_layout_stop(g, out, NULL, NULL, stop);
}

static int circle_layout(const struct lcn_graph *g, const struct lcn_stop *stop,
                         struct lcn_pt *out)
{
    int32_t n = g->n;
    /* BFS order over all components keeps neighbours close on the circle */
    int32_t *order = xmalloc(sizeof(int32_t) * (size_t)(n ? n : 1));
    uint8_t *seen = xcalloc((size_t)n + 1, 1);
    int32_t len = 0;
    for (int32_t s = 0; s < n; s++) {
        if (seen[s])
            continue;
        int32_t head = len;
        order[len++] = s;
        seen[s] = 1;
        while (head < len) {
            int32_t v = order[head++];
            for (int32_t k = g->inc_off[v]; k < g->inc_off[v + 1]; k++) {
                int32_t u = graph_other(g, g->inc[k], v);
                if (!seen[u]) {
                    seen[u] = 1;
                    order[len++] = u;
                }
            }
        }
    }
    double *xy = xmalloc(sizeof(double) * 2 * (size_t)(n ? n : 1));
    for (int32_t i = 0; i < n; i++) {
        double a = 6.283185307179586 * i / n;
        xy[2 * order[i]] = cos(a);
        xy[2 * order[i] + 1] = sin(a);
    }
    int rc = layout_snap_stop(g, xy, stop, out);
    free(xy);
    free(seen);
    free(order);
    return rc;
}

/*
 * The descent start's middle phase: the stress drawing xy stretched onto the
 * bounds as layout_snap does (without rounding), then layout_descent_stop
 * until half of the time left before the soft deadline, so a start round
 * keeps room for the drawers after it (with no deadline: its default
 * iterations). Returns 0 or the hard stop's code.
 */
static int descend(const struct lcn_graph *g, const struct lcn_stop *iter,
                   const struct lcn_stop *stop, const struct layout_descender *d, double *xy)
{
    int32_t n = g->n;
    const struct xy_box b = xy_box_of(xy, n);
    for (int32_t i = 0; i < n; i++) {
        xy[2 * i] = frac_in(xy[2 * i], b.x0, b.x1) * g->width;
        xy[2 * i + 1] = frac_in(xy[2 * i + 1], b.y0, b.y1) * g->height;
    }
    struct lcn_stop half = *iter;
    if (half.deadline_ns) {
        int64_t now = lcn_now_ns();
        half.deadline_ns = half.deadline_ns > now ? now + (half.deadline_ns - now) / 2 : now;
    }
    double *keep = NULL;
    if (d) {
        keep = xmalloc(sizeof(double) * 2 * (size_t)n);
        memcpy(keep, xy, sizeof(double) * 2 * (size_t)n);
    }
    if (!d || d->run(d->ctx, g, &half, xy)) {
        if (keep) /* the other device failed: the CPU descent from the same drawing */
            memcpy(xy, keep, sizeof(double) * 2 * (size_t)n);
        layout_descent_stop(g, 0, &half, xy, NULL);
    }
    free(keep);
    return lcn_stop_check(stop);
}

/* The descent's drawing, already in the bounds' frame: rounded (not
 * stretched again: the descent chose it by its rounded crossings) and
 * repaired as layout_snap_stop does. */
static int round_repair(const struct lcn_graph *g, const double *xy, const struct lcn_stop *stop,
                        struct lcn_pt *out)
{
    for (int32_t i = 0; i < g->n; i++) {
        double x = floor(xy[2 * i] + 0.5), y = floor(xy[2 * i + 1] + 0.5);
        out[i].x = (int32_t)LCN_MIN((double)g->width, LCN_MAX(0.0, isfinite(x) ? x : 0.0));
        out[i].y = (int32_t)LCN_MIN((double)g->height, LCN_MAX(0.0, isfinite(y) ? y : 0.0));
    }
    return repair_layout_stop(g, out, NULL, NULL, stop);
}

int layout_make(const struct lcn_graph *g, enum layout_kind kind, uint64_t seed,
                const struct lcn_pt *init, const uint8_t *has_xy, int64_t deadline_ns,
                const struct lcn_stop *stop, struct lcn_pt *out)
{
    return layout_make_with(g, kind, seed, init, has_xy, deadline_ns, stop, NULL, out);
}

int layout_make_with(const struct lcn_graph *g, enum layout_kind kind, uint64_t seed,
                     const struct lcn_pt *init, const uint8_t *has_xy, int64_t deadline_ns,
                     const struct lcn_stop *stop, const struct layout_descender *d,
                     struct lcn_pt *out)
{
    if (((int64_t)g->width + 1) * ((int64_t)g->height + 1) < g->n)
        return LCN_EINVAL;
    if (g->n == 0)
        return 0;
    int rc = lcn_stop_check(stop);
    if (rc)
        return rc;
    switch (kind) {
    case LAYOUT_INPUT:
        if (!init)
            return LCN_ENOTFOUND;
        memcpy(out, init, sizeof(*out) * (size_t)g->n);
        return repair_layout_stop(g, out, has_xy, NULL, stop);
    case LAYOUT_RANDOM:
        return random_layout(g, seed, stop, out);
    case LAYOUT_CIRCLE:
        return circle_layout(g, stop, out);
    case LAYOUT_FORCE:
    case LAYOUT_STRESS:
    case LAYOUT_DESCENT: {
        /* the iterations end at the soft deadline (a cut-short drawing is
         * still a start) or when the stop fires (then nothing is made) */
        struct lcn_stop iter = {deadline_ns, stop ? stop->cancel : NULL, stop ? stop->cancel_from_ns : 0};
        if (stop && stop->deadline_ns && (!iter.deadline_ns || stop->deadline_ns < iter.deadline_ns))
            iter.deadline_ns = stop->deadline_ns;
        double *xy = xmalloc(sizeof(double) * 2 * (size_t)g->n);
        if (kind == LAYOUT_FORCE) {
            layout_force_stop(g, seed, 0, 0, &iter, xy);
        } else if ((rc = layout_pivot_mds_stop(g, seed, stop, xy)) == 0) {
            /* descent starts from the very stress drawing of this seed */
            layout_force_stop(g, seed, 1, LCN_MIN(100, LCN_MAX(20, 20000 / LCN_MAX(1, g->n / 10))),
                              &iter, xy);
        }
        if (!rc && kind == LAYOUT_DESCENT)
            rc = descend(g, &iter, stop, d, xy);
        if (!rc)
            rc = lcn_stop_check(stop);
        if (!rc && kind == LAYOUT_DESCENT)
            rc = round_repair(g, xy, stop, out);
        else if (!rc)
            rc = layout_snap_stop(g, xy, stop, out);
        free(xy);
        return rc;
    }
    default:
        return LCN_EINVAL;
    }
}

/*
 * An estimate of the number of crossing pairs of a (possibly invalid)
 * layout from 20,000 random edge pairs, each tested exactly: cheap on any
 * layout, unlike a full count of a layout with millions of crossings.
 * Nodes without coordinates make their edges count as not crossing.
 */
static double sampled_crossings(const struct lcn_graph *g, const struct lcn_pt *pts,
                                const uint8_t *has_xy)
{
    if (g->m < 2)
        return 0;
    struct lcn_rng r;
    rng_init(&r, 0x53414d50u, 0, RNG_PURPOSE_INIT);
    const int N = 20000;
    int hits = 0;
    for (int i = 0; i < N; i++) {
        int32_t e = (int32_t)rng_below(&r, (uint32_t)g->m),
                f = (int32_t)rng_below(&r, (uint32_t)g->m);
        if (graph_adjacent(g, e, f))
            continue;
        if (has_xy &&
            (!has_xy[g->eu[e]] || !has_xy[g->ev[e]] || !has_xy[g->eu[f]] || !has_xy[g->ev[f]]))
            continue;
        hits += geom_segments_meet(pts[g->eu[e]], pts[g->ev[e]], pts[g->eu[f]], pts[g->ev[f]]);
    }
    return (double)hits / N * (double)g->m * (double)(g->m - 1) / 2.0;
}

int layout_start_worth(const struct lcn_graph *g, enum layout_kind k, int have,
                       const struct lcn_pt *init, const uint8_t *has_xy, int64_t start_deadline_ns,
                       int64_t deadline_ns)
{
    if (have && (k == LAYOUT_RANDOM || k == LAYOUT_CIRCLE) && g->m > 2000)
        return 0; /* long chords: quadratic crossing counts, never competitive */
    if (have && k == LAYOUT_FORCE && g->n > 3000 &&
        start_deadline_ns - lcn_now_ns() < (int64_t)g->n * 300000)
        return 0; /* a cut-short force layout of a large graph is tangled and slow to repair */
    if (k == LAYOUT_INPUT && init && g->m > 2000 &&
        sampled_crossings(g, init, has_xy) * 100.0 > 0.25 * (double)(deadline_ns - lcn_now_ns()))
        return 0; /* repairing and counting it (~100 ns a crossing) would eat the budget */
    return 1;
}

int64_t layout_quick_deadline(int64_t start_deadline_ns)
{
    const int64_t now = lcn_now_ns();
    return now + (start_deadline_ns - now) / 5;
}
