/*
 * check.h - the verdict of `lcnctl check` as a function, so that other
 * commands (render, bench) judge layouts with exactly the same code.
 *
 * A layout is valid when every node has coordinates, it passes rules V1-V4
 * (validate_layout, the independent oracle of common/validate.h) and, when
 * an instance is given, it draws that instance: same node count, same
 * edges in the same order (either direction), same width and height.
 */
#ifndef LCN_CLIENTS_CHECK_H
#define LCN_CLIENTS_CHECK_H

#include <stdint.h>

#include <jansson.h>

#include "graphio.h"
#include "objective.h"

struct check_result {
    int valid;          /* the verdict */
    int has_tuple;      /* 0 when a node has no coordinates (obj undefined) */
    struct lcn_obj obj; /* the recounted tuple (also for an invalid layout) */
    int64_t violations; /* V1-V4 violations found */
    int64_t problems;   /* other reasons: missing coordinates, instance differences */
    int internal_error; /* the validator's recount had an odd sum (a validator bug) */
};

/*
 * Appends to problems (a JSON array; at most 20 strings are listed, all are
 * counted) how graph lg differs from the instance graph ig; returns the
 * number of differences (0: lg draws ig).
 */
int64_t check_compare_instance(const struct lcn_graph *lg, const struct lcn_graph *ig,
                               json_t *problems);

/*
 * Checks lay (against inst when not NULL) and returns the report object
 * that `lcnctl check` prints (a new reference; keys in docs/lcnctl.md);
 * fills *res. layout_name and instance_name are only echoed in the report
 * (instance_name may be NULL). max_listed bounds the listed violations;
 * with_counts adds the per-edge counts as "c".
 */
json_t *check_layout(const struct graphio_doc *lay, const char *layout_name,
                     const struct graphio_doc *inst, const char *instance_name, int32_t max_listed,
                     int with_counts, struct check_result *res);


#endif
