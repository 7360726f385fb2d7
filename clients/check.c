/* The verdict of `lcnctl check` (see check.h). */
#include "clients/check.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "validate.h"

/* At most this many instance differences and missing nodes are listed. */
#define MAX_PROBLEMS 20

static void add_problem(json_t *problems, int64_t *count, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void add_problem(json_t *problems, int64_t *count, const char *fmt, ...)
{
    if ((*count)++ >= MAX_PROBLEMS)
        return;
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    json_array_append_new(problems, json_string(buf));
}

static void compare_into(const struct lcn_graph *lg, const struct lcn_graph *ig, json_t *problems,
                         int64_t *count)
{
    if (lg->n != ig->n)
        add_problem(problems, count, "nodes: %d in the layout, %d in the instance", lg->n, ig->n);
    if (lg->m != ig->m) {
        add_problem(problems, count, "edges: %d in the layout, %d in the instance", lg->m, ig->m);
    } else {
        /* same edge, position by position; an edge is an unordered pair */
        for (int32_t e = 0; e < lg->m; e++) {
            int32_t a = LCN_MIN(lg->eu[e], lg->ev[e]), b = LCN_MAX(lg->eu[e], lg->ev[e]);
            int32_t c = LCN_MIN(ig->eu[e], ig->ev[e]), d = LCN_MAX(ig->eu[e], ig->ev[e]);
            if (a != c || b != d)
                add_problem(problems, count,
                            "edges[%d]: {%d, %d} in the layout, {%d, %d} in the instance", e, a, b,
                            c, d);
        }
    }
    if (lg->width != ig->width)
        add_problem(problems, count, "width: %d in the layout, %d in the instance", lg->width,
                    ig->width);
    if (lg->height != ig->height)
        add_problem(problems, count, "height: %d in the layout, %d in the instance", lg->height,
                    ig->height);
}

int64_t check_compare_instance(const struct lcn_graph *lg, const struct lcn_graph *ig,
                               json_t *problems)
{
    int64_t count = 0;
    compare_into(lg, ig, problems, &count);
    return count;
}

static json_t *violation_json(const struct lcn_violation *v)
{
    const char *kind = validate_kind_name(v->kind);
    switch (v->kind) {
    case LCN_V1_OUT_OF_BOUNDS:
        return json_pack("{s:s, s:i}", "kind", kind, "node", (json_int_t)v->a);
    case LCN_V2_SHARED_POINT:
        return json_pack("{s:s, s:[i,i]}", "kind", kind, "nodes", (json_int_t)v->a,
                         (json_int_t)v->b);
    case LCN_V3_NODE_ON_EDGE:
        return json_pack("{s:s, s:i, s:i}", "kind", kind, "node", (json_int_t)v->a, "edge",
                         (json_int_t)v->b);
    case LCN_V4_EDGE_OVERLAP:
        return json_pack("{s:s, s:[i,i]}", "kind", kind, "edges", (json_int_t)v->a,
                         (json_int_t)v->b);
    }
    return json_null();
}

json_t *check_layout(const struct graphio_doc *lay, const char *layout_name,
                     const struct graphio_doc *inst, const char *instance_name, int32_t max_listed,
                     int with_counts, struct check_result *res)
{
    memset(res, 0, sizeof *res);
    const struct lcn_graph *g = &lay->g;
    json_t *problems = json_array();
    int64_t nproblems = 0;
    if (inst)
        compare_into(g, &inst->g, problems, &nproblems);
    for (int32_t v = 0; v < g->n; v++)
        if (!lay->has_xy[v])
            add_problem(problems, &nproblems, "nodes[%d]: node %d has no coordinates",
                        lay->node_pos[v], v);

    json_t *out = json_object();
    json_object_set_new(out, "layout", graphio_text_json(layout_name));
    json_object_set_new(out, "instance",
                        inst && instance_name ? graphio_text_json(instance_name) : json_null());
    json_object_set_new(out, "n", json_integer(g->n));
    json_object_set_new(out, "m", json_integer(g->m));
    json_object_set_new(out, "width", json_integer(g->width));
    json_object_set_new(out, "height", json_integer(g->height));
    json_object_set_new(out, "missing_coordinates", json_integer(lay->n_missing));

    int valid = nproblems == 0;
    if (lay->n_missing) {
        /* no layout to check: the tuple is undefined */
        static const char *const keys[] = {"K", "nK", "Phi", "C", "violation_counts"};
        for (size_t i = 0; i < LCN_ARRAY_LEN(keys); i++)
            json_object_set_new(out, keys[i], json_null());
        json_object_set_new(out, "violations_total", json_integer(0));
        json_object_set_new(out, "violations", json_array());
        json_object_set_new(out, "violations_listed_all", json_true());
        if (with_counts)
            json_object_set_new(out, "c", json_null());
    } else {
        struct lcn_report rep;
        if (validate_layout(g, lay->pts, max_listed, &rep) != 0)
            res->internal_error = 1;
        valid = valid && rep.valid && !res->internal_error;
        res->has_tuple = 1;
        res->obj = rep.obj;
        res->violations = rep.total;
        json_object_set_new(out, "K", json_integer(rep.obj.K));
        json_object_set_new(out, "nK", json_integer(rep.obj.nK));
        json_object_set_new(out, "Phi", json_integer(rep.obj.Phi));
        json_object_set_new(out, "C", json_integer(rep.obj.C));
        json_t *vc = json_object();
        for (int k = LCN_V1_OUT_OF_BOUNDS; k <= LCN_V4_EDGE_OVERLAP; k++)
            json_object_set_new(vc, validate_kind_name((enum lcn_vkind)k),
                                json_integer(rep.count[k]));
        json_object_set_new(out, "violation_counts", vc);
        json_object_set_new(out, "violations_total", json_integer(rep.total));
        json_t *list = json_array();
        for (int32_t i = 0; i < rep.listed; i++)
            json_array_append_new(list, violation_json(&rep.list[i]));
        json_object_set_new(out, "violations", list);
        json_object_set_new(out, "violations_listed_all", json_boolean(rep.listed == rep.total));
        if (with_counts) {
            json_t *c = json_array();
            for (int32_t e = 0; e < g->m; e++)
                json_array_append_new(c, json_integer(rep.c[e]));
            json_object_set_new(out, "c", c);
        }
        report_release(&rep);
    }
    json_object_set_new(out, "problems_total", json_integer(nproblems));
    json_object_set_new(out, "problems", problems);
    json_object_set_new(out, "valid", json_boolean(valid));
    res->valid = valid;
    res->problems = nproblems;
    return out;
}
