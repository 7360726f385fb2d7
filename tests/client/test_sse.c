/*
 * clients/sse.c: the incremental parser against a slow twin that sees the
 * whole stream at once (split into lines first, then fields), on fixed
 * streams and random ones, fed in every split and in random chunkings.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "clients/sse.h"
#include "util.h"

/* Events recorded as "id|event|data\n" lines (data's '\n' shown as '~'). */
struct rec {
    char *s;
    size_t len, cap;
};

static void rec_add(struct rec *r, const char *id, const char *ev, const char *data, size_t dlen)
{
    size_t need = r->len + strlen(id) + strlen(ev) + dlen + 4;
    xgrow((void **)&r->s, 1, &r->cap, need + 1);
    r->len += (size_t)sprintf(r->s + r->len, "%s|%s|", id, ev);
    for (size_t i = 0; i < dlen; i++)
        r->s[r->len++] = data[i] == '\n' ? '~' : data[i];
    r->s[r->len++] = '\n';
    r->s[r->len] = '\0';
}

static void on_event(void *ctx, const struct sse_event *ev)
{
    assert_int_equal(strlen(ev->data), ev->data_len);
    rec_add(ctx, ev->id, ev->event, ev->data, ev->data_len);
}

/* The twin: whole input, lines split on CRLF / LF / CR, fields applied. */
static void twin(const char *in, size_t len, struct rec *out)
{
    char id[4096] = "", ev[4096] = "", data[65536] = "";
    size_t dlen = 0;
    int have = 0;
    size_t i = 0;
    while (i < len) {
        size_t j = i;
        while (j < len && in[j] != '\r' && in[j] != '\n')
            j++;
        if (j == len)
            break; /* an unterminated last line is never processed */
        char line[8192];
        size_t n = j - i;
        memcpy(line, in + i, n);
        line[n] = '\0';
        i = (in[j] == '\r' && j + 1 < len && in[j + 1] == '\n') ? j + 2 : j + 1;
        if (n == 0) {
            if (have) {
                if (dlen && data[dlen - 1] == '\n')
                    dlen--;
                rec_add(out, id, ev[0] ? ev : "message", data, dlen);
            }
            have = 0;
            dlen = 0;
            ev[0] = '\0';
            continue;
        }
        if (line[0] == ':')
            continue;
        char *colon = strchr(line, ':');
        char *val = colon ? colon + 1 : line + n;
        if (colon)
            *colon = '\0';
        if (*val == ' ')
            val++;
        if (strcmp(line, "data") == 0) {
            size_t vl = strlen(val);
            memcpy(data + dlen, val, vl);
            dlen += vl;
            data[dlen++] = '\n';
            have = 1;
        } else if (strcmp(line, "event") == 0) {
            snprintf(ev, sizeof ev, "%s", val);
        } else if (strcmp(line, "id") == 0) {
            snprintf(id, sizeof id, "%s", val);
        }
    }
}

static void parse_chunks(const char *in, size_t len, const size_t *cuts, int ncuts, struct rec *out)
{
    struct sse_parser p;
    sse_init(&p, on_event, out);
    size_t at = 0;
    for (int c = 0; c <= ncuts; c++) {
        size_t end = c < ncuts ? cuts[c] : len;
        sse_feed(&p, in + at, end - at);
        at = end;
    }
    assert_false(p.overflow);
    sse_release(&p);
}

static void expect_same(const char *in, size_t len, const size_t *cuts, int ncuts)
{
    struct rec a = {0}, b = {0};
    twin(in, len, &a);
    parse_chunks(in, len, cuts, ncuts, &b);
    assert_string_equal(a.s ? a.s : "", b.s ? b.s : "");
    free(a.s);
    free(b.s);
}

static const char *const fixed[] = {
    /* what lcnd sends */
    ": lcnd progress stream\n\nid: 1\nevent: state\ndata: {\"seq\":1,\"type\":\"state\"}\n\n"
    ": keepalive\n\nid: 2\nevent: improve\ndata: {\"seq\":2}\n\n",
    /* CRLF, CR, multi-line data, no space after the colon, unknown fields */
    "id:7\r\nevent:x\r\ndata:a\r\ndata: b\r\nretry: 10\r\n\r\ndata: c\rdata:\r\r",
    /* an event without data is not dispatched; the id persists */
    "id: 9\nevent: lonely\n\ndata: after\n\n",
    /* a field name without a colon, a data line that is only "data" */
    "data\n\nevent\ndata: z\n\n",
    /* a trailing event without its blank line is dropped */
    "data: kept\n\ndata: dropped\n",
};

static void test_fixed_every_split(void **s)
{
    (void)s;
    for (size_t f = 0; f < sizeof fixed / sizeof fixed[0]; f++) {
        size_t len = strlen(fixed[f]);
        expect_same(fixed[f], len, NULL, 0);
        for (size_t c = 0; c <= len; c++)
            expect_same(fixed[f], len, &c, 1);
        /* byte by byte */
        size_t *cuts = malloc(len * sizeof *cuts);
        for (size_t c = 0; c < len; c++)
            cuts[c] = c;
        expect_same(fixed[f], len, cuts, (int)len);
        free(cuts);
    }
}

static void test_known_events(void **s)
{
    (void)s;
    struct rec r = {0};
    const char *in = fixed[1];
    parse_chunks(in, strlen(in), NULL, 0, &r);
    assert_string_equal(r.s, "7|x|a~b\n7|message|c~\n");
    free(r.s);
    memset(&r, 0, sizeof r);
    parse_chunks(fixed[2], strlen(fixed[2]), NULL, 0, &r);
    assert_string_equal(r.s, "9|message|after\n");
    free(r.s);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)rng;
}

static void test_random_streams(void **s)
{
    (void)s;
    static const char *const pieces[] = {"data: ", "data:", "id: ", "event: ", ": c",
                                         "x",      "{}",    "12",   " ",       ":",
                                         "\n",     "\r",    "\r\n", "\n\n",    "retry: 1"};
    const int np = (int)(sizeof pieces / sizeof pieces[0]);
    for (int round = 0; round < 2000; round++) {
        char in[2048];
        size_t len = 0;
        int parts = 1 + (int)(next() % 60);
        for (int i = 0; i < parts; i++) {
            const char *p = pieces[next() % (uint32_t)np];
            size_t pl = strlen(p);
            if (len + pl >= sizeof in)
                break;
            memcpy(in + len, p, pl);
            len += pl;
        }
        in[len] = '\0';
        size_t cuts[16];
        int nc = (int)(next() % 16);
        for (int c = 0; c < nc; c++)
            cuts[c] = len ? next() % (len + 1) : 0;
        for (int a = 0; a < nc; a++) /* sort */
            for (int b = a + 1; b < nc; b++)
                if (cuts[b] < cuts[a]) {
                    size_t t = cuts[a];
                    cuts[a] = cuts[b];
                    cuts[b] = t;
                }
        expect_same(in, len, cuts, nc);
    }
}

static void count_only(void *ctx, const struct sse_event *ev)
{
    (void)ev;
    ++*(int *)ctx;
}

static void test_overflow(void **s)
{
    (void)s;
    int n = 0;
    struct sse_parser p;
    sse_init(&p, count_only, &n);
    size_t len = SSE_MAX_LINE + 10;
    char *big = malloc(len);
    memset(big, 'a', len);
    sse_feed(&p, big, len);
    assert_true(p.overflow);
    sse_feed(&p, "\n\ndata: x\n\n", 11); /* ignored after the overflow */
    assert_int_equal(n, 0);
    sse_release(&p);
    free(big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixed_every_split),
        cmocka_unit_test(test_known_events),
        cmocka_unit_test(test_random_streams),
        cmocka_unit_test(test_overflow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
