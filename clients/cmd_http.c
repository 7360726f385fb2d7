/* lcnctl commands that talk to lcnd over HTTP: submit, watch, wait, get,
 * solution, cancel, list (docs/API.md, docs/lcnctl.md). */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "clients/check.h"
#include "clients/client.h"
#include "engine.h"
#include "err.h"
#include "fileio.h"
#include "graphio.h"
#include "clients/lcnctl.h"
#include "util.h"
#include "clients/watch.h"

#define SEED_MAX 9007199254740992LL /* 2^53, the API's bound */

/* Job ids are short printable tokens; anything else is a typo, not an id. */
static int check_id(const struct lcnctl_cmd *cmd, const char *id)
{
    size_t n = strlen(id);
    if (n == 0 || n > 64)
        return lcnctl_usage_error(cmd, "'%s' is not a job id", id);
    for (size_t i = 0; i < n; i++)
        if (!(id[i] >= '0' && id[i] <= '9') && !(id[i] >= 'a' && id[i] <= 'z') &&
            !(id[i] >= 'A' && id[i] <= 'Z') && id[i] != '-' && id[i] != '_')
            return lcnctl_usage_error(cmd, "'%s' is not a job id", id);
    return 0;
}

/* The start of every command on one job: the id checked, the server
 * connected (the caller releases h). Returns 0 or the exit status. */
static int job_connect(const struct lcnctl_cmd *cmd, const char *id, struct lcnhttp *h)
{
    int rc = check_id(cmd, id);
    return rc ? rc : client_connect(cmd, h);
}

typedef void (*job_printer)(const json_t *st, const char *id);

/* Prints a job's document: as JSON with --json, else by print. */
static void print_job(const json_t *st, const char *id, job_printer print)
{
    if (lcnctl_json)
        client_print_json(st);
    else
        print(st, id);
}

static void print_summary(const json_t *st, const char *id)
{
    (void)id;
    client_print_summary(stdout, st);
}

/* get and cancel: METHOD /jobs/ID, which answers with the job's status,
 * printed as JSON with --json, else by print. Returns the exit status. */
static int job_call(const struct lcnctl_cmd *cmd, const char *id, const char *method,
                    job_printer print)
{
    struct lcnhttp h;
    int rc = job_connect(cmd, id, &h);
    if (rc)
        return rc;
    char *path = client_job_path(id, "");
    json_t *st;
    rc = client_call(cmd, &h, method, path, NULL, &st);
    free(path);
    lcnhttp_release(&h);
    if (rc)
        return rc;
    print_job(st, id, print);
    json_decref(st);
    return LCNCTL_EXIT_OK;
}

/* --render OUT: the picture is redrawn as the job improves, between the
 * progress lines on stdout, so OUT must be a file of its own. */
static int render_target_bad(const char *render)
{
    return render && client_out_is_stream(render);
}

#define RENDER_STREAM_MSG                                                                          \
    "--render %s: the picture is redrawn as the job improves and needs a regular file, not "      \
    "standard output or a stream (`lcnctl render ID` draws one picture on stdout)"

/* Follows a job and prints its end; returns the exit status, or
 * LCNCTL_EXIT_INTERRUPTED when *interrupted was set (may be NULL). */
static int follow(const struct lcnctl_cmd *cmd, struct lcnhttp *h, const char *id,
                  enum watch_display display, int poll_only, const char *render,
                  const volatile sig_atomic_t *interrupted)
{
    struct watch_opts wo = {display, poll_only, render, 0, NULL, interrupted};
    json_t *final;
    int rc = watch_job(cmd, h, id, &wo, &final);
    if (rc == WATCH_INTERRUPTED)
        return LCNCTL_EXIT_INTERRUPTED;
    if (rc)
        return rc;
    print_job(final, id, print_summary);
    rc = client_job_exit(final);
    json_decref(final);
    return rc;
}

/* ------------------------------------------------------------ submit */

static const char submit_usage[] =
    "usage: lcnctl submit GRAPH.json [--budget-s S] [--seed N] [--target-k K]\n"
    "                     [--stop-at-target] [--backend auto|gpu|cpu] [--name TEXT]\n"
    "                     [--threads N] [--replicas N] [--proposal-workers N]\n"
    "                     [--tuning KNOBS] [--wait [--render OUT.svg] [--poll]]\n"
    "                     [--retry N] [--server URL] [--json]\n"
    "\n"
    "Submits a solve job for the graph in GRAPH.json (the contest format,\n"
    "docs/FORMAT.md; the file is checked locally first, so errors name the\n"
    "field). The job id comes first, on a line of its own: on stdout without\n"
    "--wait (with --json the server's answer {id, state, links} instead), on\n"
    "stderr with --wait, so that stdout carries only the progress and the end\n"
    "(with --json: only the final status). Ctrl-C during --wait leaves the job\n"
    "running and prints the commands that watch or cancel it.\n";

static const char submit_exit_status[] =
    "exit status: 0 submitted (with --wait: the job succeeded); 1 with --wait:\n"
    "the job failed, was cancelled or interrupted; 2 usage error or invalid\n"
    "input (locally or HTTP 400/413/422); 4 server unreachable; 5 refused;\n"
    "130 --wait interrupted by Ctrl-C (SIGINT): the job goes on.\n";

struct submit_opts {
    double budget;
    int64_t seed, target, threads, replicas, proposal_workers;
    int seen_budget, seen_seed, seen_target, seen_backend, stop, wait, poll;
    int seen_threads, seen_replicas, seen_proposal_workers;
    enum lcn_backend backend; /* OPT_ENUM: the index in LCN_BACKEND_CHOICES */
    const char *name, *render, *tuning, *from, *gpus;
};

#define SOFF(f) offsetof(struct submit_opts, f)
/* A solver count: an integer in [0, the engine limit the API enforces]. */
#define SOLVER_ROW(name_, field_, max_, help_)                                                     \
    {                                                                                              \
        .name = (name_), .kind = OPT_INT, .off = SOFF(field_), .min = 0, .max = (max_),            \
        .seen = OPT_SEEN(struct submit_opts, seen_##field_), .arg = "N", .help = (help_)           \
    }
static const struct opt submit_table[] = {
    {OPT_RANGE_FIELDS("budget-s", OPT_DOUBLE, SOFF(budget), 0, INFINITY, NULL, "S",
                      "wall-clock budget in seconds (default: the daemon's default_budget_s)"),
     .flags = OPT_GT_MIN, .seen = OPT_SEEN(struct submit_opts, seen_budget)},
    {OPT_RANGE_FIELDS("seed", OPT_INT, SOFF(seed), 0, SEED_MAX, NULL, NULL,
                      "random seed (default 1)"),
     .seen = OPT_SEEN(struct submit_opts, seen_seed)},
    {OPT_RANGE_FIELDS("target-k", OPT_INT, SOFF(target), 0, INT32_MAX, NULL, "K",
                      "target K: time to target is measured against it"),
     .seen = OPT_SEEN(struct submit_opts, seen_target)},
    OPT_ROW("stop-at-target", OPT_FLAG, SOFF(stop), NULL,
            "end the job as soon as K <= target (needs --target-k)"),
    {OPT_ROW_FIELDS(
         "backend", OPT_ENUM, SOFF(backend), NULL,
         "engine to ask for; auto: GPU when usable, else CPU (default: the daemon's auto)"),
     .choices = LCN_BACKEND_CHOICES, .seen = OPT_SEEN(struct submit_opts, seen_backend)},
    OPT_ROW("name", OPT_STRING, SOFF(name), "TEXT",
            "a label shown by get and list (at most 128 bytes)"),
    SOLVER_ROW("threads", threads, LCN_MAX_THREADS,
               "CPU threads of the job (solver.threads; default: the daemon's cpu_threads)"),
    SOLVER_ROW("replicas", replicas, LCN_MAX_REPLICAS,
               "replicas the engine runs (solver.replicas; default: the engine's)"),
    SOLVER_ROW("proposal-workers", proposal_workers, LCN_MAX_PROPOSAL_WORKERS,
               "proposal workers per replica (solver.proposal_workers; default: the engine's)"),
    OPT_ROW("gpus", OPT_STRING, SOFF(gpus), "N|all",
            "GPUs for one run across devices (solver.gpus: islands of replicas exchanging the "
            "elite; all: every usable GPU of the daemon; default: one)"),
    OPT_ROW("tuning", OPT_STRING, SOFF(tuning), "KNOBS",
            "engine knobs key=value,... (solver.tuning, docs/ENGINE.md; knobs the engine does not have are refused)"),
    OPT_ROW("from", OPT_STRING, SOFF(from), "ID",
            "start from job ID's best validated layout (a warm start; the same graph)"),
    OPT_ROW("wait", OPT_FLAG, SOFF(wait), NULL,
            "follow the job until it ends, as `lcnctl watch` does"),
    OPT_ROW("render", OPT_STRING, SOFF(render), "OUT.svg",
            "with --wait: keep a picture of the best layout"),
    OPT_ROW("poll", OPT_FLAG, SOFF(poll), NULL, "with --wait: poll instead of the event stream"),
};
#undef SOLVER_ROW
#undef SOFF

/* Sets obj's key to value (a new reference) when the option was given;
 * else drops value. */
static void set_given(json_t *obj, int given, const char *key, json_t *value)
{
    if (given)
        json_object_set_new(obj, key, value);
    else
        json_decref(value);
}

/* Sets obj's key to the string s when the option was given (s not NULL). */
static void set_string(json_t *obj, const char *key, const char *s)
{
    set_given(obj, s != NULL, key, s ? json_string(s) : NULL);
}

/* The POST /jobs body for graph (borrowed) and the options given. */
static json_t *submit_request(const struct submit_opts *o, json_t *graph)
{
    json_t *req = json_pack("{s:O}", "graph", graph);
    set_given(req, o->seen_budget, "budget_s", json_real(o->budget));
    set_given(req, o->seen_seed, "seed", json_integer(o->seed));
    set_given(req, o->seen_target, "target_k", json_integer(o->target));
    set_given(req, o->stop, "stop_at_target", json_true());
    set_given(req, o->seen_backend, "backend", json_string(lcn_backend_name(o->backend)));
    set_string(req, "name", o->name);
    set_string(req, "init_from", o->from);
    json_t *solver = json_object();
    set_given(solver, o->seen_threads, "threads", json_integer(o->threads));
    set_given(solver, o->seen_replicas, "replicas", json_integer(o->replicas));
    set_given(solver, o->seen_proposal_workers, "proposal_workers",
              json_integer(o->proposal_workers));
    if (o->gpus && !strcmp(o->gpus, "all"))
        set_string(solver, "gpus", o->gpus);
    else
        set_given(solver, o->gpus != NULL, "gpus",
                  json_integer(o->gpus ? strtoll(o->gpus, NULL, 10) : 0));
    set_string(solver, "tuning", o->tuning);
    if (json_object_size(solver))
        json_object_set_new(req, "solver", solver);
    else
        json_decref(solver);
    return req;
}

/* Reads and checks the graph file; returns 0 with *req set (a new
 * reference), or the exit status after saying why. */
static int submit_read(const struct lcnctl_cmd *cmd, const char *path, const struct submit_opts *o,
                       json_t **req)
{
    struct graphio_doc d;
    int rc = lcnctl_read_graph(cmd, &d, path);
    if (rc)
        return rc;
    *req = submit_request(o, d.root);
    graphio_release(&d);
    return 0;
}

static volatile sig_atomic_t submit_interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    submit_interrupted = 1;
}

/* submit --wait: the id on stderr first, then the job followed to its end.
 * Ctrl-C stops following, not the job: the message says how to go on. */
static int submit_follow(const struct lcnctl_cmd *cmd, struct lcnhttp *h, const char *id,
                         const struct submit_opts *o)
{
    fprintf(stderr, "%s\n", id);
    fflush(stderr);
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint; /* no SA_RESTART: a wait in progress returns */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old);
    int rc = follow(cmd, h, id, lcnctl_json ? WATCH_QUIET : watch_default_display(), o->poll,
                    o->render, &submit_interrupted);
    sigaction(SIGINT, &old, NULL);
    if (rc == LCNCTL_EXIT_INTERRUPTED) {
        char server[600] = "";
        if (lcnctl_server)
            snprintf(server, sizeof server, " --server %s", lcnctl_server);
        lcnctl_errorf(cmd,
                      "interrupted: job %s is still running on the server\n"
                      "  watch it:  lcnctl%s watch %s\n"
                      "  cancel it: lcnctl%s cancel %s",
                      id, server, id, server, id);
    }
    return rc;
}

/* The text option that is not UTF-8, or NULL: json_string refuses such
 * text, so the option was left out of the request and the job submitted
 * without it (a --from so spelt gave a cold start). */
static const char *not_utf8(const struct submit_opts *o)
{
    const char *const opt[][2] = {
        {"--name", o->name}, {"--from", o->from}, {"--tuning", o->tuning}};
    for (size_t i = 0; i < LCN_ARRAY_LEN(opt); i++) {
        json_t *t = opt[i][1] ? json_string(opt[i][1]) : NULL;
        if (opt[i][1] && !t)
            return opt[i][0];
        json_decref(t);
    }
    return NULL;
}

static int cmd_submit(const struct lcnctl_cmd *cmd, const struct lcnctl_args *a)
{
    const struct submit_opts *o = a->opts;
    int rc;
    if (o->stop && !o->seen_target)
        return lcnctl_usage_error(cmd, "--stop-at-target needs --target-k");
    if ((o->render || o->poll) && !o->wait)
        return lcnctl_usage_error(cmd, "--render and --poll apply with --wait");
    if (render_target_bad(o->render))
        return lcnctl_usage_error(cmd, RENDER_STREAM_MSG, o->render);
    const char *bad = not_utf8(o);
    if (bad)
        return lcnctl_usage_error(cmd, "%s: the text is not UTF-8", bad);
    if (o->gpus && strcmp(o->gpus, "all")) {
        long g = strtol(o->gpus, NULL, 10);
        if (!lcn_number_syntax(o->gpus, 1) || g < 1 || g > ENGINE_MAX_DEVICES)
            return lcnctl_usage_error(cmd, "--gpus: expected all or a count of 1 to 16");
    }
    json_t *req;
    if ((rc = submit_read(cmd, a->arg, o, &req)))
        return rc;
    struct lcnhttp h;
    if ((rc = client_connect(cmd, &h))) {
        json_decref(req);
        return rc;
    }
    json_t *created;
    rc = client_call(cmd, &h, "POST", "/jobs", req, &created);
    json_decref(req);
    if (rc) {
        lcnhttp_release(&h);
        return rc;
    }
    const char *id = client_str(created, "id");
    if (!id) {
        lcnctl_errorf(cmd, "unexpected response: no job id");
        rc = LCNCTL_EXIT_REFUSED;
    } else if (!o->wait) {
        if (lcnctl_json)
            client_print_json(created);
        else
            printf("%s\n", id);
        rc = LCNCTL_EXIT_OK;
    } else {
        char *idc = xstrdup(id);
        rc = submit_follow(cmd, &h, idc, o);
        free(idc);
    }
    json_decref(created);
    lcnhttp_release(&h);
    return rc;
}

/* ------------------------------------------------------------ watch, wait */

static const char watch_usage[] =
    "usage: lcnctl watch ID [--render OUT.svg] [--poll] [--server URL] [--json]\n"
    "\n"
    "Follows a job until it ends, live (Server-Sent Events; polling when the\n"
    "stream is refused or keeps breaking). On a terminal: one line redrawn in\n"
    "place with the state, a bar of elapsed/budget, the best tuple and the time\n"
    "to target. Otherwise one line per event. Ends with a one-line summary.\n"
    "A finished job's events are replayed.\n"
    "\n"
    "With --json: each event as one JSON line, then the final status.\n";

static const char wait_usage[] =
    "usage: lcnctl wait ID [--poll] [--server URL] [--json]\n"
    "\n"
    "Waits quietly until a job ends, then prints the one-line summary (with\n"
    "--json: the final job status).\n";

static const char watch_exit_status[] =
    "exit status: 0 the job succeeded; 1 it failed, was cancelled or\n"
    "interrupted; 3 no such job; 4 server unreachable; 5 refused.\n";

struct follow_opts {
    const char *render;
    int poll;
};

/* poll first: wait takes that row only (it draws nothing) */
static const struct opt watch_table[] = {
    OPT_ROW("poll", OPT_FLAG, offsetof(struct follow_opts, poll), NULL,
            "poll GET /jobs/ID/progress instead of the event stream"),
    OPT_ROW("render", OPT_STRING, offsetof(struct follow_opts, render), "OUT.svg",
            "keep a picture of the best validated layout in OUT.svg (redrawn on each new one the "
            "daemon publishes, and at the end; see `lcnctl render`)"),
};

/* watch and wait: one job id, followed to its end; quiet (wait) draws
 * nothing, else the display depends on the options and the terminal. */
static int follow_cmd(const struct lcnctl_cmd *cmd, const struct lcnctl_args *a, int quiet)
{
    const struct follow_opts *o = a->opts;
    const char *id = a->arg;
    if (render_target_bad(o->render))
        return lcnctl_usage_error(cmd, RENDER_STREAM_MSG, o->render);
    struct lcnhttp h;
    int rc = job_connect(cmd, id, &h);
    if (rc)
        return rc;
    rc = follow(cmd, &h, id, quiet ? WATCH_QUIET : watch_default_display(), o->poll, o->render,
                NULL);
    lcnhttp_release(&h);
    return rc;
}

static int cmd_watch(const struct lcnctl_cmd *cmd, const struct lcnctl_args *a)
{
    return follow_cmd(cmd, a, 0);
}

static int cmd_wait(const struct lcnctl_cmd *cmd, const struct lcnctl_args *a)
{
    return follow_cmd(cmd, a, 1);
}

/* ------------------------------------------------------------ get */

static const char get_usage[] =
    "usage: lcnctl get ID [--server URL] [--json]\n"
    "\n"
    "Prints a job's status: state, timestamps, budget, seed, target and time to\n"
    "target, backend and evaluator, graph size, best tuple, error, telemetry.\n"
    "With --json: GET /jobs/ID as the server sends it.\n";

static const char get_exit_status[] =
    "exit status: 0 printed (whatever the job's state); 3 no such job;\n"
    "4 server unreachable; 5 refused.\n";

static void print_field(const char *key, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* One line of a status; what the server sent (a job's name: anyone's
 * text) is made printable first. */
static void print_field(const char *key, const char *fmt, ...)
{
    char text[1024], safe[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    printf("%-12s %s\n", key, client_printable(text, safe, sizeof safe));
}

static const char *or_dash(const char *s)
{
    return s ? s : "-";
}

static void print_status(const json_t *st, const char *id)
{
    (void)id; /* the status has it */
    print_field("id", "%s", or_dash(client_str(st, "id")));
    print_field("name", "%s", or_dash(client_str(st, "name")));
    const char *reason = client_str(st, "stop_reason");
    print_field("state", "%s%s%s%s", or_dash(client_str(st, "state")), reason ? " (" : "",
                reason ? reason : "", reason ? ")" : "");
    print_field("created", "%s", or_dash(client_str(st, "created_at")));
    print_field("started", "%s", or_dash(client_str(st, "started_at")));
    print_field("finished", "%s", or_dash(client_str(st, "finished_at")));
    print_field("budget", "%g s, elapsed %.3f s", client_num(st, "budget_s", 0),
                client_num(st, "elapsed_s", 0));
    print_field("seed", "%lld", (long long)json_integer_value(json_object_get(st, "seed")));
    json_t *tk = json_object_get(st, "target_k"), *ttt = json_object_get(st, "time_to_target_s");
    if (json_is_integer(tk)) {
        if (json_is_number(ttt))
            print_field("target", "K<=%lld, reached at %.3f s%s", (long long)json_integer_value(tk),
                        json_number_value(ttt),
                        json_is_true(json_object_get(st, "stop_at_target")) ? " (stop at target)"
                                                                            : "");
        else
            print_field("target", "K<=%lld, not reached%s", (long long)json_integer_value(tk),
                        json_is_true(json_object_get(st, "stop_at_target")) ? " (stop at target)"
                                                                            : "");
    } else {
        print_field("target", "none");
    }
    print_field("backend", "%s (asked %s), evaluator %s", or_dash(client_str(st, "backend")),
                or_dash(client_str(st, "backend_requested")), or_dash(client_str(st, "evaluator")));
    json_t *g = json_object_get(st, "graph");
    if (json_is_object(g))
        print_field("graph", "n=%lld m=%lld bounds %lldx%lld",
                    (long long)json_integer_value(json_object_get(g, "n")),
                    (long long)json_integer_value(json_object_get(g, "m")),
                    (long long)json_integer_value(json_object_get(g, "width")),
                    (long long)json_integer_value(json_object_get(g, "height")));
    char tuple[128];
    client_format_tuple(tuple, sizeof tuple, json_object_get(st, "best"));
    print_field("best", "%s", tuple);
    json_t *err = json_object_get(st, "error");
    if (json_is_object(err))
        print_field("error", "%s: %s", or_dash(client_str(err, "code")),
                    or_dash(client_str(err, "message")));
    json_t *tel = json_object_get(st, "telemetry");
    if (json_is_object(tel)) {
        printf("%-12s", "telemetry");
        const char *key;
        json_t *v;
        int col = 12;
        json_object_foreach(tel, key, v)
        {
            char item[96];
            if (json_is_integer(v))
                snprintf(item, sizeof item, " %s=%lld", key, (long long)json_integer_value(v));
            else if (json_is_number(v))
                snprintf(item, sizeof item, " %s=%.3f", key, json_number_value(v));
            else
                continue;
            if (col + (int)strlen(item) > 79) {
                printf("\n%-12s", "");
                col = 12;
            }
            fputs(item, stdout);
            col += (int)strlen(item);
        }
        putchar('\n');
    }
}

/* ------------------------------------------------------------ solution */

static const char solution_usage[] =
    "usage: lcnctl solution ID [-o FILE] [--server URL] [--json]\n"
    "\n"
    "Fetches the best validated layout of a job (the final one once the job\n"
    "ended) in the input file format, with a top-level \"lcn\" record {job,\n"
    "final, K, nK, Phi, C, elapsed_s, validated}. The file is what\n"
    "`lcnctl check --instance GRAPH.json` and `lcnctl render` read.\n";

struct solution_opts {
    const char *out;
};

static const struct opt solution_table[] = {
    {OPT_ROW_FIELDS("output", OPT_STRING, offsetof(struct solution_opts, out), "FILE",
                    "write it to FILE (atomically) instead of stdout and print a one-line note "
                    "(with --json: {job, file, final, K, nK, Phi, C})"),
     .short_name = 'o'},
};

static const char solution_exit_status[] =
    "exit status: 0 written; 2 FILE cannot be written; 3 no such job;\n"
    "4 server unreachable; 5 refused; 6 no solution yet (409 no_solution: no\n"
    "validated layout yet, e.g. a queued job).\n";

/* Writes the fetched document to path, ending it with a newline as on stdout. */
static int save_solution(const char *path, const char *buf, size_t len, char *err, size_t errlen)
{
    if (len == 0 || buf[len - 1] == '\n')
        return lcn_write_atomic(path, buf, len, err, errlen);
    char *line = xmalloc(len + 1);
    memcpy(line, buf, len);
    line[len] = '\n';
    int rc = lcn_write_atomic(path, line, len + 1, err, errlen);
    free(line);
    return rc;
}

static int cmd_solution(const struct lcnctl_cmd *cmd, const struct lcnctl_args *a)
{
    const struct solution_opts *so = a->opts;
    const char *id = a->arg, *out = so->out && strcmp(so->out, "-") ? so->out : NULL;
    int stream = out && client_out_is_stream(out);
    if (lcnctl_json && stream)
        return lcnctl_usage_error(cmd, "--json and -o %s both want stdout", out);
    struct lcnhttp h;
    int rc = job_connect(cmd, id, &h);
    if (rc)
        return rc;
    char *path = client_job_path(id, "/solution");
    struct lcnhttp_resp r;
    rc = lcnhttp_request(&h, "GET", path, NULL, 0, &r);
    free(path);
    if (rc != 0 || r.status != 200) {
        rc = client_report(cmd, rc, &r);
        goto done;
    }
    /* only a layout lcnctl itself can read is passed on */
    struct graphio_doc d;
    struct graphio_error ge;
    if (graphio_read_buf(&d, r.body, r.len, NULL, &ge) != 0) {
        char msg[600];
        graphio_error_format(&ge, msg, sizeof msg);
        rc = client_bad_response(cmd, &r, msg);
        goto done;
    }
    json_t *lcn = json_object_get(d.root, "lcn");
    struct lcn_obj o;
    int have = client_tuple(lcn, &o) == 0;
    int final = json_is_true(json_object_get(lcn, "final"));
    if (!out) {
        fwrite(r.body, 1, r.len, stdout);
        if (r.len && r.body[r.len - 1] != '\n')
            fputc('\n', stdout);
        rc = fflush(stdout) == 0 ? LCNCTL_EXIT_OK : LCNCTL_EXIT_USAGE;
    } else {
        char err[600];
        if (save_solution(out, r.body, r.len, err, sizeof err) != 0) {
            lcnctl_errorf(cmd, "%s", err);
            rc = LCNCTL_EXIT_USAGE;
        } else if (lcnctl_json) {
            json_t *j = json_pack("{s:s, s:o, s:b}", "job", id, "file", graphio_text_json(out),
                                  "final", final);
            if (have) {
                json_object_set_new(j, "K", json_integer(o.K));
                json_object_set_new(j, "nK", json_integer(o.nK));
                json_object_set_new(j, "Phi", json_integer(o.Phi));
                json_object_set_new(j, "C", json_integer(o.C));
            }
            client_print_json(j);
            json_decref(j);
        } else {
            char tuple[128];
            client_format_tuple(tuple, sizeof tuple, lcn);
            fprintf(stream ? stderr : stdout, "saved the %s layout of %s to %s: %s\n",
                    final ? "final" : "best so far (the job is still running)", id, out, tuple);
        }
    }
    graphio_release(&d);
done:
    lcnhttp_resp_release(&r);
    lcnhttp_release(&h);
    return rc;
}

/* ------------------------------------------------------------ cancel */

static const char cancel_usage[] =
    "usage: lcnctl cancel ID [--server URL] [--json]\n"
    "\n"
    "Cancels a queued or running job (DELETE /jobs/ID; idempotent: a finished\n"
    "job is left as it is). A running job stops at its next batch boundary and\n"
    "keeps its best validated layout; `lcnctl wait ID` waits for that.\n"
    "With --json: the job status the server answers with.\n";

static const char cancel_exit_status[] =
    "exit status: 0 cancelled, cancelling, or already finished; 3 no such\n"
    "job; 4 server unreachable; 5 refused.\n";

static void print_cancel(const json_t *st, const char *id)
{
    const char *state = or_dash(client_str(st, "state"));
    if (strcmp(state, "cancelled") == 0)
        printf("%s: cancelled\n", id);
    else if (client_state_terminal(state))
        printf("%s: already %s, nothing to cancel\n", id, state);
    else
        printf("%s: cancelling (%s)\n", id, state);
}

/* get (GET /jobs/ID) and cancel (DELETE /jobs/ID): one call, two printers. */
static int cmd_job(const struct lcnctl_cmd *cmd, const struct lcnctl_args *a)
{
    int cancel = strcmp(cmd->name, "cancel") == 0;
    return job_call(cmd, a->arg, cancel ? "DELETE" : "GET", cancel ? print_cancel : print_status);
}

/* ------------------------------------------------------------ list */

static const char list_usage[] =
    "usage: lcnctl list [--state S] [--limit N] [--before ID] [--server URL] [--json]\n"
    "\n"
    "Lists jobs, newest first: id, state, backend, elapsed/budget, best tuple,\n"
    "name. With --json: the server's page {jobs, next_before}.\n";

static const char list_exit_status[] =
    "exit status: 0 listed; 2 usage error; 4 server unreachable; 5 refused.\n";

struct list_opts {
    const char *state, *before;
    int64_t limit;
};

static const struct opt list_table[] = {
    OPT_ROW("state", OPT_STRING, offsetof(struct list_opts, state), "S",
            "only jobs in state S (queued, running, succeeded, failed, cancelled, interrupted)"),
    OPT_RANGE("limit", OPT_INT, offsetof(struct list_opts, limit), 1, 500, "50", NULL,
              "at most N jobs"),
    OPT_ROW("before", OPT_STRING, offsetof(struct list_opts, before), "ID",
            "the page after job ID (the last id of the previous page)"),
};

static int cmd_list(const struct lcnctl_cmd *cmd, const struct lcnctl_args *a)
{
    const struct list_opts *o = a->opts;
    const char *state = o->state, *before = o->before;
    int rc;
    if (state && !client_state_terminal(state) && strcmp(state, "queued") &&
        strcmp(state, "running"))
        return lcnctl_usage_error(cmd,
                                  "--state: expected queued, running, succeeded, failed, "
                                  "cancelled or interrupted, got '%s'",
                                  state);
    if (before && (rc = check_id(cmd, before)))
        return rc;
    char path[256];
    int n = snprintf(path, sizeof path, "/jobs?limit=%lld", (long long)o->limit);
    if (state)
        n += snprintf(path + n, sizeof path - (size_t)n, "&state=%s", state);
    if (before)
        snprintf(path + n, sizeof path - (size_t)n, "&before=%s", before);
    struct lcnhttp h;
    if ((rc = client_connect(cmd, &h)))
        return rc;
    json_t *page;
    rc = client_call(cmd, &h, "GET", path, NULL, &page);
    lcnhttp_release(&h);
    if (rc)
        return rc;
    json_t *jobs = json_object_get(page, "jobs");
    if (!json_is_array(jobs)) {
        lcnctl_errorf(cmd, "unexpected response: no \"jobs\" array");
        json_decref(page);
        return LCNCTL_EXIT_REFUSED;
    }
    if (lcnctl_json) {
        client_print_json(page);
    } else {
        printf("%-18s %-11s %-7s %17s  %-32s %s\n", "ID", "STATE", "BACKEND", "ELAPSED/BUDGET",
               "BEST", "NAME");
        size_t i;
        json_t *j;
        json_array_foreach(jobs, i, j)
        {
            char tuple[128], eb[48];
            client_format_tuple(tuple, sizeof tuple, json_object_get(j, "best"));
            snprintf(eb, sizeof eb, "%.1f/%g s", client_num(j, "elapsed_s", 0),
                     client_num(j, "budget_s", 0));
            char sid[64], sstate[64], sbackend[64], sname[600];
            printf("%-18s %-11s %-7s %17s  %-32s %s\n",
                   client_printable(or_dash(client_str(j, "id")), sid, sizeof sid),
                   client_printable(or_dash(client_str(j, "state")), sstate, sizeof sstate),
                   client_printable(or_dash(client_str(j, "backend")), sbackend, sizeof sbackend),
                   eb, tuple,
                   client_printable(client_str(j, "name") ? client_str(j, "name") : "", sname,
                                    sizeof sname));
        }
        const char *next = client_str(page, "next_before");
        if (next)
            printf("(more: lcnctl list --before %s)\n", next);
    }
    json_decref(page);
    return LCNCTL_EXIT_OK;
}

/* ------------------------------------------------------------ ready */

static const char ready_usage[] =
    "usage: lcnctl ready [--wait S] [--server URL] [--json]\n"
    "\n"
    "Asks the daemon whether it is ready (GET /readyz: store healthy, GPU usable\n"
    "when configured, not stopping) and prints its answer and version (with\n"
    "--json: {\"readyz\": ..., \"version\": ...}). For scripts and probes.\n";

static const char ready_exit_status[] =
    "exit status: 0 ready; 4 server unreachable; 5 not ready (503) or refused.\n";

struct ready_opts {
    double wait_s;
};

static const struct opt ready_table[] = {
    OPT_RANGE("wait", OPT_DOUBLE, offsetof(struct ready_opts, wait_s), 0, INFINITY, "0", "S",
              "keep asking (every 0.2 s) for up to S seconds until it is ready or answers; a "
              "daemon that is still starting is waited for"),
};

static int cmd_ready(const struct lcnctl_cmd *cmd, const struct lcnctl_args *a)
{
    const struct ready_opts *o = a->opts;
    int rc;
    struct lcnhttp h;
    if ((rc = client_connect(cmd, &h)))
        return rc;
    int64_t deadline = lcn_now_ns() + (int64_t)(o->wait_s * 1e9);
    struct lcnhttp_resp r;
    for (;;) {
        rc = lcnhttp_request(&h, "GET", "/readyz", NULL, 0, &r);
        if ((rc == 0 && r.status == 200) || lcn_now_ns() >= deadline)
            break;
        lcnhttp_resp_release(&r);
        struct timespec ts = {0, 200000000L};
        nanosleep(&ts, NULL);
    }
    json_t *ready = rc == 0 ? json_loadb(r.body, r.len, 0, NULL) : NULL;
    if (rc != 0 || (r.status != 200 && r.status != 503) || !json_is_object(ready)) {
        rc = rc != 0 || r.status != 200 ? client_report(cmd, rc, &r)
                                        : client_bad_response(cmd, &r, "not a readiness answer");
        json_decref(ready);
        lcnhttp_resp_release(&r);
        lcnhttp_release(&h);
        return rc;
    }
    int is_ready = r.status == 200 && json_is_true(json_object_get(ready, "ready"));
    lcnhttp_resp_release(&r);
    json_t *version = NULL;
    if (lcnhttp_request(&h, "GET", "/version", NULL, 0, &r) == 0 && r.status == 200)
        version = json_loadb(r.body, r.len, 0, NULL);
    lcnhttp_resp_release(&r);
    if (lcnctl_json) {
        json_t *j =
            json_pack("{s:O, s:o}", "readyz", ready, "version", version ? version : json_null());
        client_print_json(j);
        json_decref(j);
    } else {
        printf("%s: %s (store %s, gpu %s)", h.base, is_ready ? "ready" : "NOT ready",
               or_dash(client_str(ready, "store")), or_dash(client_str(ready, "gpu")));
        if (version)
            printf("; lcnd %s, commit %s", or_dash(client_str(version, "version")),
                   or_dash(client_str(version, "commit")));
        putchar('\n');
        json_decref(version);
    }
    json_decref(ready);
    lcnhttp_release(&h);
    return is_ready ? LCNCTL_EXIT_OK : LCNCTL_EXIT_REFUSED;
}

#define TABLE(t) t, LCN_ARRAY_LEN(t)
const struct lcnctl_cmd lcnctl_http_cmds[] = {
    {"submit", cmd_submit, "submit a solve job (--wait follows it to the end)", submit_usage,
     TABLE(submit_table), submit_exit_status, sizeof(struct submit_opts), "graph file"},
    {"watch", cmd_watch, "follow a job live: progress bar, best tuple, time to target", watch_usage,
     TABLE(watch_table), watch_exit_status, sizeof(struct follow_opts), "job id"},
    {"wait", cmd_wait, "wait until a job ends; exit 0 when it succeeded", wait_usage, watch_table,
     1, watch_exit_status, sizeof(struct follow_opts), "job id"},
    {"get", cmd_job, "print a job's status", get_usage, NULL, 0, get_exit_status, 0, "job id"},
    {"solution", cmd_solution, "fetch a job's best validated layout", solution_usage,
     TABLE(solution_table), solution_exit_status, sizeof(struct solution_opts), "job id"},
    {"cancel", cmd_job, "cancel a queued or running job", cancel_usage, NULL, 0,
     cancel_exit_status, 0, "job id"},
    {"list", cmd_list, "list jobs, newest first", list_usage, TABLE(list_table), list_exit_status,
     sizeof(struct list_opts), NULL},
    {"ready", cmd_ready, "is the daemon ready? (--wait S while it starts)", ready_usage,
     TABLE(ready_table), ready_exit_status, sizeof(struct ready_opts), NULL},
    {.name = NULL},
};
#undef TABLE
