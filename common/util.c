#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static _Noreturn void oom(size_t n)
{
    fprintf(stderr, "fatal: out of memory allocating %zu bytes\n", n);
    abort();
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        oom(n);
    return p;
}

void *xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p)
        oom(count * size);
    return p;
}

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        oom(n);
    return q;
}

char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = xmalloc(n);
    memcpy(d, s, n);
    return d;
}

void xgrow(void **p, size_t elem, size_t *cap, size_t need)
{
    if (need <= *cap)
        return;
    size_t c = *cap ? *cap : 4;
    while (c < need)
        c *= 2;
    *p = xrealloc(*p, c * elem);
    *cap = c;
}

void lcn_free_each(void *const *ptrs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(ptrs[i]);
}

void lcn_assert_fail(const char *expr, const char *file, int line)
{
    fprintf(stderr, "fatal: assertion '%s' failed at %s:%d\n", expr, file, line);
    abort();
}

int64_t lcn_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t lcn_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int lcn_cpu_model(char *out, size_t len)
{
    out[0] = '\0';
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return -1;
    char line[512];
    int rc = -1;
    while (rc && fgets(line, sizeof line, f)) {
        char *c = strchr(line, ':');
        if (strncmp(line, "model name", 10) != 0 || !c)
            continue;
        c += 1 + strspn(c + 1, " \t");
        c[strcspn(c, "\r\n")] = '\0';
        snprintf(out, len, "%s", c);
        rc = 0;
    }
    fclose(f);
    return rc;
}

static const char *digits(const char *s)
{
    while (*s >= '0' && *s <= '9')
        s++;
    return s;
}

int lcn_number_syntax(const char *s, int integer)
{
    s += *s == '-';
    if (*s < '0' || *s > '9')
        return 0;
    s = *s == '0' ? s + 1 : digits(s);
    if (!integer && *s == '.') {
        const char *f = digits(s + 1);
        if (f == s + 1)
            return 0;
        s = f;
    }
    if (!integer && (*s == 'e' || *s == 'E')) {
        s += 1 + (s[1] == '+' || s[1] == '-');
        const char *x = digits(s);
        if (x == s)
            return 0;
        s = x;
    }
    return *s == 0;
}

/* Bytes of the UTF-8 sequence at p (1 for a byte that starts none), and
 * whether it is a character lcn_printable escapes. */
static size_t utf8_unit(const unsigned char *p, int *escape)
{
    size_t n = p[0] < 0xc0 ? 1 : p[0] < 0xe0 ? 2 : p[0] < 0xf0 ? 3 : p[0] < 0xf8 ? 4 : 1;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80) {
            n = 1; /* not read past the byte that ends it (the NUL) */
            break;
        }
    }
    /* C0, DEL; C1 (U+0080..U+009F); U+202A..U+202E; U+2066..U+2069 */
    *escape = (n == 1 && (p[0] < 0x20 || p[0] == 0x7f)) ||
              (n == 2 && p[0] == 0xc2 && p[1] <= 0x9f) ||
              (n == 3 && p[0] == 0xe2 && p[1] == 0x80 && p[2] >= 0xaa && p[2] <= 0xae) ||
              (n == 3 && p[0] == 0xe2 && p[1] == 0x81 && p[2] >= 0xa6 && p[2] <= 0xa9);
    return n;
}

char *lcn_printable(const char *in, char *out, size_t cap)
{
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)in; *p;) {
        int escape;
        size_t n = utf8_unit(p, &escape);
        if (o + (escape ? 4 * n : n) >= cap)
            break;
        for (size_t i = 0; i < n; i++, p++) {
            if (escape)
                o += (size_t)snprintf(out + o, cap - o, "\\x%02x", *p);
            else
                out[o++] = (char)*p;
        }
    }
    out[o] = 0;
    return out;
}
