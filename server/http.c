#include "server/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "err.h"
#include "server/cors.h"
#include "server/log.h"
#include "util.h"

#define MAX_PARAMS  4
#define MAX_HEADERS 6

struct http_server {
    uv_loop_t *loop;
    struct MHD_Daemon *d;
    struct http_config cfg;
    char *token;
    size_t token_len;
    struct cors cors;
    uv_poll_t poll;
    uv_timer_t timer;      /* follows MHD_get_timeout; arm() owns it */
    uv_timer_t stop_timer; /* the stop deadline; nothing else touches it */
    uv_timer_t tick;       /* once a second: the header sweep, and a run */
    int in_run, rerun;
    struct http_conn *conns; /* every open connection (doubly linked) */
    size_t n_conns;
    size_t n_cut; /* of them, shut down by us and not yet closed by MHD */
    /* the connections waiting for a request header, oldest first (each
     * joins at the tail when it starts waiting, so since_ns ascends) */
    struct http_conn *wait_head, *wait_tail;
    unsigned reserve;         /* slots kept free by eviction; 0: no eviction */
    unsigned closed_in_run;   /* connections MHD closed during this run */
    uint64_t header_timeouts; /* connections cut by the header timeout */
    uint64_t evictions;       /* connections cut to keep the reserve free */
    int64_t evict_logged_ns;  /* when evicting was last logged */
    int64_t limit_logged_ns;  /* when reaching max_connections was last logged */
    int64_t log_window_ns;    /* MHD's messages: the window's start, */
    unsigned log_count;       /* how many it wrote, */
    uint64_t log_dropped;     /* and how many it did not */
    int quiesced, stopping, cut;
    struct http_req *live; /* every request in progress (doubly linked) */
    size_t n_live;
    size_t body_bytes;   /* request bodies held by live requests (max_body_total) */
    size_t answer_bytes; /* answers held by live requests until read (max_body_total too) */
    struct http_req *susp; /* suspended requests (doubly linked) */
    size_t n_susp;
    uint64_t codes[600];
    void (*on_closed)(void *);
    void *closed_arg;
    int64_t stop_deadline_ns;
    int handles_open;
};

struct hdr {
    char *name, *value;
};

/* One TCP connection, MHD's socket context: counted so that a run that
 * closed one is followed by another (see drive), and timed while it waits
 * for a request header. */
struct http_conn {
    struct MHD_Connection *c;
    int64_t since_ns; /* opened, or its last request completed */
    int waiting;      /* for a request header, since since_ns (in the wait list) */
    int cut;          /* shut down by us (header_sweep, evict); MHD closes it */
    struct http_conn *prev, *next;
    struct http_conn *wprev, *wnext; /* the server's wait list */
};

struct http_req {
    struct http_server *s;
    struct MHD_Connection *conn;
    char method[16];
    char *path;
    const struct http_route *route;
    char *params[MAX_PARAMS];
    int64_t received_ns;
    /* body */
    char *body;
    size_t len, cap;
    size_t held;        /* body bytes counted in s->body_bytes until req_free */
    size_t held_answer; /* answer bytes counted in s->answer_bytes until req_free */
    int body_refused; /* 413 (past max_body) or 503 (past max_body_total): the body was dropped */
    int no_body;      /* 413: a body on a route without HTTP_BODY */
    /* early answer decided on the first call */
    int early_status;
    const char *early_why; /* 400: what is wrong with the framing */
    char allow[64];        /* 405: the methods the path has */
    int open;              /* the path is one of a route served without auth */
    const char *cors;      /* the request's Origin when allowed (s->cors owns it), or NULL */
    int preflight;         /* a CORS preflight (OPTIONS) */
    int close;             /* the answer says "Connection: close" */
    /* answer */
    int dispatched;
    int has_resp;
    int resp_status;
    char *resp_type;
    char *resp_body;
    size_t resp_len;
    struct hdr hdrs[MAX_HEADERS];
    int n_hdrs;
    int queued;
    /* deferral */
    int want_suspend;
    int suspended;
    struct http_req *sprev, *snext;
    struct http_req *lprev, *lnext; /* the server's live list */
    void (*cancel_fn)(void *, struct http_req *);
    void *cancel_arg;
    /* stream */
    http_stream_read rd;
    http_stream_close cl;
    void *stream_arg;
    int is_stream;
    int stream_end; /* forced end (shutdown) */
};

/* ---------------------------------------------------------------- listen */

static int addr_is_loopback(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    }
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr))
            return 1;
        if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr))
            return in6->sin6_addr.s6_addr[12] == 127;
    }
    return 0;
}

int http_listen(const char *hostport, int *fd, char *bound, size_t boundlen, int *loopback,
                char *err, size_t errlen)
{
    char host[256], port[16];
    const char *colon;
    *fd = -1;
    if (hostport[0] == '[') {
        const char *close = strchr(hostport, ']');
        if (!close || close[1] != ':' || (size_t)(close - hostport - 1) >= sizeof host) {
            lcn_errmsg(err, errlen, "listen: '%s' is not [ADDR]:PORT", hostport);
            return LCN_EINVAL;
        }
        memcpy(host, hostport + 1, (size_t)(close - hostport - 1));
        host[close - hostport - 1] = 0;
        colon = close + 1;
    } else {
        colon = strrchr(hostport, ':');
        if (!colon || (size_t)(colon - hostport) >= sizeof host || colon == hostport) {
            lcn_errmsg(err, errlen, "listen: '%s' is not HOST:PORT", hostport);
            return LCN_EINVAL;
        }
        memcpy(host, hostport, (size_t)(colon - hostport));
        host[colon - hostport] = 0;
    }
    char *end;
    long p = strtol(colon + 1, &end, 10);
    if (!colon[1] || *end || p < 0 || p > 65535) {
        lcn_errmsg(err, errlen, "listen: bad port in '%s'", hostport);
        return LCN_EINVAL;
    }
    snprintf(port, sizeof port, "%ld", p);
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    int gai = getaddrinfo(host, port, &hints, &res);
    if (gai) {
        lcn_errmsg(err, errlen, "listen: %s: %s", host, gai_strerror(gai));
        return LCN_EINVAL;
    }
    int rc = LCN_EIO, s = -1;
    char why[128] = "no address";
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        s = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (s < 0) {
            snprintf(why, sizeof why, "%s", strerror(errno));
            continue;
        }
        int one = 1;
        setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(s, ai->ai_addr, ai->ai_addrlen) == 0 && listen(s, 511) == 0) {
            *loopback = addr_is_loopback(ai->ai_addr);
            rc = 0;
            break;
        }
        snprintf(why, sizeof why, "%s", strerror(errno));
        close(s);
        s = -1;
    }
    freeaddrinfo(res);
    if (rc) {
        lcn_errmsg(err, errlen, "listen on %s: %s", hostport, why);
        return rc;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(s, (struct sockaddr *)&ss, &sl);
    char ab[INET6_ADDRSTRLEN] = "?";
    int bport = 0;
    if (ss.ss_family == AF_INET) {
        struct sockaddr_in *in = (struct sockaddr_in *)&ss;
        inet_ntop(AF_INET, &in->sin_addr, ab, sizeof ab);
        bport = ntohs(in->sin_port);
        snprintf(bound, boundlen, "%s:%d", ab, bport);
    } else {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
        inet_ntop(AF_INET6, &in6->sin6_addr, ab, sizeof ab);
        bport = ntohs(in6->sin6_port);
        snprintf(bound, boundlen, "[%s]:%d", ab, bport);
    }
    *fd = s;
    return 0;
}

/* ---------------------------------------------------------------- driving */

static void on_timer(uv_timer_t *t);

static void arm(struct http_server *s)
{
    if (!s->d)
        return;
    MHD_UNSIGNED_LONG_LONG to = 0;
    if (s->rerun) {
        s->rerun = 0;
        uv_timer_start(&s->timer, on_timer, 0, 0);
    } else if (MHD_get_timeout(s->d, &to) == MHD_YES) {
        uv_timer_start(&s->timer, on_timer, to > 60000 ? 60000 : (uint64_t)to, 0);
    } else {
        uv_timer_stop(&s->timer);
    }
}

static void stop_check(struct http_server *s);
static unsigned evict(struct http_server *s);

/* Every MHD_run goes through here: a request completes, a connection
 * closes or a suspended one resumes only inside MHD_run, so checking the
 * stop condition after each run sees every change it depends on. */
static void drive(struct http_server *s)
{
    if (!s->d)
        return;
    s->in_run = 1;
    s->closed_in_run = 0;
    MHD_run(s->d);
    s->in_run = 0;
    /* the run may have accepted connections: keep the reserve free */
    if (evict(s))
        s->rerun = 1;
    /* At max_connections MHD takes its listening socket out of its epoll
     * set, and puts it back only at the start of a later run once a
     * connection has closed. Nothing would start that run: the epoll
     * descriptor does not become readable for connections waiting in the
     * backlog (the listening socket is not in the set), and MHD asks for
     * no timeout when no connection is left. So a run that closed a
     * connection is followed by another at once. */
    if (s->closed_in_run)
        s->rerun = 1;
    arm(s);
    if (s->stopping)
        stop_check(s);
}

static void schedule_run(struct http_server *s)
{
    if (s->in_run)
        s->rerun = 1;
    else
        uv_timer_start(&s->timer, on_timer, 0, 0);
}

static void on_timer(uv_timer_t *t)
{
    drive(t->data);
}

static void on_poll(uv_poll_t *p, int status, int events)
{
    struct http_server *s = p->data;
    (void)status;
    (void)events;
    drive(s);
}

static void header_sweep(struct http_server *s);
static void log_window(struct http_server *s, int64_t now);

/* Once a second: the header sweep, and a run whatever MHD asks for, so
 * that MHD serves its listening socket again within a second after
 * anything else that made it drop the socket (accept failing for want of
 * descriptors). */
static void on_tick(uv_timer_t *t)
{
    struct http_server *s = t->data;
    log_window(s, lcn_now_ns());
    header_sweep(s);
    drive(s);
}

/* ---------------------------------------------------------------- connections */

/* k starts waiting for a request header now: it joins the wait list at
 * the tail, which keeps the list in the order of since_ns. */
static void wait_begin(struct http_server *s, struct http_conn *k, int64_t now)
{
    if (k->waiting || k->cut)
        return;
    k->since_ns = now;
    k->waiting = 1;
    LCN_QUEUE_PUSH_BACK(s->wait_head, s->wait_tail, k, wprev, wnext);
}

static void wait_end(struct http_server *s, struct http_conn *k)
{
    LCN_QUEUE_REMOVE(s->wait_head, s->wait_tail, k, wprev, wnext, k->waiting);
}

/*
 * Closes a connection from outside MHD. MHD has no call for that, so the
 * socket is shut down; that wakes MHD's epoll set, MHD's read sees the end
 * and MHD closes the connection as if the client had, in this run or the
 * next (it frees the connection, and NOTIFY_CLOSED frees k, then). Until
 * then k stays on the connection list, marked cut and off the wait list,
 * and counts in n_cut. Returns 0 when MHD has no descriptor for it.
 */
static int conn_cut(struct http_server *s, struct http_conn *k)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(k->c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci)
        return 0;
    shutdown(ci->connect_fd, SHUT_RDWR);
    wait_end(s, k);
    k->cut = 1;
    s->n_cut++;
    return 1;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    struct http_server *s = cls;
    struct http_conn *k = *socket_context;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        k = xcalloc(1, sizeof *k);
        k->c = c;
        wait_begin(s, k, lcn_now_ns());
        LCN_DLIST_PUSH(s->conns, k, prev, next);
        s->n_conns++;
        *socket_context = k;
        /* with eviction the limit is a passing state while older
         * connections wait for a header (evict cuts them after this run);
         * it lasts only when every other connection is busy */
        if (s->n_conns >= s->cfg.max_connections && (!s->reserve || s->wait_head == k) &&
            (!s->limit_logged_ns || k->since_ns - s->limit_logged_ns > 60 * 1000000000LL)) {
            log_warn("http: %zu connections open (max_connections): new ones wait in the listen "
                     "backlog until one closes",
                     s->n_conns);
            s->limit_logged_ns = k->since_ns;
        }
    } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED && k) {
        wait_end(s, k);
        LCN_DLIST_UNLINK(s->conns, k, prev, next);
        s->n_conns--;
        if (k->cut)
            s->n_cut--;
        s->closed_in_run++;
        free(k);
        *socket_context = NULL;
    }
}

static struct http_conn *conn_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/* 1 when all the peer sent has been read and it has closed its side (or
 * reset the connection): a peek finds the end. */
static int peer_closed(MHD_socket fd)
{
    char c;
    ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/*
 * The sweep, once a second, over the connections waiting for a request
 * header; it closes two kinds:
 *
 * - Those past header_timeout_s. MHD's connection timeout counts idle time
 *   only, so a client that sends one header byte every few seconds
 *   (slowloris) would hold its connection for as long as it likes, and
 *   enough such clients every slot. A connection gets header_timeout_s to
 *   send a complete header from its opening or from its previous answer
 *   (which bounds idle keep-alive connections too).
 * - Those whose peer has closed. A client that sends part of a header and
 *   closes while its connection waits in the backlog leaves both in the
 *   socket: MHD reads the bytes in one short read and, its epoll set being
 *   edge-triggered, never reads again, so it never sees the end and the
 *   connection holds its slot until a timeout (at max_connections, after a
 *   slowloris from many addresses, every slot for header_timeout_s). Each
 *   waiting connection is checked with a peek (one system call a second);
 *   once its peer has closed, the header can never complete.
 *
 * MHD has no call to close a connection, so the socket is shut down; that
 * wakes MHD's epoll set, MHD's read sees the end and MHD closes the
 * connection as if the client had.
 */
static void header_sweep(struct http_server *s)
{
    if (!s->d)
        return;
    int64_t now = lcn_now_ns();
    int64_t expired =
        s->cfg.header_timeout_s ? now - (int64_t)s->cfg.header_timeout_s * 1000000000LL : INT64_MIN;
    struct http_conn *next;
    for (struct http_conn *k = s->wait_head; k; k = next) {
        next = k->wnext; /* conn_cut takes k off the wait list */
        if (k->since_ns > expired) {
            const union MHD_ConnectionInfo *ci =
                MHD_get_connection_info(k->c, MHD_CONNECTION_INFO_CONNECTION_FD);
            if (!ci || !peer_closed(ci->connect_fd))
                continue;
            conn_cut(s, k);
        } else if (conn_cut(s, k)) {
            s->header_timeouts++;
        }
    }
}

/*
 * Eviction, after every MHD_run (the runs that accept connections among
 * them). With the configured reserve R, at most max_connections - R
 * connections are kept that are not already being closed: past that, the
 * connections that have waited longest for a complete request header are
 * cut, oldest first, until R slots are free again, or no connection waits
 * for a header. So idle or slow connections from any number of addresses
 * cannot fill every slot: MHD keeps accepting, a new client's request is
 * read in the run that accepts it (MHD reads a new connection at once),
 * and its connection then has a request in progress and is never cut.
 * Connections with a request in progress, an answer being sent, a
 * suspended request or a stream are not waiting and are never evicted;
 * idle keep-alive ones are (they wait for their next header).
 *
 * The price: while the daemon is saturated, a client that has not yet
 * delivered a complete header (a legitimate but very slow one, or a new
 * one whose header is still on its way while every older connection is
 * busy) may be cut without an answer. Nothing is evicted while stopping
 * (no connection is accepted any more). Logged at most once a minute.
 */
static unsigned evict(struct http_server *s)
{
    if (!s->d || !s->reserve || s->quiesced)
        return 0;
    size_t keep = s->cfg.max_connections - s->reserve;
    unsigned n = 0;
    while (s->n_conns - s->n_cut > keep && s->wait_head) {
        struct http_conn *k = s->wait_head;
        if (!conn_cut(s, k)) {
            wait_end(s, k); /* no descriptor: leave it to MHD */
            continue;
        }
        s->evictions++;
        n++;
    }
    if (n) {
        int64_t now = lcn_now_ns();
        if (!s->evict_logged_ns || now - s->evict_logged_ns > 60 * 1000000000LL) {
            log_warn("http: %zu connections open (max_connections %u): closing those that have "
                     "waited longest for a request header, to keep %u slots free (%llu so far)",
                     s->n_conns, s->cfg.max_connections, s->reserve,
                     (unsigned long long)s->evictions);
            s->evict_logged_ns = now;
        }
    }
    return n;
}

/* ---------------------------------------------------------------- requests */

static void susp_add(struct http_req *r)
{
    struct http_server *s = r->s;
    r->suspended = 1;
    LCN_DLIST_PUSH(s->susp, r, sprev, snext);
    s->n_susp++;
}

static void susp_del(struct http_req *r)
{
    struct http_server *s = r->s;
    if (!r->suspended)
        return;
    LCN_DLIST_UNLINK(s->susp, r, sprev, snext);
    r->suspended = 0;
    r->sprev = r->snext = NULL;
    s->n_susp--;
}

static void resume(struct http_req *r)
{
    if (!r->suspended)
        return;
    susp_del(r);
    MHD_resume_connection(r->conn);
    schedule_run(r->s);
}

static void req_free(struct http_req *r)
{
    struct http_server *s = r->s;
    susp_del(r);
    LCN_DLIST_UNLINK(s->live, r, lprev, lnext);
    s->n_live--;
    s->body_bytes -= r->held;
    s->answer_bytes -= r->held_answer;
    if (r->is_stream && r->cl)
        r->cl(r->stream_arg);
    free(r->path);
    for (int i = 0; i < MAX_PARAMS; i++)
        free(r->params[i]);
    free(r->body);
    free(r->resp_type);
    free(r->resp_body);
    for (int i = 0; i < r->n_hdrs; i++) {
        free(r->hdrs[i].name);
        free(r->hdrs[i].value);
    }
    free(r);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)toe;
    struct http_req *r = *con_cls;
    *con_cls = NULL;
    if (r)
        req_free(r);
    struct http_conn *k = conn_of(c);
    if (k)
        wait_begin(cls, k, lcn_now_ns());
}

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    struct http_req *r = cls;
    if (r->stream_end)
        return MHD_CONTENT_READER_END_OF_STREAM;
    ssize_t n = r->rd(r->stream_arg, buf, max);
    if (n == HTTP_STREAM_END)
        return MHD_CONTENT_READER_END_OF_STREAM;
    if (n == HTTP_STREAM_WAIT) {
        MHD_suspend_connection(r->conn);
        susp_add(r);
        return 0;
    }
    return n;
}

/* The CORS headers of an answer (none while CORS is off). */
static void cors_headers(const struct http_req *r, struct MHD_Response *resp)
{
    if (!r->s->cors.n)
        return;
    MHD_add_response_header(resp, "Vary", "Origin"); /* the answer depends on it */
    if (!r->cors)
        return;
    MHD_add_response_header(resp, "Access-Control-Allow-Origin", r->cors);
    if (r->preflight) {
        MHD_add_response_header(resp, "Access-Control-Allow-Methods", CORS_ALLOW_METHODS);
        MHD_add_response_header(resp, "Access-Control-Allow-Headers", CORS_ALLOW_HEADERS);
        MHD_add_response_header(resp, "Access-Control-Max-Age", CORS_MAX_AGE_S);
    } else {
        MHD_add_response_header(resp, "Access-Control-Expose-Headers", CORS_EXPOSE_HEADERS);
    }
}

static enum MHD_Result queue_resp(struct http_req *r)
{
    struct MHD_Response *resp;
    if (r->is_stream) {
        resp =
            MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, stream_reader, r, NULL);
        /* HEAD (http_respond_stream): no chunked coding, and so the end of
         * the connection ends the (empty) body, as for an HTTP/1.0 GET */
        if (resp && !strcmp(r->method, "HEAD"))
            MHD_set_response_options(resp, MHD_RF_HTTP_1_0_COMPATIBLE_STRICT, MHD_RO_END);
    } else {
        resp = MHD_create_response_from_buffer(r->resp_len, r->resp_body ? r->resp_body : "",
                                               r->resp_body ? MHD_RESPMEM_MUST_FREE
                                                            : MHD_RESPMEM_PERSISTENT);
        if (resp)
            r->resp_body = NULL; /* MHD frees it now */
    }
    if (!resp)
        return MHD_NO;
    if (r->resp_type)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r->resp_type);
    for (int i = 0; i < r->n_hdrs; i++)
        MHD_add_response_header(resp, r->hdrs[i].name, r->hdrs[i].value);
    cors_headers(r, resp);
    /* while stopping, the client should not send more on this connection;
     * after a framing error, nothing more it sends can be trusted */
    if (r->s->stopping || r->close)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result rc = MHD_queue_response(r->conn, (unsigned)r->resp_status, resp);
    MHD_destroy_response(resp);
    r->queued = 1;
    if (r->resp_status >= 100 && r->resp_status < 600)
        r->s->codes[r->resp_status]++;
    if (r->s->cfg.on_answer)
        r->s->cfg.on_answer(r->s->cfg.ctx, r->route, r->method, lcn_now_ns() - r->received_ns);
    return rc;
}

/* ---------------------------------------------------------------- decoding */

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/*
 * MHD's unescaper (%HH decoded, anything else kept), except that %00 stays
 * as it is. A NUL in a decoded path or argument cuts the C string short:
 * "/jobs/<id>%00xyz" named job <id>, and "/jobs/%00" the job list. Left
 * encoded it matches no route and no id, so such paths answer 404 and such
 * arguments 400.
 */
static size_t unescape(void *cls, struct MHD_Connection *c, char *s)
{
    (void)cls;
    (void)c;
    char *w = s;
    const char *p = s;
    while (*p) {
        int hi, lo;
        if (p[0] == '%' && (hi = hexval(p[1])) >= 0 && (lo = hexval(p[2])) >= 0 && (hi | lo)) {
            *w++ = (char)(hi << 4 | lo);
            p += 3;
        } else {
            *w++ = *p++;
        }
    }
    *w = 0;
    return (size_t)(w - s);
}

/* Length of the well-formed UTF-8 sequence at p (1 to 4 bytes), or 0:
 * stray continuation bytes, truncated sequences, overlong forms, surrogates
 * and code points past U+10FFFF are not (jansson refuses them all). */
static size_t utf8_seq(const unsigned char *p)
{
    unsigned cp, min;
    size_t n;
    if (p[0] < 0x80)
        return 1;
    if ((p[0] & 0xe0) == 0xc0)
        n = 2, cp = p[0] & 0x1fu, min = 0x80;
    else if ((p[0] & 0xf0) == 0xe0)
        n = 3, cp = p[0] & 0x0fu, min = 0x800;
    else if ((p[0] & 0xf8) == 0xf0)
        n = 4, cp = p[0] & 0x07u, min = 0x10000;
    else
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80) /* the terminating NUL stops here too */
            return 0;
        cp = cp << 6 | (p[i] & 0x3fu);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

static int utf8_valid(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        size_t n = utf8_seq(p);
        if (!n)
            return 0;
        p += n;
    }
    return 1;
}

/* Replaces every byte that is not part of well-formed UTF-8 with '?', so
 * that an error message quoting what the client sent (or cut in the middle
 * of a character by a %.40s) can always be sent as JSON. */
static void utf8_scrub(char *s)
{
    unsigned char *p = (unsigned char *)s;
    while (*p) {
        size_t n = utf8_seq(p);
        if (n) {
            p += n;
        } else {
            *p++ = '?';
        }
    }
}

/* ---------------------------------------------------------------- routing */

/* Splits path into at most max segments (the caller frees them); -1, with
 * nothing to free, when there are more. */
static int split_path(const char *path, char **seg, int max)
{
    int n = 0;
    const char *p = path;
    while (*p == '/')
        p++;
    while (*p) {
        if (n == max) {
            while (n)
                free(seg[--n]);
            return -1;
        }
        const char *e = strchr(p, '/');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        seg[n] = xmalloc(len + 1);
        memcpy(seg[n], p, len);
        seg[n][len] = 0;
        n++;
        p += len;
        while (*p == '/')
            p++;
    }
    return n;
}

/* Matches pattern against the path segments; fills params. Returns 1 on a
 * match. */
static int match(const char *pattern, char **seg, int nseg, char **params)
{
    char *pseg[16];
    int np = split_path(pattern, pseg, 16), ok = np == nseg, ip = 0;
    for (int i = 0; i < np; i++) {
        if (ok) {
            if (pseg[i][0] == '{') {
                if (ip < MAX_PARAMS)
                    params[ip++] = seg[i];
            } else if (strcmp(pseg[i], seg[i])) {
                ok = 0;
            }
        }
        free(pseg[i]);
    }
    return ok;
}

static void route(struct http_req *r)
{
    struct http_server *s = r->s;
    char *seg[16];
    if (!utf8_valid(r->path)) { /* no route has such a path */
        r->early_status = 404;
        return;
    }
    int nseg = split_path(r->path, seg, 16);
    char *allow = r->allow;
    size_t cap = sizeof r->allow;
    const char *m = !strcmp(r->method, "HEAD") ? "GET" : r->method;
    int path_found = 0;
    for (size_t i = 0; nseg >= 0 && i < s->cfg.n_routes; i++) {
        const struct http_route *rt = &s->cfg.routes[i];
        char *params[MAX_PARAMS] = {0};
        if (!match(rt->pattern, seg, nseg, params))
            continue;
        path_found = 1;
        if (rt->flags & HTTP_NO_AUTH)
            r->open = 1;
        if (!strcmp(rt->method, m)) {
            r->route = rt;
            for (int k = 0; k < MAX_PARAMS; k++)
                r->params[k] = params[k] ? xstrdup(params[k]) : NULL;
            break;
        }
        if (!strstr(allow, rt->method)) {
            if (*allow)
                strncat(allow, ", ", cap - strlen(allow) - 1);
            strncat(allow, rt->method, cap - strlen(allow) - 1);
        }
    }
    for (int i = 0; i < nseg; i++)
        free(seg[i]);
    if (r->route)
        return;
    if (path_found) {
        if (strstr(allow, "GET"))
            strncat(allow, ", HEAD", cap - strlen(allow) - 1);
        r->early_status = 405;
    } else {
        r->early_status = 404;
    }
}

/*
 * Strict framing. MHD takes the first of several Content-Length headers and
 * lets Transfer-Encoding win over Content-Length, while a proxy in front
 * may pick another: the rest of the body would then be read as a second
 * request that the proxy never saw (request smuggling). A transfer coding
 * other than chunked makes MHD read the body until the client closes. So a
 * request with more than one Content-Length or Transfer-Encoding, both, a
 * Content-Length that is not a plain number, a coding other than "chunked"
 * or a header name that is not a token (a blank, a control, a byte past
 * ASCII) gets 400 and the connection is closed: its body is never read and
 * nothing after it is taken for a request.
 */
struct framing {
    int n_cl, n_te, bad;
    const char *why;
};

/* The bytes of a header name (RFC 9110 section 5.6.2, tchar). */
#define HTTP_TCHARS "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

static enum MHD_Result framing_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                      const char *value)
{
    struct framing *f = cls;
    (void)kind;
    if (key[strspn(key, HTTP_TCHARS)]) {
        /* "Content-Length : 5" (or with a vertical tab, a NBSP, ...): MHD
         * keeps the byte in the name, so that neither it nor the checks
         * below see a length, while a proxy that trims it as a blank does
         * (RFC 9112 section 5.1: 400) */
        f->bad = 1;
        f->why = "a header name that is not a token";
    } else if (!strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH)) {
        f->n_cl++;
        size_t n = value ? strspn(value, "0123456789") : 0;
        if (!n || value[n] || n > 19) {
            f->bad = 1;
            f->why = "Content-Length is not a number";
        }
    } else if (!strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING)) {
        f->n_te++;
        if (!value || strcasecmp(value, "chunked")) {
            f->bad = 1;
            f->why = "the only transfer coding accepted is chunked";
        }
    } else if (!strncasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH, 14) ||
               !strncasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING, 17)) {
        /* "Content-Length: 37\r\n 0": MHD 0.9.75 appends a folded line to
         * the name ("Content-Length0"), so no length is seen, while a proxy
         * that unfolds it (RFC 9112 section 5.2) reads one */
        f->bad = 1;
        f->why = "a folded Content-Length or Transfer-Encoding";
    }
    return MHD_YES;
}

/* NULL when the request's framing is unambiguous, else what is wrong. */
static const char *framing_error(struct MHD_Connection *c)
{
    struct framing f = {0};
    MHD_get_connection_values(c, MHD_HEADER_KIND, framing_header, &f);
    if (f.n_cl > 1)
        return "more than one Content-Length";
    if (f.n_te > 1)
        return "more than one Transfer-Encoding";
    if (f.n_cl && f.n_te)
        return "both Content-Length and Transfer-Encoding";
    return f.bad ? f.why : NULL;
}

/* Auth comes before routing: without the token every path but the open
 * ones (/healthz) answers 401, whether or not it exists and whatever the
 * method, so that routes cannot be enumerated (404 / 405 / Allow would
 * tell). route() has only matched the path, answering nothing yet. */
static int auth_ok(struct http_req *r)
{
    struct http_server *s = r->s;
    if (!s->token || r->open)
        return 1;
    const char *h = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Authorization");
    if (!h || strncasecmp(h, "Bearer ", 7))
        return 0;
    h += 7;
    while (*h == ' ')
        h++;
    size_t n = strlen(h);
    while (n && (h[n - 1] == ' ' || h[n - 1] == '\t'))
        n--;
    /* compare in time independent of where the first difference is */
    unsigned char diff = (unsigned char)(n != s->token_len);
    for (size_t i = 0; i < s->token_len; i++)
        diff |= (unsigned char)(s->token[i] ^ (i < n ? h[i] : 0));
    return diff == 0;
}

static void early_answer(struct http_req *r)
{
    switch (r->early_status) {
    case 400:
        http_respond_error(r, 400, "bad_request", NULL, "ambiguous request framing: %s",
                           r->early_why);
        break;
    case 401:
        http_add_header(r, "WWW-Authenticate", "Bearer");
        http_respond_error(r, 401, "unauthorized", NULL, "missing or wrong bearer token");
        break;
    case 404:
        http_respond_error(r, 404, "not_found", NULL, "no route for %s", r->path);
        break;
    case 405:
        http_add_header(r, "Allow", r->allow);
        http_respond_error(r, 405, "method_not_allowed", NULL, "%s is not allowed on %s", r->method,
                           r->path);
        break;
    case 413:
        if (r->no_body)
            http_respond_error(r, 413, "too_large", NULL, "%s %s takes no request body", r->method,
                               r->path);
        else
            http_respond_error(r, 413, "too_large", NULL, "request body is larger than %zu bytes",
                               r->s->cfg.max_body);
        break;
    case 503:
        http_add_header(r, "Retry-After", "1");
        http_respond_error(r, 503, "busy", NULL,
                           "request bodies held by the server would exceed %zu bytes "
                           "(max_body_total_bytes); retry",
                           r->s->cfg.max_body_total);
        break;
    default:
        http_respond_error(r, 500, "internal", NULL, "bad early status %d", r->early_status);
    }
}

/* Whether n more body bytes would take the bodies held by every live request
 * (buffered, or handed to a handler and not yet answered) past
 * max_body_total: the bound on what concurrent uploads can make the daemon
 * hold, since max_body bounds one request only. 0: no bound. */
static int body_budget_spent(const struct http_server *s, size_t n)
{
    return s->cfg.max_body_total && s->body_bytes + n > s->cfg.max_body_total;
}

/*
 * The body a routed request announces: past max_body, 413 before it is
 * read; on a route without HTTP_BODY, any body (Content-Length above 0, or
 * chunked) is 413 too, unread, and the connection closes. Taken and held
 * against max_body_total, such bodies let a client without the token
 * (GET /healthz, GET /) make every POST /jobs of the others 503 busy.
 */
static void body_check(struct http_req *r)
{
    struct MHD_Connection *c = r->conn;
    const char *cl =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    unsigned long long n = cl ? strtoull(cl, NULL, 10) : 0;
    if (n > r->s->cfg.max_body) {
        r->early_status = 413;
    } else if (!(r->route->flags & HTTP_BODY) &&
               (n || MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                 MHD_HTTP_HEADER_TRANSFER_ENCODING))) {
        r->early_status = 413;
        r->no_body = 1;
        r->close = 1;
    }
}

/*
 * The path of a request target: an absolute-form target ("http://host/jobs",
 * which RFC 9112 section 3.2.2 says a server must accept) is answered as its
 * origin form ("/jobs"; "/" when it names no path). Other targets as given.
 */
static const char *origin_form(const char *url)
{
    size_t n = 0;
    if (!strncasecmp(url, "http://", 7))
        n = 7;
    else if (!strncasecmp(url, "https://", 8))
        n = 8;
    if (!n)
        return url;
    const char *p = strchr(url + n, '/');
    return p ? p : "/";
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *c, const char *url,
                                 const char *method, const char *version, const char *upload_data,
                                 size_t *upload_data_size, void **con_cls)
{
    (void)version;
    struct http_server *s = cls;
    struct http_req *r = *con_cls;
    if (!r) {
        r = xcalloc(1, sizeof *r);
        r->s = s;
        r->conn = c;
        r->received_ns = lcn_now_ns();
        snprintf(r->method, sizeof r->method, "%s", method);
        r->path = xstrdup(origin_form(url));
        LCN_DLIST_PUSH(s->live, r, lprev, lnext);
        s->n_live++;
        *con_cls = r;
        struct http_conn *k = conn_of(c);
        if (k)
            wait_end(s, k); /* the header is complete */
        /* every answer to an allowed Origin says so, errors included */
        if (s->cors.n)
            r->cors =
                cors_match(&s->cors, MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin"));
        if ((r->early_why = framing_error(c))) {
            r->early_status = 400;
            r->close = 1;
            early_answer(r);
            return queue_resp(r);
        }
        if (s->cors.n && !strcmp(r->method, "OPTIONS")) {
            r->preflight = 1;
            http_respond(r, 204, NULL, NULL, 0);
            return queue_resp(r);
        }
        route(r);
        if (!auth_ok(r))
            r->early_status = 401;
        if (!r->early_status)
            body_check(r);
        if (r->early_status) {
            early_answer(r);
            return queue_resp(r);
        }
        return MHD_YES;
    }
    if (r->has_resp && !r->queued)
        return queue_resp(r);
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (r->body_refused)
            return MHD_YES;
        if (r->len + n > s->cfg.max_body || body_budget_spent(s, n)) {
            r->body_refused = r->len + n > s->cfg.max_body ? 413 : 503;
            free(r->body);
            r->body = NULL;
            r->len = r->cap = 0;
            s->body_bytes -= r->held;
            r->held = 0;
            return MHD_YES;
        }
        xgrow((void **)&r->body, 1, &r->cap, r->len + n + 1);
        memcpy(r->body + r->len, upload_data, n);
        r->len += n;
        r->held += n;
        s->body_bytes += n;
        r->body[r->len] = 0;
        return MHD_YES;
    }
    if (r->body_refused) {
        r->early_status = r->body_refused;
        early_answer(r);
        return queue_resp(r);
    }
    if (!r->dispatched) {
        r->dispatched = 1;
        if (!r->body) {
            r->body = xmalloc(1);
            r->body[0] = 0;
        }
        if (s->cut) {
            /* past the stop deadline nothing may wait any more */
            http_respond_error(r, 503, "shutting_down", NULL, "the daemon is stopping");
            return queue_resp(r);
        }
        r->route->fn(r, s->cfg.ctx);
        if (r->has_resp)
            return queue_resp(r);
        if (r->want_suspend) {
            MHD_suspend_connection(c);
            susp_add(r);
            return MHD_YES;
        }
        http_respond_error(r, 500, "internal", NULL, "handler for %s %s gave no answer", r->method,
                           r->path);
        return queue_resp(r);
    }
    /* resumed without an answer (should not happen): wait again, unless
     * the stop deadline has passed */
    if (!r->has_resp && s->cut)
        http_respond_error(r, 503, "shutting_down", NULL, "the daemon is stopping");
    if (!r->has_resp) {
        MHD_suspend_connection(c);
        susp_add(r);
        return MHD_YES;
    }
    return queue_resp(r);
}

/* A client can make MHD complain once per connection (refused at a limit,
 * gone in the middle of a header), so MHD's messages are rate-limited:
 * LOG_BURST per window, then one line that counts the rest. */
#define LOG_BURST     10
#define LOG_WINDOW_NS (10 * 1000000000LL)

static void log_window(struct http_server *s, int64_t now)
{
    if (now - s->log_window_ns < LOG_WINDOW_NS)
        return;
    if (s->log_dropped)
        log_warn("http: %llu more libmicrohttpd messages in %lld s not logged",
                 (unsigned long long)s->log_dropped, (long long)(LOG_WINDOW_NS / 1000000000LL));
    s->log_dropped = 0;
    s->log_count = 0;
    s->log_window_ns = now;
}

static void mhd_logger(void *cls, const char *fm, va_list ap)
{
    struct http_server *s = cls;
    log_window(s, lcn_now_ns());
    if (s->log_count >= LOG_BURST) {
        s->log_dropped++;
        return;
    }
    s->log_count++;
    char buf[512];
    vsnprintf(buf, sizeof buf, fm, ap);
    size_t n = strlen(buf);
    while (n && buf[n - 1] == '\n')
        buf[--n] = 0;
    log_warn("http: %s", buf);
}

/* Descriptors the daemon needs besides its connections: the store's
 * connections, the log, epoll, libuv's own, a margin for accept. */
#define FD_RESERVE 64

/*
 * Each connection holds a descriptor. When accept fails for want of them,
 * MHD drops its listening socket until a connection closes (the 1 s tick
 * runs MHD again), so a limit below max_connections caps the connections
 * at a lower number than the one configured, and quietly: the reserve
 * (evict) then never comes into play, and idle connections lock every
 * client out until their header timeout. The soft limit is raised to what
 * max_connections needs, up to the hard limit; with a hard limit too low
 * (systemd: LimitNOFILE), max_connections is lowered to what it allows.
 * Returns the connections to serve.
 */
static unsigned raise_fd_limit(unsigned max_connections)
{
    struct rlimit rl;
    rlim_t want = (rlim_t)max_connections + FD_RESERVE;
    if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= want)
        return max_connections;
    rlim_t to = rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want ? rl.rlim_max : want;
    if (to > rl.rlim_cur) {
        rl.rlim_cur = to;
        if (!setrlimit(RLIMIT_NOFILE, &rl))
            log_info("http: open-file limit raised to %llu for max_connections %u",
                     (unsigned long long)to, max_connections);
    }
    if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= want)
        return max_connections;
    unsigned fit = rl.rlim_cur > FD_RESERVE + 4 ? (unsigned)(rl.rlim_cur - FD_RESERVE) : 4;
    log_warn("http: max_connections %u needs about %llu descriptors, but the open-file limit is "
             "%llu: max_connections lowered to %u",
             max_connections, (unsigned long long)want, (unsigned long long)rl.rlim_cur, fit);
    return fit;
}

int http_start(struct http_server **out, uv_loop_t *loop, const struct http_config *cfg, char *err,
               size_t errlen)
{
    struct http_server *s = xcalloc(1, sizeof *s);
    s->loop = loop;
    s->cfg = *cfg;
    s->cfg.max_connections = raise_fd_limit(cfg->max_connections);
    /* at most a quarter of the slots: small limits keep most of theirs */
    s->reserve = cfg->connection_reserve < s->cfg.max_connections / 4 ? cfg->connection_reserve
                                                                      : s->cfg.max_connections / 4;
    if (cors_init(&s->cors, cfg->allowed_origins, err, errlen)) {
        free(s);
        return LCN_EINVAL;
    }
    if (cfg->token && *cfg->token) {
        s->token = xstrdup(cfg->token);
        s->token_len = strlen(s->token);
    }
    s->cfg.token = NULL; /* the caller's string may go (a SIGHUP reload): s->token is the copy */
    s->d = MHD_start_daemon(
        MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG, 0, NULL, NULL, on_access, s,
        MHD_OPTION_EXTERNAL_LOGGER, mhd_logger, s, MHD_OPTION_LISTEN_SOCKET,
        (MHD_socket)cfg->listen_fd, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, s, MHD_OPTION_UNESCAPE_CALLBACK, unescape, s,
        MHD_OPTION_CONNECTION_LIMIT, s->cfg.max_connections, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
        cfg->max_connections_per_ip, MHD_OPTION_CONNECTION_TIMEOUT, cfg->connection_timeout_s,
        MHD_OPTION_END);
    if (!s->d) {
        lcn_errmsg(err, errlen, "cannot start the HTTP server (libmicrohttpd)");
        cors_release(&s->cors);
        free(s->token);
        free(s);
        return LCN_EIO;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_EPOLL_FD);
    if (!info) {
        lcn_errmsg(err, errlen, "libmicrohttpd has no epoll descriptor");
        MHD_stop_daemon(s->d);
        cors_release(&s->cors);
        free(s->token);
        free(s);
        return LCN_EIO;
    }
    uv_poll_init(loop, &s->poll, info->epoll_fd);
    s->poll.data = s;
    uv_poll_start(&s->poll, UV_READABLE, on_poll);
    uv_timer_init(loop, &s->timer);
    s->timer.data = s;
    uv_timer_init(loop, &s->stop_timer);
    s->stop_timer.data = s;
    uv_timer_init(loop, &s->tick);
    s->tick.data = s;
    uv_timer_start(&s->tick, on_tick, 1000, 1000);
    s->handles_open = 4;
    arm(s);
    *out = s;
    return 0;
}

void http_set_token(struct http_server *s, const char *token)
{
    if (!s->token || !token || !*token)
        return;
    free(s->token);
    s->token = xstrdup(token);
    s->token_len = strlen(s->token);
}

void http_quiesce(struct http_server *s)
{
    if (s->quiesced || !s->d)
        return;
    s->quiesced = 1;
    MHD_socket fd = MHD_quiesce_daemon(s->d);
    if (fd != MHD_INVALID_SOCKET)
        close(fd);
}

size_t http_suspended_count(const struct http_server *s)
{
    return s->n_susp;
}

size_t http_live_count(const struct http_server *s)
{
    return s->n_live;
}

size_t http_connection_count(const struct http_server *s)
{
    return s->n_conns;
}

uint64_t http_header_timeouts(const struct http_server *s)
{
    return s->header_timeouts;
}

uint64_t http_evictions(const struct http_server *s)
{
    return s->evictions;
}

static void on_handle_closed(uv_handle_t *h)
{
    struct http_server *s = h->data;
    if (--s->handles_open == 0) {
        void (*cb)(void *) = s->on_closed;
        void *arg = s->closed_arg;
        cors_release(&s->cors);
        free(s->token);
        free(s);
        if (cb)
            cb(arg);
    }
}

/* Ends what waits: suspended streams end, and suspended requests without
 * an answer get 503 (their cancel hooks run first, so that their owners
 * forget them). With all_streams, streams that are sending end too. */
static void end_waiting(struct http_server *s, int all_streams)
{
    for (struct http_req *r = s->live; r; r = r->lnext) {
        if (r->is_stream) {
            if (all_streams || r->suspended) {
                r->stream_end = 1;
                resume(r);
            }
        } else if (r->suspended && !r->has_resp) {
            if (r->cancel_fn)
                r->cancel_fn(r->cancel_arg, r);
            r->cancel_fn = NULL;
            if (!r->has_resp)
                http_respond_error(r, 503, "shutting_down", NULL, "the daemon is stopping");
        }
    }
}

static void on_stop_timer(uv_timer_t *t)
{
    drive(t->data);
}

/*
 * The stop condition, checked after every MHD_run while stopping and when
 * the stop deadline passes. MHD is stopped once no request is in progress
 * (MHD reports a request complete only when its whole answer has been
 * handed to the socket) or at the deadline, whichever comes first.
 * Connections without a request, such as idle keep-alive ones, do not
 * count: closing them loses nothing, and a client may hold them open for
 * as long as it likes, so waiting for them would let any client stall the
 * shutdown. MHD_stop_daemon closes every connection still open.
 */
static void stop_check(struct http_server *s)
{
    if (!s->d || s->in_run)
        return;
    int64_t now = lcn_now_ns();
    if (s->n_live && now < s->stop_deadline_ns) {
        /* a request completes inside a later MHD_run (which checks
         * again), or this timer fires at the deadline; it is started
         * from here, after every run, so that a timer that fires a little
         * early (libuv counts from its cached loop time) starts again */
        uint64_t ms = (uint64_t)((s->stop_deadline_ns - now + 999999) / 1000000);
        uv_timer_start(&s->stop_timer, on_stop_timer, ms, 0);
        return;
    }
    if (s->n_live) {
        /* the deadline passed: end every stream and answer whatever waits,
         * then one more run takes the resumed connections off MHD's
         * suspended list (MHD_stop_daemon must find none there) and sends
         * what the sockets take. Nothing suspends again: with cut set, new
         * requests are answered 503 and every stream reads as ended. */
        s->cut = 1;
        end_waiting(s, 1);
        s->in_run = 1;
        MHD_run(s->d);
        s->in_run = 0;
        if (s->n_susp) {
            log_error("http: %zu request(s) still suspended at the stop deadline", s->n_susp);
            uv_timer_start(&s->stop_timer, on_stop_timer, 10, 0);
            return;
        }
    }
    uv_timer_stop(&s->timer);
    uv_timer_stop(&s->stop_timer);
    uv_timer_stop(&s->tick);
    uv_poll_stop(&s->poll);
    MHD_stop_daemon(s->d);
    s->d = NULL;
    uv_close((uv_handle_t *)&s->poll, on_handle_closed);
    uv_close((uv_handle_t *)&s->timer, on_handle_closed);
    uv_close((uv_handle_t *)&s->stop_timer, on_handle_closed);
    uv_close((uv_handle_t *)&s->tick, on_handle_closed);
}

void http_stop(struct http_server *s, int64_t deadline_ns, void (*on_closed)(void *), void *arg)
{
    s->stopping = 1;
    s->on_closed = on_closed;
    s->closed_arg = arg;
    s->stop_deadline_ns = deadline_ns;
    http_quiesce(s);
    end_waiting(s, 0);
    if (s->in_run)
        schedule_run(s);
    else
        drive(s);
}

uint64_t http_responses(const struct http_server *s, int code)
{
    return code >= 100 && code < 600 ? s->codes[code] : 0;
}

/* ---------------------------------------------------------------- accessors */

const char *http_method(const struct http_req *r)
{
    return r->method;
}

const char *http_path(const struct http_req *r)
{
    return r->path;
}

const char *http_param(const struct http_req *r, int i)
{
    return i >= 0 && i < MAX_PARAMS ? r->params[i] : NULL;
}

const char *http_query(const struct http_req *r, const char *key)
{
    return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, key);
}

struct query_count {
    const char *key;
    unsigned n;
};

static enum MHD_Result count_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                 const char *value)
{
    struct query_count *q = cls;
    (void)kind;
    (void)value;
    q->n += key && !strcmp(key, q->key);
    return MHD_YES;
}

unsigned http_query_count(const struct http_req *r, const char *key)
{
    struct query_count q = {key, 0};
    MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, count_arg, &q);
    return q.n;
}

const char *http_header(const struct http_req *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

const char *http_body(const struct http_req *r, size_t *len)
{
    if (len)
        *len = r->len;
    return r->body ? r->body : "";
}

char *http_take_body(struct http_req *r, size_t *len)
{
    char *b = r->body;
    if (!b) {
        b = xmalloc(1);
        b[0] = 0;
    }
    if (len)
        *len = r->len;
    r->body = NULL;
    r->len = r->cap = 0;
    return b;
}

int64_t http_received_ns(const struct http_req *r)
{
    return r->received_ns;
}

struct http_server *http_server_of(const struct http_req *r)
{
    return r->s;
}

/* ---------------------------------------------------------------- answers */

void http_add_header(struct http_req *r, const char *name, const char *value)
{
    if (r->n_hdrs >= MAX_HEADERS || r->has_resp)
        return;
    r->hdrs[r->n_hdrs].name = xstrdup(name);
    r->hdrs[r->n_hdrs].value = xstrdup(value);
    r->n_hdrs++;
}

void http_respond_copy(struct http_req *r, int status, const char *content_type, const char *bytes,
                       size_t len)
{
    char *body = xmalloc(len + 1);
    memcpy(body, bytes, len);
    body[len] = 0;
    http_respond(r, status, content_type, body, len);
}

void http_respond(struct http_req *r, int status, const char *content_type, char *body, size_t len)
{
    if (r->has_resp) {
        free(body);
        return;
    }
    r->has_resp = 1;
    r->resp_status = status;
    r->resp_type = content_type ? xstrdup(content_type) : NULL;
    r->resp_body = body;
    r->resp_len = body ? len : 0;
    /* held until the request completes: MHD keeps the answer until the
     * client has read it (a client that never reads, for ever) */
    r->held_answer += r->resp_len;
    r->s->answer_bytes += r->resp_len;
    r->want_suspend = 0;
    r->cancel_fn = NULL;
    resume(r);
}

void http_respond_json(struct http_req *r, int status, json_t *j)
{
    char *s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(12));
    json_decref(j);
    if (!s) {
        http_respond_error(r, 500, "internal", NULL, "cannot serialise the answer");
        return;
    }
    size_t n = strlen(s);
    char *b = xmalloc(n + 2);
    memcpy(b, s, n);
    b[n] = '\n';
    b[n + 1] = 0;
    free(s);
    http_respond(r, status, "application/json", b, n + 1);
}

void http_respond_error(struct http_req *r, int status, const char *code, const char *field,
                        const char *fm, ...)
{
    char msg[512], fld[128];
    va_list ap;
    va_start(ap, fm);
    vsnprintf(msg, sizeof msg, fm, ap);
    va_end(ap);
    utf8_scrub(msg);
    json_t *e = json_pack("{s:s, s:s}", "code", code, "message", msg);
    if (field && *field) {
        snprintf(fld, sizeof fld, "%s", field);
        utf8_scrub(fld);
        json_object_set_new(e, "field", json_string(fld));
    }
    http_respond_json(r, status, json_pack("{s:o}", "error", e));
}

int http_answer_budget_spent(const struct http_req *r, size_t len)
{
    const struct http_server *s = r->s;
    if (!s->cfg.max_body_total || len <= HTTP_SMALL_ANSWER)
        return 0;
    return s->answer_bytes > 0 && s->answer_bytes + len > s->cfg.max_body_total;
}

void http_suspend(struct http_req *r)
{
    if (!r->has_resp)
        r->want_suspend = 1;
}

void http_set_cancel(struct http_req *r, void (*fn)(void *arg, struct http_req *r), void *arg)
{
    r->cancel_fn = fn;
    r->cancel_arg = arg;
}

void http_respond_stream(struct http_req *r, const char *content_type, http_stream_read rd,
                         http_stream_close cl, void *arg)
{
    if (r->has_resp) {
        if (cl)
            cl(arg);
        return;
    }
    http_add_header(r, "Cache-Control", "no-cache");
    http_add_header(r, "X-Accel-Buffering", "no");
    if (!strcmp(r->method, "HEAD")) {
        /* the GET's header without "Content-Length: 0" (RFC 9110 8.6: a
         * HEAD answer's length is the GET's) and without a byte of body:
         * queue_resp answers it without chunked coding (libmicrohttpd
         * 0.9.75 writes the chunked terminator after a HEAD answer, which
         * the next answer on the connection would be read from) */
        if (cl)
            cl(arg);
        rd = NULL;
        cl = NULL;
        r->stream_end = 1;
    }
    r->is_stream = 1;
    r->rd = rd;
    r->cl = cl;
    r->stream_arg = arg;
    r->has_resp = 1;
    r->resp_status = 200;
    r->resp_type = xstrdup(content_type);
    r->want_suspend = 0;
    resume(r);
}

void http_stream_wake(struct http_req *r)
{
    if (r->is_stream && r->queued)
        resume(r);
}
