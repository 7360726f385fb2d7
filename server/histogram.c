/*
 * histogram.c - fixed-bound histograms and their Prometheus text (histogram.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/histogram.h"
#include "util.h"

void histogram_init(struct histogram *h, const double *bounds, size_t n_bounds)
{
    LCN_ASSERT(n_bounds >= 1 && n_bounds <= HISTOGRAM_MAX_BOUNDS);
    for (size_t i = 0; i < n_bounds; i++)
        LCN_ASSERT(isfinite(bounds[i]) && (i == 0 || bounds[i - 1] < bounds[i]));
    memset(h, 0, sizeof *h);
    h->bounds = bounds;
    h->n_bounds = n_bounds;
}

void histogram_observe(struct histogram *h, double v)
{
    size_t i = 0;
    while (i < h->n_bounds && v > h->bounds[i])
        i++;
    h->buckets[i]++;
    h->count++;
    h->sum += v;
}

/* The shortest of %.15g..%.17g that reads back as v: 0.001, not
 * 0.0010000000000000000208. */
static void put_double(struct sbuf *b, double v)
{
    char s[40];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(s, sizeof s, "%.*g", prec, v);
        if (strtod(s, NULL) == v)
            break;
    }
    sbuf_puts(b, s);
}

void histogram_write_head(struct sbuf *b, const char *name, const char *help)
{
    sbuf_printf(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
}

void histogram_write(struct sbuf *b, const struct histogram *h, const char *name,
                     const char *labels)
{
    const char *sep = *labels ? "," : "";
    uint64_t cum = 0;
    for (size_t i = 0; i < h->n_bounds; i++) {
        cum += h->buckets[i];
        sbuf_printf(b, "%s_bucket{%s%sle=\"", name, labels, sep);
        put_double(b, h->bounds[i]);
        sbuf_printf(b, "\"} %llu\n", (unsigned long long)cum);
    }
    cum += h->buckets[h->n_bounds];
    sbuf_printf(b, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep, (unsigned long long)cum);
    if (*labels)
        sbuf_printf(b, "%s_sum{%s} ", name, labels);
    else
        sbuf_printf(b, "%s_sum ", name);
    put_double(b, h->sum);
    if (*labels)
        sbuf_printf(b, "\n%s_count{%s} %llu\n", name, labels, (unsigned long long)h->count);
    else
        sbuf_printf(b, "\n%s_count %llu\n", name, (unsigned long long)h->count);
}
