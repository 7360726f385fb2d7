#include "sbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

void sbuf_add(struct sbuf *b, const char *s, size_t n)
{
    xgrow((void **)&b->p, 1, &b->cap, b->len + n + 1);
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

void sbuf_puts(struct sbuf *b, const char *s)
{
    sbuf_add(b, s, strlen(s));
}

void sbuf_printf(struct sbuf *b, const char *f, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, f);
    int n = vsnprintf(tmp, sizeof tmp, f, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof tmp) {
        sbuf_add(b, tmp, (size_t)n);
        return;
    }
    xgrow((void **)&b->p, 1, &b->cap, b->len + (size_t)n + 1);
    va_start(ap, f);
    vsnprintf(b->p + b->len, (size_t)n + 1, f, ap);
    va_end(ap);
    b->len += (size_t)n;
}
