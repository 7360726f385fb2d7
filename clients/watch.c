/*
 * Following a job (see watch.h).
 *
 * Single-threaded: the event stream runs on libcurl's multi interface with
 * a tick every TICK_MS, so the bar keeps moving between events. Solution
 * fetches for the picture use a second connection (side), because the
 * stream's handle is busy inside its write callback.
 */
#include "clients/watch.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "clients/client.h"
#include "err.h"
#include "graphio.h"
#include "render.h"
#include "clients/sse.h"
#include "util.h"

#define TICK_MS      200
#define POLL_IDLE_MS 250
#define BAR_CELLS    12
/* stream attempts that end without the terminal event before polling */
#define MAX_STREAM_FAILURES 3

struct watch {
    const struct lcnctl_cmd *cmd;
    struct lcnhttp *h;
    struct lcnhttp side; /* for solution fetches; side.curl NULL when unused */
    const char *id;
    const struct watch_opts *o;
    int64_t start_ns;

    int64_t cursor; /* seq of the last event handled */
    char state[32];
    json_t *best; /* latest tuple seen, or NULL */
    double budget_s;
    long long target_k; /* -1: none */
    double ttt;         /* time to target from the events, -1 while not reached */
    /* the job's elapsed time was base_s at local time base_ns (while running) */
    double base_s;
    int64_t base_ns;
    int running, done;
    int timed_out;   /* stop following: the timeout ran out, or interrupted */
    int interrupted; /* *o->interrupted was seen set */

    int64_t unreachable_since; /* 0, or when the server stopped answering */

    /* display */
    int bar_drawn;
    int64_t last_draw_ns;

    /* picture */
    int64_t last_fetch_ns;
    double fetch_cost_s;
    int have_rendered;
    struct lcn_obj rendered;
    int render_warned;
    int render_off; /* the side connection could not be set up */

    struct sse_parser sse;
};

enum watch_display watch_default_display(void)
{
    if (lcnctl_json)
        return WATCH_JSON;
    return isatty(STDOUT_FILENO) ? WATCH_BAR : WATCH_LINES;
}

static double since_s(int64_t t0)
{
    return (double)(lcn_now_ns() - t0) / 1e9;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static double estimate_elapsed(const struct watch *w)
{
    if (!w->running)
        return w->base_s;
    return w->base_s + since_s(w->base_ns);
}

static int term_cols(void)
{
    struct winsize ws;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20)
        return ws.ws_col;
    return 80;
}

static void draw_bar(struct watch *w, int final)
{
    double el = estimate_elapsed(w);
    double frac = w->budget_s > 0 ? el / w->budget_s : 0;
    if (frac > 1)
        frac = 1;
    if (frac < 0)
        frac = 0;
    int fill = (int)(frac * BAR_CELLS + 0.5);
    char bar[BAR_CELLS + 1];
    for (int i = 0; i < BAR_CELLS; i++)
        bar[i] = i < fill ? '#' : '-';
    bar[BAR_CELLS] = '\0';
    char tuple[128], target[96] = "", label[160];
    client_format_tuple(tuple, sizeof tuple, w->best);
    if (w->target_k >= 0) {
        if (w->ttt >= 0)
            snprintf(target, sizeof target, "  K<=%lld at %.3f s", w->target_k, w->ttt);
        else
            snprintf(target, sizeof target, "  K<=%lld: not yet", w->target_k);
    }
    /* the label (default: the job id) leads, so that a narrow terminal cuts
     * the numbers and never the id */
    snprintf(label, sizeof label, "%s ", w->o->label ? w->o->label : w->id);
    char line[640];
    snprintf(line, sizeof line, "%s%-9s [%s] %.1f/%.1f s  %s%s", label, w->state, bar, el,
             w->budget_s, w->best ? tuple : "no layout yet", target);
    int cols = term_cols();
    if ((int)strlen(line) > cols - 1)
        line[cols - 1] = '\0';
    fprintf(stdout, "\r%s\033[K%s", line, final ? "\n" : "");
    fflush(stdout);
    w->bar_drawn = !final;
    w->last_draw_ns = lcn_now_ns();
}

/* Ends a bar line so that an error message starts on a fresh line. */
static void break_bar(struct watch *w)
{
    if (w->bar_drawn) {
        fputc('\n', stdout);
        fflush(stdout);
        w->bar_drawn = 0;
    }
}

static void warnf(struct watch *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void warnf(struct watch *w, const char *fmt, ...)
{
    break_bar(w);
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    lcnctl_errorf(w->cmd, "%s", buf);
}

/* ---- the picture ---- */

static void fetch_render_once(struct watch *w, int final)
{
    if (w->render_off)
        return;
    if (!w->side.curl) {
        char err[512];
        if (lcnhttp_init(&w->side, w->h->base, err, sizeof err) != 0) {
            warnf(w, "cannot render: %s", err);
            w->render_off = 1; /* keep following the job without the picture */
            return;
        }
    }
    int64_t t0 = lcn_now_ns();
    w->last_fetch_ns = t0;
    char *path = client_job_path(w->id, "/solution");
    struct lcnhttp_resp r;
    int rc = lcnhttp_request(&w->side, "GET", path, NULL, 0, &r);
    free(path);
    if (rc != 0 || r.status != 200) {
        /* 409: no validated layout yet, nothing to draw */
        if (!(rc == 0 && r.status == 409) && !w->render_warned) {
            warnf(w, "cannot fetch the solution for the picture: %s",
                  rc ? r.err : "unexpected HTTP status");
            w->render_warned = 1;
        }
        lcnhttp_resp_release(&r);
        return;
    }
    struct graphio_doc d;
    struct graphio_error ge;
    if (graphio_read_buf(&d, r.body, r.len, NULL, &ge) != 0) {
        char msg[600];
        graphio_error_format(&ge, msg, sizeof msg);
        warnf(w, "the server's solution does not parse: %s", msg);
        lcnhttp_resp_release(&r);
        return;
    }
    lcnhttp_resp_release(&r);
    struct lcn_obj served;
    int have_served = client_tuple(json_object_get(d.root, "lcn"), &served) == 0;
    if (!final && have_served && w->have_rendered && obj_cmp(&served, &w->rendered) == 0) {
        graphio_release(&d);
        return; /* same layout as the picture already shows */
    }
    char title[160], sub[160];
    snprintf(title, sizeof title, "job %s", w->id);
    snprintf(sub, sizeof sub, "%s, %.1f s of %.1f s%s", w->state, estimate_elapsed(w), w->budget_s,
             final ? " (final)" : "");
    struct render_info info = {title, sub};
    struct lcn_obj obj;
    int valid;
    char err[512];
    if (render_doc(w->o->render_path, &d, &info, &obj, &valid, err, sizeof err) != 0) {
        warnf(w, "cannot render %s: %s", w->o->render_path, err);
    } else {
        int changed = !w->have_rendered || obj_cmp(&obj, &w->rendered) != 0;
        w->have_rendered = 1;
        w->rendered = have_served ? served : obj;
        if (have_served && obj_cmp(&served, &obj) != 0)
            warnf(w, "the server's tuple (K=%d nK=%d) differs from the recount (K=%d nK=%d)",
                  served.K, served.nK, obj.K, obj.nK);
        if (!valid)
            warnf(w, "the server's solution fails validation (see %s)", w->o->render_path);
        if (w->o->display == WATCH_LINES && changed) {
            fprintf(stdout, "%8s    picture   %s (K=%d nK=%d C=%lld)\n", "", w->o->render_path,
                    obj.K, obj.nK, (long long)obj.C);
            fflush(stdout);
        }
    }
    graphio_release(&d);
    w->fetch_cost_s = since_s(t0);
}

static void fetch_render(struct watch *w, int final)
{
    fetch_render_once(w, final);
    if (w->side.curl)
        lcnhttp_drop_connections(&w->side); /* no idle connection beside the stream */
}

/* ---- events ---- */

static void handle_event(struct watch *w, json_t *ev)
{
    json_t *jseq = json_object_get(ev, "seq");
    if (!json_is_integer(jseq))
        return;
    int64_t seq = json_integer_value(jseq);
    if (seq <= w->cursor)
        return; /* seen before a reconnect */
    w->cursor = seq;
    const char *type = client_str(ev, "type");
    double el = client_num(ev, "elapsed_s", -1);
    if (!type)
        type = "?";
    int is_state = strcmp(type, "state") == 0, is_improve = strcmp(type, "improve") == 0,
        is_ckpt = strcmp(type, "checkpoint") == 0;
    int reached = 0;
    if (is_state) {
        const char *st = client_str(ev, "state");
        if (st) {
            snprintf(w->state, sizeof w->state, "%s", st);
            if (strcmp(st, "running") == 0) {
                w->running = 1;
                if (el >= 0 && el >= w->base_s) {
                    w->base_s = el;
                    w->base_ns = lcn_now_ns();
                }
            } else {
                w->running = 0;
                if (el >= 0)
                    w->base_s = el;
            }
            /* "interrupted" is followed by "queued" when the daemon resumes the
             * job; when it does not, the stream ends and the status says so */
            if (client_state_terminal(st) && strcmp(st, "interrupted") != 0)
                w->done = 1;
        }
    } else if (is_improve || is_ckpt) {
        json_t *best = json_object_get(ev, "best");
        if (json_is_object(best)) {
            /* a checkpoint repeats an earlier improvement: keep the engine's newest */
            if (is_improve || !w->best) {
                json_decref(w->best);
                w->best = json_incref(best);
            }
            struct lcn_obj o;
            if (is_improve && w->target_k >= 0 && w->ttt < 0 && client_tuple(best, &o) == 0 &&
                o.K <= w->target_k) {
                w->ttt = el;
                reached = 1;
            }
        }
        if (w->running && el >= 0 && el > estimate_elapsed(w)) {
            w->base_s = el;
            w->base_ns = lcn_now_ns();
        }
    }

    switch (w->o->display) {
    case WATCH_JSON:
        client_print_json(ev);
        break;
    case WATCH_LINES: {
        char tuple[128];
        if (is_state) {
            const char *st = client_str(ev, "state");
            fprintf(stdout, "%8.3f s  state      %s", el, st ? st : "?");
            json_t *err = json_object_get(ev, "error");
            if (json_is_object(err))
                fprintf(stdout, " (%s: %s)",
                        client_str(err, "code") ? client_str(err, "code") : "?",
                        client_str(err, "message") ? client_str(err, "message") : "?");
        } else {
            client_format_tuple(tuple, sizeof tuple, json_object_get(ev, "best"));
            fprintf(stdout, "%8.3f s  %-10s %s", el, type, tuple);
            const char *stage = client_str(ev, "stage");
            if (stage)
                fprintf(stdout, "  (%s)", stage);
            if (reached)
                fprintf(stdout, "  target K<=%lld reached", w->target_k);
        }
        fputc('\n', stdout);
        fflush(stdout);
        break;
    }
    case WATCH_BAR:
        /* at most 20 redraws a second: early improvements come in bursts */
        if (lcn_now_ns() - w->last_draw_ns >= 50000000LL || w->done)
            draw_bar(w, 0);
        break;
    case WATCH_QUIET:
        break;
    }

    if (w->o->render_path && !w->done) {
        double gap = w->fetch_cost_s * 4 > 1.0 ? w->fetch_cost_s * 4 : 1.0;
        if (is_ckpt || (is_improve && since_s(w->last_fetch_ns) >= gap))
            fetch_render(w, 0);
    }
}

static int tick(void *ctx)
{
    struct watch *w = ctx;
    if (w->o->interrupted && *w->o->interrupted) {
        w->interrupted = w->timed_out = 1;
        return 1;
    }
    if (w->o->timeout_s > 0 && since_s(w->start_ns) > w->o->timeout_s) {
        w->timed_out = 1;
        return 1;
    }
    if (w->o->display == WATCH_BAR && (lcn_now_ns() - w->last_draw_ns) >= TICK_MS * 1000000LL)
        draw_bar(w, 0);
    return 0;
}

static void sleep_ticking(struct watch *w, int ms)
{
    while (ms > 0 && !w->timed_out) {
        int step = ms < 100 ? ms : 100;
        sleep_ms(step);
        ms -= step;
        tick(w);
    }
}

static void on_sse_event(void *ctx, const struct sse_event *ev)
{
    struct watch *w = ctx;
    json_t *j = json_loadb(ev->data, ev->data_len, 0, NULL);
    if (json_is_object(j))
        handle_event(w, j);
    json_decref(j);
}

static int on_data(void *ctx, const char *p, size_t n)
{
    struct watch *w = ctx;
    sse_feed(&w->sse, p, n);
    return w->done || w->timed_out || w->sse.overflow;
}

/* Handles one page of GET /jobs/ID/progress; returns 0, or -1 when the body
 * is not such a page. */
static int handle_page(struct watch *w, const struct lcnhttp_resp *r)
{
    json_t *j = json_loadb(r->body, r->len, 0, NULL);
    json_t *events = json_object_get(j, "events");
    if (!json_is_array(events)) {
        json_decref(j);
        return -1;
    }
    size_t i;
    json_t *ev;
    json_array_foreach(events, i, ev) handle_event(w, ev);
    if (json_is_true(json_object_get(j, "done")))
        w->done = 1;
    json_decref(j);
    return 0;
}

/* Connection failures: retried for WATCH_RECONNECT_S, then fatal. Returns 0
 * to retry, or the exit status. */
static int unreachable(struct watch *w, int rc, const struct lcnhttp_resp *r)
{
    if (!w->unreachable_since)
        w->unreachable_since = lcn_now_ns();
    lcnhttp_drop_connections(w->h);
    if (since_s(w->unreachable_since) > WATCH_RECONNECT_S) {
        break_bar(w);
        return client_report(w->cmd, rc, r);
    }
    sleep_ticking(w, 500);
    return 0;
}

static int get_status(struct watch *w, json_t **st);

/* A stream ended without the event that ends the job: a job left
 * "interrupted" (resuming off) is terminal, and a stopping daemon ends its
 * streams. The status tells; returns 0 (w->done set when terminal) or an
 * exit status (404: the job is gone). Connection failures are left to the
 * reconnect. */
static int ended_without_event(struct watch *w)
{
    /* on a fresh connection: a stopping daemon has closed its listening
     * socket, so the request fails and the reconnect loop takes over */
    lcnhttp_drop_connections(w->h);
    char suffix[48] = "";
    if (w->cursor > 0)
        snprintf(suffix, sizeof suffix, "?min_seq=%" PRId64, w->cursor);
    char *path = client_job_path(w->id, suffix);
    struct lcnhttp_resp r;
    int rc = lcnhttp_request(w->h, "GET", path, NULL, 0, &r);
    free(path);
    int e = 0;
    if (rc == 0 && r.status == 404) {
        break_bar(w);
        e = client_report(w->cmd, rc, &r);
    } else if (rc == 0 && r.status == 200) {
        json_t *st = json_loadb(r.body, r.len, 0, NULL);
        json_t *seq = json_object_get(st, "progress_seq");
        if (client_state_terminal(client_str(st, "state")) &&
            (!json_is_integer(seq) || json_integer_value(seq) <= w->cursor))
            w->done = 1;
        json_decref(st);
    }
    lcnhttp_resp_release(&r);
    return e;
}

static char *progress_path(struct watch *w)
{
    char suffix[64];
    snprintf(suffix, sizeof suffix, "/progress?after=%" PRId64, w->cursor);
    return client_job_path(w->id, suffix);
}

/* Returns 0 when the job is done, 1 to poll instead, or an exit status. */
static int run_stream(struct watch *w)
{
    int failures = 0;
    while (!w->done && !w->timed_out) {
        char *path = progress_path(w);
        char leid[32];
        snprintf(leid, sizeof leid, "%" PRId64, w->cursor);
        struct lcnhttp_stream s = {on_data, tick, w, TICK_MS, leid};
        struct lcnhttp_resp r;
        /* No idle keep-alive connection beside the stream: lcnd (as of
         * 1f5050d) never finishes a SIGTERM shutdown when a client holds one
         * while a progress stream is open, so a daemon restart would stall. */
        lcnhttp_drop_connections(w->h);
        sse_init(&w->sse, on_sse_event, w);
        int rc = lcnhttp_stream(w->h, path, &s, &r);
        size_t got = w->sse.events;
        int overflow = w->sse.overflow;
        sse_release(&w->sse);
        free(path);
        if (w->done || w->timed_out) {
            lcnhttp_resp_release(&r);
            break;
        }
        if (rc == 0 && r.sse) {
            w->unreachable_since = 0;
            failures = overflow || got == 0 ? failures + 1 : 0;
            if (overflow)
                failures = MAX_STREAM_FAILURES;
            int e = ended_without_event(w);
            if (e) {
                lcnhttp_resp_release(&r);
                return e;
            }
        } else if (rc == 0) {
            w->unreachable_since = 0;
            if (r.status == 404 || r.status == 401) {
                break_bar(w);
                int e = client_report(w->cmd, rc, &r);
                lcnhttp_resp_release(&r);
                return e;
            }
            if (r.status == 200 && handle_page(w, &r) == 0) {
                lcnhttp_resp_release(&r);
                return w->done ? 0 : 1; /* the server ignores Accept: poll */
            }
            if (w->o->display == WATCH_LINES)
                warnf(w, "progress stream refused (HTTP %ld): polling instead", r.status);
            lcnhttp_resp_release(&r);
            return 1;
        } else if (r.status == 0) {
            int e = unreachable(w, rc, &r);
            lcnhttp_resp_release(&r);
            if (e)
                return e;
            continue;
        } else {
            failures++; /* the stream broke */
        }
        lcnhttp_resp_release(&r);
        if (failures >= MAX_STREAM_FAILURES)
            return 1;
        if (!w->done)
            sleep_ticking(w, 200);
    }
    return w->timed_out ? WATCH_TIMED_OUT : 0;
}

static int run_poll(struct watch *w)
{
    while (!w->done && !w->timed_out) {
        char *path = progress_path(w);
        struct lcnhttp_resp r;
        int64_t before = w->cursor;
        int rc = lcnhttp_request(w->h, "GET", path, NULL, 0, &r);
        free(path);
        if (rc != 0) {
            int e = unreachable(w, rc, &r);
            lcnhttp_resp_release(&r);
            if (e)
                return e;
            continue;
        }
        w->unreachable_since = 0;
        if (r.status != 200) {
            break_bar(w);
            int e = client_report(w->cmd, rc, &r);
            lcnhttp_resp_release(&r);
            return e;
        }
        if (handle_page(w, &r) != 0) {
            break_bar(w);
            int e = client_bad_response(w->cmd, &r, "not a progress page");
            lcnhttp_resp_release(&r);
            return e;
        }
        lcnhttp_resp_release(&r);
        if (!w->done && w->cursor == before)
            sleep_ticking(w, POLL_IDLE_MS);
        else
            tick(w);
    }
    return w->timed_out ? WATCH_TIMED_OUT : 0;
}

/* The status at least as new as the events seen (min_seq: a daemon of a
 * shared queue that does not run the job answers once it has caught up,
 * docs/API.md; one daemon alone always has). */
static int get_status(struct watch *w, json_t **st)
{
    char suffix[48] = "";
    if (w->cursor > 0)
        snprintf(suffix, sizeof suffix, "?min_seq=%" PRId64, w->cursor);
    char *path = client_job_path(w->id, suffix);
    int rc = client_call(w->cmd, w->h, "GET", path, NULL, st);
    free(path);
    return rc;
}

int watch_job(const struct lcnctl_cmd *cmd, struct lcnhttp *h, const char *id,
              const struct watch_opts *opts, json_t **final)
{
    *final = NULL;
    struct watch w;
    memset(&w, 0, sizeof w);
    w.cmd = cmd;
    w.h = h;
    w.id = id;
    w.o = opts;
    w.start_ns = lcn_now_ns();
    w.target_k = -1;
    w.ttt = -1;

    json_t *st;
    int rc = get_status(&w, &st);
    if (rc)
        return rc;
    const char *state = client_str(st, "state");
    snprintf(w.state, sizeof w.state, "%s", state ? state : "?");
    w.budget_s = client_num(st, "budget_s", 0);
    json_t *tk = json_object_get(st, "target_k");
    if (json_is_integer(tk))
        w.target_k = json_integer_value(tk);
    w.running = state && strcmp(state, "running") == 0;
    w.base_s = client_num(st, "elapsed_s", 0);
    w.base_ns = lcn_now_ns();
    if (json_is_object(json_object_get(st, "best")))
        w.best = json_incref(json_object_get(st, "best"));
    json_t *ttt = json_object_get(st, "time_to_target_s");
    if (json_is_number(ttt))
        w.ttt = json_number_value(ttt);

    if (opts->display == WATCH_LINES) {
        json_t *g = json_object_get(st, "graph");
        fprintf(stdout, "job %s: %s, budget %g s, seed %lld", id, w.state, w.budget_s,
                (long long)json_integer_value(json_object_get(st, "seed")));
        if (w.target_k >= 0)
            fprintf(stdout, ", target K<=%lld", w.target_k);
        if (json_is_object(g))
            fprintf(stdout, ", graph n=%lld m=%lld %lldx%lld",
                    (long long)json_integer_value(json_object_get(g, "n")),
                    (long long)json_integer_value(json_object_get(g, "m")),
                    (long long)json_integer_value(json_object_get(g, "width")),
                    (long long)json_integer_value(json_object_get(g, "height")));
        fputc('\n', stdout);
        fflush(stdout);
    } else if (opts->display == WATCH_BAR) {
        draw_bar(&w, 0);
    }
    json_decref(st);

    rc = opts->poll_only ? 1 : run_stream(&w);
    if (rc == 1)
        rc = run_poll(&w);

    if (rc == 0) {
        rc = get_status(&w, final);
        if (rc == 0) {
            /* the final numbers are the server's */
            const char *fs = client_str(*final, "state");
            if (fs)
                snprintf(w.state, sizeof w.state, "%s", fs);
            w.running = 0;
            w.base_s = client_num(*final, "elapsed_s", w.base_s);
            json_t *b = json_object_get(*final, "best");
            if (json_is_object(b)) {
                json_decref(w.best);
                w.best = json_incref(b);
            }
            json_t *t = json_object_get(*final, "time_to_target_s");
            w.ttt = json_is_number(t) ? json_number_value(t) : -1;
            if (opts->render_path)
                fetch_render(&w, 1);
            if (opts->display == WATCH_BAR)
                draw_bar(&w, 1);
        }
    } else if (rc == WATCH_TIMED_OUT && w.interrupted) {
        break_bar(&w);
        rc = WATCH_INTERRUPTED;
    } else if (rc == WATCH_TIMED_OUT) {
        break_bar(&w);
        if (get_status(&w, final) != 0)
            *final = NULL;
        rc = WATCH_TIMED_OUT;
    } else {
        break_bar(&w);
    }
    json_decref(w.best);
    if (w.side.curl)
        lcnhttp_release(&w.side);
    return rc;
}
