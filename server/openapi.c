/*
 * openapi.c - GET /openapi.json (openapi.h). The document is the bytes of
 * docs/openapi.json, unchanged, so a client can compare it with the file.
 */
#include <string.h>

#include "server/openapi.h"
#include "server/http.h"
#include "util.h"

void openapi_get(struct http_req *r, void *ctx)
{
    (void)ctx;
    http_respond_copy(r, 200, "application/json", lcn_openapi_json, lcn_openapi_json_len);
}
