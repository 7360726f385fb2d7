/* The HTTP layer (http.c): MHD driven by a libuv loop, routing, auth, body
 * limits, deferred answers, streams and shutdown, exercised by libcurl
 * clients on other threads while the test thread runs the loop. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <uv.h>

#include "err.h"
#include "server/http.h"
#include "util.h"

#define TOKEN "0123456789abcdef-token"

struct srv {
    uv_loop_t loop;
    struct http_server *http;
    char bound[128];
    int closed;
    /* deferred answers and streams */
    struct http_req *pending[64];
    int n_pending;
    struct http_req *stream;
    int stream_step;
    int stream_closed;
    int other_streams_closed;
    uv_timer_t tick;
};

static void h_ping(struct http_req *r, void *ctx)
{
    (void)ctx;
    http_respond_json(r, 200, json_pack("{s:s}", "pong", http_method(r)));
}

static void h_echo(struct http_req *r, void *ctx)
{
    (void)ctx;
    size_t len;
    char *b = http_take_body(r, &len);
    http_respond(r, 200, "text/plain", b, len);
}

static void h_param(struct http_req *r, void *ctx)
{
    (void)ctx;
    const char *q = http_query(r, "q");
    http_respond_json(r, 200, json_pack("{s:s, s:s}", "id", http_param(r, 0), "q", q ? q : ""));
}

static void h_later(struct http_req *r, void *ctx)
{
    struct srv *s = ctx;
    s->pending[s->n_pending++] = r;
    http_suspend(r);
}

static int cancelled;
static void on_cancel(void *arg, struct http_req *r)
{
    (void)arg;
    (void)r;
    cancelled++;
}

static void h_never(struct http_req *r, void *ctx)
{
    (void)ctx;
    http_set_cancel(r, on_cancel, NULL);
    http_suspend(r);
}

static ssize_t stream_read(void *arg, char *buf, size_t max)
{
    struct srv *s = arg;
    (void)max;
    if (s->stream_step >= 6)
        return HTTP_STREAM_END;
    if (s->stream_step % 2 == 1) {
        return HTTP_STREAM_WAIT; /* the tick timer moves the step on */
    }
    buf[0] = (char)('a' + s->stream_step / 2);
    s->stream_step++;
    return 1;
}

static void stream_close(void *arg)
{
    struct srv *s = arg;
    s->stream_closed++;
    s->stream = NULL;
}

static void h_stream(struct http_req *r, void *ctx)
{
    struct srv *s = ctx;
    s->stream = r;
    s->stream_step = 0;
    http_respond_stream(r, "text/plain", stream_read, stream_close, s);
}

/* Side streams: one whose owner sends a byte and then never wakes it, and
 * one that always has more to send. */
struct side_stream {
    struct srv *s;
    int sent;
};

static ssize_t idle_read(void *arg, char *buf, size_t max)
{
    struct side_stream *st = arg;
    (void)max;
    if (st->sent)
        return HTTP_STREAM_WAIT;
    st->sent = 1;
    buf[0] = 'x';
    return 1;
}

static ssize_t flood_read(void *arg, char *buf, size_t max)
{
    (void)arg;
    memset(buf, 'f', max);
    return (ssize_t)max;
}

static void side_close(void *arg)
{
    struct side_stream *st = arg;
    st->s->other_streams_closed++;
    free(st);
}

static void h_idle_stream(struct http_req *r, void *ctx)
{
    struct side_stream *st = xcalloc(1, sizeof *st);
    st->s = ctx;
    http_respond_stream(r, "text/plain", idle_read, side_close, st);
}

static void h_flood(struct http_req *r, void *ctx)
{
    struct side_stream *st = xcalloc(1, sizeof *st);
    st->s = ctx;
    http_respond_stream(r, "text/plain", flood_read, side_close, st);
}

/* Most routes here are plain GETs: GET_ROUTE leaves the table showing
 * only the rows that differ (another method, a flag). */
#define GET_ROUTE(path, fn)                                                                        \
    {                                                                                              \
        "GET", (path), (fn), 0                                                                     \
    }
static const struct http_route routes[] = {
    GET_ROUTE("/ping", h_ping),
    {"GET", "/open", h_ping, HTTP_NO_AUTH},
    {"POST", "/echo", h_echo, HTTP_BODY},
    GET_ROUTE("/things/{id}", h_param),
    {"DELETE", "/things/{id}", h_param, 0},
    GET_ROUTE("/later", h_later),
    GET_ROUTE("/never", h_never),
    GET_ROUTE("/stream", h_stream),
    GET_ROUTE("/idle-stream", h_idle_stream),
    GET_ROUTE("/flood", h_flood),
};
#undef GET_ROUTE

static void on_tick(uv_timer_t *t)
{
    struct srv *s = t->data;
    for (int i = 0; i < s->n_pending; i++)
        http_respond_json(s->pending[i], 202, json_pack("{s:b}", "later", 1));
    s->n_pending = 0;
    if (s->stream && s->stream_step % 2 == 1) {
        s->stream_step++;
        http_stream_wake(s->stream);
    }
}

/* What a test may change in the server's configuration. */
struct srv_opts {
    const char *token;
    unsigned max_connections; /* 0: 64 */
    unsigned per_ip;
    unsigned header_timeout_s;
    unsigned connection_timeout_s; /* 0: 10 */
    unsigned reserve;              /* connection_reserve; 0: no eviction */
};

static void srv_start_opts(struct srv *s, const struct srv_opts *o)
{
    memset(s, 0, sizeof *s);
    uv_loop_init(&s->loop);
    int fd, loopback;
    char err[256];
    assert_int_equal(
        http_listen("127.0.0.1:0", &fd, s->bound, sizeof s->bound, &loopback, err, sizeof err), 0);
    assert_int_equal(loopback, 1);
    struct http_config hc = {
        .listen_fd = fd,
        .max_body = 1024,
        .max_connections = o->max_connections ? o->max_connections : 64,
        .max_connections_per_ip = o->per_ip,
        .connection_timeout_s = o->connection_timeout_s ? o->connection_timeout_s : 10,
        .header_timeout_s = o->header_timeout_s,
        .connection_reserve = o->reserve,
        .token = o->token,
        .routes = routes,
        .n_routes = LCN_ARRAY_LEN(routes),
        .ctx = s,
    };
    assert_int_equal(http_start(&s->http, &s->loop, &hc, err, sizeof err), 0);
    uv_timer_init(&s->loop, &s->tick);
    s->tick.data = s;
    uv_timer_start(&s->tick, on_tick, 20, 20);
}

static void srv_start(struct srv *s, const char *token)
{
    struct srv_opts o = {.token = token};
    srv_start_opts(s, &o);
}

static void on_closed(void *arg)
{
    ((struct srv *)arg)->closed = 1;
}

static void srv_stop(struct srv *s)
{
    http_stop(s->http, lcn_now_ns() + 30 * 1000000000LL, on_closed, s);
    uv_close((uv_handle_t *)&s->tick, NULL);
    uv_run(&s->loop, UV_RUN_DEFAULT);
    assert_int_equal(s->closed, 1);
    assert_int_equal(uv_loop_close(&s->loop), 0);
}

/* ---- client side (runs on its own thread) ---- */

struct call {
    const char *bound;
    const char *method;
    const char *path;
    const char *auth;
    const char *body;
    size_t body_len;
    int chunked;
    long status;
    char out[4096];
    size_t out_len;
    char allow[128];
    int conn_close; /* the answer said "Connection: close" */
    int done;
};

static size_t on_data(char *p, size_t sz, size_t n, void *ud)
{
    struct call *c = ud;
    size_t k = sz * n;
    size_t room = sizeof c->out - 1 - c->out_len;
    size_t take = k < room ? k : room;
    memcpy(c->out + c->out_len, p, take);
    c->out_len += take;
    c->out[c->out_len] = 0;
    return k;
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud)
{
    struct call *c = ud;
    size_t k = sz * n;
    if (k > 7 && !strncasecmp(p, "Allow: ", 7)) {
        size_t l = k - 7;
        while (l && (p[7 + l - 1] == '\r' || p[7 + l - 1] == '\n'))
            l--;
        if (l >= sizeof c->allow)
            l = sizeof c->allow - 1;
        memcpy(c->allow, p + 7, l);
        c->allow[l] = 0;
    }
    if (k >= 17 && !strncasecmp(p, "Connection: close", 17))
        c->conn_close = 1;
    return k;
}

static void perform(struct call *c)
{
    CURL *h = curl_easy_init();
    char url[512];
    snprintf(url, sizeof url, "http://%s%s", c->bound, c->path);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, c->method);
    if (!strcmp(c->method, "HEAD"))
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, c);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 20L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    struct curl_slist *hd = NULL;
    char a[200];
    if (c->auth) {
        snprintf(a, sizeof a, "Authorization: Bearer %s", c->auth);
        hd = curl_slist_append(hd, a);
    }
    if (c->body) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, c->body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)c->body_len);
        if (c->chunked)
            hd = curl_slist_append(hd, "Transfer-Encoding: chunked");
    }
    hd = curl_slist_append(hd, "Expect:");
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
    CURLcode rc = curl_easy_perform(h);
    if (rc == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &c->status);
    else
        c->status = -(long)rc;
    curl_slist_free_all(hd);
    curl_easy_cleanup(h);
}

/* n calls run by one client thread, which sets done once all are answered */
struct batch {
    struct call *calls;
    int n, done;
};

static void *client_main(void *arg)
{
    struct batch *b = arg;
    for (int i = 0; i < b->n; i++)
        perform(&b->calls[i]);
    __atomic_store_n(&b->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* Runs the calls on nthreads client threads while the loop serves them. */
static void run_calls(struct srv *s, struct call *calls, int n, int nthreads)
{
    pthread_t th[64];
    struct batch b[64];
    int per = (n + nthreads - 1) / nthreads;
    int used = 0;
    for (int t = 0; t < nthreads && t * per < n; t++, used++) {
        b[t].calls = calls + t * per;
        b[t].n = (t + 1) * per <= n ? per : n - t * per;
        b[t].done = 0;
        pthread_create(&th[t], NULL, client_main, &b[t]);
    }
    for (;;) {
        int all = 1;
        for (int t = 0; t < used; t++)
            all &= __atomic_load_n(&b[t].done, __ATOMIC_ACQUIRE);
        if (all)
            break;
        uv_run(&s->loop, UV_RUN_ONCE);
    }
    for (int t = 0; t < used; t++)
        pthread_join(th[t], NULL);
}

static struct call mk(const char *bound, const char *method, const char *path)
{
    struct call c;
    memset(&c, 0, sizeof c);
    c.bound = bound;
    c.method = method;
    c.path = path;
    return c;
}

static void test_routing(void **state)
{
    (void)state;
    struct srv s;
    srv_start(&s, NULL);
    struct call c[7];
    c[0] = mk(s.bound, "GET", "/ping");
    c[1] = mk(s.bound, "GET", "/nope");
    c[2] = mk(s.bound, "PUT", "/things/42");
    c[3] = mk(s.bound, "GET", "/things/42?q=hello%20world");
    c[4] = mk(s.bound, "DELETE", "/things/7");
    c[5] = mk(s.bound, "GET", "/things/42/more");
    c[6] = mk(s.bound, "HEAD", "/ping");
    run_calls(&s, c, 7, 1);
    assert_int_equal(c[0].status, 200);
    assert_string_equal(c[0].out, "{\"pong\":\"GET\"}\n");
    assert_int_equal(c[0].conn_close, 0); /* said only while stopping */
    assert_int_equal(c[1].status, 404);
    assert_non_null(strstr(c[1].out, "\"code\":\"not_found\""));
    assert_int_equal(c[2].status, 405);
    assert_string_equal(c[2].allow, "GET, DELETE, HEAD");
    assert_non_null(strstr(c[2].out, "\"code\":\"method_not_allowed\""));
    assert_int_equal(c[3].status, 200);
    assert_string_equal(c[3].out, "{\"id\":\"42\",\"q\":\"hello world\"}\n");
    assert_int_equal(c[4].status, 200);
    assert_int_equal(c[5].status, 404);
    assert_int_equal(c[6].status, 200);
    assert_int_equal(http_responses(s.http, 200), 4);
    assert_int_equal(http_responses(s.http, 404), 2);
    assert_int_equal(http_responses(s.http, 405), 1);
    srv_stop(&s);
}

static void test_auth(void **state)
{
    (void)state;
    struct srv s;
    srv_start(&s, TOKEN);
    struct call c[5];
    c[0] = mk(s.bound, "GET", "/ping");
    c[1] = mk(s.bound, "GET", "/ping");
    c[1].auth = TOKEN;
    c[2] = mk(s.bound, "GET", "/ping");
    c[2].auth = TOKEN "x";
    c[3] = mk(s.bound, "GET", "/open");
    c[4] = mk(s.bound, "GET", "/ping");
    c[4].auth = "0123456789abcdef-tokeN";
    run_calls(&s, c, 5, 1);
    assert_int_equal(c[0].status, 401);
    assert_non_null(strstr(c[0].out, "\"code\":\"unauthorized\""));
    assert_int_equal(c[1].status, 200);
    assert_int_equal(c[2].status, 401);
    assert_int_equal(c[3].status, 200);
    assert_int_equal(c[4].status, 401);
    srv_stop(&s);
}

/* Issue 14: with a token, auth comes before routing: unknown paths and
 * wrong methods answer 401 without the token (404 / 405 / Allow would let
 * a client enumerate the routes); only the open route's path is served
 * without it. With the token, 404 and 405 as before. */
static void test_auth_before_routing(void **state)
{
    (void)state;
    struct srv s;
    srv_start(&s, TOKEN);
    struct call c[10];
    c[0] = mk(s.bound, "GET", "/nope");
    c[1] = mk(s.bound, "PUT", "/things/42");
    c[2] = mk(s.bound, "GET", "/things/42/more");
    c[3] = mk(s.bound, "GET", "/nope%ff");
    c[4] = mk(s.bound, "DELETE", "/ping");
    c[5] = mk(s.bound, "HEAD", "/open");
    c[6] = mk(s.bound, "POST", "/open"); /* the open path: its 405 tells nothing new */
    c[7] = mk(s.bound, "GET", "/nope");
    c[7].auth = TOKEN;
    c[8] = mk(s.bound, "PUT", "/things/42");
    c[8].auth = TOKEN;
    c[9] = mk(s.bound, "GET", "/nope");
    c[9].auth = "wrong";
    run_calls(&s, c, 10, 1);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(c[i].status, 401);
        assert_string_equal(c[i].allow, "");
        assert_non_null(strstr(c[i].out, "\"code\":\"unauthorized\""));
    }
    assert_int_equal(c[5].status, 200);
    assert_int_equal(c[6].status, 405);
    assert_string_equal(c[6].allow, "GET, HEAD");
    assert_int_equal(c[7].status, 404);
    assert_int_equal(c[8].status, 405);
    assert_string_equal(c[8].allow, "GET, DELETE, HEAD");
    assert_int_equal(c[9].status, 401);
    srv_stop(&s);
}

static void test_body_limits(void **state)
{
    (void)state;
    struct srv s;
    srv_start(&s, NULL);
    char *big = xmalloc(5000);
    memset(big, 'x', 5000);
    struct call c[4];
    c[0] = mk(s.bound, "POST", "/echo");
    c[0].body = "hello";
    c[0].body_len = 5;
    c[1] = mk(s.bound, "POST", "/echo");
    c[1].body = big;
    c[1].body_len = 1024; /* exactly the limit */
    c[2] = mk(s.bound, "POST", "/echo");
    c[2].body = big;
    c[2].body_len = 1025;
    c[3] = mk(s.bound, "POST", "/echo");
    c[3].body = big;
    c[3].body_len = 5000;
    c[3].chunked = 1;
    run_calls(&s, c, 4, 1);
    assert_int_equal(c[0].status, 200);
    assert_string_equal(c[0].out, "hello");
    assert_int_equal(c[1].status, 200);
    assert_int_equal(c[1].out_len, 1024);
    assert_int_equal(c[2].status, 413);
    assert_non_null(strstr(c[2].out, "\"code\":\"too_large\""));
    assert_int_equal(c[3].status, 413);
    free(big);
    srv_stop(&s);
}

static void test_deferred_and_stream(void **state)
{
    (void)state;
    struct srv s;
    srv_start(&s, NULL);
    struct call c[2];
    c[0] = mk(s.bound, "GET", "/later");
    c[1] = mk(s.bound, "GET", "/stream");
    run_calls(&s, c, 2, 2);
    assert_int_equal(c[0].status, 202);
    assert_string_equal(c[0].out, "{\"later\":true}\n");
    assert_int_equal(c[1].status, 200);
    assert_string_equal(c[1].out, "abc");
    assert_int_equal(s.stream_closed, 1);
    assert_int_equal(http_suspended_count(s.http), 0);
    srv_stop(&s);
}

/* 32 clients x 10 requests, half of them deferred: no error, no mix-up. */
static void test_concurrency(void **state)
{
    (void)state;
    struct srv s;
    srv_start(&s, NULL);
    enum { N = 320 };
    struct call *c = xcalloc(N, sizeof *c);
    char(*paths)[32] = xcalloc(N, 32);
    for (int i = 0; i < N; i++) {
        if (i % 2)
            snprintf(paths[i], 32, "/things/%d", i);
        else
            snprintf(paths[i], 32, "/later");
        c[i] = mk(s.bound, "GET", paths[i]);
    }
    run_calls(&s, c, N, 32);
    for (int i = 0; i < N; i++) {
        if (i % 2) {
            char want[64];
            snprintf(want, sizeof want, "{\"id\":\"%d\",\"q\":\"\"}\n", i);
            assert_int_equal(c[i].status, 200);
            assert_string_equal(c[i].out, want);
        } else {
            assert_int_equal(c[i].status, 202);
        }
    }
    free(c);
    free(paths);
    srv_stop(&s);
}

struct stopper {
    struct srv *s;
    struct call c;
    int done;
};

static void *never_main(void *arg)
{
    struct stopper *st = arg;
    perform(&st->c);
    __atomic_store_n(&st->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* Stopping with a request suspended forever answers it 503 and runs its
 * cancel hook. */
static void test_stop_with_suspended(void **state)
{
    (void)state;
    struct srv s;
    srv_start(&s, NULL);
    struct stopper st = {&s, mk(s.bound, "GET", "/never"), 0};
    pthread_t th;
    pthread_create(&th, NULL, never_main, &st);
    while (http_suspended_count(s.http) == 0)
        uv_run(&s.loop, UV_RUN_ONCE);
    cancelled = 0;
    http_stop(s.http, lcn_now_ns() + 30 * 1000000000LL, on_closed, &s);
    uv_close((uv_handle_t *)&s.tick, NULL);
    while (!__atomic_load_n(&st.done, __ATOMIC_ACQUIRE) || !s.closed)
        uv_run(&s.loop, UV_RUN_ONCE);
    pthread_join(th, NULL);
    uv_run(&s.loop, UV_RUN_DEFAULT);
    assert_int_equal(st.c.status, 503);
    assert_non_null(strstr(st.c.out, "shutting_down"));
    assert_int_equal(st.c.conn_close, 1);
    assert_int_equal(cancelled, 1);
    assert_int_equal(uv_loop_close(&s.loop), 0);
}

/* ---- raw clients on the loop's thread: connections a test holds open ---- */

/* A connection from source address src ("127.0.0.2"; NULL: any). */
static int raw_connect_from(const char *bound, const char *src)
{
    const char *colon = strrchr(bound, ':');
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)atoi(colon + 1));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    if (src) {
        struct sockaddr_in b;
        memset(&b, 0, sizeof b);
        b.sin_family = AF_INET;
        assert_int_equal(inet_pton(AF_INET, src, &b.sin_addr), 1);
        assert_int_equal(bind(fd, (struct sockaddr *)&b, sizeof b), 0);
    }
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    return fd;
}

static int raw_connect(const char *bound)
{
    return raw_connect_from(bound, NULL);
}

static void raw_send(int fd, const char *req)
{
    size_t n = strlen(req);
    assert_int_equal(send(fd, req, n, MSG_NOSIGNAL), (ssize_t)n);
}

#define GUARD_NS (20 * 1000000000LL) /* turns a hang into a failure */

/* Runs the loop until fd has received needle (the bytes are in buf). */
static void raw_until(struct srv *s, int fd, char *buf, size_t cap, const char *needle)
{
    size_t len = 0;
    int64_t guard = lcn_now_ns() + GUARD_NS;
    buf[0] = 0;
    while (!strstr(buf, needle)) {
        assert_true(lcn_now_ns() < guard);
        ssize_t k = recv(fd, buf + len, cap - 1 - len, MSG_DONTWAIT);
        if (k > 0) {
            len += (size_t)k;
            buf[len] = 0;
            assert_true(len < cap - 1);
            continue;
        }
        assert_true(k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)); /* not closed */
        uv_run(&s->loop, UV_RUN_ONCE); /* the tick timer bounds the wait */
    }
}

/* Reads (and drops) what fd receives until the server closes it. */
static void raw_eof(struct srv *s, int fd)
{
    char buf[65536];
    int64_t guard = lcn_now_ns() + GUARD_NS;
    for (;;) {
        assert_true(lcn_now_ns() < guard);
        ssize_t k = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (k == 0 || (k < 0 && errno == ECONNRESET))
            return;
        if (k < 0) {
            assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
            uv_run(&s->loop, UV_RUN_ONCE);
        }
    }
}

/* Sends req on a new connection and reads the answer until the server
 * closes the connection; buf holds what came. */
static void raw_exchange_to_eof(struct srv *s, const char *req, char *buf, size_t cap)
{
    int fd = raw_connect(s->bound);
    raw_send(fd, req);
    size_t len = 0;
    int64_t guard = lcn_now_ns() + GUARD_NS;
    buf[0] = 0;
    for (;;) {
        assert_true(lcn_now_ns() < guard);
        ssize_t k = recv(fd, buf + len, cap - 1 - len, MSG_DONTWAIT);
        if (k > 0) {
            len += (size_t)k;
            buf[len] = 0;
            assert_true(len < cap - 1);
        } else if (k == 0 || errno == ECONNRESET) {
            break;
        } else {
            assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
            uv_run(&s->loop, UV_RUN_ONCE);
        }
    }
    close(fd);
}

static void wait_closed(struct srv *s)
{
    int64_t guard = lcn_now_ns() + GUARD_NS;
    while (!s->closed && lcn_now_ns() < guard)
        uv_run(&s->loop, UV_RUN_ONCE);
    assert_int_equal(s->closed, 1);
}

static void finish_loop(struct srv *s)
{
    uv_close((uv_handle_t *)&s->tick, NULL);
    uv_run(&s->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&s->loop), 0);
}

/* An idle keep-alive connection (one request answered) and a stream that
 * waits for its owner, as a client holds them when the stop begins. */
static void open_idle_and_stream(struct srv *s, int *a, int *b)
{
    char buf[4096];
    *a = raw_connect(s->bound);
    raw_send(*a, "GET /ping HTTP/1.1\r\nHost: t\r\n\r\n");
    raw_until(s, *a, buf, sizeof buf, "{\"pong\":\"GET\"}\n");
    *b = raw_connect(s->bound);
    raw_send(*b, "GET /idle-stream HTTP/1.1\r\nHost: t\r\n\r\n");
    raw_until(s, *b, buf, sizeof buf, "\r\n1\r\nx\r\n");
    int64_t guard = lcn_now_ns() + GUARD_NS;
    while (http_suspended_count(s->http) == 0) {
        assert_true(lcn_now_ns() < guard);
        uv_run(&s->loop, UV_RUN_ONCE);
    }
    assert_int_equal(http_live_count(s->http), 1); /* the stream; a is idle */
}

/* The client closes both connections as soon as the stream has ended, in
 * the middle of the stop: MHD sees them close in a run the poll handle
 * starts, and the stop must notice that, whatever becomes of MHD's own
 * timer (it has none left to ask for once no connection is open). */
static void test_stop_clients_close_midway(void **state)
{
    (void)state;
    struct srv s;
    char buf[4096];
    int a, b;
    srv_start(&s, NULL);
    open_idle_and_stream(&s, &a, &b);
    int64_t deadline = lcn_now_ns() + GUARD_NS;
    http_stop(s.http, deadline, on_closed, &s);
    raw_until(&s, b, buf, sizeof buf, "0\r\n\r\n"); /* the stream ended */
    close(b);
    close(a);
    wait_closed(&s);
    assert_true(lcn_now_ns() < deadline);
    assert_int_equal(s.other_streams_closed, 1);
    finish_loop(&s);
}

/* The client never closes its idle keep-alive connection nor the ended
 * stream's: with no request in progress MHD stops at once (the deadline is
 * far away) and closes both. */
static void test_stop_clients_never_close(void **state)
{
    (void)state;
    struct srv s;
    char buf[4096];
    int a, b;
    srv_start(&s, NULL);
    open_idle_and_stream(&s, &a, &b);
    int64_t deadline = lcn_now_ns() + GUARD_NS;
    http_stop(s.http, deadline, on_closed, &s);
    raw_until(&s, b, buf, sizeof buf, "0\r\n\r\n");
    wait_closed(&s);
    assert_true(lcn_now_ns() < deadline);
    raw_eof(&s, a);
    raw_eof(&s, b);
    close(a);
    close(b);
    assert_int_equal(s.other_streams_closed, 1);
    finish_loop(&s);
}

/* Requests in progress that never finish (a body that never comes, a
 * stream the client never reads) hold the stop until the deadline, and no
 * longer: then they are cut off and their connections closed. */
static void test_stop_deadline_cuts_off(void **state)
{
    (void)state;
    struct srv s;
    srv_start(&s, NULL);
    int c = raw_connect(s.bound);
    raw_send(c, "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\nabc");
    int f = raw_connect(s.bound);
    raw_send(f, "GET /flood HTTP/1.1\r\nHost: t\r\n\r\n");
    int64_t guard = lcn_now_ns() + GUARD_NS;
    while (http_live_count(s.http) < 2) {
        assert_true(lcn_now_ns() < guard);
        uv_run(&s.loop, UV_RUN_ONCE);
    }
    int64_t deadline = lcn_now_ns() + 300 * 1000000LL;
    http_stop(s.http, deadline, on_closed, &s);
    wait_closed(&s);
    assert_true(lcn_now_ns() >= deadline);
    assert_int_equal(s.other_streams_closed, 1);
    raw_eof(&s, c);
    raw_eof(&s, f);
    close(c);
    close(f);
    finish_loop(&s);
}

/* Runs the loop until cond holds (a hang turns into a failure). */
#define LOOP_UNTIL(s, cond)                                                                        \
    do {                                                                                           \
        int64_t guard_ = lcn_now_ns() + GUARD_NS;                                                  \
        while (!(cond)) {                                                                          \
            assert_true(lcn_now_ns() < guard_);                                                    \
            uv_run(&(s)->loop, UV_RUN_ONCE);                                                       \
        }                                                                                          \
    } while (0)

/* Issue 14: at max_connections MHD takes its listening socket out of its
 * epoll set and puts it back only in a later run; once the idle
 * connections that filled the limit have closed, the next request used to
 * wait in the backlog for ever. Each round must be served. */
static void test_limit_released(void **state)
{
    (void)state;
    struct srv s;
    struct srv_opts o = {.max_connections = 4};
    srv_start_opts(&s, &o);
    for (int round = 0; round < 3; round++) {
        int fd[4];
        for (int i = 0; i < 4; i++)
            fd[i] = raw_connect(s.bound);
        LOOP_UNTIL(&s, http_connection_count(s.http) == 4);
        for (int i = 0; i < 4; i++)
            close(fd[i]);
        LOOP_UNTIL(&s, http_connection_count(s.http) == 0);
        struct call c = mk(s.bound, "GET", "/ping");
        run_calls(&s, &c, 1, 1);
        assert_int_equal(c.status, 200);
    }
    srv_stop(&s);
}

/* max_connections_per_ip: a third connection from 127.0.0.1 is closed at
 * once, while another address is still served. */
static void test_per_ip_limit(void **state)
{
    (void)state;
    struct srv s;
    char buf[4096];
    struct srv_opts o = {.max_connections = 16, .per_ip = 2};
    srv_start_opts(&s, &o);
    int a = raw_connect(s.bound), b = raw_connect(s.bound);
    LOOP_UNTIL(&s, http_connection_count(s.http) == 2);
    int c = raw_connect(s.bound);
    raw_eof(&s, c);
    close(c);
    int other = raw_connect_from(s.bound, "127.0.0.2");
    raw_send(other, "GET /ping HTTP/1.1\r\nHost: t\r\n\r\n");
    raw_until(&s, other, buf, sizeof buf, "{\"pong\":\"GET\"}\n");
    /* the held ones still work */
    raw_send(a, "GET /ping HTTP/1.1\r\nHost: t\r\n\r\n");
    raw_until(&s, a, buf, sizeof buf, "{\"pong\":\"GET\"}\n");
    close(a);
    close(b);
    close(other);
    srv_stop(&s);
}

/* header_timeout_s: a client that sends a header line every 100 ms never
 * completes its header (slowloris); MHD's idle timeout never fires for it,
 * the header timeout closes it. A request whose header is complete but
 * whose body is slow is not touched by it. */
static void test_header_timeout(void **state)
{
    (void)state;
    struct srv s;
    char buf[4096];
    struct srv_opts o = {.header_timeout_s = 1};
    srv_start_opts(&s, &o);
    int body = raw_connect(s.bound);
    raw_send(body, "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 6\r\n\r\nabc");
    int slow = raw_connect(s.bound);
    raw_send(slow, "GET /ping HTTP/1.1\r\n");
    int64_t guard = lcn_now_ns() + GUARD_NS, next = 0;
    for (;;) {
        assert_true(lcn_now_ns() < guard);
        ssize_t k = recv(slow, buf, sizeof buf, MSG_DONTWAIT);
        if (k == 0 || (k < 0 && errno == ECONNRESET))
            break;
        assert_true(k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
        if (lcn_now_ns() >= next) {
            if (send(slow, "X-Slow: 1\r\n", 11, MSG_NOSIGNAL) < 0)
                break; /* closed by the server */
            next = lcn_now_ns() + 100 * 1000000LL;
        }
        uv_run(&s.loop, UV_RUN_ONCE);
    }
    close(slow);
    assert_int_equal(http_header_timeouts(s.http), 1);
    /* the slow body is still being read: finish it */
    raw_send(body, "def");
    raw_until(&s, body, buf, sizeof buf, "abcdef");
    close(body);
    srv_stop(&s);
}

/* Issue 14: ambiguous framing (two Content-Lengths, Content-Length with
 * Transfer-Encoding, a coding other than chunked) is answered 400 with
 * "Connection: close" and the connection closed, so that what follows the
 * short body is never served as a second request (smuggling). */
static void test_strict_framing(void **state)
{
    (void)state;
    struct srv s;
    char buf[8192];
    srv_start(&s, NULL);
    static const char *bad[] = {
        "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nContent-Length: 40\r\n\r\n"
        "abcGET /ping HTTP/1.1\r\nHost: t\r\n\r\n",
        "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n"
        "abcGET /ping HTTP/1.1\r\nHost: t\r\n\r\n",
        "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 40\r\nTransfer-Encoding: chunked"
        "\r\n\r\n3\r\nabc\r\n0\r\n\r\nGET /ping HTTP/1.1\r\nHost: t\r\n\r\n",
        "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n"
        "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
        "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\nabc",
        "GET /ping HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\nContent-Length: 38\r\n\r\n"
        "GET /ping HTTP/1.1\r\nHost: t\r\n\r\n",
    };
    for (size_t i = 0; i < LCN_ARRAY_LEN(bad); i++) {
        raw_exchange_to_eof(&s, bad[i], buf, sizeof buf);
        assert_non_null(strstr(buf, "HTTP/1.1 400"));
        assert_non_null(strstr(buf, "\"code\":\"bad_request\""));
        assert_non_null(strstr(buf, "\r\nConnection: close\r\n"));
        assert_null(strstr(buf, "pong")); /* nothing smuggled through */
        assert_null(strstr(buf, "HTTP/1.1 200"));
    }
    /* one Content-Length, or chunked alone, are fine */
    raw_exchange_to_eof(&s,
                        "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n"
                        "Connection: close\r\n\r\nabc",
                        buf, sizeof buf);
    assert_non_null(strstr(buf, "HTTP/1.1 200"));
    raw_exchange_to_eof(&s,
                        "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n"
                        "Connection: close\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
                        buf, sizeof buf);
    assert_non_null(strstr(buf, "HTTP/1.1 200"));
    assert_non_null(strstr(buf, "abc"));
    assert_int_equal(http_responses(s.http, 400), LCN_ARRAY_LEN(bad));
    srv_stop(&s);
}

/* Issue 14: %00 used to cut the decoded path short ("/ping%00" was /ping,
 * "/things/42%00xyz" gave id 42), and a path that decodes to bytes that
 * are not UTF-8 gave 500 (its 404 message could not be sent as JSON).
 * Now %00 stays encoded, such paths answer 404, and valid UTF-8 routes. */
static void test_path_decoding(void **state)
{
    (void)state;
    struct srv s;
    srv_start(&s, NULL);
    struct call c[7];
    c[0] = mk(s.bound, "GET", "/things/42%00xyz");
    c[1] = mk(s.bound, "GET", "/ping%00");
    c[2] = mk(s.bound, "GET", "/things/%ff");
    c[3] = mk(s.bound, "GET", "/nope%ff%c0%af");
    c[4] = mk(s.bound, "GET", "/things/%c3%a9");
    c[5] = mk(s.bound, "GET", "/things/1?q=%00");
    c[6] = mk(s.bound, "GET", "/things/%ed%a0%80"); /* a surrogate */
    run_calls(&s, c, 7, 1);
    assert_int_equal(c[0].status, 200);
    assert_string_equal(c[0].out, "{\"id\":\"42%00xyz\",\"q\":\"\"}\n");
    assert_int_equal(c[1].status, 404);
    assert_int_equal(c[2].status, 404);
    assert_int_equal(c[3].status, 404);
    assert_non_null(strstr(c[3].out, "no route for /nope???"));
    assert_int_equal(c[4].status, 200);
    assert_string_equal(c[4].out, "{\"id\":\"\xc3\xa9\",\"q\":\"\"}\n");
    assert_int_equal(c[5].status, 200);
    assert_string_equal(c[5].out, "{\"id\":\"1\",\"q\":\"%00\"}\n");
    assert_int_equal(c[6].status, 404);
    assert_int_equal(http_responses(s.http, 500), 0);
    srv_stop(&s);
}

/* A connection whose client sent part of a header and closed while it
 * waited in the backlog: MHD accepts it, reads the bytes in one short read
 * and, its epoll set being edge-triggered, never reads again, so it never
 * sees the close (the end arrived with the data). It held its slot until
 * an idle timeout; at max_connections, with many such connections, every
 * slot. The sweep finds peers that have closed (TCP_CLOSE_WAIT) among the
 * connections waiting for a header. No header timeout here, and an idle
 * timeout far beyond the test's guard. */
static void test_closed_in_backlog(void **state)
{
    (void)state;
    struct srv s;
    struct srv_opts o = {.max_connections = 4, .connection_timeout_s = 600};
    srv_start_opts(&s, &o);
    int hold[4], late[4];
    for (int i = 0; i < 4; i++) {
        hold[i] = raw_connect(s.bound);
        raw_send(hold[i], "GET /ping HTTP/1.1\r\n");
    }
    LOOP_UNTIL(&s, http_connection_count(s.http) == 4);
    for (int i = 0; i < 4; i++) { /* in the backlog: part of a header, then the end */
        late[i] = raw_connect(s.bound);
        raw_send(late[i], "GET /ping HTTP/1.1\r\nHost: t\r\n");
        close(late[i]);
    }
    for (int i = 0; i < 4; i++)
        close(hold[i]);
    LOOP_UNTIL(&s, http_connection_count(s.http) == 0);
    struct call c = mk(s.bound, "GET", "/ping");
    run_calls(&s, &c, 1, 1);
    assert_int_equal(c.status, 200);
    srv_stop(&s);
}

/* Eviction: with max_connections 16 and a reserve of 4, at most 12
 * connections are kept. A request whose body is still coming and an idle
 * stream (suspended) are opened first, then 20 connections that send
 * nothing, from 8 addresses: the 10 oldest idle ones are closed, the newer
 * ones are kept, the busy ones are never touched, and an ordinary request
 * is served at once (without eviction it would wait in the backlog until
 * an idle connection timed out; no timeout here reaches the guard). */
static void test_eviction(void **state)
{
    (void)state;
    struct srv s;
    char buf[4096];
    struct srv_opts o = {.max_connections = 16, .reserve = 4, .connection_timeout_s = 600};
    srv_start_opts(&s, &o);
    int body = raw_connect(s.bound);
    raw_send(body, "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 6\r\n\r\nabc");
    int stream = raw_connect(s.bound);
    raw_send(stream, "GET /idle-stream HTTP/1.1\r\nHost: t\r\n\r\n");
    raw_until(&s, stream, buf, sizeof buf, "\r\n1\r\nx\r\n");
    LOOP_UNTIL(&s, http_live_count(s.http) == 2 && http_suspended_count(s.http) == 1);
    int idle[20];
    for (int i = 0; i < 20; i++) {
        char src[16];
        snprintf(src, sizeof src, "127.0.0.%d", 2 + i % 8);
        idle[i] = raw_connect_from(s.bound, src);
    }
    /* 22 open, 12 kept: the 10 oldest of those waiting for a header go */
    LOOP_UNTIL(&s, http_evictions(s.http) == 10 && http_connection_count(s.http) == 12);
    for (int i = 0; i < 10; i++)
        raw_eof(&s, idle[i]);
    for (int i = 10; i < 20; i++) { /* still open */
        ssize_t k = recv(idle[i], buf, sizeof buf, MSG_DONTWAIT);
        assert_true(k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
    }
    assert_int_equal(http_header_timeouts(s.http), 0);
    /* an ordinary request: served, and one more idle connection goes */
    struct call c = mk(s.bound, "GET", "/ping");
    run_calls(&s, &c, 1, 1);
    assert_int_equal(c.status, 200);
    assert_int_equal(http_evictions(s.http), 11);
    raw_eof(&s, idle[10]);
    /* the request in progress and the stream were left alone */
    raw_send(body, "def");
    raw_until(&s, body, buf, sizeof buf, "abcdef");
    assert_int_equal(s.other_streams_closed, 0);
    assert_int_equal(http_suspended_count(s.http), 1);
    for (int i = 0; i < 20; i++)
        close(idle[i]);
    close(body);
    close(stream);
    srv_stop(&s);
}

static void test_listen_errors(void **state)
{
    (void)state;
    int fd, lb;
    char bound[128], err[256];
    assert_int_equal(http_listen("nocolon", &fd, bound, sizeof bound, &lb, err, sizeof err),
                     LCN_EINVAL);
    assert_int_equal(http_listen("127.0.0.1:99999", &fd, bound, sizeof bound, &lb, err, sizeof err),
                     LCN_EINVAL);
    assert_int_equal(http_listen("[::1:80", &fd, bound, sizeof bound, &lb, err, sizeof err),
                     LCN_EINVAL);
    if (http_listen("[::1]:0", &fd, bound, sizeof bound, &lb, err, sizeof err) == 0) {
        assert_int_equal(lb, 1);
        assert_true(!strncmp(bound, "[::1]:", 6));
        close(fd);
    }
    assert_int_equal(http_listen("0.0.0.0:0", &fd, bound, sizeof bound, &lb, err, sizeof err), 0);
    assert_int_equal(lb, 0);
    close(fd);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_ALL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_routing),
        cmocka_unit_test(test_auth),
        cmocka_unit_test(test_auth_before_routing),
        cmocka_unit_test(test_body_limits),
        cmocka_unit_test(test_deferred_and_stream),
        cmocka_unit_test(test_concurrency),
        cmocka_unit_test(test_stop_with_suspended),
        cmocka_unit_test(test_stop_clients_close_midway),
        cmocka_unit_test(test_stop_clients_never_close),
        cmocka_unit_test(test_stop_deadline_cuts_off),
        cmocka_unit_test(test_limit_released),
        cmocka_unit_test(test_per_ip_limit),
        cmocka_unit_test(test_header_timeout),
        cmocka_unit_test(test_closed_in_backlog),
        cmocka_unit_test(test_eviction),
        cmocka_unit_test(test_strict_framing),
        cmocka_unit_test(test_path_decoding),
        cmocka_unit_test(test_listen_errors),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
