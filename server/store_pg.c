/*
 * store_pg.c - the job store in PostgreSQL through libpq (store_pg.h).
 * Every statement is parameterised; numbers travel as text, request bodies
 * and layouts as bytea (sent in binary, read back with PQunescapeBytea).
 */
#include "server/store_pg.h"
#include "server/store_pg_sql.h"

#include <libpq-fe.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "server/store_blob.h"
#include "job.h"
#include "util.h"

/* The schema, one migration per version: migrations[v - 1] takes a database
 * from version v - 1 to v. Append, never edit. */
static const char *const migrations[] = {
    /* 1: the SQLite store's tables */
    "CREATE TABLE meta(key text PRIMARY KEY, value text NOT NULL);"
    "CREATE TABLE jobs(id bigint PRIMARY KEY, state text NOT NULL, created_ms bigint NOT NULL,"
    " updated_ms bigint NOT NULL, status text NOT NULL);"
    "CREATE TABLE requests(job bigint PRIMARY KEY, body bytea NOT NULL);"
    "CREATE TABLE events(job bigint NOT NULL, seq bigint NOT NULL, body text NOT NULL,"
    " PRIMARY KEY(job, seq));"
    "CREATE TABLE checkpoints(job bigint PRIMARY KEY, seq bigint NOT NULL,"
    " elapsed_s double precision NOT NULL, k integer NOT NULL, nk integer NOT NULL,"
    " phi bigint NOT NULL, c bigint NOT NULL, final integer NOT NULL, n integer NOT NULL,"
    " layout bytea NOT NULL);"
    "INSERT INTO meta(key, value) VALUES ('next_id', '1');",
    /* 2: the shared queue (store_pg_queue.c): who runs a job (owner, the
     * claim that fences its writes, the lease), a DELETE through another
     * daemon (cancel), what claims filter on (backend), and txid, the
     * transaction that last wrote the row, which the daemons follow */
    "ALTER TABLE jobs ADD COLUMN backend text NOT NULL DEFAULT 'auto',"
    " ADD COLUMN owner text, ADD COLUMN claim bigint,"
    " ADD COLUMN lease_until bigint NOT NULL DEFAULT 0,"
    " ADD COLUMN cancel boolean NOT NULL DEFAULT false, ADD COLUMN txid xid8;"
    "CREATE SEQUENCE claims;"
    "CREATE FUNCTION lcn_now_ms() RETURNS bigint LANGUAGE sql VOLATILE AS"
    " $$SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint$$;"
    "CREATE FUNCTION lcn_jobs_txid() RETURNS trigger LANGUAGE plpgsql AS"
    " $$BEGIN NEW.txid := pg_current_xact_id(); RETURN NEW; END$$;"
    "CREATE TRIGGER jobs_txid BEFORE INSERT OR UPDATE ON jobs FOR EACH ROW"
    " EXECUTE FUNCTION lcn_jobs_txid();"
    "UPDATE jobs SET txid = pg_current_xact_id();"
    "CREATE INDEX jobs_by_txid ON jobs(txid);"
    "CREATE INDEX jobs_active ON jobs(created_ms, id) WHERE state IN ('queued', 'running');",
    /* 3: the devices a job's one run needs (solver.gpus; 1 for "all"):
     * a daemon claims only what its devices can run (issue 18). The jobs
     * still to run take it from their request; a request that does not
     * parse keeps 1 (it fails where it is claimed, as before) */
    "ALTER TABLE jobs ADD COLUMN gpus integer NOT NULL DEFAULT 1;"
    "DO $$DECLARE r record; BEGIN"
    " FOR r IN SELECT j.id, q.body FROM jobs j JOIN requests q ON q.job = j.id"
    "  WHERE j.state IN ('queued', 'running') LOOP"
    "  BEGIN"
    "   UPDATE jobs SET gpus = GREATEST(1, LEAST(65536,"
    "    (convert_from(r.body, 'UTF8')::jsonb #>> '{solver,gpus}')::numeric))::integer"
    "    WHERE id = r.id"
    "    AND jsonb_typeof(convert_from(r.body, 'UTF8')::jsonb #> '{solver,gpus}') = 'number';"
    "  EXCEPTION WHEN OTHERS THEN NULL;"
    "  END;"
    " END LOOP; END$$;",
};
#define PG_SCHEMA_VERSION ((int)LCN_ARRAY_LEN(migrations))
#define PG_MIGRATION_LOCK 0x6c636e31 /* "lcn1": the advisory lock of migrations */

struct pg_store {
    PGconn *w;             /* writes: the store thread */
    PGconn *r;             /* reads: any thread, under rmu */
    pthread_mutex_t rmu;
    atomic_int fail_commits; /* test hook (store_fail_commits) */
    /* set by pg_store_heal_elsewhere: a read whose connection dropped
     * fails at once, and pg_store_heal (another thread) reconnects, so
     * that the loop never waits for a connection attempt */
    atomic_int heal_elsewhere;
    char *url;
};

/* libpq's message without its trailing newline. */
void pg_conn_error(PGconn *c, char *err, size_t errlen)
{
    const char *m = c ? PQerrorMessage(c) : "out of memory";
    size_t n = strlen(m);
    while (n > 0 && (m[n - 1] == '\n' || m[n - 1] == ' '))
        n--;
    lcn_errmsg(err, errlen, "%.*s", (int)n, m);
}

int pg_store_is_url(const char *url)
{
    return url && (!strncmp(url, "postgresql://", 13) || !strncmp(url, "postgres://", 11));
}

int pg_store_schema_version(void)
{
    return PG_SCHEMA_VERSION;
}


/* A connection that is usable now: reset once when the server dropped it. */
static int conn_ok(PGconn *c)
{
    if (PQstatus(c) == CONNECTION_OK)
        return 1;
    PQreset(c);
    return PQstatus(c) == CONNECTION_OK;
}

/*
 * Runs sql with n parameters (text, except the ones whose lens[i] >= 0:
 * binary of that length). Returns the result (the caller clears it) when it
 * succeeded, else NULL with the message in err.
 */
PGresult *pg_run(PGconn *c, const char *sql, int n, const char *const *vals, const int *lens,
                     char *err, size_t errlen)
{
    int fmts[16], ls[16];
    LCN_ASSERT(n <= 16);
    for (int i = 0; i < n; i++) {
        fmts[i] = lens && lens[i] >= 0;
        ls[i] = lens && lens[i] >= 0 ? lens[i] : 0;
    }
    /* no parameters: the simple protocol, which also runs a migration's
     * several statements */
    PGresult *res = n ? PQexecParams(c, sql, n, NULL, vals, ls, fmts, 0) : PQexec(c, sql);
    ExecStatusType s = PQresultStatus(res);
    if (s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK)
        return res;
    if (res && PQresultErrorMessage(res)[0]) {
        const char *m = PQresultErrorMessage(res);
        size_t k = strlen(m);
        while (k > 0 && m[k - 1] == '\n')
            k--;
        lcn_errmsg(err, errlen, "%.*s", (int)k, m);
    } else {
        pg_conn_error(c, err, errlen);
    }
    PQclear(res);
    return NULL;
}

/* run for statements whose result is not needed: 0 or LCN_ESTORE. */
int pg_exec(PGconn *c, const char *sql, int n, const char *const *vals, const int *lens,
                char *err, size_t errlen)
{
    PGresult *res = pg_run(c, sql, n, vals, lens, err, errlen);
    PQclear(res);
    return res ? 0 : LCN_ESTORE;
}

/* ------------------------------------------------------------ schema */

/* The version the database is at: 0 when it has no meta table yet. */
static int db_version(PGconn *c, int *v, char *err, size_t errlen)
{
    PGresult *res = pg_run(c, "SELECT to_regclass('meta') IS NOT NULL", 0, NULL, NULL, err, errlen);
    if (!res)
        return LCN_ESTORE;
    int has_meta = PQgetvalue(res, 0, 0)[0] == 't';
    PQclear(res);
    *v = 0;
    if (!has_meta)
        return 0;
    res = pg_run(c, "SELECT value FROM meta WHERE key = 'schema_version'", 0, NULL, NULL, err, errlen);
    if (!res)
        return LCN_ESTORE;
    int rc = 0;
    if (PQntuples(res) != 1) {
        lcn_errmsg(err, errlen, "table meta has no schema_version: not an lcn database");
        rc = LCN_ESTORE;
    } else {
        *v = atoi(PQgetvalue(res, 0, 0));
    }
    PQclear(res);
    return rc;
}

/* Creates or migrates the schema in one transaction under an advisory lock;
 * refuses a database newer than this binary. */
static int migrate(PGconn *c, char *err, size_t errlen)
{
    char lock[32];
    snprintf(lock, sizeof lock, "%d", PG_MIGRATION_LOCK);
    const char *lv[1] = {lock};
    int v = 0;
    int rc = pg_exec(c, "BEGIN", 0, NULL, NULL, err, errlen);
    if (!rc)
        rc = pg_exec(c, "SELECT pg_advisory_xact_lock($1::bigint)", 1, lv, NULL, err, errlen);
    if (!rc)
        rc = db_version(c, &v, err, errlen);
    if (!rc && v > PG_SCHEMA_VERSION) {
        lcn_errmsg(err, errlen,
            "the database's schema version is %d, newer than this lcnd's %d: upgrade lcnd", v,
            PG_SCHEMA_VERSION);
        rc = LCN_ESTORE;
    }
    for (int k = v; !rc && k < PG_SCHEMA_VERSION; k++)
        rc = pg_exec(c, migrations[k], 0, NULL, NULL, err, errlen);
    if (!rc && v < PG_SCHEMA_VERSION) {
        char ver[16];
        snprintf(ver, sizeof ver, "%d", PG_SCHEMA_VERSION);
        const char *vv[1] = {ver};
        rc = pg_exec(c,
                  "INSERT INTO meta(key, value) VALUES ('schema_version', $1) "
                  "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                  1, vv, NULL, err, errlen);
    }
    if (!rc)
        rc = pg_exec(c, "COMMIT", 0, NULL, NULL, err, errlen);
    if (rc)
        pg_exec(c, "ROLLBACK", 0, NULL, NULL, NULL, 0);
    return rc;
}

/* Seconds a connection attempt (and a reconnection, PQreset) may take
 * unless the URL says otherwise: a database that is down costs a caller
 * this long, not the system's TCP connect timeout of minutes. */
#define PG_CONNECT_TIMEOUT "2"

/*
 * And a peer that stops answering on an open connection: TCP keepalives
 * and tcp_user_timeout (ms) end the wait for a dead host or network within
 * about 5 s, statement_timeout (ms) one for a database that is up but
 * blocked, instead of the kernel's minutes. These bound the reads the loop
 * makes itself (a job this daemon has not seen yet, a progress page). The
 * server gets the same keepalives for its side (tcp_keepalives_*,
 * tcp_user_timeout): when this daemon's host dies, its sessions end within
 * about 10 s and with them the node_name lock (store_pg_queue.c), which the
 * daemon restarted after the crash waits for, instead of hours.
 */
#define PG_TCP_USER_TIMEOUT "5000"
#define PG_OPTIONS                                                                     \
    "-c statement_timeout=10000 -c tcp_keepalives_idle=5 -c tcp_keepalives_interval=2 " \
    "-c tcp_keepalives_count=2 -c tcp_user_timeout=5000"

PGconn *pg_connect(const char *url, char *err, size_t errlen)
{
    /* the URL expands over the defaults (expand_dbname): its own settings win */
    const char *const keys[] = {"connect_timeout", "keepalives", "keepalives_idle",
                                "keepalives_interval", "keepalives_count", "tcp_user_timeout",
                                "options", "dbname", NULL};
    const char *const vals[] = {PG_CONNECT_TIMEOUT, "1", "5", "2", "2", PG_TCP_USER_TIMEOUT,
                                PG_OPTIONS, url, NULL};
    PGconn *c = PQconnectdbParams(keys, vals, 1);
    if (PQstatus(c) != CONNECTION_OK) {
        pg_conn_error(c, err, errlen);
        PQfinish(c);
        return NULL;
    }
    /* notices (e.g. "relation exists") stay out of the daemon's stderr */
    PQsetNoticeProcessor(c, NULL, NULL);
    return c;
}

void pg_store_close(struct pg_store *st)
{
    if (!st)
        return;
    PQfinish(st->w);
    PQfinish(st->r);
    pthread_mutex_destroy(&st->rmu);
    free(st->url);
    free(st);
}

int pg_store_open(const char *url, struct pg_store **out, char *err, size_t errlen)
{
    *out = NULL;
    struct pg_store *st = xcalloc(1, sizeof *st);
    pthread_mutex_init(&st->rmu, NULL);
    st->url = xstrdup(url);
    char why[400] = "";
    int rc = (st->w = pg_connect(url, why, sizeof why)) ? 0 : LCN_ESTORE;
    if (!rc)
        rc = migrate(st->w, why, sizeof why);
    if (!rc && !(st->r = pg_connect(url, why, sizeof why)))
        rc = LCN_ESTORE;
    if (rc) {
        lcn_errmsg(err, errlen, "postgresql store: %s", why);
        pg_store_close(st);
        return LCN_ESTORE;
    }
    *out = st;
    return 0;
}

/* ------------------------------------------------------------ writes */

struct num {
    char s[32];
};

static const char *num(struct num *n, int64_t v)
{
    snprintf(n->s, sizeof n->s, "%lld", (long long)v);
    return n->s;
}

/* next_id > job, in the transaction that uses the id */
static int bump_id(PGconn *c, int64_t job, char *err, size_t errlen)
{
    struct num a;
    const char *v[1] = {num(&a, job)};
    return pg_exec(c,
                "UPDATE meta SET value = ($1::bigint + 1)::text WHERE key = 'next_id' "
                "AND value::bigint <= $1::bigint",
                1, v, NULL, err, errlen);
}

static int apply_job_row(PGconn *c, const struct store_op *op, char *err, size_t errlen)
{
    struct num a, b, d;
    if (op->create) {
        const char *v[4] = {num(&a, op->job), op->state ? op->state : "queued",
                            num(&b, op->created_ms), op->status ? op->status : "{}"};
        const char *rq[2] = {a.s, op->request ? op->request : ""};
        const int rl[2] = {-1, (int)op->request_len};
        const char *vb[6] = {v[0], v[1], v[2], v[3], op->backend ? op->backend : "auto",
                             num(&d, op->gpus > 1 ? op->gpus : 1)};
        if (pg_exec(c,
                 "INSERT INTO jobs(id, state, created_ms, updated_ms, status, backend, gpus) "
                 "VALUES ($1, $2, $3, $3, $4, $5, $6)",
                 6, vb, NULL, err, errlen) ||
            pg_exec(c, "SELECT pg_notify('lcn_queue', $1)", 1, v, NULL, err, errlen) ||
            pg_exec(c, "INSERT INTO requests(job, body) VALUES ($1, $2)", 2, rq, rl, err, errlen))
            return LCN_ESTORE;
        return bump_id(c, op->job, err, errlen);
    }
    if (op->reserve)
        return bump_id(c, op->job, err, errlen);
    if (op->status) {
        const char *v[4] = {num(&a, op->job), op->state ? op->state : "", op->status,
                            num(&d, op->updated_ms)};
        return pg_exec(c, "UPDATE jobs SET state = $2, status = $3, updated_ms = $4 WHERE id = $1", 4,
                    v, NULL, err, errlen);
    }
    return 0;
}

static int apply_checkpoint(PGconn *c, const struct store_op *op, char *err, size_t errlen)
{
    struct num j, s, k, nk, phi, cc, fin, n;
    char el[40];
    snprintf(el, sizeof el, "%.17g", op->elapsed_s);
    size_t bytes = 0;
    void *blob = store_layout_blob(op->layout, op->n, &bytes);
    const char *v[10] = {num(&j, op->job),     num(&s, op->ckpt_seq), el,
                         num(&k, op->obj.K),   num(&nk, op->obj.nK),  num(&phi, op->obj.Phi),
                         num(&cc, op->obj.C),  num(&fin, op->final),  num(&n, op->n),
                         (const char *)blob};
    const int l[10] = {-1, -1, -1, -1, -1, -1, -1, -1, -1, (int)bytes};
    int rc = pg_exec(c,
                  "INSERT INTO checkpoints(job, seq, elapsed_s, k, nk, phi, c, final, n, layout) "
                  "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (job) DO UPDATE SET "
                  "seq = EXCLUDED.seq, elapsed_s = EXCLUDED.elapsed_s, k = EXCLUDED.k, "
                  "nk = EXCLUDED.nk, phi = EXCLUDED.phi, c = EXCLUDED.c, final = EXCLUDED.final, "
                  "n = EXCLUDED.n, layout = EXCLUDED.layout",
                  10, v, l, err, errlen);
    free(blob);
    return rc;
}

/* The fence of an op that belongs to a claim (store.h): renews the lease
 * and sets *held when the claim is still the job's and its lease has not
 * expired. */
static int fence(PGconn *c, const struct store_op *op, int *held, char *err, size_t errlen)
{
    struct num a, b, l;
    const char *v[3] = {num(&a, op->job), num(&b, op->claim), num(&l, op->lease_ms)};
    PGresult *res = pg_run(c,
                           "UPDATE jobs SET lease_until = lcn_now_ms() + $3 WHERE id = $1 "
                           "AND claim = $2 AND lease_until > lcn_now_ms() RETURNING 1",
                           3, v, NULL, err, errlen);
    if (!res)
        return LCN_ESTORE;
    *held = PQntuples(res) == 1;
    PQclear(res);
    return 0;
}

/* A DELETE through a daemon that does not run the job: the cancel column,
 * which the daemon that runs it (or claims it next) acts on. */
static int apply_cancel_flag(PGconn *c, const struct store_op *op, char *err, size_t errlen)
{
    struct num a;
    const char *v[1] = {num(&a, op->job)};
    return pg_exec(c,
                   "UPDATE jobs SET cancel = true WHERE id = $1 AND state IN ('queued', 'running')",
                   1, v, NULL, err, errlen) ||
                   pg_exec(c, "SELECT pg_notify('lcn_cancel', $1)", 1, v, NULL, err, errlen)
               ? LCN_ESTORE
               : 0;
}

static int apply_one(PGconn *c, struct store_op *op, char *err, size_t errlen)
{
    op->fenced = 0;
    if (op->claim > 0) {
        int held = 0;
        if (fence(c, op, &held, err, errlen))
            return LCN_ESTORE;
        if (!held) {
            op->fenced = 1; /* another daemon's now, or lost: write nothing */
            return 0;
        }
    }
    if (op->cancel_flag && apply_cancel_flag(c, op, err, errlen))
        return LCN_ESTORE;
    if (apply_job_row(c, op, err, errlen))
        return LCN_ESTORE;
    struct num a, b;
    for (int32_t i = 0; i < op->n_events; i++) {
        const char *v[3] = {num(&a, op->job), num(&b, op->events[i].seq), op->events[i].body};
        if (pg_exec(c,
                 "INSERT INTO events(job, seq, body) VALUES ($1, $2, $3) "
                 "ON CONFLICT (job, seq) DO UPDATE SET body = EXCLUDED.body",
                 3, v, NULL, err, errlen))
            return LCN_ESTORE;
    }
    if (op->layout && apply_checkpoint(c, op, err, errlen))
        return LCN_ESTORE;
    if (op->release) {
        struct num r;
        const char *v[2] = {num(&a, op->job), num(&r, op->claim)};
        if (pg_exec(c,
                    "UPDATE jobs SET owner = NULL, claim = NULL, lease_until = 0 "
                    "WHERE id = $1 AND claim = $2",
                    2, v, NULL, err, errlen))
            return LCN_ESTORE;
    }
    if (op->remove) {
        static const char *const del[] = {
            "DELETE FROM jobs WHERE id = $1", "DELETE FROM requests WHERE job = $1",
            "DELETE FROM events WHERE job = $1", "DELETE FROM checkpoints WHERE job = $1"};
        const char *v[1] = {num(&a, op->job)};
        for (size_t i = 0; i < LCN_ARRAY_LEN(del); i++)
            if (pg_exec(c, del[i], 1, v, NULL, err, errlen))
                return LCN_ESTORE;
    }
    return 0;
}

int pg_store_apply(struct pg_store *st, struct store_op *ops, char *err, size_t errlen)
{
    char why[400] = "";
    int rc = conn_ok(st->w) ? pg_exec(st->w, "BEGIN", 0, NULL, NULL, why, sizeof why) : LCN_ESTORE;
    if (rc && !why[0])
        pg_conn_error(st->w, why, sizeof why);
    for (struct store_op *op = ops; op && !rc; op = op->next) {
        op->rc = apply_one(st->w, op, why, sizeof why);
        if (op->rc) {
            char m[400], id[24];
            job_id_format(op->job, id, sizeof id);
            snprintf(m, sizeof m, "job %s: %s", id, why);
            snprintf(why, sizeof why, "%s", m);
            rc = op->rc;
        }
    }
    if (!rc && atomic_load(&st->fail_commits) > 0 && atomic_fetch_sub(&st->fail_commits, 1) > 0) {
        snprintf(why, sizeof why, "injected commit failure (store_fail_commits)");
        rc = LCN_ESTORE;
    }
    if (!rc)
        rc = pg_exec(st->w, "COMMIT", 0, NULL, NULL, why, sizeof why);
    if (rc) {
        if (PQstatus(st->w) == CONNECTION_OK)
            pg_exec(st->w, "ROLLBACK", 0, NULL, NULL, NULL, 0);
        for (struct store_op *op = ops; op; op = op->next)
            op->rc = LCN_ESTORE;
        lcn_errmsg(err, errlen, "%s", why);
    }
    return rc;
}

void pg_store_fail_commits(struct pg_store *st, int n)
{
    atomic_store(&st->fail_commits, n);
}

/* ------------------------------------------------------------ reads */

/* A read on the shared read connection: the result, or NULL. */
static PGresult *read_q(struct pg_store *st, const char *sql, int n, const char *const *vals)
{
    pthread_mutex_lock(&st->rmu);
    int ok = PQstatus(st->r) == CONNECTION_OK || (!atomic_load(&st->heal_elsewhere) && conn_ok(st->r));
    PGresult *res = ok ? pg_run(st->r, sql, n, vals, NULL, NULL, 0) : NULL;
    pthread_mutex_unlock(&st->rmu);
    return res;
}

void pg_store_heal_elsewhere(struct pg_store *st)
{
    atomic_store(&st->heal_elsewhere, 1);
}

int pg_store_heal(struct pg_store *st, int force)
{
    pthread_mutex_lock(&st->rmu);
    int ok = PQstatus(st->r) == CONNECTION_OK;
    pthread_mutex_unlock(&st->rmu);
    if (ok && !force)
        return 0;
    /* connect without the mutex (readers fail fast meanwhile), then swap */
    PGconn *c = pg_connect(st->url, NULL, 0);
    if (!c)
        return LCN_ESTORE;
    pthread_mutex_lock(&st->rmu);
    PGconn *old = st->r;
    st->r = c;
    pthread_mutex_unlock(&st->rmu);
    PQfinish(old);
    return 0;
}

int pg_store_load_jobs(struct pg_store *st, store_job_cb cb, void *ctx)
{
    PGresult *res = read_q(st, "SELECT id, state, status FROM jobs ORDER BY id", 0, NULL);
    if (!res)
        return LCN_ESTORE;
    for (int i = 0; i < PQntuples(res); i++)
        if (cb(ctx, strtoll(PQgetvalue(res, i, 0), NULL, 10), PQgetvalue(res, i, 1),
               PQgetvalue(res, i, 2)))
            break;
    PQclear(res);
    return 0;
}

int pg_store_load_job(struct pg_store *st, int64_t job, store_job_cb cb, void *ctx)
{
    struct num a;
    const char *v[1] = {num(&a, job)};
    PGresult *res = read_q(st, "SELECT id, state, status FROM jobs WHERE id = $1", 1, v);
    if (!res)
        return LCN_ESTORE;
    int found = PQntuples(res) == 1;
    if (found)
        cb(ctx, job, PQgetvalue(res, 0, 1), PQgetvalue(res, 0, 2));
    PQclear(res);
    return found;
}

unsigned char *pg_bytea(const PGresult *res, int row, int col, size_t *len)
{
    unsigned char *raw = PQunescapeBytea((const unsigned char *)PQgetvalue(res, row, col), len);
    if (!raw)
        return NULL;
    unsigned char *out = xmalloc(*len + 1);
    memcpy(out, raw, *len);
    out[*len] = 0;
    PQfreemem(raw);
    return out;
}

int pg_store_load_request(struct pg_store *st, int64_t job, char **body, size_t *len)
{
    struct num a;
    const char *v[1] = {num(&a, job)};
    PGresult *res = read_q(st, "SELECT body FROM requests WHERE job = $1", 1, v);
    if (!res)
        return LCN_ESTORE;
    int rc = LCN_ENOTFOUND;
    if (PQntuples(res) == 1) {
        *body = (char *)pg_bytea(res, 0, 0, len);
        rc = *body ? 0 : LCN_ESTORE;
    }
    PQclear(res);
    return rc;
}

int pg_checkpoint_row(const PGresult *res, struct store_checkpoint *ck)
{
    ck->seq = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    ck->elapsed_s = strtod(PQgetvalue(res, 0, 1), NULL);
    ck->obj.K = (int32_t)strtol(PQgetvalue(res, 0, 2), NULL, 10);
    ck->obj.nK = (int32_t)strtol(PQgetvalue(res, 0, 3), NULL, 10);
    ck->obj.Phi = strtoll(PQgetvalue(res, 0, 4), NULL, 10);
    ck->obj.C = strtoll(PQgetvalue(res, 0, 5), NULL, 10);
    ck->final = (int)strtol(PQgetvalue(res, 0, 6), NULL, 10);
    ck->n = (int32_t)strtol(PQgetvalue(res, 0, 7), NULL, 10);
    size_t bytes = 0;
    unsigned char *b = pg_bytea(res, 0, 8, &bytes);
    int rc = 0;
    if (!b || ck->n < 0 || (int64_t)bytes != (int64_t)ck->n * 8) {
        rc = LCN_ESTORE;
    } else {
        ck->layout = xmalloc(sizeof *ck->layout * (size_t)(ck->n + 1));
        store_blob_layout(b, ck->n, ck->layout);
    }
    free(b);
    return rc;
}

int pg_store_load_checkpoint(struct pg_store *st, int64_t job, struct store_checkpoint *ck)
{
    memset(ck, 0, sizeof *ck);
    struct num a;
    const char *v[1] = {num(&a, job)};
    PGresult *res = read_q(st, PG_SQL_CHECKPOINT, 1, v);
    if (!res)
        return LCN_ESTORE;
    int rc = PQntuples(res) == 1 ? pg_checkpoint_row(res, ck) : LCN_ENOTFOUND;
    PQclear(res);
    return rc;
}

int pg_store_load_events(struct pg_store *st, int64_t job, int64_t after, int limit,
                         store_event_cb cb, void *ctx)
{
    struct num a, b, c;
    const char *v[3] = {num(&a, job), num(&b, after), num(&c, limit)};
    PGresult *res = read_q(st,
                           "SELECT seq, body FROM events WHERE job = $1 AND seq > $2 "
                           "ORDER BY seq LIMIT $3",
                           3, v);
    if (!res)
        return LCN_ESTORE;
    int count = PQntuples(res);
    for (int i = 0; i < count; i++)
        cb(ctx, strtoll(PQgetvalue(res, i, 0), NULL, 10), PQgetvalue(res, i, 1));
    PQclear(res);
    return count;
}

/* The first column of the one row of a read as an integer, or LCN_ESTORE. */
static int64_t read_int(struct pg_store *st, const char *sql, int n, const char *const *vals)
{
    PGresult *res = read_q(st, sql, n, vals);
    int64_t v = res && PQntuples(res) == 1 ? strtoll(PQgetvalue(res, 0, 0), NULL, 10) : LCN_ESTORE;
    PQclear(res);
    return v;
}

int64_t pg_store_last_seq(struct pg_store *st, int64_t job)
{
    struct num a;
    const char *v[1] = {num(&a, job)};
    return read_int(st, "SELECT coalesce(max(seq), 0) FROM events WHERE job = $1", 1, v);
}

int64_t pg_store_next_id(struct pg_store *st)
{
    int64_t v = read_int(st, "SELECT value::bigint FROM meta WHERE key = 'next_id'", 0, NULL);
    return v > 0 ? v : LCN_ESTORE;
}

int pg_store_ping(struct pg_store *st)
{
    return read_int(st, "SELECT 1", 0, NULL) == 1 ? 0 : LCN_ESTORE;
}
