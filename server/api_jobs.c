/*
 * api_jobs.c - the job resources of docs/API.md: POST, GET and DELETE
 * /jobs, progress pages, solutions, and the requests parked on a job until
 * a change is durable (api.h has the design).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server/api.h"
#include "engine.h"
#include "err.h"
#include "graphio.h"
#include "render.h"
#include "sbuf.h"
#include "util.h"
#include "validate.h"
#include "server/watch.h"

/* ------------------------------------------------------------ helpers */

static struct job *job_of(struct http_req *r, struct api *a)
{
    int64_t id;
    const char *s = http_param(r, 0);
    if (!s || job_id_parse(s, &id))
        return NULL;
    return jobs_find(a->jobs, id);
}

/* The job store cannot commit now: 503 not_ready with Retry-After. */
static void store_unavailable(struct http_req *r, const char *msg)
{
    http_add_header(r, "Retry-After", "5");
    http_respond_error(r, 503, "not_ready", NULL, "%s", msg);
}

static void not_found(struct http_req *r)
{
    http_respond_error(r, 404, "not_found", NULL, "no job '%.40s'", http_param(r, 0));
}

static void shutting_down(struct http_req *r)
{
    http_respond_error(r, 503, "shutting_down", NULL, "the daemon is stopping");
}

/* A query argument given more than once (which one counts would depend on
 * the parser: a proxy may read the other one), or holding %00, which the
 * HTTP layer leaves encoded (http.c): 400 at it. Returns -1 when answered. */
static int query_arg_refused(struct http_req *r, const char *key)
{
    const char *v = http_query(r, key);
    const char *why = http_query_count(r, key) > 1 ? "query argument given more than once"
                      : v && strstr(v, "%00")    ? "query argument holds %00 (a NUL byte)"
                                                 : NULL;
    if (!why)
        return 0;
    http_respond_error(r, 400, "invalid_field", key, "%s", why);
    return -1;
}

/* Parses an optional integer query argument in [lo, hi]. Returns 0, or
 * answers 400 and returns -1. */
static int query_int(struct http_req *r, const char *key, int64_t lo, int64_t hi, int64_t def,
                     int64_t *out)
{
    const char *v = http_query(r, key);
    *out = def;
    if (!v)
        return 0;
    if (query_arg_refused(r, key))
        return -1;
    errno = 0;
    long long x = strtoll(v, NULL, 10);
    /* as JSON writes it (strtoll would also take blanks, '+' and "007") */
    if (!lcn_number_syntax(v, 1) || errno == ERANGE || x < lo || x > hi) {
        http_respond_error(r, 400, "invalid_field", key,
                           "'%.40s' is not an integer in [%lld, %lld]", v, (long long)lo,
                           (long long)hi);
        return -1;
    }
    *out = x;
    return 0;
}

/* The status as GET /jobs/<id> sends it. */
static void respond_status(struct http_req *r, int code, struct job *j)
{
    size_t len;
    const char *text = jobs_status_text(j, &len);
    if (!text) {
        http_respond_error(r, 500, "internal", NULL, "cannot serialise the status");
        return;
    }
    char *body = xmalloc(len + 1);
    memcpy(body, text, len + 1);
    http_respond(r, code, "application/json", body, len);
}

/* ------------------------------------------------------------ waiters */

enum waiter_kind { WAIT_CREATED, WAIT_TERMINAL, WAIT_FRESH };

/* A request parked on a job: on the job's watch (next) and on the layer's
 * list (gprev, gnext) that the shutdown answers. */
struct waiter {
    struct api *a;
    struct waiter *next;
    struct waiter *gprev, *gnext;
    struct http_req *r;
    struct job *job;
    enum waiter_kind kind;
    uint64_t ticket; /* WAIT_FRESH: the round of the shared queue it waits for */
};

/* Takes w off its job and the layer's list and frees it; the request is
 * answered or gone. */
static void waiter_free(struct waiter *w)
{
    struct job *j = w->job;
    struct waiter **pp = &j->watch->waiters;
    while (*pp && *pp != w)
        pp = &(*pp)->next;
    if (*pp)
        *pp = w->next;
    LCN_DLIST_UNLINK(w->a->waiters, w, gprev, gnext);
    free(w);
    job_watch_put(j);
}

static void waiter_cancel(void *arg, struct http_req *r)
{
    (void)r;
    waiter_free(arg);
}

static struct waiter *wait_for(struct api *a, struct http_req *r, struct job *j,
                               enum waiter_kind kind)
{
    struct job_watch *jw = job_watch_get(j);
    struct waiter *w = xcalloc(1, sizeof *w);
    w->a = a;
    w->r = r;
    w->job = j;
    w->kind = kind;
    w->next = jw->waiters;
    jw->waiters = w;
    LCN_DLIST_PUSH(a->waiters, w, gprev, gnext);
    http_set_cancel(r, waiter_cancel, w);
    http_suspend(r);
    return w;
}

/* The request parked as w is being answered: it is no longer cancellable
 * and w goes. Returns the request. */
static struct http_req *waiter_take(struct waiter *w)
{
    struct http_req *r = w->r;
    http_set_cancel(r, NULL, NULL);
    waiter_free(w);
    return r;
}

static void answer_created(struct http_req *r, const struct job *j)
{
    char id[24], loc[64];
    job_id_format(j->id, id, sizeof id);
    snprintf(loc, sizeof loc, "/jobs/%s", id);
    http_add_header(r, "Location", loc);
    json_t *links = json_object();
    json_object_set_new(links, "self", json_string(loc));
    char buf[96];
    snprintf(buf, sizeof buf, "%s/progress", loc);
    json_object_set_new(links, "progress", json_string(buf));
    snprintf(buf, sizeof buf, "%s/solution", loc);
    json_object_set_new(links, "solution", json_string(buf));
    http_respond_json(r, 201,
                      json_pack("{s:s, s:s, s:o}", "id", id, "state", job_state_name(j->pub.state),
                                "links", links));
}

/* The job table's hooks (jobs.h says when each runs; api_jobs_hooks wires
 * them with the struct api as ctx). */
static void on_job_changed(void *ctx, struct job *j)
{
    struct api *a = ctx;
    struct waiter *w = j->watch ? j->watch->waiters : NULL;
    while (w) {
        struct waiter *next = w->next;
        enum waiter_kind kind = w->kind;
        int done = (kind == WAIT_CREATED && j->durable) ||
                   (kind == WAIT_TERMINAL && job_state_terminal(j->pub.state)) ||
                   (kind == WAIT_FRESH && (job_state_terminal(j->pub.state) ||
                                           jobs_synced(a->jobs, w->ticket)));
        if (done) {
            struct http_req *r = waiter_take(w);
            if (kind == WAIT_CREATED)
                answer_created(r, j);
            else
                respond_status(r, 200, j);
        }
        w = next;
    }
    sse_job_wake(j);
}

static void on_job_removed(void *ctx, struct job *j)
{
    (void)ctx;
    while (j->watch && j->watch->waiters)
        http_respond_error(waiter_take(j->watch->waiters), 404, "not_found", NULL,
                           "the job was deleted by retention");
    sse_job_end(j);
}

/* A round of the shared queue ended: the GETs that waited for it are
 * answered with the mirror as it is now. */
void api_jobs_synced(struct api *a)
{
    struct waiter *w = a->waiters;
    while (w) {
        struct waiter *next = w->gnext;
        if (w->kind == WAIT_FRESH && jobs_synced(a->jobs, w->ticket)) {
            struct job *j = w->job;
            respond_status(waiter_take(w), 200, j);
        }
        w = next;
    }
}

/* A commit that carried j's changes failed: no parked client waits for the
 * store to come back (a GET waiting for a round of the shared queue waits
 * on: the round ends regardless). */
static void on_job_store_failed(void *ctx, struct job *j)
{
    (void)ctx;
    struct waiter *w = j->watch ? j->watch->waiters : NULL;
    while (w) {
        struct waiter *next = w->next;
        enum waiter_kind kind = w->kind;
        if (kind == WAIT_FRESH) {
            w = next;
            continue;
        }
        struct http_req *r = waiter_take(w);
        w = next;
        if (kind == WAIT_CREATED)
            store_unavailable(r, "the job store cannot commit: the job was not created");
        else if (j->pub.cancel_requested)
            respond_status(r, 202, j); /* durable: the cancel completes later */
        else
            store_unavailable(r, "the job store cannot commit: the job was not cancelled");
    }
}

void api_jobs_hooks(struct api *a, struct jobs_hooks *h)
{
    h->changed = on_job_changed;
    h->removed = on_job_removed;
    h->store_failed = on_job_store_failed;
    h->ctx = a;
}

void api_jobs_shutdown(struct api *a)
{
    while (a->waiters)
        shutting_down(waiter_take(a->waiters));
}

/* ------------------------------------------------------------ layouts */

/*
 * A job's best validated layout and the request it solves, for a task of
 * the thread pool (the solution, its picture, a warm start from it). An
 * active job's checkpoint and parsed request are taken on the loop
 * (source_take: a copy of the layout, a reference on the request); what the
 * job does not hold in memory (a finished job's) is read from the store in
 * the pool (source_load). source_release runs on the loop.
 */
struct source {
    struct store *store;
    int64_t id;
    struct job_request *held;      /* a reference taken on the loop, or NULL */
    struct job_request own;        /* read from the store when none is held */
    const struct job_request *req; /* held or &own, once source_load returned 0 */
    struct lcn_pt *layout;         /* copy, or NULL: read the checkpoint */
    int32_t n;                     /* the points in layout */
    struct lcn_obj obj;
    double elapsed_s;
    int final;
    int status; /* source_load's failure: 409 (no layout), 503 (store), 500 */
    char msg[256];
};

/* Loop thread. j must have a validated layout or be terminal (its layout,
 * if any, is then in the store). */
static void source_take(struct source *s, struct api *a, struct job *j)
{
    s->store = a->store;
    s->id = j->id;
    s->final = job_state_terminal(j->pub.state);
    if (!s->final && (s->held = jobs_req_hold(j))) {
        size_t bytes = sizeof *j->ckpt * (size_t)j->pub.n;
        s->layout = xmalloc(bytes + 1);
        memcpy(s->layout, j->ckpt, bytes);
        s->n = j->pub.n;
        s->obj = j->ckpt_obj;
        s->elapsed_s = j->ckpt_elapsed_s;
    }
}

/* Thread pool: the job's last checkpoint from the store. */
static int source_load_layout(struct source *s)
{
    struct store_checkpoint ck;
    int rc = store_load_checkpoint(s->store, s->id, &ck);
    if (rc) {
        s->status = rc == LCN_ENOTFOUND ? 409 : 503;
        snprintf(s->msg, sizeof s->msg, "%s",
                 rc == LCN_ENOTFOUND ? "no validated layout exists for this job"
                                     : "the job store cannot be read");
        return -1;
    }
    s->layout = ck.layout;
    s->n = ck.n;
    s->obj = ck.obj;
    s->elapsed_s = ck.elapsed_s;
    s->final = ck.final || s->final; /* a finished job's layout never changes */
    return 0;
}

/* Thread pool: the job's request from the store, parsed into s->own. */
static int source_load_request(struct source *s)
{
    char *body = NULL;
    size_t blen = 0;
    if (store_load_request(s->store, s->id, &body, &blen)) {
        s->status = 503;
        snprintf(s->msg, sizeof s->msg, "the job's request cannot be read from the store");
        return -1;
    }
    struct job_limits lim = {LCN_MAX_NODES, LCN_MAX_EDGES, 1e12, 1};
    struct job_error e;
    int rc = job_request_parse(&s->own, body, blen, &lim, &e);
    free(body);
    if (rc) {
        s->status = 500;
        snprintf(s->msg, sizeof s->msg, "stored request does not parse: %.200s", e.msg);
        return -1;
    }
    return 0;
}

/* Thread pool: completes s from the store. Returns 0 with s->req and
 * s->layout set, or -1 with status and msg set. */
static int source_load(struct source *s)
{
    if (!s->layout && source_load_layout(s))
        return -1;
    if (!s->held && source_load_request(s))
        return -1;
    s->req = s->held ? s->held : &s->own;
    if (s->n != s->req->doc.g.n) {
        /* a damaged store: SQLite keeps no checksums of the values */
        s->status = 500;
        snprintf(s->msg, sizeof s->msg, "the stored layout has %d points, the graph %d nodes",
                 (int)s->n, (int)s->req->doc.g.n);
        return -1;
    }
    return 0;
}

/* Loop thread: drops what s holds (s itself is the caller's). */
static void source_release(struct source *s)
{
    if (s->held)
        jobs_req_put(s->held);
    job_request_release(&s->own);
    free(s->layout);
}

/* ------------------------------------------------------------ POST /jobs */

struct parse_work {
    uv_work_t w;
    struct api *a;
    struct http_req *r;
    char *body; /* as sent; after the parse, what to store (a bare graph wrapped) */
    size_t len;
    char *query[JOB_QUERY_COUNT]; /* copies of the query arguments (bare graph fields) */
    struct job_limits lim;
    struct job_request *req;
    struct job_error err;
    int rc;
    int64_t received_ns;
    struct source *src; /* a warm start's: the named job's layout and graph */
    struct parse_work *prev, *next; /* waiting for a parse slot (api.parse_head) */
};

static void parse_cancel(void *arg, struct http_req *r)
{
    (void)r;
    struct parse_work *pw = arg;
    pw->r = NULL;
}

static void parse_run(uv_work_t *w)
{
    struct parse_work *pw = w->data;
    pw->req = xcalloc(1, sizeof *pw->req);
    char *wrapped;
    size_t wlen;
    pw->rc = job_request_parse_post(pw->req, pw->body, pw->len, (const char *const *)pw->query,
                                    &pw->lim, &pw->err, &wrapped, &wlen);
    if (wrapped) {
        free(pw->body);
        pw->body = wrapped;
        pw->len = wlen;
    }
}

static int admission(struct http_req *r, struct api *a)
{
    if (a->stopping) {
        shutting_down(r);
        return -1;
    }
    char why[400];
    if (!storeq_healthy(a->sq)) {
        store_unavailable(r, "the job store is unhealthy");
        return -1;
    }
    if (!jobs_shared_ready(a->jobs, why, sizeof why)) {
        store_unavailable(r, why);
        return -1;
    }
    struct jobs_stats st;
    jobs_stats(a->jobs, &st);
    if (st.waiting >= a->cfg->max_queued) {
        char ra[24];
        snprintf(ra, sizeof ra, "%lld", (long long)a->cfg->retry_after_s);
        http_add_header(r, "Retry-After", ra);
        http_respond_error(r, 429, "queue_full", NULL, "the queue holds %lld jobs, the limit",
                           (long long)st.waiting);
        return -1;
    }
    return 0;
}

static void parse_query_free(struct parse_work *pw)
{
    for (int i = 0; i < JOB_QUERY_COUNT; i++)
        free(pw->query[i]);
}

static void parse_free(struct parse_work *pw)
{
    parse_query_free(pw);
    free(pw->body);
    free(pw);
}

/* A request refused after its parse (pw->err), or a failed parse (pw->req
 * zeroed, then NULL): answered, and pw goes. */
static void parse_reject(struct parse_work *pw)
{
    pw->a->jobs_rejected++;
    if (pw->r)
        http_respond_error(pw->r, pw->err.status, pw->err.code, pw->err.field, "%s", pw->err.msg);
    if (pw->req)
        jobs_req_put(pw->req);
    parse_free(pw);
}

/* A parsed (and, for a warm start, resolved) request: admitted against the
 * workers and submitted, or refused. */
static void parse_submit(struct parse_work *pw)
{
    struct api *a = pw->a;
    struct http_req *r = pw->r;
    struct job_error e;
    if (!r || admission(r, a)) {
        jobs_req_put(pw->req);
        parse_free(pw);
        return;
    }
    char knob[64];
    if (!a->cfg->test_engine_faults && pw->req->tuning &&
        engine_tuning_fault(pw->req->tuning, knob, sizeof knob)) {
        /* an engine deaf to its deadline is abandoned with its thread and
         * memory: any client could pile such zombies up */
        http_respond_error(r, 400, "invalid_field", "solver.tuning",
                           "'%s' is a fault-injection knob for tests (test_engine_faults is off)",
                           knob);
        jobs_req_put(pw->req);
        parse_free(pw);
        return;
    }
    if (jobs_admit(a->jobs, pw->req, &e)) {
        http_respond_error(r, e.status, e.code, e.field, "%s", e.msg);
        jobs_req_put(pw->req);
        parse_free(pw);
        return;
    }
    struct job *j = jobs_submit(a->jobs, pw->req, pw->body, pw->len, pw->received_ns);
    wait_for(a, r, j, WAIT_CREATED);
    parse_query_free(pw);
    free(pw);
}

static void warm_start(struct parse_work *pw);

static void parse_done(uv_work_t *w, int status);

/* Starts waiting parses while a slot is free; one whose client left is
 * dropped unparsed. */
static void parse_start_waiting(struct api *a)
{
    while (a->parsing < API_PARSES && a->parse_head) {
        struct parse_work *pw = a->parse_head;
        LCN_QUEUE_UNLINK(a->parse_head, a->parse_tail, pw, prev, next);
        if (!pw->r) {
            parse_free(pw);
            continue;
        }
        a->parsing++;
        uv_queue_work(a->loop, &pw->w, parse_run, parse_done);
    }
}

/* A parse takes a slot now or waits its turn. */
static void parse_enqueue(struct api *a, struct parse_work *pw)
{
    LCN_QUEUE_PUSH_BACK(a->parse_head, a->parse_tail, pw, prev, next);
    parse_start_waiting(a);
}

static void parse_done(uv_work_t *w, int status)
{
    (void)status;
    struct parse_work *pw = w->data;
    pw->a->parsing--;
    parse_start_waiting(pw->a);
    if (pw->r)
        http_set_cancel(pw->r, NULL, NULL);
    if (pw->rc) {
        free(pw->req); /* zeroed by the failed parse */
        pw->req = NULL;
        parse_reject(pw);
    } else if (pw->req->init_from >= 0 && pw->r) {
        warm_start(pw);
    } else {
        parse_submit(pw);
    }
}

/*
 * A warm start (init_from): the named job's best validated layout and graph
 * are gathered (struct source: from memory for an active job, from the
 * store in the thread pool for a finished one), and job_request_warm turns
 * the request into a self-contained one with that layout as its
 * coordinates, before admission. The job stores that request, so a daemon
 * that recovers it after a restart needs nothing of the other job (which
 * retention may have deleted by then), and the layout takes the engines'
 * path for a submitted layout: repaired, validated, the first start.
 */
/* Sets pw's refusal at init_from (the message is the caller's); returns -1. */
static int warm_refuse(struct parse_work *pw, int status, const char *code)
{
    pw->err.status = status;
    snprintf(pw->err.code, sizeof pw->err.code, "%s", code);
    snprintf(pw->err.field, sizeof pw->err.field, "init_from");
    return -1;
}

static void warm_run(uv_work_t *w)
{
    struct parse_work *pw = w->data;
    struct source *src = pw->src;
    char id[24];
    job_id_format(src->id, id, sizeof id);
    if (source_load(src)) {
        if (src->status == 409) {
            pw->rc = warm_refuse(pw, 422, "init_from_unusable");
            snprintf(pw->err.msg, sizeof pw->err.msg, "job %s has no validated layout", id);
        } else {
            pw->rc = warm_refuse(pw, src->status, src->status == 503 ? "not_ready" : "internal");
            snprintf(pw->err.msg, sizeof pw->err.msg, "job %s: %.200s", id, src->msg);
        }
        return;
    }
    pw->rc = job_request_warm(pw->req, &pw->body, &pw->len, &src->req->doc.g, src->layout, &pw->lim,
                              &pw->err);
}

static void warm_done(uv_work_t *w, int status)
{
    (void)status;
    struct parse_work *pw = w->data;
    if (pw->src->status && !jobs_find(pw->a->jobs, pw->src->id)) {
        /* retention deleted the job while its rows were read */
        char id[24];
        job_id_format(pw->src->id, id, sizeof id);
        pw->rc = warm_refuse(pw, 422, "init_from_unusable");
        snprintf(pw->err.msg, sizeof pw->err.msg, "no job %s (deleted by retention)", id);
    }
    source_release(pw->src);
    free(pw->src);
    pw->src = NULL;
    if (pw->r)
        http_set_cancel(pw->r, NULL, NULL);
    if (pw->rc)
        parse_reject(pw);
    else
        parse_submit(pw);
}

/* Loop thread: the named job exists and has a validated layout, or the
 * request is refused (422 at init_from); then the rest in the pool. */
static void warm_start(struct parse_work *pw)
{
    struct api *a = pw->a;
    struct job *j = jobs_find(a->jobs, pw->req->init_from);
    char id[24];
    job_id_format(pw->req->init_from, id, sizeof id);
    if (!j || (!job_state_terminal(j->pub.state) && !j->ckpt && !j->mirror)) {
        warm_refuse(pw, 422, "init_from_unusable");
        if (!j)
            snprintf(pw->err.msg, sizeof pw->err.msg, "no job %s", id);
        else
            snprintf(pw->err.msg, sizeof pw->err.msg, "job %s has no validated layout yet (%s)", id,
                     job_state_name(j->pub.state));
        return parse_reject(pw);
    }
    pw->src = xcalloc(1, sizeof *pw->src);
    source_take(pw->src, a, j);
    http_set_cancel(pw->r, parse_cancel, pw);
    uv_queue_work(a->loop, &pw->w, warm_run, warm_done);
}

static int is_json_type(const char *ct)
{
    if (!ct)
        return 0;
    while (*ct == ' ')
        ct++;
    if (strncasecmp(ct, "application/json", 16))
        return 0;
    ct += 16;
    while (*ct == ' ')
        ct++;
    return *ct == 0 || *ct == ';';
}

/* The request fields given as query arguments (query_arg_refused).
 * Returns -1 when answered. */
static int query_refused(struct http_req *r)
{
    for (int i = 0; i < JOB_QUERY_COUNT; i++)
        if (query_arg_refused(r, job_query_names[i]))
            return -1;
    return 0;
}

void api_jobs_post(struct http_req *r, void *ctx)
{
    struct api *a = ctx;
    if (!is_json_type(http_header(r, "Content-Type"))) {
        http_respond_error(r, 415, "unsupported_media_type", NULL,
                           "POST /jobs takes application/json");
        return;
    }
    if (admission(r, a) || query_refused(r))
        return;
    struct parse_work *pw = xcalloc(1, sizeof *pw);
    pw->w.data = pw;
    pw->a = a;
    pw->r = r;
    pw->body = http_take_body(r, &pw->len);
    for (int i = 0; i < JOB_QUERY_COUNT; i++) {
        const char *v = http_query(r, job_query_names[i]);
        pw->query[i] = v ? xstrdup(v) : NULL;
    }
    pw->received_ns = http_received_ns(r);
    pw->lim.max_nodes = (int32_t)a->cfg->max_nodes;
    pw->lim.max_edges = (int32_t)a->cfg->max_edges;
    pw->lim.max_budget_s = a->cfg->max_budget_s;
    pw->lim.default_budget_s = a->cfg->default_budget_s;
    http_set_cancel(r, parse_cancel, pw);
    http_suspend(r);
    parse_enqueue(a, pw);
}

/* ------------------------------------------------------------ GET /jobs */

void api_jobs_list(struct http_req *r, void *ctx)
{
    struct api *a = ctx;
    const char *sv = http_query(r, "state");
    enum job_state state = JOB_QUEUED; /* the filter, when sv names one */
    if (query_arg_refused(r, "state"))
        return;
    if (sv && job_state_parse(sv, &state)) {
        http_respond_error(r, 400, "invalid_field", "state", "'%.40s' is not a job state", sv);
        return;
    }
    int64_t limit, before = INT64_MAX;
    if (query_int(r, "limit", 1, 500, 50, &limit))
        return;
    const char *bv = http_query(r, "before");
    if (query_arg_refused(r, "before"))
        return;
    if (bv && job_id_parse(bv, &before)) {
        http_respond_error(r, 400, "invalid_field", "before", "'%.40s' is not a job id", bv);
        return;
    }
    json_t *list = json_array();
    int64_t last = -1;
    int more = 0;
    for (struct job *j = jobs_before(a->jobs, before); j; j = jobs_before(a->jobs, j->id)) {
        if (sv && j->pub.state != state)
            continue;
        if ((int64_t)json_array_size(list) == limit) {
            more = 1;
            break;
        }
        json_array_append_new(list, job_status_json(&j->pub, 0));
        last = j->id;
    }
    json_t *next = json_null();
    if (more) {
        char id[24];
        job_id_format(last, id, sizeof id);
        next = json_string(id);
    }
    http_respond_json(r, 200, json_pack("{s:o, s:o}", "jobs", list, "next_before", next));
}

void api_jobs_get(struct http_req *r, void *ctx)
{
    struct api *a = ctx;
    struct job *j = job_of(r, a);
    if (!j)
        return not_found(r);
    /* min_seq: the client has seen the job's events up to there (through
     * another daemon, perhaps): a mirror not there yet answers after the
     * cluster thread's next round, which reads every commit made before */
    int64_t min_seq;
    if (query_int(r, "min_seq", 0, INT64_MAX / 2, 0, &min_seq))
        return;
    uint64_t ticket;
    if (j->pub.progress_seq < min_seq && jobs_fresh_ticket(a->jobs, j, &ticket)) {
        wait_for(a, r, j, WAIT_FRESH)->ticket = ticket;
        return;
    }
    respond_status(r, 200, j);
}

/* ------------------------------------------------------------ progress */

struct page {
    struct sbuf b;
    int64_t upto, last;
    int n;
};

static void page_event(void *ctx, int64_t seq, const char *body)
{
    struct page *p = ctx;
    if (seq > p->upto)
        return;
    if (p->n++)
        sbuf_puts(&p->b, ",");
    sbuf_puts(&p->b, body);
    p->last = seq;
}

/*
 * Whether the Accept header lists text/event-stream with a weight above 0
 * (RFC 9110 12.5.1: "q=0" means not acceptable): each comma-separated
 * media range, its type compared without case, its "q" parameter read.
 */
static int wants_sse(struct http_req *r)
{
    const char *a = http_header(r, "Accept");
    static const char want[] = "text/event-stream";
    while (a && *a) {
        const char *end = strchr(a, ',');
        if (!end)
            end = a + strlen(a);
        while (a < end && (*a == ' ' || *a == '\t'))
            a++;
        const size_t n = sizeof want - 1;
        const char *p = a + n;
        if ((size_t)(end - a) >= n && !strncasecmp(a, want, n) &&
            (p == end || *p == ';' || *p == ' ' || *p == '\t')) {
            double q = 1;
            for (const char *k = p; k < end; k++) /* ";q=W" or "; q=W" */
                if ((*k == ';' || *k == ' ') && (k[1] == 'q' || k[1] == 'Q') && k[2] == '=')
                    q = strtod(k + 3, NULL);
            if (q > 0)
                return 1;
        }
        a = *end ? end + 1 : end;
    }
    return 0;
}

static void progress_stream(struct http_req *r, struct api *a, struct job *j, int64_t after)
{
    const char *lei = http_header(r, "Last-Event-ID");
    if (lei) {
        char *end;
        long long v = strtoll(lei, &end, 10);
        if (*lei && !*end && v >= 0)
            after = v;
    }
    if (a->stopping)
        return shutting_down(r);
    if (sse_count(&a->sse) >= a->cfg->max_streams) {
        http_add_header(r, "Retry-After", "5");
        http_respond_error(r, 503, "too_many_streams", NULL,
                           "%lld progress streams are open, the limit",
                           (long long)sse_count(&a->sse));
        return;
    }
    sse_start(&a->sse, r, j, after);
}

void api_jobs_progress(struct http_req *r, void *ctx)
{
    struct api *a = ctx;
    struct job *j = job_of(r, a);
    if (!j)
        return not_found(r);
    int64_t after, limit;
    if (query_int(r, "after", 0, INT64_MAX / 2, 0, &after) ||
        query_int(r, "limit", 1, 1000, 1000, &limit))
        return;
    if (wants_sse(r))
        return progress_stream(r, a, j, after);
    struct page p = {{0}, j->pub.progress_seq, after, 0};
    sbuf_puts(&p.b, "{\"events\":[");
    if (after < p.upto &&
        store_load_events(a->store, j->id, after, (int)limit, page_event, &p) < 0) {
        free(p.b.p);
        http_respond_error(r, 503, "not_ready", NULL, "the job store cannot be read");
        return;
    }
    int done = job_state_terminal(j->pub.state) && p.last >= j->pub.progress_seq;
    sbuf_printf(&p.b, "],\"next\":%lld,\"state\":\"%s\",\"done\":%s}\n", (long long)p.last,
                job_state_name(j->pub.state), done ? "true" : "false");
    http_respond(r, 200, "application/json", p.b.p, p.b.len);
}

/* ------------------------------------------------------------ solution */

enum render_kind { RENDER_JSON, RENDER_SVG };

struct render_work {
    uv_work_t w;
    struct api *a;
    struct http_req *r;
    enum render_kind kind;
    struct source src;
    char *text;
    size_t len;
    int status;
    char msg[256];
};

static void render_cancel(void *arg, struct http_req *r)
{
    (void)r;
    ((struct render_work *)arg)->r = NULL;
}

/* Thread pool: the layout in the input file format with the "lcn" record. */
static char *render_json(const struct source *s)
{
    char id[24];
    job_id_format(s->id, id, sizeof id);
    json_t *lcn = json_pack("{s:s, s:b, s:i, s:i, s:I, s:I, s:f, s:b}", "job", id, "final",
                            s->final, "K", s->obj.K, "nK", s->obj.nK, "Phi", (json_int_t)s->obj.Phi,
                            "C", (json_int_t)s->obj.C, "elapsed_s", s->elapsed_s, "validated", 1);
    json_t *doc = graphio_layout_json(&s->req->doc, s->layout, lcn);
    char *text = graphio_dumps(doc, 0);
    json_decref(doc);
    return text;
}

/* Thread pool: the picture lcnctl render draws (proto/render.h), with the
 * per-edge counts of the oracle; *len bytes, NULL when it cannot be made. */
static char *render_picture(const struct source *s, size_t *len)
{
    const struct lcn_graph *g = &s->req->doc.g;
    struct lcn_report rep;
    char *text = NULL;
    if (validate_layout(g, s->layout, 0, &rep) == 0) {
        char id[24], title[176], sub[64];
        job_id_format(s->id, id, sizeof id);
        snprintf(title, sizeof title, "job %s%s%.128s", id, s->req->name ? ": " : "",
                 s->req->name ? s->req->name : "");
        snprintf(sub, sizeof sub, "%s at %.2f s", s->final ? "final layout" : "best layout so far",
                 s->elapsed_s);
        struct render_info info = {title, sub};
        text = render_svg_text(g, s->layout, &rep, &info, len);
    }
    report_release(&rep);
    return text;
}

static void render_run(uv_work_t *w)
{
    struct render_work *rw = w->data;
    if (source_load(&rw->src)) {
        rw->status = rw->src.status;
        snprintf(rw->msg, sizeof rw->msg, "%s", rw->src.msg);
        return;
    }
    if (rw->kind == RENDER_SVG) {
        rw->text = render_picture(&rw->src, &rw->len);
    } else {
        rw->text = render_json(&rw->src);
        rw->len = rw->text ? strlen(rw->text) : 0;
    }
    rw->status = rw->text ? 200 : 500;
    if (!rw->text)
        snprintf(rw->msg, sizeof rw->msg, "cannot serialise the solution");
}

/* 503 busy: the answers held until read would pass max_body_total_bytes. */
static void answers_busy(struct http_req *r)
{
    http_add_header(r, "Retry-After", "1");
    http_respond_error(r, 503, "busy", NULL,
                       "answers held by the server until their clients read them would pass "
                       "max_body_total_bytes; retry");
}

static void render_done(uv_work_t *w, int status)
{
    (void)status;
    struct render_work *rw = w->data;
    source_release(&rw->src);
    if (rw->r) {
        http_set_cancel(rw->r, NULL, NULL);
        if (rw->status != 200 && !jobs_find(rw->a->jobs, rw->src.id)) {
            /* retention deleted the job while the render waited or read
             * the store: its rows were gone, which is no 409 or 503 */
            http_respond_error(rw->r, 404, "not_found", NULL, "the job was deleted by retention");
        } else if (rw->status == 200 && http_answer_budget_spent(rw->r, rw->len)) {
            answers_busy(rw->r); /* rendered meanwhile by others */
        } else if (rw->status == 200) {
            http_respond(rw->r, 200, rw->kind == RENDER_SVG ? "image/svg+xml" : "application/json",
                         rw->text, rw->len);
            rw->text = NULL;
        } else {
            http_respond_error(rw->r, rw->status,
                               rw->status == 409   ? "no_solution"
                               : rw->status == 503 ? "not_ready"
                                                   : "internal",
                               NULL, "%s", rw->msg);
        }
    }
    free(rw->text);
    free(rw);
}

/* 1 when j has, or (finished, or run by another daemon) may have in the
 * store, a validated layout; else answers 409 no_solution. */
static int has_layout(struct http_req *r, struct job *j)
{
    if (job_state_terminal(j->pub.state) || j->ckpt || j->mirror)
        return 1;
    http_respond_error(r, 409, "no_solution", NULL, "no validated layout exists yet (state %s)",
                       job_state_name(j->pub.state));
    return 0;
}

static void render_solution(struct http_req *r, struct api *a, enum render_kind kind)
{
    struct job *j = job_of(r, a);
    if (!j)
        return not_found(r);
    if (!has_layout(r, j))
        return;
    /* before rendering: at least 24 bytes a node in either form */
    if (http_answer_budget_spent(r, (size_t)j->cur.n * 24))
        return answers_busy(r);
    struct render_work *rw = xcalloc(1, sizeof *rw);
    rw->w.data = rw;
    rw->a = a;
    rw->r = r;
    rw->kind = kind;
    source_take(&rw->src, a, j);
    http_set_cancel(r, render_cancel, rw);
    http_suspend(r);
    uv_queue_work(a->loop, &rw->w, render_run, render_done);
}

void api_jobs_solution(struct http_req *r, void *ctx)
{
    render_solution(r, ctx, RENDER_JSON);
}

void api_jobs_solution_svg(struct http_req *r, void *ctx)
{
    render_solution(r, ctx, RENDER_SVG);
}

/* ------------------------------------------------------------ DELETE */

void api_jobs_delete(struct http_req *r, void *ctx)
{
    struct api *a = ctx;
    struct job *j = job_of(r, a);
    if (!j)
        return not_found(r);
    if (job_state_terminal(j->pub.state))
        return respond_status(r, 200, j);
    if (a->stopping && j->run)
        return shutting_down(r);
    if (!storeq_healthy(a->sq)) {
        /* nothing can be made durable now; an earlier request to cancel
         * that already is will complete */
        if (j->pub.cancel_requested)
            return respond_status(r, 202, j);
        return store_unavailable(r, "the job store is unhealthy: the job was not cancelled");
    }
    jobs_cancel(a->jobs, j);
    wait_for(a, r, j, WAIT_TERMINAL);
}
