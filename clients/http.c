/* lcnctl's HTTP client over libcurl (see http.h). */
#include "clients/http.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>

#include "err.h"
#include "util.h"

/* Seconds to wait for a TCP connection, and for a stalled transfer (not one
 * byte for this long) before giving up. lcnd's progress streams send a
 * keepalive every sse_heartbeat_s (5 s by default), well inside. */
#define CONNECT_TIMEOUT_S 10L
#define STALL_TIMEOUT_S   60L

/* A plain answer's body, once its header has come, must arrive within
 * ANSWER_GRACE_S plus its size at ANSWER_MIN_RATE bytes a second (http.h):
 * lcnd sends an answer from memory in one go, while a server trickling a
 * byte now and then kept lcnctl for hours (the stall rule above never
 * fires while bytes come). */
#define ANSWER_GRACE_S  10.0
#define ANSWER_MIN_RATE 65536.0

/* The token as lcnd reads its token_file (server/serve.c read_token): the
 * whole file without surrounding blanks and newlines, so that the daemon's
 * own file works here whatever blank line or indent it begins with. */
static char *read_token_file(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "LCN_TOKEN_FILE: cannot open '%s'", path);
        return NULL;
    }
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    int rerr = ferror(f) ? errno : 0;
    fclose(f);
    /* a directory: fopen succeeds, the read fails */
    if (rerr) {
        snprintf(err, errlen, "LCN_TOKEN_FILE: cannot read '%s': %s", path, strerror(rerr));
        return NULL;
    }
    buf[n] = '\0';
    char *s = buf + strspn(buf, " \t\r\n");
    n = strlen(s);
    while (n && strchr(" \t\r\n", s[n - 1]))
        s[--n] = '\0';
    if (!n) {
        snprintf(err, errlen, "LCN_TOKEN_FILE: '%s' is empty", path);
        return NULL;
    }
    return xstrdup(s);
}

/* 0 when the authority (host[:port], up to the first '/') has no port or a
 * port of 1 to 65535 in digits; an empty port ("host:") would reach port 80
 * silently. An IPv6 literal's colons are inside its brackets. */
static int bad_port(const char *host)
{
    const char *end = strchr(host, '/'), *colon = NULL;
    if (!end)
        end = host + strlen(host);
    const char *from = host[0] == '[' ? memchr(host, ']', (size_t)(end - host)) : host;
    if (!from)
        return 1;
    for (const char *q = from; q < end; q++)
        if (*q == ':')
            colon = q;
    if (!colon)
        return 0;
    long port = 0;
    const char *q = colon + 1;
    if (q == end)
        return 1;
    for (; q < end; q++) {
        if (!isdigit((unsigned char)*q) || (port = port * 10 + (*q - '0')) > 65535)
            return 1;
    }
    return port < 1;
}

int lcnhttp_init(struct lcnhttp *h, const char *server, char *err, size_t errlen)
{
    memset(h, 0, sizeof *h);
    if (!server || !server[0])
        server = getenv("LCN_SERVER");
    if (!server || !server[0])
        server = LCNHTTP_DEFAULT_SERVER;
    const char *sep = strstr(server, "://");
    if (sep &&
        !(strncasecmp(server, "http://", 7) == 0 || strncasecmp(server, "https://", 8) == 0)) {
        snprintf(err, errlen, "server '%s': only http:// and https:// are supported", server);
        return LCN_EINVAL;
    }
    size_t n = strlen(server);
    h->base = xmalloc(n + 8);
    snprintf(h->base, n + 8, "%s%s", sep ? "" : "http://", server);
    /* trailing slashes go, but not into the scheme's "://" ("http://" has no
     * host; trimmed to "http:", the host was looked for past a NULL) */
    const char *host = strstr(h->base, "://") + 3;
    n = strlen(h->base);
    while (n > (size_t)(host - h->base) && h->base[n - 1] == '/')
        h->base[--n] = '\0';
    if (!host[0] || host[0] == '/') {
        snprintf(err, errlen, "server '%s': no host", server);
        lcnhttp_release(h);
        return LCN_EINVAL;
    }
    if (bad_port(host)) {
        snprintf(err, errlen, "server '%s': the port must be a number from 1 to 65535", server);
        lcnhttp_release(h);
        return LCN_EINVAL;
    }
    const char *tok = getenv("LCN_TOKEN");
    if (tok && tok[0]) {
        h->token = xstrdup(tok);
    } else if ((tok = getenv("LCN_TOKEN_FILE")) && tok[0]) {
        h->token = read_token_file(tok, err, errlen);
        if (!h->token) {
            lcnhttp_release(h);
            return LCN_EINVAL;
        }
    }
    h->curl = curl_easy_init();
    LCN_ASSERT(h->curl);
    return 0;
}

void lcnhttp_release(struct lcnhttp *h)
{
    if (h->curl)
        curl_easy_cleanup(h->curl);
    free(h->base);
    free(h->token);
    memset(h, 0, sizeof *h);
}

void lcnhttp_drop_connections(struct lcnhttp *h)
{
    if (h->curl)
        curl_easy_cleanup(h->curl);
    h->curl = curl_easy_init();
    LCN_ASSERT(h->curl);
}

void lcnhttp_resp_release(struct lcnhttp_resp *r)
{
    free(r->body);
    r->body = NULL;
    r->len = 0;
}

char *lcnhttp_escape(const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(s);
    char *out = xmalloc(3 * n + 1), *o = out;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (isalnum(*p) || *p == '-' || *p == '_' || *p == '.' || *p == '~') {
            *o++ = (char)*p;
        } else {
            *o++ = '%';
            *o++ = hex[*p >> 4];
            *o++ = hex[*p & 15];
        }
    }
    *o = '\0';
    return out;
}

/* Per-transfer state shared by the callbacks. */
struct xfer {
    CURL *curl;
    struct lcnhttp_resp *r;
    size_t cap;
    const struct lcnhttp_stream *s; /* NULL for plain requests */
    int decided;                    /* the status and content type have been looked at */
    size_t max;                     /* plain requests: the largest body taken */
    int too_large;                  /* the body grew past max: the transfer was cut */
    int64_t header_ns;              /* when the final answer's header ended (0: not yet) */
    int too_slow;                   /* plain requests: the body came too slowly: cut */
};

/* The largest answer to a request for path (http.h). */
static size_t answer_max(const char *path)
{
    size_t n = strcspn(path, "?"), k = strlen("/solution");
    return n >= k && memcmp(path + n - k, "/solution", k) == 0 ? LCNHTTP_MAX_SOLUTION
                                                               : LCNHTTP_MAX_ANSWER;
}

static void body_add(struct xfer *x, const char *p, size_t n)
{
    struct lcnhttp_resp *r = x->r;
    xgrow((void **)&r->body, 1, &x->cap, r->len + n + 1);
    memcpy(r->body + r->len, p, n);
    r->len += n;
    r->body[r->len] = '\0';
}

static void decide(struct xfer *x)
{
    struct lcnhttp_resp *r = x->r;
    x->decided = 1;
    curl_easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &r->status);
    char *ct = NULL;
    curl_easy_getinfo(x->curl, CURLINFO_CONTENT_TYPE, &ct);
    if (ct)
        snprintf(r->content_type, sizeof r->content_type, "%s", ct);
    r->sse = x->s && r->status == 200 && strncasecmp(r->content_type, "text/event-stream", 17) == 0;
}

static size_t on_write(char *p, size_t size, size_t nmemb, void *arg)
{
    struct xfer *x = arg;
    size_t n = size * nmemb;
    if (!x->decided)
        decide(x);
    if (x->r->sse) {
        if (x->s->on_data(x->s->ctx, p, n)) {
            x->r->stopped = 1;
            return 0; /* makes curl stop with CURLE_WRITE_ERROR */
        }
        return n;
    }
    if (x->r->len + n > x->max) {
        x->too_large = 1;
        return 0; /* makes curl stop with CURLE_WRITE_ERROR */
    }
    body_add(x, p, n);
    return n;
}

/* Plain requests: cuts an answer whose body comes too slowly (ANSWER_*). */
static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    (void)dltotal, (void)ultotal, (void)ulnow;
    struct xfer *x = arg;
    if (x->s || !x->header_ns)
        return 0;
    double t = (double)(lcn_now_ns() - x->header_ns) / 1e9;
    if (t <= ANSWER_GRACE_S + (double)dlnow / ANSWER_MIN_RATE)
        return 0;
    x->too_slow = 1;
    return 1; /* makes curl stop with CURLE_ABORTED_BY_CALLBACK */
}

static size_t on_header(char *p, size_t size, size_t nmemb, void *arg)
{
    struct xfer *x = arg;
    size_t n = size * nmemb;
    if (!x->header_ns && (n == 2 || n == 1) && (p[0] == '\r' || p[0] == '\n')) {
        /* the end of a header block: a final answer's, not a 1xx one's */
        long code = 0;
        curl_easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &code);
        if (code >= 200)
            x->header_ns = lcn_now_ns();
    }
    static const char ra[] = "retry-after:";
    if (n > sizeof ra - 1 && strncasecmp(p, ra, sizeof ra - 1) == 0) {
        const char *v = p + sizeof ra - 1;
        size_t vlen = n - (sizeof ra - 1);
        while (vlen && (*v == ' ' || *v == '\t'))
            v++, vlen--;
        while (vlen && isspace((unsigned char)v[vlen - 1]))
            vlen--;
        snprintf(x->r->retry_after, sizeof x->r->retry_after, "%.*s", (int)vlen, v);
    }
    return n;
}

static struct curl_slist *setup(struct lcnhttp *h, struct xfer *x, const char *method,
                                const char *path, const char *body, size_t len, char *errbuf)
{
    CURL *c = h->curl;
    curl_easy_reset(c); /* options only: live connections are kept */
    size_t ulen = strlen(h->base) + strlen(path) + 1;
    char *url = xmalloc(ulen);
    snprintf(url, ulen, "%s%s", h->base, path);
    curl_easy_setopt(c, CURLOPT_URL, url);
    free(url);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, CONNECT_TIMEOUT_S);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, STALL_TIMEOUT_S);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_USERAGENT, "lcnctl");
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, x);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    struct curl_slist *hdr = NULL;
    if (h->token) {
        size_t n = strlen(h->token) + 32;
        char *a = xmalloc(n);
        snprintf(a, n, "Authorization: Bearer %s", h->token);
        hdr = curl_slist_append(hdr, a);
        free(a);
    }
    if (strcmp(method, "GET") == 0) {
        curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    } else if (strcmp(method, "POST") == 0) {
        curl_easy_setopt(c, CURLOPT_POST, 1L);
    } else {
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    }
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
        hdr = curl_slist_append(hdr, "Content-Type: application/json");
        hdr = curl_slist_append(hdr, "Expect:"); /* no 100-continue round trip */
    }
    return hdr;
}

static void fail_msg(struct lcnhttp *h, struct lcnhttp_resp *r, CURLcode rc, const char *errbuf)
{
    snprintf(r->err, sizeof r->err, "cannot reach %s: %s", h->base,
             errbuf[0] ? errbuf : curl_easy_strerror(rc));
}

static int request_once(struct lcnhttp *h, const char *method, const char *path, const char *body,
                        size_t len, struct lcnhttp_resp *r)
{
    memset(r, 0, sizeof *r);
    char errbuf[CURL_ERROR_SIZE] = "";
    struct xfer x = {h->curl, r, 0, NULL, 0, answer_max(path), 0, 0, 0};
    struct curl_slist *hdr = setup(h, &x, method, path, body, len, errbuf);
    hdr = curl_slist_append(hdr, "Accept: application/json");
    curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, hdr);
    CURLcode rc = curl_easy_perform(h->curl);
    curl_slist_free_all(hdr);
    if (rc == CURLE_OK && !x.decided)
        decide(&x); /* an empty body */
    if (rc != CURLE_OK) {
        fail_msg(h, r, rc, errbuf);
        if (x.too_large)
            snprintf(r->err, sizeof r->err, "%s: the answer is larger than %zu MiB: not lcnd?",
                     h->base, x.max >> 20);
        if (x.too_slow)
            snprintf(r->err, sizeof r->err,
                     "%s: the answer came at less than %.0f KiB/s after its header: not lcnd?",
                     h->base, ANSWER_MIN_RATE / 1024);
        lcnhttp_resp_release(r);
        r->status = 0;
        return LCN_EIO;
    }
    if (!r->body)
        body_add(&x, "", 0);
    return 0;
}

/* Seconds to wait before retrying r: its Retry-After when that is a
 * number of seconds, bounded. */
static int retry_wait_s(const struct lcnhttp_resp *r)
{
    const char *v = r->retry_after;
    if (!v[0] || strspn(v, "0123456789") != strlen(v) || strlen(v) > 6)
        return LCNHTTP_RETRY_DEFAULT_S;
    int s = atoi(v);
    return s > LCNHTTP_RETRY_MAX_S ? LCNHTTP_RETRY_MAX_S : s;
}

/* The API error code of an error body, for the note ("" when none). */
static void error_code(const struct lcnhttp_resp *r, char *buf, size_t len)
{
    buf[0] = '\0';
    json_t *j = r->body ? json_loadb(r->body, r->len, 0, NULL) : NULL;
    const char *code = json_string_value(json_object_get(json_object_get(j, "error"), "code"));
    if (code)
        snprintf(buf, len, " %.40s", code);
    json_decref(j);
}

int lcnhttp_request(struct lcnhttp *h, const char *method, const char *path, const char *body,
                    size_t len, struct lcnhttp_resp *r)
{
    for (int attempt = 1;; attempt++) {
        int rc = request_once(h, method, path, body, len, r);
        if (rc || (r->status != 429 && r->status != 503) || attempt > h->retries)
            return rc;
        int wait_s = retry_wait_s(r);
        char code[48];
        error_code(r, code, sizeof code);
        fprintf(stderr, "lcnctl: HTTP %ld%s: retry %d of %d in %d s\n", r->status, code, attempt,
                h->retries, wait_s);
        lcnhttp_resp_release(r);
        struct timespec ts = {wait_s, 0};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
    }
}

int lcnhttp_stream(struct lcnhttp *h, const char *path, const struct lcnhttp_stream *s,
                   struct lcnhttp_resp *r)
{
    memset(r, 0, sizeof *r);
    char errbuf[CURL_ERROR_SIZE] = "";
    struct xfer x = {h->curl, r, 0, s, 0, LCNHTTP_MAX_ANSWER, 0, 0, 0};
    struct curl_slist *hdr = setup(h, &x, "GET", path, NULL, 0, errbuf);
    hdr = curl_slist_append(hdr, "Accept: text/event-stream");
    if (s->last_event_id) {
        char line[96];
        snprintf(line, sizeof line, "Last-Event-ID: %s", s->last_event_id);
        hdr = curl_slist_append(hdr, line);
    }
    curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, hdr);

    CURLM *m = curl_multi_init();
    LCN_ASSERT(m);
    curl_multi_add_handle(m, h->curl);
    int tick_ms = s->tick_ms > 0 ? s->tick_ms : 200;
    int64_t next_tick = lcn_now_ns() + (int64_t)tick_ms * 1000000;
    int running = 1;
    CURLcode result = CURLE_OK;
    while (running) {
        CURLMcode mc = curl_multi_perform(m, &running);
        if (mc != CURLM_OK) {
            result = CURLE_RECV_ERROR;
            snprintf(errbuf, CURL_ERROR_SIZE, "%s", curl_multi_strerror(mc));
            break;
        }
        if (r->stopped)
            break;
        int64_t now = lcn_now_ns();
        if (s->on_tick && now >= next_tick) {
            next_tick = now + (int64_t)tick_ms * 1000000;
            if (s->on_tick(s->ctx)) {
                r->stopped = 1;
                break;
            }
        }
        if (running) {
            int wait_ms = (int)((next_tick - now) / 1000000);
            curl_multi_poll(m, NULL, 0, wait_ms < 1 ? 1 : wait_ms, NULL);
        }
    }
    if (!running) {
        int left;
        CURLMsg *msg;
        while ((msg = curl_multi_info_read(m, &left)))
            if (msg->msg == CURLMSG_DONE)
                result = msg->data.result;
    }
    curl_multi_remove_handle(m, h->curl);
    curl_multi_cleanup(m);
    curl_slist_free_all(hdr);
    if (r->stopped)
        return 0;
    if (result == CURLE_OK && !x.decided)
        decide(&x);
    if (result != CURLE_OK) {
        fail_msg(h, r, result, errbuf);
        if (!x.decided)
            r->status = 0;
        return LCN_EIO;
    }
    if (!r->sse && !r->body)
        body_add(&x, "", 0);
    return 0;
}
