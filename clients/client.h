/*
 * client.h - helpers shared by lcnctl's commands that talk to lcnd: the
 * connection, the mapping of responses to exit statuses and error
 * messages, and small readers of the API's JSON (docs/API.md).
 */
#ifndef LCN_CLIENTS_CLIENT_H
#define LCN_CLIENTS_CLIENT_H

#include <stdio.h>

#include <jansson.h>

#include "clients/http.h"
#include "clients/lcnctl.h"
#include "objective.h"

/* Sets up h for lcnctl_server (or $LCN_SERVER, or the default). Returns 0,
 * or LCNCTL_EXIT_USAGE after printing why. */
int client_connect(const struct lcnctl_cmd *cmd, struct lcnhttp *h);

/* The exit status for an HTTP error status: 400, 413 and 422 give
 * LCNCTL_EXIT_USAGE (invalid input), 404 LCNCTL_EXIT_NOT_FOUND, anything
 * else LCNCTL_EXIT_REFUSED. */
int client_exit_for_status(long status);

/*
 * Reports a failed exchange and returns its exit status. rc is what
 * lcnhttp_request returned: LCN_EIO means no response (exit 4); otherwise
 * r holds a response with a status outside 2xx, whose API error object
 * {"code","message","field"} is printed as
 *   "lcnctl CMD: <class> (HTTP 404 not_found) at FIELD: MESSAGE".
 * The status is client_exit_for_status's, except 409 no_solution:
 * LCNCTL_EXIT_NO_SOLUTION.
 * With --json the error is also printed to stdout as one JSON object
 * {"error": {...}, "http_status": N}.
 */
int client_report(const struct lcnctl_cmd *cmd, int rc, const struct lcnhttp_resp *r);

/* Prints "lcnctl CMD: unexpected response ...: reason" (and the JSON form
 * with --json); returns LCNCTL_EXIT_REFUSED. */
int client_bad_response(const struct lcnctl_cmd *cmd, const struct lcnhttp_resp *r,
                        const char *why);

/*
 * One request whose success response is a JSON object: METHOD path with an
 * optional JSON body. Returns 0 with *out set (a new reference) for a 2xx
 * response with a JSON object body, else the exit status after reporting.
 */
int client_call(const struct lcnctl_cmd *cmd, struct lcnhttp *h, const char *method,
                const char *path, const json_t *body, json_t **out);

/* "/jobs/<id, percent-encoded><suffix>", malloc'd. */
char *client_job_path(const char *id, const char *suffix);

/* Prints j compactly and a newline on stdout. */
void client_print_json(const json_t *j);

/* Reads {"K","nK","Phi","C"} (all integers) into *o; returns 0, or -1 when
 * best is not such an object (e.g. null: no tuple yet). */
int client_tuple(const json_t *best, struct lcn_obj *o);

/* "K=4 nK=8 Phi=274 C=48", or "none" when best has no tuple. */
void client_format_tuple(char *buf, size_t len, const json_t *best);

/* 1 when state names a terminal job state (succeeded, failed, cancelled,
 * interrupted). */
int client_state_terminal(const char *state);

/* The exit status for a terminal job: 0 succeeded, 1 otherwise. */
int client_job_exit(const json_t *status);

/* The one-line human summary of a job status:
 * "j...: succeeded (deadline) after 2.00 s on cpu: K=4 nK=8 Phi=274 C=48,
 *  time to target 0.075 s". */
void client_print_summary(FILE *f, const json_t *status);

/* String member, or NULL when absent or not a string. */
const char *client_str(const json_t *o, const char *key);
/* s for a terminal, as lcn_printable (util.h) writes it: control bytes,
 * C1 controls and bidirectional overrides and isolates as \xNN per byte,
 * so a job's name (any submitter's text) cannot send escape sequences,
 * forge lines or reorder what follows; at most len - 1 bytes, never cut
 * inside an escape or a UTF-8 character, in buf, which it returns. */
const char *client_printable(const char *s, char *buf, size_t len);
/* Whether an output file OUT ends up on stdout, or is not a regular file
 * (/dev/stdout, a terminal, a pipe; "-" is stdout): a note "wrote OUT"
 * printed on stdout would land in or after what was written there, so it
 * goes to stderr, and --json (which wants stdout) is refused. Asked before
 * writing: the atomic write replaces a regular OUT with a new file. */
int client_out_is_stream(const char *out);
/* Number member (integer or real), or dflt. */
double client_num(const json_t *o, const char *key, double dflt);

#endif
