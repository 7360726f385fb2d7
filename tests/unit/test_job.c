/* proto/job.c: POST /jobs parsing (every rejection with its status, code
 * and field path), the status object round trip, ids and events. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "err.h"
#include "job.h"
#include "util.h"

static const struct job_limits lim = {10, 20, 100.0, 7.5};

#define G                                                                                          \
    "{\"nodes\":[{\"id\":0,\"x\":0,\"y\":0},{\"id\":1,\"x\":2,\"y\":2},{\"id\":2}],"               \
    "\"edges\":[{\"source\":0,\"target\":1},{\"source\":1,\"target\":2}],"                         \
    "\"width\":5,\"height\":5}"

static void ok(const char *body, struct job_request *req)
{
    struct job_error e;
    int rc = job_request_parse(req, body, strlen(body), &lim, &e);
    if (rc)
        fprintf(stderr, "unexpected error %d %s %s: %s\n", e.status, e.code, e.field, e.msg);
    assert_int_equal(rc, 0);
    assert_int_equal(req->refs, 1);
}

static void bad(const char *body, int status, const char *code, const char *field,
                const char *msg_part)
{
    struct job_request req;
    struct job_error e;
    int rc = job_request_parse(&req, body, strlen(body), &lim, &e);
    if (rc == 0 || e.status != status || strcmp(e.code, code) || strcmp(e.field, field) ||
        (msg_part && !strstr(e.msg, msg_part)))
        fprintf(stderr, "body %s\n got rc %d %d %s field '%s': %s\n", body, rc, e.status, e.code,
                e.field, e.msg);
    assert_int_not_equal(rc, 0);
    assert_int_equal(e.status, status);
    assert_string_equal(e.code, code);
    assert_string_equal(e.field, field);
    if (msg_part)
        assert_non_null(strstr(e.msg, msg_part));
    /* a failed parse leaves nothing to release */
    assert_null(req.doc.root);
    assert_null(req.name);
}

static void test_defaults_and_fields(void **state)
{
    (void)state;
    struct job_request r;
    ok("{\"graph\":" G "}", &r);
    assert_true(r.budget_s == 7.5);
    assert_int_equal(r.seed, 1);
    assert_int_equal(r.target_k, -1);
    assert_int_equal(r.stop_at_target, 0);
    assert_int_equal(r.backend, LCN_BACKEND_AUTO);
    assert_null(r.name);
    assert_int_equal(r.doc.g.n, 3);
    assert_int_equal(r.doc.g.m, 2);
    assert_int_equal(r.doc.n_missing, 1);
    job_request_release(&r);

    ok("{\"graph\":" G ",\"budget_s\":2,\"seed\":9007199254740992,\"target_k\":3,"
       "\"stop_at_target\":true,\"backend\":\"cpu\",\"name\":\"n1\","
       "\"solver\":{\"threads\":2,\"replicas\":8,\"proposal_workers\":4,\"tuning\":\"a=1\"}}",
       &r);
    assert_true(r.budget_s == 2.0);
    assert_int_equal(r.seed, 9007199254740992ULL);
    assert_int_equal(r.target_k, 3);
    assert_int_equal(r.stop_at_target, 1);
    assert_int_equal(r.backend, LCN_BACKEND_CPU);
    assert_string_equal(r.name, "n1");
    assert_int_equal(r.threads, 2);
    assert_int_equal(r.replicas, 8);
    assert_int_equal(r.proposal_workers, 4);
    assert_string_equal(r.tuning, "a=1");
    job_request_release(&r);

    /* the engine limits themselves are admitted */
    ok("{\"graph\":" G ",\"solver\":{\"threads\":1024,\"replicas\":4096,"
       "\"proposal_workers\":256}}",
       &r);
    assert_int_equal(r.threads, LCN_MAX_THREADS);
    assert_int_equal(r.replicas, LCN_MAX_REPLICAS);
    assert_int_equal(r.proposal_workers, LCN_MAX_PROPOSAL_WORKERS);
    job_request_release(&r);

    ok("{\"graph\":" G ",\"budget_s\":0.25,\"target_k\":null,\"name\":null}", &r);
    assert_true(r.budget_s == 0.25);
    assert_int_equal(r.target_k, -1);
    assert_int_equal(r.init_from, -1);
    job_request_release(&r);

    /* a warm start names a job; null is no warm start */
    ok("{\"graph\":" G ",\"init_from\":\"j0000000000000042\"}", &r);
    assert_int_equal(r.init_from, 42);
    job_request_release(&r);
    ok("{\"init_from\":null,\"graph\":" G "}", &r);
    assert_int_equal(r.init_from, -1);
    job_request_release(&r);
}

static void test_rejections(void **state)
{
    (void)state;
    bad("", 400, "bad_json", "", "line 1");
    bad("{\"graph\":", 400, "bad_json", "", NULL);
    bad("{\"graph\":" G ",\"graph\":" G "}", 400, "bad_json", "", "duplicate");
    bad("[]", 400, "invalid_field", "", "must be an object");
    bad("{}", 400, "invalid_field", "graph", "missing");
    bad("{\"graph\":" G ",\"bogus\":1}", 400, "invalid_field", "bogus", "unknown field");
    bad("{\"graph\":" G ",\"budget_s\":\"1\"}", 400, "invalid_field", "budget_s", "got string");
    bad("{\"graph\":" G ",\"budget_s\":-1}", 400, "invalid_field", "budget_s", "positive");
    bad("{\"graph\":" G ",\"budget_s\":0}", 400, "invalid_field", "budget_s", "positive");
    bad("{\"graph\":" G ",\"budget_s\":100.5}", 422, "limit_exceeded", "budget_s", "limit");
    bad("{\"graph\":" G ",\"seed\":-1}", 400, "invalid_field", "seed", NULL);
    bad("{\"graph\":" G ",\"seed\":9007199254740993}", 400, "invalid_field", "seed", NULL);
    bad("{\"graph\":" G ",\"seed\":1.0}", 400, "invalid_field", "seed", "got real");
    bad("{\"graph\":" G ",\"target_k\":-1}", 400, "invalid_field", "target_k", NULL);
    bad("{\"graph\":" G ",\"stop_at_target\":1}", 400, "invalid_field", "stop_at_target", NULL);
    bad("{\"graph\":" G ",\"stop_at_target\":true}", 400, "invalid_field", "stop_at_target",
        "without a target_k");
    bad("{\"graph\":" G ",\"backend\":\"GPU\"}", 400, "invalid_field", "backend", NULL);
    bad("{\"graph\":" G ",\"backend\":1}", 400, "invalid_field", "backend", NULL);
    bad("{\"graph\":" G ",\"solver\":[]}", 400, "invalid_field", "solver", NULL);
    bad("{\"graph\":" G ",\"solver\":{\"threads\":-1}}", 400, "invalid_field", "solver.threads",
        NULL);
    /* the engine limits (engine.h): 422 with the field path */
    bad("{\"graph\":" G ",\"solver\":{\"threads\":1025}}", 422, "limit_exceeded",
        "solver.threads", "engine limit of 1024");
    bad("{\"graph\":" G ",\"solver\":{\"replicas\":4097}}", 422, "limit_exceeded",
        "solver.replicas", "engine limit of 4096");
    bad("{\"graph\":" G ",\"solver\":{\"proposal_workers\":300}}", 422, "limit_exceeded",
        "solver.proposal_workers", "300 exceeds the engine limit of 256");
    bad("{\"graph\":" G ",\"solver\":{\"proposal_workers\":1.5}}", 400, "invalid_field",
        "solver.proposal_workers", "got real");
    bad("{\"graph\":" G ",\"solver\":{\"chains\":1}}", 400, "invalid_field", "solver.chains",
        "unknown field");
    bad("{\"graph\":" G ",\"solver\":{\"tuning\":5}}", 400, "invalid_field", "solver.tuning", NULL);
    bad("{\"graph\":" G ",\"name\":5}", 400, "invalid_field", "name", NULL);
    bad("{\"graph\":" G ",\"init_from\":42}", 400, "invalid_field", "init_from",
        "expected a string, got integer");
    bad("{\"graph\":" G ",\"init_from\":\"j42\"}", 400, "invalid_field", "init_from",
        "'j42' is not a job id");
    bad("{\"graph\":" G ",\"init_from\":\"j000000000000004x\"}", 400, "invalid_field", "init_from",
        "is not a job id");
    bad("{\"graph\":" G ",\"name\":\"a\\u0000b\"}", 400, "bad_json", "", "u0000");
    char longname[300];
    snprintf(longname, sizeof longname, "{\"graph\":%s,\"name\":\"%0129d\"}", G, 0);
    bad(longname, 400, "invalid_field", "name", NULL);
    /* the graph's own rules, with paths under graph. */
    bad("{\"graph\":[]}", 400, "invalid_field", "graph", NULL);
    bad("{\"graph\":{\"nodes\":[{\"id\":0},{\"id\":1}],\"edges\":[{\"source\":0,\"target\":5}],"
        "\"width\":5,\"height\":5}}",
        400, "invalid_field", "graph.edges[0].target", "unknown node 5");
    bad("{\"graph\":{\"nodes\":[{\"id\":0},{\"id\":1}],\"edges\":[{\"source\":1,\"target\":1}],"
        "\"width\":5,\"height\":5}}",
        400, "invalid_field", "graph.edges[0]", "self-loop");
    bad("{\"graph\":{\"nodes\":[{\"id\":0},{\"id\":1}],\"edges\":[{\"source\":0,\"target\":1},"
        "{\"source\":1,\"target\":0}],\"width\":5,\"height\":5}}",
        400, "invalid_field", "graph.edges[1]", "duplicate");
    bad("{\"graph\":{\"nodes\":[{\"id\":0,\"x\":\"1\",\"y\":1}],\"edges\":[],\"width\":5,"
        "\"height\":5}}",
        400, "invalid_field", "graph.nodes[0].x", NULL);
    /* limits: 10 nodes, 20 edges */
    char big[2000];
    size_t o = (size_t)snprintf(big, sizeof big, "{\"graph\":{\"nodes\":[");
    for (int i = 0; i < 11; i++)
        o += (size_t)snprintf(big + o, sizeof big - o, "%s{\"id\":%d}", i ? "," : "", i);
    snprintf(big + o, sizeof big - o, "],\"edges\":[],\"width\":9,\"height\":9}}");
    bad(big, 422, "limit_exceeded", "graph.nodes", NULL);
}

/* A raw NUL byte in the body: jansson stops reading there, so without a
 * check first the error named the cut ("':' expected near end of file");
 * docs/FORMAT.md says "NUL byte in input" at its line and column. */
static void test_nul_byte(void **state)
{
    (void)state;
    static const char a[] = "{\"graph\":\0{}}", b[] = "{\"graph\":" G "}\0",
                      c[] = "{\"graph\":\n  " G ",\n \"name\":\"a\0b\"}";
    struct {
        const char *body;
        size_t len;
        const char *msg;
    } cases[] = {
        {a, sizeof a - 1, "line 1 column 10: NUL byte in input"},
        {b, sizeof b - 1, NULL},
        {c, sizeof c - 1, "line 3 column 11: NUL byte in input"},
    };
    char tail[64];
    snprintf(tail, sizeof tail, "line 1 column %zu: NUL byte in input", sizeof b - 1);
    cases[1].msg = tail;
    for (size_t i = 0; i < LCN_ARRAY_LEN(cases); i++) {
        struct job_request req;
        struct job_error e;
        assert_int_equal(job_request_parse(&req, cases[i].body, cases[i].len, &lim, &e),
                         LCN_EPARSE);
        assert_int_equal(e.status, 400);
        assert_string_equal(e.code, "bad_json");
        assert_string_equal(e.field, "");
        assert_string_equal(e.msg, cases[i].msg);
        assert_null(req.doc.root);
    }
}

/* Parses body (which names init_from) into a heap copy, as POST /jobs
 * holds it, and resolves it against graph src and layout pts. */
static int warm(const char *body, const struct lcn_graph *src, const struct lcn_pt *pts,
                struct job_request *req, char **text, struct job_error *e)
{
    *text = xstrdup(body);
    size_t len = strlen(body);
    ok(body, req);
    assert_int_equal(req->init_from, 7);
    int rc = job_request_warm(req, text, &len, src, pts, &lim, e);
    assert_int_equal(len, strlen(*text));
    return rc;
}

/* The source graph of the warm starts: G's edges, given the other way
 * round and in the other order, with a layout of all three nodes. */
#define WARM_SRC                                                                                   \
    "{\"nodes\":[{\"id\":2,\"x\":4,\"y\":1},{\"id\":0,\"x\":1,\"y\":3},{\"id\":1,\"x\":3,"         \
    "\"y\":5}],\"edges\":[{\"source\":2,\"target\":1},{\"source\":1,\"target\":0}],"               \
    "\"width\":5,\"height\":5,\"extra\":true}"

static void test_warm_start(void **state)
{
    (void)state;
    struct graphio_doc src;
    assert_int_equal(graphio_read_buf(&src, WARM_SRC, strlen(WARM_SRC), NULL, NULL), 0);
    struct job_request r;
    struct job_error e;
    char *text;

    /* the same problem: the request takes the layout, keeps its own fields
     * and order, and no longer names the other job */
    const char *body = "{\"seed\":3,\"init_from\":\"j0000000000000007\",\"graph\":"
                       "{\"nodes\":[{\"id\":0,\"x\":0,\"y\":0,\"label\":\"a\"},{\"id\":1},"
                       "{\"id\":2}],\"edges\":[{\"source\":0,\"target\":1},"
                       "{\"source\":1,\"target\":2}],\"width\":5,\"height\":5},\"name\":\"w\"}";
    assert_int_equal(warm(body, &src.g, src.pts, &r, &text, &e), 0);
    assert_int_equal(r.init_from, -1);
    assert_int_equal(r.refs, 1);
    assert_int_equal(r.seed, 3);
    assert_string_equal(r.name, "w");
    assert_int_equal(r.doc.n_missing, 0);
    for (int v = 0; v < 3; v++) {
        assert_int_equal(r.doc.pts[v].x, src.pts[v].x);
        assert_int_equal(r.doc.pts[v].y, src.pts[v].y);
    }
    assert_string_equal(
        text, "{\"seed\":3,\"graph\":{\"nodes\":[{\"id\":0,\"x\":1,\"y\":3,\"label\":\"a\"},"
              "{\"id\":1,\"x\":3,\"y\":5},{\"id\":2,\"x\":4,\"y\":1}],\"edges\":"
              "[{\"source\":0,\"target\":1},{\"source\":1,\"target\":2}],"
              "\"width\":5,\"height\":5},\"name\":\"w\"}\n");
    /* what the store keeps parses on its own to the same request */
    struct job_request again;
    ok(text, &again);
    assert_int_equal(again.init_from, -1);
    assert_memory_equal(again.doc.pts, r.doc.pts, 3 * sizeof *r.doc.pts);
    job_request_release(&again);
    job_request_release(&r);
    free(text);

    /* another problem: 422 at init_from with the first difference; the
     * request and its body stay as they were */
    static const struct {
        const char *graph, *msg;
    } other[] = {
        {"{\"nodes\":[{\"id\":0},{\"id\":1}],\"edges\":[{\"source\":0,\"target\":1}],"
         "\"width\":5,\"height\":5}",
         "not the graph of job j0000000000000007: 2 nodes, job j0000000000000007's graph has 3"},
        {"{\"nodes\":[{\"id\":0},{\"id\":1},{\"id\":2}],\"edges\":[{\"source\":0,\"target\":1},"
         "{\"source\":1,\"target\":2}],\"width\":6,\"height\":5}",
         "bounds 6 x 5, job j0000000000000007's graph has 5 x 5"},
        {"{\"nodes\":[{\"id\":0},{\"id\":1},{\"id\":2}],\"edges\":[{\"source\":0,\"target\":1}],"
         "\"width\":5,\"height\":5}",
         "1 edges, job j0000000000000007's graph has 2"},
        {"{\"nodes\":[{\"id\":0},{\"id\":1},{\"id\":2}],\"edges\":[{\"source\":0,\"target\":1},"
         "{\"source\":0,\"target\":2}],\"width\":5,\"height\":5}",
         "edge 1 (0-2) is not in job j0000000000000007's graph"},
    };
    for (size_t i = 0; i < LCN_ARRAY_LEN(other); i++) {
        char b[600];
        snprintf(b, sizeof b, "{\"graph\":%s,\"init_from\":\"j0000000000000007\"}", other[i].graph);
        assert_int_not_equal(warm(b, &src.g, src.pts, &r, &text, &e), 0);
        assert_int_equal(e.status, 422);
        assert_string_equal(e.code, "init_from_unusable");
        assert_string_equal(e.field, "init_from");
        if (!strstr(e.msg, other[i].msg))
            fail_msg("case %zu: %s", i, e.msg);
        assert_string_equal(text, b);
        assert_int_equal(r.init_from, 7);
        job_request_release(&r);
        free(text);
    }
    graphio_release(&src);
}

static void test_status_roundtrip(void **state)
{
    (void)state;
    struct job_request r;
    ok("{\"graph\":" G ",\"budget_s\":2.5,\"seed\":77,\"target_k\":4,\"name\":\"x\\\"y\"}", &r);
    struct job_status s;
    job_status_from_request(&s, 42, 1796000000123LL, &r);
    job_request_release(&r);
    assert_int_equal(s.state, JOB_QUEUED);
    s.state = JOB_SUCCEEDED;
    s.started_ms = 1796000000200LL;
    s.finished_ms = 1796000003999LL;
    s.elapsed_s = 2.499999;
    snprintf(s.backend, sizeof s.backend, "cpu");
    snprintf(s.evaluator, sizeof s.evaluator, "grid-delta");
    s.has_best = 1;
    s.best = (struct lcn_obj){3, 2, 1234567890123LL, 99};
    s.time_to_target_s = 0.5;
    snprintf(s.stop_reason, sizeof s.stop_reason, "target");
    s.progress_seq = 17;
    s.start_latency_s = 0.0025;
    s.resumes = 2;
    s.cancel_requested = 1;
    s.has_telemetry = 1;
    s.tel.attempted = 1000;
    s.tel.evaluated = 999;
    s.tel.pair_tests = 1ULL << 40;
    s.tel.elapsed_s = 2.25;
    for (int op = 0; op < ENGINE_OPS; op++)
        s.tel.ops[op] = (struct engine_op_stats){1000 + (uint64_t)op, 900 + (uint64_t)op,
                                                 100 + (uint64_t)op, (uint64_t)op};
    s.tel.ops[ENGINE_OP_SWAP].tried = 1ULL << 41;
    json_t *j = job_status_json(&s, 1);
    struct job_status t;
    assert_int_equal(job_status_parse(&t, j), 0);
    assert_int_equal(t.id, 42);
    assert_string_equal(t.name, "x\"y");
    assert_int_equal(t.state, JOB_SUCCEEDED);
    assert_int_equal(t.created_ms, s.created_ms);
    assert_int_equal(t.started_ms, s.started_ms);
    assert_int_equal(t.finished_ms, s.finished_ms);
    assert_true(t.budget_s == 2.5);
    assert_true(t.elapsed_s == 2.499999);
    assert_int_equal(t.seed, 77);
    assert_int_equal(t.target_k, 4);
    assert_string_equal(t.backend, "cpu");
    assert_string_equal(t.evaluator, "grid-delta");
    assert_int_equal(t.n, 3);
    assert_int_equal(t.has_best, 1);
    assert_int_equal(obj_cmp(&t.best, &s.best), 0);
    assert_true(t.time_to_target_s == 0.5);
    assert_string_equal(t.stop_reason, "target");
    assert_int_equal(t.progress_seq, 17);
    assert_true(t.start_latency_s == 0.0025);
    assert_int_equal(t.resumes, 2);
    assert_int_equal(t.cancel_requested, 1);
    assert_int_equal(t.has_telemetry, 1);
    assert_int_equal(t.tel.pair_tests, 1ULL << 40);
    assert_int_equal(t.tel.evaluated, 999);
    assert_memory_equal(t.tel.ops, s.tel.ops, sizeof(s.tel.ops));
    /* a record written before issue 15 has no "ops": zeros */
    {
        json_t *old = job_status_json(&s, 1);
        json_object_del(json_object_get(old, "telemetry"), "ops");
        struct job_status u;
        assert_int_equal(job_status_parse(&u, old), 0);
        assert_int_equal(u.has_telemetry, 1);
        assert_int_equal(u.tel.pair_tests, 1ULL << 40);
        for (int op = 0; op < ENGINE_OPS; op++)
            assert_int_equal(u.tel.ops[op].tried, 0);
        /* an unknown operator or a member of the wrong shape is a parse error */
        json_t *ops = json_object_get(json_object_get(j, "telemetry"), "ops");
        json_object_set_new(json_object_get(old, "telemetry"), "ops", json_deep_copy(ops));
        json_object_set_new(json_object_get(json_object_get(old, "telemetry"), "ops"), "teleport",
                            json_deep_copy(json_object_get(ops, "swap")));
        assert_int_equal(job_status_parse(&u, old), LCN_EPARSE);
        json_object_set_new(json_object_get(old, "telemetry"), "ops",
                            json_pack("{s:i}", "swap", 3));
        assert_int_equal(job_status_parse(&u, old), LCN_EPARSE);
        json_decref(old);
    }
    /* nulls read back as nulls */
    json_t *k = job_status_json(&t, 1);
    char *a = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    char *b = json_dumps(k, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(a, b);
    free(a);
    free(b);
    json_decref(j);
    json_decref(k);

    struct job_status q;
    memset(&q, 0, sizeof q);
    q.id = 1;
    q.target_k = -1;
    q.time_to_target_s = -1;
    q.start_latency_s = -1;
    j = job_status_json(&q, 0);
    assert_true(json_is_null(json_object_get(j, "best")));
    assert_true(json_is_null(json_object_get(j, "started_at")));
    assert_true(json_is_null(json_object_get(j, "target_k")));
    assert_null(json_object_get(j, "telemetry"));
    assert_int_equal(job_status_parse(&t, j), 0);
    assert_int_equal(t.has_best, 0);
    assert_int_equal(t.target_k, -1);
    assert_true(t.time_to_target_s < 0);
    json_decref(j);
    j = json_pack("{s:s}", "id", "nope");
    assert_int_equal(job_status_parse(&t, j), LCN_EPARSE);
    json_decref(j);
}

static void test_ids_and_events(void **state)
{
    (void)state;
    char buf[24];
    job_id_format(1, buf, sizeof buf);
    assert_string_equal(buf, "j0000000000000001");
    int64_t id;
    assert_int_equal(job_id_parse("j0000000000000042", &id), 0);
    assert_int_equal(id, 42);
    assert_int_equal(job_id_parse("j000000000000004", &id), LCN_EINVAL);
    assert_int_equal(job_id_parse("k0000000000000042", &id), LCN_EINVAL);
    assert_int_equal(job_id_parse("j00000000000000x2", &id), LCN_EINVAL);
    assert_int_equal(job_id_parse(NULL, &id), LCN_EINVAL);
    for (int s = 0; s < JOB_STATE_COUNT; s++) {
        enum job_state st = JOB_STATE_COUNT;
        assert_int_equal(job_state_parse(job_state_name((enum job_state)s), &st), 0);
        assert_int_equal(st, s);
    }
    enum job_state st = JOB_FAILED;
    assert_int_equal(job_state_parse("done", &st), LCN_EINVAL);
    assert_int_equal(st, JOB_FAILED); /* untouched */
    assert_string_equal(job_state_name(JOB_STATE_COUNT), "unknown");
    assert_true(job_state_terminal(JOB_INTERRUPTED));
    assert_false(job_state_terminal(JOB_RUNNING));

    struct lcn_obj o = {5, 1, 30, 7};
    char *e = job_event_improve(3, 1.5, "anneal", &o);
    assert_string_equal(e, "{\"seq\":3,\"type\":\"improve\",\"elapsed_s\":1.5,\"stage\":\"anneal\","
                           "\"best\":{\"K\":5,\"nK\":1,\"Phi\":30,\"C\":7}}");
    free(e);
    e = job_event_state(4, 2.0, JOB_FAILED, "gpu_fatal", "boom");
    assert_string_equal(e, "{\"seq\":4,\"type\":\"state\",\"elapsed_s\":2.0,\"state\":\"failed\","
                           "\"error\":{\"code\":\"gpu_fatal\",\"message\":\"boom\"}}");
    free(e);
    e = job_event_checkpoint(5, 2.0, &o);
    assert_non_null(strstr(e, "\"type\":\"checkpoint\""));
    free(e);
    char t[40];
    job_iso_time(1796000000123LL, t, sizeof t);
    assert_string_equal(t, "2026-11-30T00:53:20.123Z");
}

/* the one backend enum: names round-trip, anything else is refused */
static void test_backend_names(void **st)
{
    (void)st;
    const char *names[] = {"auto", "gpu", "cpu"};
    for (int i = 0; i < LCN_BACKENDS; i++) {
        enum lcn_backend b = LCN_BACKEND_CPU;
        assert_int_equal(lcn_backend_parse(names[i], &b), 0);
        assert_int_equal((int)b, i);
        assert_string_equal(lcn_backend_name(b), names[i]);
    }
    enum lcn_backend b = LCN_BACKEND_GPU;
    assert_int_equal(lcn_backend_parse("GPU", &b), LCN_EINVAL);
    assert_int_equal(lcn_backend_parse("", &b), LCN_EINVAL);
    assert_int_equal(lcn_backend_parse(NULL, &b), LCN_EINVAL);
    assert_int_equal(b, LCN_BACKEND_GPU); /* untouched */
    assert_string_equal(lcn_backend_name((enum lcn_backend)7), "?");
}

/* A bare graph body with the request fields as query arguments (issue 21):
 * read as {"graph": BODY, fields...}, stored as that text; query arguments
 * with a request body are refused; other bodies get the hint to wrap. */
static void test_bare_graph(void **state)
{
    (void)state;
    struct job_request r, back;
    struct job_error e;
    char *wrapped;
    size_t wlen;
    const char *q[JOB_QUERY_COUNT] = {"2.5", "7", "1", "true", "cpu", "bare \"one\""};
    assert_string_equal(job_query_names[0], "budget_s");
    assert_string_equal(job_query_names[5], "name");
    assert_int_equal(job_request_parse_post(&r, G, strlen(G), q, &lim, &e, &wrapped, &wlen), 0);
    assert_true(r.budget_s == 2.5);
    assert_int_equal(r.seed, 7);
    assert_int_equal(r.target_k, 1);
    assert_int_equal(r.stop_at_target, 1);
    assert_int_equal(r.backend, LCN_BACKEND_CPU);
    assert_string_equal(r.name, "bare \"one\"");
    assert_int_equal(r.doc.g.n, 3);
    /* the stored text holds the body's own bytes and reads back the same */
    assert_non_null(wrapped);
    assert_int_equal(wlen, strlen(wrapped));
    assert_memory_equal(wrapped, "{\"graph\":" G ",", strlen("{\"graph\":" G ","));
    ok(wrapped, &back);
    assert_true(back.budget_s == 2.5);
    assert_int_equal(back.seed, 7);
    assert_string_equal(back.name, r.name);
    job_request_release(&back);
    job_request_release(&r);
    free(wrapped);

    /* no query: a bare graph with the defaults, stored wrapped all the same */
    assert_int_equal(job_request_parse_post(&r, G, strlen(G), NULL, &lim, &e, &wrapped, &wlen), 0);
    assert_true(r.budget_s == 7.5);
    assert_string_equal(wrapped, "{\"graph\":" G "}");
    job_request_release(&r);
    free(wrapped);
    /* job_request_parse reads a bare graph too */
    ok(G, &r);
    assert_int_equal(r.doc.g.m, 2);
    job_request_release(&r);

    /* a leading byte-order mark is skipped, and not stored */
    static const char bom[] = "\xef\xbb\xbf" G;
    assert_int_equal(job_request_parse_post(&r, bom, strlen(bom), NULL, &lim, &e, &wrapped, &wlen),
                     0);
    assert_non_null(wrapped);
    assert_null(strstr(wrapped, "\xef\xbb\xbf"));
    job_request_release(&r);
    free(wrapped);
    static const char bom_req[] = "\xef\xbb\xbf{\"graph\":" G "}";
    assert_int_equal(job_request_parse(&r, bom_req, strlen(bom_req), &lim, &e), 0);
    job_request_release(&r);

    /* query values of the wrong form name the argument */
    const char *bad_budget[JOB_QUERY_COUNT] = {"soon"};
    assert_int_not_equal(
        job_request_parse_post(&r, G, strlen(G), bad_budget, &lim, &e, &wrapped, &wlen), 0);
    assert_string_equal(e.field, "budget_s");
    assert_non_null(strstr(e.msg, "'soon' is not a number"));
    const char *big_budget[JOB_QUERY_COUNT] = {"1000"};
    assert_int_not_equal(
        job_request_parse_post(&r, G, strlen(G), big_budget, &lim, &e, &wrapped, &wlen), 0);
    assert_int_equal(e.status, 422);
    assert_string_equal(e.field, "budget_s");
    /* only what JSON would write: no blanks, '+', hexadecimal, ".5", "5."
     * or leading zeros, nothing clamped */
    const char *odd[][JOB_QUERY_COUNT] = {
        {"0x10"},     {" 5"},       {"5 "},        {"+1"},         {"00001"},
        {".5"},       {"5."},       {"1e"},        {"-.5"},        {NULL, "0x10"},
        {NULL, " 7"}, {NULL, "+1"}, {NULL, "007"}, {NULL, "-0x1"}, {NULL, "99999999999999999999"}};
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
        assert_int_not_equal(
            job_request_parse_post(&r, G, strlen(G), odd[i], &lim, &e, &wrapped, &wlen), 0);
        assert_string_equal(e.field, odd[i][0] ? "budget_s" : "seed");
        assert_non_null(strstr(e.msg, odd[i][0] ? odd[i][0] : odd[i][1]));
    }
    const char *bad_seed[JOB_QUERY_COUNT] = {NULL, "1x"};
    assert_int_not_equal(
        job_request_parse_post(&r, G, strlen(G), bad_seed, &lim, &e, &wrapped, &wlen), 0);
    assert_string_equal(e.field, "seed");
    const char *bad_stop[JOB_QUERY_COUNT] = {NULL, NULL, NULL, "yes"};
    assert_int_not_equal(
        job_request_parse_post(&r, G, strlen(G), bad_stop, &lim, &e, &wrapped, &wlen), 0);
    assert_string_equal(e.field, "stop_at_target");

    /* query arguments with a full request: refused, not ignored */
    const char *body = "{\"graph\":" G "}";
    const char *seed[JOB_QUERY_COUNT] = {NULL, "3"};
    assert_int_not_equal(
        job_request_parse_post(&r, body, strlen(body), seed, &lim, &e, &wrapped, &wlen), 0);
    assert_int_equal(e.status, 400);
    assert_string_equal(e.field, "seed");
    assert_non_null(strstr(e.msg, "bare graph body only"));

    /* neither a request nor a graph: the message says how to wrap it */
    bad("{\"width\":5,\"height\":5}", 400, "invalid_field", "width", "wrap the graph as");
    bad("{\"budget_s\":1}", 400, "invalid_field", "graph", "query arguments");
    bad("[]", 400, "invalid_field", "", "wrap the graph as");
    /* errors inside a bare graph keep the graph's paths */
    bad("{\"nodes\":[{\"id\":0}],\"edges\":[{\"source\":0,\"target\":9}],\"width\":5,"
        "\"height\":5}",
        400, "invalid_field", "graph.edges[0].target", NULL);
}

/* A bare graph is stored one level deeper than it came, inside {"graph":
 * ...}: a body at jansson's depth limit was accepted, and then its stored
 * request never parsed again (its solution answered 500, a restart failed
 * it as corrupt_state). Every accepted body's stored text parses. */
static char *deep_bare(int arrays)
{
    size_t n = strlen(G) + 2 * (size_t)arrays + 16;
    char *b = xmalloc(n);
    size_t k = strlen(G) - 1; /* G without its closing brace */
    memcpy(b, G, k);
    k += (size_t)sprintf(b + k, ",\"m\":");
    for (int i = 0; i < arrays; i++)
        b[k++] = '[';
    for (int i = 0; i < arrays; i++)
        b[k++] = ']';
    b[k++] = '}';
    b[k] = 0;
    return b;
}

static void test_bare_graph_depth(void **state)
{
    (void)state;
    for (int arrays = 2040; arrays <= 2047; arrays++) {
        char *body = deep_bare(arrays), *wrapped = NULL;
        size_t wlen;
        struct job_request r, back;
        struct job_error e;
        if (job_request_parse_post(&r, body, strlen(body), NULL, &lim, &e, &wrapped, &wlen) == 0) {
            ok(wrapped, &back); /* what is stored reads back */
            job_request_release(&back);
            job_request_release(&r);
        } else {
            assert_int_equal(e.status, 400);
            assert_string_equal(e.code, "bad_json");
            assert_non_null(strstr(e.msg, "deep"));
        }
        free(wrapped);
        free(body);
    }
}

/* solver.gpus (a run across GPUs): a count up to ENGINE_MAX_DEVICES or
 * "all"; and the telemetry of such a run per device, read back as written. */
/* Bounds with fewer grid points than nodes: no job could succeed (V2), so
 * the request is refused instead of failing later with 'invalid argument'
 * (the probe's finding). The format parser itself still reads such a graph:
 * lcnctl check reports its crowded layout as a verdict. */
static void test_too_few_grid_points(void **state)
{
    (void)state;
    bad("{\"graph\":{\"nodes\":[{\"id\":0},{\"id\":1}],\"edges\":[],\"width\":0,"
        "\"height\":0}}",
        400, "invalid_field", "graph.width", "bounds 0 x 0 hold 1 grid points, fewer than the 2 nodes");
    struct job_request r;
    ok("{\"graph\":{\"nodes\":[{\"id\":0},{\"id\":1}],\"edges\":[],\"width\":1,\"height\":0}}",
       &r);
    job_request_release(&r);
}

static void test_gpus_and_device_telemetry(void **state)
{
    (void)state;
    struct job_request r;
    ok("{\"graph\":" G ",\"solver\":{\"gpus\":2}}", &r);
    assert_int_equal(r.gpus, 2);
    job_request_release(&r);
    ok("{\"graph\":" G ",\"solver\":{\"gpus\":\"all\"}}", &r);
    assert_int_equal(r.gpus, JOB_GPUS_ALL);
    job_request_release(&r);
    ok("{\"graph\":" G "}", &r);
    assert_int_equal(r.gpus, 0);
    job_request_release(&r);
    bad("{\"graph\":" G ",\"solver\":{\"gpus\":17}}", 422, "limit_exceeded", "solver.gpus",
        "17 exceeds the engine limit of 16");
    bad("{\"graph\":" G ",\"solver\":{\"gpus\":\"some\"}}", 400, "invalid_field",
        "solver.gpus", NULL);

    ok("{\"graph\":" G "}", &r);
    struct job_status s;
    job_status_from_request(&s, 7, 1796000000123LL, &r);
    job_request_release(&r);
    s.has_telemetry = 1;
    s.tel.evaluated = 300;
    s.tel.n_devices = 2;
    s.tel.devices[0] = (struct engine_device_stats){0, 100, 10, 0};
    s.tel.devices[1] = (struct engine_device_stats){1, 200, 20, 4};
    json_t *j = job_status_json(&s, 1);
    json_t *devs = json_object_get(json_object_get(j, "telemetry"), "devices");
    assert_int_equal(json_array_size(devs), 2);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(devs, 1), "imports")), 4);
    struct job_status t;
    assert_int_equal(job_status_parse(&t, j), 0);
    assert_int_equal(t.tel.n_devices, 2);
    assert_memory_equal(t.tel.devices, s.tel.devices, 2 * sizeof s.tel.devices[0]);
    json_decref(j);
    /* a one-device run has no "devices" */
    s.tel.n_devices = 0;
    j = job_status_json(&s, 1);
    assert_null(json_object_get(json_object_get(j, "telemetry"), "devices"));
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_and_fields), cmocka_unit_test(test_rejections),
        cmocka_unit_test(test_bare_graph),          cmocka_unit_test(test_nul_byte),
        cmocka_unit_test(test_warm_start),          cmocka_unit_test(test_status_roundtrip),
        cmocka_unit_test(test_gpus_and_device_telemetry), cmocka_unit_test(test_too_few_grid_points),
        cmocka_unit_test(test_ids_and_events),      cmocka_unit_test(test_backend_names),
        cmocka_unit_test(test_bare_graph_depth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
