/*
 * openapi.h - GET /openapi.json: the OpenAPI 3.1 description of the API
 * (docs/openapi.json), compiled into the binary at build time by
 * cmake/embed.cmake, so the daemon serves the document of its own version
 * with no file to find at run time.
 */
#ifndef LCN_SERVER_OPENAPI_H
#define LCN_SERVER_OPENAPI_H

#include <stddef.h>

struct http_req;

/* The bytes of docs/openapi.json as built (NUL-terminated; the length
 * without the NUL). Static storage, never freed. */
extern const char lcn_openapi_json[];
extern const size_t lcn_openapi_json_len;

/* Route handler: answers 200 with the document as application/json
 * (ctx unused). */
void openapi_get(struct http_req *r, void *ctx);

#endif
