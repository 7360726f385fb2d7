/*
 * solve.c - `lcnd solve GRAPH.json --budget-s S --seed N --out OUT.json ...`
 *
 * Progress goes to stderr (one line per improvement, at most a few per
 * second unless K drops, plus a status line per telemetry period); the JSON
 * summary is the only thing written to stdout, so it can be piped, unless
 * the layout goes there (--out - or /dev/stdout): then the summary goes to
 * stderr, after the progress. The
 * layout file is written only after validate_layout accepted the engine's
 * final layout with exactly the tuple the engine claimed.
 */
#include "server/solve.h"

#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "engine.h"
#include "server/config.h"
#include "server/engines.h"
#include "err.h"
#include "graphio.h"
#include "job.h"
#include "opts.h"
#include "util.h"
#include "validate.h"

enum { EXIT_RUN = 1, EXIT_USAGE = 2 };

struct solve_opts {
    const char *graph, *out, *tuning;
    double budget_s;
    int64_t seed;
    int32_t target_k;
    int stop_at_target;
    int32_t threads, replicas, workers;
    const char *gpus;    /* --gpus N|all, NULL: one device */
    const char *devices; /* --devices LIST of ordinals, NULL: 0, 1, ... */
    int64_t move_limit;
    enum lcn_backend backend; /* OPT_ENUM: the index in LCN_BACKEND_CHOICES */
    int quiet, budget_given;
};

#define OFF(f) offsetof(struct solve_opts, f)
static const struct opt solve_options[] = {
    {OPT_RANGE_FIELDS("budget-s", OPT_DOUBLE, OFF(budget_s), 0, 1e7, "10", "S",
                      "wall-clock budget in seconds"),
     .seen = OPT_SEEN(struct solve_opts, budget_given)},
    OPT_RANGE("seed", OPT_INT, OFF(seed), 0, INFINITY, "1", NULL, "random seed"),
    OPT_RANGE("target-k", OPT_INT32, OFF(target_k), 0, INFINITY, NULL, "K",
              "target K; time_to_target_s reports when it is reached"),
    OPT_ROW("stop-at-target", OPT_FLAG, OFF(stop_at_target), NULL,
            "stop as soon as the target K is reached"),
    OPT_RANGE("threads", OPT_INT32, OFF(threads), 1, LCN_MAX_THREADS, NULL, "T",
              "worker threads (default: online cores)"),
    OPT_RANGE("replicas", OPT_INT32, OFF(replicas), 1, LCN_MAX_REPLICAS, NULL, "R",
              "parallel-tempering replicas (default: the engine's)"),
    OPT_RANGE("proposal-workers", OPT_INT32, OFF(workers), 1, LCN_MAX_PROPOSAL_WORKERS, NULL, "W",
              "candidate points per move, best-of-W"),
    OPT_ROW("gpus", OPT_STRING, OFF(gpus), "N|all",
            "GPUs for the run: islands of replicas on devices 0..N-1 (all: every visible one) "
            "exchanging the elite; --replicas is the total"),
    OPT_ROW("devices", OPT_STRING, OFF(devices), "LIST",
            "the device ordinals --gpus takes from, in order; repeats open several contexts on "
            "one device (0,0: two stand-ins on one GPU; default 0,1,...)"),
    {OPT_ROW_FIELDS("backend", OPT_ENUM, OFF(backend), NULL,
                    "engine to run (auto: gpu when available)"),
     .choices = LCN_BACKEND_CHOICES, .def = "auto"},
    OPT_ROW("out", OPT_STRING, OFF(out), "OUT.json", "where the best layout is written (required)"),
    OPT_ROW("tuning", OPT_STRING, OFF(tuning), "k=v,...", "engine knobs (docs/ENGINE.md)"),
    OPT_RANGE("move-limit", OPT_INT, OFF(move_limit), 1, INFINITY, NULL, NULL,
              "stop after N moves per replica (deterministic runs)"),
    OPT_ROW("quiet", OPT_FLAG, OFF(quiet), NULL, "no progress on stderr"),
};
#undef OFF

static void usage(FILE *f)
{
    fprintf(f, "usage: lcnd solve GRAPH.json --out OUT.json [OPTIONS]\n\n"
               "Solves one graph under a time budget: live progress on stderr, a JSON\n"
               "summary on stdout, the best layout (validated) in OUT.json.\n\noptions:\n");
    struct opts_set set = {solve_options, LCN_ARRAY_LEN(solve_options), NULL};
    opts_write_help(f, &set, 1);
    fprintf(f, "\nexit status: 0 success, 1 run-time failure, 2 usage or input error\n");
}

__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "lcnd solve: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\ntry 'lcnd solve --help'\n");
    va_end(ap);
    return EXIT_USAGE;
}

/* Returns 0, -1 after printing the help, or EXIT_USAGE after a usage error. */
static int parse_opts(int argc, char **argv, struct solve_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->target_k = -1;
    opts_defaults(solve_options, LCN_ARRAY_LEN(solve_options), o);
    char err[300];
    struct opts_set set = {solve_options, LCN_ARRAY_LEN(solve_options), o};
    char *graph[1];
    struct opts_args args = {.pos = graph, .max_pos = 1};
    int rc = opts_parse_argv(&set, 1, argc, argv, &args, err, sizeof err);
    if (rc == OPTS_HELP) {
        usage(stdout);
        return -1;
    }
    if (rc)
        return usage_error("%s", err);
    o->graph = args.npos ? graph[0] : NULL;
    if (!o->graph)
        return usage_error("missing GRAPH.json");
    if (!o->out)
        return usage_error("missing --out OUT.json");
    if (o->stop_at_target && o->target_k < 0)
        return usage_error("--stop-at-target needs --target-k");
    return 0;
}

/* ---- live progress --------------------------------------------------- */

struct progress {
    int quiet;
    double budget_s;
    struct lcn_obj best, printed;
    const char *stage;
    int have, have_printed;
    double t_best, t_printed;
    double rate; /* attempted proposals per second, from the last telemetry */
};

static void print_line(struct progress *pr, double t)
{
    char tuple[96];
    obj_format(&pr->best, tuple, sizeof(tuple));
    fprintf(stderr, "[%7.2f/%.2f s] best %s  %-12s", t, pr->budget_s, tuple, pr->stage);
    if (pr->rate > 0)
        fprintf(stderr, "  %.0f moves/s (attempted proposals)", pr->rate);
    fputc('\n', stderr);
    pr->printed = pr->best;
    pr->have_printed = 1;
    pr->t_printed = t;
}

static void on_progress(void *ctx, const struct engine_event *ev)
{
    struct progress *pr = ctx;
    pr->best = ev->best;
    pr->stage = ev->stage;
    pr->have = 1;
    pr->t_best = ev->elapsed_s;
    if (pr->quiet)
        return;
    if (!pr->have_printed || ev->best.K < pr->printed.K || ev->elapsed_s - pr->t_printed >= 0.5)
        print_line(pr, ev->elapsed_s);
}

static void on_telemetry(void *ctx, const struct engine_telemetry *t)
{
    struct progress *pr = ctx;
    pr->rate = t->elapsed_s > 0 ? (double)t->attempted / t->elapsed_s : 0;
    if (!pr->quiet && pr->have)
        print_line(pr, t->elapsed_s);
}

/* ---- signals: Ctrl-C stops the run, which still writes its best --------- */

static atomic_int cancel_flag;

static void on_signal(int sig)
{
    (void)sig;
    atomic_store(&cancel_flag, 1);
}

/* ---- summary ------------------------------------------------------------ */

/* One stderr line per move operator the run drew (tried > 0). */
static void print_ops(const struct engine_telemetry *t)
{
    for (int op = 0; op < ENGINE_OPS; op++) {
        const struct engine_op_stats *c = &t->ops[op];
        if (c->tried == 0)
            continue;
        fprintf(stderr,
                "op %-7s tried %12llu valid %12llu (%5.1f%%) accepted %11llu (%5.1f%% of valid) "
                "improved %9llu\n",
                engine_op_name((enum engine_op)op), (unsigned long long)c->tried,
                (unsigned long long)c->valid, 100.0 * (double)c->valid / (double)c->tried,
                (unsigned long long)c->accepted,
                c->valid ? 100.0 * (double)c->accepted / (double)c->valid : 0.0,
                (unsigned long long)c->improved);
    }
}

static json_t *telemetry_json(const struct engine_telemetry *t)
{
    json_t *o = json_object();
    job_telemetry_counters_json(o, t);
    json_object_set_new(o, "elapsed_s", json_real(t->elapsed_s));
    json_object_set_new(o, "attempted_per_s",
                        json_real(t->elapsed_s > 0 ? (double)t->attempted / t->elapsed_s : 0));
    json_object_set_new(o, "pair_tests_per_s",
                        json_real(t->elapsed_s > 0 ? (double)t->pair_tests / t->elapsed_s : 0));
    json_object_set_new(o, "ops", job_ops_json(t));
    if (t->n_devices > 0)
        json_object_set_new(o, "devices", job_devices_json(t));
    return o;
}

/* Whether the layout is written to stdout (--out -, /dev/stdout, the file
 * stdout is on): the summary printed after it there made stdout two JSON
 * documents. Asked before writing: the atomic write replaces a regular
 * file with a new one. */
static int out_is_stdout(const char *out)
{
    struct stat a, b;
    if (!strcmp(out, "-"))
        return 1;
    return stat(out, &a) == 0 && fstat(STDOUT_FILENO, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

/* The JSON summary printed on stdout after the layout was written. */
static json_t *summary_json(const struct solve_opts *o, const struct graphio_doc *doc,
                            const struct engine_result *res)
{
    json_t *sum = json_object();
    json_object_set_new(sum, "graph", graphio_text_json(o->graph));
    json_object_set_new(sum, "n", json_integer(doc->g.n));
    json_object_set_new(sum, "m", json_integer(doc->g.m));
    json_object_set_new(sum, "backend", json_string(res->backend));
    json_object_set_new(sum, "backend_requested", json_string(lcn_backend_name(o->backend)));
    json_object_set_new(sum, "evaluator", json_string(res->evaluator));
    json_object_set_new(sum, "seed", json_integer((json_int_t)o->seed));
    json_object_set_new(sum, "threads", json_integer(res->threads));
    json_object_set_new(sum, "replicas", json_integer(res->replicas));
    json_object_set_new(sum, "proposal_workers", json_integer(res->proposal_workers));
    json_object_set_new(sum, "budget_s", json_real(o->budget_s));
    json_object_set_new(sum, "elapsed_s", json_real(res->elapsed_s));
    json_object_set_new(sum, "stop", json_string(engine_stop_name(res->stop)));
    json_object_set_new(sum, "best", graphio_obj_json(&res->best));
    json_object_set_new(sum, "balance_ratio", json_real(obj_balance_ratio(&res->best, doc->g.m)));
    json_object_set_new(sum, "target_k",
                        o->target_k >= 0 ? json_integer(o->target_k) : json_null());
    json_object_set_new(sum, "time_to_target_s",
                        res->time_to_target_s >= 0 ? json_real(res->time_to_target_s)
                                                   : json_null());
    json_object_set_new(sum, "telemetry", telemetry_json(&res->tel));
    json_object_set_new(sum, "out", graphio_text_json(o->out));
    return sum;
}

/* ---- the run ------------------------------------------------------------ */

static void report_graphio(const char *path, const struct graphio_error *e)
{
    char msg[600];
    graphio_error_format(e, msg, sizeof(msg));
    fprintf(stderr, "lcnd solve: %s: %s\n", path, msg);
}

/* The engine's parameters from the options; progress goes to pr. May set
 * o->budget_s (a move limit without a budget runs on a far deadline). */
static void params_from_opts(struct engine_params *p, struct solve_opts *o,
                             const struct graphio_doc *doc, int64_t t_start, struct progress *pr)
{
    engine_params_default(p);
    p->seed = o->seed;
    p->threads = o->threads;
    p->replicas = o->replicas;
    p->proposal_workers = o->workers;
    p->target_k = o->target_k;
    p->stop_at_target = o->stop_at_target;
    p->start_ns = t_start;
    p->deadline_ns = t_start + (int64_t)(o->budget_s * 1e9);
    p->cancel = &cancel_flag;
    p->move_limit = o->move_limit;
    p->tuning = o->tuning;
    p->caller_validations = 1; /* write_layout's check, before the file is written */
    p->init = doc->pts;
    p->has_xy = doc->has_xy;
    p->on_progress = on_progress;
    p->on_telemetry = on_telemetry;
    p->ctx = pr;
    if (o->move_limit > 0 && !o->budget_given) /* the limit, not a clock, ends the run */
        p->deadline_ns = t_start + (int64_t)(o->budget_s = 1e6) * 1000000000;
}

static void catch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* The oracle, once more, on exactly what is about to be written, then the
 * file. Returns 0 or EXIT_RUN (after a message). */
static int write_layout(const struct solve_opts *o, const struct graphio_doc *doc,
                        const struct engine_result *res)
{
    char diag[256];
    if (validate_claim(&doc->g, res->layout, &res->best, NULL, NULL, diag, sizeof(diag)) != 0) {
        fprintf(stderr,
                "lcnd solve: internal error: the oracle rejected the engine's layout (%s); "
                "nothing written\n",
                diag);
        return EXIT_RUN;
    }
    json_t *lcn = json_object();
    json_object_set_new(lcn, "best", graphio_obj_json(&res->best));
    json_object_set_new(lcn, "backend", json_string(res->backend));
    json_object_set_new(lcn, "seed", json_integer((json_int_t)o->seed));
    json_t *outdoc = graphio_layout_json(doc, res->layout, lcn);
    struct graphio_error gerr;
    int rc = graphio_write_file(outdoc, o->out, 0, &gerr);
    json_decref(outdoc);
    if (rc != 0) {
        report_graphio(o->out, &gerr);
        return EXIT_RUN;
    }
    return 0;
}

/*
 * --gpus N|all and --devices LIST: opens the device set (devices 0..N-1,
 * or the listed ordinals, repeats allowed: two contexts on one device) and
 * sets *gpus to the run's device count (N, or every device opened; 0 with
 * neither option: one device, opened on first use). Returns 0 or
 * EXIT_USAGE after a message.
 */
static int open_gpus(const struct solve_opts *o, int32_t *gpus)
{
    *gpus = 0;
    if (!o->gpus && !o->devices)
        return 0;
    if (o->backend == LCN_BACKEND_CPU) {
        fprintf(stderr, "lcnd solve: --gpus and --devices need the gpu backend\n");
        return EXIT_USAGE;
    }
    long want = 0; /* 0: all */
    if (o->gpus && strcmp(o->gpus, "all")) {
        want = strtol(o->gpus, NULL, 10);
        if (!lcn_number_syntax(o->gpus, 1) || want < 1 || want > ENGINE_MAX_DEVICES) {
            fprintf(stderr, "lcnd solve: --gpus: expected all or 1 to %d, got '%s'\n",
                    ENGINE_MAX_DEVICES, o->gpus);
            return EXIT_USAGE;
        }
    }
    char err[300] = "";
    int ord[ENGINES_MAX_GPUS];
    int n = o->devices ? config_gpus_parse(o->devices, -1, ord, ENGINES_MAX_GPUS, err, sizeof err)
                       : 0;
    if (n > 0 && want > n) {
        fprintf(stderr, "lcnd solve: --gpus %ld: --devices lists %d\n", want, n);
        return EXIT_USAGE;
    }
    if (n >= 0)
        n = n > 0 ? engines_gpu_open_list(ord, n, err, sizeof err)
                  : engines_gpu_open_first((int)want, err, sizeof err);
    if (n < 0) {
        fprintf(stderr, "lcnd solve: %s%s: %s\n", o->devices ? "--devices " : "--gpus ",
                o->devices ? o->devices : o->gpus, err);
        return EXIT_USAGE;
    }
    *gpus = want > 0 ? (int32_t)want : n;
    return 0;
}

/* Runs the engine on the graph read, writes the checked layout and prints
 * the summary. Returns the exit status. */
static int solve_graph(struct solve_opts *o, const struct graphio_doc *doc, int64_t t_start)
{
    enum lcn_backend resolved;
    int32_t gpus = 0;
    engines_gpu_size(doc->g.n, doc->g.m); /* the device's workspace holds this graph */
    int rc = open_gpus(o, &gpus);
    if (rc)
        return rc;
    if (engines_resolve(o->backend, &resolved) != 0) {
        fprintf(stderr, "lcnd solve: --backend %s: this build has no usable GPU engine\n",
                lcn_backend_name(o->backend));
        return EXIT_USAGE;
    }
    struct progress pr = {.quiet = o->quiet, .budget_s = o->budget_s, .stage = ""};
    struct engine_params p;
    params_from_opts(&p, o, doc, t_start, &pr);
    p.gpus = gpus > 1 ? gpus : 0;
    catch_signals();

    struct engine_result res;
    rc = engines_run(o->backend, &doc->g, &p, &res);
    if (rc) {
        fprintf(stderr, "lcnd solve: %s: engine failed: %s%s\n", o->graph, lcn_strerror(rc),
                rc == LCN_EINVAL      ? " (a bad --tuning value, or no valid layout of the graph fits "
                                        "in its bounds)"
                : rc == LCN_EDEADLINE ? " (the budget ran out before a first layout of this graph "
                                        "was built and checked: give a longer --budget-s)"
                : rc == LCN_ECANCELLED ? " (interrupted before a first layout of this graph was "
                                         "built and checked: no layout to write)"
                                       : "");
        return rc == LCN_EINVAL ? EXIT_USAGE : EXIT_RUN;
    }
    if (!o->quiet && pr.have)
        print_line(&pr, res.elapsed_s);
    if (!o->quiet)
        print_ops(&res.tel);
    FILE *sf = out_is_stdout(o->out) ? stderr : stdout;
    rc = write_layout(o, doc, &res);
    if (rc == 0) {
        json_t *sum = summary_json(o, doc, &res);
        char *text = json_dumps(sum, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        fprintf(sf, "%s\n", text);
        fflush(sf);
        free(text);
        json_decref(sum);
    }
    engine_result_release(&res);
    return rc;
}

int solve_main(int argc, char **argv)
{
    struct solve_opts o;
    int rc = parse_opts(argc, argv, &o);
    if (rc)
        return rc < 0 ? 0 : rc;
    struct graphio_doc doc;
    struct graphio_error gerr;
    int64_t t_start = lcn_now_ns();
    if (graphio_read_file(&doc, o.graph, NULL, &gerr) != 0) {
        report_graphio(o.graph, &gerr);
        return EXIT_USAGE;
    }
    rc = solve_graph(&o, &doc, t_start);
    graphio_release(&doc);
    return rc;
}
