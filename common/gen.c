#include "gen.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "repair.h"
#include "rng.h"
#include "util.h"

static const char *const names[] = {"random", "grid", "dense", "large", "planted"};

int gen_family_parse(const char *name, enum gen_family *f)
{
    for (size_t i = 0; i < LCN_ARRAY_LEN(names); i++) {
        if (strcmp(name, names[i]) == 0) {
            *f = (enum gen_family)i;
            return 0;
        }
    }
    return LCN_EINVAL;
}

const char *gen_family_name(enum gen_family f)
{
    return (unsigned)f < LCN_ARRAY_LEN(names) ? names[f] : "?";
}

void gen_defaults(struct gen_params *p)
{
    /* gen_instance refuses n outside [2, LCN_MAX_NODES] after this runs: keep
     * the arithmetic below defined (no NaN to int, no int32 overflow) for any n */
    int32_t n = LCN_MIN(LCN_MAX(p->n, 0), LCN_MAX_NODES);
    if (p->m <= 0) {
        switch (p->family) {
        case GEN_DENSE:
            p->m = 15 * n;
            break;
        case GEN_RANDOM:
            p->m = 3 * n;
            break;
        default:
            p->m = 2 * n;
            break;
        }
    }
    int32_t side = (int32_t)ceil(sqrt((double)n));
    if (p->width <= 0)
        p->width = p->family == GEN_LARGE ? 250000 : LCN_MAX(10, 4 * side);
    if (p->height <= 0)
        p->height = p->family == GEN_LARGE ? 250000 : LCN_MAX(10, 4 * side);
    if (p->k <= 0)
        p->k = 2;
}

/* Open-addressing set of edges keyed by (min, max) endpoint. */
struct eset {
    uint64_t *keys;
    size_t cap;
};

static void eset_init(struct eset *s, int64_t m)
{
    s->cap = 16;
    while (s->cap < (size_t)m * 2 + 16)
        s->cap *= 2;
    s->keys = xmalloc(sizeof(uint64_t) * s->cap);
    memset(s->keys, 0xff, sizeof(uint64_t) * s->cap);
}

static int eset_add(struct eset *s, int32_t a, int32_t b)
{
    if (a > b) {
        int32_t t = a;
        a = b;
        b = t;
    }
    uint64_t k = ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
    size_t i = (size_t)((k * 0x9E3779B97F4A7C15ull) >> 20) & (s->cap - 1);
    while (s->keys[i] != UINT64_MAX) {
        if (s->keys[i] == k)
            return 0;
        i = (i + 1) & (s->cap - 1);
    }
    s->keys[i] = k;
    return 1;
}

static void random_points(struct lcn_rng *r, const struct gen_params *p, struct lcn_pt *pts)
{
    for (int32_t v = 0; v < p->n; v++) {
        pts[v].x = (int32_t)rng_below(r, (uint32_t)p->width + 1);
        pts[v].y = (int32_t)rng_below(r, (uint32_t)p->height + 1);
    }
}

static int fail(char *err, size_t errlen, int rc, const char *msg)
{
    snprintf(err, errlen, "%s", msg);
    return rc;
}

/* Edges of a w x h grid over nodes 0..n-1 (row-major), then short extras. */
static int32_t grid_edges(struct lcn_rng *r, const struct gen_params *p, struct eset *set,
                          int32_t *src, int32_t *dst)
{
    int32_t n = p->n, m = p->m, w = (int32_t)ceil(sqrt((double)n)), k = 0;
    /* grid edges in random order so that a smaller m drops random ones */
    int32_t cap = 2 * n;
    int32_t *gs = xmalloc(sizeof(int32_t) * (size_t)cap),
            *gd = xmalloc(sizeof(int32_t) * (size_t)cap);
    int32_t ng = 0;
    for (int32_t v = 0; v < n; v++) {
        if ((v % w) + 1 < w && v + 1 < n) {
            gs[ng] = v;
            gd[ng++] = v + 1;
        }
        if (v + w < n) {
            gs[ng] = v;
            gd[ng++] = v + w;
        }
    }
    for (int32_t i = ng - 1; i > 0; i--) {
        int32_t j = (int32_t)rng_below(r, (uint32_t)i + 1);
        int32_t t = gs[i];
        gs[i] = gs[j];
        gs[j] = t;
        t = gd[i];
        gd[i] = gd[j];
        gd[j] = t;
    }
    for (int32_t i = 0; i < ng && k < m; i++) {
        eset_add(set, gs[i], gd[i]);
        src[k] = gs[i];
        dst[k++] = gd[i];
    }
    free(gs);
    free(gd);
    /* extras: diagonals and hops of grid distance <= 2 */
    int64_t tries = 0;
    while (k < m && tries < 100 * (int64_t)m) {
        tries++;
        int32_t a = (int32_t)rng_below(r, (uint32_t)n);
        int32_t dx = (int32_t)rng_below(r, 5) - 2, dy = (int32_t)rng_below(r, 5) - 2;
        int32_t ax = a % w, ay = a / w, bx = ax + dx, by = ay + dy;
        if (bx < 0 || bx >= w || by < 0)
            continue;
        int32_t b = by * w + bx;
        if (b >= n || b == a || !eset_add(set, a, b))
            continue;
        src[k] = a;
        dst[k++] = b;
    }
    return k;
}

static int32_t random_edges(struct lcn_rng *r, const struct gen_params *p, struct eset *set,
                            int32_t *src, int32_t *dst)
{
    int32_t k = 0;
    int64_t tries = 0;
    while (k < p->m && tries < 100 * (int64_t)p->m + 1000) {
        tries++;
        int32_t a = (int32_t)rng_below(r, (uint32_t)p->n),
                b = (int32_t)rng_below(r, (uint32_t)p->n);
        if (a == b || !eset_add(set, a, b))
            continue;
        src[k] = a;
        dst[k++] = b;
    }
    return k;
}

/*
 * Planted drawing: distinct random points, then edges added one by one while
 * the drawing stays valid and every crossing count stays <= k.
 */
static int32_t planted_edges(struct lcn_rng *r, const struct gen_params *p, struct eset *set,
                             const struct lcn_pt *pts, int32_t *src, int32_t *dst)
{
    int32_t n = p->n, k = 0;
    int32_t *cnt = xcalloc((size_t)p->m + 1, sizeof(int32_t));
    int32_t *hit = xmalloc(sizeof(int32_t) * ((size_t)p->m + 1));
    int64_t tries = 0;
    while (k < p->m && tries < 200 * (int64_t)p->m + 1000) {
        tries++;
        int32_t a = (int32_t)rng_below(r, (uint32_t)n), b = -1;
        int64_t best = INT64_MAX;
        for (int s = 0; s < 8; s++) { /* the closest of 8 samples: short edges */
            int32_t c = (int32_t)rng_below(r, (uint32_t)n);
            if (c == a)
                continue;
            int64_t dx = pts[c].x - pts[a].x, dy = pts[c].y - pts[a].y;
            if (dx * dx + dy * dy < best) {
                best = dx * dx + dy * dy;
                b = c;
            }
        }
        if (b < 0)
            continue;
        struct lcn_pt pa = pts[a], pb = pts[b];
        int ok = 1;
        for (int32_t w = 0; w < n && ok; w++)
            if (w != a && w != b && geom_on_interior(pa, pb, pts[w]))
                ok = 0;
        int32_t nh = 0;
        for (int32_t f = 0; f < k && ok; f++) {
            if (src[f] == a || src[f] == b || dst[f] == a || dst[f] == b)
                continue;
            if (geom_segments_meet(pa, pb, pts[src[f]], pts[dst[f]])) {
                if (cnt[f] + 1 > p->k || nh + 1 > p->k)
                    ok = 0;
                else
                    hit[nh++] = f;
            }
        }
        if (!ok || !eset_add(set, a, b))
            continue;
        for (int32_t i = 0; i < nh; i++)
            cnt[hit[i]]++;
        cnt[k] = nh;
        src[k] = a;
        dst[k++] = b;
    }
    free(cnt);
    free(hit);
    return k;
}

int gen_instance(const struct gen_params *pin, struct lcn_graph *g, struct lcn_pt **layout,
                 struct lcn_pt **planted, char *err, size_t errlen)
{
    struct gen_params p = *pin;
    gen_defaults(&p);
    char msg[160];
    if (errlen)
        err[0] = 0;
    if (p.n < 2 || p.n > LCN_MAX_NODES) {
        snprintf(msg, sizeof(msg), "node count must be in [2, %d]", LCN_MAX_NODES);
        return fail(err, errlen, LCN_ERANGE, msg);
    }
    if (p.m > LCN_MAX_EDGES || (int64_t)p.m > (int64_t)p.n * (p.n - 1) / 2)
        return fail(err, errlen, LCN_ERANGE, "edge count exceeds the simple-graph maximum");
    if (p.width > LCN_COORD_LIMIT || p.height > LCN_COORD_LIMIT) {
        snprintf(msg, sizeof(msg), "bounds exceed %d", LCN_COORD_LIMIT);
        return fail(err, errlen, LCN_ERANGE, msg);
    }
    if (((int64_t)p.width + 1) * ((int64_t)p.height + 1) < 4 * (int64_t)p.n)
        return fail(err, errlen, LCN_ERANGE, "bounds too small: need at least 4 points per node");

    struct lcn_rng r;
    rng_init(&r, p.seed, (uint32_t)p.family, RNG_PURPOSE_GEN);
    int32_t *src = xmalloc(sizeof(int32_t) * ((size_t)p.m + 1));
    int32_t *dst = xmalloc(sizeof(int32_t) * ((size_t)p.m + 1));
    struct lcn_pt *pts = xmalloc(sizeof(*pts) * (size_t)p.n);
    struct lcn_pt *plant = NULL;
    struct eset set;
    eset_init(&set, p.m);
    int32_t k;
    int rc = 0;
    if (p.family == GEN_PLANTED) {
        plant = xmalloc(sizeof(*plant) * (size_t)p.n);
        random_points(&r, &p, plant);
        /* distinct points first: an edgeless graph's repair only separates them */
        struct lcn_graph empty;
        rc = graph_init(&empty, p.n, 0, NULL, NULL, p.width, p.height, NULL);
        if (rc == 0)
            rc = repair_layout(&empty, plant, NULL, NULL);
        graph_release(&empty);
        k = rc ? 0 : planted_edges(&r, &p, &set, plant, src, dst);
    } else if (p.family == GEN_GRID || p.family == GEN_LARGE) {
        k = grid_edges(&r, &p, &set, src, dst);
    } else {
        k = random_edges(&r, &p, &set, src, dst);
    }
    free(set.keys);
    if (rc == 0 && k < p.m) {
        snprintf(msg, sizeof(msg), "could only place %d of %d edges for family '%s'", k, p.m,
                 gen_family_name(p.family));
        rc = fail(err, errlen, LCN_ERANGE, msg);
    }
    if (rc == 0)
        rc = graph_init(g, p.n, p.m, src, dst, p.width, p.height, NULL);
    free(src);
    free(dst);
    if (rc == 0) {
        random_points(&r, &p, pts);
        rc = repair_layout(g, pts, NULL, NULL);
        if (rc)
            graph_release(g);
    }
    if (rc) {
        if (errlen && !err[0])
            fail(err, errlen, rc, lcn_strerror(rc));
        free(pts);
        free(plant);
        return rc;
    }
    *layout = pts;
    if (planted)
        *planted = plant;
    else
        free(plant);
    return 0;
}
