/*
 * validate.h - the independent checker (the oracle every published layout
 * passes through).
 *
 * This module shares the problem's definitions with geom.h and crossings.c
 * but none of their code: its predicates are written separately (exact
 * 64-bit products when every coordinate is within 2^30, 128-bit past it,
 * validate_pred.h), and its candidate search is an x-sorted sweep within
 * horizontal strips rather than a grid, so a bug in the engines' evaluators
 * cannot hide itself here. Large graphs are checked on several threads
 * (pthreads, at most 16, joined before return); the results never depend
 * on the strips or the threads (validate_ref.h keeps the single sweep as
 * the tests' slow twin).
 *
 * Rules (ARCHITECTURE.md section 1):
 *   V1 every node inside [0,W] x [0,H];
 *   V2 no two nodes on the same point;
 *   V3 no node on the interior of an edge it is not an endpoint of;
 *   V4 no two edges overlapping along a positive length.
 */
#ifndef LCN_VALIDATE_H
#define LCN_VALIDATE_H

#include <stdint.h>

#include "graph.h"
#include "objective.h"

enum lcn_vkind {
    LCN_V1_OUT_OF_BOUNDS = 1, /* a = node */
    LCN_V2_SHARED_POINT = 2,  /* a, b = nodes (a < b) */
    LCN_V3_NODE_ON_EDGE = 3,  /* a = node, b = edge */
    LCN_V4_EDGE_OVERLAP = 4,  /* a, b = edges (a < b) */
};

struct lcn_violation {
    enum lcn_vkind kind;
    int32_t a, b;
};

struct lcn_report {
    int valid;                  /* 1 when no violation of any kind */
    int64_t count[5];           /* violations per kind, index = kind */
    int64_t total;              /* all violations */
    struct lcn_violation *list; /* `listed` violations: the smallest by (kind, a, b), in order */
    int32_t listed;
    struct lcn_obj obj; /* tuple of the layout (computed even when invalid) */
    int32_t *c;         /* per-edge crossing counts, m entries */
};

/*
 * Checks V1-V4 and recounts crossings independently. Lists the max_listed
 * smallest violations by kind, then ids (all are counted), the same ones
 * however the work was split. Returns 0, or LCN_ECORRUPT when the recount's
 * sum is odd (an internal error). The report owns its arrays.
 */
int validate_layout(const struct lcn_graph *g, const struct lcn_pt *pts, int32_t max_listed,
                    struct lcn_report *r);
/*
 * validate_layout that gives up when stop fires (stop.h; NULL never does):
 * returns the stop's code (LCN_EDEADLINE, LCN_ECANCELLED) with r->valid 0
 * and the rest of r partial (release it as usual).
 */
struct lcn_stop;
int validate_layout_stop(const struct lcn_graph *g, const struct lcn_pt *pts, int32_t max_listed,
                         const struct lcn_stop *stop, struct lcn_report *r);

void report_release(struct lcn_report *r);

/*
 * The oracle against an engine's claim, the one rule every publisher
 * applies (engines, worker, lcnd solve): validates pts (validate_layout_stop)
 * and compares the recount's tuple with *claim. Returns 0 when the layout
 * is valid with exactly that tuple; LCN_ECORRUPT when it is invalid or the
 * tuple differs; the stop's code (LCN_EDEADLINE, LCN_ECANCELLED) or another
 * error when no verdict was reached. obj (NULL: not wanted) receives the
 * oracle's tuple whenever there was a verdict; diag (NULL or len 0: not
 * wanted) says what was wrong, for every nonzero return but the stop's.
 */
int validate_claim(const struct lcn_graph *g, const struct lcn_pt *pts, const struct lcn_obj *claim,
                   const struct lcn_stop *stop, struct lcn_obj *obj, char *diag, size_t len);

/* Name of a violation kind: "V1", ... */
const char *validate_kind_name(enum lcn_vkind k);

/*
 * Independent per-edge crossing count (the sweep of validate_layout, its own
 * exact predicates), same definition as crossings_full. Returns the number of pair
 * tests: pairs of edges sharing no endpoint whose x- and y-ranges overlap.
 */
uint64_t validate_counts(const struct lcn_graph *g, const struct lcn_pt *pts, int32_t *c);

#endif
