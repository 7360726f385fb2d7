/* lcnctl render: an SVG picture of a layout file (render.h). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "clients/check.h"
#include "clients/client.h"
#include "err.h"
#include "graphio.h"
#include "clients/lcnctl.h"
#include "render.h"
#include "util.h"

static const char render_usage[] =
    "usage: lcnctl render LAYOUT.json -o OUT.svg [--instance GRAPH.json] [--title TEXT] [--json]\n"
    "\n"
    "Draws a layout as SVG: edges coloured by their crossing count (legend with\n"
    "the number of edges per range), the K edges red and thicker, and a caption\n"
    "with K, nK, C (and Phi), n, m, the bounds and the verdict of the validator.\n"
    "Nodes involved in a violation of rules V1-V4 are drawn red. The y axis\n"
    "points up: (0,0) is the bottom-left corner of the bounds, (W,H) the\n"
    "top-right one; both corners are labelled. With --json: prints {output, K,\n"
    "nK, Phi, C, valid} on stdout.\n";

static const char render_exit_status[] =
    "exit status: 0 written and the layout is valid; 1 written but the layout\n"
    "violates V1-V4, or it does not draw the instance (nothing written); 2 usage\n"
    "error, or a file that cannot be read or written.\n";

struct render_opts {
    const char *out, *instance, *title;
};

static const struct opt render_table[] = {
    {OPT_ROW_FIELDS("output", OPT_STRING, offsetof(struct render_opts, out), "FILE",
                    "where to write the SVG (\"-\" = stdout; required)"),
     .short_name = 'o'},
    OPT_ROW("instance", OPT_STRING, offsetof(struct render_opts, instance), "FILE",
            "the layout must draw this instance (as lcnctl check --instance); nothing is drawn "
            "when it does not"),
    OPT_ROW("title", OPT_STRING, offsetof(struct render_opts, title), "TEXT",
            "first caption line (default: the layout's file name)"),
};

static int cmd_render(const struct lcnctl_cmd *cmd, const struct lcnctl_args *a)
{
    const struct render_opts *o = a->opts;
    const char *file = a->arg, *out = o->out, *instance = o->instance, *title = o->title;
    int rc;
    if (!out)
        return lcnctl_usage_error(cmd, "-o FILE is required");
    int stream = client_out_is_stream(out);
    if (lcnctl_json && stream)
        return lcnctl_usage_error(cmd, "--json and -o %s both want stdout", out);

    struct graphio_doc lay, inst;
    char msg[600];
    memset(&inst, 0, sizeof inst);
    if ((rc = lcnctl_read_graph(cmd, &lay, file)))
        return rc;
    if (instance && (rc = lcnctl_read_graph(cmd, &inst, instance))) {
        graphio_release(&lay);
        return rc;
    }
    int exit_rc = LCNCTL_EXIT_OK;
    if (instance) {
        json_t *problems = json_array();
        int64_t n = check_compare_instance(&lay.g, &inst.g, problems);
        if (n) {
            lcnctl_errorf(cmd, "%s does not draw the instance %s (%lld difference%s):", file,
                          instance, (long long)n, n == 1 ? "" : "s");
            size_t i;
            json_t *p;
            json_array_foreach(problems, i, p) fprintf(stderr, "  %s\n", json_string_value(p));
            exit_rc = LCNCTL_EXIT_NO;
        }
        json_decref(problems);
    }
    if (exit_rc == LCNCTL_EXIT_OK) {
        struct render_info info = {title ? title : file, instance ? instance : NULL};
        char sub[512];
        if (instance) {
            snprintf(sub, sizeof sub, "instance %s", instance);
            info.subtitle = sub;
        }
        struct lcn_obj obj;
        int valid = 0;
        rc = render_doc(out, &lay, &info, &obj, &valid, msg, sizeof msg);
        if (rc) {
            lcnctl_errorf(cmd, "%s: %s", rc == LCN_EINVAL ? file : out, msg);
            exit_rc = LCNCTL_EXIT_USAGE;
        } else {
            if (lcnctl_json) {
                json_t *j =
                    json_pack("{s:o, s:i, s:i, s:I, s:I, s:b}", "output", graphio_text_json(out), "K",
                              (json_int_t)obj.K, "nK", (json_int_t)obj.nK, "Phi",
                              (json_int_t)obj.Phi, "C", (json_int_t)obj.C, "valid", valid);
                client_print_json(j);
                json_decref(j);
            } else if (strcmp(out, "-") != 0) {
                fprintf(stream ? stderr : stdout, "wrote %s: K=%d nK=%d Phi=%lld C=%lld, %s\n", out,
                        obj.K, obj.nK, (long long)obj.Phi, (long long)obj.C,
                        valid ? "valid" : "INVALID (see the caption)");
            }
            exit_rc = valid ? LCNCTL_EXIT_OK : LCNCTL_EXIT_NO;
        }
    }
    graphio_release(&lay);
    graphio_release(&inst);
    return exit_rc;
}

const struct lcnctl_cmd lcnctl_render_cmds[] = {
    {"render", cmd_render, "draw a layout as SVG (edges coloured by crossings)", render_usage,
     render_table, LCN_ARRAY_LEN(render_table), render_exit_status, sizeof(struct render_opts),
     "layout file"},
    {.name = NULL},
};
