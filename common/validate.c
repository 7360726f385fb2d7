#include "validate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "stop.h"
#include "util.h"

typedef __int128 wide;

/* Sign of the cross product (b - a) x (c - a), with 128-bit products. */
static int side(struct lcn_pt a, struct lcn_pt b, struct lcn_pt c)
{
    wide l = (wide)((int64_t)b.x - a.x) * (wide)((int64_t)c.y - a.y);
    wide r = (wide)((int64_t)b.y - a.y) * (wide)((int64_t)c.x - a.x);
    return l > r ? 1 : (l < r ? -1 : 0);
}

static int same(struct lcn_pt a, struct lcn_pt b)
{
    return a.x == b.x && a.y == b.y;
}

/* p strictly between a and b on the line through them (a != b, collinear given). */
static int between_open(struct lcn_pt a, struct lcn_pt b, struct lcn_pt p)
{
    /* (p - a) . (b - p) > 0 exactly when p lies strictly inside ab */
    wide dot = (wide)((int64_t)p.x - a.x) * ((int64_t)b.x - p.x) +
               (wide)((int64_t)p.y - a.y) * ((int64_t)b.y - p.y);
    return dot > 0;
}

/* p on closed segment ab, given collinear */
static int between_closed(struct lcn_pt a, struct lcn_pt b, struct lcn_pt p)
{
    wide dot = (wide)((int64_t)p.x - a.x) * ((int64_t)b.x - p.x) +
               (wide)((int64_t)p.y - a.y) * ((int64_t)b.y - p.y);
    return dot >= 0;
}

static int node_on_edge_interior(struct lcn_pt a, struct lcn_pt b, struct lcn_pt p)
{
    if (same(a, b))
        return 0;
    return side(a, b, p) == 0 && between_open(a, b, p);
}

/*
 * Closed segments ab and cd have a point in common, given s1 = side(a, b, c)
 * and s2 = side(a, b, d). When c and d lie strictly on one side of the line
 * ab (s1 * s2 > 0), or a and b strictly on one side of cd, no point of one
 * segment reaches the other's line: no common point.
 */
static int meet_sides(struct lcn_pt a, struct lcn_pt b, struct lcn_pt c, struct lcn_pt d, int s1,
                      int s2)
{
    if (s1 * s2 > 0)
        return 0;
    int s3 = side(c, d, a), s4 = side(c, d, b);
    if (s3 * s4 > 0)
        return 0;
    if (s1 * s2 < 0 && s3 * s4 < 0)
        return 1;
    if (s1 == 0 && between_closed(a, b, c))
        return 1;
    if (s2 == 0 && between_closed(a, b, d))
        return 1;
    if (s3 == 0 && between_closed(c, d, a))
        return 1;
    if (s4 == 0 && between_closed(c, d, b))
        return 1;
    return 0;
}

static int meet(struct lcn_pt a, struct lcn_pt b, struct lcn_pt c, struct lcn_pt d)
{
    return meet_sides(a, b, c, d, side(a, b, c), side(a, b, d));
}

/* Collinear overlap along a positive length, given s1 = side(a, b, c), s2 = side(a, b, d). */
static int overlap_sides(struct lcn_pt a, struct lcn_pt b, struct lcn_pt c, struct lcn_pt d, int s1,
                         int s2)
{
    if (same(a, b) || same(c, d))
        return 0;
    if (s1 != 0 || s2 != 0)
        return 0;
    /* Positive-length overlap iff an endpoint of one lies strictly inside the
     * other, or both segments are the same segment. */
    if (between_open(a, b, c) || between_open(a, b, d) || between_open(c, d, a) ||
        between_open(c, d, b))
        return 1;
    return (same(a, c) && same(b, d)) || (same(a, d) && same(b, c));
}

/*
 * An edge in the x-sweep: its x-range [lo, hi], its y-range [ylo, yhi] and
 * its ends. Two segments with a point in common (meet, overlap) have
 * overlapping x- and y-ranges, so the sweep skips a pair whose y-ranges are
 * disjoint before any predicate.
 */
struct span {
    int32_t lo, hi, id, ylo, yhi;
    struct lcn_pt a, b;
};

/* Disjoint y-ranges: the two segments have no point in common. */
static int y_apart(const struct span *a, const struct span *b)
{
    return a->yhi < b->ylo || a->ylo > b->yhi;
}

static int span_cmp(const void *p, const void *q)
{
    const struct span *a = p, *b = q;
    if (a->lo != b->lo)
        return a->lo < b->lo ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

static struct span *edge_spans(const struct lcn_graph *g, const struct lcn_pt *pts)
{
    struct span *s = xmalloc(sizeof(*s) * (size_t)(g->m ? g->m : 1));
    for (int32_t e = 0; e < g->m; e++) {
        struct lcn_pt a = pts[g->eu[e]], b = pts[g->ev[e]];
        s[e].lo = a.x < b.x ? a.x : b.x;
        s[e].hi = a.x < b.x ? b.x : a.x;
        s[e].ylo = a.y < b.y ? a.y : b.y;
        s[e].yhi = a.y < b.y ? b.y : a.y;
        s[e].id = e;
        s[e].a = a;
        s[e].b = b;
    }
    qsort(s, (size_t)g->m, sizeof(*s), span_cmp);
    return s;
}

static int shares_endpoint(const struct lcn_graph *g, int32_t e, int32_t f)
{
    return g->eu[e] == g->eu[f] || g->eu[e] == g->ev[f] || g->ev[e] == g->eu[f] ||
           g->ev[e] == g->ev[f];
}

uint64_t validate_counts(const struct lcn_graph *g, const struct lcn_pt *pts, int32_t *c)
{
    memset(c, 0, sizeof(int32_t) * (size_t)g->m);
    struct span *s = edge_spans(g, pts);
    uint64_t tests = 0;
    for (int32_t i = 0; i < g->m; i++) {
        int32_t e = s[i].id;
        for (int32_t j = i + 1; j < g->m && s[j].lo <= s[i].hi; j++) {
            int32_t f = s[j].id;
            if (y_apart(&s[j], &s[i]) || shares_endpoint(g, e, f))
                continue;
            tests++;
            if (meet(s[i].a, s[i].b, s[j].a, s[j].b)) {
                c[e]++;
                c[f]++;
            }
        }
    }
    free(s);
    return tests;
}

const char *validate_kind_name(enum lcn_vkind k)
{
    switch (k) {
    case LCN_V1_OUT_OF_BOUNDS:
        return "V1";
    case LCN_V2_SHARED_POINT:
        return "V2";
    case LCN_V3_NODE_ON_EDGE:
        return "V3";
    case LCN_V4_EDGE_OVERLAP:
        return "V4";
    }
    return "?";
}

static void note(struct lcn_report *r, int32_t max_listed, enum lcn_vkind k, int32_t a, int32_t b)
{
    r->count[k]++;
    r->total++;
    if (r->listed < max_listed)
        r->list[r->listed++] = (struct lcn_violation){k, a, b};
}

struct pnode {
    int32_t x, y, id;
};

static int pnode_cmp(const void *p, const void *q)
{
    const struct pnode *a = p, *b = q;
    return lcn_cmp3(a->x, a->y, a->id, b->x, b->y, b->id);
}

static int violation_cmp(const void *p, const void *q)
{
    const struct lcn_violation *x = p, *y = q;
    return lcn_cmp3(x->kind, x->a, x->b, y->kind, y->a, y->b);
}

int validate_layout(const struct lcn_graph *g, const struct lcn_pt *pts, int32_t max_listed,
                    struct lcn_report *r)
{
    return validate_layout_stop(g, pts, max_listed, NULL, r);
}

int validate_layout_stop(const struct lcn_graph *g, const struct lcn_pt *pts, int32_t max_listed,
                         const struct lcn_stop *stop, struct lcn_report *r)
{
    int rc = 0;
    int64_t work = 0;
    memset(r, 0, sizeof(*r));
    /* a stop that has fired gives no verdict: not even the sorts (tens of
     * ms at 200,000 nodes) run */
    if ((rc = lcn_stop_check(stop)) != 0) {
        r->list = xmalloc(sizeof(*r->list));
        r->c = xmalloc(sizeof(int32_t));
        return rc;
    }
    if (max_listed < 0)
        max_listed = 0;
    r->list = xmalloc(sizeof(*r->list) * (size_t)(max_listed ? max_listed : 1));
    r->c = xmalloc(sizeof(int32_t) * (size_t)(g->m ? g->m : 1));

    /* V1 */
    for (int32_t v = 0; v < g->n; v++) {
        if (pts[v].x < 0 || pts[v].y < 0 || pts[v].x > g->width || pts[v].y > g->height)
            note(r, max_listed, LCN_V1_OUT_OF_BOUNDS, v, -1);
    }

    /* V2: sort by point; every pair within a run of equal points is a violation. */
    struct pnode *ps = xmalloc(sizeof(*ps) * (size_t)(g->n ? g->n : 1));
    for (int32_t v = 0; v < g->n; v++)
        ps[v] = (struct pnode){pts[v].x, pts[v].y, v};
    qsort(ps, (size_t)g->n, sizeof(*ps), pnode_cmp);
    for (int32_t i = 0; i < g->n;) {
        int32_t j = i + 1;
        while (j < g->n && ps[j].x == ps[i].x && ps[j].y == ps[i].y)
            j++;
        int64_t k = j - i, pairs = k * (k - 1) / 2;
        /* list pairs while there is room (ids ascend within a run), count all */
        for (int32_t a = i; a < j && r->listed < max_listed; a++)
            for (int32_t b = a + 1; b < j && r->listed < max_listed; b++)
                r->list[r->listed++] =
                    (struct lcn_violation){LCN_V2_SHARED_POINT, ps[a].id, ps[b].id};
        r->count[LCN_V2_SHARED_POINT] += pairs;
        r->total += pairs;
        i = j;
    }

    /* V3: for each edge, the nodes whose x lies in the edge's x-range. */
    for (int32_t e = 0; e < g->m && !rc; e++) {
        struct lcn_pt a = pts[g->eu[e]], b = pts[g->ev[e]];
        int32_t lo = LCN_MIN(a.x, b.x), hi = LCN_MAX(a.x, b.x);
        /* first index with x >= lo */
        int32_t L = 0, R = g->n;
        while (L < R) {
            int32_t mid = L + (R - L) / 2;
            if (ps[mid].x < lo)
                L = mid + 1;
            else
                R = mid;
        }
        int32_t i = L;
        for (; i < g->n && ps[i].x <= hi; i++) {
            int32_t w = ps[i].id;
            if (w == g->eu[e] || w == g->ev[e])
                continue;
            if (node_on_edge_interior(a, b, pts[w]))
                note(r, max_listed, LCN_V3_NODE_ON_EDGE, w, e);
        }
        rc = lcn_stop_tick(stop, &work, 16 + (int64_t)(i - L));
    }
    free(ps);
    if (rc) {
        r->valid = 0;
        return rc;
    }

    /* V4 and the crossing counts share one sweep over x-spans (sorting the
     * spans is tens of ms at 400,000 edges: the stop is checked first) */
    memset(r->c, 0, sizeof(int32_t) * (size_t)g->m);
    if ((rc = lcn_stop_check(stop)) != 0) {
        r->valid = 0;
        return rc;
    }
    struct span *s = edge_spans(g, pts);
    for (int32_t i = 0; i < g->m && !rc; i++) {
        int32_t e = s[i].id;
        struct lcn_pt a = s[i].a, b = s[i].b;
        int32_t j = i + 1;
        for (; j < g->m && s[j].lo <= s[i].hi; j++) {
            if (y_apart(&s[j], &s[i]))
                continue; /* no common point: neither V4 nor a crossing */
            int32_t f = s[j].id;
            struct lcn_pt c = s[j].a, d = s[j].b;
            int s1 = side(a, b, c), s2 = side(a, b, d);
            if (overlap_sides(a, b, c, d, s1, s2))
                note(r, max_listed, LCN_V4_EDGE_OVERLAP, LCN_MIN(e, f), LCN_MAX(e, f));
            if (!shares_endpoint(g, e, f) && meet_sides(a, b, c, d, s1, s2)) {
                r->c[e]++;
                r->c[f]++;
            }
        }
        rc = lcn_stop_tick(stop, &work, 4 + (int64_t)(j - i));
    }
    free(s);
    if (rc) {
        r->valid = 0;
        return rc;
    }

    /* Sort the listed violations by kind, then ids, for stable output. The
     * keys are distinct, so qsort's instability does not matter; an insertion
     * sort here was quadratic in the listed count (repair lists millions). */
    qsort(r->list, (size_t)r->listed, sizeof(*r->list), violation_cmp);

    r->valid = r->total == 0;
    return obj_from_counts(&r->obj, r->c, g->m);
}

void report_release(struct lcn_report *r)
{
    free(r->list);
    free(r->c);
    memset(r, 0, sizeof(*r));
}

int validate_claim(const struct lcn_graph *g, const struct lcn_pt *pts, const struct lcn_obj *claim,
                   const struct lcn_stop *stop, struct lcn_obj *obj, char *diag, size_t len)
{
    struct lcn_report rep;
    char tmp[8];
    if (!diag || len == 0) {
        diag = tmp;
        len = sizeof(tmp);
    }
    diag[0] = 0;
    int rc = validate_layout_stop(g, pts, 1, stop, &rep);
    if (rc == 0 && obj)
        *obj = rep.obj;
    if (rc == 0 && !rep.valid) {
        const struct lcn_violation *v = rep.listed ? &rep.list[0] : NULL;
        snprintf(diag, len, "engine published an invalid layout (%lld violations, first %s %d %d)",
                 (long long)rep.total, v ? validate_kind_name(v->kind) : "?", v ? v->a : -1,
                 v ? v->b : -1);
        rc = LCN_ECORRUPT;
    } else if (rc == 0 && obj_cmp(&rep.obj, claim) != 0) {
        char a[96], b[96];
        obj_format(claim, a, sizeof a);
        obj_format(&rep.obj, b, sizeof b);
        snprintf(diag, len, "engine claimed %s but the oracle counts %s", a, b);
        rc = LCN_ECORRUPT;
    } else if (rc && rc != LCN_EDEADLINE && rc != LCN_ECANCELLED) {
        snprintf(diag, len, "oracle recount failed: %s", lcn_strerror(rc));
    }
    report_release(&rep);
    return rc;
}
