/*
 * bench_gpu - kernel benchmark for the evaluator kernels (mechanism layer of
 * the evidence: ARCHITECTURE.md section 6).
 *
 * For each shape n/m/W it generates a graph and a valid layout (seeded),
 * checks every kernel's per-edge output against the CPU oracle (the
 * correctness gate), then times the kernels with CUDA events: 5 warm-up
 * launches, 9 batches x 100 launches per kernel, batches interleaved
 * (full, delta, grid, full, delta, grid, ...), and writes one JSON document
 * with the manifest, the gate verdicts, every raw sample, the medians and
 * the ratio full/delta computed from the medians.
 *
 * usage: bench_gpu [--shapes 48/96/32,128/512/32,...] [--seed S] [--out FILE]
 *                  [--layout random|stress] [--commit C] [--dirty 0|1] [--binary-sha256 H]
 *        bench_gpu --force [--shapes ...] [--seed S] [--out FILE] ...
 * --layout: the generator's random valid layout (long edges everywhere), or
 * a stress layout of the same graph (short edges: where a grid pays off).
 * --force: the force-directed layout kernel against the CPU drawer on the
 * same graphs (wall time of each, median of 3, and the tuple after both
 * are snapped onto the bounds and repaired).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crossings.h"
#include "err.h"
#include "gen.h"
#include "gpu.h"
#include "layout.h"
#include "objective.h"
#include "validate.h"
#include "rng.h"
#include "util.h"

#define BATCHES 9
#define LAUNCHES 100
#define WARMUP 5

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static float median9(const float *v)
{
    float t[BATCHES];
    memcpy(t, v, sizeof(t));
    qsort(t, BATCHES, sizeof(float), cmp_float);
    return t[BATCHES / 2];
}

static void print_samples(FILE *f, const float *v)
{
    fputc('[', f);
    for (int i = 0; i < BATCHES; i++)
        fprintf(f, "%s%.6f", i ? ", " : "", v[i]);
    fputc(']', f);
}

static double wall_ms(int64_t t0)
{
    return (lcn_now_ns() - t0) / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Force-directed layout: GPU kernel vs CPU drawer, same graph and seed. */
static void bench_force(FILE *f, struct gpu_ctx *ctx, const struct lcn_graph *g, const char *tok,
                        uint64_t seed, int first)
{
    double *xy = xmalloc(sizeof(double) * 2 * (size_t)g->n);
    struct lcn_pt *pts = xmalloc(sizeof(*pts) * (size_t)g->n);
    double tg[3], tc[3];
    gpu_layout_force(ctx, 0, g, 0, seed, xy); /* warm-up */
    for (int i = 0; i < 3; i++) {
        int64_t t0 = lcn_now_ns();
        gpu_layout_force(ctx, 0, g, 0, seed + (uint64_t)i, xy);
        tg[i] = wall_ms(t0);
    }
    struct lcn_report rg, rc;
    layout_snap(g, xy, pts);
    validate_layout(g, pts, 4, &rg);
    for (int i = 0; i < 3; i++) {
        int64_t t0 = lcn_now_ns();
        layout_force_real(g, seed + (uint64_t)i, 0, 0, 0, xy);
        tc[i] = wall_ms(t0);
    }
    layout_snap(g, xy, pts);
    validate_layout(g, pts, 4, &rc);
    qsort(tg, 3, sizeof(double), cmp_double);
    qsort(tc, 3, sizeof(double), cmp_double);
    fprintf(f, "%s  {\"shape\": \"%s\", \"n\": %d, \"m\": %d, \"iterations\": \"default for n\", "
               "\"gpu_ms\": [%.3f, %.3f, %.3f], \"cpu_ms\": [%.3f, %.3f, %.3f], "
               "\"gpu_median_ms\": %.3f, \"cpu_median_ms\": %.3f, \"ratio_cpu_over_gpu\": %.3f, "
               "\"gpu_valid\": %s, \"cpu_valid\": %s, "
               "\"gpu_tuple\": [%d, %d, %lld, %lld], \"cpu_tuple\": [%d, %d, %lld, %lld]}",
            first ? "" : ",\n", tok, g->n, g->m, tg[0], tg[1], tg[2], tc[0], tc[1], tc[2], tg[1], tc[1],
            tc[1] / tg[1], rg.valid ? "true" : "false", rc.valid ? "true" : "false", rg.obj.K,
            rg.obj.nK, (long long)rg.obj.Phi, (long long)rg.obj.C, rc.obj.K, rc.obj.nK,
            (long long)rc.obj.Phi, (long long)rc.obj.C);
    printf("force %-16s gpu %.1f ms (K %d, C %lld)  cpu %.1f ms (K %d, C %lld)\n", tok, tg[1], rg.obj.K,
           (long long)rg.obj.C, tc[1], rc.obj.K, (long long)rc.obj.C);
    report_release(&rg);
    report_release(&rc);
    free(xy);
    free(pts);
}

int main(int argc, char **argv)
{
    const char *shapes = "48/96/32,128/512/32,2519/4938/32,10466/20288/32";
    const char *out = "bench_gpu.json", *commit = "unknown", *sha = "unknown";
    int dirty = -1, force = 0;
    const char *layout = "random";
    uint64_t seed = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--shapes") && i + 1 < argc)
            shapes = argv[++i];
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--out") && i + 1 < argc)
            out = argv[++i];
        else if (!strcmp(argv[i], "--commit") && i + 1 < argc)
            commit = argv[++i];
        else if (!strcmp(argv[i], "--dirty") && i + 1 < argc)
            dirty = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--binary-sha256") && i + 1 < argc)
            sha = argv[++i];
        else if (!strcmp(argv[i], "--layout") && i + 1 < argc)
            layout = argv[++i];
        else if (!strcmp(argv[i], "--force"))
            force = 1;
        else {
            fprintf(stderr, "usage: bench_gpu [--shapes n/m/W,...] [--seed S] [--out FILE] "
                            "[--commit C] [--dirty 0|1] [--binary-sha256 H]\n");
            return 2;
        }
    }
    if (gpu_device_count() <= 0) {
        fprintf(stderr, "bench_gpu: no CUDA device\n");
        return 77;
    }
    struct gpu_config cfg;
    gpu_config_default(&cfg);
    cfg.slots = 1;
    cfg.max_nodes = 12000;
    cfg.max_edges = 24000;
    cfg.max_replicas = 16;
    struct gpu_ctx *ctx;
    char err[256];
    if (gpu_ctx_new(&cfg, &ctx, err, sizeof(err))) {
        fprintf(stderr, "bench_gpu: %s\n", err);
        return 1;
    }
    const struct gpu_device_info *di = gpu_ctx_device(ctx);
    FILE *f = fopen(out, "w");
    if (!f) {
        perror(out);
        return 1;
    }
    fprintf(f, "{\n \"manifest\": {\"tool\": \"bench_gpu\", \"commit\": \"%s\", \"dirty\": %d, "
               "\"binary_sha256\": \"%s\", \"device\": \"%s\", \"cc\": \"%d.%d\", \"sms\": %d, "
               "\"driver_version\": %d, \"runtime_version\": %d, \"seed\": %llu, "
               "\"warmup\": %d, \"batches\": %d, \"launches_per_batch\": %d, \"order\": \"interleaved full,delta,grid per batch\", \"layout\": \"%s\", \"command\": \"",
            commit, dirty, sha, di->name, di->cc_major, di->cc_minor, di->sms, di->driver_version,
            di->runtime_version, (unsigned long long)seed, WARMUP, BATCHES, LAUNCHES, force ? "force" : layout);
    for (int i = 0; i < argc; i++)
        fprintf(f, "%s%s", i ? " " : "", argv[i]);
    fprintf(f, "\"},\n \"shapes\": [\n");
    char *list = xstrdup(shapes), *save = NULL;
    int first = 1, all_ok = 1;
    for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int n, m, W;
        if (sscanf(tok, "%d/%d/%d", &n, &m, &W) != 3) {
            fprintf(stderr, "bench_gpu: bad shape '%s'\n", tok);
            return 2;
        }
        struct gen_params gp = {.family = n > 1000 ? GEN_GRID : GEN_RANDOM, .n = n, .m = m, .seed = seed};
        struct lcn_graph g;
        struct lcn_pt *pts;
        if (gen_instance(&gp, &g, &pts, NULL, err, sizeof(err))) {
            fprintf(stderr, "bench_gpu: shape %s: %s\n", tok, err);
            return 1;
        }
        if (force) {
            bench_force(f, ctx, &g, tok, seed, first);
            first = 0;
            graph_release(&g);
            free(pts);
            continue;
        }
        if (!strcmp(layout, "stress") && layout_make(&g, LAYOUT_STRESS, seed, NULL, NULL, 0, NULL, pts)) {
            fprintf(stderr, "bench_gpu: shape %s: no stress layout\n", tok);
            return 1;
        }
        int32_t *v = xmalloc(sizeof(int32_t) * (size_t)W);
        struct lcn_pt *q = xmalloc(sizeof(*q) * (size_t)W);
        struct lcn_rng r;
        rng_init(&r, seed, 1, RNG_PURPOSE_MOVE);
        for (int i = 0; i < W; i++) {
            v[i] = (int32_t)rng_below(&r, (uint32_t)n);
            q[i].x = (int32_t)rng_below(&r, (uint32_t)g.width + 1);
            q[i].y = (int32_t)rng_below(&r, (uint32_t)g.height + 1);
        }
        /* correctness gate: per-edge equality with the CPU oracle */
        int32_t *ref = xmalloc(sizeof(int32_t) * (size_t)m), *got = xmalloc(sizeof(int32_t) * (size_t)m);
        int32_t *rows = xmalloc(sizeof(int32_t) * (size_t)m * (size_t)W);
        uint8_t *valid = xmalloc((size_t)W);
        struct lcn_pt *moved = xmalloc(sizeof(*moved) * (size_t)n);
        uint64_t tf = 0, tg = 0, td = 0;
        crossings_grid(&g, pts, ref, 0);
        int ok_full = gpu_eval_counts(ctx, 0, &g, pts, "full", got, &tf) == 0 &&
                      !memcmp(ref, got, sizeof(int32_t) * (size_t)m);
        int ok_grid = gpu_eval_counts(ctx, 0, &g, pts, "grid", got, &tg) == 0 &&
                      !memcmp(ref, got, sizeof(int32_t) * (size_t)m);
        int ok_delta = gpu_eval_delta(ctx, 0, &g, pts, W, v, q, rows, valid, &td) == 0;
        for (int i = 0; i < W && ok_delta; i++) {
            memcpy(moved, pts, sizeof(*moved) * (size_t)n);
            moved[v[i]] = q[i];
            crossings_grid(&g, moved, ref, 0);
            ok_delta = !memcmp(ref, rows + (size_t)i * m, sizeof(int32_t) * (size_t)m);
        }
        all_ok &= ok_full && ok_grid && ok_delta;
        float sf[BATCHES], sg[BATCHES], sd[BATCHES];
        int rc = 0;
        for (int b = 0; b < BATCHES && !rc; b++) {
            int wu = b == 0 ? WARMUP : 0;
            rc = gpu_bench_kernel(ctx, 0, &g, pts, "full", W, v, q, wu, 1, LAUNCHES, &sf[b]);
            if (!rc)
                rc = gpu_bench_kernel(ctx, 0, &g, pts, "delta", W, v, q, wu, 1, LAUNCHES, &sd[b]);
            if (!rc)
                rc = gpu_bench_kernel(ctx, 0, &g, pts, "grid", W, v, q, wu, 1, LAUNCHES, &sg[b]);
        }
        if (rc) {
            fprintf(stderr, "bench_gpu: timing failed: %s\n", lcn_strerror(rc));
            return 1;
        }
        float mf = median9(sf), md = median9(sd), mg = median9(sg);
        fprintf(f, "%s  {\"shape\": \"%s\", \"n\": %d, \"m\": %d, \"W\": %d, \"family\": \"%s\", "
                   "\"graph_hash\": \"%016llx\", \"layout_hash\": \"%016llx\",\n"
                   "   \"gate\": {\"full\": %s, \"grid\": %s, \"delta\": %s},\n"
                   "   \"pair_tests_per_launch\": {\"full\": %llu, \"grid\": %llu, \"delta\": %llu},\n",
                first ? "" : ",\n", tok, n, m, W, gen_family_name(gp.family),
                (unsigned long long)graph_hash(&g), (unsigned long long)layout_hash(pts, n),
                ok_full ? "true" : "false", ok_grid ? "true" : "false", ok_delta ? "true" : "false",
                (unsigned long long)tf, (unsigned long long)tg, (unsigned long long)td);
        fprintf(f, "   \"ms_per_launch\": {\"full\": ");
        print_samples(f, sf);
        fprintf(f, ", \"delta\": ");
        print_samples(f, sd);
        fprintf(f, ", \"grid\": ");
        print_samples(f, sg);
        fprintf(f, "},\n   \"median_ms\": {\"full\": %.6f, \"delta\": %.6f, \"grid\": %.6f},\n", mf, md, mg);
        fprintf(f, "   \"ratio_full_over_delta\": %.6f, \"ratio_full_over_grid\": %.6f,\n", mf / md, mf / mg);
        fprintf(f, "   \"pair_tests_per_s\": {\"full\": %.4g, \"grid\": %.4g, \"delta\": %.4g},\n",
                tf / (mf * 1e-3), tg / (mg * 1e-3), td / (md * 1e-3));
        fprintf(f, "   \"candidates_per_s_delta\": %.4g}", W / (md * 1e-3));
        printf("%-18s gate full=%d grid=%d delta=%d  median ms full %.5f  delta %.5f  grid %.5f\n",
               tok, ok_full, ok_grid, ok_delta, mf, md, mg);
        first = 0;
        free(v);
        free(q);
        free(ref);
        free(got);
        free(rows);
        free(valid);
        free(moved);
        free(pts);
        graph_release(&g);
    }
    fprintf(f, "\n ],\n \"all_gates_passed\": %s\n}\n", all_ok ? "true" : "false");
    (void)cmp_double;
    fclose(f);
    free(list);
    gpu_ctx_free(ctx);
    return all_ok ? 0 : 3;
}
