/*
 * The PostgreSQL job store (server/store_pg.c) against its twin, the SQLite
 * store (server/store.c): the same batches of operations go to both, and
 * everything the daemon can read back must be the same. Plus what only the
 * PostgreSQL side has: migrations (a new database gets the schema, a newer
 * one is refused with a message), binary request bodies, reconnection.
 *
 * Needs a server: run under tests/pg/with-postgres.sh, which sets
 * LCN_TEST_PG_URL; without it the test is skipped (exit 77).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <libpq-fe.h>

#include "err.h"
#include "rng.h"
#include "server/store.h"
#include "server/store_pg.h"
#include "server/store_pg_queue.h"
#include "server/store_pg_sql.h"
#include "util.h"

static const char *url;
static char dir[64], dbpath[128];

/* Empties the database: every test starts from nothing. */
static void pg_reset(void)
{
    PGconn *c = PQconnectdb(url);
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    PGresult *r = PQexec(c, "DROP TABLE IF EXISTS meta, jobs, requests, events, checkpoints;"
                            "DROP SEQUENCE IF EXISTS claims;"
                            "DROP FUNCTION IF EXISTS lcn_now_ms(), lcn_jobs_txid() CASCADE");
    assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
    PQclear(r);
    PQfinish(c);
}

static void pg_sql(const char *sql)
{
    PGconn *c = PQconnectdb(url);
    PGresult *r = PQexec(c, sql);
    assert_true(PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK);
    PQclear(r);
    PQfinish(c);
}

/* The first column of the first row of sql, an integer. */
static int pg_int(const char *sql)
{
    PGconn *c = PQconnectdb(url);
    PGresult *r = PQexec(c, sql);
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    assert_int_equal(PQntuples(r), 1);
    int v = atoi(PQgetvalue(r, 0, 0));
    PQclear(r);
    PQfinish(c);
    return v;
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/lcn-test-storepg-XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(dbpath, sizeof dbpath, "%s/jobs.db", dir);
    pg_reset();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* ------------------------------------------------------------ what a store shows */

struct view {
    char *text; /* everything readable, one line per fact */
    size_t len, cap;
};

static void put(struct view *v, const char *f, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, f);
    int n = vsnprintf(line, sizeof line, f, ap);
    va_end(ap);
    xgrow((void **)&v->text, 1, &v->cap, v->len + (size_t)n + 1);
    memcpy(v->text + v->len, line, (size_t)n + 1);
    v->len += (size_t)n;
}

static int job_cb(void *ctx, int64_t id, const char *state, const char *status)
{
    put(ctx, "job %lld %s %s\n", (long long)id, state, status);
    return 0;
}

static void ev_cb(void *ctx, int64_t seq, const char *body)
{
    put(ctx, "  event %lld %s\n", (long long)seq, body);
}

/* One of the two stores. */
struct any {
    struct store *lite;
    struct pg_store *pg;
};

/* The view of ids 1..maxid through one store's read functions. */
static void view_of(struct any *a, int64_t maxid, struct view *v)
{
    memset(v, 0, sizeof *v);
    if (a->lite) {
        assert_int_equal(store_load_jobs(a->lite, job_cb, v), 0);
        put(v, "next %lld\n", (long long)store_next_id(a->lite));
    } else {
        assert_int_equal(pg_store_load_jobs(a->pg, job_cb, v), 0);
        put(v, "next %lld\n", (long long)pg_store_next_id(a->pg));
    }
    for (int64_t id = 1; id <= maxid; id++) {
        char *body = NULL;
        size_t len = 0;
        int rc = a->lite ? store_load_request(a->lite, id, &body, &len)
                         : pg_store_load_request(a->pg, id, &body, &len);
        put(v, "request %lld rc %d len %zu\n", (long long)id, rc, rc ? (size_t)0 : len);
        if (!rc) {
            uint64_t h = 1469598103934665603ull;
            for (size_t i = 0; i < len; i++)
                h = (h ^ (unsigned char)body[i]) * 1099511628211ull;
            put(v, "  hash %016llx nul-terminated %d\n", (unsigned long long)h, body[len] == 0);
            free(body);
        }
        struct store_checkpoint ck;
        rc = a->lite ? store_load_checkpoint(a->lite, id, &ck) : pg_store_load_checkpoint(a->pg, id, &ck);
        put(v, "ckpt %lld rc %d\n", (long long)id, rc);
        if (!rc) {
            put(v, "  seq %lld el %.17g K %d nK %d Phi %lld C %lld final %d n %d\n",
                (long long)ck.seq, ck.elapsed_s, ck.obj.K, ck.obj.nK, (long long)ck.obj.Phi,
                (long long)ck.obj.C, ck.final, ck.n);
            for (int32_t i = 0; i < ck.n; i++)
                put(v, "  %d %d\n", ck.layout[i].x, ck.layout[i].y);
            store_checkpoint_release(&ck);
        }
        int n = a->lite ? store_load_events(a->lite, id, 2, 5, ev_cb, v)
                        : pg_store_load_events(a->pg, id, 2, 5, ev_cb, v);
        put(v, "events after 2 (5): %d; last %lld\n", n,
            (long long)(a->lite ? store_last_seq(a->lite, id) : pg_store_last_seq(a->pg, id)));
    }
}

/* ------------------------------------------------------------ random batches */

static char *randstr(struct lcn_rng *r, const char *tag)
{
    char s[96];
    snprintf(s, sizeof s, "{\"%s\":%u,\"x\":\"%u\"}", tag, rng_below(r, 1000000), rng_u32(r));
    return xstrdup(s);
}

/* A random op on ids 1..*maxid (new ids go above it). */
static struct store_op *random_op(struct lcn_rng *r, int64_t *maxid, int64_t *created)
{
    uint32_t kind = rng_below(r, 10);
    if (kind < 3 || *created == 0) {
        int64_t id = ++*maxid;
        struct store_op *op = store_op_new(id);
        op->create = 1;
        op->created_ms = 1000 + id;
        /* binary bodies: NULs and high bytes must come back as they went */
        size_t len = 1 + rng_below(r, 300);
        op->request = xmalloc(len + 1);
        for (size_t i = 0; i < len; i++)
            op->request[i] = (char)rng_below(r, 256);
        op->request[len] = 0;
        op->request_len = len;
        op->state = xstrdup("queued");
        op->status = randstr(r, "status");
        (*created)++;
        return op;
    }
    int64_t id = 1 + (int64_t)rng_below(r, (uint32_t)*maxid);
    struct store_op *op = store_op_new(id);
    if (kind == 3) {
        op->reserve = 1;
        op->job = *maxid + 1 + (int64_t)rng_below(r, 3);
        *maxid = LCN_MAX(*maxid, op->job);
        return op;
    }
    if (kind == 4) {
        op->remove = 1;
        return op;
    }
    if (kind <= 6) {
        op->state = xstrdup(rng_below(r, 2) ? "running" : "succeeded");
        op->status = randstr(r, "st");
        op->updated_ms = 5000 + rng_below(r, 1000);
    }
    int ne = (int)rng_below(r, 4);
    for (int i = 0; i < ne; i++)
        store_op_add_event(op, 1 + rng_below(r, 9), randstr(r, "ev"));
    if (kind >= 7) {
        op->n = (int32_t)rng_below(r, 40);
        op->layout = xmalloc(sizeof(struct lcn_pt) * (size_t)(op->n + 1));
        for (int32_t i = 0; i < op->n; i++) {
            op->layout[i].x = (int32_t)rng_u32(r); /* negative and large coordinates too */
            op->layout[i].y = (int32_t)rng_below(r, 1000000);
        }
        op->obj.K = (int32_t)rng_below(r, 500);
        op->obj.nK = (int32_t)rng_below(r, 20);
        op->obj.Phi = (int64_t)rng_u32(r) * 1000;
        op->obj.C = rng_below(r, 100000);
        op->elapsed_s = rng_unit53(r) * 100;
        op->ckpt_seq = rng_below(r, 50);
        op->final = (int)rng_below(r, 2);
    }
    return op;
}

static struct store_op *copy_op(const struct store_op *o)
{
    struct store_op *op = store_op_new(o->job);
    op->create = o->create;
    op->created_ms = o->created_ms;
    if (o->request) {
        op->request = xmalloc(o->request_len + 1);
        memcpy(op->request, o->request, o->request_len + 1);
        op->request_len = o->request_len;
    }
    op->state = o->state ? xstrdup(o->state) : NULL;
    op->status = o->status ? xstrdup(o->status) : NULL;
    op->updated_ms = o->updated_ms;
    for (int32_t i = 0; i < o->n_events; i++)
        store_op_add_event(op, o->events[i].seq, xstrdup(o->events[i].body));
    if (o->layout) {
        op->layout = xmalloc(sizeof(struct lcn_pt) * (size_t)(o->n + 1));
        memcpy(op->layout, o->layout, sizeof(struct lcn_pt) * (size_t)o->n);
    }
    op->n = o->n;
    op->obj = o->obj;
    op->elapsed_s = o->elapsed_s;
    op->ckpt_seq = o->ckpt_seq;
    op->final = o->final;
    op->remove = o->remove;
    op->reserve = o->reserve;
    return op;
}

static void free_list(struct store_op *op)
{
    while (op) {
        struct store_op *next = op->next;
        store_op_free(op);
        op = next;
    }
}

/* 40 random batches of 1-6 ops to both stores (some made to fail at
 * commit on both): after each, the two views are the same. */
static void test_twin(void **state)
{
    (void)state;
    struct any lite = {0}, pg = {0};
    char err[400];
    assert_int_equal(store_open(dbpath, STORE_SYNC_NORMAL, &lite.lite, err, sizeof err), 0);
    assert_int_equal(pg_store_open(url, &pg.pg, err, sizeof err), 0);
    struct lcn_rng r;
    rng_init(&r, 20, 1, RNG_PURPOSE_INIT);
    int64_t maxid = 0, created = 0;
    for (int b = 0; b < 40; b++) {
        struct store_op *a = NULL, **at = &a, *c = NULL, **ct = &c;
        int nops = 1 + (int)rng_below(&r, 6);
        for (int i = 0; i < nops; i++) {
            *at = random_op(&r, &maxid, &created);
            *ct = copy_op(*at);
            at = &(*at)->next;
            ct = &(*ct)->next;
        }
        int fail = b % 9 == 8; /* the whole batch rolls back */
        if (fail) {
            store_fail_commits(lite.lite, 1);
            pg_store_fail_commits(pg.pg, 1);
        }
        int ra = store_apply(lite.lite, a, err, sizeof err);
        int rb = pg_store_apply(pg.pg, c, err, sizeof err);
        assert_int_equal(ra, fail ? LCN_ESTORE : 0);
        assert_int_equal(rb, ra);
        for (struct store_op *x = a, *y = c; x; x = x->next, y = y->next)
            assert_int_equal(x->rc, y->rc);
        free_list(a);
        free_list(c);
        struct view va, vb;
        view_of(&lite, maxid + 2, &va);
        view_of(&pg, maxid + 2, &vb);
        if (strcmp(va.text, vb.text))
            fprintf(stderr, "batch %d:\n--- sqlite\n%s--- postgresql\n%s", b, va.text, vb.text);
        assert_string_equal(va.text, vb.text);
        free(va.text);
        free(vb.text);
    }
    assert_int_equal(pg_store_ping(pg.pg), 0);
    store_close(lite.lite);
    pg_store_close(pg.pg);
}

/* A new database gets the schema at this binary's version; opening again
 * keeps the data; a database written by a newer lcnd is refused with a
 * message that says so; something that is not an lcn database too. */
static void test_migrations(void **state)
{
    (void)state;
    struct pg_store *st;
    char err[400];
    assert_int_equal(pg_store_open(url, &st, err, sizeof err), 0);
    struct store_op *op = store_op_new(7);
    op->create = 1;
    op->request = xstrdup("{}");
    op->request_len = 2;
    op->status = xstrdup("{\"id\":7}");
    assert_int_equal(pg_store_apply(st, op, err, sizeof err), 0);
    store_op_free(op);
    pg_store_close(st);
    assert_int_equal(pg_store_open(url, &st, err, sizeof err), 0);
    assert_int_equal(pg_store_next_id(st), 8);
    pg_store_close(st);

    /* from version 2: the jobs still to run take gpus from their request
     * (issue 18); "all", none, or a request that does not parse: 1 */
    pg_sql("ALTER TABLE jobs DROP COLUMN gpus; UPDATE meta SET value = '2' WHERE key = 'schema_version'");
    const char *bodies[5] = {"{\"solver\":{\"gpus\":2}}", "{\"solver\":{\"gpus\":\"all\"}}", "{}",
                             "not json", "{\"solver\":{\"gpus\":3}}"};
    for (int i = 0; i < 5; i++) {
        char q[256];
        snprintf(q, sizeof q,
                 "INSERT INTO jobs(id, state, created_ms, updated_ms, status) VALUES (%d, '%s', 1, 1, '{}');"
                 "INSERT INTO requests(job, body) VALUES (%d, convert_to('%s', 'UTF8'))",
                 20 + i, i == 4 ? "succeeded" : i == 1 ? "running" : "queued", 20 + i, bodies[i]);
        pg_sql(q);
    }
    assert_int_equal(pg_store_open(url, &st, err, sizeof err), 0);
    pg_store_close(st);
    const int want[5] = {2, 1, 1, 1, 1}; /* 24 has ended: not read */
    for (int i = 0; i < 5; i++) {
        char q[96];
        snprintf(q, sizeof q, "SELECT gpus FROM jobs WHERE id = %d", 20 + i);
        assert_int_equal(pg_int(q), want[i]);
    }

    char sql[128];
    snprintf(sql, sizeof sql, "UPDATE meta SET value = '%d' WHERE key = 'schema_version'",
             pg_store_schema_version() + 1);
    pg_sql(sql);
    err[0] = 0;
    assert_int_equal(pg_store_open(url, &st, err, sizeof err), LCN_ESTORE);
    assert_non_null(strstr(err, "newer than this lcnd"));
    pg_sql("DELETE FROM meta WHERE key = 'schema_version'");
    assert_int_equal(pg_store_open(url, &st, err, sizeof err), LCN_ESTORE);
    assert_non_null(strstr(err, "not an lcn database"));
}

/* store_open with a URL routes every call to the PostgreSQL store; a
 * second opener of the same database is welcome (several daemons share
 * one database, issue 20) and sees the same jobs. */
static void test_dispatch_and_sharing(void **state)
{
    (void)state;
    struct store *st, *other = NULL;
    char err[400] = "";
    assert_int_equal(store_open(url, STORE_SYNC_FULL, &st, err, sizeof err), 0);
    struct store_op *op = store_op_new(3);
    op->create = 1;
    op->request = xstrdup("{\"graph\":1}");
    op->request_len = strlen(op->request);
    op->status = xstrdup("{\"id\":3}");
    store_op_add_event(op, 1, xstrdup("{\"e\":1}"));
    assert_int_equal(store_apply(st, op, err, sizeof err), 0);
    store_op_free(op);
    assert_int_equal(store_next_id(st), 4);
    assert_int_equal(store_last_seq(st, 3), 1);
    assert_int_equal(store_ping(st), 0);
    char *body;
    size_t len;
    assert_int_equal(store_load_request(st, 3, &body, &len), 0);
    assert_string_equal(body, "{\"graph\":1}");
    free(body);
    assert_int_equal(store_open(url, STORE_SYNC_FULL, &other, err, sizeof err), 0);
    assert_true(store_is_shared(other) && store_is_shared(st));
    assert_int_equal(store_next_id(other), 4);
    assert_int_equal(store_last_seq(other, 3), 1);
    store_close(other);
    store_close(st);
}

/* A server that cannot be reached: a clear error, no crash. */
static void test_unreachable(void **state)
{
    (void)state;
    struct pg_store *st = NULL;
    char err[400] = "";
    assert_int_equal(pg_store_open("postgresql://lcn@/lcn?host=/nonexistent-dir", &st, err, sizeof err),
                     LCN_ESTORE);
    assert_null(st);
    assert_non_null(strstr(err, "postgresql store:"));
    assert_true(pg_store_is_url("postgresql://x/y") && pg_store_is_url("postgres://x") &&
                !pg_store_is_url("/var/lib/lcnd/jobs.db"));
}

/* The daemon's sessions ask the server for TCP keepalives on its side too
 * (store_pg.c, PG_OPTIONS): a crashed host's sessions, and the node_name
 * lock one of them holds, end within seconds. Over a Unix socket the server
 * ignores the values (they read as 0), so the test checks where they came
 * from: the client, for every one of them. */
static void test_server_keepalives(void **state)
{
    (void)state;
    char err[400];
    PGconn *c = pg_connect(url, err, sizeof err);
    assert_non_null(c);
    PGresult *r = PQexec(c, "SELECT name, source FROM pg_settings WHERE name IN "
                            "('tcp_keepalives_idle', 'tcp_keepalives_interval', "
                            "'tcp_keepalives_count', 'tcp_user_timeout', 'statement_timeout') "
                            "ORDER BY name");
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    assert_int_equal(PQntuples(r), 5);
    for (int i = 0; i < 5; i++) {
        if (strcmp(PQgetvalue(r, i, 1), "client") != 0)
            fprintf(stderr, "%s: source %s\n", PQgetvalue(r, i, 0), PQgetvalue(r, i, 1));
        assert_string_equal(PQgetvalue(r, i, 1), "client");
    }
    PQclear(r);
    PQfinish(c);
}

/* A server-side disconnect: the next calls reconnect (PQreset). */
static void test_reconnect(void **state)
{
    (void)state;
    struct pg_store *st;
    char err[400];
    assert_int_equal(pg_store_open(url, &st, err, sizeof err), 0);
    pg_sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
           "WHERE datname = 'lcn' AND pid <> pg_backend_pid()");
    /* the first use of each connection may fail (it finds the dead
     * socket); the next ones reset it */
    int ok = 0;
    for (int i = 0; i < 3 && !ok; i++)
        ok = pg_store_ping(st) == 0;
    assert_true(ok);
    struct store_op *op = store_op_new(1);
    op->reserve = 1;
    int rc = pg_store_apply(st, op, err, sizeof err);
    if (rc)
        rc = pg_store_apply(st, op, err, sizeof err);
    assert_int_equal(rc, 0);
    store_op_free(op);
    assert_int_equal(pg_store_next_id(st), 2);
    pg_store_close(st);
}


/* ------------------------------------------------------------ the shared queue */

/* An inserted job (create op) with this backend and created_ms. */
static void insert_job_gpus(struct pg_store *st, int64_t id, const char *backend, int64_t created_ms,
                            int32_t gpus)
{
    char err[400] = "", status[64];
    struct store_op *op = store_op_new(id);
    op->create = 1;
    op->created_ms = created_ms;
    op->request = xstrdup("{}");
    op->request_len = 2;
    op->backend = backend;
    op->gpus = gpus;
    snprintf(status, sizeof status, "{\"id\":%lld}", (long long)id);
    op->status = xstrdup(status);
    assert_int_equal(pg_store_apply(st, op, err, sizeof err), 0);
    store_op_free(op);
}

static void insert_job(struct pg_store *st, int64_t id, const char *backend, int64_t created_ms)
{
    insert_job_gpus(st, id, backend, created_ms, 0);
}

/* A status update under claim; returns op->fenced. */
static int update_under(struct pg_store *st, int64_t id, int64_t claim, const char *status)
{
    char err[400] = "";
    struct store_op *op = store_op_new(id);
    op->claim = claim;
    op->lease_ms = 60000;
    op->state = xstrdup("running");
    op->status = xstrdup(status);
    store_op_add_event(op, 9, xstrdup("{\"e\":9}"));
    assert_int_equal(pg_store_apply(st, op, err, sizeof err), 0);
    int fenced = op->fenced;
    store_op_free(op);
    return fenced;
}

static int got_status(void *ctx, int64_t id, const char *state, const char *status)
{
    (void)id;
    (void)state;
    snprintf(ctx, 64, "%s", status);
    return 0;
}

struct claimed {
    int n;
    int64_t ids[16], claims[16];
    int cancel[16];
    char states[16][16];
};

static void took(void *ctx, const struct pg_queue_row *row)
{
    struct claimed *c = ctx;
    assert_true(c->n < 16);
    c->ids[c->n] = row->id;
    c->claims[c->n] = row->claim;
    c->cancel[c->n] = row->cancel;
    snprintf(c->states[c->n], sizeof c->states[0], "%s", row->state);
    c->n++;
}

/* An op made under a claim is written only while that claim is the job's
 * and its lease has not expired; a release gives the job back. */
static void test_fenced_writes(void **state)
{
    (void)state;
    struct pg_store *st;
    char err[400], status[64];
    assert_int_equal(pg_store_open(url, &st, err, sizeof err), 0);
    insert_job(st, 1, "cpu", 1);
    pg_sql("UPDATE jobs SET claim = 5, lease_until = lcn_now_ms() + 60000 WHERE id = 1");
    assert_int_equal(update_under(st, 1, 5, "{\"v\":1}"), 0);
    assert_int_equal(pg_store_load_job(st, 1, got_status, status), 1);
    assert_string_equal(status, "{\"v\":1}");
    assert_int_equal(pg_store_last_seq(st, 1), 9);
    /* another claim: nothing written */
    assert_int_equal(update_under(st, 1, 6, "{\"v\":2}"), 1);
    assert_int_equal(pg_store_load_job(st, 1, got_status, status), 1);
    assert_string_equal(status, "{\"v\":1}");
    /* the right claim, its lease expired: nothing written either */
    pg_sql("UPDATE jobs SET lease_until = 1 WHERE id = 1");
    assert_int_equal(update_under(st, 1, 5, "{\"v\":3}"), 1);
    assert_int_equal(pg_store_load_job(st, 1, got_status, status), 1);
    assert_string_equal(status, "{\"v\":1}");
    /* a release under the claim gives it back */
    pg_sql("UPDATE jobs SET lease_until = lcn_now_ms() + 60000 WHERE id = 1");
    struct store_op *op = store_op_new(1);
    op->claim = 5;
    op->lease_ms = 60000;
    op->release = 1;
    assert_int_equal(pg_store_apply(st, op, err, sizeof err), 0);
    assert_int_equal(op->fenced, 0);
    store_op_free(op);
    assert_int_equal(pg_store_load_job(st, 2, got_status, status), 0);
    pg_store_close(st);
    struct pg_queue *q;
    assert_int_equal(pg_queue_open(url, "t", 60000, &q, err, sizeof err), 0);
    /* claimable at once: lease 0, no claim */
    const char *b[1] = {"cpu"};
    struct claimed cl = {0};
    assert_int_equal(pg_queue_claim(q, 0, b, 1, 1, 0, 5, took, &cl, err, sizeof err), 1);
    assert_int_equal(cl.ids[0], 1);
    pg_queue_close(q);
}

static void count_row(void *ctx, const struct pg_queue_row *row)
{
    (void)row;
    (*(int *)ctx)++;
}

/* Claims: by backend, interrupted (running, lease expired) first, then the
 * oldest; a DELETE pending only through the cancel claim; a claimed job is
 * not claimed again while its lease holds, and is once it expired; two
 * daemons claiming at once never get the same job (SKIP LOCKED); a job
 * whose run needs more devices than a daemon has is left to another; renewals
 * and id blocks; the rows written since the previous read. */
static void test_claims(void **state)
{
    (void)state;
    struct pg_store *st;
    struct pg_queue *q1, *q2;
    char err[400];
    assert_int_equal(pg_store_open(url, &st, err, sizeof err), 0);
    assert_int_equal(pg_queue_open(url, "d1", 60000, &q1, err, sizeof err), 0);
    assert_int_equal(pg_queue_open(url, "d2", 60000, &q2, err, sizeof err), 0);
    int rows = 0;
    assert_int_equal(pg_queue_changes(q1, count_row, &rows, err, sizeof err), 0);
    insert_job(st, 1, "cpu", 30);
    insert_job(st, 2, "gpu", 10);
    insert_job(st, 3, "auto", 20);
    insert_job(st, 4, "cpu", 40);
    insert_job(st, 5, "cpu", 50);
    /* 4 was running on a daemon that died; 5 has a DELETE pending */
    pg_sql("UPDATE jobs SET state = 'running', claim = 99, lease_until = 1 WHERE id = 4");
    pg_sql("UPDATE jobs SET cancel = true WHERE id = 5");
    rows = 0;
    assert_int_equal(pg_queue_changes(q1, count_row, &rows, err, sizeof err), 5);
    assert_int_equal(rows, 5);
    const char *cpu[2] = {"cpu", "auto"};
    struct claimed a = {0}, b = {0}, k = {0};
    assert_int_equal(pg_queue_claim(q1, 0, cpu, 2, 1, 0, 2, took, &a, err, sizeof err), 2);
    assert_int_equal(a.ids[0], 4); /* interrupted first */
    assert_string_equal(a.states[0], "running");
    assert_int_equal(a.ids[1], 3); /* then the oldest the backend allows */
    assert_true(a.claims[0] > 0 && a.claims[1] > a.claims[0]);
    assert_int_equal(pg_queue_claim(q2, 0, cpu, 2, 1, 0, 5, took, &b, err, sizeof err), 1);
    assert_int_equal(b.ids[0], 1); /* 2 is gpu only, 5 waits for its cancel */
    assert_int_equal(pg_queue_claim(q2, 1, NULL, 0, 0, 0, 5, took, &k, err, sizeof err), 1);
    assert_int_equal(k.ids[0], 5);
    assert_true(k.cancel[0]);
    /* nothing left for cpu; renewals hold the leases */
    struct claimed none = {0};
    assert_int_equal(pg_queue_claim(q2, 0, cpu, 2, 1, 0, 5, took, &none, err, sizeof err), 0);
    assert_int_equal(pg_queue_renew(q1, a.claims, 2, err, sizeof err), 2);
    /* a lease that expired is claimable again, by anyone */
    pg_sql("UPDATE jobs SET lease_until = 1 WHERE id = 3");
    assert_int_equal(pg_queue_renew(q1, a.claims, 2, err, sizeof err), 1);
    struct claimed again = {0};
    assert_int_equal(pg_queue_claim(q2, 0, cpu, 2, 1, 0, 5, took, &again, err, sizeof err), 1);
    assert_int_equal(again.ids[0], 3);
    /* what a job needs to run */
    char *body = NULL;
    size_t len = 0;
    struct store_checkpoint ck;
    int have = 1;
    int64_t last = -1;
    assert_int_equal(pg_queue_load(q2, 3, &body, &len, &ck, &have, &last, err, sizeof err), 0);
    assert_string_equal(body, "{}");
    assert_int_equal(have, 0);
    assert_int_equal(last, 0);
    free(body);
    /* a run across 3 devices: not for a daemon with 0, 1 or 2 (issue 18), for one with 3 */
    insert_job_gpus(st, 6, "gpu", 60, 3);
    const char *gpu[2] = {"gpu", "auto"};
    struct claimed few = {0}, enough = {0};
    assert_int_equal(pg_queue_claim(q1, 0, gpu, 2, 0, 1, 5, took, &few, err, sizeof err), 1);
    assert_int_equal(few.ids[0], 2); /* the one-device gpu job */
    assert_int_equal(pg_queue_claim(q1, 0, gpu, 2, 2, 2, 5, took, &few, err, sizeof err), 0);
    assert_int_equal(pg_queue_claim(q2, 0, gpu, 2, 3, 3, 5, took, &enough, err, sizeof err), 1);
    assert_int_equal(enough.ids[0], 6);
    /* a newer one-device gpu job waits behind an older two-device one for a
     * daemon with two healthy devices, one idle (no starvation of the
     * older); a daemon that could never run the older takes it */
    insert_job_gpus(st, 7, "gpu", 70, 2);
    insert_job_gpus(st, 8, "gpu", 80, 1);
    struct claimed held = {0}, other = {0};
    assert_int_equal(pg_queue_claim(q1, 0, gpu, 2, 1, 2, 5, took, &held, err, sizeof err), 0);
    assert_int_equal(pg_queue_claim(q2, 0, gpu, 2, 1, 1, 5, took, &other, err, sizeof err), 1);
    assert_int_equal(other.ids[0], 8);
    /* ids in blocks, never twice */
    int64_t f1, f2;
    assert_int_equal(pg_queue_ids(q1, 64, &f1, err, sizeof err), 0);
    assert_int_equal(pg_queue_ids(q2, 64, &f2, err, sizeof err), 0);
    assert_true(f1 >= 9 && (f2 >= f1 + 64 || f1 >= f2 + 64));
    /* a previous life of d1 gives its claims back */
    assert_int_equal(pg_queue_release_owner(q1, err, sizeof err), 2); /* 4 and 2 */
    rows = 0;
    assert_true(pg_queue_changes(q1, count_row, &rows, err, sizeof err) >= 5);
    pg_queue_close(q1);
    pg_queue_close(q2);
    pg_store_close(st);
}

int main(void)
{
    url = getenv("LCN_TEST_PG_URL");
    if (!url || !*url) {
        printf("SKIP: LCN_TEST_PG_URL is not set (run under tests/pg/with-postgres.sh)\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_twin, setup, teardown),
        cmocka_unit_test_setup_teardown(test_migrations, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unreachable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dispatch_and_sharing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_server_keepalives, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reconnect, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fenced_writes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_claims, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
