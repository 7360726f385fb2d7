/*
 * http.h - lcnctl's HTTP client (libcurl): plain requests and event streams
 * against one lcnd server.
 *
 * The server is "--server URL" when given, else $LCN_SERVER, else
 * LCNHTTP_DEFAULT_SERVER (lcnd's default listen address, config/lcnd.conf).
 * A URL without a scheme gets "http://"; a trailing '/' is dropped; a path
 * prefix is kept (for a router that serves several daemons under paths).
 * The bearer token is $LCN_TOKEN, else the first line of the file named by
 * $LCN_TOKEN_FILE; without either no Authorization header is sent.
 *
 * One struct lcnhttp holds one curl handle, reused by every request so the
 * connection is kept alive. Not thread-safe: one thread per struct.
 * curl_global_init must have run (lcnctl's main does it).
 */
#ifndef LCN_CLIENTS_HTTP_H
#define LCN_CLIENTS_HTTP_H

#include <stddef.h>

#define LCNHTTP_DEFAULT_SERVER "http://127.0.0.1:8480"

struct lcnhttp {
    void *curl;  /* CURL * */
    char *base;  /* scheme://host:port[/prefix], without a trailing '/' */
    char *token; /* bearer token, or NULL */
    int retries; /* lcnhttp_request: answers 429 and 503 retried this often (0: none) */
};

/* A 429 or 503 is retried after its Retry-After seconds (an integer; this
 * many when it has none or another form), at most LCNHTTP_RETRY_MAX_S. */
#define LCNHTTP_RETRY_DEFAULT_S 5
#define LCNHTTP_RETRY_MAX_S     60

/* The largest answer body lcnhttp_request takes (past it the transfer is
 * cut and the call fails like an unreachable server, with err saying so):
 * a solution (a path ending in /solution) is at most the submitted graph
 * (max_body_bytes, at most 1 GiB) with its coordinates, every other lcnd
 * answer a few MiB (500 statuses, 1000 events). A server that sends more
 * is not lcnd, and lcnctl does not grow until memory runs out. Nor does
 * it wait for ever on a server that trickles: once an answer's header has
 * come, its body must arrive within 10 s plus its size at 64 KiB/s (lcnd
 * sends an answer from memory in one go); no byte at all for 60 s is a
 * stall, before the header too. */
#define LCNHTTP_MAX_ANSWER   ((size_t)64 << 20)
#define LCNHTTP_MAX_SOLUTION ((size_t)2 << 30)

/* A response. status is 0 when no response arrived (err says why). */
struct lcnhttp_resp {
    long status;
    char *body; /* malloc'd and NUL-terminated; len is the exact byte count */
    size_t len;
    char content_type[128];
    char retry_after[32];
    int sse;     /* lcnhttp_stream only: the body was an event stream (passed to on_data) */
    int stopped; /* lcnhttp_stream only: a callback asked to stop */
    char err[512];
};

/*
 * Sets up h for server (NULL: $LCN_SERVER or the default). Returns 0, or
 * LCN_EINVAL with a message in err when the URL is not http(s) or the token
 * file cannot be read.
 */
int lcnhttp_init(struct lcnhttp *h, const char *server, char *err, size_t errlen);
void lcnhttp_release(struct lcnhttp *h);

/*
 * Sends METHOD base+path with an optional JSON body (body may be NULL) and
 * waits for the whole response. Returns 0 when a response arrived (any
 * status; r owns the body), or LCN_EIO when none did (r->err: "cannot reach
 * URL: reason"). Release r with lcnhttp_resp_release either way.
 * A 429 or 503 answer is sent again up to h->retries times, each after
 * the wait its Retry-After asks for (bounded, see LCNHTTP_RETRY_MAX_S),
 * with a note on standard error ("lcnctl: HTTP 429 queue_full: retry 1 of
 * 3 in 5 s"); the API changes nothing on those answers, so a POST may be
 * sent again. r is then the last answer.
 */
int lcnhttp_request(struct lcnhttp *h, const char *method, const char *path, const char *body,
                    size_t len, struct lcnhttp_resp *r);

struct lcnhttp_stream {
    /* Body bytes of a 200 text/event-stream response; return nonzero to stop. */
    int (*on_data)(void *ctx, const char *p, size_t n);
    /* Called about every tick_ms while waiting, data or not; nonzero stops. */
    int (*on_tick)(void *ctx);
    void *ctx;
    int tick_ms;
    const char *last_event_id; /* sent as Last-Event-ID when not NULL */
};

/*
 * GET base+path with "Accept: text/event-stream". A 200 response whose
 * Content-Type is text/event-stream goes to s->on_data as it arrives
 * (r->sse = 1); any other response is collected in r->body. Returns 0 when
 * the response ended normally or a callback stopped it (r->stopped = 1), or
 * LCN_EIO when the connection failed or broke (r->status tells whether a
 * response had begun, r->err why).
 */
int lcnhttp_stream(struct lcnhttp *h, const char *path, const struct lcnhttp_stream *s,
                   struct lcnhttp_resp *r);

void lcnhttp_resp_release(struct lcnhttp_resp *r);

/* Closes every connection h keeps alive; the next request opens a new one.
 * For a client that waits for a server to come back: an idle connection it
 * held open could delay that server's shutdown. */
void lcnhttp_drop_connections(struct lcnhttp *h);

/* Percent-encodes s for a URL path segment or query value into a new string. */
char *lcnhttp_escape(const char *s);

#endif
