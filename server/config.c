#include "server/config.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "util.h"

#define OFF(field) offsetof(struct lcnd_config, field)

/* CONFIG_ENUM fields are enums that the parser writes as an int (the index
 * of the choice): each such enum must have an int's size. */
#define ENUM_FIELD_OK(e) _Static_assert(sizeof(e) == sizeof(int), #e " is not int-sized")
ENUM_FIELD_OK(enum lcn_backend);
ENUM_FIELD_OK(enum config_sync);
ENUM_FIELD_OK(enum config_log_level);
ENUM_FIELD_OK(enum config_fake_gpu);

/* clang-format off */
const struct config_option config_options[] = {
    /* network and access */
    {"listen", CONFIG_STRING, 0, 0, "127.0.0.1:8480", OFF(listen), NULL,
     "address to listen on as HOST:PORT (IPv6 as [ADDR]:PORT); port 0 picks a free port"},
    {"port_file", CONFIG_STRING, 0, 0, "", OFF(port_file), NULL,
     "file to write the bound HOST:PORT to once listening (empty: none)"},
    {"token_file", CONFIG_STRING, 0, 0, "", OFF(token_file), NULL,
     "file holding the bearer token every request except /healthz must carry (empty: no auth)"},
    {"allow_insecure_listen", CONFIG_BOOL, 0, 1, "false", OFF(allow_insecure_listen), NULL,
     "allow listening on a non-loopback address without a token file"},
    {"max_connections", CONFIG_INT, 4, 100000, "256", OFF(max_connections), NULL,
     "most simultaneous HTTP connections (more wait in the listen backlog)"},
    {"max_connections_per_ip", CONFIG_INT, 0, 100000, "128", OFF(max_connections_per_ip), NULL,
     "most simultaneous HTTP connections from one client address; more are closed at once "
     "(0: no limit)"},
    {"connection_timeout_s", CONFIG_INT, 1, 86400, "60", OFF(connection_timeout_s), NULL,
     "seconds without traffic after which a connection is closed, also in the middle of a "
     "request (a body that stops coming) or of an answer (a client that stops reading)"},
    {"header_timeout_s", CONFIG_INT, 0, 86400, "10", OFF(header_timeout_s), NULL,
     "seconds a connection has to send a complete request header, from its opening or its "
     "previous answer; then it is closed (0: no limit)"},
    {"connection_reserve", CONFIG_INT, 0, 100000, "16", OFF(connection_reserve), NULL,
     "connection slots kept free for new clients: when fewer are free, the connections that "
     "have waited longest for a request header are closed at once (at most a quarter of "
     "max_connections; 0: none, new connections wait in the listen backlog)"},
    {"max_streams", CONFIG_INT, 0, 100000, "128", OFF(max_streams), NULL,
     "most simultaneous server-sent-event progress streams"},
    {"sse_heartbeat_s", CONFIG_DOUBLE, 0.05, 3600, "5", OFF(sse_heartbeat_s), NULL,
     "seconds between keepalive comments on an idle progress stream"},
    /* admission */
    {"max_body_bytes", CONFIG_INT, 1024, 1073741824, "67108864", OFF(max_body_bytes), NULL,
     "largest accepted request body in bytes (larger: 413)"},
    {"max_nodes", CONFIG_INT, 1, LCN_MAX_NODES, "200000", OFF(max_nodes), NULL,
     "most nodes in a submitted graph (more: 422)"},
    {"max_edges", CONFIG_INT, 0, LCN_MAX_EDGES, "1000000", OFF(max_edges), NULL,
     "most edges in a submitted graph (more: 422)"},
    {"max_budget_s", CONFIG_DOUBLE, 0.001, 31536000, "3600", OFF(max_budget_s), NULL,
     "largest wall-clock budget a job may ask for in seconds (more: 422)"},
    {"default_budget_s", CONFIG_DOUBLE, 0.001, 31536000, "60", OFF(default_budget_s), NULL,
     "budget of a job that does not give budget_s, in seconds"},
    {"max_queued", CONFIG_INT, 1, 1000000, "64", OFF(max_queued), NULL,
     "most jobs waiting in the queue (more: 429)"},
    {"retry_after_s", CONFIG_INT, 1, 86400, "5", OFF(retry_after_s), NULL,
     "seconds sent in Retry-After with a 429"},
    /* execution */
    {"backend", CONFIG_ENUM, 0, 0, "auto", OFF(backend), "auto|gpu|cpu",
     "backends to start: auto (GPUs when usable, plus the CPU pool), gpu (fail without one), cpu"},
    {"cpu_workers", CONFIG_INT, 0, 1024, "1", OFF(cpu_workers), NULL,
     "CPU jobs run at the same time (0: no CPU backend)"},
    {"cpu_threads", CONFIG_INT, 0, LCN_MAX_THREADS, "0", OFF(cpu_threads), NULL,
     "threads per CPU job unless the request sets solver.threads (0: online cores / cpu_workers)"},
    {"gpu_slots", CONFIG_INT, -1, 64, "-1", OFF(gpu_slots), NULL,
     "GPU jobs run at the same time, one workspace slot and stream each (-1: every slot of the "
     "GPU context, 0: no GPU)"},
    {"checkpoint_interval_s", CONFIG_DOUBLE, 0.1, 86400, "5", OFF(checkpoint_interval_s), NULL,
     "seconds between durable checkpoints of a running job's best layout"},
    {"telemetry_interval_s", CONFIG_DOUBLE, 0.05, 3600, "1", OFF(telemetry_interval_s), NULL,
     "seconds between engine telemetry reports"},
    /* store */
    {"state_dir", CONFIG_STRING, 0, 0, "lcnd-state", OFF(state_dir), NULL,
     "directory of the job store (created when missing)"},
    {"store_sync", CONFIG_ENUM, 0, 0, "full", OFF(store_sync), "normal|full",
     "sqlite synchronous mode: full survives power loss, normal survives a process crash"},
    {"resume_interrupted", CONFIG_BOOL, 0, 1, "true", OFF(resume_interrupted), NULL,
     "resume jobs found running at start from their last checkpoint (false: mark them interrupted)"},
    {"retain_jobs", CONFIG_INT, 1, 10000000, "1000", OFF(retain_jobs), NULL,
     "finished jobs kept in the store; the oldest beyond this are deleted"},
    {"retain_days", CONFIG_DOUBLE, 0, 36500, "30", OFF(retain_days), NULL,
     "finished jobs older than this many days are deleted (0: keep regardless of age)"},
    /* lifecycle and logging */
    {"shutdown_timeout_s", CONFIG_DOUBLE, 0.1, 600, "8", OFF(shutdown_timeout_s), NULL,
     "seconds a shutdown waits for running jobs to checkpoint before exiting anyway"},
    {"log_file", CONFIG_STRING, 0, 0, "", OFF(log_file), NULL,
     "log file, reopened on SIGHUP (empty: standard error)"},
    {"log_level", CONFIG_ENUM, 0, 0, "info", OFF(log_level), "error|warn|info|debug",
     "least severe log level written"},
    /* fault injection (docs/DAEMON.md, "Test hooks") */
    {"test_fake_gpu", CONFIG_ENUM, 0, 0, "off", OFF(test_fake_gpu), "off|sticky",
     "test only: sticky starts one fake GPU worker that runs the CPU engine for "
     "test_fake_gpu_ms and then fails its job with a sticky GPU error (never in production)"},
    {"test_fake_gpu_ms", CONFIG_INT, 1, 600000, "300", OFF(test_fake_gpu_ms), NULL,
     "test only: milliseconds the fake GPU worker runs before its sticky error"},
};
/* clang-format on */
const size_t config_option_count = LCN_ARRAY_LEN(config_options);

static void fmt(char *err, size_t errlen, const char *f, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, f);
    vsnprintf(err, errlen, f, ap);
    va_end(ap);
}

const struct config_option *config_find(const char *name)
{
    char buf[64];
    size_t n = strlen(name);
    if (n >= sizeof buf)
        return NULL;
    for (size_t i = 0; i <= n; i++)
        buf[i] = name[i] == '-' ? '_' : name[i];
    for (size_t i = 0; i < config_option_count; i++)
        if (!strcmp(config_options[i].name, buf))
            return &config_options[i];
    return NULL;
}

const char *config_choice_name(const struct config_option *o, int v)
{
    static __thread char buf[32];
    const char *p = o->choices;
    for (int i = 0; p; i++) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (i == v) {
            if (len >= sizeof buf)
                len = sizeof buf - 1;
            memcpy(buf, p, len);
            buf[len] = 0;
            return buf;
        }
        p = bar ? bar + 1 : NULL;
    }
    return "?";
}

static int choice_index(const struct config_option *o, const char *v)
{
    const char *p = o->choices;
    size_t vl = strlen(v);
    for (int i = 0; p; i++) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == vl && !strncmp(p, v, len))
            return i;
        p = bar ? bar + 1 : NULL;
    }
    return -1;
}

static void fmt_double(char *buf, size_t len, double v)
{
    if (v == (double)(long long)v && v > -1e15 && v < 1e15) {
        snprintf(buf, len, "%lld", (long long)v);
        return;
    }
    /* shortest form that reads back exactly */
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, len, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            return;
    }
}

int config_set(struct lcnd_config *c, const struct config_option *o, const char *value, char *err,
               size_t errlen)
{
    char *base = (char *)c;
    char *end;
    switch (o->type) {
    case CONFIG_STRING: {
        char **slot = (char **)(base + o->offset);
        if (strchr(value, '\n')) {
            fmt(err, errlen, "%s: value must be one line", o->name);
            return LCN_EINVAL;
        }
        free(*slot);
        *slot = xstrdup(value);
        return 0;
    }
    case CONFIG_INT: {
        errno = 0;
        long long v = strtoll(value, &end, 10);
        if (!*value || *end || errno == ERANGE) {
            fmt(err, errlen, "%s: '%s' is not an integer", o->name, value);
            return LCN_EINVAL;
        }
        if ((double)v < o->min || (double)v > o->max) {
            char lo[32], hi[32];
            fmt_double(lo, sizeof lo, o->min);
            fmt_double(hi, sizeof hi, o->max);
            fmt(err, errlen, "%s: %lld is outside [%s, %s]", o->name, v, lo, hi);
            return LCN_ERANGE;
        }
        *(int64_t *)(base + o->offset) = v;
        return 0;
    }
    case CONFIG_DOUBLE: {
        errno = 0;
        double v = strtod(value, &end);
        if (!*value || *end || errno == ERANGE || !isfinite(v)) {
            fmt(err, errlen, "%s: '%s' is not a number", o->name, value);
            return LCN_EINVAL;
        }
        if (v < o->min || v > o->max) {
            char lo[32], hi[32];
            fmt_double(lo, sizeof lo, o->min);
            fmt_double(hi, sizeof hi, o->max);
            fmt(err, errlen, "%s: %s is outside [%s, %s]", o->name, value, lo, hi);
            return LCN_ERANGE;
        }
        *(double *)(base + o->offset) = v;
        return 0;
    }
    case CONFIG_BOOL: {
        int v;
        if (!strcmp(value, "true") || !strcmp(value, "yes") || !strcmp(value, "1") ||
            !strcmp(value, "on"))
            v = 1;
        else if (!strcmp(value, "false") || !strcmp(value, "no") || !strcmp(value, "0") ||
                 !strcmp(value, "off"))
            v = 0;
        else {
            fmt(err, errlen, "%s: '%s' is not a boolean (true or false)", o->name, value);
            return LCN_EINVAL;
        }
        *(int *)(base + o->offset) = v;
        return 0;
    }
    case CONFIG_ENUM: {
        int v = choice_index(o, value);
        if (v < 0) {
            fmt(err, errlen, "%s: '%s' is not one of %s", o->name, value, o->choices);
            return LCN_EINVAL;
        }
        *(int *)(base + o->offset) = v;
        return 0;
    }
    }
    fmt(err, errlen, "%s: bad option type", o->name);
    return LCN_EINVAL;
}

void config_defaults(struct lcnd_config *c)
{
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < config_option_count; i++) {
        char err[160];
        int rc = config_set(c, &config_options[i], config_options[i].def, err, sizeof err);
        if (rc) {
            fprintf(stderr, "fatal: bad default: %s\n", err);
            LCN_ASSERT(rc == 0);
        }
    }
}

void config_release(struct lcnd_config *c)
{
    char *base = (char *)c;
    for (size_t i = 0; i < config_option_count; i++) {
        if (config_options[i].type == CONFIG_STRING) {
            char **slot = (char **)(base + config_options[i].offset);
            free(*slot);
            *slot = NULL;
        }
    }
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
        s[--n] = 0;
    return s;
}

int config_load_file(struct lcnd_config *c, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fmt(err, errlen, "%s: %s", path, strerror(errno));
        return LCN_EIO;
    }
    unsigned char *seen = xcalloc(config_option_count, 1);
    char *line = NULL;
    size_t cap = 0;
    int lineno = 0, rc = 0;
    while (getline(&line, &cap, f) >= 0) {
        lineno++;
        /* a '#' at the start or after a blank starts a comment */
        for (char *p = line; *p; p++) {
            if (*p == '#' && (p == line || p[-1] == ' ' || p[-1] == '\t')) {
                *p = 0;
                break;
            }
        }
        char *s = trim(line);
        if (!*s)
            continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            fmt(err, errlen, "%s:%d: expected 'name = value'", path, lineno);
            rc = LCN_EINVAL;
            break;
        }
        *eq = 0;
        char *name = trim(s), *value = trim(eq + 1);
        const struct config_option *o = NULL;
        for (size_t i = 0; i < config_option_count; i++)
            if (!strcmp(config_options[i].name, name))
                o = &config_options[i];
        if (!o) {
            fmt(err, errlen, "%s:%d: unknown option '%s'", path, lineno, name);
            rc = LCN_EINVAL;
            break;
        }
        size_t idx = (size_t)(o - config_options);
        if (seen[idx]) {
            fmt(err, errlen, "%s:%d: option '%s' given twice", path, lineno, name);
            rc = LCN_EINVAL;
            break;
        }
        seen[idx] = 1;
        char why[200];
        rc = config_set(c, o, value, why, sizeof why);
        if (rc) {
            fmt(err, errlen, "%s:%d: %s", path, lineno, why);
            break;
        }
    }
    if (!rc && ferror(f)) {
        fmt(err, errlen, "%s: read error", path);
        rc = LCN_EIO;
    }
    free(line);
    free(seen);
    fclose(f);
    return rc;
}

static int is_bool_word(const char *s)
{
    static const char *const words[] = {"true", "yes", "1", "on", "false", "no", "0", "off"};
    for (size_t i = 0; i < LCN_ARRAY_LEN(words); i++)
        if (!strcmp(s, words[i]))
            return 1;
    return 0;
}

int config_parse_args(struct lcnd_config *c, int argc, char **argv, int *help, int *print_config,
                      char *err, size_t errlen)
{
    *help = 0;
    *print_config = 0;
    /* --config first, so that flags override the file wherever they stand */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *path = NULL;
        if (!strcmp(a, "--config")) {
            if (i + 1 >= argc) {
                fmt(err, errlen, "--config needs a file name");
                return LCN_EINVAL;
            }
            path = argv[++i];
        } else if (!strncmp(a, "--config=", 9)) {
            path = a + 9;
        }
        if (path) {
            int rc = config_load_file(c, path, err, errlen);
            if (rc)
                return rc;
        }
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            *help = 1;
            continue;
        }
        if (!strcmp(a, "--print-config")) {
            *print_config = 1;
            continue;
        }
        if (!strcmp(a, "--config")) {
            i++;
            continue;
        }
        if (!strncmp(a, "--config=", 9))
            continue;
        if (strncmp(a, "--", 2) || !a[2]) {
            fmt(err, errlen, "unexpected argument '%s' (see --help)", a);
            return LCN_EINVAL;
        }
        char name[64];
        const char *eq = strchr(a, '=');
        size_t nl = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
        if (nl >= sizeof name) {
            fmt(err, errlen, "unknown flag '%s' (see --help)", a);
            return LCN_EINVAL;
        }
        memcpy(name, a + 2, nl);
        name[nl] = 0;
        const struct config_option *o = config_find(name);
        if (!o) {
            fmt(err, errlen, "unknown flag '--%s' (see --help)", name);
            return LCN_EINVAL;
        }
        const char *value;
        if (eq)
            value = eq + 1;
        else if (o->type == CONFIG_BOOL && (i + 1 >= argc || !is_bool_word(argv[i + 1])))
            value = "true";
        else if (i + 1 < argc)
            value = argv[++i];
        else {
            fmt(err, errlen, "--%s needs a value", name);
            return LCN_EINVAL;
        }
        char why[200];
        int rc = config_set(c, o, value, why, sizeof why);
        if (rc) {
            fmt(err, errlen, "--%s: %s", name, strchr(why, ':') ? strchr(why, ':') + 2 : why);
            return rc;
        }
    }
    return 0;
}

void config_format_value(const struct lcnd_config *c, const struct config_option *o, char *buf,
                         size_t len)
{
    const char *base = (const char *)c;
    switch (o->type) {
    case CONFIG_STRING: {
        const char *s = *(char *const *)(base + o->offset);
        snprintf(buf, len, "%s", s ? s : "");
        return;
    }
    case CONFIG_INT:
        snprintf(buf, len, "%lld", (long long)*(const int64_t *)(base + o->offset));
        return;
    case CONFIG_DOUBLE:
        fmt_double(buf, len, *(const double *)(base + o->offset));
        return;
    case CONFIG_BOOL:
        snprintf(buf, len, "%s", *(const int *)(base + o->offset) ? "true" : "false");
        return;
    case CONFIG_ENUM:
        snprintf(buf, len, "%s", config_choice_name(o, *(const int *)(base + o->offset)));
        return;
    }
    snprintf(buf, len, "?");
}

static void range_text(const struct config_option *o, char *buf, size_t len)
{
    char lo[32], hi[32];
    switch (o->type) {
    case CONFIG_INT:
    case CONFIG_DOUBLE:
        fmt_double(lo, sizeof lo, o->min);
        fmt_double(hi, sizeof hi, o->max);
        snprintf(buf, len, "%s in [%s, %s]", o->type == CONFIG_INT ? "integer" : "number", lo, hi);
        return;
    case CONFIG_BOOL:
        snprintf(buf, len, "true or false");
        return;
    case CONFIG_ENUM:
        snprintf(buf, len, "one of %s", o->choices);
        return;
    case CONFIG_STRING:
        snprintf(buf, len, "string");
        return;
    }
}

void config_write(FILE *f, const struct lcnd_config *c)
{
    fprintf(f, "# lcnd.conf - configuration of the lcn solving daemon (lcnd serve --config FILE).\n"
               "#\n"
               "# Every option is listed with its help, its range and its embedded default.\n"
               "# Syntax: `name = value`; a '#' at the start of a line or after a blank starts\n"
               "# a comment. Command-line flags (--name VALUE, with dashes for underscores)\n"
               "# override this file. `lcnd serve --print-config` prints the effective\n"
               "# configuration in this format; with no file and no flags it prints exactly\n"
               "# this file.\n");
    for (size_t i = 0; i < config_option_count; i++) {
        const struct config_option *o = &config_options[i];
        char range[96], val[512];
        range_text(o, range, sizeof range);
        config_format_value(c, o, val, sizeof val);
        fprintf(f, "\n# %s\n# %s; default: %s\n%s =%s%s\n", o->help, range,
                *o->def ? o->def : "(empty)", o->name, *val ? " " : "", val);
    }
}

void config_write_help(FILE *f, const char *prog)
{
    fprintf(f,
            "usage: %s serve [--config FILE] [--listen HOST:PORT] [--state-dir DIR]\n"
            "                [--backend auto|gpu|cpu] [--OPTION VALUE ...]\n"
            "       %s serve --print-config [...]   print the effective configuration\n"
            "\n"
            "Runs the lcn solving daemon: an HTTP/JSON API (docs/API.md) over a durable\n"
            "job store. Options come from the embedded defaults, then the config file,\n"
            "then the flags. Every option:\n\n",
            prog, prog);
    for (size_t i = 0; i < config_option_count; i++) {
        const struct config_option *o = &config_options[i];
        char flag[64], range[96];
        size_t j = 0;
        for (; o->name[j] && j < sizeof flag - 1; j++)
            flag[j] = o->name[j] == '_' ? '-' : o->name[j];
        flag[j] = 0;
        range_text(o, range, sizeof range);
        fprintf(f, "  --%s\n      %s\n      (%s; default: %s)\n", flag, o->help, range,
                *o->def ? o->def : "empty");
    }
}
