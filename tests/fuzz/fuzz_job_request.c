/*
 * Fuzz target for the POST /jobs request parser (proto/job.c, and through
 * it proto/graphio.c). Any input must give either a well-formed rejection
 * (400/422 with a code and a message) or a request within the limits whose
 * status object round-trips and whose solution document (the layout
 * writer) reads back as the same graph. Violations abort.
 *
 * Built as a libFuzzer binary with -DLCN_FUZZ=ON (clang); replay.c runs the
 * same entry point over the seed corpus and a deterministic mutation sweep
 * in every build, so CI exercises it without libFuzzer.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "graphio.h"
#include "job.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const struct job_limits lim = {64, 256, 3600.0, 60.0};
    struct job_request req;
    struct job_error e;
    int rc = job_request_parse(&req, (const char *)data, size, &lim, &e);
    if (rc) {
        LCN_ASSERT(e.status == 400 || e.status == 422);
        LCN_ASSERT(e.code[0] && e.msg[0]);
        LCN_ASSERT((rc == LCN_EPARSE) == !strcmp(e.code, "bad_json"));
        LCN_ASSERT((rc == LCN_ETOOBIG) == (e.status == 422));
        LCN_ASSERT(rc == LCN_EPARSE || rc == LCN_EINVAL || rc == LCN_ETOOBIG);
        LCN_ASSERT(req.doc.root == NULL && req.name == NULL && req.tuning == NULL);
        return 0;
    }
    LCN_ASSERT(req.refs == 1);
    LCN_ASSERT(req.doc.g.n <= lim.max_nodes && req.doc.g.m <= lim.max_edges);
    LCN_ASSERT(req.budget_s > 0 && req.budget_s <= lim.max_budget_s);
    LCN_ASSERT(req.seed <= (uint64_t)JOB_SEED_MAX);
    LCN_ASSERT(!req.stop_at_target || req.target_k >= 0);

    struct job_status s, t;
    job_status_from_request(&s, 12345, 1796000000000LL, &req);
    json_t *j = job_status_json(&s, 1);
    LCN_ASSERT(job_status_parse(&t, j) == 0);
    LCN_ASSERT(t.id == s.id && t.n == s.n && t.m == s.m && t.seed == s.seed &&
               t.target_k == s.target_k && t.backend_requested == s.backend_requested &&
               !strcmp(t.name, s.name));
    json_decref(j);

    json_t *doc = graphio_layout_json(&req.doc, req.doc.pts, NULL);
    char *text = graphio_dumps(doc, 0);
    json_decref(doc);
    LCN_ASSERT(text != NULL);
    struct graphio_doc back;
    struct graphio_error ge;
    LCN_ASSERT(graphio_read_buf(&back, text, strlen(text), NULL, &ge) == 0);
    LCN_ASSERT(graph_hash(&back.g) == graph_hash(&req.doc.g));
    LCN_ASSERT(back.n_missing == 0);
    graphio_release(&back);
    free(text);
    job_request_release(&req);
    return 0;
}
