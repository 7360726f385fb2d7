/*
 * sse.c - progress streams (sse.h has the design). MHD cannot see a peer
 * vanish while a connection is suspended, so the heartbeat wake-up is what
 * finds dead peers: the write fails, the answer completes, sse_close frees
 * the stream.
 */
#include "server/sse.h"

#include <stdlib.h>
#include <string.h>

#include "sbuf.h"
#include "util.h"
#include "server/watch.h"

struct sse {
    struct sse_hub *hub;
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

static void detach_job(struct sse *s)
{
    struct job *j = s->job;
    if (!j)
        return;
    LCN_DLIST_UNLINK(j->watch->streams, s, jprev, jnext);
    s->jprev = s->jnext = NULL;
    s->job = NULL;
    job_watch_put(j);
}

static void sse_close(void *arg)
{
    struct sse *s = arg;
    struct sse_hub *h = s->hub;
    detach_job(s);
    LCN_DLIST_UNLINK(h->all, s, gprev, gnext);
    h->n--;
    free(s->out.p);
    free(s);
}

struct fill {
    struct sse *s;
    int64_t upto;
    int n;
};

static void on_event(void *ctx, int64_t seq, const char *body)
{
    struct fill *f = ctx;
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
    sbuf_printf(&f->s->out, "id: %lld\nevent: %s\ndata: ", (long long)seq, type);
    sbuf_puts(&f->s->out, body);
    sbuf_puts(&f->s->out, "\n\n");
    f->s->cursor = seq;
    f->n++;
}

static ssize_t sse_read(void *arg, char *buf, size_t max)
{
    struct sse *s = arg;
    if (s->off == s->out.len) {
        s->out.len = 0;
        s->off = 0;
        if (s->end || !s->job)
            return HTTP_STREAM_END;
        struct job *j = s->job;
        struct fill f = {s, j->pub.progress_seq, 0};
        if (s->cursor < j->pub.progress_seq &&
            store_load_events(s->hub->store, j->id, s->cursor, 256, on_event, &f) < 0)
            return HTTP_STREAM_END;
        if (!f.n) {
            if (job_state_terminal(j->pub.state) && s->cursor >= j->pub.progress_seq)
                return HTTP_STREAM_END;
            if (lcn_now_ns() - s->last_ns < s->hub->heartbeat_ns)
                return HTTP_STREAM_WAIT;
            sbuf_puts(&s->out, ": keepalive\n\n");
        }
    }
    size_t n = LCN_MIN(max, s->out.len - s->off);
    memcpy(buf, s->out.p + s->off, n);
    s->off += n;
    s->last_ns = lcn_now_ns();
    return (ssize_t)n;
}

void sse_hub_init(struct sse_hub *h, struct store *store, double heartbeat_s)
{
    memset(h, 0, sizeof *h);
    h->store = store;
    h->heartbeat_ns = (int64_t)(heartbeat_s * 1e9);
}

void sse_start(struct sse_hub *h, struct http_req *r, struct job *j, int64_t after)
{
    struct sse *s = xcalloc(1, sizeof *s);
    struct job_watch *w = job_watch_get(j);
    s->hub = h;
    s->r = r;
    s->job = j;
    s->cursor = after;
    s->last_ns = lcn_now_ns();
    LCN_DLIST_PUSH(w->streams, s, jprev, jnext);
    LCN_DLIST_PUSH(h->all, s, gprev, gnext);
    h->n++;
    /* a comment first, so the client sees the stream open at once */
    sbuf_puts(&s->out, ": lcnd progress stream\n\n");
    http_respond_stream(r, "text/event-stream", sse_read, sse_close, s);
}

void sse_job_wake(struct job *j)
{
    if (!j->watch)
        return;
    for (struct sse *s = j->watch->streams; s; s = s->jnext)
        http_stream_wake(s->r);
}

void sse_job_end(struct job *j)
{
    while (j->watch && j->watch->streams) {
        struct sse *s = j->watch->streams;
        detach_job(s);
        http_stream_wake(s->r);
    }
}

void sse_heartbeat(struct sse_hub *h)
{
    int64_t now = lcn_now_ns();
    for (struct sse *s = h->all; s; s = s->gnext)
        if (now - s->last_ns >= h->heartbeat_ns)
            http_stream_wake(s->r);
}

void sse_shutdown(struct sse_hub *h)
{
    for (struct sse *s = h->all; s; s = s->gnext) {
        s->end = 1;
        http_stream_wake(s->r);
    }
}

int64_t sse_count(const struct sse_hub *h)
{
    return h->n;
}
