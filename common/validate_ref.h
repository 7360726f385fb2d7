/*
 * validate_ref.h - for the tests and benchmarks only: the oracle's slow
 * twin and the knobs of its fast path. Production code calls validate.h.
 *
 * The twin is the oracle as it was before horizontal strips and threads
 * (one x-sorted sweep over every edge, on one thread, with the same
 * predicates), kept so that tests can compare full reports and benchmarks
 * can time the two side by side.
 */
#ifndef LCN_VALIDATE_REF_H
#define LCN_VALIDATE_REF_H

#include <stdint.h>

#include "validate.h"

/*
 * The reference validate_layout_stop: same contract and same report. It
 * keeps every violation it finds before sorting and cutting the list to
 * max_listed, so its memory grows with the violations (slow and simple on
 * purpose).
 */
int validate_layout_sweep(const struct lcn_graph *g, const struct lcn_pt *pts, int32_t max_listed,
                          const struct lcn_stop *stop, struct lcn_report *r);

/* The reference validate_counts: same counts, same return value. */
uint64_t validate_counts_sweep(const struct lcn_graph *g, const struct lcn_pt *pts, int32_t *c);

/*
 * How the fast path splits its work; 0 in a field means the automatic
 * choice. threads: sweep threads (any number >= 1, even past the cores);
 * strips: horizontal strips before the cap at the layout's height; chunk:
 * edges or strip entries per work item. None of them changes a result.
 */
struct validate_tuning {
    int32_t threads, strips, chunk;
};

/* validate_layout_stop and validate_counts with the given tuning (NULL:
 * automatic, exactly what validate.h's functions do). */
int validate_layout_tuned(const struct lcn_graph *g, const struct lcn_pt *pts, int32_t max_listed,
                          const struct lcn_stop *stop, const struct validate_tuning *t,
                          struct lcn_report *r);
/* The tuning the automatic choice takes on this layout (threads, strips and
 * the V3 chunk; what the fast path would use with t NULL). */
void validate_auto_tuning(const struct lcn_graph *g, const struct lcn_pt *pts,
                          struct validate_tuning *t);
uint64_t validate_counts_tuned(const struct lcn_graph *g, const struct lcn_pt *pts,
                               const struct validate_tuning *t, int32_t *c);

#endif
