/*
 * http.h - the HTTP layer: libmicrohttpd driven by the libuv loop, a route
 * table, bearer-token auth, request bodies, deferred answers and streams.
 *
 * Concurrency design:
 *   MHD runs in "external" epoll mode: it owns one epoll descriptor, which
 *   the loop watches with a uv_poll; when it is readable, or when the
 *   timeout MHD asks for expires, the loop calls MHD_run. So every MHD
 *   callback (and so every route handler) runs on the loop thread, and the
 *   data handlers read (the job table) needs no lock. Nothing here is
 *   thread-safe: call everything from the loop thread.
 *
 * A request's life:
 *   1. headers arrive: ambiguous framing (two Content-Lengths, one with
 *      Transfer-Encoding, a coding other than chunked) is refused (400,
 *      connection closed); auth is checked before routing (401 for every
 *      path but those of HTTP_NO_AUTH routes, so that routes cannot be
 *      enumerated); then the route is matched (404 / 405 with Allow), a
 *      body larger than max_body (from Content-Length) is refused at once
 *      (413); routes without HTTP_BODY refuse any body (413, unread, the
 *      connection closed). %00 in the URL stays encoded and a path that is
 *      not UTF-8 matches no route;
 *   2. the body is collected (at most max_body bytes; a chunked body that
 *      grows past it is answered 413; past max_body_total bytes held by all
 *      live requests together (with the answers they hold: an answer is
 *      held until the request completes) the body is dropped and answered
 *      503 with Retry-After: 1);
 *   3. the handler runs. It answers now (http_respond*), or calls
 *      http_suspend and answers later from any loop callback (a store
 *      commit, a thread-pool job); the connection is suspended meanwhile,
 *      so a slow answer blocks nothing else;
 *   4. the request object is freed when MHD reports the request complete.
 * A streamed answer (SSE) pulls bytes from a read callback that MHD calls
 * when the socket can take more. The callback returns HTTP_STREAM_WAIT when
 * it has nothing to send: the connection is suspended (no busy polling)
 * until http_stream_wake. MHD cannot see a peer vanish while a connection
 * is suspended, so stream owners wake their streams at least every
 * heartbeat: the write that follows detects the dead peer and the request
 * completes, which frees it. A peer that stops reading fills its socket
 * buffer, MHD stops calling the read callback and the connection timeout
 * closes it; memory per stream stays bounded either way.
 *
 * Connection slots: MHD holds at most max_connections connections (more
 * wait in the listen backlog). Those that hold a slot without sending a
 * request are closed: once a second, those past header_timeout_s and
 * those whose peer has gone; and after every MHD_run, as soon as fewer
 * than connection_reserve slots are free, those that have waited longest
 * for a request header (eviction), so that idle or slow clients from any
 * number of addresses cannot keep a new client waiting. Connections with
 * a request in progress (streams and suspended ones included) are never
 * closed that way.
 *
 * CORS (allowed_origins, cors.h): off unless origins are configured. Then
 * an OPTIONS request on any path is a preflight, answered 204 before auth
 * and routing (browsers send preflights without credentials; answering
 * every path keeps the routes from being enumerated), and every answer to
 * a request whose Origin is allowed carries Access-Control-Allow-Origin.
 *
 * Stopping (http_stop) never depends on clients: MHD stops once no request
 * is in progress or at the caller's deadline, and closes the connections
 * left. The stop check runs after every MHD_run and from a timer of its
 * own, so the timer that follows MHD_get_timeout (re-armed by every run,
 * and stopped when MHD has no timeout) cannot lose it.
 */
#ifndef LCN_SERVER_HTTP_H
#define LCN_SERVER_HTTP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>
#include <uv.h>

struct http_server;
struct http_req;

typedef void (*http_handler)(struct http_req *r, void *ctx);

enum http_route_flags {
    HTTP_NO_AUTH = 1 << 0, /* served without a token (/healthz) */
    HTTP_BODY = 1 << 1,    /* the route takes a request body */
};

struct http_route {
    const char *method;  /* "GET", "POST", "DELETE" */
    const char *pattern; /* "/jobs/{id}/progress": {name} captures one path segment */
    http_handler fn;
    unsigned flags;
};

struct http_config {
    int listen_fd; /* a bound, listening socket (http_listen); MHD takes it over */
    size_t max_body;
    size_t max_body_total; /* bodies held by all live requests together; 0: no bound (503 past it) */
    unsigned max_connections;
    unsigned max_connections_per_ip; /* from one client address; 0: no limit */
    unsigned connection_timeout_s;   /* idle time within a request */
    unsigned header_timeout_s;       /* time to send a request header; 0: no limit */
    unsigned connection_reserve;     /* slots eviction keeps free (at most a quarter of
                                        max_connections); 0: no eviction */
    const char *token;               /* NULL or "": no auth */
    const char *allowed_origins;     /* CORS (cors.h); NULL or "": off */
    const struct http_route *routes;
    size_t n_routes;
    void *ctx; /* passed to handlers */
    /* NULL, or called with ctx as each answer is handed to MHD (streams:
     * as the stream starts): the route the request matched (NULL when
     * none did: 404, 405, a framing error), its method as sent, and the
     * time since its header arrived (http_received_ns). */
    void (*on_answer)(void *ctx, const struct http_route *route, const char *method,
                      int64_t latency_ns);
};

/*
 * Binds and listens on "HOST:PORT" ("[V6]:PORT" for IPv6; port 0 = any
 * free port). Fills *fd, the bound address in bound ("127.0.0.1:41234")
 * and *loopback (1 when every address it listens on is a loopback one).
 * Returns 0 or LCN_EINVAL / LCN_EIO with err filled.
 */
int http_listen(const char *hostport, int *fd, char *bound, size_t boundlen, int *loopback,
                char *err, size_t errlen);

/* Starts serving on the loop. Returns 0 or LCN_EIO with err filled. */
int http_start(struct http_server **out, uv_loop_t *loop, const struct http_config *cfg, char *err,
               size_t errlen);

/* Stops accepting connections (closes the listening socket); requests on
 * open connections are still served. */
void http_quiesce(struct http_server *s);

/* Replaces the bearer token (a copy is taken) for every request whose
 * header arrives from now on; one that has been checked keeps its answer.
 * A server started without a token stays without one (token NULL or "",
 * or one started without: no-op). */
void http_set_token(struct http_server *s, const char *token);

/* Number of requests currently suspended (deferred answers and idle
 * streams). */
size_t http_suspended_count(const struct http_server *s);

/* Number of requests in progress: headers received, answer not yet
 * handed to the socket completely (streams included). */
size_t http_live_count(const struct http_server *s);

/* 1 when an answer of len bytes would take the answers (not streams) that
 * live requests hold until their clients read them past max_body_total
 * (never with 0): a handler about to build a large answer (a solution, a
 * picture) refuses it with 503 busy instead of adding to them, since a
 * client that does not read would otherwise make the daemon hold any
 * number of them. Answers have this budget to themselves (request bodies
 * have theirs), one answer always passes when none is held, and answers of
 * at most HTTP_SMALL_ANSWER bytes always pass: what they can hold is
 * bounded by max_connections, and a stuck reader of a large picture cannot
 * keep small solutions from everyone else. */
#define HTTP_SMALL_ANSWER 65536
int http_answer_budget_spent(const struct http_req *r, size_t len);

/* Number of open connections (idle keep-alive ones included). */
size_t http_connection_count(const struct http_server *s);

/* Connections closed so far because they did not send a complete request
 * header within header_timeout_s. */
uint64_t http_header_timeouts(const struct http_server *s);

/* Connections closed so far while waiting for a request header to keep
 * connection_reserve slots free (eviction; see http.c). */
uint64_t http_evictions(const struct http_server *s);

/* Stops serving: closes the listening socket, ends suspended streams and
 * answers every suspended request with 503 shutting_down (their cancel
 * hooks run first; answers given from now on say "Connection: close").
 * MHD stops as soon as no request is in progress, or at deadline_ns
 * (lcn_now_ns() clock) at the latest: then every stream ends, whatever
 * still waits is answered 503, and every connection still open is closed,
 * idle keep-alive ones included, whatever the clients do. Then the loop
 * handles close and on_closed runs; the server object is freed then. */
void http_stop(struct http_server *s, int64_t deadline_ns, void (*on_closed)(void *), void *arg);

/* Responses sent so far with the given status code (100..599). */
uint64_t http_responses(const struct http_server *s, int code);

/* ---- request accessors (valid while the request lives) ---- */
const char *http_method(const struct http_req *r);
const char *http_path(const struct http_req *r);
/* The i-th {capture} of the route pattern, or NULL. */
const char *http_param(const struct http_req *r, int i);
/* A query argument, or NULL. */
const char *http_query(const struct http_req *r, const char *key);
/* How many times the query argument key was given (http_query returns the
 * first). */
unsigned http_query_count(const struct http_req *r, const char *key);
/* A request header (case-insensitive), or NULL. */
const char *http_header(const struct http_req *r, const char *name);
/* The collected body (NUL-terminated; *len without the NUL). */
const char *http_body(const struct http_req *r, size_t *len);
/* Takes the body away (malloc'd, NUL-terminated); the request keeps none. */
char *http_take_body(struct http_req *r, size_t *len);
/* lcn_now_ns() when the request's headers arrived. */
int64_t http_received_ns(const struct http_req *r);
struct http_server *http_server_of(const struct http_req *r);

/* ---- answers ---- */
/* Adds a header to the answer being built (before http_respond*). */
void http_add_header(struct http_req *r, const char *name, const char *value);
/* Sends status with body (malloc'd, taken over; may be NULL with len 0). */
void http_respond(struct http_req *r, int status, const char *content_type, char *body, size_t len);
/* Sends a copy of len bytes (static data: an embedded document). */
void http_respond_copy(struct http_req *r, int status, const char *content_type, const char *bytes,
                       size_t len);
/* Sends j (reference stolen) as compact JSON followed by a newline. */
void http_respond_json(struct http_req *r, int status, json_t *j);
/* Sends the error body {"error":{"code","message","field"}} (field may be
 * NULL or ""). */
void http_respond_error(struct http_req *r, int status, const char *code, const char *field,
                        const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Defers the answer: the handler returns without answering, and some later
 * loop callback calls http_respond* (which resumes the connection). */
void http_suspend(struct http_req *r);
/* Called if the server answers a suspended request by itself (shutdown),
 * before the request goes away: the owner must forget r. */
void http_set_cancel(struct http_req *r, void (*fn)(void *arg, struct http_req *r), void *arg);

/* ---- streams ---- */
#define HTTP_STREAM_WAIT ((ssize_t)0)
#define HTTP_STREAM_END  ((ssize_t)-1)
/* Fills buf with up to max bytes; returns the count, HTTP_STREAM_WAIT
 * (nothing now: the connection is suspended until http_stream_wake) or
 * HTTP_STREAM_END. */
typedef ssize_t (*http_stream_read)(void *arg, char *buf, size_t max);
/* Called once when the streamed request is finished (completed, or the
 * peer went away); the stream owner frees arg here. */
typedef void (*http_stream_close)(void *arg);
/* Starts a streamed 200 answer (chunked). A HEAD request gets the same
 * header without the chunked coding, nor a Content-Length, and the
 * connection closes after it: close runs at once and read never does. */
void http_respond_stream(struct http_req *r, const char *content_type, http_stream_read rd,
                         http_stream_close cl, void *arg);
/* Resumes a stream that returned HTTP_STREAM_WAIT (no-op otherwise). */
void http_stream_wake(struct http_req *r);

#endif
