/* lcnctl: the dispatcher over the command groups, and their options (opts.h). */
#include "clients/lcnctl.h"

#include "build_id.h"
#include "clients/http.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "err.h"
#include "graphio.h"
#include "util.h"

#ifndef LCN_VERSION
#define LCN_VERSION "unknown"
#endif

/* Every group of commands, in the order `lcnctl --help` lists them. */
static const struct lcnctl_cmd *const groups[] = {
    lcnctl_http_cmds,
    lcnctl_local_cmds,
    lcnctl_render_cmds,
    lcnctl_bench_cmds,
};

const char *lcnctl_server;
int lcnctl_json;
int64_t lcnctl_retry;

/* The options every command shares, parsed into a copy of the globals. */
struct common {
    const char *server;
    int json;
    int64_t retry;
};

static const struct opt common_opts[] = {
    {.name = "server",
     .kind = OPT_STRING,
     .off = offsetof(struct common, server),
     .arg = "URL",
     .help = "the lcnd to talk to (default $LCN_SERVER, else " LCNHTTP_DEFAULT_SERVER ")"},
    OPT_ROW("json", OPT_FLAG, offsetof(struct common, json), NULL,
            "machine output (JSON) on stdout"),
    OPT_RANGE("retry", OPT_INT, offsetof(struct common, retry), 0, 100, NULL, "N",
              "send a request that gets 429 (queue full) or 503 (not ready, stopping) again, up "
              "to N times, after the Retry-After the server asks for (at most 60 s each; "
              "default 0)"),
};

/* The options only main takes (before the command name). */
struct main_opts {
    int version;
};

static const struct opt main_opts[] = {
    OPT_ROW("version", OPT_FLAG, offsetof(struct main_opts, version), NULL,
            "print the version and build and exit"),
};

static const struct lcnctl_cmd *find_cmd(const char *name)
{
    for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++)
        for (const struct lcnctl_cmd *c = groups[g]; c->name; c++)
            if (strcmp(c->name, name) == 0)
                return c;
    return NULL;
}

/* The exit statuses of lcnctl.h's table, by value, with their phrases. */
static const struct {
    int code;
    const char *phrase;
} exit_statuses[] = {
#define EXIT_ROW(name, value, phrase) {(value), (phrase)},
    LCNCTL_EXITS(EXIT_ROW)
#undef EXIT_ROW
};

const char *lcnctl_exit_phrase(int code)
{
    for (size_t i = 0; i < LCN_ARRAY_LEN(exit_statuses); i++)
        if (exit_statuses[i].code == code)
            return exit_statuses[i].phrase;
    return NULL;
}

/* The end of `lcnctl --help`: every exit status ("0 success, 1 ..."),
 * filled into lines of at most 72 columns. */
static void print_exit_statuses(FILE *f)
{
    char line[160] = "`lcnctl COMMAND --help` describes a command. Exit status:";
    size_t n = LCN_ARRAY_LEN(exit_statuses);
    for (size_t i = 0; i < n; i++) {
        char item[96];
        snprintf(item, sizeof item, "%d %s%s", exit_statuses[i].code, exit_statuses[i].phrase,
                 i + 1 < n ? "," : " (docs/lcnctl.md).");
        if (strlen(line) + 1 + strlen(item) > 72) {
            fprintf(f, "%s\n", line);
            snprintf(line, sizeof line, "%s", item);
        } else {
            size_t len = strlen(line);
            snprintf(line + len, sizeof line - len, " %s", item);
        }
    }
    fprintf(f, "%s\n", line);
}

static void print_main_usage(FILE *f)
{
    fprintf(f, "usage: lcnctl [--help] [--version] [--server URL] [--json] COMMAND [ARGS...]\n\n"
               "The command-line client of lcn (local crossing number solver).\n\n"
               "commands:\n");
    for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++)
        for (const struct lcnctl_cmd *c = groups[g]; c->name; c++)
            fprintf(f, "  %-10s %s\n", c->name, c->summary);
    fprintf(f, "\noptions (--server and --json also after the command):\n");
    struct opts_set sets[] = {{main_opts, LCN_ARRAY_LEN(main_opts), NULL},
                              {common_opts, LCN_ARRAY_LEN(common_opts), NULL}};
    opts_write_help(f, sets, 2);
    fprintf(f, "\nenvironment: LCN_SERVER, LCN_TOKEN (bearer token), LCN_TOKEN_FILE\n\n");
    print_exit_statuses(f);
}

static int dispatch(int argc, char **argv);

static void vreport(const struct lcnctl_cmd *cmd, const char *fmt, va_list ap)
{
    fprintf(stderr, "lcnctl %s: ", cmd->name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void lcnctl_errorf(const struct lcnctl_cmd *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(cmd, fmt, ap);
    va_end(ap);
}

int lcnctl_usage_error(const struct lcnctl_cmd *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(cmd, fmt, ap);
    va_end(ap);
    fprintf(stderr, "try 'lcnctl %s --help'\n", cmd->name);
    return LCNCTL_EXIT_USAGE;
}

void lcnctl_write_help(FILE *f, const struct lcnctl_cmd *cmd)
{
    fputs(cmd->usage, f);
    fputs("\noptions:\n", f);
    struct opts_set sets[] = {{cmd->opts, cmd->nopts, NULL},
                              {common_opts, LCN_ARRAY_LEN(common_opts), NULL}};
    opts_write_help(f, sets, 2);
    fprintf(f, "\n%s", cmd->exit_status);
}

/* The common options as parsed become the process's settings. */
static void common_apply(const struct common *c)
{
    lcnctl_server = c->server;
    lcnctl_json = c->json;
    lcnctl_retry = c->retry;
}

/*
 * Parses argv[1..argc) against the command's table (into a->opts, its
 * defaults applied first) and the common options, with opts.h: options may
 * come before or after the positional argument; "--name=value" and
 * "--name value" are both accepted; "--" ends the options. Returns 0,
 * OPTS_HELP after printing the help to stdout, or LCNCTL_EXIT_USAGE after
 * printing "lcnctl NAME: reason" and a hint to stderr.
 */
static int parse_cmd(const struct lcnctl_cmd *cmd, struct lcnctl_args *a)
{
    if (a->opts)
        opts_defaults(cmd->opts, cmd->nopts, a->opts);
    struct common c = {lcnctl_server, lcnctl_json, lcnctl_retry};
    struct opts_set sets[] = {{cmd->opts, cmd->nopts, a->opts},
                              {common_opts, LCN_ARRAY_LEN(common_opts), &c}};
    char *pos[1];
    struct opts_args args = {.pos = pos, .max_pos = cmd->arg ? 1 : 0};
    char err[300];
    int rc = opts_parse_argv(sets, 2, a->argc, a->argv, &args, err, sizeof err);
    common_apply(&c);
    if (rc == OPTS_HELP) {
        lcnctl_write_help(stdout, cmd);
        return OPTS_HELP;
    }
    if (rc)
        return lcnctl_usage_error(cmd, "%s", err);
    if (cmd->arg && args.npos != 1)
        return lcnctl_usage_error(cmd, "expected one %s", cmd->arg);
    a->arg = cmd->arg ? pos[0] : NULL;
    return 0;
}

/* Runs a command on its line (argv[0] = its name): the parse, then the
 * handler; --help is the whole of a run that exits 0. */
static int run_cmd(const struct lcnctl_cmd *cmd, int argc, char **argv)
{
    struct lcnctl_args a = {cmd->opts_size ? xcalloc(1, cmd->opts_size) : NULL, NULL, argc, argv};
    int rc = parse_cmd(cmd, &a);
    if (rc == 0)
        rc = cmd->run(cmd, &a);
    else if (rc == OPTS_HELP)
        rc = LCNCTL_EXIT_OK;
    if (a.opts)
        opts_release(cmd->opts, cmd->nopts, a.opts);
    free(a.opts);
    return rc;
}

int lcnctl_read_graph(const struct lcnctl_cmd *cmd, struct graphio_doc *d, const char *path)
{
    struct graphio_error e;
    char msg[600];
    if (graphio_read_file(d, path, NULL, &e) == 0)
        return 0;
    graphio_error_format(&e, msg, sizeof msg);
    if (e.err == LCN_EIO)
        lcnctl_errorf(cmd, "%s", msg);
    else
        lcnctl_errorf(cmd, "%s: %s", path, msg);
    return LCNCTL_EXIT_USAGE;
}

int main(int argc, char **argv)
{
    /* the options before the command name */
    struct main_opts m = {0};
    struct common c = {NULL, 0, 0};
    struct opts_set sets[] = {{main_opts, LCN_ARRAY_LEN(main_opts), &m},
                              {common_opts, LCN_ARRAY_LEN(common_opts), &c}};
    struct opts_args args = {.stop_at_positional = 1};
    char err[300];
    int rc = opts_parse_argv(sets, 2, argc, argv, &args, err, sizeof err);
    common_apply(&c);
    if (rc == OPTS_HELP) {
        print_main_usage(stdout);
        return LCNCTL_EXIT_OK;
    }
    if (rc) {
        fprintf(stderr, "lcnctl: %s; try 'lcnctl --help'\n", err);
        return LCNCTL_EXIT_USAGE;
    }
    if (m.version) {
        printf("lcnctl %s (commit %s)\n", LCN_VERSION, lcn_build_commit);
        return LCNCTL_EXIT_OK;
    }
    argv += args.next - 1;
    argc -= args.next - 1;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, "lcnctl: cannot initialise libcurl\n");
        return LCNCTL_EXIT_REFUSED;
    }
    rc = dispatch(argc, argv);
    curl_global_cleanup();
    return rc;
}

static int dispatch(int argc, char **argv)
{
    if (argc < 2) {
        print_main_usage(stderr);
        return LCNCTL_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "help") == 0) {
        if (argc < 3) {
            print_main_usage(stdout);
            return LCNCTL_EXIT_OK;
        }
        const struct lcnctl_cmd *c = find_cmd(argv[2]);
        if (!c) {
            fprintf(stderr, "lcnctl: unknown command '%s'; try 'lcnctl --help'\n", argv[2]);
            return LCNCTL_EXIT_USAGE;
        }
        lcnctl_write_help(stdout, c);
        return LCNCTL_EXIT_OK;
    }
    const struct lcnctl_cmd *c = find_cmd(name);
    if (!c) {
        fprintf(stderr, "lcnctl: unknown command '%s'; try 'lcnctl --help'\n", name);
        return LCNCTL_EXIT_USAGE;
    }
    return run_cmd(c, argc - 1, argv + 1);
}
