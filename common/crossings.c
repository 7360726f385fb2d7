#include "crossings.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include "grid.h"
#include "stop.h"
#include "util.h"

static int edges_cross(const struct lcn_graph *g, const struct lcn_pt *pts, int32_t e, int32_t f)
{
    if (graph_adjacent(g, e, f))
        return 0;
    return geom_segments_meet(pts[g->eu[e]], pts[g->ev[e]], pts[g->eu[f]], pts[g->ev[f]]);
}

uint64_t crossings_full(const struct lcn_graph *g, const struct lcn_pt *pts, int32_t *c)
{
    uint64_t tests = 0;
    for (int32_t e = 0; e < g->m; e++) {
        int32_t k = 0;
        for (int32_t f = 0; f < g->m; f++) {
            if (f == e)
                continue;
            tests++;
            k += edges_cross(g, pts, e, f);
        }
        c[e] = k;
    }
    return tests;
}

void layout_bbox(const struct lcn_pt *pts, int32_t n, int64_t *x0, int64_t *y0, int64_t *x1,
                 int64_t *y1)
{
    int64_t a = 0, b = 0, c = 0, d = 0;
    for (int32_t v = 0; v < n; v++) {
        if (v == 0 || pts[v].x < a)
            a = pts[v].x;
        if (v == 0 || pts[v].y < b)
            b = pts[v].y;
        if (v == 0 || pts[v].x > c)
            c = pts[v].x;
        if (v == 0 || pts[v].y > d)
            d = pts[v].y;
    }
    *x0 = a;
    *y0 = b;
    *x1 = c;
    *y1 = d;
}

/* Segment table: endpoint ids and points by edge, read by the counting loop. */
struct segs {
    const int32_t *u, *v;
    struct lcn_pt *a, *b;
};

/*
 * Counts, for the edges e = first, first + step, ..., their crossings with
 * the partners f > e found in e's grid cells (each pair once), adding to c
 * (both ends of each crossing pair). seen: m stamps, initialised to -1.
 * Gives up when stop fires (or another counter raised *halt, which this
 * one raises when its stop fires): *halt is then nonzero and c partial.
 */
static uint64_t count_pairs(const struct lcn_grid *gr, const struct segs *s, int32_t m,
                            int32_t first, int32_t step, int32_t *c, int32_t *seen,
                            int32_t **buf, int32_t *cap, const struct lcn_stop *stop,
                            atomic_int *halt)
{
    uint64_t tests = 0, last = 0;
    int64_t work = 0;
    for (int32_t e = first; e < m; e += step) {
        if (stop) {
            /* cells visited and pairs tested since the last edge */
            if (lcn_stop_tick(stop, &work, 8 + (int64_t)(tests - last)))
                atomic_store(halt, 1);
            last = tests;
            if (atomic_load_explicit(halt, memory_order_relaxed))
                break;
        }
        struct lcn_pt a = s->a[e], b = s->b[e];
        int32_t eu = s->u[e], ev = s->v[e];
        int32_t k = grid_segment_cells_buf(gr, a, b, buf, cap);
        for (int32_t i = 0; i < k; i++) {
            const struct lcn_cell *cell = &gr->cells[(*buf)[i]];
            for (int32_t j = 0; j < cell->len; j++) {
                int32_t f = cell->ids[j];
                if (f <= e || seen[f] == e)
                    continue;
                seen[f] = e;
                int32_t fu = s->u[f], fv = s->v[f];
                if (fu == eu || fu == ev || fv == eu || fv == ev)
                    continue; /* adjacent edges never cross */
                tests++;
                if (geom_segments_meet(a, b, s->a[f], s->b[f])) {
                    c[e]++;
                    c[f]++;
                }
            }
        }
    }
    return tests;
}

static void segs_init(struct segs *s, const struct lcn_graph *g, const struct lcn_pt *pts)
{
    s->u = g->eu;
    s->v = g->ev;
    s->a = xmalloc(sizeof(*s->a) * (size_t)(g->m ? g->m : 1));
    s->b = xmalloc(sizeof(*s->b) * (size_t)(g->m ? g->m : 1));
    for (int32_t e = 0; e < g->m; e++) {
        s->a[e] = pts[g->eu[e]];
        s->b[e] = pts[g->ev[e]];
    }
}

static int32_t *stamps(int32_t m)
{
    int32_t *seen = xmalloc(sizeof(int32_t) * (size_t)(m ? m : 1));
    for (int32_t f = 0; f < m; f++)
        seen[f] = -1;
    return seen;
}

struct counter {
    pthread_t th;
    int started;
    const struct lcn_grid *gr;
    const struct segs *s;
    int32_t m, first, step;
    int32_t *c;
    uint64_t tests;
    const struct lcn_stop *stop;
    atomic_int *halt;
};

static void *counter_main(void *arg)
{
    struct counter *w = arg;
    int32_t *seen = stamps(w->m), *buf = NULL, cap = 0;
    w->tests = count_pairs(w->gr, w->s, w->m, w->first, w->step, w->c, seen, &buf, &cap, w->stop,
                           w->halt);
    free(seen);
    free(buf);
    return NULL;
}

/* One thread per online core (at most 8), and only when there is enough
 * work to pay for them. */
int32_t crossings_grid_threads(int32_t m)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (m < 8192 || cores < 2)
        return 1;
    return (int32_t)LCN_MIN(cores, 8);
}

uint64_t crossings_grid(const struct lcn_graph *g, const struct lcn_pt *pts, int32_t *c,
                        int32_t per_side)
{
    uint64_t tests = 0;
    crossings_grid_stop(g, pts, c, per_side, NULL, &tests);
    return tests;
}

int crossings_grid_stop(const struct lcn_graph *g, const struct lcn_pt *pts, int32_t *c,
                        int32_t per_side, const struct lcn_stop *stop, uint64_t *tests_out)
{
    memset(c, 0, sizeof(int32_t) * (size_t)g->m);
    *tests_out = 0;
    if (g->m == 0)
        return 0;
    int64_t x0, y0, x1, y1;
    layout_bbox(pts, g->n, &x0, &y0, &x1, &y1);
    struct lcn_grid gr;
    grid_init(&gr, x0, y0, x1, y1, per_side > 0 ? per_side : grid_side_for_edges(g->m));
    int64_t work = 0;
    int rc = 0;
    for (int32_t e = 0; e < g->m && !rc; e++) {
        grid_add_segment(&gr, e, pts[g->eu[e]], pts[g->ev[e]]);
        rc = lcn_stop_tick(stop, &work, 16);
    }
    if (rc) {
        grid_release(&gr);
        return rc;
    }
    atomic_int halt = 0;
    struct segs s;
    segs_init(&s, g, pts);
    /* Edges are dealt round-robin so long and short edges spread evenly; each
     * thread counts into its own array and the sums are added at the end. */
    int32_t T = crossings_grid_threads(g->m);
    struct counter *w = xcalloc((size_t)T, sizeof(*w));
    for (int32_t t = 0; t < T; t++) {
        w[t] = (struct counter){
            .gr = &gr, .s = &s, .m = g->m, .first = t, .step = T, .stop = stop, .halt = &halt};
        w[t].c = t == 0 ? c : xcalloc((size_t)g->m, sizeof(int32_t));
        if (t > 0) {
            w[t].started = pthread_create(&w[t].th, NULL, counter_main, &w[t]) == 0;
            if (!w[t].started)
                counter_main(&w[t]); /* no thread: count its share here */
        }
    }
    counter_main(&w[0]);
    uint64_t tests = w[0].tests;
    for (int32_t t = 1; t < T; t++) {
        if (w[t].started)
            pthread_join(w[t].th, NULL);
        for (int32_t e = 0; e < g->m; e++)
            c[e] += w[t].c[e];
        tests += w[t].tests;
        free(w[t].c);
    }
    free(w);
    free(s.a);
    free(s.b);
    grid_release(&gr);
    *tests_out = tests;
    if (!atomic_load(&halt))
        return 0;
    rc = lcn_stop_check(stop); /* a fired stop stays fired */
    return rc ? rc : LCN_EDEADLINE;
}

uint64_t crossings_in_grid(const struct lcn_graph *g, const struct lcn_pt *pts, int32_t *c,
                           struct lcn_grid *gr)
{
    memset(c, 0, sizeof(int32_t) * (size_t)g->m);
    struct segs s;
    segs_init(&s, g, pts);
    int32_t *seen = stamps(g->m);
    uint64_t tests = count_pairs(gr, &s, g->m, 0, 1, c, seen, &gr->tmp, &gr->tmp_cap, NULL, NULL);
    free(seen);
    free(s.a);
    free(s.b);
    return tests;
}
