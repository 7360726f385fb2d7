#include "server/config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "util.h"

/*
 * The rows, by kind, in the order of the table's columns; an option's name
 * is its field's. Every value of the file is one line.
 */
#define CFG_ROW(field, kind_, lo, hi, def_, choices_, help_)                                       \
    {                                                                                              \
        .name = #field, .kind = (kind_), .min = (lo), .max = (hi), .def = (def_),                  \
        .off = offsetof(struct lcnd_config, field), .choices = (choices_), .help = (help_),         \
        .flags = OPT_ONE_LINE                                                                      \
    }
#define CFG_STR(field, def_, help_)         CFG_ROW(field, OPT_STRDUP, 0, 0, def_, NULL, help_)
#define CFG_BOOL(field, def_, help_)        CFG_ROW(field, OPT_BOOL, 0, 1, def_, NULL, help_)
#define CFG_INT(field, lo, hi, def_, help_) CFG_ROW(field, OPT_INT, lo, hi, def_, NULL, help_)
#define CFG_DBL(field, lo, hi, def_, help_) CFG_ROW(field, OPT_DOUBLE, lo, hi, def_, NULL, help_)
#define CFG_ENUM(field, def_, choices_, help_)                                                     \
    CFG_ROW(field, OPT_ENUM, 0, 0, def_, choices_, help_)

/* OPT_ENUM fields are enums that the parser writes as an int (the index
 * of the choice): each such enum must have an int's size. */
#define ENUM_FIELD_OK(e) _Static_assert(sizeof(e) == sizeof(int), #e " is not int-sized")
ENUM_FIELD_OK(enum lcn_backend);
ENUM_FIELD_OK(enum config_sync);
ENUM_FIELD_OK(enum config_log_level);
ENUM_FIELD_OK(enum config_log_format);
ENUM_FIELD_OK(enum config_fake_gpu);

/* clang-format off */
const struct opt config_options[] = {
    /* network and access */
    CFG_STR(listen, "127.0.0.1:8480",
        "address to listen on as HOST:PORT (IPv6 as [ADDR]:PORT); port 0 picks a free port"),
    CFG_STR(port_file, "",
        "file to write the bound HOST:PORT to once listening (empty: none)"),
    CFG_STR(token_file, "",
        "file holding the bearer token every request except /healthz must carry (empty: no auth)"),
    CFG_BOOL(allow_insecure_listen, "false",
        "allow listening on a non-loopback address without a token file"),
    CFG_STR(allowed_origins, "",
        "browser origins allowed to call the API from their pages (CORS): exact origins such as "
        "https://app.example.org:8443, comma-separated; preflight OPTIONS requests are answered and "
        "answers to an allowed Origin carry Access-Control-Allow-Origin (empty: CORS off)"),
    CFG_INT(max_connections, 4, 100000, "256",
        "most simultaneous HTTP connections (more wait in the listen backlog)"),
    CFG_INT(max_connections_per_ip, 0, 100000, "128",
        "most simultaneous HTTP connections from one client address; more are closed at once "
        "(0: no limit)"),
    CFG_INT(connection_timeout_s, 1, 86400, "60",
        "seconds without traffic after which a connection is closed, also in the middle of a "
        "request (a body that stops coming) or of an answer (a client that stops reading)"),
    CFG_INT(header_timeout_s, 0, 86400, "10",
        "seconds a connection has to send a complete request header, from its opening or its "
        "previous answer; then it is closed (0: no limit)"),
    CFG_INT(connection_reserve, 0, 100000, "16",
        "connection slots kept free for new clients: when fewer are free, the connections that "
        "have waited longest for a request header are closed at once (at most a quarter of "
        "max_connections; 0: none, new connections wait in the listen backlog)"),
    CFG_INT(max_streams, 0, 100000, "128",
        "most simultaneous server-sent-event progress streams"),
    CFG_DBL(sse_heartbeat_s, 0.05, 3600, "5",
        "seconds between keepalive comments on an idle progress stream"),
    /* admission */
    CFG_INT(max_body_bytes, 1024, 1073741824, "67108864",
        "largest accepted request body in bytes (larger: 413)"),
    CFG_INT(max_body_total_bytes, 0, 1099511627776, "268435456",
        "request bodies all live requests may hold together, buffered or being parsed (past it: "
        "503 with Retry-After; 0: no bound; raised to max_body_bytes when smaller)"),
    CFG_INT(max_nodes, 1, LCN_MAX_NODES, "200000",
        "most nodes in a submitted graph (more: 422)"),
    CFG_INT(max_edges, 0, LCN_MAX_EDGES, "1000000",
        "most edges in a submitted graph (more: 422)"),
    CFG_DBL(max_budget_s, 0.001, 31536000, "3600",
        "largest wall-clock budget a job may ask for in seconds (more: 422)"),
    CFG_DBL(default_budget_s, 0.001, 31536000, "60",
        "budget of a job that does not give budget_s, in seconds"),
    CFG_INT(max_queued, 1, 1000000, "64",
        "most jobs waiting in the queue (more: 429)"),
    CFG_INT(retry_after_s, 1, 86400, "5",
        "seconds sent in Retry-After with a 429"),
    /* execution */
    CFG_ENUM(backend, "auto", LCN_BACKEND_CHOICES,
        "backends to start: auto (GPUs when usable, plus the CPU pool), gpu (fail without one), cpu"),
    CFG_INT(cpu_workers, 0, 1024, "1",
        "CPU jobs run at the same time (0: no CPU backend)"),
    CFG_INT(cpu_threads, 0, LCN_MAX_THREADS, "0",
        "threads per CPU job unless the request sets solver.threads (0: online cores / cpu_workers)"),
    CFG_STR(gpus, "all",
        "GPU devices to open: all (every visible CUDA device) or a comma-separated list of device "
        "ordinals, one context each; an ordinal given twice opens two contexts on that device "
        "(0,0: two stand-in devices on one GPU, for tests); CUDA_VISIBLE_DEVICES applies first"),
    CFG_INT(gpu_slots, -1, 64, "-1",
        "GPU jobs run at the same time per device, one workspace slot and stream each (-1: every "
        "slot of the device's context, 0: no GPU)"),
    CFG_BOOL(gpu_required, "true",
        "when a sticky error has taken the last GPU: true stops the daemon with exit status 3 for "
        "its supervisor to restart it; false keeps serving with the CPU pool (backend=gpu jobs "
        "then fail with gpu_unavailable); while another GPU is healthy the daemon serves on"),
    CFG_DBL(checkpoint_interval_s, 0.1, 86400, "5",
        "seconds between durable checkpoints of a running job's best layout"),
    CFG_DBL(telemetry_interval_s, 0.05, 3600, "1",
        "seconds between engine telemetry reports"),
    /* store */
    CFG_STR(state_dir, "lcnd-state",
        "directory of the job store (created when missing)"),
    CFG_STR(store_url, "",
        "PostgreSQL job store instead of the SQLite file in state_dir: postgresql://USER@HOST/DB "
        "(libpq URL); every lcnd on the same database serves one shared queue"),
    CFG_DBL(lease_s, 1, 3600, "10",
        "store_url: a claimed job's lease; a daemon that cannot renew it stops the job, and "
        "another resumes it once it expired"),
    CFG_INT(queue_poll_ms, 10, 60000, "200",
        "store_url: the longest wait between two reads of the shared queue (jobs queued and "
        "DELETEs wake every daemon at once)"),
    CFG_STR(node_name, "",
        "store_url: this daemon's name in the job store, unique among the daemons; a restarted "
        "daemon gives back the jobs its previous life held (empty: hostname:port)"),
    CFG_ENUM(store_sync, "full", "normal|full",
        "sqlite synchronous mode: full survives power loss, normal survives a process crash"),
    CFG_BOOL(resume_interrupted, "true",
        "resume jobs found running at start from their last checkpoint (false: mark them interrupted)"),
    CFG_INT(retain_jobs, 1, 10000000, "1000",
        "finished jobs kept in the store; the oldest beyond this are deleted"),
    CFG_DBL(retain_days, 0, 36500, "30",
        "finished jobs older than this many days are deleted (0: keep regardless of age)"),
    /* lifecycle and logging */
    CFG_DBL(shutdown_timeout_s, 0.1, 600, "8",
        "seconds a shutdown waits for running jobs to checkpoint before exiting anyway"),
    CFG_STR(log_file, "",
        "log file, reopened on SIGHUP (empty: standard error)"),
    CFG_ENUM(log_level, "info", "error|warn|info|debug",
        "least severe log level written"),
    CFG_ENUM(log_format, "text", "text|json",
        "log line format: text (time level message) or json (one object per line: time, level, "
        "job when the line is about one, message)"),
    /* fault injection (docs/DAEMON.md, "Test hooks") */
    CFG_ENUM(test_fake_gpu, "off", "off|sticky|cpu",
        "test only: sticky starts one fake GPU worker that runs the CPU engine for "
        "test_fake_gpu_ms and then fails its job with a sticky GPU error; cpu starts one fake GPU "
        "device per entry of gpus (all: one) with gpu_slots workers each (-1: one) that run the "
        "CPU engine on one thread, and test_gpu_fault applies to them (never in production)"),
    CFG_INT(test_fake_gpu_ms, 1, 600000, "300",
        "test only: milliseconds the fake GPU worker runs before its sticky error"),
    CFG_INT(test_gpu_fault, -1, 15, "-1",
        "test only: the index (in the gpus list) of a GPU device whose first solver launch "
        "test_gpu_fault_ms after its first job starts fails as a sticky error would; only that "
        "context is marked lost (-1: off; never in production)"),
    CFG_INT(test_gpu_fault_ms, 0, 600000, "1000",
        "test only: milliseconds from the start of the first job on the test_gpu_fault device to "
        "its injected error"),
};
/* clang-format on */
const size_t config_option_count = LCN_ARRAY_LEN(config_options);

int config_gpus_parse(const char *spec, int visible, int *out, int max, char *err, size_t errlen)
{
    int n = 0;
    while (*spec == ' ' || *spec == '\t')
        spec++;
    if (!*spec || !strncmp(spec, "all", 3)) {
        const char *rest = *spec ? spec + 3 : spec;
        while (*rest == ' ' || *rest == '\t')
            rest++;
        if (*rest) {
            snprintf(err, errlen, "gpus: expected all or a list of device ordinals, got '%s'", spec);
            return LCN_EINVAL;
        }
        for (; n < visible && n < max; n++)
            out[n] = n;
        return n;
    }
    for (const char *p = spec;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        char *end;
        errno = 0;
        long v = *p >= '0' && *p <= '9' ? strtol(p, &end, 10) : -1;
        if (v < 0 || errno || v > 1023) {
            snprintf(err, errlen, "gpus: expected all or a list of device ordinals, got '%s'", spec);
            return LCN_EINVAL;
        }
        if (visible >= 0 && v >= visible) {
            snprintf(err, errlen, "gpus: device %ld is not visible (%d CUDA device%s)", v, visible,
                     visible == 1 ? "" : "s");
            return LCN_ENOGPU;
        }
        if (n == max) {
            snprintf(err, errlen, "gpus: more than %d devices", max);
            return LCN_ERANGE;
        }
        out[n++] = (int)v;
        p = end;
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p)
            return n;
        if (*p != ',') {
            snprintf(err, errlen, "gpus: expected all or a list of device ordinals, got '%s'", spec);
            return LCN_EINVAL;
        }
        p++;
    }
}

const struct opt *config_find(const char *name)
{
    return opts_find(config_options, config_option_count, name, strlen(name));
}

int config_set(struct lcnd_config *c, const struct opt *o, const char *value, char *err,
               size_t errlen)
{
    char why[256];
    int rc = opts_set_value(o, c, value, why, sizeof why);
    if (rc)
        snprintf(err, errlen, "%s: %s", o->name, why);
    return rc;
}

void config_defaults(struct lcnd_config *c)
{
    memset(c, 0, sizeof *c);
    opts_defaults(config_options, config_option_count, c);
}

void config_release(struct lcnd_config *c)
{
    opts_release(config_options, config_option_count, c);
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
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
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
            snprintf(err, errlen, "%s:%d: expected 'name = value'", path, lineno);
            rc = LCN_EINVAL;
            break;
        }
        *eq = 0;
        char *name = trim(s), *value = trim(eq + 1);
        const struct opt *o = config_find(name);
        if (!o) {
            snprintf(err, errlen, "%s:%d: unknown option '%s'", path, lineno, name);
            rc = LCN_EINVAL;
            break;
        }
        size_t idx = (size_t)(o - config_options);
        if (seen[idx]) {
            snprintf(err, errlen, "%s:%d: option '%s' given twice", path, lineno, name);
            rc = LCN_EINVAL;
            break;
        }
        seen[idx] = 1;
        char why[300];
        rc = config_set(c, o, value, why, sizeof why);
        if (rc) {
            snprintf(err, errlen, "%s:%d: %s", path, lineno, why);
            break;
        }
    }
    if (!rc && ferror(f)) {
        snprintf(err, errlen, "%s: read error", path);
        rc = LCN_EIO;
    }
    free(line);
    free(seen);
    fclose(f);
    return rc;
}

/* The flags of `lcnd serve` that are not configuration (not in the file). */
struct serve_cli {
    const char *config;
    int print_config;
};

static const struct opt cli_options[] = {
    OPT_ROW("config", OPT_STRING, offsetof(struct serve_cli, config), "FILE",
            "read the options from FILE (config/lcnd.conf documents it); flags override it "
            "wherever they stand"),
    OPT_ROW("print-config", OPT_FLAG, offsetof(struct serve_cli, print_config), NULL,
            "print the effective configuration in the config file syntax and exit"),
};

int config_parse_args(struct lcnd_config *c, int argc, char **argv, int *help, int *print_config,
                      char *err, size_t errlen)
{
    /* The file comes first and the flags override it wherever --config
     * stands: a first pass, into a scratch config, checks the flags and
     * finds the file; the second applies the flags over it. */
    struct serve_cli cli = {NULL, 0};
    struct lcnd_config scratch;
    config_defaults(&scratch);
    struct opts_set sets[] = {{cli_options, LCN_ARRAY_LEN(cli_options), &cli},
                              {config_options, config_option_count, &scratch}};
    struct opts_args args = {.pos = NULL, .max_pos = 0};
    int rc = opts_parse_argv(sets, 2, argc, argv, &args, err, errlen);
    config_release(&scratch);
    *help = rc == OPTS_HELP;
    *print_config = cli.print_config;
    if (rc)
        return rc < 0 ? rc : 0;
    if (cli.config && (rc = config_load_file(c, cli.config, err, errlen)))
        return rc;
    sets[1].base = c;
    return opts_parse_argv(sets, 2, argc, argv, &args, err, errlen);
}

/* What the values may be, for the sample file. */
static void range_text(const struct opt *o, char *buf, size_t len)
{
    opts_describe(o, buf, len);
    if (!buf[0])
        snprintf(buf, len, "a string");
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
        const struct opt *o = &config_options[i];
        char range[128], val[512];
        range_text(o, range, sizeof range);
        opts_format_value(o, c, val, sizeof val);
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
    struct lcnd_config defaults;
    config_defaults(&defaults);
    struct opts_set sets[] = {{cli_options, LCN_ARRAY_LEN(cli_options), NULL},
                              {config_options, config_option_count, &defaults}};
    opts_write_help(f, sets, 2);
    config_release(&defaults);
}
