/*
 * config.h - lcnd's configuration: one options table (opts.h rows) drives
 * the config file parser, the command-line flags, `lcnd serve --help` and
 * the documented sample config/lcnd.conf.
 *
 * Precedence, lowest first: the embedded defaults (the table), the config
 * file (--config FILE), the command-line flags. Every value, defaults
 * included, goes through the same parser and range check, so a default that
 * violates its own range is caught by the unit test that loads the defaults.
 *
 * Ownership: a struct lcnd_config owns its strings; config_release frees
 * them. The table is static and read-only.
 *
 * Why not a library: the file format is "name = value" lines read by
 * opts.h's engine, which also checks kinds and ranges and writes the help
 * and the sample; inih (Debian's libinih-dev) would only split the lines
 * into names and values (see opts.h).
 */
#ifndef LCN_SERVER_CONFIG_H
#define LCN_SERVER_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "engine.h"
#include "opts.h"

enum config_log_level { LOG_LEVEL_ERROR = 0, LOG_LEVEL_WARN, LOG_LEVEL_INFO, LOG_LEVEL_DEBUG };
enum config_log_format { LOG_FORMAT_TEXT = 0, LOG_FORMAT_JSON };
enum config_sync { CONFIG_SYNC_NORMAL = 0, CONFIG_SYNC_FULL };
enum config_fake_gpu { CONFIG_FAKE_GPU_OFF = 0, CONFIG_FAKE_GPU_STICKY, CONFIG_FAKE_GPU_CPU };

struct lcnd_config {
    /* network and access */
    char *listen;    /* HOST:PORT */
    char *allowed_origins; /* "" = CORS off; else exact origins, comma-separated */
    char *port_file; /* "" = none */
    char *token_file;
    int allow_insecure_listen;
    int64_t max_connections;
    int64_t max_connections_per_ip;
    int64_t connection_timeout_s;
    int64_t header_timeout_s;
    int64_t connection_reserve;
    int64_t max_streams;
    double sse_heartbeat_s;
    /* admission */
    int64_t max_body_bytes;
    int64_t max_body_total_bytes;
    int64_t max_nodes;
    int64_t max_edges;
    double max_budget_s;
    double default_budget_s;
    int64_t max_queued;
    int64_t retry_after_s;
    /* execution */
    enum lcn_backend backend; /* OPT_ENUM: the index in LCN_BACKEND_CHOICES */
    int64_t cpu_workers;
    int64_t cpu_threads;
    char *gpus; /* "all" or device ordinals, comma-separated (config_gpus_parse) */
    int64_t gpu_slots;
    int64_t gpu_max_nodes; /* each workspace slot's size (gpu_config) */
    int64_t gpu_max_edges;
    int gpu_required; /* losing the last GPU stops the daemon (status 3) */
    double checkpoint_interval_s;
    double telemetry_interval_s;
    /* store */
    char *state_dir;
    char *store_url; /* "" = the SQLite file state_dir/jobs.db */
    double lease_s;          /* the shared queue's lease (store_url) */
    int64_t queue_poll_ms;   /* how often the shared queue is read at most */
    char *node_name;         /* this daemon's name in the shared queue; "" = host:port */
    enum config_sync store_sync;
    int resume_interrupted;
    int64_t max_resumes; /* resumes before a job found running stays interrupted (0: none) */
    int64_t retain_jobs;
    double retain_days;
    /* lifecycle and logging */
    double shutdown_timeout_s;
    char *log_file; /* "" = stderr */
    enum config_log_level log_level;
    enum config_log_format log_format;
    /* fault injection, for the integration tests only */
    enum config_fake_gpu test_fake_gpu;
    int64_t test_fake_gpu_ms;
    int64_t test_gpu_fault;    /* device index whose launch fails, -1 = off */
    int64_t test_gpu_fault_ms; /* after the first job on it started */
    int test_engine_faults;    /* requests may set the engines' fault_* knobs */
};

/* The options table and its length. */
extern const struct opt config_options[];
extern const size_t config_option_count;

/*
 * The `gpus` option: "all" (or empty) names the visible devices 0 ..
 * visible - 1, else a comma-separated list of device ordinals (repeats
 * allowed: each entry is one context). With visible >= 0 every ordinal
 * must be below it; visible < 0 checks the syntax only ("all" then gives
 * 0 entries). Writes at most max entries to out. Returns their number, or
 * LCN_EINVAL (syntax), LCN_ENOGPU (an ordinal not visible) or LCN_ERANGE
 * (more than max) with a message in err ("gpus: device 3 is not visible
 * (2 CUDA devices)").
 */
int config_gpus_parse(const char *spec, int visible, int *out, int max, char *err, size_t errlen);

/* Finds an option by its file name or flag name ("max_nodes" or "max-nodes");
 * NULL when there is none. */
const struct opt *config_find(const char *name);

/* Fills c with the embedded defaults (a default its option rejects is a bug
 * in the table and aborts through LCN_ASSERT). */
void config_defaults(struct lcnd_config *c);

void config_release(struct lcnd_config *c);

/*
 * Parses value (file syntax) for option o and stores it in c. Returns 0, or
 * LCN_EINVAL / LCN_ERANGE with a message in err ("max_nodes: expected an
 * integer in [1, 1000000], got '0'").
 */
int config_set(struct lcnd_config *c, const struct opt *o, const char *value, char *err,
               size_t errlen);

/*
 * Reads a config file: `name = value` lines, blank lines and lines whose
 * first non-blank character is '#'; a '#' preceded by a blank starts a
 * trailing comment. Unknown names, duplicates and bad values are errors
 * ("lcnd.conf:12: unknown option 'max_node'"). Returns 0, LCN_EIO when the
 * file cannot be read, or LCN_EINVAL / LCN_ERANGE with err filled.
 */
int config_load_file(struct lcnd_config *c, const char *path, char *err, size_t errlen);

/*
 * Parses the command line of `lcnd serve` (argv[0] is the subcommand
 * name) with opts.h: --config FILE is read first, then every --name VALUE
 * or --name=VALUE flag; a bool flag given without a value means true. Sets
 * *help when --help was given (the rest is then not applied) and
 * *print_config when --print-config was given. Returns 0 or a negative
 * LCN_E* code with err filled ("--max-nodes: expected an integer in
 * [1, 1000000], got '0'").
 */
int config_parse_args(struct lcnd_config *c, int argc, char **argv, int *help, int *print_config,
                      char *err, size_t errlen);

/*
 * Writes c in the config file syntax: for every option its help, range and
 * default as comments, then `name = value`. With the defaults this is
 * exactly config/lcnd.conf (a unit test compares them).
 */
void config_write(FILE *f, const struct lcnd_config *c);

/* Writes the `lcnd serve --help` text (usage and one entry per option,
 * generated from the tables). */
void config_write_help(FILE *f, const char *prog);

#endif
