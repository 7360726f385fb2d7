/*
 * bench_http_poll - an HTTP/1.1 poller for the daemon benchmark
 * (scripts/bench-daemon.sh): N client threads, each on its own keep-alive
 * connection, GET one path over and over for a fixed time, and the
 * latency of every request (from the first byte sent to the last byte of
 * the response, CLOCK_MONOTONIC) is recorded. C and raw sockets so that the
 * client adds microseconds, not the milliseconds of an interpreter lock.
 *
 * usage: bench_http_poll --addr HOST:PORT --path PATH [--clients 50]
 *            [--seconds 10] [--warmup 1] [--interval-ms 0] [--token T]
 *            [--samples FILE]
 * --interval-ms 0: closed loop (each client sends its next request as soon
 * as the previous answer is in); > 0: each client sends on a fixed
 * schedule, one request per interval. Prints one JSON object; --samples
 * writes every latency (microseconds, one per line, measurement phase
 * only). Exit status 1 when any request failed or got a status other than
 * 200.
 */
#define _GNU_SOURCE /* strcasestr */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct opts {
    char host[256], port[16];
    const char *path, *token, *samples;
    int clients;
    double seconds, warmup, interval_ms;
};

struct client {
    const struct opts *o;
    pthread_t th;
    int64_t t_begin, t_measure, t_end; /* ns */
    int64_t *lat;                      /* ns, measurement phase */
    size_t n, cap;
    uint64_t errors, non200, reconnects, behind;
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int dial(const struct opts *o)
{
    struct addrinfo hints = {0}, *res;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(o->host, o->port, &hints, &res))
        return -1;
    int s = socket(res->ai_family, SOCK_STREAM, 0);
    if (s >= 0 && connect(s, res->ai_addr, res->ai_addrlen)) {
        close(s);
        s = -1;
    }
    freeaddrinfo(res);
    if (s >= 0) {
        int one = 1;
        setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    return s;
}

/* One request/response on fd. Returns the status code, or -1 when the
 * connection failed. */
static int roundtrip(int fd, const char *req, size_t reqlen, char *buf, size_t cap)
{
    size_t off = 0;
    while (off < reqlen) {
        ssize_t w = send(fd, req + off, reqlen - off, MSG_NOSIGNAL);
        if (w <= 0)
            return -1;
        off += (size_t)w;
    }
    size_t len = 0;
    char *hend = NULL;
    while (!hend) {
        if (len == cap - 1)
            return -1;
        ssize_t r = recv(fd, buf + len, cap - 1 - len, 0);
        if (r <= 0)
            return -1;
        len += (size_t)r;
        buf[len] = 0;
        hend = strstr(buf, "\r\n\r\n");
    }
    int status = atoi(buf + 9);
    const char *cl = strcasestr(buf, "\r\nContent-Length:");
    if (!cl || cl > hend)
        return -1; /* lcnd always sends a length on these answers */
    size_t body = (size_t)strtoull(cl + 17, NULL, 10);
    size_t have = len - (size_t)(hend + 4 - buf);
    while (have < body) {
        char sink[65536];
        size_t want = body - have < sizeof sink ? body - have : sizeof sink;
        ssize_t r = recv(fd, sink, want, 0);
        if (r <= 0)
            return -1;
        have += (size_t)r;
    }
    return status;
}

static void *client_main(void *arg)
{
    struct client *c = arg;
    const struct opts *o = c->o;
    char req[1024];
    int reqlen = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: %s\r\n%s%s%s\r\n", o->path,
                          o->host, o->token ? "Authorization: Bearer " : "",
                          o->token ? o->token : "", o->token ? "\r\n" : "");
    char *buf = malloc(1 << 16);
    int fd = dial(o);
    int64_t interval = (int64_t)(o->interval_ms * 1e6);
    int64_t next = c->t_begin;
    for (;;) {
        int64_t t = now_ns();
        if (interval > 0) {
            if (t < next) {
                struct timespec ts = {(time_t)((next - t) / 1000000000),
                                      (long)((next - t) % 1000000000)};
                nanosleep(&ts, NULL);
            } else if (t - next > interval) {
                c->behind++;
            }
            next += interval;
            t = now_ns();
        }
        if (t >= c->t_end)
            break;
        if (fd < 0) {
            fd = dial(o);
            c->reconnects++;
            if (fd < 0) {
                c->errors++;
                continue;
            }
        }
        int64_t t0 = now_ns();
        int st = roundtrip(fd, req, (size_t)reqlen, buf, 1 << 16);
        int64_t t1 = now_ns();
        if (st < 0) {
            close(fd);
            fd = -1;
            c->errors++;
            continue;
        }
        if (st != 200)
            c->non200++;
        if (t0 >= c->t_measure) {
            if (c->n == c->cap) {
                c->cap = c->cap ? 2 * c->cap : 4096;
                c->lat = realloc(c->lat, c->cap * sizeof *c->lat);
            }
            c->lat[c->n++] = t1 - t0;
        }
    }
    if (fd >= 0)
        close(fd);
    free(buf);
    return NULL;
}

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static double pct(const int64_t *v, size_t n, double p)
{
    if (!n)
        return 0;
    /* nearest rank */
    size_t k = (size_t)(p / 100.0 * (double)n + 0.999999);
    if (k < 1)
        k = 1;
    if (k > n)
        k = n;
    return (double)v[k - 1] / 1e3;
}

int main(int argc, char **argv)
{
    struct opts o = {.clients = 50, .seconds = 10, .warmup = 1, .interval_ms = 0};
    const char *addr = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            fprintf(stderr, "bench_http_poll: %s needs a value\n", a);
            return 2;
        }
        i++;
        if (!strcmp(a, "--addr"))
            addr = v;
        else if (!strcmp(a, "--path"))
            o.path = v;
        else if (!strcmp(a, "--token"))
            o.token = v;
        else if (!strcmp(a, "--samples"))
            o.samples = v;
        else if (!strcmp(a, "--clients"))
            o.clients = atoi(v);
        else if (!strcmp(a, "--seconds"))
            o.seconds = atof(v);
        else if (!strcmp(a, "--warmup"))
            o.warmup = atof(v);
        else if (!strcmp(a, "--interval-ms"))
            o.interval_ms = atof(v);
        else {
            fprintf(stderr, "bench_http_poll: unknown option %s\n", a);
            return 2;
        }
    }
    const char *colon = addr ? strrchr(addr, ':') : NULL;
    if (!colon || !o.path || o.clients < 1 || o.clients > 4096 || o.seconds <= 0) {
        fprintf(stderr, "usage: bench_http_poll --addr HOST:PORT --path PATH [--clients N] "
                        "[--seconds S] [--warmup S] [--interval-ms MS] [--token T] "
                        "[--samples FILE]\n");
        return 2;
    }
    snprintf(o.host, sizeof o.host, "%.*s", (int)(colon - addr), addr);
    snprintf(o.port, sizeof o.port, "%s", colon + 1);

    struct client *cs = calloc((size_t)o.clients, sizeof *cs);
    int64_t t0 = now_ns();
    for (int i = 0; i < o.clients; i++) {
        cs[i].o = &o;
        /* paced clients are spread over one interval */
        cs[i].t_begin = t0 + (int64_t)(o.interval_ms * 1e6 * i / o.clients);
        cs[i].t_measure = t0 + (int64_t)(o.warmup * 1e9);
        cs[i].t_end = cs[i].t_measure + (int64_t)(o.seconds * 1e9);
        pthread_create(&cs[i].th, NULL, client_main, &cs[i]);
    }
    size_t total = 0;
    uint64_t errors = 0, non200 = 0, reconnects = 0, behind = 0;
    for (int i = 0; i < o.clients; i++) {
        pthread_join(cs[i].th, NULL);
        total += cs[i].n;
        errors += cs[i].errors;
        non200 += cs[i].non200;
        reconnects += cs[i].reconnects;
        behind += cs[i].behind;
    }
    int64_t *all = malloc((total ? total : 1) * sizeof *all);
    size_t k = 0;
    double sum = 0;
    for (int i = 0; i < o.clients; i++) {
        memcpy(all + k, cs[i].lat, cs[i].n * sizeof *all);
        k += cs[i].n;
        free(cs[i].lat);
    }
    qsort(all, total, sizeof *all, cmp64);
    for (size_t i = 0; i < total; i++)
        sum += (double)all[i];
    if (o.samples) {
        FILE *f = fopen(o.samples, "w");
        if (f) {
            for (size_t i = 0; i < total; i++)
                fprintf(f, "%.1f\n", (double)all[i] / 1e3);
            fclose(f);
        }
    }
    printf("{\"clients\":%d,\"seconds\":%g,\"warmup_s\":%g,\"interval_ms\":%g,"
           "\"requests\":%zu,\"requests_per_s\":%.1f,\"errors\":%llu,\"non_200\":%llu,"
           "\"reconnects\":%llu,\"late_sends\":%llu,\"latency_us\":{\"mean\":%.1f,\"p50\":%.1f,"
           "\"p90\":%.1f,\"p99\":%.1f,\"p999\":%.1f,\"max\":%.1f}}\n",
           o.clients, o.seconds, o.warmup, o.interval_ms, total, (double)total / o.seconds,
           (unsigned long long)errors, (unsigned long long)non200, (unsigned long long)reconnects,
           (unsigned long long)behind, total ? sum / (double)total / 1e3 : 0, pct(all, total, 50),
           pct(all, total, 90), pct(all, total, 99), pct(all, total, 99.9),
           total ? (double)all[total - 1] / 1e3 : 0);
    free(all);
    free(cs);
    return errors || non200 ? 1 : 0;
}
