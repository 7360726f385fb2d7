#define _DEFAULT_SOURCE /* timegm */
#include "job.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "err.h"
#include "util.h"

static const char *const state_names[JOB_STATE_COUNT] = {
    "queued", "running", "succeeded", "failed", "cancelled", "interrupted",
};

const char *job_state_name(enum job_state state)
{
    return state >= 0 && state < JOB_STATE_COUNT ? state_names[state] : "unknown";
}

int job_state_parse(const char *name, enum job_state *state)
{
    for (int i = 0; i < JOB_STATE_COUNT; i++)
        if (name && !strcmp(name, state_names[i])) {
            *state = (enum job_state)i;
            return 0;
        }
    return LCN_EINVAL;
}

int job_state_terminal(enum job_state state)
{
    return state == JOB_SUCCEEDED || state == JOB_FAILED || state == JOB_CANCELLED ||
           state == JOB_INTERRUPTED;
}

void job_id_format(int64_t id, char *buf, size_t len)
{
    snprintf(buf, len, "j%016lld", (long long)id);
}

int job_id_parse(const char *s, int64_t *id)
{
    if (!s || s[0] != 'j' || strlen(s) != 17)
        return LCN_EINVAL;
    int64_t v = 0;
    for (int i = 1; i < 17; i++) {
        if (s[i] < '0' || s[i] > '9')
            return LCN_EINVAL;
        v = v * 10 + (s[i] - '0');
    }
    *id = v;
    return 0;
}

void job_iso_time(int64_t wall_ms, char *buf, size_t len)
{
    time_t t = (time_t)(wall_ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    char base[32];
    strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, len, "%s.%03dZ", base, (int)(wall_ms % 1000));
}

/* ------------------------------------------------------------ requests */

static int fail(struct job_error *e, int status, const char *code, const char *field,
                const char *fm, ...)
{
    e->status = status;
    snprintf(e->code, sizeof e->code, "%s", code);
    snprintf(e->field, sizeof e->field, "%s", field ? field : "");
    va_list ap;
    va_start(ap, fm);
    vsnprintf(e->msg, sizeof e->msg, fm, ap);
    va_end(ap);
    if (!strcmp(code, "bad_json"))
        return LCN_EPARSE;
    if (!strcmp(code, "limit_exceeded"))
        return LCN_ETOOBIG;
    return LCN_EINVAL;
}

static const char *type_name(const json_t *v)
{
    return graphio_type_name(v);
}

/* Reads an integer member in [lo, hi]. */
static int get_int(struct job_error *e, const json_t *v, const char *field, int64_t lo, int64_t hi,
                   int64_t *out)
{
    if (!json_is_integer(v))
        return fail(e, 400, "invalid_field", field, "expected an integer, got %s", type_name(v));
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi)
        return fail(e, 400, "invalid_field", field, "%lld is outside [%lld, %lld]", (long long)x,
                    (long long)lo, (long long)hi);
    *out = x;
    return 0;
}

/* Reads a count in [0, max]: negative is a bad field (400), above max an
 * engine limit (422 limit_exceeded). */
static int get_count(struct job_error *e, const json_t *v, const char *field, int32_t max,
                     int32_t *out)
{
    int64_t x = 0;
    int rc = get_int(e, v, field, 0, INT64_MAX, &x);
    if (rc)
        return rc;
    if (x > max)
        return fail(e, 422, "limit_exceeded", field, "%lld exceeds the engine limit of %d",
                    (long long)x, max);
    *out = (int32_t)x;
    return 0;
}

/* Reads a string member of at most max bytes without a NUL character into
 * a copy the request owns. */
static int get_text(struct job_error *e, const json_t *v, const char *field, int max, char **out)
{
    if (!json_is_string(v))
        return fail(e, 400, "invalid_field", field, "expected a string, got %s", type_name(v));
    if (json_string_length(v) > (size_t)max ||
        strlen(json_string_value(v)) != json_string_length(v))
        return fail(e, 400, "invalid_field", field, "longer than %d bytes or holds a NUL character",
                    max);
    *out = xstrdup(json_string_value(v));
    return 0;
}

/* Reads a positive, finite number of seconds up to max (above it: 422). */
static int get_budget(struct job_error *e, const json_t *v, const char *field, double max,
                      double *out)
{
    if (!json_is_number(v))
        return fail(e, 400, "invalid_field", field, "expected a number, got %s", type_name(v));
    double b = json_number_value(v);
    if (!(b > 0) || !isfinite(b))
        return fail(e, 400, "invalid_field", field, "%g is not a positive number of seconds", b);
    if (b > max)
        return fail(e, 422, "limit_exceeded", field, "%g s exceeds the limit of %g s", b, max);
    *out = b;
    return 0;
}

static int get_bool(struct job_error *e, const json_t *v, const char *field, int *out)
{
    if (!json_is_boolean(v))
        return fail(e, 400, "invalid_field", field, "expected a boolean, got %s", type_name(v));
    *out = json_is_true(v);
    return 0;
}

/* Points *out at the string v holds (owned by v), or fails at field. */
static int get_string(struct job_error *e, const json_t *v, const char *field, const char **out)
{
    if (!(*out = json_string_value(v)))
        return fail(e, 400, "invalid_field", field, "expected a string, got %s", type_name(v));
    return 0;
}

static int get_backend(struct job_error *e, const json_t *v, const char *field,
                       enum lcn_backend *out)
{
    const char *b;
    int rc = get_string(e, v, field, &b);
    if (!rc && lcn_backend_parse(b, out))
        rc = fail(e, 400, "invalid_field", field, "'%.64s' is not auto, gpu or cpu", b);
    return rc;
}

static int get_job_id(struct job_error *e, const json_t *v, const char *field, int64_t *out)
{
    const char *s;
    int rc = get_string(e, v, field, &s);
    if (!rc && job_id_parse(s, out))
        rc = fail(e, 400, "invalid_field", field, "'%.40s' is not a job id (j and 16 digits)", s);
    return rc;
}

static int parse_solver(struct job_request *req, const json_t *s, struct job_error *e)
{
    if (!json_is_object(s))
        return fail(e, 400, "invalid_field", "solver", "expected an object, got %s", type_name(s));
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)s, key, v)
    {
        char field[160];
        snprintf(field, sizeof field, "solver.%.120s", key);
        int rc;
        if (!strcmp(key, "threads"))
            rc = get_count(e, v, field, LCN_MAX_THREADS, &req->threads);
        else if (!strcmp(key, "replicas"))
            rc = get_count(e, v, field, LCN_MAX_REPLICAS, &req->replicas);
        else if (!strcmp(key, "proposal_workers"))
            rc = get_count(e, v, field, LCN_MAX_PROPOSAL_WORKERS, &req->proposal_workers);
        else if (!strcmp(key, "gpus"))
            rc = json_is_string(v) && !strcmp(json_string_value(v), "all")
                     ? (req->gpus = JOB_GPUS_ALL, 0)
                     : get_count(e, v, field, ENGINE_MAX_DEVICES, &req->gpus);
        else if (!strcmp(key, "tuning"))
            rc = get_text(e, v, field, JOB_TUNING_MAX, &req->tuning);
        else
            rc = fail(e, 400, "invalid_field", field, "unknown field");
        if (rc)
            return rc;
    }
    return 0;
}

/* One top-level member of a request. The graph is only remembered in
 * *graph: it is read last, after every other member was accepted. */
static int parse_member(struct job_request *req, const char *key, json_t *v,
                        const struct job_limits *lim, json_t **graph, struct job_error *e)
{
    char field[160];
    snprintf(field, sizeof field, "%.120s", key);
    int64_t x;
    int rc;
    if (!strcmp(key, "graph")) {
        *graph = v;
        return 0;
    }
    if (!strcmp(key, "budget_s"))
        return get_budget(e, v, field, lim->max_budget_s, &req->budget_s);
    if (!strcmp(key, "seed")) {
        if ((rc = get_int(e, v, field, 0, JOB_SEED_MAX, &x)))
            return rc;
        req->seed = (uint64_t)x;
        return 0;
    }
    if (!strcmp(key, "target_k")) {
        if (json_is_null(v))
            return 0;
        if ((rc = get_int(e, v, field, 0, INT32_MAX, &x)))
            return rc;
        req->target_k = (int32_t)x;
        return 0;
    }
    if (!strcmp(key, "stop_at_target"))
        return get_bool(e, v, field, &req->stop_at_target);
    if (!strcmp(key, "backend"))
        return get_backend(e, v, field, &req->backend);
    if (!strcmp(key, "solver"))
        return parse_solver(req, v, e);
    if (!strcmp(key, "name"))
        return json_is_null(v) ? 0 : get_text(e, v, field, JOB_NAME_MAX, &req->name);
    if (!strcmp(key, "init_from"))
        return json_is_null(v) ? 0 : get_job_id(e, v, field, &req->init_from);
    return fail(e, 400, "invalid_field", field, "unknown field");
}

/* The members of the request object, then the rule that spans two of them,
 * then the graph under the admission limits. */
static int parse_root(struct job_request *req, json_t *root, const struct job_limits *lim,
                      struct job_error *e)
{
    if (!json_is_object(root))
        return fail(e, 400, "invalid_field", NULL, "the request must be an object, got %s",
                    type_name(root));
    json_t *graph = NULL;
    const char *key;
    json_t *v;
    int rc;
    json_object_foreach(root, key, v)
    {
        if ((rc = parse_member(req, key, v, lim, &graph, e)))
            return rc;
    }
    if (!graph)
        return fail(e, 400, "invalid_field", "graph", "missing");
    if (req->stop_at_target && req->target_k < 0)
        return fail(e, 400, "invalid_field", "stop_at_target", "true without a target_k");
    struct graphio_limits gl = {lim->max_nodes, lim->max_edges};
    struct graphio_error ge;
    rc = graphio_read_json(&req->doc, graph, "graph", &gl, &ge);
    if (rc)
        return fail(e, rc == LCN_ETOOBIG ? 422 : 400, graphio_api_code(rc), ge.path, "%s", ge.msg);
    const struct lcn_graph *g = &req->doc.g;
    if ((int64_t)(g->width + 1) * (g->height + 1) < g->n)
        /* the nodes need distinct grid points (V2): no job could succeed */
        return fail(e, 400, "invalid_field", "graph.width",
                    "bounds %d x %d hold %lld grid points, fewer than the %d nodes", g->width,
                    g->height, (long long)(g->width + 1) * (g->height + 1), g->n);
    return 0;
}

/* ------------------------------------------------------------ bare graphs */

const char *const job_query_names[JOB_QUERY_COUNT] = {
    "budget_s", "seed", "target_k", "stop_at_target", "backend", "name",
};

static const char wrap_hint[] =
    "wrap the graph as {\"graph\": GRAPH, \"budget_s\": ...}, or send the bare graph with the "
    "other fields as query arguments (POST /jobs?budget_s=60&seed=1)";

static int is_bare_graph(const json_t *root)
{
    return json_is_object(root) && !json_object_get(root, "graph") &&
           (json_object_get(root, "nodes") || json_object_get(root, "edges"));
}

/* A query argument as the JSON value of its field (a new reference), or
 * NULL after failing with the argument's name as field. */
static json_t *query_value(struct job_error *e, const char *name, const char *v)
{
    /* numbers as JSON writes them: strtod and strtoll also take blanks
     * before, '+', hexadecimal, ".5", and (strtoll) clamp what does not fit */
    if (!strcmp(name, "budget_s")) {
        double d = strtod(v, NULL);
        if (lcn_number_syntax(v, 0) && isfinite(d))
            return json_real(d);
        fail(e, 400, "invalid_field", name, "query argument '%.40s' is not a number", v);
        return NULL;
    }
    if (!strcmp(name, "seed") || !strcmp(name, "target_k")) {
        errno = 0;
        long long x = strtoll(v, NULL, 10);
        if (lcn_number_syntax(v, 1) && errno != ERANGE)
            return json_integer(x);
        fail(e, 400, "invalid_field", name, "query argument '%.40s' is not an integer", v);
        return NULL;
    }
    if (!strcmp(name, "stop_at_target")) {
        if (!strcmp(v, "true") || !strcmp(v, "false"))
            return json_boolean(!strcmp(v, "true"));
        fail(e, 400, "invalid_field", name, "query argument '%.40s' is not true or false", v);
        return NULL;
    }
    json_t *s = json_string(v);
    if (!s)
        fail(e, 400, "invalid_field", name, "query argument is not UTF-8");
    return s;
}

/* The query arguments as an object of fields, or NULL after failing. */
static json_t *query_fields(struct job_error *e, const char *const *query)
{
    json_t *o = json_object();
    for (int i = 0; query && i < JOB_QUERY_COUNT; i++) {
        if (!query[i])
            continue;
        json_t *v = query_value(e, job_query_names[i], query[i]);
        if (!v) {
            json_decref(o);
            return NULL;
        }
        json_object_set_new(o, job_query_names[i], v);
    }
    return o;
}

/* {"graph": BODY, fields...} as text: the body's own bytes, so the stored
 * request reads back to the graph exactly as sent. */
static char *wrap_text(const char *body, size_t len, const json_t *fields, size_t *out_len)
{
    char *f = json_dumps(fields, JSON_COMPACT | JSON_REAL_PRECISION(17));
    size_t flen = strlen(f); /* "{...}" */
    size_t cap = len + flen + 16, n = 0;
    char *t = xmalloc(cap);
    n += (size_t)snprintf(t, cap, "{\"graph\":");
    memcpy(t + n, body, len);
    n += len;
    if (flen > 2) {
        t[n++] = ',';
        memcpy(t + n, f + 1, flen - 2);
        n += flen - 2;
    }
    t[n++] = '}';
    t[n] = '\0';
    free(f);
    *out_len = n;
    return t;
}

#ifndef JSON_PARSER_MAX_DEPTH
#define JSON_PARSER_MAX_DEPTH 2048 /* jansson_config.h since 2.14 */
#endif

/* The deepest nesting of arrays and objects in JSON text that parsed. */
static int text_depth(const char *s, size_t len)
{
    int d = 0, max = 0, in_str = 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = 0;
        } else if (c == '"') {
            in_str = 1;
        } else if (c == '[' || c == '{') {
            max = LCN_MAX(max, ++d);
        } else if (c == ']' || c == '}') {
            d--;
        }
    }
    return max;
}

/* A bare graph body: parses {"graph": root, query fields...}. */
static int parse_bare(struct job_request *req, json_t *root, const char *body, size_t len,
                      const char *const *query, const struct job_limits *lim, struct job_error *e,
                      char **wrapped, size_t *wrapped_len)
{
    /* stored one level deeper, it must still parse (recovery, solutions) */
    if (text_depth(body, len) >= JSON_PARSER_MAX_DEPTH)
        return fail(e, 400, "bad_json", NULL,
                    "a bare graph may nest %d levels deep, since it is stored as {\"graph\": "
                    "GRAPH}",
                    JSON_PARSER_MAX_DEPTH - 1);
    json_t *fields = query_fields(e, query);
    if (!fields)
        return LCN_EINVAL;
    json_t *full = json_pack("{s:O}", "graph", root);
    json_object_update(full, fields);
    int rc = parse_root(req, full, lim, e);
    json_decref(full);
    if (!rc && wrapped)
        *wrapped = wrap_text(body, len, fields, wrapped_len);
    json_decref(fields);
    return rc;
}

/* The first query argument given, or NULL. */
static const char *first_query(const char *const *query)
{
    for (int i = 0; query && i < JOB_QUERY_COUNT; i++)
        if (query[i])
            return job_query_names[i];
    return NULL;
}

/* A request that is not one at its top level gets the hint. */
static void add_hint(struct job_error *e)
{
    int top = !strchr(e->field, '.') && !strchr(e->field, '[');
    if (strcmp(e->code, "invalid_field") || !top ||
        !(!strcmp(e->msg, "unknown field") || !strcmp(e->field, "graph") || !e->field[0]))
        return;
    size_t n = strlen(e->msg);
    snprintf(e->msg + n, sizeof e->msg - n, ": %s", wrap_hint);
}

int job_request_parse_post(struct job_request *req, const char *body, size_t len,
                           const char *const *query, const struct job_limits *lim,
                           struct job_error *err, char **wrapped, size_t *wrapped_len)
{
    struct job_error local;
    struct job_error *e = err ? err : &local;
    memset(req, 0, sizeof *req);
    memset(e, 0, sizeof *e);
    if (wrapped)
        *wrapped = NULL;
    req->target_k = -1;
    req->seed = 1;
    req->budget_s = lim->default_budget_s;
    req->backend = LCN_BACKEND_AUTO;
    req->init_from = -1;

    size_t bom = graphio_bom(body, len);
    body += bom;
    len -= bom;
    /* jansson would stop at a NUL and report the text cut there */
    int line, col;
    if (graphio_find_nul(body, len, &line, &col))
        return fail(e, 400, "bad_json", NULL, "line %d column %d: NUL byte in input", line, col);
    json_error_t je;
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return fail(e, 400, "bad_json", NULL, "line %d column %d: %s", je.line, je.column, je.text);
    int rc;
    const char *q = first_query(query);
    if (is_bare_graph(root)) {
        rc = parse_bare(req, root, body, len, query, lim, e, wrapped, wrapped_len);
    } else if (q) {
        rc = fail(e, 400, "invalid_field", q,
                  "query arguments stand for fields of a bare graph body only: this body is a "
                  "request, so give %s in it",
                  q);
    } else {
        rc = parse_root(req, root, lim, e);
        if (rc)
            add_hint(e);
    }
    json_decref(root);
    if (rc) {
        job_request_release(req);
        memset(req, 0, sizeof *req);
    } else {
        req->refs = 1;
    }
    return rc;
}

int job_request_parse(struct job_request *req, const char *body, size_t len,
                      const struct job_limits *lim, struct job_error *err)
{
    return job_request_parse_post(req, body, len, NULL, lim, err, NULL, NULL);
}

void job_request_release(struct job_request *req)
{
    graphio_release(&req->doc);
    free(req->tuning);
    free(req->name);
    req->tuning = req->name = NULL;
}

int job_request_warm(struct job_request *req, char **body, size_t *len, const struct lcn_graph *src,
                     const struct lcn_pt *pts, const struct job_limits *lim, struct job_error *err)
{
    char id[24], other[48], why[200];
    job_id_format(req->init_from, id, sizeof id);
    snprintf(other, sizeof other, "job %s's graph", id);
    if (!graph_same(&req->doc.g, src, other, why, sizeof why))
        return fail(err, 422, "init_from_unusable", "init_from", "not the graph of job %s: %s", id,
                    why);
    const size_t bom = graphio_bom(*body, *len); /* job_request_parse_post skipped it too */
    json_t *root = json_loadb(*body + bom, *len - bom, JSON_REJECT_DUPLICATES, NULL);
    if (!root) /* it parsed a moment ago */
        return fail(err, 500, "internal", NULL, "the request no longer parses");
    json_object_set_new(root, "graph", graphio_layout_json(&req->doc, pts, NULL));
    json_object_del(root, "init_from");
    char *text = graphio_dumps(root, 0);
    json_decref(root);
    struct job_request warm;
    if (job_request_parse(&warm, text, strlen(text), lim, err)) {
        free(text);
        return LCN_EINVAL;
    }
    job_request_release(req);
    *req = warm;
    free(*body);
    *body = text;
    *len = strlen(text);
    return 0;
}

/* ------------------------------------------------------------ status */

void job_status_from_request(struct job_status *s, int64_t id, int64_t created_ms,
                             const struct job_request *req)
{
    memset(s, 0, sizeof *s);
    s->id = id;
    if (req->name)
        snprintf(s->name, sizeof s->name, "%s", req->name);
    s->state = JOB_QUEUED;
    s->created_ms = created_ms;
    s->budget_s = req->budget_s;
    s->seed = req->seed;
    s->target_k = req->target_k;
    s->stop_at_target = req->stop_at_target;
    s->backend_requested = req->backend;
    s->n = req->doc.g.n;
    s->m = req->doc.g.m;
    s->width = req->doc.g.width;
    s->height = req->doc.g.height;
    s->time_to_target_s = -1;
    s->start_latency_s = -1;
}

static json_t *time_or_null(int64_t ms)
{
    if (!ms)
        return json_null();
    char buf[40];
    job_iso_time(ms, buf, sizeof buf);
    return json_string(buf);
}

static json_t *str_or_null(const char *s)
{
    return *s ? json_string(s) : json_null();
}

/* Seconds rounded to microseconds, so the JSON stays short and stable. */
static json_t *secs(double v)
{
    return json_real(round(v * 1e6) / 1e6);
}

static json_t *obj_json(const struct lcn_obj *o)
{
    return json_pack("{s:I, s:I, s:I, s:I}", "K", (json_int_t)o->K, "nK", (json_int_t)o->nK, "Phi",
                     (json_int_t)o->Phi, "C", (json_int_t)o->C);
}

/* The counters of struct engine_telemetry in the order the API lists them
 * (docs/API.md, "telemetry"). */
#define TEL(f) {.name = #f, .off = offsetof(struct engine_telemetry, f)},
static const struct {
    const char *name;
    size_t off;
} tel_counters[] = {ENGINE_TEL_COUNTERS(TEL)};
#undef TEL

static uint64_t tel_get(const struct engine_telemetry *t, size_t i)
{
    return *(const uint64_t *)((const char *)t + tel_counters[i].off);
}

static void tel_set(struct engine_telemetry *t, size_t i, uint64_t v)
{
    *(uint64_t *)((char *)t + tel_counters[i].off) = v;
}

void job_telemetry_counters_json(json_t *o, const struct engine_telemetry *t)
{
    for (size_t i = 0; i < LCN_ARRAY_LEN(tel_counters); i++)
        json_object_set_new(o, tel_counters[i].name, json_integer((json_int_t)tel_get(t, i)));
}

json_t *job_devices_json(const struct engine_telemetry *t)
{
    json_t *a = json_array();
    for (int32_t i = 0; i < t->n_devices && i < ENGINE_MAX_DEVICES; i++) {
        const struct engine_device_stats *d = &t->devices[i];
        json_array_append_new(a, json_pack("{s:i, s:I, s:I, s:I}", "device", (int)d->device,
                                           "evaluated", (json_int_t)d->evaluated, "accepted",
                                           (json_int_t)d->accepted, "imports",
                                           (json_int_t)d->imports));
    }
    return a;
}

static int devices_parse(struct engine_telemetry *t, const json_t *a)
{
    if (!json_is_array(a) || json_array_size(a) > ENGINE_MAX_DEVICES)
        return LCN_EPARSE;
    for (size_t i = 0; i < json_array_size(a); i++) {
        const json_t *d = json_array_get(a, i);
        const json_t *dev = json_object_get(d, "device"), *ev = json_object_get(d, "evaluated"),
                     *ac = json_object_get(d, "accepted"), *im = json_object_get(d, "imports");
        if (!json_is_integer(dev) || !json_is_integer(ev) || !json_is_integer(ac) ||
            !json_is_integer(im))
            return LCN_EPARSE;
        t->devices[i].device = (int32_t)json_integer_value(dev);
        t->devices[i].evaluated = (uint64_t)json_integer_value(ev);
        t->devices[i].accepted = (uint64_t)json_integer_value(ac);
        t->devices[i].imports = (uint64_t)json_integer_value(im);
    }
    t->n_devices = (int32_t)json_array_size(a);
    return 0;
}

static json_t *telemetry_json(const struct engine_telemetry *t)
{
    json_t *o = json_object();
    job_telemetry_counters_json(o, t);
    json_object_set_new(o, "elapsed_s", secs(t->elapsed_s));
    json_object_set_new(o, "ops", job_ops_json(t));
    if (t->n_devices > 0)
        json_object_set_new(o, "devices", job_devices_json(t));
    return o;
}

json_t *job_status_json(const struct job_status *s, int with_telemetry)
{
    char id[24];
    job_id_format(s->id, id, sizeof id);
    json_t *j = json_object();
    json_object_set_new(j, "id", json_string(id));
    json_object_set_new(j, "name", str_or_null(s->name));
    json_object_set_new(j, "state", json_string(job_state_name(s->state)));
    json_object_set_new(j, "created_at", time_or_null(s->created_ms));
    json_object_set_new(j, "started_at", time_or_null(s->started_ms));
    json_object_set_new(j, "finished_at", time_or_null(s->finished_ms));
    json_object_set_new(j, "budget_s", secs(s->budget_s));
    json_object_set_new(j, "elapsed_s", secs(s->elapsed_s));
    json_object_set_new(j, "seed", json_integer((json_int_t)s->seed));
    json_object_set_new(j, "target_k", s->target_k >= 0 ? json_integer(s->target_k) : json_null());
    json_object_set_new(j, "stop_at_target", json_boolean(s->stop_at_target));
    json_object_set_new(j, "backend_requested",
                        json_string(lcn_backend_name(s->backend_requested)));
    json_object_set_new(j, "backend", str_or_null(s->backend));
    json_object_set_new(j, "evaluator", str_or_null(s->evaluator));
    json_object_set_new(j, "graph",
                        json_pack("{s:i, s:i, s:i, s:i}", "n", s->n, "m", s->m, "width", s->width,
                                  "height", s->height));
    json_object_set_new(j, "best", s->has_best ? obj_json(&s->best) : json_null());
    json_object_set_new(j, "balance_ratio",
                        s->has_best ? json_real(obj_balance_ratio(&s->best, s->m)) : json_null());
    json_object_set_new(j, "time_to_target_s",
                        s->time_to_target_s >= 0 ? secs(s->time_to_target_s) : json_null());
    json_object_set_new(j, "stop_reason", str_or_null(s->stop_reason));
    json_object_set_new(
        j, "error",
        *s->error_code ? json_pack("{s:s, s:s}", "code", s->error_code, "message", s->error_msg)
                       : json_null());
    json_object_set_new(j, "progress_seq", json_integer(s->progress_seq));
    json_object_set_new(j, "start_latency_s",
                        s->start_latency_s >= 0 ? secs(s->start_latency_s) : json_null());
    json_object_set_new(j, "resumes", json_integer(s->resumes));
    json_object_set_new(j, "cancel_requested", json_boolean(s->cancel_requested));
    json_object_set_new(j, "engine_overran", json_boolean(s->engine_overran));
    if (with_telemetry)
        json_object_set_new(j, "telemetry",
                            s->has_telemetry ? telemetry_json(&s->tel) : json_null());
    return j;
}

json_t *job_ops_json(const struct engine_telemetry *t)
{
    json_t *o = json_object();
    for (int op = 0; op < ENGINE_OPS; op++) {
        const struct engine_op_stats *c = &t->ops[op];
        json_object_set_new(o, engine_op_name((enum engine_op)op),
                            json_pack("{s:I, s:I, s:I, s:I}", "tried", (json_int_t)c->tried,
                                      "valid", (json_int_t)c->valid, "accepted",
                                      (json_int_t)c->accepted, "improved",
                                      (json_int_t)c->improved));
    }
    return o;
}

int job_ops_parse(struct engine_telemetry *t, const json_t *ops)
{
    if (!json_is_object(ops))
        return LCN_EPARSE;
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)ops, name, v)
    {
        int op = 0;
        while (op < ENGINE_OPS && strcmp(engine_op_name((enum engine_op)op), name) != 0)
            op++;
        json_int_t a[4];
        if (op == ENGINE_OPS || json_unpack(v, "{s:I, s:I, s:I, s:I}", "tried", &a[0], "valid",
                                            &a[1], "accepted", &a[2], "improved", &a[3]))
            return LCN_EPARSE;
        t->ops[op] = (struct engine_op_stats){(uint64_t)a[0], (uint64_t)a[1], (uint64_t)a[2],
                                              (uint64_t)a[3]};
    }
    return 0;
}

static int copy_str(char *dst, size_t len, const json_t *v)
{
    if (json_is_null(v)) {
        dst[0] = 0;
        return 0;
    }
    if (!json_is_string(v) || json_string_length(v) >= len)
        return LCN_EPARSE;
    snprintf(dst, len, "%s", json_string_value(v));
    return 0;
}

static int parse_time(int64_t *ms, const json_t *v)
{
    if (json_is_null(v)) {
        *ms = 0;
        return 0;
    }
    const char *s = json_string_value(v);
    struct tm tm = {0};
    int msec = 0;
    if (!s || sscanf(s, "%d-%d-%dT%d:%d:%d.%dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                     &tm.tm_min, &tm.tm_sec, &msec) != 7)
        return LCN_EPARSE;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    *ms = (int64_t)timegm(&tm) * 1000 + msec;
    return 0;
}

static int parse_obj(struct lcn_obj *o, const json_t *v)
{
    json_int_t K, nK, Phi, C;
    if (json_unpack((json_t *)v, "{s:I, s:I, s:I, s:I}", "K", &K, "nK", &nK, "Phi", &Phi, "C", &C))
        return LCN_EPARSE;
    o->K = (int32_t)K;
    o->nK = (int32_t)nK;
    o->Phi = Phi;
    o->C = C;
    return 0;
}

/* Reads what telemetry_json wrote; *out is untouched unless it returns 0.
 * Records written before issue 15 have no "ops" (every operator reads 0). */
static int parse_telemetry(struct engine_telemetry *out, const json_t *t)
{
    struct engine_telemetry tl;
    memset(&tl, 0, sizeof tl);
    if (!json_is_object(t))
        return LCN_EPARSE;
    for (size_t i = 0; i < LCN_ARRAY_LEN(tel_counters); i++) {
        const json_t *v = json_object_get(t, tel_counters[i].name);
        if (!json_is_integer(v))
            return LCN_EPARSE;
        tel_set(&tl, i, (uint64_t)json_integer_value(v));
    }
    const json_t *el = json_object_get(t, "elapsed_s");
    if (!json_is_number(el))
        return LCN_EPARSE;
    tl.elapsed_s = json_number_value(el);
    const json_t *ops = json_object_get(t, "ops");
    if (ops && job_ops_parse(&tl, ops) != 0)
        return LCN_EPARSE;
    const json_t *devs = json_object_get(t, "devices");
    if (devs && devices_parse(&tl, devs) != 0)
        return LCN_EPARSE;
    *out = tl;
    return 0;
}

int job_status_parse(struct job_status *s, const json_t *j)
{
    memset(s, 0, sizeof *s);
    if (!json_is_object(j))
        return LCN_EPARSE;
    int rc = 0;
    const char *id = json_string_value(json_object_get(j, "id"));
    if (!id || job_id_parse(id, &s->id))
        return LCN_EPARSE;
    rc |= copy_str(s->name, sizeof s->name, json_object_get(j, "name"));
    if (job_state_parse(json_string_value(json_object_get(j, "state")), &s->state))
        return LCN_EPARSE;
    rc |= parse_time(&s->created_ms, json_object_get(j, "created_at"));
    rc |= parse_time(&s->started_ms, json_object_get(j, "started_at"));
    rc |= parse_time(&s->finished_ms, json_object_get(j, "finished_at"));
    s->budget_s = json_number_value(json_object_get(j, "budget_s"));
    s->elapsed_s = json_number_value(json_object_get(j, "elapsed_s"));
    s->seed = (uint64_t)json_integer_value(json_object_get(j, "seed"));
    const json_t *tk = json_object_get(j, "target_k");
    s->target_k = json_is_integer(tk) ? (int32_t)json_integer_value(tk) : -1;
    s->stop_at_target = json_is_true(json_object_get(j, "stop_at_target"));
    const char *br = json_string_value(json_object_get(j, "backend_requested"));
    enum lcn_backend bk = LCN_BACKEND_AUTO;
    if (br)
        (void)lcn_backend_parse(br, &bk); /* an unknown name reads as auto, as before */
    s->backend_requested = bk;
    rc |= copy_str(s->backend, sizeof s->backend, json_object_get(j, "backend"));
    rc |= copy_str(s->evaluator, sizeof s->evaluator, json_object_get(j, "evaluator"));
    json_int_t n = 0, m = 0, w = 0, h = 0;
    if (json_unpack(json_object_get(j, "graph"), "{s:I, s:I, s:I, s:I}", "n", &n, "m", &m, "width",
                    &w, "height", &h))
        rc |= LCN_EPARSE;
    s->n = (int32_t)n;
    s->m = (int32_t)m;
    s->width = (int32_t)w;
    s->height = (int32_t)h;
    const json_t *best = json_object_get(j, "best");
    if (best && !json_is_null(best)) {
        rc |= parse_obj(&s->best, best);
        s->has_best = 1;
    }
    const json_t *ttt = json_object_get(j, "time_to_target_s");
    s->time_to_target_s = json_is_number(ttt) ? json_number_value(ttt) : -1;
    rc |= copy_str(s->stop_reason, sizeof s->stop_reason, json_object_get(j, "stop_reason"));
    const json_t *err = json_object_get(j, "error");
    if (err && !json_is_null(err)) {
        rc |= copy_str(s->error_code, sizeof s->error_code, json_object_get(err, "code"));
        rc |= copy_str(s->error_msg, sizeof s->error_msg, json_object_get(err, "message"));
    }
    s->progress_seq = json_integer_value(json_object_get(j, "progress_seq"));
    const json_t *sl = json_object_get(j, "start_latency_s");
    s->start_latency_s = json_is_number(sl) ? json_number_value(sl) : -1;
    s->resumes = (int32_t)json_integer_value(json_object_get(j, "resumes"));
    s->cancel_requested = json_is_true(json_object_get(j, "cancel_requested"));
    s->engine_overran = json_is_true(json_object_get(j, "engine_overran"));
    const json_t *t = json_object_get(j, "telemetry");
    if (t && !json_is_null(t)) {
        if (parse_telemetry(&s->tel, t))
            return LCN_EPARSE;
        s->has_telemetry = 1;
    }
    return rc ? LCN_EPARSE : 0;
}

/* ------------------------------------------------------------ events */

static char *dump(json_t *j)
{
    char *s = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(12));
    json_decref(j);
    if (!s)
        abort(); /* only out of memory makes dumping a fresh object fail */
    return s;
}

char *job_event_state(int64_t seq, double elapsed_s, enum job_state state, const char *error_code,
                      const char *error_msg)
{
    json_t *j = json_pack("{s:I, s:s, s:o, s:s}", "seq", (json_int_t)seq, "type", "state",
                          "elapsed_s", secs(elapsed_s), "state", job_state_name(state));
    if (error_code && *error_code)
        json_object_set_new(
            j, "error",
            json_pack("{s:s, s:s}", "code", error_code, "message", error_msg ? error_msg : ""));
    return dump(j);
}

char *job_event_improve(int64_t seq, double elapsed_s, const char *stage,
                        const struct lcn_obj *best)
{
    return dump(json_pack("{s:I, s:s, s:o, s:s, s:o}", "seq", (json_int_t)seq, "type", "improve",
                          "elapsed_s", secs(elapsed_s), "stage", stage ? stage : "", "best",
                          obj_json(best)));
}

char *job_event_checkpoint(int64_t seq, double elapsed_s, const struct lcn_obj *best)
{
    return dump(json_pack("{s:I, s:s, s:o, s:o}", "seq", (json_int_t)seq, "type", "checkpoint",
                          "elapsed_s", secs(elapsed_s), "best", obj_json(best)));
}
