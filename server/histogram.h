/*
 * histogram.h - a Prometheus histogram with fixed bucket bounds, and its text
 * exposition (format 0.0.4: name_bucket{...,le="..."}, name_sum,
 * name_count, with the +Inf bucket).
 *
 * Concurrency: none. A histogram belongs to one thread (the daemon's
 * loop: every observation of the daemon is made there), so there are no
 * atomics and no locks; a reader on another thread must copy it through
 * that thread.
 *
 * Ownership: struct histogram is embedded by its owner; the bounds array is
 * borrowed and must outlive it (a static table).
 */
#ifndef LCN_SERVER_HISTOGRAM_H
#define LCN_SERVER_HISTOGRAM_H

#include <stddef.h>
#include <stdint.h>

#include "sbuf.h"

/* The most finite bounds a histogram may have (+Inf comes on top). */
#define HISTOGRAM_MAX_BOUNDS 32

struct histogram {
    const double *bounds; /* ascending finite upper bounds (borrowed) */
    size_t n_bounds;
    /* per bucket, not cumulative: buckets[i] counts bounds[i-1] < v <=
     * bounds[i]; buckets[n_bounds] counts v > bounds[n_bounds-1] */
    uint64_t buckets[HISTOGRAM_MAX_BOUNDS + 1];
    uint64_t count;
    double sum;
};

/* Empties h and gives it n_bounds bounds (1..HISTOGRAM_MAX_BOUNDS, strictly
 * ascending and finite: anything else is a programmer's bug and asserts). */
void histogram_init(struct histogram *h, const double *bounds, size_t n_bounds);

/* Counts v in the first bucket whose bound is >= v (Prometheus' "le"),
 * or in +Inf; adds v to the sum. */
void histogram_observe(struct histogram *h, double v);

/* Appends the "# HELP name help" and "# TYPE name histogram" lines that
 * precede a family's series. */
void histogram_write_head(struct sbuf *b, const char *name, const char *help);

/* Appends the series of h: one cumulative name_bucket line per bound and
 * one for +Inf, then name_sum and name_count. labels is "" or a list of
 * label pairs without braces ('route="/jobs",method="GET"'), already
 * escaped; it goes before le in the buckets and alone in braces on the
 * sum and count. Numbers are written in the shortest form that reads back
 * as the same double. */
void histogram_write(struct sbuf *b, const struct histogram *h, const char *name,
                     const char *labels);

#endif
