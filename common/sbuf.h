/*
 * sbuf.h - the project's one growable text buffer: the daemon's HTTP
 * answers (progress pages, event streams, metrics), the graph file
 * writer's pretty-printed JSON, the client's event-stream lines.
 *
 * Ownership: a struct sbuf owns p; zero-initialise it, append, then take p
 * (it stays NUL-terminated once anything was appended, and len counts the
 * bytes before the NUL) or free it. Out of memory aborts (xgrow).
 *
 * Why not a library: Debian 12's archive has no small C library for just a
 * growable string (redis' sds, git's strbuf are not packaged); GLib's
 * GString (libglib2.0-dev) would bring all of GLib for these 40 lines, and
 * jansson's string buffer is internal (jansson.h does not declare it).
 */
#ifndef LCN_SBUF_H
#define LCN_SBUF_H

#include <stddef.h>

struct sbuf {
    char *p;
    size_t len, cap;
};

/* Appends n bytes of s. */
void sbuf_add(struct sbuf *b, const char *s, size_t n);

/* Appends the string s. */
void sbuf_puts(struct sbuf *b, const char *s);

/* Appends printf-formatted text. */
void sbuf_printf(struct sbuf *b, const char *f, ...) __attribute__((format(printf, 2, 3)));

#endif
