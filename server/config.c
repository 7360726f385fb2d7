#include "server/config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "util.h"

#define OFF(field) offsetof(struct lcnd_config, field)
/* A row in the order of the table's columns. Every value of the file is one line. */
#define ROW(name_, kind_, lo, hi, def_, off_, choices_, help_)                                     \
    {                                                                                              \
        .name = (name_), .kind = (kind_), .min = (lo), .max = (hi), .def = (def_), .off = (off_),  \
        .choices = (choices_), .help = (help_), .flags = OPT_ONE_LINE                              \
    }

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
    ROW("listen", OPT_STRDUP, 0, 0, "127.0.0.1:8480", OFF(listen), NULL,
     "address to listen on as HOST:PORT (IPv6 as [ADDR]:PORT); port 0 picks a free port"),
    ROW("port_file", OPT_STRDUP, 0, 0, "", OFF(port_file), NULL,
     "file to write the bound HOST:PORT to once listening (empty: none)"),
    ROW("token_file", OPT_STRDUP, 0, 0, "", OFF(token_file), NULL,
     "file holding the bearer token every request except /healthz must carry (empty: no auth)"),
    ROW("allow_insecure_listen", OPT_BOOL, 0, 1, "false", OFF(allow_insecure_listen), NULL,
     "allow listening on a non-loopback address without a token file"),
    ROW("allowed_origins", OPT_STRDUP, 0, 0, "", OFF(allowed_origins), NULL,
     "browser origins allowed to call the API from their pages (CORS): exact origins such as "
     "https://app.example.org:8443, comma-separated; preflight OPTIONS requests are answered and "
     "answers to an allowed Origin carry Access-Control-Allow-Origin (empty: CORS off)"),
    ROW("max_connections", OPT_INT, 4, 100000, "256", OFF(max_connections), NULL,
     "most simultaneous HTTP connections (more wait in the listen backlog)"),
    ROW("max_connections_per_ip", OPT_INT, 0, 100000, "128", OFF(max_connections_per_ip), NULL,
     "most simultaneous HTTP connections from one client address; more are closed at once "
     "(0: no limit)"),
    ROW("connection_timeout_s", OPT_INT, 1, 86400, "60", OFF(connection_timeout_s), NULL,
     "seconds without traffic after which a connection is closed, also in the middle of a "
     "request (a body that stops coming) or of an answer (a client that stops reading)"),
    ROW("header_timeout_s", OPT_INT, 0, 86400, "10", OFF(header_timeout_s), NULL,
     "seconds a connection has to send a complete request header, from its opening or its "
     "previous answer; then it is closed (0: no limit)"),
    ROW("connection_reserve", OPT_INT, 0, 100000, "16", OFF(connection_reserve), NULL,
     "connection slots kept free for new clients: when fewer are free, the connections that "
     "have waited longest for a request header are closed at once (at most a quarter of "
     "max_connections; 0: none, new connections wait in the listen backlog)"),
    ROW("max_streams", OPT_INT, 0, 100000, "128", OFF(max_streams), NULL,
     "most simultaneous server-sent-event progress streams"),
    ROW("sse_heartbeat_s", OPT_DOUBLE, 0.05, 3600, "5", OFF(sse_heartbeat_s), NULL,
     "seconds between keepalive comments on an idle progress stream"),
    /* admission */
    ROW("max_body_bytes", OPT_INT, 1024, 1073741824, "67108864", OFF(max_body_bytes), NULL,
     "largest accepted request body in bytes (larger: 413)"),
    ROW("max_body_total_bytes", OPT_INT, 0, 1099511627776, "268435456", OFF(max_body_total_bytes),
     NULL,
     "request bodies all live requests may hold together, buffered or being parsed, and, as a "
     "bound of their own, the answers held until their clients read them (past it: 503 with "
     "Retry-After for an upload, or a solution or picture over 64 KiB; 0: no bound; raised to "
     "max_body_bytes when smaller)"),
    ROW("max_nodes", OPT_INT, 1, LCN_MAX_NODES, "200000", OFF(max_nodes), NULL,
     "most nodes in a submitted graph (more: 422)"),
    ROW("max_edges", OPT_INT, 0, LCN_MAX_EDGES, "1000000", OFF(max_edges), NULL,
     "most edges in a submitted graph (more: 422)"),
    ROW("max_budget_s", OPT_DOUBLE, 0.001, 31536000, "3600", OFF(max_budget_s), NULL,
     "largest wall-clock budget a job may ask for in seconds (more: 422)"),
    ROW("default_budget_s", OPT_DOUBLE, 0.001, 31536000, "60", OFF(default_budget_s), NULL,
     "budget of a job that does not give budget_s, in seconds"),
    ROW("max_queued", OPT_INT, 1, 1000000, "64", OFF(max_queued), NULL,
     "most jobs waiting in the queue (more: 429)"),
    ROW("retry_after_s", OPT_INT, 1, 86400, "5", OFF(retry_after_s), NULL,
     "seconds sent in Retry-After with a 429"),
    /* execution */
    ROW("backend", OPT_ENUM, 0, 0, "auto", OFF(backend), LCN_BACKEND_CHOICES,
     "backends to start: auto (GPUs when usable, plus the CPU pool), gpu (fail without one), cpu"),
    ROW("cpu_workers", OPT_INT, 0, 1024, "1", OFF(cpu_workers), NULL,
     "CPU jobs run at the same time (0: no CPU backend)"),
    ROW("cpu_threads", OPT_INT, 0, LCN_MAX_THREADS, "0", OFF(cpu_threads), NULL,
     "threads per CPU job unless the request sets solver.threads (0: online cores / cpu_workers)"),
    ROW("gpus", OPT_STRDUP, 0, 0, "all", OFF(gpus), NULL,
     "GPU devices to open: all (every visible CUDA device) or a comma-separated list of device "
     "ordinals, one context each; an ordinal given twice opens two contexts on that device "
     "(0,0: two stand-in devices on one GPU, for tests); CUDA_VISIBLE_DEVICES applies first"),
    ROW("gpu_slots", OPT_INT, -1, 64, "-1", OFF(gpu_slots), NULL,
     "GPU jobs run at the same time per device, one workspace slot and stream each (-1: every "
     "slot of the device's context, 0: no GPU)"),
    ROW("gpu_max_nodes", OPT_INT, 2, LCN_MAX_NODES, "20000", OFF(gpu_max_nodes), NULL,
     "nodes each GPU workspace slot holds, allocated at start; a larger graph runs on the CPU "
     "pool (backend=gpu: 422)"),
    ROW("gpu_max_edges", OPT_INT, 1, LCN_MAX_EDGES, "32768", OFF(gpu_max_edges), NULL,
     "edges each GPU workspace slot holds, allocated at start (device memory grows with "
     "gpu_max_nodes and gpu_max_edges times the replicas, docs/GPU.md)"),
    ROW("gpu_required", OPT_BOOL, 0, 1, "true", OFF(gpu_required), NULL,
     "when a sticky error has taken the last GPU: true stops the daemon with exit status 3 for "
     "its supervisor to restart it; false keeps serving with the CPU pool (backend=gpu jobs "
     "then fail with gpu_unavailable); while another GPU is healthy the daemon serves on"),
    ROW("checkpoint_interval_s", OPT_DOUBLE, 0.1, 86400, "5", OFF(checkpoint_interval_s), NULL,
     "seconds between durable checkpoints of a running job's best layout"),
    ROW("telemetry_interval_s", OPT_DOUBLE, 0.05, 3600, "1", OFF(telemetry_interval_s), NULL,
     "seconds between engine telemetry reports"),
    /* store */
    ROW("state_dir", OPT_STRDUP, 0, 0, "lcnd-state", OFF(state_dir), NULL,
     "directory of the job store (created when missing)"),
    ROW("store_url", OPT_STRDUP, 0, 0, "", OFF(store_url), NULL,
     "PostgreSQL job store instead of the SQLite file in state_dir: postgresql://USER@HOST/DB "
     "(libpq URL); every lcnd on the same database serves one shared queue"),
    ROW("lease_s", OPT_DOUBLE, 1, 3600, "10", OFF(lease_s), NULL,
     "store_url: a claimed job's lease; a daemon that cannot renew it stops the job, and "
     "another resumes it once it expired"),
    ROW("queue_poll_ms", OPT_INT, 10, 60000, "200", OFF(queue_poll_ms), NULL,
     "store_url: the longest wait between two reads of the shared queue (jobs queued and "
     "DELETEs wake every daemon at once)"),
    ROW("node_name", OPT_STRDUP, 0, 0, "", OFF(node_name), NULL,
     "store_url: this daemon's name in the job store, unique among the daemons; a restarted "
     "daemon gives back the jobs its previous life held (empty: hostname:port)"),
    ROW("store_sync", OPT_ENUM, 0, 0, "full", OFF(store_sync), "normal|full",
     "sqlite synchronous mode: full survives power loss, normal survives a process crash"),
    ROW("resume_interrupted", OPT_BOOL, 0, 1, "true", OFF(resume_interrupted), NULL,
     "resume jobs found running at start from their last checkpoint (false: mark them interrupted)"),
    ROW("max_resumes", OPT_INT, 0, 1000000, "5", OFF(max_resumes), NULL,
     "resume_interrupted: a job found running after this many resumes is marked interrupted "
     "instead (a job that brings its daemon down, or one killed again and again before its "
     "first checkpoint, does not run forever; 0: no limit)"),
    ROW("retain_jobs", OPT_INT, 1, 10000000, "1000", OFF(retain_jobs), NULL,
     "finished jobs kept in the store; the oldest beyond this are deleted"),
    ROW("retain_days", OPT_DOUBLE, 0, 36500, "30", OFF(retain_days), NULL,
     "finished jobs older than this many days are deleted (0: keep regardless of age)"),
    /* lifecycle and logging */
    ROW("shutdown_timeout_s", OPT_DOUBLE, 0.1, 600, "8", OFF(shutdown_timeout_s), NULL,
     "seconds a shutdown waits for running jobs to checkpoint before exiting anyway"),
    ROW("log_file", OPT_STRDUP, 0, 0, "", OFF(log_file), NULL,
     "log file, reopened on SIGHUP (empty: standard error)"),
    ROW("log_level", OPT_ENUM, 0, 0, "info", OFF(log_level), "error|warn|info|debug",
     "least severe log level written"),
    ROW("log_format", OPT_ENUM, 0, 0, "text", OFF(log_format), "text|json",
     "log line format: text (time level message) or json (one object per line: time, level, "
     "job when the line is about one, message)"),
    /* fault injection (docs/DAEMON.md, "Test hooks") */
    ROW("test_fake_gpu", OPT_ENUM, 0, 0, "off", OFF(test_fake_gpu), "off|sticky|cpu",
     "test only: sticky starts one fake GPU worker that runs the CPU engine for "
     "test_fake_gpu_ms and then fails its job with a sticky GPU error; cpu starts one fake GPU "
     "device per entry of gpus (all: one) with gpu_slots workers each (-1: one) that run the "
     "CPU engine on one thread, and test_gpu_fault applies to them (never in production)"),
    ROW("test_fake_gpu_ms", OPT_INT, 1, 600000, "300", OFF(test_fake_gpu_ms), NULL,
     "test only: milliseconds the fake GPU worker runs before its sticky error"),
    ROW("test_gpu_fault", OPT_INT, -1, 15, "-1", OFF(test_gpu_fault), NULL,
     "test only: the index (in the gpus list) of a GPU device whose first solver launch "
     "test_gpu_fault_ms after its first job starts fails as a sticky error would; only that "
     "context is marked lost (-1: off; never in production)"),
    ROW("test_gpu_fault_ms", OPT_INT, 0, 600000, "1000", OFF(test_gpu_fault_ms), NULL,
     "test only: milliseconds from the start of the first job on the test_gpu_fault device to "
     "its injected error"),
    ROW("test_engine_faults", OPT_BOOL, 0, 1, "false", OFF(test_engine_faults), NULL,
     "test only: accept the CPU engine's fault-injection knobs (fault_stall_ms, "
     "fault_final_miss) in a request's solver.tuning; off, such a request is refused with 400, "
     "since a run made deaf to its deadline and cancel is abandoned and holds a thread and its "
     "memory (never in production)"),
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
    ssize_t len;
    while ((len = getline(&line, &cap, f)) >= 0) {
        lineno++;
        if (strlen(line) != (size_t)len) {
            /* it would end the line there, silently */
            snprintf(err, errlen, "%s:%d: NUL byte in the line", path, lineno);
            rc = LCN_EINVAL;
            break;
        }
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
