/*
 * lcnctl.h - the command table of lcnctl and the helpers its commands share.
 *
 * lcnctl is a dispatcher over groups of commands. Each group lives in its
 * own file (cmd_local.c: commands that need no daemon) and exports one
 * array of struct lcnctl_cmd terminated by an entry whose name is NULL; the
 * group is listed once in lcnctl.c. A command's handler receives argv with
 * argv[0] = the command name and returns the process exit status.
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
 *      response that is not what the API promises).
 * Errors from the server are printed with the API's error code, message and
 * field path: "lcnctl submit: invalid input (HTTP 400 invalid_field) at
 * graph.edges[3].source: unknown node 99".
 */
#ifndef LCN_LCNCTL_H
#define LCN_LCNCTL_H

#include <stdint.h>

enum {
    LCNCTL_EXIT_OK = 0,
    LCNCTL_EXIT_NO = 1,
    LCNCTL_EXIT_USAGE = 2,
    LCNCTL_EXIT_NOT_FOUND = 3,
    LCNCTL_EXIT_UNREACHABLE = 4,
    LCNCTL_EXIT_REFUSED = 5,
};

struct lcnctl_cmd {
    const char *name; /* the word after "lcnctl" */
    int (*run)(const struct lcnctl_cmd *cmd, int argc, char **argv);
    const char *summary; /* one line for `lcnctl --help` */
    const char *usage;   /* the full `lcnctl NAME --help` text, ending in a newline */
};

/* The groups (each terminated by a NULL name). */
extern const struct lcnctl_cmd lcnctl_local_cmds[];  /* cmd_local.c: check, gen */
extern const struct lcnctl_cmd lcnctl_http_cmds[];   /* cmd_http.c: submit ... wait */
extern const struct lcnctl_cmd lcnctl_render_cmds[]; /* cmd_render.c: render */
extern const struct lcnctl_cmd lcnctl_bench_cmds[];  /* cmd_bench.c: bench */

/*
 * Options every command accepts, also before the command name
 * (`lcnctl --server URL --json list`): the server URL (NULL: $LCN_SERVER or
 * the default, see http.h) and machine output. Put LCNCTL_COMMON_OPTS in a
 * command's option table to accept them after the command name too.
 */
extern const char *lcnctl_server;
extern int lcnctl_json;
#define LCNCTL_COMMON_OPTS                                                                         \
    {"server", 0, LCNCTL_OPT_STR, &lcnctl_server, 0, 0, NULL},                                     \
    {                                                                                              \
        "json", 0, LCNCTL_OPT_FLAG, &lcnctl_json, 0, 0, NULL                                       \
    }

enum lcnctl_opt_type {
    LCNCTL_OPT_FLAG, /* no value; dst is an int set to 1 */
    LCNCTL_OPT_STR,  /* dst is a const char * set to the argument */
    LCNCTL_OPT_INT,  /* dst is an int64_t; the value must be a decimal integer in [min, max] */
    LCNCTL_OPT_NUM,  /* dst is a double; any finite decimal number (the command checks the range) */
    LCNCTL_OPT_BACKEND, /* dst is an enum lcn_backend, the value one of lcn_backend_name's */
};

struct lcnctl_opt {
    const char *name; /* long name without the dashes; NULL ends the table */
    char short_name;  /* single-letter alias (-o), or 0 */
    enum lcnctl_opt_type type;
    void *dst;
    int64_t min, max; /* LCNCTL_OPT_INT only */
    int *seen;        /* optional: set to 1 when the option was given */
};

/*
 * Parses argv[1..argc) against opts. Options may come before or after
 * positional arguments; "--name=value" and "--name value" are both
 * accepted; "--" ends the options. Positional arguments are stored in
 * pos (at most max_pos, else a usage error) and counted in *npos.
 * Returns 0, LCNCTL_EXIT_OK + 100 when --help/-h was given (the usage text
 * has been printed to stdout; the caller exits 0), or LCNCTL_EXIT_USAGE
 * after printing "lcnctl NAME: reason" and a hint to stderr.
 */
#define LCNCTL_PARSE_HELP 100
int lcnctl_parse(const struct lcnctl_cmd *cmd, int argc, char **argv, const struct lcnctl_opt *opts,
                 char **pos, int max_pos, int *npos);

/* Prints "lcnctl NAME: <formatted message>" and the --help hint to stderr;
 * returns LCNCTL_EXIT_USAGE. */
int lcnctl_usage_error(const struct lcnctl_cmd *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prints "lcnctl NAME: <formatted message>" to stderr. */
void lcnctl_errorf(const struct lcnctl_cmd *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
