/*
 * lcnctl.h - the command table of lcnctl and the helpers its commands share.
 *
 * lcnctl is a dispatcher over groups of commands. Each group lives in its
 * own file (cmd_local.c: commands that need no daemon) and exports one
 * array of struct lcnctl_cmd terminated by an entry whose name is NULL; the
 * group is listed once in lcnctl.c. The dispatcher parses a command's line
 * against its table (struct lcnctl_args) and calls its handler, which
 * returns the process exit status.
 *
 * Exit statuses, for every command (docs/lcnctl.md lists them per command):
 *   0  success (check: the layout is valid; wait/watch: the job succeeded);
 *   1  a negative answer: the job failed, was cancelled or interrupted, or
 *      a layout is invalid;
 *   2  usage error or invalid input: a file that cannot be read or parsed,
 *      or a request the server rejected as invalid (400, 413, 422);
 *   3  not found: the server does not know the job (404);
 *   4  the server cannot be reached (no HTTP response);
 *   5  the server refused the request otherwise (any other 4xx or 5xx, or a
 *      response that is not what the API promises);
 *   6  no solution yet: the job has no validated layout (409 no_solution);
 *   130 interrupted (SIGINT) while following a job the server keeps running
 *      (submit --wait).
 * Errors from the server are printed with the API's error code, message and
 * field path: "lcnctl submit: invalid input (HTTP 400 invalid_field) at
 * graph.edges[3].source: unknown node 99".
 */
#ifndef LCN_LCNCTL_H
#define LCN_LCNCTL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "opts.h"

struct graphio_doc;

/*
 * The exit statuses above, one row each: X(NAME, value, phrase) gives
 * LCNCTL_EXIT_NAME = value, and the phrase `lcnctl --help` lists it with
 * (lcnctl_exit_phrase), so that a status and its help cannot drift apart.
 * The values are the contract: never renumber one.
 */
#define LCNCTL_EXITS(X)                                                                            \
    X(OK, 0, "success")                                                                            \
    X(NO, 1, "job failed or layout invalid")                                                       \
    X(USAGE, 2, "usage or invalid input")                                                          \
    X(NOT_FOUND, 3, "not found")                                                                   \
    X(UNREACHABLE, 4, "server unreachable")                                                        \
    X(REFUSED, 5, "server refused the request")                                                    \
    X(NO_SOLUTION, 6, "no solution yet")                                                           \
    /* 128 + SIGINT, as shells report it */                                                        \
    X(INTERRUPTED, 130, "interrupted while the job goes on")

#define LCNCTL_EXIT_ENUM(name, value, phrase) LCNCTL_EXIT_##name = (value),
enum { LCNCTL_EXITS(LCNCTL_EXIT_ENUM) };
#undef LCNCTL_EXIT_ENUM

/* The phrase of exit status code in the table above ("not found"), or NULL
 * for a code that is not one. */
const char *lcnctl_exit_phrase(int code);

/*
 * What the dispatcher hands a command once its command line has been
 * parsed: opts, the struct the command's table describes with the
 * defaults applied and the options given (NULL when opts_size is 0; the
 * dispatcher frees it after run); arg, the one positional argument (NULL
 * when the command takes none); and the command line from the command
 * name on (argv[0] = the name), for a record of it.
 */
struct lcnctl_args {
    void *opts;
    char *arg;
    int argc;
    char **argv;
};

struct lcnctl_cmd {
    const char *name; /* the word after "lcnctl" */
    /* runs the command; returns the process exit status */
    int (*run)(const struct lcnctl_cmd *cmd, const struct lcnctl_args *a);
    const char *summary; /* one line for `lcnctl --help` */
    /* `lcnctl NAME --help`: usage (synopsis and description, ending in a
     * newline), then the options generated from opts (the command's table,
     * opts.h, nopts rows; the common options are added), then exit_status */
    const char *usage;
    const struct opt *opts;
    size_t nopts;
    const char *exit_status;
    size_t opts_size; /* sizeof the struct opts describes; 0: no options */
    /* the name of the one positional argument the command takes, for the
     * usage error "expected one layout file"; NULL: none */
    const char *arg;
};

/* The groups (each terminated by a NULL name). */
extern const struct lcnctl_cmd lcnctl_local_cmds[];  /* cmd_local.c: check, gen */
extern const struct lcnctl_cmd lcnctl_http_cmds[];   /* cmd_http.c: submit ... wait */
extern const struct lcnctl_cmd lcnctl_render_cmds[]; /* cmd_render.c: render */
extern const struct lcnctl_cmd lcnctl_bench_cmds[];  /* cmd_bench.c: bench */

/*
 * Options every command accepts, also before the command name
 * (`lcnctl --server URL --json list`): the server URL (NULL: $LCN_SERVER or
 * the default, see http.h), machine output, and how often a request that
 * got 429 or 503 is sent again (--retry N, lcnhttp_request).
 */
extern const char *lcnctl_server;
extern int lcnctl_json;
extern int64_t lcnctl_retry;

/* Reads the graph or layout file at path into *d (graphio_read_file; the
 * caller releases *d with graphio_release). Returns 0, or LCNCTL_EXIT_USAGE
 * after printing "lcnctl NAME: PATH: reason" to stderr ("lcnctl NAME:
 * reason" when the file cannot be read: that reason names the path). */
int lcnctl_read_graph(const struct lcnctl_cmd *cmd, struct graphio_doc *d, const char *path);

/* Writes the `lcnctl NAME --help` text of cmd. */
void lcnctl_write_help(FILE *f, const struct lcnctl_cmd *cmd);

/* Prints "lcnctl NAME: <formatted message>" and the --help hint to stderr;
 * returns LCNCTL_EXIT_USAGE. */
int lcnctl_usage_error(const struct lcnctl_cmd *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prints "lcnctl NAME: <formatted message>" to stderr. */
void lcnctl_errorf(const struct lcnctl_cmd *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
