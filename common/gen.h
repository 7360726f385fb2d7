/*
 * gen.h - generators of test and benchmark instances.
 *
 * Families:
 *   random   G(n, m): m distinct uniform random edges;
 *   grid     sparse, near-planar: a w x h grid graph (w*h >= n) plus short
 *            extra edges, m about 2n (like the contest's 2,519/4,938 and
 *            10,466/20,288 graphs);
 *   dense    random with m about 15n (like Automatic-6);
 *   large    grid family on large bounds (default 250,000 x 250,000);
 *   planted  a drawing with K <= k is built first (edges are only added
 *            while every count stays <= k), then coordinates are scrambled:
 *            the achievable k is known.
 * Every generated layout is valid (it went through repair_layout). The
 * output is a deterministic function of the parameters.
 */
#ifndef LCN_GEN_H
#define LCN_GEN_H

#include <stddef.h>
#include <stdint.h>

#include "graph.h"

enum gen_family { GEN_RANDOM, GEN_GRID, GEN_DENSE, GEN_LARGE, GEN_PLANTED };

struct gen_params {
    enum gen_family family;
    int32_t n;
    int32_t m;             /* <= 0: the family's default for n */
    int32_t width, height; /* <= 0: the family's default for n */
    int32_t k;             /* planted only: the K the planted drawing respects */
    uint64_t seed;
};

/* Parses a family name; returns 0 or LCN_EINVAL. */
int gen_family_parse(const char *name, enum gen_family *f);
const char *gen_family_name(enum gen_family f);

/* Fills the defaults (m, width, height, k) left at <= 0. */
void gen_defaults(struct gen_params *p);

/*
 * Generates an instance: graph g (initialised here), a valid starting
 * layout *layout (xmalloc'd, n points) and, for the planted family, the
 * planted drawing *planted (xmalloc'd; NULL for other families or when
 * planted is NULL). Returns 0 or a negative LCN_E* code with a message in
 * err (lower case, no full stop).
 */
int gen_instance(const struct gen_params *p, struct lcn_graph *g, struct lcn_pt **layout,
                 struct lcn_pt **planted, char *err, size_t errlen);

#endif
