/*
 * graph.h - the problem instance: an undirected simple graph plus drawing
 * bounds, with CSR incident-edge lists.
 *
 * A struct lcn_graph is immutable after graph_init and may be shared by any
 * number of threads and engines. Node ids are dense 0..n-1; edge ids are the
 * positions in the input edge list. Coordinates (a layout) live outside the
 * graph in an array of struct lcn_pt indexed by node id.
 */
#ifndef LCN_GRAPH_H
#define LCN_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "geom.h"

/* Hard limits of the data model (the daemon applies its own, smaller ones). */
#define LCN_MAX_NODES 1000000
#define LCN_MAX_EDGES 4000000

struct lcn_graph {
    int32_t n, m;
    int32_t width, height; /* nodes must lie in [0,width] x [0,height] */
    int32_t *eu, *ev;      /* endpoints of edge e: eu[e] < ev[e] is NOT implied */
    int32_t *inc_off;      /* n+1 offsets into inc */
    int32_t *inc;          /* incident edge ids of node v: inc[inc_off[v] .. inc_off[v+1]) */
    int32_t max_degree;
};

/* Details of the first problem graph_init found, for field-path errors. */
struct lcn_graph_error {
    int err;       /* LCN_E* code, 0 when none */
    int32_t edge;  /* offending edge index, or -1 */
    int32_t other; /* the earlier duplicate edge, or -1 */
    char msg[160]; /* lower-case message naming the offending value */
};

/*
 * Builds a graph from n nodes and m edges given as endpoint pairs
 * (src[i], dst[i]). Validates: 0 <= n <= LCN_MAX_NODES, 0 <= m <=
 * LCN_MAX_EDGES, 0 <= width, height <= LCN_COORD_LIMIT, every endpoint in
 * 0..n-1, no self-loop, no duplicate edge (in either direction).
 * Returns 0, or a negative LCN_E* code with *why filled (why may be NULL);
 * on failure g is left released. The arrays are copied.
 */
int graph_init(struct lcn_graph *g, int32_t n, int32_t m, const int32_t *src, const int32_t *dst,
               int32_t width, int32_t height, struct lcn_graph_error *why);

/* Frees what graph_init allocated. Safe on a zeroed struct. */
void graph_release(struct lcn_graph *g);

/* Degree of node v. */
static inline int32_t graph_degree(const struct lcn_graph *g, int32_t v)
{
    return g->inc_off[v + 1] - g->inc_off[v];
}

/* The endpoint of edge e that is not v (v must be an endpoint of e). */
static inline int32_t graph_other(const struct lcn_graph *g, int32_t e, int32_t v)
{
    return g->eu[e] == v ? g->ev[e] : g->eu[e];
}

/* 1 when edges e and f share an endpoint (e == f counts as sharing). */
static inline int graph_adjacent(const struct lcn_graph *g, int32_t e, int32_t f)
{
    return g->eu[e] == g->eu[f] || g->eu[e] == g->ev[f] || g->ev[e] == g->eu[f] ||
           g->ev[e] == g->ev[f];
}

/*
 * 1 when a and b are the same problem: the same node count, bounds and set
 * of edges (an edge is an unordered pair of node ids; the order of the
 * edges and of an edge's endpoints does not matter), so that a layout of
 * one is a layout of the other. Else 0 with the first difference found in
 * why (len bytes), naming b as `other`: "40 nodes, job j..'s graph has
 * 41", "edge 12 (3-7) is not in job j..'s graph".
 */
int graph_same(const struct lcn_graph *a, const struct lcn_graph *b, const char *other, char *why,
               size_t len);

/* 64-bit FNV-1a hash of the graph (n, m, bounds, edge list in order). */
uint64_t graph_hash(const struct lcn_graph *g);

/* 64-bit FNV-1a hash of a layout of n points. */
uint64_t layout_hash(const struct lcn_pt *pts, int32_t n);

#endif
