/*
 * store_pg_queue.c - the shared queue's statements (store_pg_queue.h) on a
 * connection of the cluster thread's own. Every statement is
 * parameterised; numbers travel as text.
 */
#include "server/store_pg_queue.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "server/store_pg_sql.h"
#include "util.h"

struct pg_queue {
    PGconn *c;
    char *url;
    char *owner;
    char lease[32];
    int listening; /* LISTEN issued on this connection */
    int named;     /* the owner name's lock held on this connection (name_lock) */
    int reconnected; /* reset since the last full success (pg_queue_connected's 2) */
    int old_pid;     /* the server process of the session that held the name before a reset */
    char low[32];  /* the snapshot xmin of the previous pg_queue_changes */
};

static void say(char *err, size_t errlen, const char *m)
{
    if (err && errlen)
        snprintf(err, errlen, "%s", m);
}

/* The first column of the one row of a statement as an integer, or
 * LCN_ESTORE. */
static int64_t one_int(struct pg_queue *q, const char *sql, int n, const char *const *v, char *err,
                       size_t errlen)
{
    PGresult *res = pg_run(q->c, sql, n, v, NULL, err, errlen);
    if (!res)
        return LCN_ESTORE;
    int64_t x = PQntuples(res) == 1 ? strtoll(PQgetvalue(res, 0, 0), NULL, 10) : LCN_ESTORE;
    if (PQntuples(res) != 1)
        say(err, errlen, "no row");
    PQclear(res);
    return x;
}

/* one_int of a statement with one parameter, arg. */
static int64_t one_int_of(struct pg_queue *q, const char *sql, const char *arg, char *err,
                          size_t errlen)
{
    const char *v[1] = {arg};
    return one_int(q, sql, 1, v, err, errlen);
}

/*
 * The owner name's lock: a session advisory lock on a 64-bit hash of the
 * name, held as long as this connection lives (PostgreSQL drops it with
 * the session, so a killed daemon's name is free again once its server
 * process notices). A second live daemon with the same node_name cannot
 * take it. Returns 0, LCN_EBUSY (taken; err says so) or LCN_ESTORE.
 */
static int name_lock(struct pg_queue *q, char *err, size_t errlen)
{
    if (q->named)
        return 0;
    int64_t got = one_int_of(q,
                             "SELECT pg_try_advisory_lock(('x' || substr(md5('lcnd node ' || $1), 1, "
                             "16))::bit(64)::bigint)::int",
                             q->owner, err, errlen);
    if (got < 0)
        return LCN_ESTORE;
    if (!got) {
        snprintf(err, errlen,
                 "node_name '%s' is in use: another live lcnd on this database has it "
                 "(node_name must be unique among the daemons)",
                 q->owner);
        return LCN_EBUSY;
    }
    q->named = 1;
    return 0;
}

static int listen_on(struct pg_queue *q, char *err, size_t errlen)
{
    if (q->listening)
        return 0;
    if (pg_exec(q->c, "LISTEN lcn_queue; LISTEN lcn_cancel", 0, NULL, NULL, err, errlen))
        return LCN_ESTORE;
    q->listening = 1;
    return 0;
}

void pg_queue_close(struct pg_queue *q)
{
    if (!q)
        return;
    PQfinish(q->c);
    LCN_FREE_ALL(q->url, q->owner);
    free(q);
}

int pg_queue_open(const char *url, const char *owner, int64_t lease_ms, struct pg_queue **out,
                  char *err, size_t errlen)
{
    *out = NULL;
    PGconn *c = pg_connect(url, err, errlen);
    if (!c)
        return LCN_ESTORE;
    struct pg_queue *q = xcalloc(1, sizeof *q);
    q->c = c;
    q->url = xstrdup(url);
    q->owner = xstrdup(owner);
    snprintf(q->lease, sizeof q->lease, "%lld", (long long)lease_ms);
    snprintf(q->low, sizeof q->low, "0");
    int rc = listen_on(q, err, errlen);
    /* a restarted daemon's previous session may not be gone yet: the name
     * is waited for up to one lease */
    const int64_t until = lcn_now_ns() + lease_ms * 1000000;
    if (!rc)
        while ((rc = name_lock(q, err, errlen)) == LCN_EBUSY && lcn_now_ns() < until)
            poll(NULL, 0, 100);
    if (rc) {
        pg_queue_close(q);
        return rc;
    }
    *out = q;
    return 0;
}

/*
 * The name after a reset: the old session's server process may still hold
 * it (the server has not noticed the lost peer: a partition this side
 * detected first). That process is this daemon's own, so it is ended
 * (pg_terminate_backend) and the lock waited for up to a second.
 */
static int name_relock(struct pg_queue *q, char *err, size_t errlen)
{
    int rc = name_lock(q, err, errlen);
    if (rc != LCN_EBUSY || q->old_pid <= 0)
        return rc;
    char pid[16];
    snprintf(pid, sizeof pid, "%d", q->old_pid);
    if (one_int_of(q, "SELECT pg_terminate_backend($1::int)::int", pid, err, errlen) < 0)
        return LCN_ESTORE;
    const int64_t until = lcn_now_ns() + 1000000000;
    while ((rc = name_lock(q, err, errlen)) == LCN_EBUSY && lcn_now_ns() < until)
        poll(NULL, 0, 50);
    return rc;
}

int pg_queue_connected(struct pg_queue *q, char *err, size_t errlen)
{
    if (PQstatus(q->c) != CONNECTION_OK) {
        q->listening = 0;
        if (q->named)
            q->old_pid = PQbackendPID(q->c);
        q->named = 0; /* the lock belongs to the old session */
        PQreset(q->c);
        if (PQstatus(q->c) != CONNECTION_OK) {
            pg_conn_error(q->c, err, errlen);
            return 0;
        }
        q->reconnected = 1;
    }
    if (listen_on(q, err, errlen) || name_relock(q, err, errlen))
        return 0;
    q->old_pid = 0;
    const int again = q->reconnected;
    q->reconnected = 0;
    return again ? 2 : 1;
}


int64_t pg_queue_release_owner(struct pg_queue *q, char *err, size_t errlen)
{
    const char *v[1] = {q->owner};
    PGresult *res = pg_run(q->c,
                           "UPDATE jobs SET owner = NULL, claim = NULL, lease_until = 0 "
                           "WHERE owner = $1 AND lease_until > 0 AND state IN ('queued', 'running')",
                           1, v, NULL, err, errlen);
    if (!res)
        return LCN_ESTORE;
    int64_t n = strtoll(PQcmdTuples(res), NULL, 10);
    PQclear(res);
    return n;
}

int pg_queue_ids(struct pg_queue *q, int64_t n, int64_t *first, char *err, size_t errlen)
{
    char nb[32];
    snprintf(nb, sizeof nb, "%lld", (long long)n);
    int64_t end = one_int_of(q,
                             "UPDATE meta SET value = (value::bigint + $1::bigint)::text "
                             "WHERE key = 'next_id' RETURNING value::bigint",
                             nb, err, errlen);
    if (end < 0)
        return LCN_ESTORE;
    *first = end - n;
    return 0;
}

static void rows_to(PGresult *res, pg_queue_row_cb cb, void *ctx)
{
    for (int i = 0; i < PQntuples(res); i++) {
        struct pg_queue_row row = {
            .id = strtoll(PQgetvalue(res, i, 0), NULL, 10),
            .claim = PQgetisnull(res, i, 1) ? 0 : strtoll(PQgetvalue(res, i, 1), NULL, 10),
            .cancel = PQgetvalue(res, i, 2)[0] == 't',
            .state = PQgetvalue(res, i, 3),
            .status = PQgetvalue(res, i, 4),
        };
        cb(ctx, &row);
    }
}

/*
 * Rows whose txid is at or past the previous snapshot's xmin: every
 * transaction below it had ended by then, so whatever it wrote was seen
 * then; those at or past it may have committed since. Rows written by a
 * transaction still open at this snapshot come at the next call.
 */
int pg_queue_changes(struct pg_queue *q, pg_queue_row_cb cb, void *ctx, char *err, size_t errlen)
{
    if (pg_exec(q->c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0, NULL, NULL, err,
                errlen))
        return LCN_ESTORE;
    PGresult *x = pg_run(q->c, "SELECT pg_snapshot_xmin(pg_current_snapshot())::text", 0, NULL,
                         NULL, err, errlen);
    const char *v[1] = {q->low};
    PGresult *res = x ? pg_run(q->c,
                               "SELECT id, claim, cancel, state, status FROM jobs "
                               "WHERE txid >= $1::xid8 ORDER BY id",
                               1, v, NULL, err, errlen)
                      : NULL;
    int rc = res ? PQntuples(res) : LCN_ESTORE;
    if (res && pg_exec(q->c, "COMMIT", 0, NULL, NULL, err, errlen))
        rc = LCN_ESTORE;
    if (rc >= 0) {
        rows_to(res, cb, ctx);
        snprintf(q->low, sizeof q->low, "%s", PQgetvalue(x, 0, 0));
    } else if (PQstatus(q->c) == CONNECTION_OK) {
        pg_exec(q->c, "ROLLBACK", 0, NULL, NULL, NULL, 0);
    }
    PQclear(x);
    PQclear(res);
    return rc;
}

/* "{a,b}" */
static void text_array(char *buf, size_t len, const char *const *items, int n)
{
    size_t at = (size_t)snprintf(buf, len, "{");
    for (int i = 0; i < n && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s%s", i ? "," : "", items[i]);
    if (at < len)
        snprintf(buf + at, len - at, "}");
}

int pg_queue_claim(struct pg_queue *q, int cancels, const char *const *backends, int nb, int max_gpus,
                   int healthy, int limit, pg_queue_row_cb cb, void *ctx, char *err, size_t errlen)
{
    char arr[128], lim[16], mg[16], hd[16];
    text_array(arr, sizeof arr, backends, nb);
    snprintf(lim, sizeof lim, "%d", limit);
    snprintf(mg, sizeof mg, "%d", max_gpus > 1 ? max_gpus : 1);
    snprintf(hd, sizeof hd, "%d", healthy);
    const char *v[7] = {q->owner, q->lease, lim, cancels ? "t" : "f", arr, mg, hd};
    /* one statement: the rows are locked (SKIP LOCKED: a row another
     * daemon is claiming is passed over, not waited for) and updated in
     * its transaction */
    PGresult *res = pg_run(
        q->c,
        "WITH c AS (SELECT id FROM jobs r WHERE state IN ('queued', 'running') "
        "AND lease_until < lcn_now_ms() AND cancel = $4::boolean "
        "AND ($4::boolean OR (backend = ANY($5::text[]) AND gpus <= $6::int "
        "AND (backend = 'cpu' OR NOT EXISTS (SELECT 1 FROM jobs w "
        "WHERE w.state IN ('queued', 'running') AND w.lease_until < lcn_now_ms() "
        "AND NOT w.cancel AND w.backend = ANY($5::text[]) AND w.gpus > $6::int "
        "AND w.gpus <= $7::int AND (w.created_ms, w.id) < (r.created_ms, r.id))))) "
        "ORDER BY (state = 'running') DESC, created_ms, id LIMIT $3::int "
        "FOR UPDATE SKIP LOCKED) "
        "UPDATE jobs j SET owner = $1, claim = nextval('claims'), "
        "lease_until = lcn_now_ms() + $2::bigint FROM c WHERE j.id = c.id "
        "RETURNING j.id, j.claim, j.cancel, j.state, j.status",
        7, v, NULL, err, errlen);
    if (!res)
        return LCN_ESTORE;
    int n = PQntuples(res);
    rows_to(res, cb, ctx);
    PQclear(res);
    return n;
}

static int load_checkpoint(struct pg_queue *q, const char *const *v, struct store_checkpoint *ck,
                           int *have, char *err, size_t errlen)
{
    memset(ck, 0, sizeof *ck);
    *have = 0;
    PGresult *res = pg_run(q->c, PG_SQL_CHECKPOINT, 1, v, NULL, err, errlen);
    if (!res)
        return LCN_ESTORE;
    int rc = 0;
    if (PQntuples(res) == 1) {
        if (pg_checkpoint_row(res, ck)) {
            say(err, errlen, "a checkpoint that does not decode");
            rc = LCN_ENOTFOUND;
        } else {
            *have = 1;
        }
    }
    PQclear(res);
    return rc;
}

int pg_queue_load(struct pg_queue *q, int64_t id, char **body, size_t *len,
                  struct store_checkpoint *ck, int *have_ck, int64_t *last_seq, char *err,
                  size_t errlen)
{
    char ids[32];
    snprintf(ids, sizeof ids, "%lld", (long long)id);
    const char *v[1] = {ids};
    *body = NULL;
    *have_ck = 0;
    PGresult *res = pg_run(q->c, "SELECT body FROM requests WHERE job = $1", 1, v, NULL, err, errlen);
    if (!res)
        return LCN_ESTORE;
    if (PQntuples(res) == 1)
        *body = (char *)pg_bytea(res, 0, 0, len);
    PQclear(res);
    if (!*body) {
        say(err, errlen, "the job's request is missing");
        return LCN_ENOTFOUND;
    }
    *last_seq = one_int(q, "SELECT coalesce(max(seq), 0) FROM events WHERE job = $1", 1, v, err,
                        errlen);
    int rc = *last_seq < 0 ? LCN_ESTORE : load_checkpoint(q, v, ck, have_ck, err, errlen);
    if (rc) {
        free(*body);
        *body = NULL;
    }
    return rc;
}

int64_t pg_queue_renew(struct pg_queue *q, const int64_t *claims, int n, char *err, size_t errlen)
{
    size_t cap = 16 + (size_t)n * 21;
    char *arr = xmalloc(cap);
    size_t at = (size_t)snprintf(arr, cap, "{");
    for (int i = 0; i < n; i++)
        at += (size_t)snprintf(arr + at, cap - at, "%s%lld", i ? "," : "", (long long)claims[i]);
    snprintf(arr + at, cap - at, "}");
    const char *v[2] = {arr, q->lease};
    PGresult *res = pg_run(q->c,
                           "UPDATE jobs SET lease_until = lcn_now_ms() + $2::bigint "
                           "WHERE claim = ANY($1::bigint[]) AND lease_until > lcn_now_ms()",
                           2, v, NULL, err, errlen);
    free(arr);
    if (!res)
        return LCN_ESTORE;
    int64_t k = strtoll(PQcmdTuples(res), NULL, 10);
    PQclear(res);
    return k;
}

static int drain_notifies(PGconn *c)
{
    int got = 0;
    PGnotify *nt;
    PQconsumeInput(c);
    while ((nt = PQnotifies(c))) {
        got = 1;
        PQfreemem(nt);
    }
    return got;
}

int pg_queue_wait(struct pg_queue *q, int wake_fd, int timeout_ms)
{
    if (drain_notifies(q->c))
        return 1;
    struct pollfd p[2] = {{.fd = wake_fd, .events = POLLIN}, {.fd = PQsocket(q->c), .events = POLLIN}};
    int np = p[1].fd >= 0 ? 2 : 1;
    int rc = poll(p, (nfds_t)np, timeout_ms);
    if (rc <= 0)
        return 0;
    int got = 0;
    if (p[0].revents) {
        char buf[64];
        while (read(wake_fd, buf, sizeof buf) > 0)
            ;
        got = 1;
    }
    if (np == 2 && p[1].revents)
        got |= drain_notifies(q->c);
    return got;
}
