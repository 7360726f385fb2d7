/*
 * cors.h - the browser origins allowed to call the API from their pages
 * (CORS, the allowed_origins option; docs/API.md, "Browsers and CORS").
 *
 * Off (no origin) by default. When origins are configured, the HTTP layer
 * answers preflight OPTIONS requests and marks answers to a request whose
 * Origin header is one of them, exactly, with Access-Control-Allow-Origin.
 *
 * Ownership: struct cors owns its copy of the origins; cors_release
 * frees it. Read-only after cors_init, so any thread may match.
 */
#ifndef LCN_SERVER_CORS_H
#define LCN_SERVER_CORS_H

#include <stddef.h>

/* What a preflight answer allows: every method and request header the API
 * uses, whatever the path (so that a preflight tells nothing about the
 * routes), for this many seconds. */
#define CORS_ALLOW_METHODS  "GET, HEAD, POST, DELETE"
#define CORS_ALLOW_HEADERS  "Authorization, Content-Type, Accept, Last-Event-ID"
#define CORS_EXPOSE_HEADERS "Location, Retry-After, WWW-Authenticate"
#define CORS_MAX_AGE_S      "600"

struct cors {
    const char **origins; /* into buf */
    size_t n;             /* 0: CORS off */
    char *buf;            /* the list, cut at the commas */
};

/*
 * Reads a comma-separated list of exact origins, "scheme://host[:port]"
 * with scheme http or https, no path and no trailing '/' (blanks around
 * the commas are dropped; "" or NULL: none). Returns 0, or LCN_EINVAL with
 * err naming the bad item ("allowed_origins: 'example.org' is not an
 * origin (scheme://host[:port])"); nothing to release then.
 */
int cors_init(struct cors *c, const char *list, char *err, size_t errlen);
void cors_release(struct cors *c);

/* The configured origin equal to origin (case-sensitive, as browsers send
 * it), or NULL when there is none (or origin is NULL). */
const char *cors_match(const struct cors *c, const char *origin);

#endif
