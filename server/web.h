/*
 * web.h - GET /: lcnd's web page (server/web/index.html, with the bundled
 * samples inlined; compiled into the binary by cmake/web_page.cmake and
 * cmake/embed.cmake). The page is served without a token: it holds no
 * data, and asks for the token itself to call the API like any client.
 */
#ifndef LCN_SERVER_WEB_H
#define LCN_SERVER_WEB_H

#include <stddef.h>

struct http_req;

/* The page as built (NUL-terminated; the length without the NUL). */
extern const char lcn_web_index[];
extern const size_t lcn_web_index_len;

/* Route handler: 200 with the page as text/html (ctx unused). */
void web_index(struct http_req *r, void *ctx);

#endif
