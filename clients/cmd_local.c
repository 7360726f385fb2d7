/* lcnctl commands that need no daemon: check (the oracle on a file) and gen. */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "clients/check.h"
#include "clients/client.h"
#include "err.h"
#include "gen.h"
#include "graphio.h"
#include "clients/lcnctl.h"
#include "util.h"
#include "validate.h"

static const char check_usage[] =
    "usage: lcnctl check LAYOUT.json [--instance GRAPH.json] [--max-violations N] [--counts]\n"
    "                    [--pretty]\n"
    "\n"
    "Checks a layout with the independent validator (rules V1-V4 of\n"
    "docs/FORMAT.md) and recounts its crossings. Prints one JSON object:\n"
    "valid, n, m, width, height, missing_coordinates, K, nK, Phi, C,\n"
    "violation_counts {V1..V4}, violations_total, violations (the N smallest\n"
    "by kind, then ids: {kind, node|nodes|edge|edges}), violations_listed_all,\n"
    "problems (why the layout is invalid other than V1-V4: nodes without\n"
    "coordinates, differences from the instance). K..C and violation_counts are\n"
    "null when a node has no coordinates. The output is always JSON: --json is\n"
    "accepted for symmetry.\n";

static const char check_exit_status[] =
    "exit status: 0 valid, 1 invalid, 2 usage error or a file that cannot be read\n"
    "(the reason, with its JSON path, on stderr).\n";

struct check_opts {
    const char *instance;
    int64_t max_listed;
    int counts, pretty;
};

static const struct opt check_table[] = {
    OPT_ROW("instance", OPT_STRING, offsetof(struct check_opts, instance), "FILE",
            "the layout must draw this instance: same node count, same edges in the same order "
            "(either direction), same width and height"),
    OPT_RANGE("max-violations", OPT_INT, offsetof(struct check_opts, max_listed), 0, 10000000,
              "100", NULL, "list at most N violations (all are counted)"),
    OPT_ROW("counts", OPT_FLAG, offsetof(struct check_opts, counts), NULL,
            "also print the per-edge crossing counts as \"c\""),
    OPT_ROW("pretty", OPT_FLAG, offsetof(struct check_opts, pretty), NULL, "indent the output"),
};

static int cmd_check(const struct lcnctl_cmd *cmd, const struct lcnctl_args *a)
{
    const struct check_opts *o = a->opts;
    const char *file = a->arg;
    int rc;

    struct graphio_doc lay, inst;
    if ((rc = lcnctl_read_graph(cmd, &lay, file)))
        return rc;
    memset(&inst, 0, sizeof(inst));
    if (o->instance && (rc = lcnctl_read_graph(cmd, &inst, o->instance))) {
        graphio_release(&lay);
        return rc;
    }

    struct check_result res;
    json_t *out = check_layout(&lay, file, o->instance ? &inst : NULL, o->instance,
                               (int32_t)o->max_listed, o->counts, &res);
    int exit_rc = LCNCTL_EXIT_OK;
    if (res.internal_error) {
        lcnctl_errorf(cmd, "internal error: odd crossing-count sum (a validator bug)");
        exit_rc = LCNCTL_EXIT_USAGE;
    }
    int valid = res.valid;

    char *s = json_dumps(out, o->pretty ? JSON_INDENT(2) : JSON_COMPACT);
    puts(s);
    free(s);
    json_decref(out);
    graphio_release(&lay);
    graphio_release(&inst);
    if (exit_rc)
        return exit_rc;
    return valid ? LCNCTL_EXIT_OK : LCNCTL_EXIT_NO;
}

static const char gen_usage[] =
    "usage: lcnctl gen FAMILY --nodes N [--edges M] [--width W] [--height H] [--seed S]\n"
    "                  [--k K] -o FILE [--planted FILE] [--pretty]\n"
    "\n"
    "Generates an instance with a valid starting layout (common/gen.h) and\n"
    "writes it in the graph file format, with a top-level \"generator\" object\n"
    "recording the parameters. The output is a deterministic function of the\n"
    "parameters. With --json (not with -o -): prints {\"instance\", \"planted\",\n"
    "\"generator\"} on stdout.\n"
    "\n"
    "families:\n"
    "  random    m distinct uniform random edges (default m = 3n)\n"
    "  grid      sparse near-planar grid graph plus short extra edges (m = 2n)\n"
    "  dense     random with m = 15n\n"
    "  large     grid family on 250000 x 250000 bounds\n"
    "  planted   a drawing with K <= k is built first, then the coordinates\n"
    "            are scrambled: the achievable k is known\n";

static const char gen_exit_status[] =
    "exit status: 0 written, 2 usage error or the parameters admit no instance.\n";

struct gen_opts {
    int64_t n, m, w, h, seed, k;
    int seen_n, seen_k, pretty;
    const char *out, *planted_out;
};

#define GOFF(f) offsetof(struct gen_opts, f)
static const struct opt gen_table[] = {
    {OPT_RANGE_FIELDS("nodes", OPT_INT, GOFF(n), 2, LCN_MAX_NODES, NULL, NULL,
                      "number of nodes (required)"),
     .seen = OPT_SEEN(struct gen_opts, seen_n)},
    OPT_RANGE("edges", OPT_INT, GOFF(m), 1, LCN_MAX_EDGES, NULL, "M",
              "number of edges (default: the family's)"),
    OPT_RANGE("width", OPT_INT, GOFF(w), 1, LCN_COORD_LIMIT, NULL, "W",
              "drawing width (default: the family's, 4 ceil(sqrt(n)))"),
    OPT_RANGE("height", OPT_INT, GOFF(h), 1, LCN_COORD_LIMIT, NULL, "H",
              "drawing height (default: the family's, 4 ceil(sqrt(n)))"),
    OPT_RANGE("seed", OPT_INT, GOFF(seed), 0, INT64_MAX, "1", "S", "generator seed"),
    {OPT_RANGE_FIELDS("k", OPT_INT, GOFF(k), 1, LCN_MAX_EDGES, NULL, "K",
                      "planted only: the K the planted drawing respects (default 2)"),
     .seen = OPT_SEEN(struct gen_opts, seen_k)},
    {OPT_ROW_FIELDS("output", OPT_STRING, GOFF(out), "FILE",
                    "where to write the instance (\"-\" = stdout; required)"),
     .short_name = 'o'},
    OPT_ROW("planted", OPT_STRING, GOFF(planted_out), "FILE",
            "planted only: also write the planted drawing"),
    OPT_ROW("pretty", OPT_FLAG, GOFF(pretty), NULL, "one node or edge per line"),
};
#undef GOFF

static json_t *gen_meta(const struct gen_params *p, const char *drawing)
{
    json_t *j =
        json_pack("{s:s, s:i, s:i, s:i, s:i, s:I}", "family", gen_family_name(p->family), "nodes",
                  (json_int_t)p->n, "edges", (json_int_t)p->m, "width", (json_int_t)p->width,
                  "height", (json_int_t)p->height, "seed", (json_int_t)p->seed);
    LCN_ASSERT(j);
    if (p->family == GEN_PLANTED)
        json_object_set_new(j, "k", json_integer(p->k));
    json_object_set_new(j, "drawing", json_string(drawing));
    return j;
}

static int write_doc(const struct lcnctl_cmd *cmd, json_t *doc, const char *path, unsigned flags)
{
    struct graphio_error e;
    int rc = graphio_write_file(doc, path, flags, &e);
    json_decref(doc);
    if (rc) {
        lcnctl_errorf(cmd, "%s", e.msg);
        return LCNCTL_EXIT_USAGE;
    }
    return 0;
}

static int cmd_gen(const struct lcnctl_cmd *cmd, const struct lcnctl_args *a)
{
    const struct gen_opts *o = a->opts;
    const char *family = a->arg, *out = o->out, *planted_out = o->planted_out;
    struct gen_params p = {0};
    if (gen_family_parse(family, &p.family) != 0)
        return lcnctl_usage_error(cmd, "unknown family '%s' (random, grid, dense, large, planted)",
                                  family);
    if (!o->seen_n)
        return lcnctl_usage_error(cmd, "--nodes is required");
    if (!out)
        return lcnctl_usage_error(cmd, "-o FILE is required");
    int stream = client_out_is_stream(out); /* no --json summary after the graph */
    if (p.family != GEN_PLANTED && (o->seen_k || planted_out))
        return lcnctl_usage_error(cmd, "--k and --planted apply to the planted family only");
    p.n = (int32_t)o->n;
    p.m = (int32_t)o->m;
    p.width = (int32_t)o->w;
    p.height = (int32_t)o->h;
    p.k = (int32_t)o->k;
    p.seed = (uint64_t)o->seed;
    gen_defaults(&p);

    struct lcn_graph g;
    struct lcn_pt *layout = NULL, *planted = NULL;
    char err[160];
    int rc = gen_instance(&p, &g, &layout, planted_out ? &planted : NULL, err, sizeof(err));
    if (rc) {
        lcnctl_errorf(cmd, "%s", err);
        return LCNCTL_EXIT_USAGE;
    }
    unsigned flags = o->pretty ? GRAPHIO_PRETTY : 0;
    json_t *doc = graphio_build(&g, layout);
    json_object_set_new(doc, "generator", gen_meta(&p, "start"));
    rc = write_doc(cmd, doc, out, flags);
    if (rc == 0 && planted_out) {
        doc = graphio_build(&g, planted);
        json_object_set_new(doc, "generator", gen_meta(&p, "planted"));
        rc = write_doc(cmd, doc, planted_out, flags);
    }
    if (rc == 0 && lcnctl_json && !stream) {
        json_t *j = json_pack("{s:o, s:o, s:o}", "instance", graphio_text_json(out), "planted",
                              planted_out ? graphio_text_json(planted_out) : json_null(), "generator",
                              gen_meta(&p, "start"));
        char *s = json_dumps(j, JSON_COMPACT);
        puts(s);
        free(s);
        json_decref(j);
    }
    graph_release(&g);
    free(layout);
    free(planted);
    return rc;
}

const struct lcnctl_cmd lcnctl_local_cmds[] = {
    {"check", cmd_check, "validate a layout file and print its verdict and tuple", check_usage,
     check_table, LCN_ARRAY_LEN(check_table), check_exit_status, sizeof(struct check_opts),
     "layout file"},
    {"gen", cmd_gen, "generate an instance (random, grid, dense, large, planted)", gen_usage,
     gen_table, LCN_ARRAY_LEN(gen_table), gen_exit_status, sizeof(struct gen_opts),
     "FAMILY (random, grid, dense, large, planted)"},
    {.name = NULL},
};
