/*
 * validate_ref.c - the oracle's slow twin (validate_ref.h): the x-sorted
 * sweep over all edges on one thread, as validate.c was before its strips
 * and threads. Every violation found is kept; the list is sorted by (kind,
 * a, b) and cut to max_listed at the end, the obviously canonical listing.
 */
#include "validate_ref.h"

#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "stop.h"
#include "util.h"
#include "validate_pred.h"

/*
 * An edge in the x-sweep: its x-range [lo, hi], its y-range [ylo, yhi] and
 * its ends. Two segments with a point in common (meet, overlap) have
 * overlapping x- and y-ranges, so the sweep skips a pair whose y-ranges are
 * disjoint before any predicate.
 */
struct rspan {
    int32_t lo, hi, id, ylo, yhi;
    struct lcn_pt a, b;
};

static int y_apart(const struct rspan *a, const struct rspan *b)
{
    return a->yhi < b->ylo || a->ylo > b->yhi;
}

static int rspan_cmp(const void *p, const void *q)
{
    const struct rspan *a = p, *b = q;
    if (a->lo != b->lo)
        return a->lo < b->lo ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

static struct rspan *edge_spans(const struct lcn_graph *g, const struct lcn_pt *pts)
{
    struct rspan *s = xmalloc(sizeof(*s) * (size_t)(g->m ? g->m : 1));
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
    qsort(s, (size_t)g->m, sizeof(*s), rspan_cmp);
    return s;
}

uint64_t validate_counts_sweep(const struct lcn_graph *g, const struct lcn_pt *pts, int32_t *c)
{
    memset(c, 0, sizeof(int32_t) * (size_t)g->m);
    struct rspan *s = edge_spans(g, pts);
    uint64_t tests = 0;
    for (int32_t i = 0; i < g->m; i++) {
        int32_t e = s[i].id;
        for (int32_t j = i + 1; j < g->m && s[j].lo <= s[i].hi; j++) {
            int32_t f = s[j].id;
            if (y_apart(&s[j], &s[i]) || vp_shares_endpoint(g, e, f))
                continue;
            tests++;
            if (vp_meet(s[i].a, s[i].b, s[j].a, s[j].b)) {
                c[e]++;
                c[f]++;
            }
        }
    }
    free(s);
    return tests;
}

/* Every violation found, in the order found. */
struct rlist {
    struct lcn_violation *v;
    size_t len, cap;
};

static void note(struct lcn_report *r, struct rlist *l, enum lcn_vkind k, int32_t a, int32_t b)
{
    r->count[k]++;
    r->total++;
    xgrow((void **)&l->v, sizeof(*l->v), &l->cap, l->len + 1);
    l->v[l->len++] = (struct lcn_violation){k, a, b};
}

struct rnode {
    int32_t x, y, id;
};

static int rnode_cmp(const void *p, const void *q)
{
    const struct rnode *a = p, *b = q;
    return lcn_cmp3(a->x, a->y, a->id, b->x, b->y, b->id);
}

/* V1, V2 and V3 (nodes sorted by x; each edge looks at the nodes of its
 * x-range). Returns 0 or the stop's code. */
static int check_nodes(const struct lcn_graph *g, const struct lcn_pt *pts,
                       const struct lcn_stop *stop, struct lcn_report *r, struct rlist *l)
{
    for (int32_t v = 0; v < g->n; v++) {
        if (pts[v].x < 0 || pts[v].y < 0 || pts[v].x > g->width || pts[v].y > g->height)
            note(r, l, LCN_V1_OUT_OF_BOUNDS, v, -1);
    }
    struct rnode *ps = xmalloc(sizeof(*ps) * (size_t)(g->n ? g->n : 1));
    for (int32_t v = 0; v < g->n; v++)
        ps[v] = (struct rnode){pts[v].x, pts[v].y, v};
    qsort(ps, (size_t)g->n, sizeof(*ps), rnode_cmp);
    for (int32_t i = 0; i < g->n;) {
        int32_t j = i + 1;
        while (j < g->n && ps[j].x == ps[i].x && ps[j].y == ps[i].y)
            j++;
        for (int32_t a = i; a < j; a++)
            for (int32_t b = a + 1; b < j; b++)
                note(r, l, LCN_V2_SHARED_POINT, ps[a].id, ps[b].id);
        i = j;
    }
    int rc = 0;
    int64_t work = 0;
    for (int32_t e = 0; e < g->m && !rc; e++) {
        struct lcn_pt a = pts[g->eu[e]], b = pts[g->ev[e]];
        int32_t lo = LCN_MIN(a.x, b.x), hi = LCN_MAX(a.x, b.x);
        int32_t L = 0, R = g->n; /* first index with x >= lo */
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
            if (vp_node_on_edge_interior(a, b, pts[w]))
                note(r, l, LCN_V3_NODE_ON_EDGE, w, e);
        }
        rc = lcn_stop_tick(stop, &work, 16 + (int64_t)(i - L));
    }
    free(ps);
    return rc;
}

/* V4 and the crossing counts in one sweep over x-spans. */
static int check_edges(const struct lcn_graph *g, const struct lcn_pt *pts,
                       const struct lcn_stop *stop, struct lcn_report *r, struct rlist *l)
{
    struct rspan *s = edge_spans(g, pts);
    int rc = 0;
    int64_t work = 0;
    for (int32_t i = 0; i < g->m && !rc; i++) {
        int32_t e = s[i].id;
        struct lcn_pt a = s[i].a, b = s[i].b;
        int32_t j = i + 1;
        for (; j < g->m && s[j].lo <= s[i].hi; j++) {
            if (y_apart(&s[j], &s[i]))
                continue;
            int32_t f = s[j].id;
            struct lcn_pt c = s[j].a, d = s[j].b;
            int s1 = vp_side(a, b, c), s2 = vp_side(a, b, d);
            if (vp_overlap_sides(a, b, c, d, s1, s2))
                note(r, l, LCN_V4_EDGE_OVERLAP, LCN_MIN(e, f), LCN_MAX(e, f));
            if (!vp_shares_endpoint(g, e, f) && vp_meet_sides(a, b, c, d, s1, s2)) {
                r->c[e]++;
                r->c[f]++;
            }
        }
        rc = lcn_stop_tick(stop, &work, 4 + (int64_t)(j - i));
    }
    free(s);
    return rc;
}

int validate_layout_sweep(const struct lcn_graph *g, const struct lcn_pt *pts, int32_t max_listed,
                          const struct lcn_stop *stop, struct lcn_report *r)
{
    memset(r, 0, sizeof(*r));
    r->c = xcalloc((size_t)(g->m ? g->m : 1), sizeof(int32_t));
    struct rlist l = {0};
    int rc = lcn_stop_check(stop);
    if (!rc)
        rc = check_nodes(g, pts, stop, r, &l);
    if (!rc)
        rc = lcn_stop_check(stop);
    if (!rc)
        rc = check_edges(g, pts, stop, r, &l);
    if (max_listed < 0)
        max_listed = 0;
    if (l.len)
        qsort(l.v, l.len, sizeof(*l.v), vp_violation_cmp);
    r->listed = (int32_t)LCN_MIN(l.len, (size_t)max_listed);
    r->list = xmalloc(sizeof(*r->list) * (size_t)(r->listed ? r->listed : 1));
    if (r->listed)
        memcpy(r->list, l.v, sizeof(*r->list) * (size_t)r->listed);
    free(l.v);
    if (rc) {
        r->valid = 0;
        return rc;
    }
    r->valid = r->total == 0;
    return obj_from_counts(&r->obj, r->c, g->m);
}
