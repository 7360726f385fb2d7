/*
 * repair.h - turn any input layout into a valid one with small movement.
 *
 * Missing coordinates are filled, out-of-bounds points are clamped into the
 * bounds, and then every node involved in a V2 or V3 violation (the second
 * node of a shared point, the node lying on a foreign edge) is moved to the
 * nearest point, in a fixed ring order, where it breaks no rule. Rounds
 * repeat until no node breaks V2 or V3 (found through the incremental
 * state's grids; the tests confirm every result with the independent
 * validator). The result is a deterministic function of the input.
 */
#ifndef LCN_REPAIR_H
#define LCN_REPAIR_H

#include <stdint.h>

#include "graph.h"

struct repair_stats {
    int32_t filled;      /* nodes without coordinates that were placed */
    int32_t clamped;     /* nodes moved into the bounds */
    int32_t moved;       /* nodes moved off a violation */
    int32_t rounds;      /* validation rounds */
    int64_t total_shift; /* sum over nodes of the L1 distance moved by the violation pass */
};

/*
 * Repairs pts in place. has_xy may be NULL (every node has coordinates) or
 * an n-entry array where 0 marks a node whose coordinates are missing (its
 * pts entry is ignored). Returns 0, or LCN_EINVAL when the bounds hold fewer
 * than n points (pts untouched) or when a node in violation found no point
 * where it breaks no rule (the bounds are too crowded for this greedy repair,
 * or no valid layout exists; pts then holds the input with missing
 * coordinates filled and points clamped), or LCN_ECORRUPT if no valid layout
 * was reached (a bug).
 */
int repair_layout(const struct lcn_graph *g, struct lcn_pt *pts, const uint8_t *has_xy,
                  struct repair_stats *stats);

/*
 * repair_layout's first phase, for its tests' slower twin too: fills the
 * missing coordinates (has_xy as there: each such node at the barycentre of
 * its neighbours that have coordinates, rounded toward zero, else at the
 * centre of the bounds) and clamps every point into the bounds. Adds the
 * nodes placed to stats->filled and those moved to stats->clamped.
 */
void repair_fill_clamp(const struct lcn_graph *g, struct lcn_pt *pts, const uint8_t *has_xy,
                       struct repair_stats *stats);

/* repair_layout that gives up with the stop's code (LCN_EDEADLINE or
 * LCN_ECANCELLED; pts then holds a partly repaired layout) when stop fires
 * (stop.h); NULL never fires. */
struct lcn_stop;
int repair_layout_stop(const struct lcn_graph *g, struct lcn_pt *pts, const uint8_t *has_xy,
                       struct repair_stats *stats, const struct lcn_stop *stop);

#endif
