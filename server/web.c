/*
 * web.c - GET / (web.h). The page's script and styles are inline, so the
 * policy allows inline code but nothing from elsewhere: the page talks to
 * this daemon only.
 */
#include "server/web.h"

#include "server/http.h"

void web_index(struct http_req *r, void *ctx)
{
    (void)ctx;
    http_add_header(r, "Content-Security-Policy",
                    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
                    "connect-src 'self'; img-src 'self' blob: data:; base-uri 'none'; "
                    "form-action 'none'; frame-ancestors 'none'");
    http_add_header(r, "X-Content-Type-Options", "nosniff");
    http_respond_copy(r, 200, "text/html; charset=utf-8", lcn_web_index, lcn_web_index_len);
}
