/*
 * validate.c - the oracle's fast path: the x-sorted sweep of validate_ref.c
 * run inside horizontal strips, on several threads when the graph is large.
 *
 * Strips. The y-range of the nodes is cut into S strips; an edge is entered
 * in every strip its y-range touches, and each strip's entries are swept in
 * (x-start, id) order exactly as the whole graph was. Two edges whose y-ranges
 * overlap both span y* = max(ylo_e, ylo_f), so both lie in strip(y*), which
 * is max(first strip of e, first strip of f): the pair is handled there and
 * skipped in every other strip. Every pair with overlapping x- and y-ranges
 * is thus seen exactly once, in the same orientation as in the single sweep,
 * and the counts are the single sweep's. V3 looks up, for each edge, the
 * nodes of the strips it spans (nodes sorted by strip, then x). S starts near
 * sqrt(m) and is halved while the strips hold more than STRIP_ENTRIES
 * entries per edge (long edges: dense graphs); S = 1 is the single sweep.
 *
 * Threads. The V3 work (chunks of edges) and the sweep (chunks of strip
 * entries) are work items numbered in one sequence; the workers take the
 * next number from an atomic counter until none is left. Each worker owns
 * its per-edge counts, pair-test count, violation counts and violation
 * buffer; the caller adds them up after joining (integer sums: the result
 * does not depend on which worker did what). Everything else the workers
 * read is built before they start and not written while they run. A worker
 * whose stop tick fires stores the stop's code in halt (the first code
 * stays); every worker polls halt between edges or entries and leaves.
 *
 * Predicates. validate_pred.h's, 128-bit; when every coordinate is within
 * 2^30 the sweep's orientations are taken with 64-bit products (exact
 * there) and general-position pairs decided without a branch
 * (edge_pair_small), the degenerate ones by the 128-bit case analysis.
 *
 * Listing. V1 and V2 are listed in (kind, a, b) order directly. Each worker
 * keeps its V3/V4 finds in a buffer that it sorts and cuts to the room left
 * when it reaches twice that, so the list is the smallest violations whatever
 * the strips, the threads and the order of the work.
 */
#include "validate.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "stop.h"
#include "util.h"
#include "validate_pred.h"
#include "validate_ref.h"

#define STRIP_MAX         65536
#define STRIP_ENTRIES     3       /* strip entries per edge the strips may cost */
#define THREADS_MAX       16      /* sweep threads at most */
#define THREADS_MIN_EDGES 20000   /* from this many edges the sweep is threaded */
#define THREADS_MIN_WORK  2000000 /* or from this many estimated candidate pairs */
#define ITEMS_PER_THREAD  64      /* work items per thread and phase (load balance) */
#define ITEM_MIN          256     /* edges or entries per work item at least */

/* Horizontal strips: y in [y0, y0 + h) lies in strip ((y - y0) mul) >> 32
 * with mul = floor(2^32 S / h), a nondecreasing function of y whose values
 * are below S (at most (h - 1) S / h): a product, not a division. */
struct strips {
    int64_t y0, h;
    uint64_t mul;
    int32_t S;
};

static void strips_set(struct strips *sp, int32_t S)
{
    sp->S = S;
    sp->mul = (uint64_t)(((unsigned __int128)S << 32) / (uint64_t)sp->h);
}

static int32_t strip_of(const struct strips *sp, int32_t y)
{
    return (int32_t)(((uint64_t)((int64_t)y - sp->y0) * sp->mul) >> 32);
}

/*
 * Stable LSD radix sort of a[0..n) by the upper 32 bits (keys up to max),
 * with tmp as scratch; returns the array that holds the result (a or tmp).
 * Keys with a record index in the lower 32 bits make a permutation sort in
 * O(n) per pass. Digits of 11 bits, fewer for short arrays (the counts
 * would cost more than the records).
 */
static uint64_t *radix_sort(uint64_t *a, uint64_t *tmp, int64_t n, uint32_t max)
{
    int bits = n < 64 ? 4 : (n < 4096 ? 8 : 11);
    uint64_t mask = ((uint64_t)1 << bits) - 1;
    for (int shift = 32; shift < 64 && (max >> (shift - 32)); shift += bits) {
        int64_t cnt[2049];
        memset(cnt, 0, sizeof(cnt[0]) * ((size_t)mask + 2));
        for (int64_t i = 0; i < n; i++)
            cnt[((a[i] >> shift) & mask) + 1]++;
        for (uint64_t d = 0; d < mask; d++)
            cnt[d + 1] += cnt[d];
        for (int64_t i = 0; i < n; i++)
            tmp[cnt[(a[i] >> shift) & mask]++] = a[i];
        uint64_t *t = a;
        a = tmp;
        tmp = t;
    }
    return a;
}

/*
 * An edge in a strip's sweep: its x-range [lo, hi], its y-range [ylo, yhi],
 * the first strip it is entered in, its id, end nodes and end points. Two
 * segments with a point in common (meet, overlap) have overlapping x- and
 * y-ranges, so the sweep skips a pair whose y-ranges are disjoint before
 * any predicate.
 */
struct span {
    int32_t lo, hi, ylo, yhi;
    int32_t slo, id, u, v;
    struct lcn_pt a, b;
};

struct pnode {
    int32_t st, x, y, id;
};

/*
 * The search structure: nodes by (strip, x, y, id), strip st's being
 * pn[noff[st] .. noff[st + 1]); edge entries by strip, then (lo, id), strip
 * st's being ent[eoff[st] .. eoff[st + 1]).
 */
struct index {
    struct strips sp;
    struct span *spans; /* the edges, m entries: by id, then by (lo, id) */
    struct pnode *pn;
    int32_t *noff;
    struct span *ent; /* spans itself when S = 1 */
    int small;        /* every coordinate in [-2^30, 2^30] (vp_side_small) */
    int64_t *eoff, nent;
};

/* The number of strip entries S strips would make. */
static int64_t strip_entries(const struct span *s, int32_t m, const struct strips *sp)
{
    int64_t n = 0;
    for (int32_t e = 0; e < m; e++)
        n += strip_of(sp, s[e].yhi) - strip_of(sp, s[e].ylo) + 1;
    return n;
}

/* Fills ix->spans (by edge id) and chooses the strips (want > 0: that many,
 * up to one per y value). */
static void index_strips(struct index *ix, const struct lcn_graph *g, const struct lcn_pt *pts,
                         int32_t want)
{
    memset(ix, 0, sizeof(*ix));
    int64_t y0 = 0, y1 = 0;
    ix->small = 1;
    for (int32_t v = 0; v < g->n; v++) {
        y0 = v == 0 || pts[v].y < y0 ? pts[v].y : y0;
        y1 = v == 0 || pts[v].y > y1 ? pts[v].y : y1;
        ix->small &= pts[v].x >= -VP_SMALL && pts[v].x <= VP_SMALL && pts[v].y >= -VP_SMALL &&
                     pts[v].y <= VP_SMALL;
    }
    struct span *s = xmalloc(sizeof(*s) * (size_t)(g->m ? g->m : 1));
    for (int32_t e = 0; e < g->m; e++) {
        struct lcn_pt a = pts[g->eu[e]], b = pts[g->ev[e]];
        s[e] = (struct span){LCN_MIN(a.x, b.x),
                             LCN_MAX(a.x, b.x),
                             LCN_MIN(a.y, b.y),
                             LCN_MAX(a.y, b.y),
                             0,
                             e,
                             g->eu[e],
                             g->ev[e],
                             a,
                             b};
    }
    ix->spans = s;
    ix->sp.y0 = y0;
    ix->sp.h = y1 - y0 + 1;
    int64_t S = want;
    if (S <= 0)
        for (S = 1; (S + 1) * (S + 1) <= g->m; S++)
            ;
    strips_set(&ix->sp, (int32_t)LCN_MIN(LCN_MIN(S, STRIP_MAX), ix->sp.h));
    while (want <= 0 && ix->sp.S > 1 &&
           strip_entries(s, g->m, &ix->sp) > STRIP_ENTRIES * (int64_t)g->m)
        strips_set(&ix->sp, ix->sp.S / 2);
}

/* Sorts the permutation p (record indices in the lower 32 bits) by key(p)
 * - lo (each < 2^32), stably; returns where the result is. */
static uint64_t *sort_by(uint64_t *p, uint64_t *tmp, int64_t n, const int32_t *key, size_t stride,
                         int64_t lo, int64_t hi)
{
    for (int64_t i = 0; i < n; i++) {
        uint32_t r = (uint32_t)p[i];
        int32_t k = *(const int32_t *)((const char *)key + stride * r);
        p[i] = (uint64_t)(uint32_t)(k - lo) << 32 | r;
    }
    return radix_sort(p, tmp, n, (uint32_t)(hi - lo));
}

/* The smallest and the largest key of n records, read as sort_by reads them. */
static void key_range(const int32_t *key, size_t stride, int64_t n, int64_t *lo, int64_t *hi)
{
    *lo = *hi = 0;
    for (int64_t i = 0; i < n; i++) {
        int32_t k = *(const int32_t *)((const char *)key + stride * (size_t)i);
        *lo = i == 0 || k < *lo ? k : *lo;
        *hi = i == 0 || k > *hi ? k : *hi;
    }
}

/* The identity permutation of n records for sort_by, and its scratch array. */
static uint64_t *perm_new(int64_t n, uint64_t **tmp)
{
    uint64_t *p = xmalloc(sizeof(uint64_t) * (size_t)(n ? n : 1));
    *tmp = xmalloc(sizeof(uint64_t) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++)
        p[i] = (uint64_t)i;
    return p;
}

/* *arr's n records (size bytes each) in the order of q's record indices,
 * in place of *arr; p and tmp (perm_new's) are freed. */
static void permute(void **arr, size_t size, const uint64_t *q, int64_t n, uint64_t *p,
                    uint64_t *tmp)
{
    char *sorted = xmalloc(size * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++)
        memcpy(sorted + size * (size_t)i, (const char *)*arr + size * (uint32_t)q[i], size);
    free(*arr);
    *arr = sorted;
    free(p);
    free(tmp);
}

/* Sorts the nodes by (strip, x, y, id): equal points are neighbours. */
static void index_nodes(struct index *ix, const struct lcn_graph *g, const struct lcn_pt *pts)
{
    int32_t S = ix->sp.S;
    ix->pn = xmalloc(sizeof(*ix->pn) * (size_t)(g->n ? g->n : 1));
    ix->noff = xcalloc((size_t)S + 1, sizeof(int32_t));
    for (int32_t v = 0; v < g->n; v++) {
        ix->pn[v] = (struct pnode){strip_of(&ix->sp, pts[v].y), pts[v].x, pts[v].y, v};
        ix->noff[ix->pn[v].st + 1]++;
    }
    for (int32_t st = 0; st < S; st++)
        ix->noff[st + 1] += ix->noff[st];
    /* stable sorts by y, then x, then strip: (strip, x, y, id) order */
    const int64_t n = g->n;
    const size_t z = sizeof(*ix->pn);
    int64_t x0, x1;
    key_range(&ix->pn[0].x, z, n, &x0, &x1);
    uint64_t *tmp, *p = perm_new(n, &tmp);
    uint64_t *q = sort_by(p, tmp, n, &ix->pn[0].y, z, ix->sp.y0, ix->sp.y0 + ix->sp.h - 1);
    q = sort_by(q, q == p ? tmp : p, n, &ix->pn[0].x, z, x0, x1);
    q = sort_by(q, q == p ? tmp : p, n, &ix->pn[0].st, z, 0, S - 1);
    permute((void **)&ix->pn, z, q, n, p, tmp);
}

/* Sorts ix->spans by (lo, id): a stable sort by lo of the spans in id order. */
static void sort_spans(struct index *ix, int32_t m)
{
    const size_t z = sizeof(*ix->spans);
    int64_t x0, x1;
    key_range(&ix->spans[0].lo, z, m, &x0, &x1);
    uint64_t *tmp, *p = perm_new(m, &tmp);
    permute((void **)&ix->spans, z, sort_by(p, tmp, m, &ix->spans[0].lo, z, x0, x1), m, p, tmp);
}

/* Sorts the spans by (lo, id) and deals them to the strips they touch (in
 * that order: each strip's entries come out sorted). */
static void index_edges(struct index *ix, int32_t m)
{
    int32_t S = ix->sp.S;
    sort_spans(ix, m);
    struct span *s = ix->spans;
    ix->eoff = xcalloc((size_t)S + 1, sizeof(int64_t));
    for (int32_t i = 0; i < m; i++) {
        s[i].slo = strip_of(&ix->sp, s[i].ylo);
        for (int32_t st = s[i].slo, shi = strip_of(&ix->sp, s[i].yhi); st <= shi; st++)
            ix->eoff[st + 1]++;
    }
    for (int32_t st = 0; st < S; st++)
        ix->eoff[st + 1] += ix->eoff[st];
    ix->nent = ix->eoff[S];
    if (S == 1) {
        ix->ent = s;
        return;
    }
    ix->ent = xmalloc(sizeof(*ix->ent) * (size_t)(ix->nent ? ix->nent : 1));
    int64_t *fill = xmalloc(sizeof(int64_t) * (size_t)S);
    memcpy(fill, ix->eoff, sizeof(int64_t) * (size_t)S);
    for (int32_t i = 0; i < m; i++)
        for (int32_t st = s[i].slo, shi = strip_of(&ix->sp, s[i].yhi); st <= shi; st++)
            ix->ent[fill[st]++] = s[i];
    free(fill);
}

static void index_release(struct index *ix)
{
    if (ix->ent != ix->spans)
        free(ix->ent);
    LCN_FREE_ALL(ix->spans, ix->pn, ix->noff, ix->eoff);
    memset(ix, 0, sizeof(*ix));
}

/* The strip holding entry i: the last st with eoff[st] <= i. */
static int32_t strip_at(const struct index *ix, int64_t i)
{
    int32_t L = 0, R = ix->sp.S - 1;
    while (L < R) {
        int32_t mid = L + (R - L + 1) / 2;
        if (ix->eoff[mid] <= i)
            L = mid;
        else
            R = mid - 1;
    }
    return L;
}

/* What one strip entry sweeps over: entries i + 1 .. the return value - 1. */
static int64_t sweep_end(const struct index *ix, int64_t i, int64_t end)
{
    int64_t L = i + 1, R = end;
    while (L < R) {
        int64_t mid = L + (R - L) / 2;
        if (ix->ent[mid].lo <= ix->ent[i].hi)
            L = mid + 1;
        else
            R = mid;
    }
    return L;
}

/* The sweep's candidate pairs, estimated from every 16th entry. */
static int64_t sampled_work(const struct index *ix)
{
    int64_t work = 0;
    int32_t st = 0;
    for (int64_t i = 0; i < ix->nent; i += 16) {
        while (i >= ix->eoff[st + 1])
            st++;
        work += 16 * (sweep_end(ix, i, ix->eoff[st + 1]) - i - 1);
    }
    return work;
}

static int32_t sweep_threads(const struct index *ix, int32_t m, const struct validate_tuning *t)
{
    if (t && t->threads > 0)
        return t->threads;
    if (m < THREADS_MIN_EDGES && sampled_work(ix) < THREADS_MIN_WORK)
        return 1;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 2)
        return 1;
    return (int32_t)LCN_MIN(cores, THREADS_MAX);
}

/* What the workers share: read-only but for next and halt. */
struct sweep {
    const struct lcn_graph *g;
    const struct index *ix;
    int check;                      /* 1: V3, V4 and the counts (validate_layout); 0: counts only */
    int64_t room;                   /* V3/V4 violations a worker keeps listed */
    int64_t n3, n4, chunk3, chunk4; /* n3 items of chunk3 edges (V3), then n4 of entries */
    const struct lcn_stop *stop;
    atomic_llong next; /* the next work item */
    atomic_int halt;   /* the stop's code once a worker saw it fire */
};

/* A worker's V3/V4 finds: all of them, or once full the room smallest seen
 * (worst the largest of those) plus newer ones not larger. */
struct vbuf {
    struct lcn_violation *v;
    size_t len, cap;
    int full;
    struct lcn_violation worst;
};

struct worker {
    pthread_t th;
    int started;
    struct sweep *sw;
    int32_t *c;
    uint64_t tests;
    int64_t count[5];
    struct vbuf buf;
    int64_t work; /* stop ticks */
};

static void note(struct worker *w, enum lcn_vkind k, int32_t a, int32_t b)
{
    struct vbuf *bf = &w->buf;
    struct lcn_violation x = {k, a, b};
    int64_t room = w->sw->room;
    w->count[k]++;
    if (room == 0 || (bf->full && vp_violation_cmp(&x, &bf->worst) > 0))
        return;
    xgrow((void **)&bf->v, sizeof(*bf->v), &bf->cap, bf->len + 1);
    bf->v[bf->len++] = x;
    if ((int64_t)bf->len >= 2 * room) {
        qsort(bf->v, bf->len, sizeof(*bf->v), vp_violation_cmp);
        bf->len = (size_t)room;
        bf->worst = bf->v[room - 1];
        bf->full = 1;
    }
}

static int halted(const struct sweep *sw)
{
    return sw->stop && atomic_load_explicit(&sw->halt, memory_order_relaxed);
}

/* V3 for the edge of span s: the nodes of its strips and x-range inside
 * its y-range, then the predicate. Returns the nodes scanned. */
static int64_t v3_edge(struct worker *w, const struct span *s)
{
    const struct index *ix = w->sw->ix;
    int64_t scanned = 0;
    for (int32_t st = strip_of(&ix->sp, s->ylo), shi = strip_of(&ix->sp, s->yhi); st <= shi; st++) {
        int32_t L = ix->noff[st], R = ix->noff[st + 1], end = R;
        while (L < R) { /* first node with x >= lo */
            int32_t mid = L + (R - L) / 2;
            if (ix->pn[mid].x < s->lo)
                L = mid + 1;
            else
                R = mid;
        }
        int32_t i = L;
        for (; i < end && ix->pn[i].x <= s->hi; i++) {
            const struct pnode *p = &ix->pn[i];
            if (p->y < s->ylo || p->y > s->yhi || p->id == s->u || p->id == s->v)
                continue;
            if (vp_node_on_edge_interior(s->a, s->b, (struct lcn_pt){p->x, p->y}))
                note(w, LCN_V3_NODE_ON_EDGE, p->id, s->id);
        }
        scanned += i - L;
    }
    return scanned;
}

static int v3_item(struct worker *w, int64_t k)
{
    const struct sweep *sw = w->sw;
    int64_t i1 = LCN_MIN((k + 1) * sw->chunk3, (int64_t)sw->g->m);
    /* the spans by (lo, id): neighbouring edges search neighbouring nodes */
    for (int64_t i = k * sw->chunk3; i < i1 && !halted(sw); i++) {
        int rc = lcn_stop_tick(sw->stop, &w->work, 16 + v3_edge(w, &sw->ix->spans[i]));
        if (rc)
            return rc;
    }
    return 0;
}

/* Entries p (earlier in the sweep) and q of one strip, their y-ranges
 * overlapping: V4 and the crossing, as the single sweep tests them. */
/* Entries p (earlier in the sweep) and q of one strip, their y-ranges
 * overlapping: V4 and the crossing, as the single sweep tests them. */
static void edge_pair(struct worker *w, const struct span *p, const struct span *q)
{
    int shares = p->u == q->u || p->u == q->v || p->v == q->u || p->v == q->v;
    int s1 = 0, s2 = 0;
    if (w->sw->check || !shares) {
        s1 = vp_side(p->a, p->b, q->a);
        s2 = vp_side(p->a, p->b, q->b);
    }
    if (w->sw->check && vp_overlap_sides(p->a, p->b, q->a, q->b, s1, s2))
        note(w, LCN_V4_EDGE_OVERLAP, LCN_MIN(p->id, q->id), LCN_MAX(p->id, q->id));
    if (shares)
        return;
    w->tests++;
    if (vp_meet_sides(p->a, p->b, q->a, q->b, s1, s2)) {
        w->c[p->id]++;
        w->c[q->id]++;
    }
}

/*
 * edge_pair for a layout whose coordinates all lie in [-2^30, 2^30]
 * (vp_side_small is exact there). All four orientations are computed, and
 * in general position (no end on the other's line, nearly every pair) the
 * segments meet exactly when each separates the other's ends: the answer
 * without a data-dependent branch, which is what dense graphs spend their
 * time on. Any zero orientation goes through edge_pair's case analysis.
 */
static void edge_pair_small(struct worker *w, const struct span *p, const struct span *q)
{
    int shares = p->u == q->u || p->u == q->v || p->v == q->u || p->v == q->v;
    if (shares && !w->sw->check)
        return;
    int s1 = vp_side_small(p->a, p->b, q->a), s2 = vp_side_small(p->a, p->b, q->b);
    int s3 = vp_side_small(q->a, q->b, p->a), s4 = vp_side_small(q->a, q->b, p->b);
    if (!(s1 && s2 && s3 && s4)) {
        edge_pair(w, p, q);
        return;
    }
    if (shares)
        return; /* no overlap in general position: nothing to count */
    w->tests++;
    int hit = (s1 != s2) & (s3 != s4);
    w->c[p->id] += hit;
    w->c[q->id] += hit;
}

/* Strip st's entry i against the later entries of the strip that start
 * inside its x-range (end: the strip's end). Returns the entries scanned. */
static int64_t sweep_entry(struct worker *w, int64_t i, int64_t end, int32_t st)
{
    const struct span *s = w->sw->ix->ent, *p = &s[i];
    int own = p->slo == st, small = w->sw->ix->small;
    int64_t j = i + 1;
    for (; j < end && s[j].lo <= p->hi; j++) {
        const struct span *q = &s[j];
        /* no common point, or both started in earlier strips: the pair is
         * handled in the strip of max(ylo) */
        if (q->yhi < p->ylo || q->ylo > p->yhi || (!own && q->slo != st))
            continue;
        if (small)
            edge_pair_small(w, p, q);
        else
            edge_pair(w, p, q);
    }
    return j - i;
}

static int sweep_item(struct worker *w, int64_t k)
{
    const struct sweep *sw = w->sw;
    const struct index *ix = sw->ix;
    int64_t i = k * sw->chunk4, i1 = LCN_MIN(i + sw->chunk4, ix->nent);
    for (int32_t st = strip_at(ix, i); i < i1 && !halted(sw); i++) {
        while (i >= ix->eoff[st + 1])
            st++;
        int rc = lcn_stop_tick(sw->stop, &w->work, 4 + sweep_entry(w, i, ix->eoff[st + 1], st));
        if (rc)
            return rc;
    }
    return 0;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct sweep *sw = w->sw;
    for (;;) {
        int64_t k = atomic_fetch_add_explicit(&sw->next, 1, memory_order_relaxed);
        if (k >= sw->n3 + sw->n4 || halted(sw))
            break;
        int rc = k < sw->n3 ? v3_item(w, k) : sweep_item(w, k - sw->n3);
        if (rc) {
            int none = 0;
            atomic_compare_exchange_strong(&sw->halt, &none, rc);
            break;
        }
    }
    return NULL;
}

/* Splits the work into items for T workers (chunk > 0: that many edges or
 * entries an item). */
static void sweep_plan(struct sweep *sw, int32_t m, int32_t T, int32_t chunk)
{
    int64_t per = (int64_t)T * ITEMS_PER_THREAD;
    sw->chunk3 = chunk > 0 ? chunk : LCN_MAX(ITEM_MIN, m / per);
    sw->chunk4 = chunk > 0 ? chunk : LCN_MAX(ITEM_MIN, sw->ix->nent / per);
    sw->n3 = sw->check ? (m + sw->chunk3 - 1) / sw->chunk3 : 0;
    sw->n4 = (sw->ix->nent + sw->chunk4 - 1) / sw->chunk4;
    atomic_init(&sw->next, 0);
    atomic_init(&sw->halt, 0);
}

/*
 * Runs the sweep on T workers (the caller's thread is worker 0) and adds
 * their results up: per-edge counts into c (zeroed by the caller), the
 * pair tests into *tests, the violation counts into r, the V3/V4 finds
 * onto *found. Returns 0 or the stop's code.
 */
static int sweep_run(struct sweep *sw, int32_t T, int32_t *c, uint64_t *tests, struct lcn_report *r,
                     struct vbuf *found)
{
    int32_t m = sw->g->m;
    struct worker *w = xcalloc((size_t)T, sizeof(*w));
    for (int32_t t = 0; t < T; t++) {
        w[t].sw = sw;
        w[t].c = t == 0 ? c : xcalloc((size_t)(m ? m : 1), sizeof(int32_t));
        /* a thread that cannot start leaves its items to the others */
        if (t > 0)
            w[t].started = pthread_create(&w[t].th, NULL, worker_main, &w[t]) == 0;
    }
    worker_main(&w[0]);
    for (int32_t t = 0; t < T; t++) {
        if (t > 0) {
            if (w[t].started)
                pthread_join(w[t].th, NULL);
            for (int32_t e = 0; e < m; e++)
                c[e] += w[t].c[e];
            free(w[t].c);
        }
        *tests += w[t].tests;
        for (int k = 1; k <= 4; k++)
            r->count[k] += w[t].count[k];
        xgrow((void **)&found->v, sizeof(*found->v), &found->cap, found->len + w[t].buf.len);
        if (w[t].buf.len)
            memcpy(found->v + found->len, w[t].buf.v, sizeof(*found->v) * w[t].buf.len);
        found->len += w[t].buf.len;
        free(w[t].buf.v);
    }
    free(w);
    return atomic_load(&sw->halt);
}

uint64_t validate_counts_tuned(const struct lcn_graph *g, const struct lcn_pt *pts,
                               const struct validate_tuning *t, int32_t *c)
{
    memset(c, 0, sizeof(int32_t) * (size_t)g->m);
    struct index ix;
    index_strips(&ix, g, pts, t ? t->strips : 0);
    index_edges(&ix, g->m);
    struct sweep sw = {.g = g, .ix = &ix};
    int32_t T = sweep_threads(&ix, g->m, t);
    sweep_plan(&sw, g->m, T, t ? t->chunk : 0);
    uint64_t tests = 0;
    struct lcn_report counts = {0};
    struct vbuf none = {0};
    sweep_run(&sw, T, c, &tests, &counts, &none);
    free(none.v);
    index_release(&ix);
    return tests;
}

void validate_auto_tuning(const struct lcn_graph *g, const struct lcn_pt *pts,
                          struct validate_tuning *t)
{
    struct index ix;
    index_strips(&ix, g, pts, 0);
    index_edges(&ix, g->m);
    struct sweep sw = {.g = g, .ix = &ix, .check = 1};
    t->threads = sweep_threads(&ix, g->m, NULL);
    t->strips = ix.sp.S;
    sweep_plan(&sw, g->m, t->threads, 0);
    t->chunk = (int32_t)sw.chunk3;
    index_release(&ix);
}

uint64_t validate_counts(const struct lcn_graph *g, const struct lcn_pt *pts, int32_t *c)
{
    return validate_counts_tuned(g, pts, NULL, c);
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

static void list_push(struct vbuf *l, enum lcn_vkind k, int32_t a, int32_t b)
{
    xgrow((void **)&l->v, sizeof(*l->v), &l->cap, l->len + 1);
    l->v[l->len++] = (struct lcn_violation){k, a, b};
}

/* V1, listed in node order. */
static void check_bounds(const struct lcn_graph *g, const struct lcn_pt *pts, int32_t max_listed,
                         struct lcn_report *r, struct vbuf *l)
{
    for (int32_t v = 0; v < g->n; v++) {
        if (pts[v].x < 0 || pts[v].y < 0 || pts[v].x > g->width || pts[v].y > g->height) {
            r->count[LCN_V1_OUT_OF_BOUNDS]++;
            if (l->len < (size_t)max_listed)
                list_push(l, LCN_V1_OUT_OF_BOUNDS, v, -1);
        }
    }
}

/* V2: every pair within a run of equal points (ids ascend within a run),
 * counted by runs and listed in (a, b) order: for each node a in id order,
 * the later nodes of its run. */
static void check_points(const struct index *ix, int32_t n, int32_t max_listed,
                         struct lcn_report *r, struct vbuf *l)
{
    const struct pnode *p = ix->pn;
    for (int32_t i = 0; i < n;) {
        int32_t j = i + 1;
        while (j < n && p[j].x == p[i].x && p[j].y == p[i].y)
            j++;
        r->count[LCN_V2_SHARED_POINT] += (int64_t)(j - i) * (j - i - 1) / 2;
        i = j;
    }
    if (!r->count[LCN_V2_SHARED_POINT] || l->len >= (size_t)max_listed)
        return;
    int32_t *pos = xmalloc(sizeof(int32_t) * (size_t)n);
    for (int32_t i = 0; i < n; i++)
        pos[p[i].id] = i;
    for (int32_t a = 0; a < n && l->len < (size_t)max_listed; a++) {
        const struct pnode *q = &p[pos[a]];
        for (int32_t k = pos[a] + 1;
             k < n && p[k].x == q->x && p[k].y == q->y && l->len < (size_t)max_listed; k++)
            list_push(l, LCN_V2_SHARED_POINT, a, p[k].id);
    }
    free(pos);
}

/* V3, V4 and the crossing counts (into r->c); their listed finds go onto
 * *l, the smallest room of them in order. Returns 0 or the stop's code. */
static int check_edges(struct index *ix, const struct lcn_graph *g, int64_t room,
                       const struct lcn_stop *stop, const struct validate_tuning *t,
                       struct lcn_report *r, struct vbuf *l)
{
    index_edges(ix, g->m);
    struct sweep sw = {.g = g, .ix = ix, .check = 1, .room = room, .stop = stop};
    int32_t T = sweep_threads(ix, g->m, t);
    sweep_plan(&sw, g->m, T, t ? t->chunk : 0);
    uint64_t tests = 0;
    struct vbuf found = {0};
    int rc = sweep_run(&sw, T, r->c, &tests, r, &found);
    if (found.len)
        qsort(found.v, found.len, sizeof(*found.v), vp_violation_cmp);
    found.len = (size_t)LCN_MIN((int64_t)found.len, room);
    xgrow((void **)&l->v, sizeof(*l->v), &l->cap, l->len + found.len);
    if (found.len)
        memcpy(l->v + l->len, found.v, sizeof(*l->v) * found.len);
    l->len += found.len;
    free(found.v);
    return rc;
}

int validate_layout(const struct lcn_graph *g, const struct lcn_pt *pts, int32_t max_listed,
                    struct lcn_report *r)
{
    return validate_layout_stop(g, pts, max_listed, NULL, r);
}

int validate_layout_stop(const struct lcn_graph *g, const struct lcn_pt *pts, int32_t max_listed,
                         const struct lcn_stop *stop, struct lcn_report *r)
{
    return validate_layout_tuned(g, pts, max_listed, stop, NULL, r);
}

int validate_layout_tuned(const struct lcn_graph *g, const struct lcn_pt *pts, int32_t max_listed,
                          const struct lcn_stop *stop, const struct validate_tuning *t,
                          struct lcn_report *r)
{
    memset(r, 0, sizeof(*r));
    r->c = xcalloc((size_t)(g->m ? g->m : 1), sizeof(int32_t));
    /* a stop that has fired gives no verdict: not even the sorts (tens of
     * ms at 200,000 nodes) run */
    int rc = lcn_stop_check(stop);
    if (rc) {
        r->list = xmalloc(sizeof(*r->list));
        return rc;
    }
    max_listed = LCN_MAX(max_listed, 0);
    struct vbuf l = {0};
    struct index ix;
    index_strips(&ix, g, pts, t ? t->strips : 0);
    check_bounds(g, pts, max_listed, r, &l);
    index_nodes(&ix, g, pts);
    check_points(&ix, g->n, max_listed, r, &l);
    /* the edges' sort is tens of ms at 400,000 edges: the stop is checked first */
    rc = lcn_stop_check(stop);
    if (!rc)
        rc = check_edges(&ix, g, max_listed - (int64_t)l.len, stop, t, r, &l);
    index_release(&ix);
    for (int k = 1; k <= 4; k++)
        r->total += r->count[k];
    r->listed = (int32_t)l.len;
    r->list = l.len ? l.v : xmalloc(sizeof(*r->list));
    if (rc) {
        r->valid = 0;
        return rc;
    }
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
