/*
 * graphio: one test per class of bad input (exact path and message), the
 * accepted variants, the round trip read -> write -> read, and a
 * deterministic byte-mutation sweep that must never crash.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "err.h"
#include "gen.h"
#include "graphio.h"
#include "rng.h"
#include "util.h"

/* Test documents are written with ' for " to stay readable. */
static char *J(const char *s)
{
    char *o = xstrdup(s);
    for (char *p = o; *p; p++)
        if (*p == '\'')
            *p = '"';
    return o;
}

static int read_str(struct graphio_doc *d, const char *text, const struct graphio_limits *lim,
                    struct graphio_error *e)
{
    char *s = J(text);
    int rc = graphio_read_buf(d, s, strlen(s), lim, e);
    free(s);
    return rc;
}

static void expect_fail_lim(const char *text, const struct graphio_limits *lim, int code,
                            const char *path, const char *msg)
{
    struct graphio_doc d;
    struct graphio_error e;
    int rc = read_str(&d, text, lim, &e);
    if (rc != code || strcmp(e.path, path) != 0 || strcmp(e.msg, msg) != 0)
        print_error("input %s\n  got  %d '%s' '%s'\n  want %d '%s' '%s'\n", text, rc, e.path, e.msg,
                    code, path, msg);
    assert_int_equal(rc, code);
    assert_int_equal(e.err, code);
    assert_string_equal(e.path, path);
    assert_string_equal(e.msg, msg);
    /* a failed read leaves nothing behind */
    assert_null(d.root);
    assert_null(d.pts);
    assert_null(d.has_xy);
    assert_null(d.node_pos);
    assert_int_equal(d.g.n, 0);
    graphio_release(&d); /* safe on the zeroed doc */
}

static void expect_fail(const char *text, int code, const char *path, const char *msg)
{
    expect_fail_lim(text, NULL, code, path, msg);
}

static void expect_invalid(const char *text, const char *path, const char *msg)
{
    expect_fail(text, LCN_EINVAL, path, msg);
}

#define G3(nodes, edges) "{'nodes':" nodes ",'edges':" edges ",'width':10,'height':10}"
#define N3               "[{'id':0,'x':1,'y':1},{'id':1,'x':2,'y':5},{'id':2,'x':7,'y':3}]"
#define E2               "[{'source':0,'target':1},{'source':1,'target':2}]"

static void test_valid_minimal(void **state)
{
    struct graphio_doc d;
    struct graphio_error e;
    assert_int_equal(read_str(&d, G3(N3, E2), NULL, &e), 0);
    assert_int_equal(e.err, 0);
    assert_int_equal(d.g.n, 3);
    assert_int_equal(d.g.m, 2);
    assert_int_equal(d.g.width, 10);
    assert_int_equal(d.g.height, 10);
    assert_int_equal(d.pts[1].x, 2);
    assert_int_equal(d.pts[1].y, 5);
    assert_int_equal(d.g.eu[1], 1);
    assert_int_equal(d.g.ev[1], 2);
    assert_int_equal(d.n_missing, 0);
    for (int v = 0; v < 3; v++) {
        assert_int_equal(d.has_xy[v], 1);
        assert_int_equal(d.node_pos[v], v);
    }
    graphio_release(&d);
    graphio_release(&d); /* idempotent */
}

static void test_valid_variants(void **state)
{
    struct graphio_doc d;
    struct graphio_error e;
    /* ids in any order, extra fields everywhere, edge ids, coordinates at the limit */
    const char *t = "{'meta':{'a':[1,{'b':null}]},'nodes':[{'id':2,'x':-1073741823,'y':"
                    "1073741823,'label':'c'},{'id':0,'x':0,'y':0,'w':1.5},{'id':1,'x':3,'y':4}],"
                    "'edges':[{'id':7,'source':2,'target':0,'weight':2.5}],'width':1073741823,"
                    "'height':0,'points':[]}";
    assert_int_equal(read_str(&d, t, NULL, &e), 0);
    assert_int_equal(d.g.n, 3);
    assert_int_equal(d.pts[2].x, -1073741823);
    assert_int_equal(d.pts[2].y, 1073741823);
    assert_int_equal(d.node_pos[2], 0);
    assert_int_equal(d.node_pos[0], 1);
    assert_int_equal(d.node_pos[1], 2);
    assert_int_equal(d.g.eu[0], 2);
    assert_int_equal(d.g.ev[0], 0);
    assert_int_equal(d.g.width, 1073741823);
    graphio_release(&d);

    /* the empty graph */
    assert_int_equal(read_str(&d, "{'nodes':[],'edges':[],'width':0,'height':0}", NULL, &e), 0);
    assert_int_equal(d.g.n, 0);
    assert_int_equal(d.g.m, 0);
    graphio_release(&d);

    /* -0 is the integer 0 */
    assert_int_equal(read_str(&d, G3("[{'id':0,'x':-0,'y':0}]", "[]"), NULL, &e), 0);
    assert_int_equal(d.pts[0].x, 0);
    graphio_release(&d);
}

static void test_missing_coordinates(void **state)
{
    struct graphio_doc d;
    struct graphio_error e;
    /* absent and null both mean "no coordinates" */
    assert_int_equal(read_str(&d,
                              G3("[{'id':0},{'id':1,'x':null,'y':null},{'id':2,'x':4,'y':4}]", E2),
                              NULL, &e),
                     0);
    assert_int_equal(d.n_missing, 2);
    assert_int_equal(d.has_xy[0], 0);
    assert_int_equal(d.has_xy[1], 0);
    assert_int_equal(d.has_xy[2], 1);
    assert_int_equal(d.pts[0].x, 0);
    graphio_release(&d);
    /* one coordinate without the other is an error */
    expect_invalid(G3("[{'id':0,'x':1}]", "[]"), "nodes[0].y", "missing while 'x' is given");
    expect_invalid(G3("[{'id':0,'y':1}]", "[]"), "nodes[0].x", "missing while 'y' is given");
    expect_invalid(G3("[{'id':0,'x':1,'y':null}]", "[]"), "nodes[0].y",
                   "missing while 'x' is given");
}

static void test_malformed_json(void **state)
{
    expect_fail("{'nodes': [}", LCN_EPARSE, "", "line 1 column 12: unexpected token near '}'");
    expect_fail("{'nodes': []]", LCN_EPARSE, "", "line 1 column 13: '}' expected near ']'");
    expect_fail("{'a':1}x", LCN_EPARSE, "", "line 1 column 8: end of file expected near 'x'");
    expect_fail("{'a':NaN}", LCN_EPARSE, "", "line 1 column 8: invalid token near 'NaN'");
    expect_fail("{'a':01}", LCN_EPARSE, "", "line 1 column 6: invalid token near '0'");
    expect_fail("{\n'a':1,\n  ]", LCN_EPARSE, "",
                "line 3 column 3: string or '}' expected near ']'");
    expect_fail("{'a':'\\ud800'}", LCN_EPARSE, "",
                "line 1 column 13: invalid Unicode '\\uD800' near "
                "'\"\\ud800\"'");
    expect_fail("{'a':'x\\u0000'}", LCN_EPARSE, "",
                "line 1 column 14: \\u0000 is not allowed without JSON_ALLOW_NUL near "
                "'\"x\\u0000\"'");
    /* invalid UTF-8 */
    expect_fail("{'a':'\xff'}", LCN_EPARSE, "",
                "line 1 column 6: unable to decode byte 0xff near '\"'");
    /* numbers jansson cannot hold are parse errors too */
    expect_fail("{'a':99999999999999999999}", LCN_EPARSE, "",
                "line 1 column 25: too big integer near '99999999999999999999'");
    expect_fail("{'a':1e999}", LCN_EPARSE, "",
                "line 1 column 10: real number overflow near '1e999'");
    struct graphio_doc d;
    struct graphio_error e;
    assert_int_equal(read_str(&d, "\n\n  {'a' 1}", NULL, &e), LCN_EPARSE);
    assert_int_equal(e.line, 3);
    assert_int_equal(e.column, 8);
}

static void test_empty_input(void **state)
{
    expect_fail("", LCN_EPARSE, "", "empty input");
    expect_fail("   \n", LCN_EPARSE, "", "line 2 column 0: '[' or '{' expected near end of file");
}

/* A leading byte-order mark is skipped (RFC 8259 lets a parser ignore
 * it); one anywhere else is no JSON. */
static void test_byte_order_mark(void **state)
{
    (void)state;
    struct graphio_doc d;
    struct graphio_error e;
    assert_int_equal(read_str(&d, "\xef\xbb\xbf" G3(N3, E2), NULL, &e), 0);
    assert_int_equal(d.g.n, 3);
    graphio_release(&d);
    expect_fail("\xef\xbb\xbf", LCN_EPARSE, "", "empty input");
    assert_int_equal(read_str(&d, " \xef\xbb\xbf" G3(N3, E2), NULL, &e), LCN_EPARSE);
    assert_int_equal(read_str(&d, "\xef\xbb\xbf\xef\xbb\xbf" G3(N3, E2), NULL, &e), LCN_EPARSE);
}

static void test_nul_byte(void **state)
{
    static const char a[] = "{\"a\":1\0}", b[] = "{\"a\":1}\0", c[] = "{\n \0";
    struct graphio_doc d;
    struct graphio_error e;
    assert_int_equal(graphio_read_buf(&d, a, sizeof(a) - 1, NULL, &e), LCN_EPARSE);
    assert_string_equal(e.msg, "line 1 column 7: NUL byte in input");
    assert_int_equal(graphio_read_buf(&d, b, sizeof(b) - 1, NULL, &e), LCN_EPARSE);
    assert_string_equal(e.msg, "line 1 column 8: NUL byte in input");
    assert_int_equal(graphio_read_buf(&d, c, sizeof(c) - 1, NULL, &e), LCN_EPARSE);
    assert_int_equal(e.line, 2);
    assert_int_equal(e.column, 2);
}

static void test_truncated(void **state)
{
    /* every strict prefix of a valid document is a parse error, never a crash */
    char *full = J(G3(N3, E2));
    size_t len = strlen(full);
    struct graphio_doc d;
    struct graphio_error e;
    assert_int_equal(graphio_read_buf(&d, full, len, NULL, &e), 0);
    graphio_release(&d);
    for (size_t k = 0; k < len; k++) {
        int rc = graphio_read_buf(&d, full, k, NULL, &e);
        assert_int_equal(rc, LCN_EPARSE);
        assert_true(e.msg[0] != 0);
        assert_string_equal(e.path, "");
    }
    free(full);
    expect_fail("{'nodes':[{'id':0,'x':1", LCN_EPARSE, "",
                "line 1 column 23: '}' expected near end of file");
}

static void test_duplicate_keys(void **state)
{
    expect_fail("{'nodes':[],'nodes':[]}", LCN_EPARSE, "",
                "line 1 column 19: duplicate object key near '\"nodes\"'");
    expect_fail(G3("[{'id':0,'x':1,'y':2,'x':3}]", "[]"), LCN_EPARSE, "",
                "line 1 column 33: duplicate object key near '\"x\"'");
    expect_fail(G3("[]", "[{'source':0,'target':1,'source':1}]"), LCN_EPARSE, "",
                "line 1 column 52: duplicate object key near '\"source\"'");
    /* also inside fields lcn does not know */
    expect_fail("{'extra':{'q':{'z':1,'z':2}}}", LCN_EPARSE, "",
                "line 1 column 24: duplicate object key near '\"z\"'");
}

static void test_wrong_types(void **state)
{
    expect_invalid("[1,2]", "", "expected an object, got array");
    expect_invalid("{'nodes':{},'edges':[],'width':1,'height':1}", "nodes",
                   "expected an array, got object");
    expect_invalid("{'nodes':[],'edges':'x','width':1,'height':1}", "edges",
                   "expected an array, got string");
    expect_invalid("{'nodes':[],'edges':[],'width':true,'height':1}", "width",
                   "expected an integer, got boolean");
    expect_invalid("{'nodes':[],'edges':[],'width':1,'height':null}", "height",
                   "expected an integer, got null");
    expect_invalid(G3("[{'id':0,'x':1,'y':1},7]", "[]"), "nodes[1]",
                   "expected an object, got integer");
    expect_invalid(G3("[{'id':'0','x':1,'y':1}]", "[]"), "nodes[0].id",
                   "expected an integer, got string");
    expect_invalid(G3("[{'id':0,'x':'1','y':1}]", "[]"), "nodes[0].x",
                   "expected an integer, got string");
    expect_invalid(G3("[{'id':0,'x':1,'y':[1]}]", "[]"), "nodes[0].y",
                   "expected an integer, got array");
    expect_invalid(G3("[{'id':0,'x':1,'y':{}}]", "[]"), "nodes[0].y",
                   "expected an integer, got object");
    expect_invalid(G3(N3, "[{'source':0,'target':1},[0,2]]"), "edges[1]",
                   "expected an object, got array");
    expect_invalid(G3(N3, "[null]"), "edges[0]", "expected an object, got null");
    expect_invalid(G3(N3, "[{'source':'0','target':1}]"), "edges[0].source",
                   "expected an integer, got string");
    expect_invalid(G3(N3, "[{'source':0,'target':false}]"), "edges[0].target",
                   "expected an integer, got boolean");
}

static void test_missing_fields(void **state)
{
    expect_invalid("{}", "nodes", "missing required field");
    expect_invalid("{'nodes':[]}", "edges", "missing required field");
    expect_invalid("{'nodes':[],'edges':[]}", "width", "missing required field");
    expect_invalid("{'nodes':[],'edges':[],'width':3}", "height", "missing required field");
    expect_invalid(G3("[{'x':1,'y':1}]", "[]"), "nodes[0].id", "missing required field");
    expect_invalid(G3(N3, "[{'target':1}]"), "edges[0].source", "missing required field");
    expect_invalid(G3(N3, "[{'source':0,'target':1},{'source':1}]"), "edges[1].target",
                   "missing required field");
}

static void test_out_of_range(void **state)
{
    expect_invalid(G3("[{'id':0,'x':1073741824,'y':0}]", "[]"), "nodes[0].x",
                   "1073741824 outside [-1073741823, 1073741823]");
    expect_invalid(G3("[{'id':0,'x':0,'y':-1073741824}]", "[]"), "nodes[0].y",
                   "-1073741824 outside [-1073741823, 1073741823]");
    expect_invalid(G3("[{'id':0,'x':0,'y':9223372036854775807}]", "[]"), "nodes[0].y",
                   "9223372036854775807 outside [-1073741823, 1073741823]");
    expect_invalid("{'nodes':[],'edges':[],'width':-1,'height':1}", "width",
                   "-1 outside [0, 1073741823]");
    expect_invalid("{'nodes':[],'edges':[],'width':1,'height':1073741824}", "height",
                   "1073741824 outside [0, 1073741823]");
    expect_invalid(G3("[{'id':0,'x':1,'y':1},{'id':2,'x':1,'y':2}]", "[]"), "nodes[1].id",
                   "2 outside [0, 1]");
    expect_invalid(G3("[{'id':-1,'x':1,'y':1}]", "[]"), "nodes[0].id", "-1 outside [0, 0]");
    expect_invalid(G3(N3, "[{'source':0,'target':4294967296}]"), "edges[0].target",
                   "unknown node 4294967296");
    expect_invalid(G3(N3, "[{'source':-9223372036854775808,'target':1}]"), "edges[0].source",
                   "unknown node -9223372036854775808");
}

static void test_reals(void **state)
{
    expect_invalid(G3("[{'id':0,'x':1.5,'y':1}]", "[]"), "nodes[0].x",
                   "expected an integer, got real");
    /* integral reals are rejected too (documented in docs/FORMAT.md) */
    expect_invalid(G3("[{'id':0,'x':12.0,'y':1}]", "[]"), "nodes[0].x",
                   "expected an integer, got real");
    expect_invalid(G3("[{'id':0,'x':1,'y':1e3}]", "[]"), "nodes[0].y",
                   "expected an integer, got real");
    expect_invalid(G3("[{'id':0.0,'x':1,'y':1}]", "[]"), "nodes[0].id",
                   "expected an integer, got real");
    expect_invalid("{'nodes':[],'edges':[],'width':100.0,'height':1}", "width",
                   "expected an integer, got real");
    expect_invalid(G3(N3, "[{'source':0,'target':1.0}]"), "edges[0].target",
                   "expected an integer, got real");
}

static void test_unknown_nodes(void **state)
{
    expect_invalid(G3(N3, "[{'source':0,'target':1},{'source':1,'target':99}]"), "edges[1].target",
                   "unknown node 99");
    expect_invalid(G3(N3, "[{'source':3,'target':1}]"), "edges[0].source", "unknown node 3");
    expect_invalid(G3(N3, "[{'source':-1,'target':1}]"), "edges[0].source", "unknown node -1");
    expect_invalid(G3("[]", "[{'source':0,'target':1}]"), "edges[0].source", "unknown node 0");
}

static void test_self_loop(void **state)
{
    expect_invalid(G3(N3, "[{'source':0,'target':1},{'source':1,'target':2},"
                          "{'source':2,'target':2}]"),
                   "edges[2]", "self-loop at node 2");
}

static void test_duplicate_edges(void **state)
{
    expect_invalid(G3(N3, "[{'source':0,'target':1},{'source':0,'target':1}]"), "edges[1]",
                   "duplicate of edges[0] (nodes 0 and 1)");
    expect_invalid(G3(N3, "[{'source':2,'target':1},{'source':0,'target':2},"
                          "{'source':1,'target':2}]"),
                   "edges[2]", "duplicate of edges[0] (nodes 1 and 2)");
}

static void test_duplicate_node_ids(void **state)
{
    expect_invalid(G3("[{'id':0,'x':1,'y':1},{'id':1,'x':1,'y':2},{'id':0,'x':3,'y':3}]", "[]"),
                   "nodes[2].id", "duplicate id 0 (also nodes[0])");
}

static void test_missing_ids(void **state)
{
    /* n distinct ids must be exactly 0..n-1: a gap shows as an id out of range */
    expect_invalid(G3("[{'id':0,'x':1,'y':1},{'id':1,'x':1,'y':2},{'id':3,'x':3,'y':3}]", "[]"),
                   "nodes[2].id", "3 outside [0, 2]");
}

static void test_limits(void **state)
{
    struct graphio_limits lim = {.max_nodes = 2, .max_edges = 1};
    expect_fail_lim(G3(N3, "[]"), &lim, LCN_ETOOBIG, "nodes", "3 nodes exceed the limit of 2");
    expect_fail_lim(G3("[{'id':0,'x':1,'y':1},{'id':1,'x':2,'y':2}]", E2), &lim, LCN_ETOOBIG,
                    "edges", "2 edges exceed the limit of 1");
    /* the size check comes before any element is looked at */
    expect_fail_lim(G3("[1,2,3]", "[]"), &lim, LCN_ETOOBIG, "nodes",
                    "3 nodes exceed the limit of 2");
    /* at the limit is fine */
    struct graphio_doc d;
    struct graphio_error e;
    assert_int_equal(
        read_str(&d, G3("[{'id':0,'x':1,'y':1},{'id':1,'x':2,'y':2}]", "[{'source':0,'target':1}]"),
                 &lim, &e),
        0);
    graphio_release(&d);
    /* a limit above the hard limit is capped to it */
    struct graphio_limits big = {.max_nodes = INT32_MAX, .max_edges = INT32_MAX};
    assert_int_equal(read_str(&d, G3(N3, E2), &big, &e), 0);
    graphio_release(&d);
    assert_string_equal(graphio_api_code(LCN_ETOOBIG), "limit_exceeded");
    assert_string_equal(graphio_api_code(LCN_EINVAL), "invalid_field");
    assert_string_equal(graphio_api_code(LCN_EPARSE), "bad_json");
    assert_string_equal(graphio_api_code(LCN_EIO), "io_error");
}

static void test_deep_nesting(void **state)
{
    /* beyond jansson's depth limit: a parse error, no stack overflow */
    size_t depth = 100000;
    char *deep = xmalloc(depth + 1);
    memset(deep, '[', depth);
    struct graphio_doc d;
    struct graphio_error e;
    assert_int_equal(graphio_read_buf(&d, deep, depth, NULL, &e), LCN_EPARSE);
    assert_string_equal(e.msg, "line 1 column 2049: maximum parsing depth reached near '['");
    free(deep);

    /* moderately deep junk in an unknown field is accepted and passed through:
     * {"junk":{"k":[{"k":[ ... ]}]}, ...} */
    size_t k = 500;
    char *doc = xmalloc(6 * k + 128);
    size_t len = (size_t)sprintf(doc, "{\"junk\":");
    for (size_t i = 0; i < k; i++)
        len += (size_t)sprintf(doc + len, "%s", i % 2 ? "[" : "{\"k\":");
    for (size_t i = k; i-- > 0;)
        doc[len++] = i % 2 ? ']' : '}';
    len += (size_t)sprintf(doc + len, ",\"nodes\":[],\"edges\":[],\"width\":1,\"height\":1}");
    assert_int_equal(graphio_read_buf(&d, doc, len, NULL, &e), 0);
    struct lcn_pt none[1];
    json_t *out = graphio_layout_json(&d, none, NULL);
    char *a = json_dumps(json_object_get(out, "junk"), JSON_COMPACT);
    char *b = json_dumps(json_object_get(d.root, "junk"), JSON_COMPACT);
    assert_string_equal(a, b);
    free(a);
    free(b);
    json_decref(out);
    graphio_release(&d);
    free(doc);
}

static void test_prefix_paths(void **state)
{
    char *s =
        J("{'graph':" G3(N3, "[{'source':0,'target':1},{'source':1,'target':99}]") ",'x':[]}");
    json_error_t je;
    json_t *req = json_loads(s, JSON_REJECT_DUPLICATES, &je);
    free(s);
    assert_non_null(req);
    struct graphio_doc d;
    struct graphio_error e;
    assert_int_equal(graphio_read_json(&d, json_object_get(req, "graph"), "graph", NULL, &e),
                     LCN_EINVAL);
    assert_string_equal(e.path, "graph.edges[1].target");
    assert_string_equal(e.msg, "unknown node 99");
    char buf[300];
    graphio_error_format(&e, buf, sizeof(buf));
    assert_string_equal(buf, "graph.edges[1].target: unknown node 99");
    /* the value itself has the prefix as its path */
    assert_int_equal(graphio_read_json(&d, json_object_get(req, "x"), "graph", NULL, &e),
                     LCN_EINVAL);
    assert_string_equal(e.path, "graph");
    assert_string_equal(e.msg, "expected an object, got array");
    /* an absent value (NULL) is a missing field */
    assert_int_equal(graphio_read_json(&d, NULL, "graph", NULL, &e), LCN_EINVAL);
    assert_string_equal(e.path, "graph");
    assert_string_equal(e.msg, "missing required field");
    json_decref(req);

    /* a successful read keeps its own reference */
    s = J("{'graph':" G3(N3, E2) "}");
    req = json_loads(s, 0, &je);
    free(s);
    assert_int_equal(graphio_read_json(&d, json_object_get(req, "graph"), "graph", NULL, &e), 0);
    json_decref(req);
    assert_int_equal(json_array_size(json_object_get(d.root, "nodes")), 3);
    graphio_release(&d);

    /* an error without a path formats as its message alone */
    struct graphio_error pe = {.err = LCN_EPARSE};
    snprintf(pe.msg, sizeof(pe.msg), "empty input");
    graphio_error_format(&pe, buf, sizeof(buf));
    assert_string_equal(buf, "empty input");
}

/* Compares two JSON values by their compact, order-preserving dumps. */
static void assert_json_same(const json_t *a, const json_t *b)
{
    char *x = json_dumps(a, JSON_COMPACT | JSON_ENCODE_ANY);
    char *y = json_dumps(b, JSON_COMPACT | JSON_ENCODE_ANY);
    assert_string_equal(x, y);
    free(x);
    free(y);
}

static void test_round_trip(void **state)
{
    const char *t = "{'width':50,'meta':{'by':'me','list':[1,2.5,null]},'lcn':{'K':99},"
                    "'nodes':[{'label':'c','id':2,'y':7,'x':9},{'id':0},"
                    "{'id':1,'x':4,'y':4,'extra':[true]}],"
                    "'edges':[{'target':0,'source':2,'id':'e0'},{'source':1,'target':2}],"
                    "'height':60,'points':[{'id':0,'x':1,'y':1}]}";
    struct graphio_doc d, d2;
    struct graphio_error e;
    assert_int_equal(read_str(&d, t, NULL, &e), 0);
    assert_int_equal(d.n_missing, 1);
    struct lcn_pt pts[3] = {{10, 11}, {20, 21}, {30, 31}};
    for (unsigned flags = 0; flags <= GRAPHIO_PRETTY; flags++) {
        json_t *lcn = json_pack("{s:i}", "K", 3);
        json_t *out = graphio_layout_json(&d, pts, json_incref(lcn));
        /* the input document is untouched */
        assert_int_equal(json_integer_value(json_object_get(
                             json_array_get(json_object_get(d.root, "nodes"), 0), "x")),
                         9);
        assert_null(json_object_get(json_array_get(json_object_get(d.root, "nodes"), 1), "x"));
        char *s = graphio_dumps(out, flags);
        json_decref(out);
        assert_int_equal(s[strlen(s) - 1], '\n');
        assert_int_equal(graphio_read_buf(&d2, s, strlen(s), NULL, &e), 0);
        free(s);
        /* same graph, same order, new coordinates */
        assert_int_equal(d2.g.n, 3);
        assert_int_equal(d2.g.m, 2);
        assert_int_equal(d2.n_missing, 0);
        for (int v = 0; v < 3; v++) {
            assert_int_equal(d2.node_pos[v], d.node_pos[v]);
            assert_int_equal(d2.pts[v].x, pts[v].x);
            assert_int_equal(d2.pts[v].y, pts[v].y);
        }
        for (int i = 0; i < 2; i++) {
            assert_int_equal(d2.g.eu[i], d.g.eu[i]);
            assert_int_equal(d2.g.ev[i], d.g.ev[i]);
        }
        /* every other field passes through, in order */
        const char *key;
        json_t *val;
        const char *order[] = {"width", "meta", "nodes", "edges", "height", "points", "lcn"};
        int i = 0;
        json_object_foreach(d2.root, key, val)
        {
            assert_true(i < 7);
            assert_string_equal(key, order[i++]);
        }
        assert_int_equal(i, 7);
        assert_json_same(json_object_get(d2.root, "meta"), json_object_get(d.root, "meta"));
        assert_json_same(json_object_get(d2.root, "edges"), json_object_get(d.root, "edges"));
        assert_json_same(json_object_get(d2.root, "points"), json_object_get(d.root, "points"));
        assert_json_same(json_object_get(d2.root, "lcn"), lcn);
        json_t *n0 = json_array_get(json_object_get(d2.root, "nodes"), 0);
        char *n0s = json_dumps(n0, JSON_COMPACT);
        assert_string_equal(n0s, "{\"label\":\"c\",\"id\":2,\"y\":31,\"x\":30}");
        free(n0s);
        n0s = json_dumps(json_array_get(json_object_get(d2.root, "nodes"), 1), JSON_COMPACT);
        assert_string_equal(n0s, "{\"id\":0,\"x\":10,\"y\":11}");
        free(n0s);
        graphio_release(&d2);
        json_decref(lcn);
    }
    /* without an lcn object, the input's stale one is dropped */
    json_t *out = graphio_layout_json(&d, pts, NULL);
    assert_null(json_object_get(out, "lcn"));
    json_decref(out);
    graphio_release(&d);
}

static void test_build_and_files(void **state)
{
    struct gen_params p = {.family = GEN_PLANTED, .n = 30, .seed = 5};
    struct lcn_graph g;
    struct lcn_pt *pts, *planted;
    char err[160];
    assert_int_equal(gen_instance(&p, &g, &pts, &planted, err, sizeof(err)), 0);
    json_t *doc = graphio_build(&g, pts);
    char dir[] = "/tmp/test_graphio.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof(path), "%s/g.json", dir);
    struct graphio_error e;
    for (unsigned flags = 0; flags <= GRAPHIO_PRETTY; flags++) {
        assert_int_equal(graphio_write_file(doc, path, flags, &e), 0);
        struct graphio_doc d;
        assert_int_equal(graphio_read_file(&d, path, NULL, &e), 0);
        assert_int_equal(d.g.n, g.n);
        assert_int_equal(d.g.m, g.m);
        assert_int_equal(d.g.width, g.width);
        assert_int_equal(d.g.height, g.height);
        assert_int_equal(graph_hash(&d.g), graph_hash(&g));
        assert_int_equal(layout_hash(d.pts, d.g.n), layout_hash(pts, g.n));
        graphio_release(&d);
    }
    json_decref(doc);
    /* without a layout: nodes carry only their id */
    doc = graphio_build(&g, NULL);
    struct graphio_doc d;
    char *s = graphio_dumps(doc, 0);
    assert_int_equal(graphio_read_buf(&d, s, strlen(s), NULL, &e), 0);
    assert_int_equal(d.n_missing, g.n);
    graphio_release(&d);
    free(s);
    json_decref(doc);
    unlink(path);
    rmdir(dir);

    assert_int_equal(graphio_read_file(&d, "/nonexistent/lcn.json", NULL, &e), LCN_EIO);
    assert_string_equal(e.msg, "cannot open '/nonexistent/lcn.json': No such file or directory");
    json_t *empty = json_object();
    assert_int_equal(graphio_write_file(empty, "/nonexistent/out.json", 0, &e), LCN_EIO);
    assert_int_equal(e.err, LCN_EIO);
    json_decref(empty);

    json_t *o = graphio_obj_json(&(struct lcn_obj){3, 2, 20, 4});
    json_t *want = json_pack("{s:i,s:i,s:i,s:i}", "K", 3, "nK", 2, "Phi", 20, "C", 4);
    assert_json_same(o, want);
    json_decref(o);
    json_decref(want);
    graph_release(&g);
    free(pts);
    free(planted);
}

/* Byte mutations of a valid document: any outcome but a crash or a silent
 * error without a message. */
static void test_mutation_sweep(void **state)
{
    char *base = J("{'nodes':[{'id':0,'x':1,'y':1},{'id':1,'x':2,'y':5},{'id':2}],"
                   "'edges':[{'source':0,'target':1},{'source':1,'target':2,'id':3}],"
                   "'width':10,'height':10,'extra':{'a':[1,2,{}]}}");
    size_t len = strlen(base);
    static const char alphabet[] = "{}[]:,\"0123456789-.eE \n\\tfnul'xyid";
    struct lcn_rng r;
    rng_init(&r, 42, 0, RNG_PURPOSE_GEN);
    char *buf = xmalloc(len + 8);
    int ok = 0, fails[4] = {0};
    for (int it = 0; it < 20000; it++) {
        memcpy(buf, base, len);
        size_t l = len;
        int edits = 1 + (int)rng_below(&r, 3);
        for (int k = 0; k < edits; k++) {
            size_t at = rng_below(&r, (uint32_t)l);
            switch (rng_below(&r, 3)) {
            case 0: /* replace */
                buf[at] = alphabet[rng_below(&r, sizeof(alphabet) - 1)];
                break;
            case 1: /* delete */
                memmove(buf + at, buf + at + 1, l - at - 1);
                l--;
                break;
            default: /* truncate */
                l = at + 1;
                break;
            }
        }
        struct graphio_doc d;
        struct graphio_error e;
        int rc = graphio_read_buf(&d, buf, l, NULL, &e);
        if (rc == 0) {
            ok++;
            assert_true(d.g.n >= 0 && d.g.n <= 3);
            graphio_release(&d);
            continue;
        }
        assert_true(rc == LCN_EPARSE || rc == LCN_EINVAL);
        assert_int_equal(e.err, rc);
        assert_true(e.msg[0] != 0);
        fails[rc == LCN_EPARSE ? 0 : 1]++;
    }
    /* the sweep reached both layers */
    assert_true(ok > 0);
    assert_true(fails[0] > 0);
    assert_true(fails[1] > 0);
    free(buf);
    free(base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_minimal),       cmocka_unit_test(test_valid_variants),
        cmocka_unit_test(test_missing_coordinates), cmocka_unit_test(test_malformed_json),
        cmocka_unit_test(test_empty_input),         cmocka_unit_test(test_nul_byte),
        cmocka_unit_test(test_truncated),           cmocka_unit_test(test_duplicate_keys),
        cmocka_unit_test(test_wrong_types),         cmocka_unit_test(test_missing_fields),
        cmocka_unit_test(test_out_of_range),        cmocka_unit_test(test_reals),
        cmocka_unit_test(test_unknown_nodes),       cmocka_unit_test(test_self_loop),
        cmocka_unit_test(test_duplicate_edges),     cmocka_unit_test(test_duplicate_node_ids),
        cmocka_unit_test(test_missing_ids),         cmocka_unit_test(test_limits),
        cmocka_unit_test(test_deep_nesting),        cmocka_unit_test(test_prefix_paths),
        cmocka_unit_test(test_round_trip),          cmocka_unit_test(test_build_and_files),
        cmocka_unit_test(test_mutation_sweep),      cmocka_unit_test(test_byte_order_mark),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
