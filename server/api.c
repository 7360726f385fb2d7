/*
 * api.c - the HTTP API of docs/API.md: the route table, its handlers,
 * progress streams (SSE), metrics and service endpoints.
 *
 * Concurrency design: handlers run on the loop thread (http.h). Work that
 * could take long leaves the loop: request parsing and solution rendering
 * run on the libuv thread pool (the HTTP request is suspended meanwhile,
 * and answered from the after-work callback on the loop); everything the
 * pool job reads is either its own copy or held by a loop-side reference
 * (job_request.refs, changed on the loop only). Requests that wait for a
 * durable change (POST waits for its insert, DELETE for the terminal state)
 * are parked as waiters on their job and answered from api_job_changed,
 * which jobs.c calls after each store commit, or from api_job_store_failed
 * when a commit fails (503 + Retry-After, or 202 for a cancel whose
 * request is durable): a parked client never waits for the store to
 * recover. Streams are woken from the
 * same place, from the heartbeat timer and at shutdown.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "build_id.h"
#include "err.h"
#include "graphio.h"
#include "lcnd.h"
#include "log.h"
#include "util.h"

/* ------------------------------------------------------------ small text buffer */

struct sbuf {
    char *p;
    size_t len, cap;
};

static void sb_add(struct sbuf *b, const char *s, size_t n)
{
    xgrow((void **)&b->p, 1, &b->cap, b->len + n + 1);
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

static void sb_puts(struct sbuf *b, const char *s)
{
    sb_add(b, s, strlen(s));
}

static void sb_printf(struct sbuf *b, const char *f, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(struct sbuf *b, const char *f, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, f);
    int n = vsnprintf(tmp, sizeof tmp, f, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof tmp) {
        sb_add(b, tmp, (size_t)n);
        return;
    }
    xgrow((void **)&b->p, 1, &b->cap, b->len + (size_t)n + 1);
    va_start(ap, f);
    vsnprintf(b->p + b->len, (size_t)n + 1, f, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* ------------------------------------------------------------ helpers */

static struct job *job_of(struct http_req *r, struct lcnd *d)
{
    int64_t id;
    const char *s = http_param(r, 0);
    if (!s || job_id_parse(s, &id))
        return NULL;
    return jobs_find(d, id);
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

/* Parses an optional integer query argument in [lo, hi]. Returns 0, or
 * answers 400 and returns -1. */
static int query_int(struct http_req *r, const char *key, int64_t lo, int64_t hi, int64_t def,
                     int64_t *out)
{
    const char *v = http_query(r, key);
    *out = def;
    if (!v)
        return 0;
    char *end;
    long long x = strtoll(v, &end, 10);
    if (!*v || *end || x < lo || x > hi) {
        http_respond_error(r, 400, "invalid_field", key,
                           "'%.40s' is not an integer in [%lld, %lld]", v, (long long)lo,
                           (long long)hi);
        return -1;
    }
    *out = x;
    return 0;
}

/* The status as GET /jobs/<id> sends it. Pollers ask far more often than
 * it changes, so the text is kept until the next commit changes pub. */
static void respond_status(struct http_req *r, int code, struct job *j)
{
    if (!j->pub_text) {
        json_t *st = job_status_json(&j->pub, 1);
        char *s = json_dumps(st, JSON_COMPACT | JSON_REAL_PRECISION(12));
        json_decref(st);
        if (!s) {
            http_respond_error(r, 500, "internal", NULL, "cannot serialise the status");
            return;
        }
        j->pub_len = strlen(s);
        j->pub_text = xmalloc(j->pub_len + 2);
        memcpy(j->pub_text, s, j->pub_len);
        j->pub_text[j->pub_len++] = '\n';
        j->pub_text[j->pub_len] = 0;
        free(s);
    }
    char *body = xmalloc(j->pub_len + 1);
    memcpy(body, j->pub_text, j->pub_len + 1);
    http_respond(r, code, "application/json", body, j->pub_len);
}

/* ------------------------------------------------------------ waiters */

enum waiter_kind { WAIT_CREATED, WAIT_TERMINAL };

struct waiter {
    struct waiter *next;
    struct http_req *r;
    struct job *job;
    int kind;
};

static void waiter_unlink(struct waiter *w)
{
    struct waiter **pp = &w->job->waiters;
    while (*pp && *pp != w)
        pp = &(*pp)->next;
    if (*pp)
        *pp = w->next;
}

static void waiter_cancel(void *arg, struct http_req *r)
{
    (void)r;
    struct waiter *w = arg;
    waiter_unlink(w);
    free(w);
}

static void wait_for(struct http_req *r, struct job *j, int kind)
{
    struct waiter *w = xcalloc(1, sizeof *w);
    w->r = r;
    w->job = j;
    w->kind = kind;
    w->next = j->waiters;
    j->waiters = w;
    http_set_cancel(r, waiter_cancel, w);
    http_suspend(r);
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

/* ------------------------------------------------------------ SSE streams */

struct sse {
    struct lcnd *d;
    struct http_req *r;
    struct job *job;
    int64_t cursor;
    struct sbuf out;
    size_t off;
    int64_t last_ns;
    int end;
    struct sse *jprev, *jnext;
    struct sse *gprev, *gnext;
};

static void sse_detach_job(struct sse *s)
{
    if (!s->job)
        return;
    LCN_DLIST_UNLINK(s->job->streams, s, jprev, jnext);
    s->jprev = s->jnext = NULL;
    s->job = NULL;
}

static void sse_close(void *arg)
{
    struct sse *s = arg;
    struct lcnd *d = s->d;
    sse_detach_job(s);
    LCN_DLIST_UNLINK(d->streams, s, gprev, gnext);
    d->n_streams--;
    free(s->out.p);
    free(s);
}

struct sse_fill {
    struct sse *s;
    int64_t upto;
    int n;
};

static void sse_event(void *ctx, int64_t seq, const char *body)
{
    struct sse_fill *f = ctx;
    if (seq > f->upto)
        return;
    const char *t = strstr(body, "\"type\":\"");
    char type[24] = "message";
    if (t) {
        t += 8;
        size_t k = 0;
        while (t[k] && t[k] != '"' && k < sizeof type - 1) {
            type[k] = t[k];
            k++;
        }
        type[k] = 0;
    }
    sb_printf(&f->s->out, "id: %lld\nevent: %s\ndata: ", (long long)seq, type);
    sb_puts(&f->s->out, body);
    sb_puts(&f->s->out, "\n\n");
    f->s->cursor = seq;
    f->n++;
}

static ssize_t sse_read(void *arg, char *buf, size_t max)
{
    struct sse *s = arg;
    struct lcnd *d = s->d;
    if (s->off == s->out.len) {
        s->out.len = 0;
        s->off = 0;
        if (s->end || !s->job)
            return HTTP_STREAM_END;
        struct job *j = s->job;
        struct sse_fill f = {s, j->pub.progress_seq, 0};
        if (s->cursor < j->pub.progress_seq &&
            store_load_events(d->store, j->id, s->cursor, 256, sse_event, &f) < 0)
            return HTTP_STREAM_END;
        if (!f.n) {
            if (job_state_terminal(j->pub.state) && s->cursor >= j->pub.progress_seq)
                return HTTP_STREAM_END;
            if (lcn_now_ns() - s->last_ns < (int64_t)(d->cfg.sse_heartbeat_s * 1e9))
                return HTTP_STREAM_WAIT;
            sb_puts(&s->out, ": keepalive\n\n");
        }
    }
    size_t n = LCN_MIN(max, s->out.len - s->off);
    memcpy(buf, s->out.p + s->off, n);
    s->off += n;
    s->last_ns = lcn_now_ns();
    return (ssize_t)n;
}

static void sse_start(struct http_req *r, struct lcnd *d, struct job *j, int64_t after)
{
    struct sse *s = xcalloc(1, sizeof *s);
    s->d = d;
    s->r = r;
    s->job = j;
    s->cursor = after;
    s->last_ns = lcn_now_ns();
    s->jnext = j->streams;
    if (j->streams)
        j->streams->jprev = s;
    j->streams = s;
    s->gnext = d->streams;
    if (d->streams)
        d->streams->gprev = s;
    d->streams = s;
    d->n_streams++;
    /* a comment first, so the client sees the stream open at once */
    sb_puts(&s->out, ": lcnd progress stream\n\n");
    http_respond_stream(r, "text/event-stream", sse_read, sse_close, s);
}

void api_heartbeat(struct lcnd *d)
{
    int64_t now = lcn_now_ns(), hb = (int64_t)(d->cfg.sse_heartbeat_s * 1e9);
    for (struct sse *s = d->streams; s; s = s->gnext)
        if (now - s->last_ns >= hb)
            http_stream_wake(s->r);
}

void api_job_changed(struct lcnd *d, struct job *j)
{
    (void)d;
    struct waiter **pp = &j->waiters;
    while (*pp) {
        struct waiter *w = *pp;
        int done = (w->kind == WAIT_CREATED && j->durable) ||
                   (w->kind == WAIT_TERMINAL && job_state_terminal(j->pub.state));
        if (!done) {
            pp = &w->next;
            continue;
        }
        *pp = w->next;
        http_set_cancel(w->r, NULL, NULL);
        if (w->kind == WAIT_CREATED)
            answer_created(w->r, j);
        else
            respond_status(w->r, 200, j);
        free(w);
    }
    for (struct sse *s = j->streams; s; s = s->jnext)
        http_stream_wake(s->r);
}

void api_job_removed(struct lcnd *d, struct job *j)
{
    (void)d;
    while (j->waiters) {
        struct waiter *w = j->waiters;
        j->waiters = w->next;
        http_set_cancel(w->r, NULL, NULL);
        http_respond_error(w->r, 404, "not_found", NULL, "the job was deleted by retention");
        free(w);
    }
    while (j->streams) {
        struct sse *s = j->streams;
        sse_detach_job(s);
        http_stream_wake(s->r);
    }
}

/* A commit that carried j's changes failed (jobs.c): no parked client
 * waits for the store to come back. */
void api_job_store_failed(struct lcnd *d, struct job *j)
{
    (void)d;
    while (j->waiters) {
        struct waiter *w = j->waiters;
        j->waiters = w->next;
        http_set_cancel(w->r, NULL, NULL);
        if (w->kind == WAIT_CREATED)
            store_unavailable(w->r, "the job store cannot commit: the job was not created");
        else if (j->pub.cancel_requested)
            respond_status(w->r, 202, j); /* durable: the cancel completes later */
        else
            store_unavailable(w->r, "the job store cannot commit: the job was not cancelled");
        free(w);
    }
}

void api_shutdown(struct lcnd *d)
{
    for (size_t i = 0; i < d->jobs.n; i++) {
        struct job *j = d->jobs.v[i];
        while (j->waiters) {
            struct waiter *w = j->waiters;
            j->waiters = w->next;
            http_set_cancel(w->r, NULL, NULL);
            http_respond_error(w->r, 503, "shutting_down", NULL, "the daemon is stopping");
            free(w);
        }
    }
    for (struct sse *s = d->streams; s; s = s->gnext) {
        s->end = 1;
        http_stream_wake(s->r);
    }
}

/* ------------------------------------------------------------ POST /jobs */

struct parse_work {
    uv_work_t w;
    struct lcnd *d;
    struct http_req *r;
    char *body;
    size_t len;
    struct job_limits lim;
    struct job_request *req;
    struct job_error err;
    int rc;
    int64_t received_ns;
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
    pw->rc = job_request_parse(pw->req, pw->body, pw->len, &pw->lim, &pw->err);
}

static int admission(struct http_req *r, struct lcnd *d)
{
    if (d->stopping) {
        http_respond_error(r, 503, "shutting_down", NULL, "the daemon is stopping");
        return -1;
    }
    if (!lcnd_store_healthy(d)) {
        store_unavailable(r, "the job store is unhealthy");
        return -1;
    }
    if (d->jobs.waiting >= d->cfg.max_queued) {
        char ra[24];
        snprintf(ra, sizeof ra, "%lld", (long long)d->cfg.retry_after_s);
        http_add_header(r, "Retry-After", ra);
        http_respond_error(r, 429, "queue_full", NULL, "the queue holds %lld jobs, the limit",
                           (long long)d->jobs.waiting);
        return -1;
    }
    return 0;
}

static void parse_done(uv_work_t *w, int status)
{
    (void)status;
    struct parse_work *pw = w->data;
    struct lcnd *d = pw->d;
    struct http_req *r = pw->r;
    if (r)
        http_set_cancel(r, NULL, NULL);
    if (pw->rc) {
        d->jobs_rejected++;
        if (r)
            http_respond_error(r, pw->err.status, pw->err.code, pw->err.field, "%s", pw->err.msg);
        free(pw->req); /* zeroed by the failed parse */
        free(pw->body);
        free(pw);
        return;
    }
    if (!r) {
        jobs_req_put(pw->req);
        free(pw->body);
        free(pw);
        return;
    }
    if (admission(r, d)) {
        jobs_req_put(pw->req);
        free(pw->body);
        free(pw);
        return;
    }
    if (!jobs_backend_available(d, pw->req->backend)) {
        http_respond_error(r, 422, "backend_unavailable", "backend", "no usable %s worker",
                           job_backend_name(pw->req->backend));
        jobs_req_put(pw->req);
        free(pw->body);
        free(pw);
        return;
    }
    char why[200];
    if (pw->req->backend == JOB_BACKEND_GPU && d->engine.gpu_fits &&
        d->engine.gpu_fits(d, &pw->req->doc.g, why, (int)sizeof why)) {
        http_respond_error(r, 422, "backend_unavailable", "backend",
                           "the GPU cannot hold this graph: %s", why);
        jobs_req_put(pw->req);
        free(pw->body);
        free(pw);
        return;
    }
    if (jobs_admit_solver(d, pw->req, why, sizeof why)) {
        http_respond_error(r, 422, "too_large", "solver.replicas", "%s", why);
        jobs_req_put(pw->req);
        free(pw->body);
        free(pw);
        return;
    }
    struct job *j = jobs_submit(d, pw->req, pw->body, pw->len, pw->received_ns);
    wait_for(r, j, WAIT_CREATED);
    free(pw);
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

static void h_post_jobs(struct http_req *r, void *ctx)
{
    struct lcnd *d = ctx;
    if (!is_json_type(http_header(r, "Content-Type"))) {
        http_respond_error(r, 415, "unsupported_media_type", NULL,
                           "POST /jobs takes application/json");
        return;
    }
    if (admission(r, d))
        return;
    struct parse_work *pw = xcalloc(1, sizeof *pw);
    pw->w.data = pw;
    pw->d = d;
    pw->r = r;
    pw->body = http_take_body(r, &pw->len);
    pw->received_ns = http_received_ns(r);
    pw->lim.max_nodes = (int32_t)d->cfg.max_nodes;
    pw->lim.max_edges = (int32_t)d->cfg.max_edges;
    pw->lim.max_budget_s = d->cfg.max_budget_s;
    pw->lim.default_budget_s = d->cfg.default_budget_s;
    http_set_cancel(r, parse_cancel, pw);
    http_suspend(r);
    uv_queue_work(d->loop, &pw->w, parse_run, parse_done);
}

/* ------------------------------------------------------------ GET /jobs */

static void h_list_jobs(struct http_req *r, void *ctx)
{
    struct lcnd *d = ctx;
    int state = -1;
    const char *sv = http_query(r, "state");
    if (sv && (state = job_state_parse(sv)) < 0) {
        http_respond_error(r, 400, "invalid_field", "state", "'%.40s' is not a job state", sv);
        return;
    }
    int64_t limit, before = INT64_MAX;
    if (query_int(r, "limit", 1, 500, 50, &limit))
        return;
    const char *bv = http_query(r, "before");
    if (bv && job_id_parse(bv, &before)) {
        http_respond_error(r, 400, "invalid_field", "before", "'%.40s' is not a job id", bv);
        return;
    }
    json_t *list = json_array();
    int64_t last = -1;
    int more = 0;
    for (size_t i = d->jobs.n; i-- > 0;) {
        struct job *j = d->jobs.v[i];
        if (!j->durable || j->id >= before || (state >= 0 && j->pub.state != state))
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

static void h_get_job(struct http_req *r, void *ctx)
{
    struct job *j = job_of(r, ctx);
    if (!j)
        return not_found(r);
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
        sb_puts(&p->b, ",");
    sb_puts(&p->b, body);
    p->last = seq;
}

static int wants_sse(struct http_req *r)
{
    const char *a = http_header(r, "Accept");
    return a && strstr(a, "text/event-stream") != NULL;
}

static void h_progress(struct http_req *r, void *ctx)
{
    struct lcnd *d = ctx;
    struct job *j = job_of(r, d);
    if (!j)
        return not_found(r);
    int64_t after, limit;
    if (query_int(r, "after", 0, INT64_MAX / 2, 0, &after) ||
        query_int(r, "limit", 1, 1000, 1000, &limit))
        return;
    if (wants_sse(r)) {
        const char *lei = http_header(r, "Last-Event-ID");
        if (lei) {
            char *end;
            long long v = strtoll(lei, &end, 10);
            if (*lei && !*end && v >= 0)
                after = v;
        }
        if (d->stopping) {
            http_respond_error(r, 503, "shutting_down", NULL, "the daemon is stopping");
            return;
        }
        if (d->n_streams >= d->cfg.max_streams) {
            http_add_header(r, "Retry-After", "5");
            http_respond_error(r, 503, "too_many_streams", NULL,
                               "%lld progress streams are open, the limit",
                               (long long)d->n_streams);
            return;
        }
        sse_start(r, d, j, after);
        return;
    }
    struct page p = {{0}, j->pub.progress_seq, after, 0};
    sb_puts(&p.b, "{\"events\":[");
    if (after < p.upto &&
        store_load_events(d->store, j->id, after, (int)limit, page_event, &p) < 0) {
        free(p.b.p);
        http_respond_error(r, 503, "not_ready", NULL, "the job store cannot be read");
        return;
    }
    int done = job_state_terminal(j->pub.state) && p.last >= j->pub.progress_seq;
    sb_printf(&p.b, "],\"next\":%lld,\"state\":\"%s\",\"done\":%s}\n", (long long)p.last,
              job_state_name(j->pub.state), done ? "true" : "false");
    http_respond(r, 200, "application/json", p.b.p, p.b.len);
}

/* ------------------------------------------------------------ solution */

struct render_work {
    uv_work_t w;
    struct lcnd *d;
    struct http_req *r;
    int64_t id;
    struct job_request *req; /* shared (refs held on the loop) or NULL: load it */
    struct lcn_pt *layout;   /* copy, or NULL: load the checkpoint */
    struct lcn_obj obj;
    double elapsed_s;
    int final;
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

static void render_run(uv_work_t *w)
{
    struct render_work *rw = w->data;
    struct job_request own;
    const struct job_request *req = rw->req;
    int have_own = 0;
    if (!rw->layout) {
        struct store_checkpoint ck;
        int rc = store_load_checkpoint(rw->d->store, rw->id, &ck);
        if (rc) {
            rw->status = rc == LCN_ENOTFOUND ? 409 : 503;
            snprintf(rw->msg, sizeof rw->msg, "%s",
                     rc == LCN_ENOTFOUND ? "no validated layout exists for this job"
                                         : "the job store cannot be read");
            return;
        }
        rw->layout = ck.layout;
        rw->obj = ck.obj;
        rw->elapsed_s = ck.elapsed_s;
        rw->final = ck.final || rw->final; /* a finished job's layout never changes */
    }
    if (!req) {
        char *body = NULL;
        size_t blen = 0;
        if (store_load_request(rw->d->store, rw->id, &body, &blen)) {
            rw->status = 503;
            snprintf(rw->msg, sizeof rw->msg, "the job's request cannot be read from the store");
            return;
        }
        struct job_limits lim = {LCN_MAX_NODES, LCN_MAX_EDGES, 1e12, 1};
        struct job_error e;
        int rc = job_request_parse(&own, body, blen, &lim, &e);
        free(body);
        if (rc) {
            rw->status = 500;
            snprintf(rw->msg, sizeof rw->msg, "stored request does not parse: %.200s", e.msg);
            return;
        }
        have_own = 1;
        req = &own;
    }
    {
        char id[24];
        job_id_format(rw->id, id, sizeof id);
        json_t *lcn =
            json_pack("{s:s, s:b, s:i, s:i, s:I, s:I, s:f, s:b}", "job", id, "final", rw->final,
                      "K", rw->obj.K, "nK", rw->obj.nK, "Phi", (json_int_t)rw->obj.Phi, "C",
                      (json_int_t)rw->obj.C, "elapsed_s", rw->elapsed_s, "validated", 1);
        json_t *doc = graphio_layout_json(&req->doc, rw->layout, lcn);
        rw->text = graphio_dumps(doc, 0);
        json_decref(doc);
        rw->len = rw->text ? strlen(rw->text) : 0;
        rw->status = rw->text ? 200 : 500;
        if (!rw->text)
            snprintf(rw->msg, sizeof rw->msg, "cannot serialise the solution");
    }
    if (have_own)
        job_request_release(&own);
}

static void render_done(uv_work_t *w, int status)
{
    (void)status;
    struct render_work *rw = w->data;
    if (rw->req)
        jobs_req_put(rw->req);
    if (rw->r) {
        http_set_cancel(rw->r, NULL, NULL);
        if (rw->status == 200) {
            http_respond(rw->r, 200, "application/json", rw->text, rw->len);
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
    free(rw->layout);
    free(rw);
}

static void h_solution(struct http_req *r, void *ctx)
{
    struct lcnd *d = ctx;
    struct job *j = job_of(r, d);
    if (!j)
        return not_found(r);
    int terminal = job_state_terminal(j->pub.state);
    if (!terminal && !j->ckpt) {
        http_respond_error(r, 409, "no_solution", NULL, "no validated layout exists yet (state %s)",
                           job_state_name(j->pub.state));
        return;
    }
    struct render_work *rw = xcalloc(1, sizeof *rw);
    rw->w.data = rw;
    rw->d = d;
    rw->r = r;
    rw->id = j->id;
    rw->final = terminal;
    if (!terminal && j->req) {
        rw->req = j->req;
        j->req->refs++;
        size_t bytes = sizeof *j->ckpt * (size_t)j->pub.n;
        rw->layout = xmalloc(bytes + 1);
        memcpy(rw->layout, j->ckpt, bytes);
        rw->obj = j->ckpt_obj;
        rw->elapsed_s = j->ckpt_elapsed_s;
        rw->final = 0;
    }
    http_set_cancel(r, render_cancel, rw);
    http_suspend(r);
    uv_queue_work(d->loop, &rw->w, render_run, render_done);
}

/* ------------------------------------------------------------ DELETE */

static void h_delete(struct http_req *r, void *ctx)
{
    struct lcnd *d = ctx;
    struct job *j = job_of(r, d);
    if (!j)
        return not_found(r);
    if (job_state_terminal(j->pub.state))
        return respond_status(r, 200, j);
    if (d->stopping && j->run) {
        http_respond_error(r, 503, "shutting_down", NULL, "the daemon is stopping");
        return;
    }
    if (!lcnd_store_healthy(d)) {
        /* nothing can be made durable now; an earlier request to cancel
         * that already is will complete */
        if (j->pub.cancel_requested)
            return respond_status(r, 202, j);
        return store_unavailable(r, "the job store is unhealthy: the job was not cancelled");
    }
    jobs_cancel(d, j);
    wait_for(r, j, WAIT_TERMINAL);
}

/* ------------------------------------------------------------ service */

static void h_healthz(struct http_req *r, void *ctx)
{
    (void)ctx;
    http_respond_json(r, 200, json_pack("{s:s}", "status", "ok"));
}

static const char *gpu_state(struct lcnd *d)
{
    if (d->gpu_unhealthy)
        return "unhealthy";
    for (int i = 0; i < d->pool.n; i++)
        if (d->pool.w[i].kind == WORKER_GPU)
            return "ok";
    return "absent";
}

static void h_readyz(struct http_req *r, void *ctx)
{
    struct lcnd *d = ctx;
    int store_ok = lcnd_store_healthy(d);
    const char *gpu = gpu_state(d);
    int ready = d->ready && !d->stopping && store_ok && strcmp(gpu, "unhealthy");
    json_t *j = json_pack("{s:b, s:s, s:s}", "ready", ready, "store", store_ok ? "ok" : "unhealthy",
                          "gpu", gpu);
    if (d->stopping)
        json_object_set_new(j, "stopping", json_true());
    http_respond_json(r, ready ? 200 : 503, j);
}

static void h_version(struct http_req *r, void *ctx)
{
    struct lcnd *d = ctx;
    json_t *b = json_array();
    int gpu = 0, cpu = 0;
    for (int i = 0; i < d->pool.n; i++) {
        gpu |= d->pool.w[i].kind == WORKER_GPU;
        cpu |= d->pool.w[i].kind == WORKER_CPU;
    }
    if (cpu)
        json_array_append_new(b, json_string("cpu"));
    if (gpu)
        json_array_append_new(b, json_string("gpu"));
#ifdef LCN_HAVE_CUDA
    int cuda = 1;
#else
    int cuda = 0;
#endif
    http_respond_json(r, 200,
                      json_pack("{s:s, s:s, s:b, s:o}", "version", LCND_VERSION, "commit",
                                lcn_build_commit, "cuda", cuda, "backends", b));
}

static void h_metrics(struct http_req *r, void *ctx)
{
    struct lcnd *d = ctx;
    struct sbuf b = {0};
    sb_puts(&b, "# HELP lcn_jobs Jobs in the store by state.\n# TYPE lcn_jobs gauge\n");
    for (int s = 0; s < JOB_STATE_COUNT; s++)
        sb_printf(&b, "lcn_jobs{state=\"%s\"} %lld\n", job_state_name(s),
                  (long long)d->jobs.by_state[s]);
    int64_t depth = 0;
    for (struct job *j = d->jobs.qhead; j; j = j->qnext)
        depth++;
    sb_printf(&b,
              "# HELP lcn_queue_depth Jobs waiting for a worker.\n# TYPE lcn_queue_depth gauge\n"
              "lcn_queue_depth %lld\n",
              (long long)depth);
    sb_printf(&b,
              "# HELP lcn_running_jobs Jobs a worker is running.\n# TYPE lcn_running_jobs gauge\n"
              "lcn_running_jobs %lld\n",
              (long long)d->jobs.running);
    sb_printf(&b,
              "# HELP lcn_evaluations_total Candidate positions evaluated by engines since start.\n"
              "# TYPE lcn_evaluations_total counter\nlcn_evaluations_total %llu\n",
              (unsigned long long)d->evaluations_total);
    sb_printf(&b,
              "# HELP lcn_jobs_submitted_total Jobs accepted since start.\n"
              "# TYPE lcn_jobs_submitted_total counter\nlcn_jobs_submitted_total %llu\n",
              (unsigned long long)d->jobs_submitted);
    sb_puts(&b, "# HELP lcn_http_responses_total HTTP responses by status code.\n"
                "# TYPE lcn_http_responses_total counter\n");
    for (int c = 100; c < 600; c++) {
        uint64_t n = http_responses(d->http, c);
        if (n)
            sb_printf(&b, "lcn_http_responses_total{code=\"%d\"} %llu\n", c, (unsigned long long)n);
    }
    uint64_t gmem = d->engine.gpu_memory_bytes ? d->engine.gpu_memory_bytes(d) : 0;
    sb_printf(&b,
              "# HELP lcn_gpu_memory_bytes Device memory held by lcnd.\n"
              "# TYPE lcn_gpu_memory_bytes gauge\nlcn_gpu_memory_bytes %llu\n",
              (unsigned long long)gmem);
    int busy[2] = {0, 0}, all[2] = {0, 0};
    for (int i = 0; i < d->pool.n; i++) {
        all[d->pool.w[i].kind]++;
        busy[d->pool.w[i].kind] += d->pool.w[i].busy;
    }
    sb_printf(
        &b,
        "# HELP lcn_workers Engine workers by kind and state.\n# TYPE lcn_workers gauge\n"
        "lcn_workers{kind=\"cpu\",state=\"busy\"} %d\nlcn_workers{kind=\"cpu\",state=\"idle\"} %d\n"
        "lcn_workers{kind=\"gpu\",state=\"busy\"} %d\nlcn_workers{kind=\"gpu\",state=\"idle\"} "
        "%d\n",
        busy[0], all[0] - busy[0], busy[1], all[1] - busy[1]);
    sb_printf(&b,
              "# HELP lcn_sse_streams Open progress streams.\n# TYPE lcn_sse_streams gauge\n"
              "lcn_sse_streams %lld\n",
              (long long)d->n_streams);
    sb_printf(&b,
              "# HELP lcn_store_healthy 1 while the job store commits.\n"
              "# TYPE lcn_store_healthy gauge\nlcn_store_healthy %d\n",
              lcnd_store_healthy(d));
    sb_printf(&b,
              "# HELP lcn_store_commits_total Store transactions committed.\n"
              "# TYPE lcn_store_commits_total counter\nlcn_store_commits_total %llu\n",
              (unsigned long long)d->sq.batches);
    sb_printf(&b,
              "# HELP lcn_build_info Build identity.\n# TYPE lcn_build_info gauge\n"
              "lcn_build_info{version=\"%s\",commit=\"%s\"} 1\n",
              LCND_VERSION, lcn_build_commit);
    http_respond(r, 200, "text/plain; version=0.0.4; charset=utf-8", b.p, b.len);
}

/* ------------------------------------------------------------ the table */

const struct http_route api_routes[] = {
    {"POST", "/jobs", h_post_jobs, HTTP_BODY},
    {"GET", "/jobs", h_list_jobs, 0},
    {"GET", "/jobs/{id}", h_get_job, 0},
    {"DELETE", "/jobs/{id}", h_delete, 0},
    {"GET", "/jobs/{id}/progress", h_progress, 0},
    {"GET", "/jobs/{id}/solution", h_solution, 0},
    {"GET", "/healthz", h_healthz, HTTP_NO_AUTH},
    {"GET", "/readyz", h_readyz, 0},
    {"GET", "/metrics", h_metrics, 0},
    {"GET", "/version", h_version, 0},
};
const size_t api_route_count = LCN_ARRAY_LEN(api_routes);
