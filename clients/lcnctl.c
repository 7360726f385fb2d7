/* lcnctl: the dispatcher over the command groups, and the shared option parser. */
#include "clients/lcnctl.h"

#include "build_id.h"
#include "engine.h"
#include "clients/http.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

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

static const struct lcnctl_cmd *find_cmd(const char *name)
{
    for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++)
        for (const struct lcnctl_cmd *c = groups[g]; c->name; c++)
            if (strcmp(c->name, name) == 0)
                return c;
    return NULL;
}

static void print_main_usage(FILE *f)
{
    fprintf(f, "usage: lcnctl [--help] [--version] [--server URL] [--json] COMMAND [ARGS...]\n\n"
               "The command-line client of lcn (local crossing number solver).\n\n"
               "commands:\n");
    for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++)
        for (const struct lcnctl_cmd *c = groups[g]; c->name; c++)
            fprintf(f, "  %-10s %s\n", c->name, c->summary);
    fprintf(f,
            "\n"
            "options (also accepted after the command):\n"
            "  --server URL   the lcnd to talk to (default $LCN_SERVER, else %s)\n"
            "  --json         machine output (JSON) on stdout\n"
            "environment: LCN_SERVER, LCN_TOKEN (bearer token), LCN_TOKEN_FILE\n"
            "\n"
            "`lcnctl COMMAND --help` describes a command. Exit status: 0 success,\n"
            "1 job failed or layout invalid, 2 usage or invalid input, 3 not found,\n"
            "4 server unreachable, 5 server refused the request (docs/lcnctl.md).\n",
            LCNHTTP_DEFAULT_SERVER);
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

static const struct lcnctl_opt *find_opt(const struct lcnctl_opt *opts, const char *name,
                                         size_t len, char short_name)
{
    for (const struct lcnctl_opt *o = opts; o->name; o++) {
        if (short_name ? o->short_name == short_name
                       : (strlen(o->name) == len && strncmp(o->name, name, len) == 0))
            return o;
    }
    return NULL;
}

static int set_opt(const struct lcnctl_cmd *cmd, const struct lcnctl_opt *o, const char *val)
{
    if (o->seen)
        *o->seen = 1;
    switch (o->type) {
    case LCNCTL_OPT_FLAG:
        *(int *)o->dst = 1;
        return 0;
    case LCNCTL_OPT_STR:
        *(const char **)o->dst = val;
        return 0;
    case LCNCTL_OPT_INT: {
        char *end;
        errno = 0;
        long long x = strtoll(val, &end, 10);
        if (!val[0] || *end || errno == ERANGE || val[0] == ' ' || val[0] == '+')
            return lcnctl_usage_error(cmd, "--%s: expected an integer, got '%s'", o->name, val);
        if (x < o->min || x > o->max)
            return lcnctl_usage_error(cmd, "--%s: %lld outside [%lld, %lld]", o->name, x,
                                      (long long)o->min, (long long)o->max);
        *(int64_t *)o->dst = x;
        return 0;
    }
    case LCNCTL_OPT_NUM: {
        char *end;
        errno = 0;
        double x = strtod(val, &end);
        if (!val[0] || *end || errno == ERANGE || !isfinite(x) || val[0] == ' ' || val[0] == '+')
            return lcnctl_usage_error(cmd, "--%s: expected a number, got '%s'", o->name, val);
        *(double *)o->dst = x;
        return 0;
    }
    case LCNCTL_OPT_BACKEND:
        if (lcn_backend_parse(val, o->dst))
            return lcnctl_usage_error(cmd, "--%s: expected auto, gpu or cpu, got '%s'", o->name,
                                      val);
        return 0;
    }
    return LCNCTL_EXIT_USAGE;
}

int lcnctl_parse(const struct lcnctl_cmd *cmd, int argc, char **argv, const struct lcnctl_opt *opts,
                 char **pos, int max_pos, int *npos)
{
    *npos = 0;
    int only_pos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (only_pos || a[0] != '-' || strcmp(a, "-") == 0) {
            if (*npos >= max_pos)
                return lcnctl_usage_error(cmd, "unexpected argument '%s'", a);
            pos[(*npos)++] = argv[i];
            continue;
        }
        if (strcmp(a, "--") == 0) {
            only_pos = 1;
            continue;
        }
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(cmd->usage, stdout);
            return LCNCTL_PARSE_HELP;
        }
        const struct lcnctl_opt *o;
        const char *val = NULL;
        if (a[1] == '-') {
            const char *name = a + 2, *eq = strchr(name, '=');
            size_t len = eq ? (size_t)(eq - name) : strlen(name);
            o = find_opt(opts, name, len, 0);
            if (!o)
                return lcnctl_usage_error(cmd, "unknown option '--%.*s'", (int)len, name);
            if (eq)
                val = eq + 1;
        } else {
            o = a[2] ? NULL : find_opt(opts, NULL, 0, a[1]);
            if (!o)
                return lcnctl_usage_error(cmd, "unknown option '%s'", a);
        }
        if (o->type == LCNCTL_OPT_FLAG) {
            if (val)
                return lcnctl_usage_error(cmd, "--%s takes no value", o->name);
        } else if (!val) {
            if (i + 1 >= argc)
                return lcnctl_usage_error(cmd, "--%s needs a value", o->name);
            val = argv[++i];
        }
        int rc = set_opt(cmd, o, val);
        if (rc)
            return rc;
    }
    return 0;
}

/* Consumes the global options before the command name; returns the index
 * of the command name, or -1 after a usage error. */
static int global_options(int argc, char **argv)
{
    int i = 1;
    while (i < argc) {
        const char *a = argv[i];
        if (strcmp(a, "--json") == 0) {
            lcnctl_json = 1;
            i++;
        } else if (strncmp(a, "--server=", 9) == 0) {
            lcnctl_server = a + 9;
            i++;
        } else if (strcmp(a, "--server") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "lcnctl: --server needs a value\n");
                return -1;
            }
            lcnctl_server = argv[i + 1];
            i += 2;
        } else {
            break;
        }
    }
    return i;
}

int main(int argc, char **argv)
{
    int first = global_options(argc, argv);
    if (first < 0)
        return LCNCTL_EXIT_USAGE;
    argv += first - 1;
    argc -= first - 1;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, "lcnctl: cannot initialise libcurl\n");
        return LCNCTL_EXIT_REFUSED;
    }
    int rc = dispatch(argc, argv);
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
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
        print_main_usage(stdout);
        return LCNCTL_EXIT_OK;
    }
    if (strcmp(name, "--version") == 0) {
        printf("lcnctl %s (commit %s)\n", LCN_VERSION, lcn_build_commit);
        return LCNCTL_EXIT_OK;
    }
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
        fputs(c->usage, stdout);
        return LCNCTL_EXIT_OK;
    }
    const struct lcnctl_cmd *c = find_cmd(name);
    if (!c) {
        fprintf(stderr, "lcnctl: unknown command '%s'; try 'lcnctl --help'\n", name);
        return LCNCTL_EXIT_USAGE;
    }
    return c->run(c, argc - 1, argv + 1);
}
