#include "graphio.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "fileio.h"
#include "geom.h"
#include "sbuf.h"
#include "util.h"

/* Reader state: the path prefix and where the first error goes. */
struct rd {
    const char *prefix;
    struct graphio_error *err;
};

static void err_clear(struct graphio_error *e)
{
    memset(e, 0, sizeof(*e));
}

/*
 * Records an error at the path prefix + formatted suffix. A suffix that
 * starts with '[' attaches directly ("a[3]"), any other gets a dot after a
 * non-empty prefix ("graph.nodes").
 */
static int fail(struct rd *r, int code, const char *msg, const char *pathfmt, ...)
{
    struct graphio_error *e = r->err;
    char suffix[128];
    va_list ap;
    va_start(ap, pathfmt);
    vsnprintf(suffix, sizeof(suffix), pathfmt, ap);
    va_end(ap);
    const char *p = r->prefix ? r->prefix : "";
    const char *dot = (p[0] && suffix[0] && suffix[0] != '[') ? "." : "";
    e->err = code;
    e->line = e->column = 0;
    /* prefix and suffix are bounded so the path always fits (120 + 1 + 127 < 256) */
    snprintf(e->path, sizeof(e->path), "%.120s%s%s", p, dot, suffix);
    snprintf(e->msg, sizeof(e->msg), "%s", msg);
    return code;
}

const char *graphio_type_name(const json_t *v)
{
    if (!v)
        return "nothing";
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "object";
    case JSON_ARRAY:
        return "array";
    case JSON_STRING:
        return "string";
    case JSON_INTEGER:
        return "integer";
    case JSON_REAL:
        return "real";
    case JSON_TRUE:
    case JSON_FALSE:
        return "boolean";
    case JSON_NULL:
        return "null";
    }
    return "unknown";
}

static void type_msg(char *buf, size_t len, const char *want, const json_t *got)
{
    snprintf(buf, len, "expected %s, got %s", want, graphio_type_name(got));
}

/*
 * Checks that v is an integer in [lo, hi]. Reals are rejected even when
 * integral (12.0): jansson keeps them as doubles, so their text cannot be
 * checked exactly. Returns 0 or LCN_EINVAL with the error at path.
 */
static int get_int(struct rd *r, const json_t *v, int64_t lo, int64_t hi, int64_t *out,
                   const char *path)
{
    char msg[128];
    if (!json_is_integer(v)) {
        type_msg(msg, sizeof(msg), "an integer", v);
        return fail(r, LCN_EINVAL, msg, "%s", path);
    }
    int64_t x = (int64_t)json_integer_value(v);
    if (x < lo || x > hi) {
        snprintf(msg, sizeof(msg), "%lld outside [%lld, %lld]", (long long)x, (long long)lo,
                 (long long)hi);
        return fail(r, LCN_EINVAL, msg, "%s", path);
    }
    *out = x;
    return 0;
}

/* The member key of object obj, with "missing required field" when absent. */
static int require(struct rd *r, const json_t *obj, const char *key, json_t **out, const char *path)
{
    *out = json_object_get(obj, key);
    if (!*out)
        return fail(r, LCN_EINVAL, "missing required field", "%s", path);
    return 0;
}

static int32_t cap_limit(int32_t want, int32_t hard)
{
    return (want <= 0 || want > hard) ? hard : want;
}

/* Reads one node object: id, and the optional coordinate pair. */
static int read_node(struct rd *r, struct graphio_doc *d, const json_t *nd, int32_t i, int32_t n)
{
    char path[64], msg[128];
    snprintf(path, sizeof(path), "nodes[%d]", i);
    if (!json_is_object(nd)) {
        type_msg(msg, sizeof(msg), "an object", nd);
        return fail(r, LCN_EINVAL, msg, "%s", path);
    }
    json_t *v;
    int64_t id, xy[2];
    int rc;
    snprintf(path, sizeof(path), "nodes[%d].id", i);
    if ((rc = require(r, nd, "id", &v, path)) || (rc = get_int(r, v, 0, (int64_t)n - 1, &id, path)))
        return rc;
    if (d->node_pos[id] >= 0) {
        snprintf(msg, sizeof(msg), "duplicate id %lld (also nodes[%d])", (long long)id,
                 d->node_pos[id]);
        return fail(r, LCN_EINVAL, msg, "%s", path);
    }
    d->node_pos[id] = i;

    /* A coordinate is an integer or absent; null counts as absent. */
    static const char *const names[2] = {"x", "y"};
    int have[2];
    for (int k = 0; k < 2; k++) {
        v = json_object_get(nd, names[k]);
        have[k] = v && !json_is_null(v);
        if (!have[k])
            continue;
        snprintf(path, sizeof(path), "nodes[%d].%s", i, names[k]);
        if ((rc = get_int(r, v, -LCN_COORD_LIMIT, LCN_COORD_LIMIT, &xy[k], path)))
            return rc;
    }
    if (have[0] != have[1]) {
        int miss = have[0] ? 1 : 0;
        snprintf(msg, sizeof(msg), "missing while '%s' is given", names[1 - miss]);
        return fail(r, LCN_EINVAL, msg, "nodes[%d].%s", i, names[miss]);
    }
    if (have[0]) {
        d->pts[id].x = (int32_t)xy[0];
        d->pts[id].y = (int32_t)xy[1];
        d->has_xy[id] = 1;
    } else {
        d->n_missing++;
    }
    return 0;
}

/* Reads one edge object's endpoints (types only; graph_init checks values). */
static int read_edge(struct rd *r, const json_t *ed, int32_t i, int32_t *src, int32_t *dst)
{
    char path[64], msg[128];
    if (!json_is_object(ed)) {
        type_msg(msg, sizeof(msg), "an object", ed);
        return fail(r, LCN_EINVAL, msg, "edges[%d]", i);
    }
    static const char *const names[2] = {"source", "target"};
    int32_t *out[2] = {src, dst};
    for (int k = 0; k < 2; k++) {
        json_t *v;
        int64_t x;
        int rc;
        snprintf(path, sizeof(path), "edges[%d].%s", i, names[k]);
        if ((rc = require(r, ed, names[k], &v, path)))
            return rc;
        if (!json_is_integer(v)) {
            type_msg(msg, sizeof(msg), "an integer", v);
            return fail(r, LCN_EINVAL, msg, "%s", path);
        }
        x = (int64_t)json_integer_value(v);
        if (x < INT32_MIN || x > INT32_MAX) {
            /* no node has such an id; say so here, graph_init takes int32 */
            snprintf(msg, sizeof(msg), "unknown node %lld", (long long)x);
            return fail(r, LCN_EINVAL, msg, "%s", path);
        }
        *out[k] = (int32_t)x;
    }
    return 0;
}

/* Turns graph_init's first complaint into a field-path error. */
static int map_graph_error(struct rd *r, const struct lcn_graph_error *why, const int32_t *src,
                           const int32_t *dst, int32_t n)
{
    char msg[160];
    int32_t e = why->edge;
    if (e < 0)
        return fail(r, why->err ? why->err : LCN_EINVAL, why->msg, "%s", "");
    if (src[e] < 0 || src[e] >= n) {
        snprintf(msg, sizeof(msg), "unknown node %d", src[e]);
        return fail(r, LCN_EINVAL, msg, "edges[%d].source", e);
    }
    if (dst[e] < 0 || dst[e] >= n) {
        snprintf(msg, sizeof(msg), "unknown node %d", dst[e]);
        return fail(r, LCN_EINVAL, msg, "edges[%d].target", e);
    }
    if (src[e] == dst[e]) {
        snprintf(msg, sizeof(msg), "self-loop at node %d", src[e]);
        return fail(r, LCN_EINVAL, msg, "edges[%d]", e);
    }
    if (why->other >= 0) {
        snprintf(msg, sizeof(msg), "duplicate of edges[%d] (nodes %d and %d)", why->other,
                 LCN_MIN(src[e], dst[e]), LCN_MAX(src[e], dst[e]));
        return fail(r, LCN_EINVAL, msg, "edges[%d]", e);
    }
    return fail(r, LCN_EINVAL, why->msg, "edges[%d]", e);
}

int graphio_read_json(struct graphio_doc *d, json_t *graph, const char *prefix,
                      const struct graphio_limits *lim, struct graphio_error *err)
{
    struct graphio_error local;
    struct rd r = {prefix ? prefix : "", err ? err : &local};
    char msg[160];
    int rc;
    err_clear(r.err);
    memset(d, 0, sizeof(*d));

    if (!graph)
        return fail(&r, LCN_EINVAL, "missing required field", "%s", "");
    if (!json_is_object(graph)) {
        type_msg(msg, sizeof(msg), "an object", graph);
        return fail(&r, LCN_EINVAL, msg, "%s", "");
    }
    json_t *nodes, *edges, *jw, *jh;
    if ((rc = require(&r, graph, "nodes", &nodes, "nodes")))
        return rc;
    if (!json_is_array(nodes)) {
        type_msg(msg, sizeof(msg), "an array", nodes);
        return fail(&r, LCN_EINVAL, msg, "nodes");
    }
    if ((rc = require(&r, graph, "edges", &edges, "edges")))
        return rc;
    if (!json_is_array(edges)) {
        type_msg(msg, sizeof(msg), "an array", edges);
        return fail(&r, LCN_EINVAL, msg, "edges");
    }
    size_t nn = json_array_size(nodes), mm = json_array_size(edges);
    int32_t max_n = cap_limit(lim ? lim->max_nodes : 0, LCN_MAX_NODES);
    int32_t max_m = cap_limit(lim ? lim->max_edges : 0, LCN_MAX_EDGES);
    if (nn > (size_t)max_n) {
        snprintf(msg, sizeof(msg), "%zu nodes exceed the limit of %d", nn, max_n);
        return fail(&r, LCN_ETOOBIG, msg, "nodes");
    }
    if (mm > (size_t)max_m) {
        snprintf(msg, sizeof(msg), "%zu edges exceed the limit of %d", mm, max_m);
        return fail(&r, LCN_ETOOBIG, msg, "edges");
    }
    int64_t width, height;
    if ((rc = require(&r, graph, "width", &jw, "width")) ||
        (rc = get_int(&r, jw, 0, LCN_COORD_LIMIT, &width, "width")))
        return rc;
    if ((rc = require(&r, graph, "height", &jh, "height")) ||
        (rc = get_int(&r, jh, 0, LCN_COORD_LIMIT, &height, "height")))
        return rc;

    int32_t n = (int32_t)nn, m = (int32_t)mm;
    d->pts = xcalloc((size_t)n + 1, sizeof(*d->pts));
    d->has_xy = xcalloc((size_t)n + 1, 1);
    d->node_pos = xmalloc(sizeof(int32_t) * ((size_t)n + 1));
    for (int32_t v = 0; v < n; v++)
        d->node_pos[v] = -1;
    for (int32_t i = 0; i < n; i++) {
        if ((rc = read_node(&r, d, json_array_get(nodes, (size_t)i), i, n)))
            goto out;
    }
    /* n distinct ids in [0, n-1] cover every id: none can be missing. */

    int32_t *src = xmalloc(sizeof(int32_t) * ((size_t)m + 1));
    int32_t *dst = xmalloc(sizeof(int32_t) * ((size_t)m + 1));
    for (int32_t i = 0; i < m && rc == 0; i++)
        rc = read_edge(&r, json_array_get(edges, (size_t)i), i, &src[i], &dst[i]);
    if (rc == 0) {
        struct lcn_graph_error why;
        rc = graph_init(&d->g, n, m, src, dst, (int32_t)width, (int32_t)height, &why);
        if (rc)
            rc = map_graph_error(&r, &why, src, dst, n);
    }
    free(src);
    free(dst);
    if (rc)
        goto out;
    d->root = json_incref(graph);
    return 0;
out:
    free(d->pts);
    free(d->has_xy);
    free(d->node_pos);
    memset(d, 0, sizeof(*d));
    return rc;
}

int graphio_find_nul(const char *buf, size_t len, int *line, int *column)
{
    /* jansson treats a NUL byte as the end of the text; the length is the
     * contract, so a NUL anywhere is an error */
    const char *nul = memchr(buf, 0, len);
    if (!nul)
        return 0;
    *line = 1;
    *column = 1;
    for (const char *p = buf; p < nul; p++) {
        if (*p == '\n') {
            ++*line;
            *column = 1;
        } else {
            ++*column;
        }
    }
    return 1;
}

size_t graphio_bom(const char *buf, size_t len)
{
    return len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
}

int graphio_read_buf(struct graphio_doc *d, const char *buf, size_t len,
                     const struct graphio_limits *lim, struct graphio_error *err)
{
    struct graphio_error local;
    struct graphio_error *e = err ? err : &local;
    err_clear(e);
    memset(d, 0, sizeof(*d));
    size_t bom = graphio_bom(buf, len);
    buf += bom;
    len -= bom;
    if (len == 0) {
        e->err = LCN_EPARSE;
        e->line = 1;
        e->column = 0;
        snprintf(e->msg, sizeof(e->msg), "empty input");
        return LCN_EPARSE;
    }
    int line, col;
    if (graphio_find_nul(buf, len, &line, &col)) {
        e->err = LCN_EPARSE;
        e->line = line;
        e->column = col;
        snprintf(e->msg, sizeof(e->msg), "line %d column %d: NUL byte in input", line, col);
        return LCN_EPARSE;
    }
    json_error_t je;
    json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        e->err = LCN_EPARSE;
        e->line = je.line;
        e->column = je.column;
        snprintf(e->msg, sizeof(e->msg), "line %d column %d: %s", je.line, je.column, je.text);
        return LCN_EPARSE;
    }
    int rc = graphio_read_json(d, root, NULL, lim, e);
    json_decref(root); /* on success d holds its own reference */
    return rc;
}

int graphio_read_file(struct graphio_doc *d, const char *path, const struct graphio_limits *lim,
                      struct graphio_error *err)
{
    struct graphio_error local;
    struct graphio_error *e = err ? err : &local;
    err_clear(e);
    memset(d, 0, sizeof(*d));
    int is_stdin = strcmp(path, "-") == 0;
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    if (!f) {
        e->err = LCN_EIO;
        snprintf(e->msg, sizeof(e->msg), "cannot open '%s': %s", path, strerror(errno));
        return LCN_EIO;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = xmalloc(cap);
    for (;;) {
        if (len == cap)
            xgrow((void **)&buf, 1, &cap, len + 1);
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    int bad = ferror(f);
    int saved = errno;
    if (!is_stdin)
        fclose(f);
    if (bad) {
        free(buf);
        e->err = LCN_EIO;
        snprintf(e->msg, sizeof(e->msg), "cannot read '%s': %s", path, strerror(saved));
        return LCN_EIO;
    }
    int rc = graphio_read_buf(d, buf, len, lim, e);
    free(buf);
    return rc;
}

void graphio_release(struct graphio_doc *d)
{
    graph_release(&d->g);
    free(d->pts);
    free(d->has_xy);
    free(d->node_pos);
    if (d->root)
        json_decref(d->root);
    memset(d, 0, sizeof(*d));
}

json_t *graphio_layout_json(const struct graphio_doc *d, const struct lcn_pt *pts, json_t *lcn)
{
    LCN_ASSERT(d->root);
    json_t *out = json_copy(d->root); /* shallow: members are shared, not copied */
    LCN_ASSERT(out);
    json_object_del(out, "lcn");
    json_t *in_nodes = json_object_get(d->root, "nodes");
    json_t *nodes = json_array();
    for (int32_t v = 0; v < d->g.n; v++)
        json_array_append_new(nodes, json_null());
    /* node_pos maps id -> position, so the copy keeps the document's order */
    for (int32_t v = 0; v < d->g.n; v++) {
        size_t pos = (size_t)d->node_pos[v];
        json_t *nd = json_copy(json_array_get(in_nodes, pos));
        LCN_ASSERT(nd);
        json_object_set_new(nd, "x", json_integer(pts[v].x));
        json_object_set_new(nd, "y", json_integer(pts[v].y));
        json_array_set_new(nodes, pos, nd);
    }
    json_object_set_new(out, "nodes", nodes);
    if (lcn)
        json_object_set_new(out, "lcn", lcn);
    return out;
}

json_t *graphio_build(const struct lcn_graph *g, const struct lcn_pt *pts)
{
    json_t *nodes = json_array(), *edges = json_array();
    for (int32_t v = 0; v < g->n; v++) {
        json_t *nd = pts ? json_pack("{s:i, s:i, s:i}", "id", (json_int_t)v, "x",
                                     (json_int_t)pts[v].x, "y", (json_int_t)pts[v].y)
                         : json_pack("{s:i}", "id", (json_int_t)v);
        LCN_ASSERT(nd);
        json_array_append_new(nodes, nd);
    }
    for (int32_t e = 0; e < g->m; e++) {
        json_t *ed =
            json_pack("{s:i, s:i}", "source", (json_int_t)g->eu[e], "target", (json_int_t)g->ev[e]);
        LCN_ASSERT(ed);
        json_array_append_new(edges, ed);
    }
    json_t *doc = json_pack("{s:o, s:o, s:i, s:i}", "nodes", nodes, "edges", edges, "width",
                            (json_int_t)g->width, "height", (json_int_t)g->height);
    LCN_ASSERT(doc);
    return doc;
}

json_t *graphio_obj_json(const struct lcn_obj *o)
{
    json_t *j = json_pack("{s:i, s:i, s:I, s:I}", "K", (json_int_t)o->K, "nK", (json_int_t)o->nK,
                          "Phi", (json_int_t)o->Phi, "C", (json_int_t)o->C);
    LCN_ASSERT(j);
    return j;
}

static void add_json(struct sbuf *b, const json_t *v)
{
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    LCN_ASSERT(s);
    sbuf_puts(b, s);
    free(s);
}

char *graphio_dumps(const json_t *doc, unsigned flags)
{
    struct sbuf b = {0};
    if (!(flags & GRAPHIO_PRETTY) || !json_is_object(doc)) {
        add_json(&b, doc);
        sbuf_puts(&b, "\n");
        return b.p;
    }
    /* Top-level members on their own lines; arrays with one element a line. */
    const char *key;
    json_t *val;
    int first = 1;
    sbuf_puts(&b, "{");
    json_object_foreach((json_t *)doc, key, val)
    {
        json_t *k = json_string(key);
        sbuf_puts(&b, first ? "\n" : ",\n");
        first = 0;
        add_json(&b, k);
        json_decref(k);
        sbuf_puts(&b, ": ");
        if (json_is_array(val) && json_array_size(val) > 0) {
            sbuf_puts(&b, "[\n");
            for (size_t i = 0; i < json_array_size(val); i++) {
                sbuf_puts(&b, i ? ",\n  " : "  ");
                add_json(&b, json_array_get(val, i));
            }
            sbuf_puts(&b, "\n]");
        } else {
            add_json(&b, val);
        }
    }
    sbuf_puts(&b, first ? "}\n" : "\n}\n");
    return b.p;
}

static int io_fail(struct graphio_error *e, const char *what, const char *path, int saved)
{
    e->err = LCN_EIO;
    snprintf(e->msg, sizeof(e->msg), "cannot %s '%s': %s", what, path, strerror(saved));
    return LCN_EIO;
}

int graphio_write_file(const json_t *doc, const char *path, unsigned flags,
                       struct graphio_error *err)
{
    struct graphio_error local;
    struct graphio_error *e = err ? err : &local;
    err_clear(e);
    char *s = graphio_dumps(doc, flags);
    size_t len = strlen(s);
    if (strcmp(path, "-") == 0) {
        int bad = fwrite(s, 1, len, stdout) != len || fflush(stdout) != 0;
        int saved = errno;
        free(s);
        return bad ? io_fail(e, "write", "-", saved) : 0;
    }
    int rc = lcn_write_atomic(path, s, len, e->msg, sizeof(e->msg));
    e->err = rc;
    free(s);
    return rc;
}

void graphio_error_format(const struct graphio_error *e, char *buf, size_t len)
{
    if (e->path[0])
        snprintf(buf, len, "%s: %s", e->path, e->msg);
    else
        snprintf(buf, len, "%s", e->msg);
}

const char *graphio_api_code(int err)
{
    switch (err) {
    case LCN_EPARSE:
        return "bad_json";
    case LCN_EINVAL:
        return "invalid_field";
    case LCN_ETOOBIG:
        return "limit_exceeded";
    }
    return lcn_errcode(err);
}

json_t *graphio_text_json(const char *s)
{
    json_t *j = json_string(s);
    if (j)
        return j;
    char *t = xstrdup(s);
    for (unsigned char *p = (unsigned char *)t; *p; p++)
        if (*p >= 0x80)
            *p = '?';
    j = json_string(t);
    free(t);
    return j;
}
