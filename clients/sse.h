/*
 * sse.h - an incremental parser for Server-Sent Events (the text/event-stream
 * format of the WHATWG HTML standard, section "Server-sent events").
 *
 * Bytes are fed in chunks of any size, split anywhere (also inside a line or
 * between the CR and LF of a line end). Lines end with CRLF, LF or CR. A line
 * "field: value" sets a field (one space after the colon is dropped); a line
 * starting with ':' is a comment; an empty line dispatches the event when at
 * least one data line was seen. Fields other than id, event and data are
 * ignored. lcnd sends `id: SEQ`, `event: TYPE`, `data: JSON` (docs/API.md).
 *
 * Ownership: the parser owns its buffers; the event passed to the callback
 * is valid only during the call.
 *
 * Why not a library: libcurl, which carries the stream, hands over bytes,
 * not events; Debian 12's archive has no C library that parses
 * text/event-stream (`apt-cache search server-sent` lists only a Go
 * package). The format is a few line rules, kept here in about 110 lines.
 */
#ifndef LCN_CLIENTS_SSE_H
#define LCN_CLIENTS_SSE_H

#include <stddef.h>

#include "sbuf.h"

/* Lines (and an event's data) longer than this make the parser stop with
 * sse_parser.overflow set: a stream that never ends a line is not SSE. */
#define SSE_MAX_LINE (16u << 20)

struct sse_event {
    const char *id;    /* the last event id seen on the stream ("" when none) */
    const char *event; /* the event type ("message" when not given) */
    const char *data;  /* the data lines joined with '\n' */
    size_t data_len;
};

struct sse_parser {
    void (*on_event)(void *ctx, const struct sse_event *ev);
    void *ctx;
    struct sbuf line, data, event, id;
    int have_data; /* a data line was seen since the last dispatch */
    int last_cr;   /* the previous byte was a CR that ended a line */
    int overflow;  /* a line or the data grew past SSE_MAX_LINE; input is ignored */
    size_t events; /* events dispatched so far */
};

/* Sets up p; on_event is called once per dispatched event. */
void sse_init(struct sse_parser *p, void (*on_event)(void *ctx, const struct sse_event *ev),
              void *ctx);

/* Feeds len bytes. Events complete in the bytes seen so far are dispatched
 * before the call returns. */
void sse_feed(struct sse_parser *p, const char *buf, size_t len);

/* Frees the buffers. An event not yet ended by an empty line is dropped, as
 * the standard says for a stream that ends mid-event. */
void sse_release(struct sse_parser *p);

#endif
