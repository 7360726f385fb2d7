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
