/* The allowed browser origins (see cors.h). */
#include "server/cors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "util.h"

/* "http://host" or "https://host:port": a scheme, a host without '/',
 * and an optional port of digits. */
static int is_origin(const char *s)
{
    const char *host;
    if (!strncmp(s, "http://", 7))
        host = s + 7;
    else if (!strncmp(s, "https://", 8))
        host = s + 8;
    else
        return 0;
    if (!*host || strpbrk(host, "/?#@ \t"))
        return 0;
    const char *colon = strrchr(host, ':');
    if (colon && host[0] != '[') {
        if (colon == host || !colon[1] || strspn(colon + 1, "0123456789") != strlen(colon + 1))
            return 0;
    }
    return 1;
}

int cors_init(struct cors *c, const char *list, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    /* one copy of the list, cut into the origins in place */
    c->buf = xstrdup(list ? list : "");
    for (char *p = c->buf; *p;) {
        char *end = strchr(p, ',');
        char *next = end ? end + 1 : p + strlen(p);
        char *a = p, *b = end ? end : next;
        while (a < b && (*a == ' ' || *a == '\t'))
            a++;
        while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
            b--;
        *b = '\0';
        if (!is_origin(a)) {
            snprintf(err, errlen,
                     "allowed_origins: '%.200s' is not an origin (scheme://host[:port])", a);
            cors_release(c);
            return LCN_EINVAL;
        }
        c->origins = xrealloc(c->origins, (c->n + 1) * sizeof *c->origins);
        c->origins[c->n++] = a;
        p = next;
    }
    return 0;
}

void cors_release(struct cors *c)
{
    free(c->origins);
    free(c->buf);
    memset(c, 0, sizeof *c);
}

const char *cors_match(const struct cors *c, const char *origin)
{
    for (size_t i = 0; origin && i < c->n; i++)
        if (!strcmp(c->origins[i], origin))
            return c->origins[i];
    return NULL;
}
