/*
 * bench_validate - the oracle's fast path (validate_layout) against its slow
 * twin (validate_layout_sweep, validate_ref.h) on stored layouts, in one
 * binary: each repetition runs both on the same input, checks that the
 * reports are identical (valid, counts, list, per-edge counts, tuple) and
 * times them. Prints one line per file with the medians, in seconds.
 *
 * Usage: bench_validate [--reps R] [--max-listed N] [--fast-only]
 *                       [--threads T] [--strips S] FILE...
 * (--threads, --strips: force the fast path's split, validate_ref.h)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graphio.h"
#include "util.h"
#include "validate.h"
#include "validate_ref.h"

static int cmp_i64(const void *p, const void *q)
{
    int64_t a = *(const int64_t *)p, b = *(const int64_t *)q;
    return (a > b) - (a < b);
}

static double median_s(int64_t *ns, int n)
{
    qsort(ns, (size_t)n, sizeof(*ns), cmp_i64);
    return (n % 2 ? (double)ns[n / 2] : (ns[n / 2 - 1] + ns[n / 2]) / 2.0) / 1e9;
}

static int same_report(const struct lcn_report *a, const struct lcn_report *b, int32_t m)
{
    return a->valid == b->valid && a->total == b->total && a->listed == b->listed &&
           !memcmp(a->count, b->count, sizeof(a->count)) &&
           (!a->listed || !memcmp(a->list, b->list, sizeof(*a->list) * (size_t)a->listed)) &&
           (!m || !memcmp(a->c, b->c, sizeof(int32_t) * (size_t)m)) &&
           obj_cmp(&a->obj, &b->obj) == 0;
}

/* Times R runs of each; returns 0 when every pair of reports agreed. */
static struct validate_tuning tuning;

static int bench_file(const char *path, int reps, int32_t max_listed, int fast_only)
{
    struct graphio_doc d;
    struct graphio_error err;
    if (graphio_read_file(&d, path, NULL, &err) != 0) {
        fprintf(stderr, "bench_validate: %s: %s\n", path, err.msg);
        return 1;
    }
    int64_t *t_ref = xcalloc((size_t)reps, sizeof(int64_t)),
            *t_fast = xcalloc((size_t)reps, sizeof(int64_t));
    int bad = 0;
    for (int k = 0; k < reps; k++) {
        struct lcn_report a = {0}, b;
        int64_t t0 = lcn_now_ns();
        if (!fast_only)
            validate_layout_sweep(&d.g, d.pts, max_listed, NULL, &a);
        int64_t t1 = lcn_now_ns();
        validate_layout_tuned(&d.g, d.pts, max_listed, NULL, &tuning, &b);
        int64_t t2 = lcn_now_ns();
        t_ref[k] = t1 - t0;
        t_fast[k] = t2 - t1;
        bad |= !fast_only && !same_report(&a, &b, d.g.m);
        if (!fast_only)
            report_release(&a);
        report_release(&b);
    }
    struct validate_tuning at;
    validate_auto_tuning(&d.g, d.pts, &at);
    printf("%s n=%d m=%d threads=%d strips=%d reps=%d ref_median_s=%.4f fast_median_s=%.4f "
           "same=%s\n",
           path, d.g.n, d.g.m, at.threads, at.strips, reps, fast_only ? 0.0 : median_s(t_ref, reps),
           median_s(t_fast, reps), fast_only ? "unchecked" : (bad ? "NO" : "yes"));
    free(t_ref);
    free(t_fast);
    graphio_release(&d);
    return bad;
}

int main(int argc, char **argv)
{
    int reps = 3, fast_only = 0, bad = 0;
    int32_t max_listed = 100;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--max-listed") && i + 1 < argc)
            max_listed = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            tuning.threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--strips") && i + 1 < argc)
            tuning.strips = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--fast-only"))
            fast_only = 1;
        else
            bad |= bench_file(argv[i], reps > 0 ? reps : 1, max_listed, fast_only);
    }
    return bad;
}
