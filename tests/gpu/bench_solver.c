/*
 * bench_solver - solver outcome benchmark of the GPU engine (outcome layer
 * of the evidence: ARCHITECTURE.md section 6).
 *
 * For each graph, the paired seeds run at the same time, one thread per
 * seed, each on its own workspace slot and stream of one device context,
 * each with an equal share of the device's replicas (--replicas-total /
 * seeds): the seeds of one graph share the GPU the way concurrent daemon
 * jobs do. Every run gets the same wall-clock budget and the instance's
 * target K; its final layout is revalidated by the oracle inside the engine
 * and again here, and written with a summary JSON (tuple, time to target
 * or null = censored, telemetry, replicas, stop reason).
 *
 * With --graphs-at-once G, G graphs (G x seeds runs) run at the same time,
 * each run with --replicas-total / (G x seeds) replicas.
 *
 * usage: bench_solver --out DIR --budget-s S --seeds 1,2,3 [--targets FILE]
 *                     [--replicas-total R] [--graphs-at-once G] [--tuning k=v,...] GRAPH.json...
 * FILE: lines "name K" (name = file name without .json).
 */
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "err.h"
#include "gpu.h"
#include "graphio.h"
#include "util.h"
#include "validate.h"

struct run {
    struct gpu_ctx *ctx;
    const struct graphio_doc *doc;
    const char *name, *outdir, *tuning;
    uint64_t seed;
    double budget;
    int target, replicas, concurrent, rc;
    struct engine_result res;
    /* the progress events: when the best K (or its C) changed, and the start */
    double *curve; /* (elapsed_s, K, C) triples */
    size_t ncurve, capcurve;
    double start_s;
    struct lcn_obj start_obj;
};

static void on_progress(void *ctx, const struct engine_event *ev)
{
    struct run *r = ctx;
    if (!strcmp(ev->stage, "start")) {
        r->start_s = ev->elapsed_s;
        r->start_obj = ev->best;
    }
    if (r->ncurve && r->curve[3 * (r->ncurve - 1) + 1] == ev->best.K)
        return; /* one point per K: the time it was first reached */
    if (r->ncurve == r->capcurve) {
        r->capcurve = r->capcurve ? 2 * r->capcurve : 64;
        r->curve = xrealloc(r->curve, sizeof(double) * 3 * r->capcurve);
    }
    double *c = &r->curve[3 * r->ncurve++];
    c[0] = ev->elapsed_s;
    c[1] = ev->best.K;
    c[2] = (double)ev->best.C;
}

static void *run_main(void *arg)
{
    struct run *r = arg;
    struct engine_params p;
    engine_params_default(&p);
    p.seed = r->seed;
    p.target_k = r->target;
    p.replicas = r->replicas;
    p.tuning = r->tuning;
    p.init = r->doc->pts;
    p.has_xy = r->doc->has_xy;
    p.start_ns = lcn_now_ns();
    p.deadline_ns = p.start_ns + (int64_t)(r->budget * 1e9);
    p.on_progress = on_progress;
    p.ctx = r;
    r->rc = gpu_engine_run(r->ctx, &r->doc->g, &p, NULL, &r->res);
    return NULL;
}

static int load_target(const char *file, const char *name)
{
    FILE *f = file ? fopen(file, "r") : NULL;
    char line[512], nm[256];
    int k, found = -1;
    while (f && fgets(line, sizeof(line), f))
        if (line[0] != '#' && sscanf(line, "%255s %d", nm, &k) == 2 && !strcmp(nm, name))
            found = k;
    if (f)
        fclose(f);
    return found;
}

/* Checks one finished run again, writes its layout and summary, prints its
 * tuple. Returns 1 when it failed or its layout is not what it claimed. */
static int report_run(struct run *r, const struct graphio_doc *doc)
{
    char path[512];
    if (r->rc) {
        printf("  seed %llu FAILED (%s)", (unsigned long long)r->seed, lcn_strerror(r->rc));
        free(r->curve);
        r->curve = NULL;
        return 1;
    }
    struct lcn_report rep;
    validate_layout(&doc->g, r->res.layout, 4, &rep);
    int ok = rep.valid && obj_cmp(&rep.obj, &r->res.best) == 0;
    report_release(&rep);
    snprintf(path, sizeof(path), "%s/%s-s%llu.layout.json", r->outdir, r->name, (unsigned long long)r->seed);
    json_t *lay = graphio_layout_json(doc, r->res.layout, NULL);
    graphio_write_file(lay, path, 0, NULL);
    json_decref(lay);
    snprintf(path, sizeof(path), "%s/%s-s%llu.json", r->outdir, r->name, (unsigned long long)r->seed);
    FILE *f = fopen(path, "w");
    const struct engine_telemetry *t = &r->res.tel;
    fprintf(f, "{\"graph\": \"%s\", \"seed\": %llu, \"backend\": \"%s\", \"evaluator\": \"%s\", "
               "\"budget_s\": %.3f, \"elapsed_s\": %.4f, \"replicas\": %d, \"proposal_workers\": %d, "
               "\"concurrent_runs\": %d, \"oracle_valid\": %s, \"stop\": \"%s\", "
               "\"best\": {\"K\": %d, \"nK\": %d, \"Phi\": %lld, \"C\": %lld}, \"target_k\": %d, ",
            r->name, (unsigned long long)r->seed, r->res.backend, r->res.evaluator, r->budget,
            r->res.elapsed_s, r->res.replicas, r->res.proposal_workers, r->concurrent, ok ? "true" : "false",
            engine_stop_name(r->res.stop), r->res.best.K, r->res.best.nK,
            (long long)r->res.best.Phi, (long long)r->res.best.C, r->target);
    if (r->res.time_to_target_s >= 0)
        fprintf(f, "\"time_to_target_s\": %.4f, ", r->res.time_to_target_s);
    else
        fprintf(f, "\"time_to_target_s\": null, ");
    fprintf(f, "\"telemetry\": {\"attempted\": %llu, \"valid\": %llu, \"evaluated\": %llu, "
               "\"selected\": %llu, \"accepted\": %llu, \"rejected\": %llu, \"committed\": %llu, "
               "\"best_updates\": %llu, \"exchanges_attempted\": %llu, \"exchanges_accepted\": %llu, "
               "\"pair_tests\": %llu, \"restarts\": %llu, \"ops\": {",
            (unsigned long long)t->attempted, (unsigned long long)t->valid,
            (unsigned long long)t->evaluated, (unsigned long long)t->selected,
            (unsigned long long)t->accepted, (unsigned long long)t->rejected,
            (unsigned long long)t->committed, (unsigned long long)t->best_updates,
            (unsigned long long)t->exchanges_attempted, (unsigned long long)t->exchanges_accepted,
            (unsigned long long)t->pair_tests, (unsigned long long)t->restarts);
    for (int k = 0; k < ENGINE_OPS; k++)
        fprintf(f, "%s\"%s\": {\"tried\": %llu, \"valid\": %llu, \"accepted\": %llu, \"improved\": %llu}",
                k ? ", " : "", engine_op_name((enum engine_op)k), (unsigned long long)t->ops[k].tried,
                (unsigned long long)t->ops[k].valid, (unsigned long long)t->ops[k].accepted,
                (unsigned long long)t->ops[k].improved);
    fprintf(f, "}}, \"balance_ratio\": %.4f, ", obj_balance_ratio(&r->res.best, doc->g.m));
    /* where the search began, and when each K was first reached: [elapsed_s, K, C] */
    fprintf(f, "\"start\": {\"elapsed_s\": %.4f, \"K\": %d, \"C\": %lld}, \"curve\": [", r->start_s,
            r->start_obj.K, (long long)r->start_obj.C);
    for (size_t i = 0; i < r->ncurve; i++)
        fprintf(f, "%s[%.3f, %.0f, %.0f]", i ? ", " : "", r->curve[3 * i], r->curve[3 * i + 1],
                r->curve[3 * i + 2]);
    fprintf(f, "]}\n");
    free(r->curve);
    r->curve = NULL;
    fclose(f);
    printf("  (%d,%d,%lld,%lld)%s", r->res.best.K, r->res.best.nK, (long long)r->res.best.Phi,
           (long long)r->res.best.C, ok ? "" : "!INVALID");
    engine_result_release(&r->res);
    return !ok;
}

int main(int argc, char **argv)
{
    const char *out = NULL, *seeds = "1,2,3,4,5", *targets = NULL, *tuning = NULL;
    double budget = 60;
    int total = 0, first_graph = argc, at_once = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--out") && i + 1 < argc)
            out = argv[++i];
        else if (!strcmp(argv[i], "--budget-s") && i + 1 < argc)
            budget = atof(argv[++i]);
        else if (!strcmp(argv[i], "--seeds") && i + 1 < argc)
            seeds = argv[++i];
        else if (!strcmp(argv[i], "--targets") && i + 1 < argc)
            targets = argv[++i];
        else if (!strcmp(argv[i], "--replicas-total") && i + 1 < argc)
            total = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--graphs-at-once") && i + 1 < argc)
            at_once = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--tuning") && i + 1 < argc)
            tuning = argv[++i];
        else if (argv[i][0] == '-') {
            fprintf(stderr, "usage: bench_solver --out DIR --budget-s S --seeds 1,2,.. [--targets FILE] "
                            "[--replicas-total R] [--graphs-at-once G] [--tuning k=v,..] GRAPH.json...\n");
            return 2;
        } else {
            first_graph = i;
            break;
        }
    }
    if (!out || first_graph >= argc || budget <= 0) {
        fprintf(stderr, "bench_solver: --out, --budget-s and at least one graph are required\n");
        return 2;
    }
    uint64_t sv[64];
    int ns = 0;
    char *sl = xstrdup(seeds), *save = NULL;
    for (char *t = strtok_r(sl, ",", &save); t && ns < 64; t = strtok_r(NULL, ",", &save))
        sv[ns++] = strtoull(t, NULL, 10);
    free(sl);
    if (gpu_device_count() <= 0) {
        fprintf(stderr, "bench_solver: no CUDA device\n");
        return 77;
    }
    struct gpu_config cfg;
    gpu_config_default(&cfg);
    if (at_once < 1 || at_once > 16) {
        fprintf(stderr, "bench_solver: --graphs-at-once takes 1..16\n");
        return 2;
    }
    cfg.slots = ns * at_once;
    cfg.max_nodes = 12000;
    cfg.max_edges = 24000;
    cfg.max_replicas = 2048;
    struct gpu_ctx *ctx;
    char err[256];
    if (gpu_ctx_new(&cfg, &ctx, err, sizeof(err))) {
        fprintf(stderr, "bench_solver: %s\n", err);
        return 1;
    }
    int fails = 0;
    for (int g0 = first_graph; g0 < argc; g0 += at_once) {
        int ng = LCN_MIN(at_once, argc - g0), nr = ng * ns;
        struct graphio_doc *docs = xcalloc((size_t)ng, sizeof(*docs));
        char(*names)[256] = xcalloc((size_t)ng, sizeof(*names));
        int *target = xcalloc((size_t)ng, sizeof(*target));
        for (int k = 0; k < ng; k++) {
            const char *path = argv[g0 + k];
            struct graphio_error ge;
            if (graphio_read_file(&docs[k], path, NULL, &ge)) {
                char m[300];
                graphio_error_format(&ge, m, sizeof(m));
                fprintf(stderr, "bench_solver: %s: %s\n", path, m);
                return 1;
            }
            const char *base = strrchr(path, '/');
            snprintf(names[k], sizeof(names[k]), "%s", base ? base + 1 : path);
            char *dot = strstr(names[k], ".json");
            if (dot)
                *dot = 0;
            target[k] = load_target(targets, names[k]);
        }
        struct run *runs = xcalloc((size_t)nr, sizeof(*runs));
        pthread_t *th = xmalloc(sizeof(pthread_t) * (size_t)nr);
        for (int i = 0; i < nr; i++) {
            int k = i / ns, s = i % ns;
            runs[i].ctx = ctx;
            runs[i].doc = &docs[k];
            runs[i].name = names[k];
            runs[i].outdir = out;
            runs[i].tuning = tuning;
            runs[i].seed = sv[s];
            runs[i].budget = budget;
            runs[i].target = target[k];
            runs[i].replicas = total > 0 ? total / (ns * at_once) : 0;
            runs[i].concurrent = nr;
            pthread_create(&th[i], NULL, run_main, &runs[i]);
        }
        for (int i = 0; i < nr; i++)
            pthread_join(th[i], NULL);
        for (int k = 0; k < ng; k++) {
            printf("%-14s", names[k]);
            for (int s = 0; s < ns; s++)
                fails += report_run(&runs[k * ns + s], &docs[k]);
            printf("\n");
            fflush(stdout);
            graphio_release(&docs[k]);
        }
        free(runs);
        free(th);
        free(docs);
        free(names);
        free(target);
    }
    gpu_ctx_free(ctx);
    return fails ? 1 : 0;
}
