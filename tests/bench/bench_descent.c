/*
 * bench_descent.c - the stress start against the descent start (layout.h):
 * for each graph file and seed, the exact tuple and total crossings of both
 * snapped and repaired starts and the wall time of each layout_make call.
 * Not a test: bench/results/descent-20261202/README.md shows how it is run.
 *
 *   bench_descent [--seeds N] [--iters I] FILE...
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crossings.h"
#include "graphio.h"
#include "layout.h"
#include "objective.h"
#include "util.h"
#include "validate.h"

static int one(const struct lcn_graph *g, enum layout_kind k, uint64_t seed, struct lcn_pt *pts,
               int32_t *c, struct lcn_obj *o, double *secs)
{
    int64_t t0 = lcn_now_ns();
    int rc = layout_make(g, k, seed, NULL, NULL, 0, NULL, pts);
    *secs = (double)(lcn_now_ns() - t0) / 1e9;
    if (rc)
        return rc;
    struct lcn_report r;
    validate_layout(g, pts, 0, &r);
    int valid = r.valid;
    report_release(&r);
    if (!valid)
        return -1000;
    crossings_grid(g, pts, c, 0);
    return obj_from_counts(o, c, g->m);
}

int main(int argc, char **argv)
{
    int seeds = 3, first = 1;
    for (; first < argc && strncmp(argv[first], "--", 2) == 0; first += 2) {
        if (first + 1 >= argc)
            return 2;
        if (strcmp(argv[first], "--seeds") == 0)
            seeds = atoi(argv[first + 1]);
        else
            return 2;
    }
    printf("graph\tn\tm\tseed\tkind\tK\tnK\tPhi\tC\tseconds\n");
    for (int a = first; a < argc; a++) {
        struct graphio_doc d;
        struct graphio_error err;
        if (graphio_read_file(&d, argv[a], NULL, &err)) {
            fprintf(stderr, "%s: %s\n", argv[a], err.msg);
            return 1;
        }
        const struct lcn_graph *g = &d.g;
        const char *base = strrchr(argv[a], '/') ? strrchr(argv[a], '/') + 1 : argv[a];
        struct lcn_pt *pts = xmalloc(sizeof(*pts) * (size_t)g->n);
        int32_t *c = xmalloc(sizeof(int32_t) * (size_t)(g->m ? g->m : 1));
        for (int s = 1; s <= seeds; s++) {
            static const enum layout_kind kinds[] = {LAYOUT_STRESS, LAYOUT_DESCENT};
            for (int i = 0; i < 2; i++) {
                struct lcn_obj o;
                double secs;
                int rc = one(g, kinds[i], (uint64_t)s, pts, c, &o, &secs);
                if (rc) {
                    printf("%s\t%d\t%d\t%d\t%s\terror %d\n", base, g->n, g->m, s,
                           layout_kind_name(kinds[i]), rc);
                    continue;
                }
                printf("%s\t%d\t%d\t%d\t%s\t%lld\t%lld\t%lld\t%lld\t%.3f\n", base, g->n, g->m, s,
                       layout_kind_name(kinds[i]), (long long)o.K, (long long)o.nK,
                       (long long)o.Phi, (long long)o.C, secs);
                fflush(stdout);
            }
        }
        free(c);
        free(pts);
        graphio_release(&d);
    }
    return 0;
}
