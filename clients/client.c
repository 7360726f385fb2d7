/* Helpers of lcnctl's commands that talk to lcnd (see client.h). */
#include "clients/client.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "err.h"
#include "util.h"

int client_connect(const struct lcnctl_cmd *cmd, struct lcnhttp *h)
{
    char err[512];
    if (lcnhttp_init(h, lcnctl_server, err, sizeof err) != 0) {
        lcnctl_errorf(cmd, "%s", err);
        return LCNCTL_EXIT_USAGE;
    }
    h->retries = (int)lcnctl_retry;
    return 0;
}

int client_exit_for_status(long status)
{
    switch (status) {
    case 400:
    case 413:
    case 422:
        return LCNCTL_EXIT_USAGE;
    case 404:
        return LCNCTL_EXIT_NOT_FOUND;
    default:
        return LCNCTL_EXIT_REFUSED;
    }
}

static void print_error_json(const char *code, const char *message, const char *field, long status)
{
    json_t *e = json_pack("{s:s, s:s}", "code", code, "message", message);
    if (field)
        json_object_set_new(e, "field", json_string(field));
    json_t *o = json_pack("{s:o}", "error", e);
    json_object_set_new(o, "http_status", status ? json_integer(status) : json_null());
    client_print_json(o);
    json_decref(o);
}

int client_bad_response(const struct lcnctl_cmd *cmd, const struct lcnhttp_resp *r, const char *why)
{
    lcnctl_errorf(cmd, "unexpected response (HTTP %ld, %s): %s", r->status,
                  r->content_type[0] ? r->content_type : "no content type", why);
    if (lcnctl_json)
        print_error_json("bad_response", why, NULL, r->status);
    return LCNCTL_EXIT_REFUSED;
}

int client_report(const struct lcnctl_cmd *cmd, int rc, const struct lcnhttp_resp *r)
{
    if (rc == LCN_EIO || r->status == 0) {
        lcnctl_errorf(cmd, "%s", r->err[0] ? r->err : "no response");
        if (lcnctl_json)
            print_error_json("unreachable", r->err, NULL, 0);
        return LCNCTL_EXIT_UNREACHABLE;
    }
    int exit_rc = client_exit_for_status(r->status);
    json_t *body = r->body ? json_loadb(r->body, r->len, 0, NULL) : NULL;
    json_t *err = json_object_get(body, "error");
    const char *code = client_str(err, "code");
    if (r->status == 409 && code && strcmp(code, "no_solution") == 0)
        exit_rc = LCNCTL_EXIT_NO_SOLUTION;
    /* the exit status's phrase (lcnctl.h), but a 4xx on the input is not a usage error */
    const char *klass =
        exit_rc == LCNCTL_EXIT_USAGE ? "invalid input" : lcnctl_exit_phrase(exit_rc);
    const char *msg = client_str(err, "message");
    const char *field = client_str(err, "field");
    if (!code || !msg) {
        /* not the API's error object (a proxy, another server): show the start of the body */
        char snippet[160];
        size_t n = r->len < sizeof snippet - 1 ? r->len : sizeof snippet - 1;
        for (size_t i = 0; i < n; i++)
            snippet[i] = (r->body[i] >= 32 && r->body[i] < 127) ? r->body[i] : ' ';
        snippet[n] = '\0';
        lcnctl_errorf(cmd, "%s (HTTP %ld, not an lcnd error body): %s", klass, r->status,
                      n ? snippet : "(empty body)");
        if (lcnctl_json)
            print_error_json("http_error", snippet, NULL, r->status);
    } else {
        char where[300] = "";
        if (field)
            snprintf(where, sizeof where, " at %s", field);
        char retry[64] = "";
        if (r->retry_after[0])
            snprintf(retry, sizeof retry, " (retry after %s s)", r->retry_after);
        lcnctl_errorf(cmd, "%s (HTTP %ld %s)%s: %s%s", klass, r->status, code, where, msg, retry);
        if (lcnctl_json)
            print_error_json(code, msg, field, r->status);
    }
    json_decref(body);
    return exit_rc;
}

int client_call(const struct lcnctl_cmd *cmd, struct lcnhttp *h, const char *method,
                const char *path, const json_t *body, json_t **out)
{
    *out = NULL;
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    struct lcnhttp_resp r;
    int rc = lcnhttp_request(h, method, path, text, text ? strlen(text) : 0, &r);
    free(text);
    int exit_rc;
    if (rc != 0 || r.status < 200 || r.status > 299) {
        exit_rc = client_report(cmd, rc, &r);
    } else {
        json_error_t je;
        json_t *j = json_loadb(r.body, r.len, JSON_REJECT_DUPLICATES, &je);
        if (!j || !json_is_object(j)) {
            exit_rc = client_bad_response(cmd, &r, j ? "not a JSON object" : je.text);
            json_decref(j);
        } else {
            *out = j;
            exit_rc = 0;
        }
    }
    lcnhttp_resp_release(&r);
    return exit_rc;
}

char *client_job_path(const char *id, const char *suffix)
{
    char *e = lcnhttp_escape(id);
    size_t n = strlen(e) + strlen(suffix) + 8;
    char *p = xmalloc(n);
    snprintf(p, n, "/jobs/%s%s", e, suffix);
    free(e);
    return p;
}

void client_print_json(const json_t *j)
{
    char *s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(15));
    if (s) {
        fputs(s, stdout);
        fputc('\n', stdout);
        free(s);
    }
    fflush(stdout);
}

int client_tuple(const json_t *best, struct lcn_obj *o)
{
    json_t *k = json_object_get(best, "K"), *nk = json_object_get(best, "nK"),
           *phi = json_object_get(best, "Phi"), *c = json_object_get(best, "C");
    if (!json_is_integer(k) || !json_is_integer(nk) || !json_is_integer(phi) || !json_is_integer(c))
        return -1;
    o->K = (int32_t)json_integer_value(k);
    o->nK = (int32_t)json_integer_value(nk);
    o->Phi = json_integer_value(phi);
    o->C = json_integer_value(c);
    return 0;
}

void client_format_tuple(char *buf, size_t len, const json_t *best)
{
    struct lcn_obj o;
    if (client_tuple(best, &o) != 0)
        snprintf(buf, len, "none");
    else
        snprintf(buf, len, "K=%d nK=%d Phi=%lld C=%lld", o.K, o.nK, (long long)o.Phi,
                 (long long)o.C);
}

int client_state_terminal(const char *state)
{
    static const char *const t[] = {"succeeded", "failed", "cancelled", "interrupted"};
    for (size_t i = 0; state && i < LCN_ARRAY_LEN(t); i++)
        if (strcmp(state, t[i]) == 0)
            return 1;
    return 0;
}

int client_job_exit(const json_t *status)
{
    const char *s = client_str(status, "state");
    return s && strcmp(s, "succeeded") == 0 ? LCNCTL_EXIT_OK : LCNCTL_EXIT_NO;
}

const char *client_str(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

const char *client_printable(const char *s, char *buf, size_t len)
{
    return lcn_printable(s, buf, len);
}

int client_out_is_stream(const char *out)
{
    struct stat o, so;
    if (strcmp(out, "-") == 0)
        return 1;
    if (stat(out, &o))
        return 0; /* a new regular file */
    if (!S_ISREG(o.st_mode))
        return 1;
    return fstat(STDOUT_FILENO, &so) == 0 && so.st_dev == o.st_dev && so.st_ino == o.st_ino;
}

double client_num(const json_t *o, const char *key, double dflt)
{
    json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : dflt;
}

void client_print_summary(FILE *f, const json_t *st)
{
    const char *id = client_str(st, "id"), *state = client_str(st, "state");
    const char *reason = client_str(st, "stop_reason"), *backend = client_str(st, "backend");
    char tuple[128];
    client_format_tuple(tuple, sizeof tuple, json_object_get(st, "best"));
    fprintf(f, "%s: %s", id ? id : "?", state ? state : "?");
    if (reason && !(state && strcmp(state, reason) == 0))
        fprintf(f, " (%s)", reason);
    fprintf(f, " after %.2f s", client_num(st, "elapsed_s", 0));
    if (backend)
        fprintf(f, " on %s", backend);
    fprintf(f, ": %s", tuple);
    json_t *tk = json_object_get(st, "target_k");
    if (json_is_integer(tk)) {
        json_t *ttt = json_object_get(st, "time_to_target_s");
        if (json_is_number(ttt))
            fprintf(f, ", target K<=%lld reached at %.3f s", (long long)json_integer_value(tk),
                    json_number_value(ttt));
        else
            fprintf(f, ", target K<=%lld not reached", (long long)json_integer_value(tk));
    }
    json_t *err = json_object_get(st, "error");
    if (json_is_object(err)) {
        const char *code = client_str(err, "code"), *msg = client_str(err, "message");
        fprintf(f, "; error %s: %s", code ? code : "?", msg ? msg : "?");
    }
    fputc('\n', f);
    fflush(f);
}
