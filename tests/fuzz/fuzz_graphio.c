/*
 * libFuzzer target for the graph/layout reader (proto/graphio.c).
 *
 * Properties checked on every input: the reader never crashes and either
 * fails with a code and a message or succeeds; a successful read writes back
 * (compact and pretty) to a document that reads to the same graph, the same
 * node order and the same coordinates; the validator runs on what was read.
 * Built with clang -fsanitize=fuzzer,address,undefined when clang is found
 * (tests/fuzz/CMakeLists.txt), and replayed over the committed seed corpus
 * by replay.c in every build.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "graphio.h"
#include "util.h"
#include "validate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same_doc(const struct graphio_doc *a, const struct graphio_doc *b)
{
    LCN_ASSERT(a->g.n == b->g.n && a->g.m == b->g.m);
    LCN_ASSERT(a->g.width == b->g.width && a->g.height == b->g.height);
    LCN_ASSERT(graph_hash(&a->g) == graph_hash(&b->g));
    for (int32_t v = 0; v < a->g.n; v++) {
        LCN_ASSERT(a->node_pos[v] == b->node_pos[v]);
        LCN_ASSERT(b->has_xy[v]);
        LCN_ASSERT(a->pts[v].x == b->pts[v].x && a->pts[v].y == b->pts[v].y);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct graphio_limits lim = {.max_nodes = 2000, .max_edges = 8000};
    struct graphio_doc d;
    struct graphio_error e;
    int rc = graphio_read_buf(&d, (const char *)data, size, &lim, &e);
    if (rc != 0) {
        LCN_ASSERT(rc == LCN_EPARSE || rc == LCN_EINVAL || rc == LCN_ETOOBIG);
        LCN_ASSERT(e.err == rc && e.msg[0] != 0);
        LCN_ASSERT(d.root == NULL && d.pts == NULL);
        return 0;
    }
    LCN_ASSERT(d.n_missing >= 0 && d.n_missing <= d.g.n);
    for (unsigned flags = 0; flags <= GRAPHIO_PRETTY; flags++) {
        json_t *out = graphio_layout_json(&d, d.pts, graphio_obj_json(&(struct lcn_obj){0}));
        char *s = graphio_dumps(out, flags);
        json_decref(out);
        struct graphio_doc d2;
        LCN_ASSERT(graphio_read_buf(&d2, s, strlen(s), &lim, &e) == 0);
        same_doc(&d, &d2);
        graphio_release(&d2);
        free(s);
    }
    if (d.g.m <= 400) {
        struct lcn_report r;
        LCN_ASSERT(validate_layout(&d.g, d.pts, 16, &r) == 0);
        LCN_ASSERT(r.valid == (r.total == 0));
        report_release(&r);
    }
    graphio_release(&d);
    return 0;
}
