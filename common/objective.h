/*
 * objective.h - the objective tuple (K, n_K, Phi, C) and the count histogram
 * that keeps K and n_K O(1) under incremental updates.
 *
 * c[e] is the number of edges crossing edge e. K = max c[e], n_K = number of
 * edges with c[e] == K, Phi = sum c[e]^2, C = sum c[e] / 2 (crossing pairs).
 * Tuples compare lexicographically; smaller is better. An empty edge set has
 * the tuple (0, 0, 0, 0).
 */
#ifndef LCN_OBJECTIVE_H
#define LCN_OBJECTIVE_H

#include <stdint.h>

#include "hd.h"

struct lcn_obj {
    int32_t K, nK;
    int64_t Phi, C;
};

/* -1, 0, 1 as a is better, equal, worse than b (lexicographic). */
LCN_HD static inline int obj_cmp(const struct lcn_obj *a, const struct lcn_obj *b)
{
    if (a->K != b->K)
        return a->K < b->K ? -1 : 1;
    if (a->nK != b->nK)
        return a->nK < b->nK ? -1 : 1;
    if (a->Phi != b->Phi)
        return a->Phi < b->Phi ? -1 : 1;
    if (a->C != b->C)
        return a->C < b->C ? -1 : 1;
    return 0;
}

/*
 * Best-of-W selection: candidate c, whose move changes the energy by d,
 * becomes the best (*best, *best_d) when there is none yet (*best < 0) or
 * when it is strictly lower, so that the first of equal candidates wins.
 * The CPU engine's rule (anneal's single_move); the GPU step and its CPU
 * reference (solver_ref.c) write the same rule out and can take this one.
 */
LCN_HD static inline void obj_keep_best(int32_t *best, int64_t *best_d, int32_t c, int64_t d)
{
    if (*best < 0 || d < *best_d) {
        *best = c;
        *best_d = d;
    }
}

/*
 * Computes the tuple from counts. Returns 0, or LCN_ECORRUPT when the sum of
 * the counts is odd (each crossing is counted at both of its edges, so an odd
 * sum proves the counts are wrong); *o is filled either way.
 */
int obj_from_counts(struct lcn_obj *o, const int32_t *c, int32_t m);

/*
 * Histogram of counts: h[k] = number of edges with count k, for k in
 * 0..m (a count never exceeds m-1). Maintains K, n_K, Phi and the sum of
 * counts under single-edge changes.
 */
struct lcn_hist {
    int32_t m;
    int32_t *h; /* m+1 entries */
    int32_t K;
    int64_t phi, sum;
};

/* Builds the histogram of c[0..m). */
void hist_init(struct lcn_hist *hs, const int32_t *c, int32_t m);
void hist_release(struct lcn_hist *hs);
/* Copies src into dst (same m; dst initialised by hist_init). */
void hist_copy(struct lcn_hist *dst, const struct lcn_hist *src);

/* Records that one edge's count changed from c to c + d (d any sign). */
void hist_change(struct lcn_hist *hs, int32_t c, int32_t d);

/* The tuple described by the histogram. */
void hist_obj(const struct lcn_hist *hs, struct lcn_obj *o);

/* Formats "(K, nK, Phi, C)" into buf. */
void obj_format(const struct lcn_obj *o, char *buf, int len);

/*
 * The balance ratio K / ceil(2C / m) (issue 15): no layout of a graph with
 * m edges and C crossings has K below ceil(2C / m), so 1 is a perfectly
 * balanced layout. 0 when there is no crossing (K = 0) or no edge.
 */
double obj_balance_ratio(const struct lcn_obj *o, int32_t m);

#endif
