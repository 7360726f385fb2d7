/* Incremental text/event-stream parser (see sse.h). */
#include "clients/sse.h"

#include <stdlib.h>
#include <string.h>

static int buf_add(struct sbuf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > SSE_MAX_LINE)
        return -1;
    sbuf_add(b, s, n);
    return 0;
}

static void buf_set(struct sbuf *b, const char *s, size_t n)
{
    b->len = 0;
    buf_add(b, s, n); /* n is bounded by the line length, itself bounded */
}

void sse_init(struct sse_parser *p, void (*on_event)(void *ctx, const struct sse_event *ev),
              void *ctx)
{
    memset(p, 0, sizeof *p);
    p->on_event = on_event;
    p->ctx = ctx;
    buf_set(&p->id, "", 0);
    buf_set(&p->event, "", 0);
    buf_set(&p->data, "", 0);
    buf_set(&p->line, "", 0);
}

static void dispatch(struct sse_parser *p)
{
    if (p->have_data) {
        /* the data buffer holds every data line followed by '\n': drop the last one */
        size_t n = p->data.len;
        if (n && p->data.p[n - 1] == '\n')
            p->data.p[--n] = '\0';
        struct sse_event ev = {p->id.p, p->event.len ? p->event.p : "message", p->data.p, n};
        p->events++;
        p->on_event(p->ctx, &ev);
    }
    p->have_data = 0;
    p->data.len = 0;
    p->data.p[0] = '\0';
    p->event.len = 0;
    p->event.p[0] = '\0';
}

static void process_line(struct sse_parser *p, const char *s, size_t n)
{
    if (n == 0) {
        dispatch(p);
        return;
    }
    if (s[0] == ':')
        return; /* comment (lcnd's keepalives) */
    const char *colon = memchr(s, ':', n);
    size_t flen = colon ? (size_t)(colon - s) : n;
    const char *v = colon ? colon + 1 : s + n;
    size_t vlen = (size_t)(s + n - v);
    if (vlen && v[0] == ' ') {
        v++;
        vlen--;
    }
    if (flen == 4 && memcmp(s, "data", 4) == 0) {
        if (buf_add(&p->data, v, vlen) || buf_add(&p->data, "\n", 1))
            p->overflow = 1;
        p->have_data = 1;
    } else if (flen == 5 && memcmp(s, "event", 5) == 0) {
        buf_set(&p->event, v, vlen);
    } else if (flen == 2 && memcmp(s, "id", 2) == 0) {
        if (!memchr(v, '\0', vlen)) /* the standard ignores ids holding NUL */
            buf_set(&p->id, v, vlen);
    }
}

void sse_feed(struct sse_parser *p, const char *buf, size_t len)
{
    size_t i = 0;
    while (i < len && !p->overflow) {
        if (p->last_cr && buf[i] == '\n') {
            /* the LF of a CRLF whose CR ended the previous line */
            p->last_cr = 0;
            i++;
            continue;
        }
        p->last_cr = 0;
        size_t j = i;
        while (j < len && buf[j] != '\n' && buf[j] != '\r')
            j++;
        if (j > i && buf_add(&p->line, buf + i, j - i)) {
            p->overflow = 1;
            return;
        }
        if (j == len)
            return; /* the line continues in the next chunk */
        p->last_cr = buf[j] == '\r';
        process_line(p, p->line.p, p->line.len);
        p->line.len = 0;
        p->line.p[0] = '\0';
        i = j + 1;
    }
}

void sse_release(struct sse_parser *p)
{
    free(p->line.p);
    free(p->data.p);
    free(p->event.p);
    free(p->id.p);
    memset(p, 0, sizeof *p);
}
