/*
 * sbuf.h - a growable text buffer for building HTTP answers (progress
 * pages, event streams, metrics).
 *
 * Ownership: a struct sbuf owns p; zero-initialise it, append, then take p
 * (it stays NUL-terminated) or free it. Out of memory aborts (xgrow).
 */
#ifndef LCN_SERVER_SBUF_H
#define LCN_SERVER_SBUF_H

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
