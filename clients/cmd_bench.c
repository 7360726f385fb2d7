/*
 * lcnctl bench: the solver-outcome benchmark (ARCHITECTURE.md section 6,
 * layer 3) through a running lcnd.
 *
 * Every graph of a directory runs once per seed, seeds paired across graphs
 * and runs interleaved (graph1 seed1, graph2 seed1, ..., graph1 seed2, ...),
 * one at a time, each under the same wall-clock budget. Every run's final
 * status and solution are kept raw; every solution is judged by the same
 * code as `lcnctl check --instance` (check.h) and a run whose layout fails
 * it, or whose recounted tuple differs from the server's, is not summarised
 * but named. Runs that miss the target are censored (time to target > budget)
 * and counted, never dropped; failed runs count as misses too.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "build_id.h"
#include "clients/check.h"
#include "clients/client.h"
#include "engine.h"
#include "err.h"
#include "fileio.h"
#include "graphio.h"
#include "clients/lcnctl.h"
#include "clients/sha256.h"
#include "util.h"
#include "clients/watch.h"

#ifndef LCN_VERSION
#define LCN_VERSION "unknown"
#endif

/* Seconds a run may exceed its budget before the harness cancels it (the
 * daemon's own backstop is 1 s past the deadline; queueing behind other
 * clients' jobs also counts here). */
#define GRACE_S            120.0
#define QUEUE_FULL_RETRIES 60

enum run_outcome {
    RUN_OK,      /* succeeded, solution checked valid, tuples agree */
    RUN_REFUSED, /* a solution exists but fails the check or disagrees with the server */
    RUN_FAILED,  /* no checked solution: job failed/cancelled/interrupted, submit refused, ... */
};

static const char *const outcome_names[] = {"ok", "refused", "failed"};

struct graph_in {
    char *name; /* file name without .json */
    char *file; /* path */
    char *bytes;
    size_t len;
    char sha256[65];
    struct graphio_doc doc;
    long long target; /* -1: none */
};

struct run {
    int index; /* 1-based order of execution */
    struct graph_in *g;
    long long seed;
    char id[64];
    char state[32];
    enum run_outcome outcome;
    char why[512];      /* for refused and failed runs */
    struct lcn_obj obj; /* checked tuple (RUN_OK) */
    int success;        /* RUN_OK and K <= target */
    double ttt;         /* daemon's time to target (success), else -1 */
    double elapsed_s;
    char base[256]; /* raw file prefix, relative to the output dir */
};

/* ------------------------------------------------------------ small helpers */

static int natural_cmp(const char *a, const char *b)
{
    while (*a && *b) {
        if (*a >= '0' && *a <= '9' && *b >= '0' && *b <= '9') {
            char *ea, *eb;
            unsigned long long x = strtoull(a, &ea, 10), y = strtoull(b, &eb, 10);
            if (x != y)
                return x < y ? -1 : 1;
            a = ea;
            b = eb;
        } else {
            if (*a != *b)
                return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
            a++;
            b++;
        }
    }
    return *a ? 1 : *b ? -1 : 0;
}

static int cmp_graph(const void *x, const void *y)
{
    const struct graph_in *a = x, *b = y;
    return natural_cmp(a->name, b->name);
}

static void iso_utc(char *buf, size_t len)
{
    int64_t ms = lcn_wall_ms();
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

static int read_all(const char *path, char **buf, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return LCN_EIO;
    size_t cap = 0, n = 0;
    char *p = NULL;
    for (;;) {
        xgrow((void **)&p, 1, &cap, n + 65536 + 1);
        size_t got = fread(p + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0)
            break;
    }
    int err = ferror(f);
    fclose(f);
    if (err) {
        free(p);
        return LCN_EIO;
    }
    p[n] = '\0';
    *buf = p;
    *len = n;
    return 0;
}

static int write_json(const char *path, const json_t *j)
{
    char *s = json_dumps(j, JSON_INDENT(1) | JSON_ENCODE_ANY);
    size_t n = strlen(s);
    s = xrealloc(s, n + 2);
    s[n] = '\n';
    int rc = lcn_write_atomic(path, s, n + 1, NULL, 0);
    free(s);
    return rc;
}

static char *path_join(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *p = xmalloc(n);
    snprintf(p, n, "%s/%s", a, b);
    return p;
}

static int mkdirs(const char *path)
{
    char *p = xstrdup(path);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            free(p);
            return -1;
        }
        *s = '/';
    }
    int rc = mkdir(p, 0777) != 0 && errno != EEXIST ? -1 : 0;
    free(p);
    return rc;
}

static void safe_name(const char *in, char *out, size_t len)
{
    size_t i = 0;
    for (; in[i] && i + 1 < len; i++) {
        char c = in[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '-' || c == '_' || c == '.';
        out[i] = ok ? c : '_';
    }
    out[i] = '\0';
}

static json_t *tuple_json(const struct lcn_obj *o)
{
    return json_pack("{s:i, s:i, s:I, s:I}", "K", (json_int_t)o->K, "nK", (json_int_t)o->nK, "Phi",
                     (json_int_t)o->Phi, "C", (json_int_t)o->C);
}

static void fmt_tuple(char *buf, size_t len, const struct lcn_obj *o)
{
    snprintf(buf, len, "(%d, %d, %lld, %lld)", o->K, o->nK, (long long)o->Phi, (long long)o->C);
}

/* ------------------------------------------------------------ inputs */

static int load_graphs(const struct lcnctl_cmd *cmd, const char *dir, struct graph_in **out,
                       int *count)
{
    DIR *d = opendir(dir);
    if (!d) {
        lcnctl_errorf(cmd, "cannot open directory '%s': %s", dir, strerror(errno));
        return LCNCTL_EXIT_USAGE;
    }
    struct graph_in *gs = NULL;
    size_t cap = 0;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *nm = de->d_name;
        size_t len = strlen(nm);
        if (len <= 5 || strcmp(nm + len - 5, ".json") != 0 || strncmp(nm, "sol-", 4) == 0 ||
            nm[0] == '.')
            continue;
        char *file = path_join(dir, nm);
        struct stat stt;
        if (stat(file, &stt) != 0 || !S_ISREG(stt.st_mode)) {
            free(file);
            continue;
        }
        xgrow((void **)&gs, sizeof *gs, &cap, (size_t)n + 1);
        struct graph_in *g = &gs[n++];
        memset(g, 0, sizeof *g);
        g->file = file;
        g->name = xstrdup(nm);
        g->name[len - 5] = '\0';
        g->target = -1;
    }
    closedir(d);
    if (n == 0) {
        lcnctl_errorf(cmd, "no graph files (*.json other than sol-*) in '%s'", dir);
        free(gs);
        return LCNCTL_EXIT_USAGE;
    }
    qsort(gs, (size_t)n, sizeof *gs, cmp_graph);
    *out = gs;
    *count = n;
    for (int i = 0; i < n; i++) {
        struct graph_in *g = &gs[i];
        if (read_all(g->file, &g->bytes, &g->len) != 0) {
            lcnctl_errorf(cmd, "cannot read '%s': %s", g->file, strerror(errno));
            return LCNCTL_EXIT_USAGE;
        }
        sha256_hex(g->bytes, g->len, g->sha256);
        struct graphio_error e;
        if (graphio_read_buf(&g->doc, g->bytes, g->len, NULL, &e) != 0) {
            char msg[600];
            graphio_error_format(&e, msg, sizeof msg);
            lcnctl_errorf(cmd, "%s: %s", g->file, msg);
            return LCNCTL_EXIT_USAGE;
        }
    }
    return 0;
}

static void free_graphs(struct graph_in *gs, int n)
{
    for (int i = 0; i < n; i++) {
        free(gs[i].name);
        free(gs[i].file);
        free(gs[i].bytes);
        graphio_release(&gs[i].doc);
    }
    free(gs);
}

/* "name K" lines; '#' starts a comment. Targets for graphs not in the
 * directory are ignored. */
static int load_targets(const struct lcnctl_cmd *cmd, const char *path, struct graph_in *gs, int n,
                        json_t *record)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        lcnctl_errorf(cmd, "cannot open target file '%s': %s", path, strerror(errno));
        return LCNCTL_EXIT_USAGE;
    }
    char line[1024];
    int lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char name[512], extra[8];
        long long k;
        int got = sscanf(line, "%511s %lld %7s", name, &k, extra);
        if (got <= 0)
            continue;
        if (got != 2 || k < 0) {
            lcnctl_errorf(cmd, "%s:%d: expected \"NAME K\" with K >= 0", path, lineno);
            fclose(f);
            return LCNCTL_EXIT_USAGE;
        }
        json_object_set_new(record, name, json_integer(k));
        for (int i = 0; i < n; i++)
            if (strcmp(gs[i].name, name) == 0)
                gs[i].target = k;
    }
    fclose(f);
    return 0;
}

/* ------------------------------------------------------------ manifest */

static json_t *machine_json(void)
{
    json_t *m = json_object();
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    json_object_set_new(m, "hostname", json_string(host));
    struct utsname u;
    if (uname(&u) == 0)
        json_object_set_new(m, "uname",
                            json_pack("{s:s, s:s, s:s}", "sysname", u.sysname, "release", u.release,
                                      "machine", u.machine));
    json_object_set_new(m, "online_cpus", json_integer(sysconf(_SC_NPROCESSORS_ONLN)));
    char cpu[512];
    if (lcn_cpu_model(cpu, sizeof cpu) == 0)
        json_object_set_new(m, "cpu", json_string(cpu));
    char line[512];
    FILE *f = fopen("/proc/meminfo", "r");
    while (f && fgets(line, sizeof line, f)) {
        long long kb;
        if (sscanf(line, "MemTotal: %lld kB", &kb) == 1) {
            json_object_set_new(m, "mem_total_kb", json_integer(kb));
            break;
        }
    }
    if (f)
        fclose(f);
    json_object_set_new(m, "note",
                        json_string("the client's machine; the daemon's build and "
                                    "backends are in \"daemon\""));
    return m;
}

static json_t *self_json(void)
{
    json_t *j = json_pack("{s:s, s:s}", "version", LCN_VERSION, "commit", lcn_build_commit);
    char *bytes;
    size_t len;
    if (read_all("/proc/self/exe", &bytes, &len) == 0) {
        char hex[65];
        sha256_hex(bytes, len, hex);
        json_object_set_new(j, "binary_sha256", json_string(hex));
        free(bytes);
    }
    return j;
}

static json_t *run_json(const struct run *r)
{
    json_t *j = json_pack("{s:i, s:o, s:I, s:s, s:s, s:s, s:o}", "run", (json_int_t)r->index,
                          "graph", graphio_text_json(r->g->name), "seed", (json_int_t)r->seed, "job",
                          r->id, "state", r->state, "outcome", outcome_names[r->outcome], "files",
                          graphio_text_json(r->base));
    json_object_set_new(j, "tuple", r->outcome == RUN_OK ? tuple_json(&r->obj) : json_null());
    json_object_set_new(j, "target_k",
                        r->g->target >= 0 ? json_integer(r->g->target) : json_null());
    json_object_set_new(j, "success", r->g->target >= 0 ? json_boolean(r->success) : json_null());
    json_object_set_new(j, "time_to_target_s", r->ttt >= 0 ? json_real(r->ttt) : json_null());
    json_object_set_new(j, "elapsed_s", json_real(r->elapsed_s));
    json_object_set_new(j, "why", r->why[0] ? graphio_text_json(r->why) : json_null());
    return j;
}

/* ------------------------------------------------------------ one run */

/* One benchmark: set up by bench_open, run by bench_runs, summarised by
 * bench_finish, freed by bench_release whatever happened before. */
struct bench {
    const struct lcnctl_cmd *cmd;
    struct lcnhttp h;
    const char *out; /* --out, or outbuf */
    char outbuf[128];
    char started[64];
    double budget;
    int64_t seeds, first;
    const char *backend; /* lcn_backend_name of --backend; NULL: the daemon's default */
    const char *target_file;
    int stop_at_target, poll, total;
    int fatal; /* an exit status that ends the benchmark (server unreachable) */
    struct graph_in *gs;
    int ng;
    json_t *targets, *version, *ready; /* targets and ready: owned until the manifest takes them */
    json_t *manifest, *runs_json;      /* runs_json: the manifest's "runs" (borrowed) */
    char *manifest_path;
    struct run *runs;
    int nr; /* runs done */
};

static void note(struct run *r, enum run_outcome o, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void note(struct run *r, enum run_outcome o, const char *fmt, ...)
{
    r->outcome = o;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->why, sizeof r->why, fmt, ap);
    va_end(ap);
}

static void save_raw(struct bench *b, struct run *r, const char *suffix, const char *buf,
                     size_t len)
{
    char name[320];
    snprintf(name, sizeof name, "%s.%s", r->base, suffix);
    char *p = path_join(b->out, name);
    char err[600];
    if (lcn_write_atomic(p, buf, len, err, sizeof err) != 0)
        lcnctl_errorf(b->cmd, "%s", err);
    free(p);
}

static int submit(struct bench *b, struct run *r)
{
    json_t *req = json_pack("{s:O, s:f, s:I}", "graph", r->g->doc.root, "budget_s", b->budget,
                            "seed", (json_int_t)r->seed);
    if (b->backend)
        json_object_set_new(req, "backend", json_string(b->backend));
    if (r->g->target >= 0) {
        json_object_set_new(req, "target_k", json_integer(r->g->target));
        if (b->stop_at_target)
            json_object_set_new(req, "stop_at_target", json_true());
    }
    char name[160];
    snprintf(name, sizeof name, "bench %.100s seed %lld", r->g->name, r->seed);
    json_object_set_new(req, "name", graphio_text_json(name));
    char *text = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    int rc = 0;
    /* a full queue is waited out (lcnhttp_request retries it) */
    int retries = b->h.retries;
    b->h.retries = retries > QUEUE_FULL_RETRIES ? retries : QUEUE_FULL_RETRIES;
    struct lcnhttp_resp resp;
    int hr = lcnhttp_request(&b->h, "POST", "/jobs", text, strlen(text), &resp);
    b->h.retries = retries;
    if (hr != 0 || resp.status != 201) {
        int e = client_report(b->cmd, hr, &resp);
        if (e == LCNCTL_EXIT_UNREACHABLE)
            b->fatal = e;
        note(r, RUN_FAILED, "submit refused (exit %d%s)", e,
             hr == 0 ? ", see stderr" : ": server unreachable");
        rc = -1;
    } else {
        json_t *j = json_loadb(resp.body, resp.len, 0, NULL);
        const char *id = client_str(j, "id");
        if (id)
            snprintf(r->id, sizeof r->id, "%s", id);
        else {
            note(r, RUN_FAILED, "submit answer without a job id");
            rc = -1;
        }
        json_decref(j);
    }
    lcnhttp_resp_release(&resp);
    free(text);
    return rc;
}

/* Refuses r when a tuple it claims (NULL: missing) is not the recount.
 * Returns 1 when it did. */
static int refuse_tuple(struct run *r, const char *what, const struct lcn_obj *claimed,
                        const struct lcn_obj *recount)
{
    if (claimed && obj_cmp(claimed, recount) == 0)
        return 0;
    char a[96] = "(missing)", c[96];
    if (claimed)
        fmt_tuple(a, sizeof a, claimed);
    fmt_tuple(c, sizeof c, recount);
    note(r, RUN_REFUSED, "%s %s differs from the recount %s", what, a, c);
    return 1;
}

static void judge(struct bench *b, struct run *r, const char *sol, size_t len, const json_t *status)
{
    struct graphio_doc d;
    struct graphio_error e;
    if (graphio_read_buf(&d, sol, len, NULL, &e) != 0) {
        char msg[600];
        graphio_error_format(&e, msg, sizeof msg);
        note(r, RUN_REFUSED, "solution does not parse: %.400s", msg);
        return;
    }
    char name[320];
    snprintf(name, sizeof name, "%s.solution.json", r->base);
    struct check_result res;
    json_t *rep = check_layout(&d, name, &r->g->doc, r->g->file, 20, 0, &res);
    json_object_set_new(rep, "checked_by", json_string("lcnctl bench (the code of lcnctl check)"));
    char *p;
    snprintf(name, sizeof name, "%s.check.json", r->base);
    p = path_join(b->out, name);
    write_json(p, rep);
    free(p);
    json_decref(rep);

    struct lcn_obj served, reported;
    int have_served = client_tuple(json_object_get(d.root, "lcn"), &served) == 0;
    int have_reported = client_tuple(json_object_get(status, "best"), &reported) == 0;
    graphio_release(&d);
    if (!res.valid) {
        note(r, RUN_REFUSED,
             "layout fails lcnctl check --instance: %lld violation(s) of V1-V4, %lld other "
             "problem(s) (see %s.check.json)",
             (long long)res.violations, (long long)res.problems, r->base);
        return;
    }
    if (refuse_tuple(r, "solution's lcn tuple", have_served ? &served : NULL, &res.obj) ||
        refuse_tuple(r, "job status tuple", have_reported ? &reported : NULL, &res.obj))
        return;
    if (strcmp(r->state, "succeeded") != 0) {
        note(r, RUN_FAILED, "job ended %s (its checked layout is kept, not summarised)", r->state);
        return;
    }
    r->outcome = RUN_OK;
    r->obj = res.obj;
    if (r->g->target >= 0 && res.obj.K <= r->g->target) {
        r->success = 1;
        json_t *t = json_object_get(status, "time_to_target_s");
        r->ttt = json_is_number(t) ? json_number_value(t) : -1;
        if (r->ttt < 0)
            snprintf(r->why, sizeof r->why,
                     "K <= target but the daemon reported no time to target");
    }
}

static void one_run(struct bench *b, struct run *r)
{
    r->outcome = RUN_FAILED;
    r->ttt = -1;
    snprintf(r->state, sizeof r->state, "not submitted");
    if (submit(b, r) != 0)
        return;
    char label[200];
    snprintf(label, sizeof label, "[%d/%d] %s seed %lld", r->index, b->total, r->g->name, r->seed);
    struct watch_opts wo = {lcnctl_json ? WATCH_QUIET
                                        : (isatty(STDOUT_FILENO) ? WATCH_BAR : WATCH_QUIET),
                            b->poll,
                            NULL,
                            b->budget + GRACE_S,
                            label,
                            NULL};
    json_t *st = NULL;
    int rc = watch_job(b->cmd, &b->h, r->id, &wo, &st);
    if (rc == WATCH_TIMED_OUT) {
        char *path = client_job_path(r->id, "");
        json_t *c = NULL;
        if (client_call(b->cmd, &b->h, "DELETE", path, NULL, &c) == 0)
            json_decref(c);
        free(path);
        json_decref(st);
        st = NULL;
        struct watch_opts w2 = {WATCH_QUIET, b->poll, NULL, 30, label, NULL};
        rc = watch_job(b->cmd, &b->h, r->id, &w2, &st);
        note(r, RUN_FAILED, "not finished %.0f s past its budget: cancelled by the harness",
             GRACE_S);
    }
    if (rc != 0 && rc != WATCH_TIMED_OUT) {
        if (rc == LCNCTL_EXIT_UNREACHABLE)
            b->fatal = rc;
        if (!r->why[0])
            note(r, RUN_FAILED, "lost the job while following it (exit %d)", rc);
        json_decref(st);
        return;
    }
    if (!st)
        return;
    {
        /* the raw status as the server sends it (watch_job's copy was re-parsed) */
        char *spath = client_job_path(r->id, "");
        struct lcnhttp_resp sr;
        if (lcnhttp_request(&b->h, "GET", spath, NULL, 0, &sr) == 0 && sr.status == 200) {
            json_t *j = json_loadb(sr.body, sr.len, 0, NULL);
            if (json_is_object(j)) {
                json_decref(st);
                st = j;
            } else {
                json_decref(j);
            }
            save_raw(b, r, "status.json", sr.body, sr.len);
        } else {
            char *text = json_dumps(st, JSON_INDENT(1));
            save_raw(b, r, "status.json", text, strlen(text));
            free(text);
        }
        lcnhttp_resp_release(&sr);
        free(spath);
    }
    const char *state = client_str(st, "state");
    snprintf(r->state, sizeof r->state, "%s", state ? state : "?");
    r->elapsed_s = client_num(st, "elapsed_s", 0);

    char *path = client_job_path(r->id, "/solution");
    struct lcnhttp_resp resp;
    int hr = lcnhttp_request(&b->h, "GET", path, NULL, 0, &resp);
    free(path);
    if (hr == 0 && resp.status == 200) {
        save_raw(b, r, "solution.json", resp.body, resp.len);
        enum run_outcome before = r->outcome;
        char why[sizeof r->why];
        snprintf(why, sizeof why, "%s", r->why);
        judge(b, r, resp.body, resp.len, st);
        if (why[0] && before == RUN_FAILED && r->outcome != RUN_REFUSED) {
            r->outcome = RUN_FAILED; /* the harness cancelled it: keep that verdict */
            snprintf(r->why, sizeof r->why, "%s", why);
        }
    } else if (!r->why[0]) {
        const json_t *err = json_object_get(st, "error");
        note(r, RUN_FAILED, "job %s without a validated layout%s%s", r->state,
             json_is_object(err) ? ": " : "",
             json_is_object(err) ? (client_str(err, "message") ? client_str(err, "message") : "")
                                 : "");
        if (hr != 0)
            b->fatal = LCNCTL_EXIT_UNREACHABLE;
    }
    lcnhttp_resp_release(&resp);
    json_decref(st);
}

/* ------------------------------------------------------------ summary */

static int cmp_obj(const void *x, const void *y)
{
    return obj_cmp(x, y);
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

static json_t *summarise(struct graph_in *gs, int ng, struct run *runs, int nr, double budget,
                         FILE *txt)
{
    json_t *graphs = json_array();
    fprintf(txt, "%-14s %4s %5s  %-28s %-28s %9s %10s %8s %6s %7s\n", "graph", "runs", "valid",
            "median (K, nK, Phi, C)", "best (K, nK, Phi, C)", "success", "median ttt", "censored",
            "failed", "refused");
    struct lcn_obj *objs = xcalloc((size_t)nr + 1, sizeof *objs);
    double *ttts = xcalloc((size_t)nr + 1, sizeof *ttts);
    for (int gi = 0; gi < ng; gi++) {
        struct graph_in *g = &gs[gi];
        int n = 0, ok = 0, succ = 0, failed = 0, refused = 0, nt = 0;
        for (int i = 0; i < nr; i++) {
            struct run *r = &runs[i];
            if (r->g != g)
                continue;
            n++;
            if (r->outcome == RUN_OK)
                objs[ok++] = r->obj;
            else if (r->outcome == RUN_REFUSED)
                refused++;
            else
                failed++;
            if (r->success) {
                succ++;
                if (r->ttt >= 0)
                    ttts[nt++] = r->ttt;
            }
        }
        qsort(objs, (size_t)ok, sizeof *objs, cmp_obj);
        qsort(ttts, (size_t)nt, sizeof *ttts, cmp_double);
        json_t *j = json_pack("{s:o, s:i, s:i, s:i, s:i}", "graph", graphio_text_json(g->name),
                              "runs", n, "valid", ok, "failed", failed, "refused", refused);
        char med[96] = "-", best[96] = "-", success[32] = "n/a", mttt[32] = "-",
             censored[32] = "n/a";
        if (ok) {
            /* the lower median: the tuple of the run ranked (ok+1)/2 */
            fmt_tuple(med, sizeof med, &objs[(ok - 1) / 2]);
            fmt_tuple(best, sizeof best, &objs[0]);
            json_object_set_new(j, "median_tuple", tuple_json(&objs[(ok - 1) / 2]));
            json_object_set_new(j, "best_tuple", tuple_json(&objs[0]));
        } else {
            json_object_set_new(j, "median_tuple", json_null());
            json_object_set_new(j, "best_tuple", json_null());
        }
        if (g->target >= 0) {
            snprintf(success, sizeof success, "%d/%d", succ, n);
            snprintf(censored, sizeof censored, "%d", n - succ);
            json_object_set_new(j, "target_k", json_integer(g->target));
            json_object_set_new(j, "successes", json_integer(succ));
            json_object_set_new(j, "censored", json_integer(n - succ));
            json_object_set_new(j, "censored_at_s", json_real(budget));
            if (nt) {
                double m = nt % 2 ? ttts[nt / 2] : 0.5 * (ttts[nt / 2 - 1] + ttts[nt / 2]);
                snprintf(mttt, sizeof mttt, "%.3f s", m);
                json_object_set_new(j, "median_time_to_target_s", json_real(m));
            } else {
                json_object_set_new(j, "median_time_to_target_s", json_null());
            }
        } else {
            json_object_set_new(j, "target_k", json_null());
            json_object_set_new(j, "successes", json_null());
            json_object_set_new(j, "censored", json_null());
            json_object_set_new(j, "median_time_to_target_s", json_null());
        }
        fprintf(txt, "%-14s %4d %5d  %-28s %-28s %9s %10s %8s %6d %7d\n", g->name, n, ok, med, best,
                success, mttt, censored, failed, refused);
        json_array_append_new(graphs, j);
    }
    free(objs);
    free(ttts);
    fprintf(txt,
            "\nmedian and best over the runs whose layout passed lcnctl check --instance "
            "(lower median); success: final K <= target within the %g s budget;\n"
            "median ttt over successes (daemon's time to target); censored: runs that did "
            "not reach the target (time > %g s), failed and refused runs included.\n",
            budget, budget);
    int shown = 0;
    for (int i = 0; i < nr; i++) {
        struct run *r = &runs[i];
        if (r->outcome == RUN_OK && !r->why[0])
            continue;
        if (!shown++)
            fprintf(txt, "\nruns not summarised or with a remark:\n");
        fprintf(txt, "  %s seed %lld (%s, job %s): %s: %s\n", r->g->name, r->seed, r->base,
                r->id[0] ? r->id : "-",
                r->outcome == RUN_REFUSED  ? "REFUSED"
                : r->outcome == RUN_FAILED ? "FAILED"
                                           : "note",
                r->why);
    }
    return graphs;
}

/* ------------------------------------------------------------ the command */

static const char bench_usage[] =
    "usage: lcnctl bench DIR [--budget-s S] [--seeds N] [--first-seed N]\n"
    "                    [--backend auto|gpu|cpu] [--target FILE] [--stop-at-target]\n"
    "                    [-o, --out OUTDIR] [--poll] [--server URL] [--json]\n"
    "\n"
    "Runs every graph in DIR (*.json, skipping sol-* files) through a running\n"
    "lcnd: seeds first-seed .. first-seed+N-1, the same seeds for every graph\n"
    "(paired), in interleaved order (graph1 seed1, graph2 seed1, ..., graph1\n"
    "seed2, ...), one run at a time, each under the same budget.\n"
    "\n"
    "Writes into OUTDIR: manifest.json (lcnctl and daemon version and build,\n"
    "the daemon's /version and /readyz, command line, inputs with sha256,\n"
    "seeds, budget, targets, machine, start and end dates, every run),\n"
    "runs/GRAPH.sSEED.{status,solution,check}.json (raw), summary.json and\n"
    "summary.txt. Prints the summary table: per graph the median and best final\n"
    "tuple, success rate within the budget (K <= target), median time to target\n"
    "among successes, censored runs (missed the target; never dropped), failed\n"
    "and refused runs. A run whose layout fails `lcnctl check --instance` (or\n"
    "whose recounted tuple differs from the server's) is refused: named, not\n"
    "summarised. With --json: prints summary.json instead of the table.\n";

static const char bench_exit_status[] =
    "exit status: 0 every run succeeded and passed the check; 1 some run failed\n"
    "or was refused; 2 usage error or unreadable input; 4 server unreachable;\n"
    "5 refused.\n";

struct bench_opts {
    double budget;
    int64_t seeds, first;
    int stop, poll;
    enum lcn_backend backend; /* OPT_ENUM: the index in LCN_BACKEND_CHOICES */
    int backend_given;        /* 0: the request leaves the backend to the daemon */
    const char *target_file, *out;
};

#define BOFF(f) offsetof(struct bench_opts, f)
static const struct opt bench_table[] = {
    {OPT_RANGE_FIELDS("budget-s", OPT_DOUBLE, BOFF(budget), 0, INFINITY, "10", "S",
                      "budget per run in seconds"),
     .flags = OPT_GT_MIN},
    OPT_RANGE("seeds", OPT_INT, BOFF(seeds), 1, 1000, "3", NULL, "seeds per graph"),
    OPT_RANGE("first-seed", OPT_INT, BOFF(first), 0, 9007199254740000LL, "1", NULL, "first seed"),
    {OPT_ROW_FIELDS("backend", OPT_ENUM, BOFF(backend), NULL,
                    "engine to ask for (default: the daemon's auto)"),
     .choices = LCN_BACKEND_CHOICES, .seen = OPT_SEEN(struct bench_opts, backend_given)},
    OPT_ROW("target", OPT_STRING, BOFF(target_file), "FILE",
            "\"NAME K\" lines (bench/targets.txt): K is sent as target_k and success means final K "
            "<= K"),
    OPT_ROW("stop-at-target", OPT_FLAG, BOFF(stop), NULL,
            "end runs at the target (default: use the full budget)"),
    {OPT_ROW_FIELDS("out", OPT_STRING, BOFF(out), "OUTDIR",
                    "output directory (default bench-results/DATE); must be new or empty"),
     .short_name = 'o'},
    OPT_ROW("poll", OPT_FLAG, BOFF(poll), NULL,
            "follow runs by polling instead of the event stream"),
};
#undef BOFF

static int dir_nonempty(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return 0;
    struct dirent *de;
    int n = 0;
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
            n++;
    closedir(d);
    return n > 0;
}

static void bench_init(struct bench *b, const struct lcnctl_cmd *cmd, const struct bench_opts *o)
{
    memset(b, 0, sizeof *b);
    b->cmd = cmd;
    b->budget = o->budget;
    b->seeds = o->seeds;
    b->first = o->first;
    b->backend = o->backend_given ? lcn_backend_name(o->backend) : NULL;
    b->target_file = o->target_file;
    b->stop_at_target = o->stop;
    b->poll = o->poll;
    iso_utc(b->started, sizeof b->started);
    b->out = o->out;
    if (!b->out) {
        char stamp[32];
        time_t t = time(NULL);
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
        snprintf(b->outbuf, sizeof b->outbuf, "bench-results/%s", stamp);
        b->out = b->outbuf;
    }
}

/* The inputs, the output directory and the daemon's identity. Returns 0 or
 * the exit status (after a message). */
static int bench_open(struct bench *b, const char *dir)
{
    int rc;
    if ((rc = load_graphs(b->cmd, dir, &b->gs, &b->ng)))
        return rc;
    b->targets = json_object();
    if (b->target_file && (rc = load_targets(b->cmd, b->target_file, b->gs, b->ng, b->targets)))
        return rc;
    if (dir_nonempty(b->out))
        return lcnctl_usage_error(b->cmd, "output directory '%s' is not empty", b->out);
    char *runs_dir = path_join(b->out, "runs");
    if (mkdirs(runs_dir) != 0) {
        lcnctl_errorf(b->cmd, "cannot create '%s': %s", runs_dir, strerror(errno));
        free(runs_dir);
        return LCNCTL_EXIT_USAGE;
    }
    free(runs_dir);
    b->total = b->ng * (int)b->seeds;
    if ((rc = client_connect(b->cmd, &b->h)))
        return rc;
    if ((rc = client_call(b->cmd, &b->h, "GET", "/version", NULL, &b->version)))
        return rc;
    /* /readyz answers 503 with the same body while not ready: keep either */
    struct lcnhttp_resp r;
    if (lcnhttp_request(&b->h, "GET", "/readyz", NULL, 0, &r) == 0)
        b->ready = json_loadb(r.body, r.len, 0, NULL);
    lcnhttp_resp_release(&r);
    return 0;
}

static json_t *inputs_json(const struct graph_in *gs, int ng)
{
    json_t *inputs = json_array();
    for (int i = 0; i < ng; i++) {
        const struct lcn_graph *g = &gs[i].doc.g;
        json_array_append_new(
            inputs, json_pack("{s:o, s:o, s:s, s:I, s:i, s:i, s:i, s:i, s:o}", "name",
                              graphio_text_json(gs[i].name), "file", graphio_text_json(gs[i].file),
                              "sha256", gs[i].sha256, "bytes", (json_int_t)gs[i].len, "n",
                              (json_int_t)g->n, "m", (json_int_t)g->m, "width",
                              (json_int_t)g->width, "height", (json_int_t)g->height, "target_k",
                              gs[i].target >= 0 ? json_integer(gs[i].target) : json_null()));
    }
    return inputs;
}

/* manifest.json before the first run ("complete": false, no runs yet); it
 * takes b->targets and b->ready. */
static void bench_manifest(struct bench *b, int argc, char **argv)
{
    json_t *m = json_object();
    json_object_set_new(m, "tool", json_string("lcnctl bench"));
    json_object_set_new(m, "lcnctl", self_json());
    json_object_set_new(m, "server", json_string(b->h.base));
    json_object_set_new(m, "daemon",
                        json_pack("{s:O, s:o}", "version", b->version, "readyz",
                                  b->ready ? b->ready : json_null()));
    b->ready = NULL;
    json_t *cl = json_array();
    json_array_append_new(cl, json_string("lcnctl"));
    for (int i = 0; i < argc; i++)
        json_array_append_new(cl, graphio_text_json(argv[i]));
    json_object_set_new(m, "command_line", cl);
    char cwd[4096];
    json_object_set_new(m, "cwd", getcwd(cwd, sizeof cwd) ? graphio_text_json(cwd) : json_null());
    json_object_set_new(m, "started_at", json_string(b->started));
    json_object_set_new(m, "machine", machine_json());
    json_object_set_new(m, "budget_s", json_real(b->budget));
    json_t *seedl = json_array();
    for (int64_t s = 0; s < b->seeds; s++)
        json_array_append_new(seedl, json_integer(b->first + s));
    json_object_set_new(m, "seeds", seedl);
    json_object_set_new(m, "order", json_string("interleaved: for each seed, every graph"));
    json_object_set_new(m, "backend", json_string(b->backend ? b->backend : "(daemon default)"));
    json_object_set_new(m, "stop_at_target", json_boolean(b->stop_at_target));
    json_object_set_new(m, "target_file",
                        b->target_file ? graphio_text_json(b->target_file) : json_null());
    json_object_set_new(m, "targets", b->targets);
    b->targets = NULL;
    json_object_set_new(m, "inputs", inputs_json(b->gs, b->ng));
    b->runs_json = json_array();
    json_object_set_new(m, "runs", b->runs_json);
    json_object_set_new(m, "complete", json_false());
    b->manifest = m;
    b->manifest_path = path_join(b->out, "manifest.json");
    write_json(b->manifest_path, m);
}

static void print_run(const struct bench *b, const struct run *r)
{
    char t[96] = "";
    if (r->outcome == RUN_OK)
        fmt_tuple(t, sizeof t, &r->obj);
    printf("[%d/%d] %s seed %lld: %s %s%s%s%s\n", r->index, b->total, r->g->name, r->seed, r->state,
           outcome_names[r->outcome], t[0] ? " " : "", t, r->why[0] ? " - " : "");
    if (r->why[0])
        printf("        %s\n", r->why);
    fflush(stdout);
}

/* Every run, interleaved, until one ends the benchmark (b->fatal); the
 * manifest is rewritten after each, so a crash keeps what ran. */
static void bench_runs(struct bench *b)
{
    if (!lcnctl_json)
        printf("bench: %d graphs x %lld seeds, %g s each, into %s\n", b->ng, (long long)b->seeds,
               b->budget, b->out);
    b->runs = xcalloc((size_t)b->total, sizeof *b->runs);
    for (int64_t s = 0; s < b->seeds && !b->fatal; s++) {
        for (int gi = 0; gi < b->ng && !b->fatal; gi++) {
            struct run *r = &b->runs[b->nr];
            r->index = b->nr + 1;
            r->g = &b->gs[gi];
            r->seed = b->first + s;
            char sn[200];
            safe_name(r->g->name, sn, sizeof sn);
            snprintf(r->base, sizeof r->base, "runs/%s.s%lld", sn, r->seed);
            one_run(b, r);
            b->nr++;
            json_array_append_new(b->runs_json, run_json(r));
            write_json(b->manifest_path, b->manifest);
            if (!lcnctl_json)
                print_run(b, r);
        }
    }
}

/* summary.json, summary.txt and the final manifest; prints the summary.
 * Returns the exit status. */
static int bench_finish(struct bench *b)
{
    char finished[64];
    iso_utc(finished, sizeof finished);
    json_object_set_new(b->manifest, "finished_at", json_string(finished));
    json_object_set_new(b->manifest, "complete", json_boolean(!b->fatal));

    char *txt_buf = NULL;
    size_t txt_len = 0;
    FILE *txt = open_memstream(&txt_buf, &txt_len);
    json_t *graphs = summarise(b->gs, b->ng, b->runs, b->nr, b->budget, txt);
    fclose(txt);
    json_t *summary = json_pack("{s:s, s:f, s:O, s:o}", "manifest", "manifest.json", "budget_s",
                                b->budget, "runs", b->runs_json, "graphs", graphs);
    char *p = path_join(b->out, "summary.json");
    write_json(p, summary);
    free(p);
    p = path_join(b->out, "summary.txt");
    lcn_write_atomic(p, txt_buf, txt_len, NULL, 0);
    free(p);
    write_json(b->manifest_path, b->manifest);
    if (lcnctl_json) {
        client_print_json(summary);
    } else {
        printf("\n%s", txt_buf);
        printf("\nmanifest, raw runs and summary in %s/\n", b->out);
    }
    free(txt_buf);
    json_decref(summary);
    int all_ok = b->nr == b->total;
    for (int i = 0; i < b->nr; i++)
        all_ok = all_ok && b->runs[i].outcome == RUN_OK;
    return b->fatal ? b->fatal : all_ok ? LCNCTL_EXIT_OK : LCNCTL_EXIT_NO;
}

static void bench_release(struct bench *b)
{
    json_decref(b->manifest);
    json_decref(b->targets);
    json_decref(b->ready);
    json_decref(b->version);
    LCN_FREE_ALL(b->manifest_path, b->runs);
    lcnhttp_release(&b->h);
    free_graphs(b->gs, b->ng);
}

static int cmd_bench(const struct lcnctl_cmd *cmd, const struct lcnctl_args *a)
{
    const struct bench_opts *o = a->opts;
    if (o->stop && !o->target_file)
        return lcnctl_usage_error(cmd, "--stop-at-target needs --target");

    struct bench b;
    bench_init(&b, cmd, o);
    int rc = bench_open(&b, a->arg);
    if (rc == 0) {
        bench_manifest(&b, a->argc, a->argv);
        bench_runs(&b);
        rc = bench_finish(&b);
    }
    bench_release(&b);
    return rc;
}

const struct lcnctl_cmd lcnctl_bench_cmds[] = {
    {"bench", cmd_bench, "benchmark the daemon on a directory of graphs (paired seeds)",
     bench_usage, bench_table, LCN_ARRAY_LEN(bench_table), bench_exit_status,
     sizeof(struct bench_opts), "directory of graphs"},
    {.name = NULL},
};
