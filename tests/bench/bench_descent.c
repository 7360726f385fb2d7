/*
 * bench_descent.c - the stress start against the descent start (layout.h):
 * for each graph file and seed, the exact tuple and total crossings of both
 * snapped and repaired starts and the wall time of each layout_make call.
 * Not a test: bench/results/descent-20261202/README.md shows how it is run.
 *
 *   bench_descent [--seeds N] [--gpu ITERS] [--cpu 0|1] FILE...
 *
 * --gpu (a CUDA build with a device): also the descent run on the device
 * (gpu_layout_descent with ITERS passes, 0 = its default), as kind
 * "descent-gpu"; its seconds include the stress drawing, like the CPU's.
 * --cpu 0 leaves the CPU descent out (the stress start stays).
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
#ifdef LCN_HAVE_CUDA
#include "gpu.h"

static struct gpu_ctx *gctx;
static int32_t giters;

static int dev_descent(void *arg, const struct lcn_graph *g, const struct lcn_stop *stop, double *xy)
{
    (void)arg;
    return gpu_layout_descent(gctx, 0, g, giters, stop, xy, NULL, NULL);
}
#endif

static int one(const struct lcn_graph *g, enum layout_kind k, const struct layout_descender *d,
               uint64_t seed, struct lcn_pt *pts, int32_t *c, struct lcn_obj *o, double *secs)
{
    int64_t t0 = lcn_now_ns();
    int rc = layout_make_with(g, k, seed, NULL, NULL, 0, NULL, d, pts);
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
    int seeds = 3, first = 1, gpu = 0, cpu = 1;
    for (; first < argc && strncmp(argv[first], "--", 2) == 0; first += 2) {
        if (first + 1 >= argc)
            return 2;
        if (strcmp(argv[first], "--seeds") == 0) {
            seeds = atoi(argv[first + 1]);
        } else if (strcmp(argv[first], "--cpu") == 0) {
            cpu = atoi(argv[first + 1]) != 0;
        } else if (strcmp(argv[first], "--gpu") == 0) {
#ifdef LCN_HAVE_CUDA
            gpu = 1;
            giters = atoi(argv[first + 1]);
#else
            fprintf(stderr, "bench_descent: --gpu needs a CUDA build\n");
            return 2;
#endif
        } else {
            return 2;
        }
    }
    struct layout_descender dev = {NULL, NULL};
#ifdef LCN_HAVE_CUDA
    if (gpu) {
        struct gpu_config cfg;
        gpu_config_default(&cfg);
        cfg.slots = 1;
        cfg.max_replicas = 1;
        char err[256];
        if (gpu_ctx_new(&cfg, &gctx, err, sizeof(err))) {
            fprintf(stderr, "bench_descent: %s\n", err);
            return 1;
        }
        dev.run = dev_descent;
    }
#endif
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
            static const enum layout_kind kinds[] = {LAYOUT_STRESS, LAYOUT_DESCENT, LAYOUT_DESCENT};
            for (int i = 0; i < 2 + gpu; i++) {
                if (i == 1 && !cpu)
                    continue;
                struct lcn_obj o;
                double secs;
                const char *name = i == 2 ? "descent-gpu" : layout_kind_name(kinds[i]);
                int rc = one(g, kinds[i], i == 2 ? &dev : NULL, (uint64_t)s, pts, c, &o, &secs);
                if (rc) {
                    printf("%s\t%d\t%d\t%d\t%s\terror %d\n", base, g->n, g->m, s, name, rc);
                    continue;
                }
                printf("%s\t%d\t%d\t%d\t%s\t%lld\t%lld\t%lld\t%lld\t%.3f\n", base, g->n, g->m, s,
                       name, (long long)o.K, (long long)o.nK,
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
