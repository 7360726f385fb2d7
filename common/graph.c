#include "graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "util.h"

static int fail(struct lcn_graph_error *why, int err, int32_t edge, int32_t other, const char *msg)
{
    if (why) {
        why->err = err;
        why->edge = edge;
        why->other = other;
        snprintf(why->msg, sizeof(why->msg), "%s", msg);
    }
    return err;
}

/* Sort key for duplicate detection: (min endpoint, max endpoint, index). */
struct ekey {
    int32_t a, b, idx;
};

static int ekey_cmp(const void *pa, const void *pb)
{
    const struct ekey *x = pa, *y = pb;
    return lcn_cmp3(x->a, x->b, x->idx, y->a, y->b, y->idx);
}

int graph_init(struct lcn_graph *g, int32_t n, int32_t m, const int32_t *src, const int32_t *dst,
               int32_t width, int32_t height, struct lcn_graph_error *why)
{
    char msg[160];
    memset(g, 0, sizeof(*g));
    if (why) {
        why->err = 0;
        why->edge = why->other = -1;
        why->msg[0] = 0;
    }
    if (n < 0 || n > LCN_MAX_NODES) {
        snprintf(msg, sizeof(msg), "node count %d outside [0, %d]", n, LCN_MAX_NODES);
        return fail(why, LCN_ERANGE, -1, -1, msg);
    }
    if (m < 0 || m > LCN_MAX_EDGES) {
        snprintf(msg, sizeof(msg), "edge count %d outside [0, %d]", m, LCN_MAX_EDGES);
        return fail(why, LCN_ERANGE, -1, -1, msg);
    }
    if (width < 0 || width > LCN_COORD_LIMIT || height < 0 || height > LCN_COORD_LIMIT) {
        snprintf(msg, sizeof(msg), "bounds %d x %d outside [0, %d]", width, height,
                 LCN_COORD_LIMIT);
        return fail(why, LCN_ERANGE, -1, -1, msg);
    }
    for (int32_t e = 0; e < m; e++) {
        if (src[e] < 0 || src[e] >= n) {
            snprintf(msg, sizeof(msg), "unknown node 'source' %d", src[e]);
            return fail(why, LCN_EINVAL, e, -1, msg);
        }
        if (dst[e] < 0 || dst[e] >= n) {
            snprintf(msg, sizeof(msg), "unknown node 'target' %d", dst[e]);
            return fail(why, LCN_EINVAL, e, -1, msg);
        }
        if (src[e] == dst[e]) {
            snprintf(msg, sizeof(msg), "self-loop at node %d", src[e]);
            return fail(why, LCN_EINVAL, e, -1, msg);
        }
    }
    struct ekey *keys = xmalloc(sizeof(*keys) * (size_t)(m ? m : 1));
    for (int32_t e = 0; e < m; e++) {
        keys[e].a = LCN_MIN(src[e], dst[e]);
        keys[e].b = LCN_MAX(src[e], dst[e]);
        keys[e].idx = e;
    }
    qsort(keys, (size_t)m, sizeof(*keys), ekey_cmp);
    for (int32_t i = 1; i < m; i++) {
        if (keys[i].a == keys[i - 1].a && keys[i].b == keys[i - 1].b) {
            snprintf(msg, sizeof(msg), "duplicate of edge %d (%d-%d)", keys[i - 1].idx, keys[i].a,
                     keys[i].b);
            int rc = fail(why, LCN_EINVAL, keys[i].idx, keys[i - 1].idx, msg);
            free(keys);
            return rc;
        }
    }
    free(keys);

    g->n = n;
    g->m = m;
    g->width = width;
    g->height = height;
    g->eu = xmalloc(sizeof(int32_t) * (size_t)(m ? m : 1));
    g->ev = xmalloc(sizeof(int32_t) * (size_t)(m ? m : 1));
    if (m) {
        memcpy(g->eu, src, sizeof(int32_t) * (size_t)m);
        memcpy(g->ev, dst, sizeof(int32_t) * (size_t)m);
    }
    g->inc_off = xcalloc((size_t)n + 1, sizeof(int32_t));
    g->inc = xmalloc(sizeof(int32_t) * (size_t)(2 * (int64_t)m + 1));
    for (int32_t e = 0; e < m; e++) {
        g->inc_off[src[e] + 1]++;
        g->inc_off[dst[e] + 1]++;
    }
    for (int32_t v = 0; v < n; v++)
        g->inc_off[v + 1] += g->inc_off[v];
    int32_t *fill = xmalloc(sizeof(int32_t) * (size_t)(n ? n : 1));
    memcpy(fill, g->inc_off, sizeof(int32_t) * (size_t)n);
    for (int32_t e = 0; e < m; e++) {
        g->inc[fill[src[e]]++] = e;
        g->inc[fill[dst[e]]++] = e;
    }
    free(fill);
    g->max_degree = 0;
    for (int32_t v = 0; v < n; v++)
        g->max_degree = LCN_MAX(g->max_degree, graph_degree(g, v));
    return 0;
}

void graph_release(struct lcn_graph *g)
{
    LCN_FREE_ALL(g->eu, g->ev, g->inc_off, g->inc);
    memset(g, 0, sizeof(*g));
}

/* Orders edge keys by their endpoints alone (graph_same's lookups). */
static int ekey_pair_cmp(const void *pa, const void *pb)
{
    const struct ekey *x = pa, *y = pb;
    if (x->a != y->a)
        return x->a < y->a ? -1 : 1;
    return (x->b > y->b) - (x->b < y->b);
}

int graph_same(const struct lcn_graph *a, const struct lcn_graph *b, const char *other, char *why,
               size_t len)
{
    if (a->n != b->n) {
        snprintf(why, len, "%d nodes, %s has %d", a->n, other, b->n);
        return 0;
    }
    if (a->width != b->width || a->height != b->height) {
        snprintf(why, len, "bounds %d x %d, %s has %d x %d", a->width, a->height, other, b->width,
                 b->height);
        return 0;
    }
    if (a->m != b->m) {
        snprintf(why, len, "%d edges, %s has %d", a->m, other, b->m);
        return 0;
    }
    /* both are simple graphs with m edges: equal sets when every edge of a is in b */
    struct ekey *keys = xmalloc(sizeof(*keys) * (size_t)(b->m ? b->m : 1));
    for (int32_t e = 0; e < b->m; e++)
        keys[e] = (struct ekey){LCN_MIN(b->eu[e], b->ev[e]), LCN_MAX(b->eu[e], b->ev[e]), e};
    qsort(keys, (size_t)b->m, sizeof(*keys), ekey_pair_cmp);
    int same = 1;
    for (int32_t e = 0; e < a->m && same; e++) {
        struct ekey k = {LCN_MIN(a->eu[e], a->ev[e]), LCN_MAX(a->eu[e], a->ev[e]), e};
        if (!bsearch(&k, keys, (size_t)b->m, sizeof(*keys), ekey_pair_cmp)) {
            snprintf(why, len, "edge %d (%d-%d) is not in %s", e, a->eu[e], a->ev[e], other);
            same = 0;
        }
    }
    free(keys);
    return same;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return h;
}

uint64_t graph_hash(const struct lcn_graph *g)
{
    uint64_t h = 14695981039346656037ull;
    int32_t hdr[4] = {g->n, g->m, g->width, g->height};
    h = fnv(h, hdr, sizeof(hdr));
    for (int32_t e = 0; e < g->m; e++) {
        int32_t p[2] = {g->eu[e], g->ev[e]};
        h = fnv(h, p, sizeof(p));
    }
    return h;
}

uint64_t layout_hash(const struct lcn_pt *pts, int32_t n)
{
    uint64_t h = 14695981039346656037ull;
    for (int32_t v = 0; v < n; v++) {
        int32_t p[2] = {pts[v].x, pts[v].y};
        h = fnv(h, p, sizeof(p));
    }
    return h;
}
