#include "server/store.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <sqlite3.h>

#include "err.h"
#include "server/store_blob.h"
#include "job.h"
#include "server/store_pg.h"
#include "util.h"

/* 2: meta holds next_id (version 1 databases are migrated at open) */
#define STORE_SCHEMA_VERSION "2"

/*
 * The prepared statements: a name and its SQL per row. The writes run on
 * the write connection, the reads on the read and blob connections; each
 * list gives both the enum of names and the table of SQL.
 */
#define STORE_WRITES(X)                                                                            \
    X(Q_INSERT_JOB, "INSERT INTO jobs(id, state, created_ms, updated_ms, status) "                 \
                    "VALUES (?1, ?2, ?3, ?3, ?4)")                                                 \
    X(Q_INSERT_REQUEST, "INSERT INTO requests(job, body) VALUES (?1, ?2)")                         \
    X(Q_UPDATE_JOB, "UPDATE jobs SET state = ?2, status = ?3, updated_ms = ?4 WHERE id = ?1")      \
    X(Q_INSERT_EVENT, "INSERT OR REPLACE INTO events(job, seq, body) VALUES (?1, ?2, ?3)")         \
    X(Q_UPSERT_CKPT, "INSERT OR REPLACE INTO checkpoints(job, seq, elapsed_s, K, nK, Phi, C, "     \
                     "final, n, layout) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)")         \
    X(Q_DELETE_JOB, "DELETE FROM jobs WHERE id = ?1")                                              \
    X(Q_DELETE_REQUEST, "DELETE FROM requests WHERE job = ?1")                                     \
    X(Q_DELETE_EVENTS, "DELETE FROM events WHERE job = ?1")                                        \
    X(Q_DELETE_CKPT, "DELETE FROM checkpoints WHERE job = ?1")                                     \
    X(Q_BUMP_ID, "UPDATE meta SET value = ?1 + 1 WHERE key = 'next_id' "                           \
                 "AND CAST(value AS INTEGER) <= ?1")

#define STORE_READS(X)                                                                             \
    X(R_REQUEST, "SELECT body FROM requests WHERE job = ?1")                                       \
    X(R_CKPT, "SELECT seq, elapsed_s, K, nK, Phi, C, final, n, layout FROM checkpoints "           \
              "WHERE job = ?1")                                                                    \
    X(R_EVENTS, "SELECT seq, body FROM events WHERE job = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3")  \
    X(R_LAST_SEQ, "SELECT coalesce(max(seq), 0) FROM events WHERE job = ?1")                       \
    X(R_PING, "SELECT count(*) FROM meta")                                                         \
    X(R_NEXT_ID, "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'next_id'")

#define STMT_NAME(name, sql) name,
#define STMT_SQL(name, sql)  [name] = sql,
enum { STORE_WRITES(STMT_NAME) Q_COUNT_W };
enum { STORE_READS(STMT_NAME) Q_COUNT_R };
static const char *const wsql[Q_COUNT_W] = {STORE_WRITES(STMT_SQL)};
static const char *const rsql[Q_COUNT_R] = {STORE_READS(STMT_SQL)};
#undef STMT_NAME
#undef STMT_SQL

static const char *const schema =
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE jobs(id INTEGER PRIMARY KEY, state TEXT NOT NULL,"
    " created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL, status TEXT NOT NULL);"
    "CREATE TABLE requests(job INTEGER PRIMARY KEY, body BLOB NOT NULL);"
    "CREATE TABLE events(job INTEGER NOT NULL, seq INTEGER NOT NULL,"
    " body TEXT NOT NULL, PRIMARY KEY(job, seq)) WITHOUT ROWID;"
    "CREATE TABLE checkpoints(job INTEGER PRIMARY KEY, seq INTEGER NOT NULL,"
    " elapsed_s REAL NOT NULL, K INTEGER NOT NULL, nK INTEGER NOT NULL, Phi INTEGER NOT NULL,"
    " C INTEGER NOT NULL, final INTEGER NOT NULL, n INTEGER NOT NULL, layout BLOB NOT NULL);"
    "INSERT INTO meta(key, value) VALUES ('schema_version', '" STORE_SCHEMA_VERSION "'),"
    " ('next_id', '1');";

/* w: writes (store thread); r: short reads (loop); b: blob reads (thread pool) */
/*
 * WAL checkpoints off the commit path. SQLite's default copies the WAL back
 * into the database inside the commit that pushes it past 1,000 pages; a
 * job's request of tens of MB made that commit (and every client waiting
 * on it: a DELETE, the terminal state of a job) wait hundreds of ms. The
 * write connection's hook only signals this thread, which checkpoints
 * (PASSIVE: never blocking the writer or the readers) on its own
 * connection.
 */
struct checkpointer {
    pthread_t th;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int due, quit; /* under mu */
    sqlite3 *db;
};

#define WAL_CHECKPOINT_PAGES 1000

struct store {
    struct pg_store *pg; /* opened from a postgresql:// URL: every call goes there */
    sqlite3 *w, *r, *b;
    struct checkpointer ck;
    atomic_int fail_commits; /* test hook (store_fail_commits) */
    char *path;              /* the database file, and what it was at the open: */
    dev_t dev;               /* db_replaced compares them with what the path */
    ino_t ino;               /* names now */
    sqlite3_stmt *ws[Q_COUNT_W];
    sqlite3_stmt *rs[Q_COUNT_R];
    sqlite3_stmt *bs[Q_COUNT_R];
};

struct store_op *store_op_new(int64_t job)
{
    struct store_op *op = xcalloc(1, sizeof *op);
    op->job = job;
    return op;
}

void store_op_add_event(struct store_op *op, int64_t seq, char *body)
{
    size_t cap = (size_t)op->cap_events;
    xgrow((void **)&op->events, sizeof *op->events, &cap, (size_t)op->n_events + 1);
    op->cap_events = (int32_t)cap;
    op->events[op->n_events].seq = seq;
    op->events[op->n_events].body = body;
    op->n_events++;
}

static void op_clear(struct store_op *op)
{
    free(op->request);
    free(op->state);
    free(op->status);
    for (int32_t i = 0; i < op->n_events; i++)
        free(op->events[i].body);
    free(op->events);
    free(op->layout);
}

void store_op_make_reserve(struct store_op *op)
{
    op_clear(op);
    struct store_op keep = {
        .job = op->job, .owner = op->owner, .next = op->next, .sealed = op->sealed, .reserve = 1};
    *op = keep;
}

void store_op_free(struct store_op *op)
{
    if (!op)
        return;
    op_clear(op);
    free(op);
}

static int open_conn(const char *path, int flags, sqlite3 **db, char *err, size_t errlen)
{
    int rc = sqlite3_open_v2(path, db, flags, NULL);
    if (rc != SQLITE_OK) {
        lcn_errmsg(err, errlen, "%s", *db ? sqlite3_errmsg(*db) : sqlite3_errstr(rc));
        sqlite3_close(*db);
        *db = NULL;
        return LCN_ESTORE;
    }
    /* a reader may briefly wait for a checkpoint of the WAL */
    sqlite3_busy_timeout(*db, 5000);
    return 0;
}

static int exec(sqlite3 *db, const char *sql, char *err, size_t errlen)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        lcn_errmsg(err, errlen, "%s", msg ? msg : sqlite3_errmsg(db));
        sqlite3_free(msg);
        return LCN_ESTORE;
    }
    return 0;
}

/* The first column of the first row of sql as an integer (def when there
 * is no row or it is NULL). Returns 0 or LCN_ESTORE. */
static int query_int64(sqlite3 *db, const char *sql, int64_t def, int64_t *out, char *err,
                       size_t errlen)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &s, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(s);
    *out = def;
    if (rc == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL)
        *out = sqlite3_column_int64(s, 0);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        lcn_errmsg(err, errlen, "%s", sqlite3_errmsg(db));
    sqlite3_finalize(s);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : LCN_ESTORE;
}

/* What this lcnd reads and writes: a database that lacks any of it is
 * damaged (or not ours), and is refused rather than half used. */
static const struct {
    const char *table;
    const char *cols[11];
} layout[] = {
    {"meta", {"key", "value"}},
    {"jobs", {"id", "state", "created_ms", "updated_ms", "status"}},
    {"requests", {"job", "body"}},
    {"events", {"job", "seq", "body"}},
    {"checkpoints", {"job", "seq", "elapsed_s", "K", "nK", "Phi", "C", "final", "n", "layout"}},
};

/* 1 when column is among the names of table's columns (pragma_table_info). */
static int has_column(sqlite3_stmt *info, const char *table, const char *column, int *any)
{
    sqlite3_bind_text(info, 1, table, -1, SQLITE_STATIC);
    int found = 0;
    while (sqlite3_step(info) == SQLITE_ROW) {
        *any = 1;
        const char *name = (const char *)sqlite3_column_text(info, 0);
        found |= name && !strcasecmp(name, column);
    }
    sqlite3_reset(info);
    return found;
}

static int check_layout(sqlite3 *db, char *why, size_t len)
{
    sqlite3_stmt *info = NULL;
    if (sqlite3_prepare_v2(db, "SELECT name FROM pragma_table_info(?1)", -1, &info, NULL) !=
        SQLITE_OK) {
        lcn_errmsg(why, len, "%s", sqlite3_errmsg(db));
        return LCN_ESTORE;
    }
    int rc = 0;
    for (size_t t = 0; t < LCN_ARRAY_LEN(layout) && !rc; t++)
        for (size_t c = 0; c < LCN_ARRAY_LEN(layout[t].cols) && layout[t].cols[c] && !rc; c++) {
            int any = 0;
            if (has_column(info, layout[t].table, layout[t].cols[c], &any))
                continue;
            if (any)
                lcn_errmsg(why, len, "table %s has no column %s", layout[t].table,
                           layout[t].cols[c]);
            else
                lcn_errmsg(why, len, "table %s is missing", layout[t].table);
            rc = LCN_ESTORE;
        }
    sqlite3_finalize(info);
    return rc;
}

/* PRAGMA quick_check: the pages, b-trees, overflow chains and NOT NULL
 * constraints of the whole file (not the bytes of each value: SQLite
 * keeps no checksums). O(size of the database), once at start. */
static int check_integrity(sqlite3 *db, char *why, size_t len)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(db, "PRAGMA quick_check(5)", -1, &s, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(s);
    int ok = rc == SQLITE_ROW && !strcmp((const char *)sqlite3_column_text(s, 0), "ok");
    if (!ok && rc == SQLITE_ROW) {
        /* one line for the log: "*** in database main ***\nOn tree page..." */
        char first[240];
        const char *t = (const char *)sqlite3_column_text(s, 0);
        if (!strncmp(t, "*** in database main ***\n", 25))
            t += 25;
        size_t k = 0;
        for (; *t && k + 3 < sizeof first; t++) {
            if (*t == '\n')
                first[k++] = ';';
            first[k++] = *t == '\n' ? ' ' : *t;
        }
        first[k] = 0;
        int more = 0;
        while (sqlite3_step(s) == SQLITE_ROW)
            more++;
        lcn_errmsg(why, len, "the database is damaged (quick_check: %s%s)", first,
                   more ? "; and more" : "");
    } else if (!ok) {
        lcn_errmsg(why, len, "the database is damaged (quick_check: %s)", sqlite3_errmsg(db));
    }
    sqlite3_finalize(s);
    return ok ? 0 : LCN_ESTORE;
}

/* Refuses a database written by a newer schema (or without a version). */
static int check_version(sqlite3 *db, char *why, size_t len)
{
    sqlite3_stmt *v = NULL;
    int rc = LCN_ESTORE;
    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'schema_version'", -1, &v,
                           NULL) == SQLITE_OK &&
        sqlite3_step(v) == SQLITE_ROW) {
        const char *ver = (const char *)sqlite3_column_text(v, 0);
        if (ver && (!strcmp(ver, "1") || !strcmp(ver, STORE_SCHEMA_VERSION)))
            rc = 0;
        else
            lcn_errmsg(why, len, "schema version %s, this lcnd reads 1 and %s", ver ? ver : "?",
                       STORE_SCHEMA_VERSION);
    } else {
        lcn_errmsg(why, len, "no schema version in table meta");
    }
    sqlite3_finalize(v);
    return rc;
}

/*
 * Ids are never reused, so the next one is stored (meta next_id, raised
 * with every insert in the insert's transaction) and not derived from the
 * jobs that retention left. A version 1 database has no next_id: it gets
 * the largest id any table mentions + 1. The same rule repairs a next_id
 * that fell behind (a database written by an older lcnd after ours).
 */
static int fix_next_id(sqlite3 *db, char *why, size_t len)
{
    int64_t stored, top;
    int rc = query_int64(db, "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'next_id'", 0,
                         &stored, why, len);
    if (!rc)
        rc = query_int64(db,
                         "SELECT max(m) FROM (SELECT max(id) AS m FROM jobs UNION ALL "
                         "SELECT max(job) FROM requests UNION ALL SELECT max(job) FROM events "
                         "UNION ALL SELECT max(job) FROM checkpoints)",
                         0, &top, why, len);
    if (rc)
        return rc;
    int64_t want = LCN_MAX(LCN_MAX(stored, top + 1), 1);
    char sql[256];
    snprintf(sql, sizeof sql,
             "BEGIN IMMEDIATE; INSERT OR REPLACE INTO meta(key, value) VALUES ('next_id', "
             "'%lld'); UPDATE meta SET value = '" STORE_SCHEMA_VERSION
             "' WHERE key = 'schema_version'; COMMIT",
             (long long)want);
    rc = exec(db, sql, why, len);
    if (rc)
        exec(db, "ROLLBACK", NULL, 0);
    return rc;
}

/*
 * Start-up checks, before anything is read or written: the file's
 * integrity, then either an empty file (a new store: the schema is created
 * in one transaction) or every table and column of the layout, a version
 * this lcnd reads, and the migration to the current version.
 */
static int prepare_db(sqlite3 *db, char *why, size_t len)
{
    int64_t tables;
    int rc = check_integrity(db, why, len);
    if (!rc)
        rc = query_int64(db, "SELECT count(*) FROM sqlite_master", 0, &tables, why, len);
    if (rc)
        return rc;
    if (tables == 0) {
        char sql[2048];
        snprintf(sql, sizeof sql, "BEGIN IMMEDIATE; %s COMMIT", schema);
        rc = exec(db, sql, why, len);
        if (rc)
            exec(db, "ROLLBACK", NULL, 0);
        return rc;
    }
    if ((rc = check_layout(db, why, len)) || (rc = check_version(db, why, len)))
        return rc;
    return fix_next_id(db, why, len);
}

static int prepare_all(sqlite3 *db, const char *const *sql, sqlite3_stmt **out, int n, char *why,
                       size_t len)
{
    for (int i = 0; i < n; i++)
        if (sqlite3_prepare_v2(db, sql[i], -1, &out[i], NULL) != SQLITE_OK) {
            lcn_errmsg(why, len, "prepare: %s", sqlite3_errmsg(db));
            return LCN_ESTORE;
        }
    return 0;
}

/* Waits until a checkpoint is due (1, taking it) or the store closes (0). */
static int checkpoint_due(struct checkpointer *ck)
{
    pthread_mutex_lock(&ck->mu);
    while (!ck->due && !ck->quit)
        pthread_cond_wait(&ck->cv, &ck->mu);
    int due = !ck->quit;
    ck->due = 0;
    pthread_mutex_unlock(&ck->mu);
    return due;
}

static void *checkpointer_main(void *arg)
{
    struct checkpointer *ck = arg;
    /* a failure (busy, I/O) leaves the WAL to the next attempt */
    while (checkpoint_due(ck))
        sqlite3_wal_checkpoint_v2(ck->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    return NULL;
}

/* sqlite3_wal_hook on the write connection: runs after each commit. */
static int on_wal(void *arg, sqlite3 *db, const char *name, int pages)
{
    (void)db;
    (void)name;
    struct checkpointer *ck = arg;
    if (pages >= WAL_CHECKPOINT_PAGES) {
        pthread_mutex_lock(&ck->mu);
        ck->due = 1;
        pthread_cond_signal(&ck->cv);
        pthread_mutex_unlock(&ck->mu);
    }
    return SQLITE_OK;
}

static int checkpointer_start(struct store *st, const char *path, char *why, size_t len)
{
    struct checkpointer *ck = &st->ck;
    int rc = open_conn(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX, &ck->db, why, len);
    if (rc)
        return rc;
    pthread_mutex_init(&ck->mu, NULL);
    pthread_cond_init(&ck->cv, NULL);
    if (pthread_create(&ck->th, NULL, checkpointer_main, ck)) {
        lcn_errmsg(why, len, "cannot start the checkpoint thread");
        return LCN_ESTORE;
    }
    ck->started = 1;
    /* replaces the automatic checkpoint of the write connection */
    sqlite3_wal_hook(st->w, on_wal, ck);
    return 0;
}

static void checkpointer_stop(struct store *st)
{
    struct checkpointer *ck = &st->ck;
    if (ck->started) {
        if (st->w)
            sqlite3_wal_hook(st->w, NULL, NULL);
        pthread_mutex_lock(&ck->mu);
        ck->quit = 1;
        pthread_cond_signal(&ck->cv);
        pthread_mutex_unlock(&ck->mu);
        pthread_join(ck->th, NULL);
        pthread_mutex_destroy(&ck->mu);
        pthread_cond_destroy(&ck->cv);
        ck->started = 0;
    }
    sqlite3_close(ck->db);
    ck->db = NULL;
}

/*
 * Whether the database file was removed or replaced under the daemon (its
 * state directory renamed and made anew, jobs.db deleted or copied over):
 * the open connections still write the old file, which no later start
 * reads, and the directory's lock no longer keeps a second daemon off the
 * path. Every commit would then be acknowledged and lost, so the store
 * counts as failing instead: commits (store_apply) and the health check's
 * read (store_ping) fail, with why in err.
 */
static int db_replaced(const struct store *st, char *err, size_t errlen)
{
    struct stat sb;
    if (stat(st->path, &sb) == 0 && sb.st_dev == st->dev && sb.st_ino == st->ino)
        return 0;
    lcn_errmsg(err, errlen, "%s was removed or replaced since the daemon opened it: "
               "restart the daemon", st->path);
    return LCN_ESTORE;
}

static int remember_file(struct store *st, const char *path, char *why, size_t len)
{
    struct stat sb;
    if (stat(path, &sb)) {
        snprintf(why, len, "stat: %s", strerror(errno));
        return LCN_ESTORE;
    }
    st->path = xstrdup(path);
    st->dev = sb.st_dev;
    st->ino = sb.st_ino;
    return 0;
}

int store_open(const char *path, int sync, struct store **out, char *err, size_t errlen)
{
    struct store *st = xcalloc(1, sizeof *st);
    char why[400] = "";
    *out = NULL;
    if (pg_store_is_url(path)) {
        int rc = pg_store_open(path, &st->pg, err, errlen);
        if (rc) {
            free(st);
            return rc;
        }
        *out = st;
        return 0;
    }
    int rc = open_conn(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                       &st->w, why, sizeof why);
    if (!rc)
        rc = exec(st->w, "PRAGMA journal_mode=WAL", why, sizeof why);
    if (!rc)
        rc = exec(st->w,
                  sync == STORE_SYNC_FULL ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL",
                  why, sizeof why);
    if (!rc)
        rc = prepare_db(st->w, why, sizeof why);
    if (!rc)
        rc = open_conn(path, SQLITE_OPEN_READONLY | SQLITE_OPEN_FULLMUTEX, &st->r, why, sizeof why);
    if (!rc)
        rc = open_conn(path, SQLITE_OPEN_READONLY | SQLITE_OPEN_FULLMUTEX, &st->b, why, sizeof why);
    if (!rc)
        rc = prepare_all(st->w, wsql, st->ws, Q_COUNT_W, why, sizeof why);
    if (!rc)
        rc = prepare_all(st->r, rsql, st->rs, Q_COUNT_R, why, sizeof why);
    if (!rc)
        rc = prepare_all(st->b, rsql, st->bs, Q_COUNT_R, why, sizeof why);
    if (!rc)
        rc = checkpointer_start(st, path, why, sizeof why);
    if (!rc)
        rc = remember_file(st, path, why, sizeof why);
    if (rc) {
        lcn_errmsg(err, errlen, "%s: %s", path, why);
        store_close(st);
        return LCN_ESTORE;
    }
    *out = st;
    return 0;
}

void store_close(struct store *st)
{
    if (!st)
        return;
    if (st->pg) {
        pg_store_close(st->pg);
        free(st);
        return;
    }
    checkpointer_stop(st);
    for (int i = 0; i < Q_COUNT_W; i++)
        sqlite3_finalize(st->ws[i]);
    for (int i = 0; i < Q_COUNT_R; i++) {
        sqlite3_finalize(st->rs[i]);
        sqlite3_finalize(st->bs[i]);
    }
    sqlite3_close(st->b);
    sqlite3_close(st->r);
    sqlite3_close(st->w);
    free(st->path);
    free(st);
}

static int step_done(sqlite3_stmt *s)
{
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return rc == SQLITE_DONE ? 0 : LCN_ESTORE;
}

/* next_id > job, in the transaction that uses the id */
static int bump_id(struct store *st, int64_t job)
{
    sqlite3_stmt *s = st->ws[Q_BUMP_ID];
    sqlite3_bind_int64(s, 1, job);
    return step_done(s);
}

static int apply_one(struct store *st, struct store_op *op)
{
    sqlite3_stmt *s;
    if (op->create) {
        s = st->ws[Q_INSERT_JOB];
        sqlite3_bind_int64(s, 1, op->job);
        sqlite3_bind_text(s, 2, op->state ? op->state : "queued", -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 3, op->created_ms);
        sqlite3_bind_text(s, 4, op->status ? op->status : "{}", -1, SQLITE_STATIC);
        if (step_done(s))
            return LCN_ESTORE;
        s = st->ws[Q_INSERT_REQUEST];
        sqlite3_bind_int64(s, 1, op->job);
        sqlite3_bind_blob64(s, 2, op->request ? op->request : "", op->request_len, SQLITE_STATIC);
        if (step_done(s) || bump_id(st, op->job))
            return LCN_ESTORE;
    } else if (op->reserve) {
        if (bump_id(st, op->job))
            return LCN_ESTORE;
    } else if (op->status) {
        s = st->ws[Q_UPDATE_JOB];
        sqlite3_bind_int64(s, 1, op->job);
        sqlite3_bind_text(s, 2, op->state ? op->state : "", -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 3, op->status, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 4, op->updated_ms);
        if (step_done(s))
            return LCN_ESTORE;
    }
    for (int32_t i = 0; i < op->n_events; i++) {
        s = st->ws[Q_INSERT_EVENT];
        sqlite3_bind_int64(s, 1, op->job);
        sqlite3_bind_int64(s, 2, op->events[i].seq);
        sqlite3_bind_text(s, 3, op->events[i].body, -1, SQLITE_STATIC);
        if (step_done(s))
            return LCN_ESTORE;
    }
    if (op->layout) {
        size_t bytes;
        void *blob = store_layout_blob(op->layout, op->n, &bytes);
        s = st->ws[Q_UPSERT_CKPT];
        sqlite3_bind_int64(s, 1, op->job);
        sqlite3_bind_int64(s, 2, op->ckpt_seq);
        sqlite3_bind_double(s, 3, op->elapsed_s);
        sqlite3_bind_int64(s, 4, op->obj.K);
        sqlite3_bind_int64(s, 5, op->obj.nK);
        sqlite3_bind_int64(s, 6, op->obj.Phi);
        sqlite3_bind_int64(s, 7, op->obj.C);
        sqlite3_bind_int(s, 8, op->final);
        sqlite3_bind_int(s, 9, op->n);
        sqlite3_bind_blob64(s, 10, blob, (sqlite3_uint64)bytes, SQLITE_STATIC);
        int rc = step_done(s);
        free(blob);
        if (rc)
            return rc;
    }
    if (op->remove) {
        static const int del[] = {Q_DELETE_JOB, Q_DELETE_REQUEST, Q_DELETE_EVENTS, Q_DELETE_CKPT};
        for (size_t i = 0; i < LCN_ARRAY_LEN(del); i++) {
            s = st->ws[del[i]];
            sqlite3_bind_int64(s, 1, op->job);
            if (step_done(s))
                return LCN_ESTORE;
        }
    }
    return 0;
}

int store_apply(struct store *st, struct store_op *ops, char *err, size_t errlen)
{
    if (st->pg)
        return pg_store_apply(st->pg, ops, err, errlen);
    int rc = db_replaced(st, err, errlen);
    if (!rc)
        rc = exec(st->w, "BEGIN IMMEDIATE", err, errlen);
    if (rc) {
        for (struct store_op *op = ops; op; op = op->next)
            op->rc = rc;
        return rc;
    }
    for (struct store_op *op = ops; op; op = op->next) {
        op->rc = apply_one(st, op);
        if (op->rc) {
            char id[24];
            job_id_format(op->job, id, sizeof id);
            lcn_errmsg(err, errlen, "job %s: %s", id, sqlite3_errmsg(st->w));
            rc = op->rc;
            break;
        }
    }
    if (!rc && atomic_load(&st->fail_commits) > 0 && atomic_fetch_sub(&st->fail_commits, 1) > 0) {
        lcn_errmsg(err, errlen, "injected commit failure (store_fail_commits)");
        rc = LCN_ESTORE;
    }
    if (!rc)
        rc = exec(st->w, "COMMIT", err, errlen);
    if (rc) {
        exec(st->w, "ROLLBACK", NULL, 0);
        for (struct store_op *op = ops; op; op = op->next)
            op->rc = LCN_ESTORE;
    }
    return rc;
}

void store_fail_commits(struct store *st, int n)
{
    if (st->pg) {
        pg_store_fail_commits(st->pg, n);
        return;
    }
    atomic_store(&st->fail_commits, n);
}

int store_load_jobs(struct store *st, store_job_cb cb, void *ctx)
{
    if (st->pg)
        return pg_store_load_jobs(st->pg, cb, ctx);
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(st->r, "SELECT id, state, status FROM jobs ORDER BY id", -1, &s, NULL) !=
        SQLITE_OK)
        return LCN_ESTORE;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (cb(ctx, sqlite3_column_int64(s, 0), (const char *)sqlite3_column_text(s, 1),
               (const char *)sqlite3_column_text(s, 2)))
            break;
    }
    int ok = rc == SQLITE_ROW || rc == SQLITE_DONE;
    sqlite3_finalize(s);
    return ok ? 0 : LCN_ESTORE;
}

int store_load_job(struct store *st, int64_t job, store_job_cb cb, void *ctx)
{
    if (st->pg)
        return pg_store_load_job(st->pg, job, cb, ctx);
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(st->r, "SELECT id, state, status FROM jobs WHERE id = ?", -1, &s,
                           NULL) != SQLITE_OK)
        return LCN_ESTORE;
    sqlite3_bind_int64(s, 1, job);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        cb(ctx, sqlite3_column_int64(s, 0), (const char *)sqlite3_column_text(s, 1),
           (const char *)sqlite3_column_text(s, 2));
    sqlite3_finalize(s);
    return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : LCN_ESTORE;
}

/*
 * Reads job's row of read statement q on the blob connection: row(s, out)
 * decodes it and returns 0 or an error. Returns row's code, LCN_ENOTFOUND
 * when there is no row, LCN_ESTORE when the step failed.
 */
static int load_row(struct store *st, int q, int64_t job, int (*row)(sqlite3_stmt *s, void *out),
                    void *out)
{
    sqlite3_mutex_enter(sqlite3_db_mutex(st->b));
    sqlite3_stmt *s = st->bs[q];
    sqlite3_bind_int64(s, 1, job);
    int rc = sqlite3_step(s);
    int ret = rc == SQLITE_ROW ? row(s, out) : rc == SQLITE_DONE ? LCN_ENOTFOUND : LCN_ESTORE;
    sqlite3_reset(s);
    sqlite3_mutex_leave(sqlite3_db_mutex(st->b));
    return ret;
}

struct request_out {
    char **body;
    size_t *len;
};

static int request_row(sqlite3_stmt *s, void *out)
{
    const struct request_out *o = out;
    size_t n = (size_t)sqlite3_column_bytes(s, 0);
    const void *b = sqlite3_column_blob(s, 0);
    *o->body = xmalloc(n + 1);
    if (n)
        memcpy(*o->body, b, n);
    (*o->body)[n] = 0;
    *o->len = n;
    return 0;
}

int store_load_request(struct store *st, int64_t job, char **body, size_t *len)
{
    if (st->pg)
        return pg_store_load_request(st->pg, job, body, len);
    struct request_out o = {body, len};
    return load_row(st, R_REQUEST, job, request_row, &o);
}

static int checkpoint_row(sqlite3_stmt *s, void *out)
{
    struct store_checkpoint *ck = out;
    ck->seq = sqlite3_column_int64(s, 0);
    ck->elapsed_s = sqlite3_column_double(s, 1);
    ck->obj.K = (int32_t)sqlite3_column_int64(s, 2);
    ck->obj.nK = (int32_t)sqlite3_column_int64(s, 3);
    ck->obj.Phi = sqlite3_column_int64(s, 4);
    ck->obj.C = sqlite3_column_int64(s, 5);
    ck->final = sqlite3_column_int(s, 6);
    ck->n = sqlite3_column_int(s, 7);
    int bytes = sqlite3_column_bytes(s, 8);
    if (ck->n < 0 || (int64_t)bytes != (int64_t)ck->n * 8)
        return LCN_ESTORE;
    ck->layout = xmalloc(sizeof *ck->layout * (size_t)(ck->n + 1));
    store_blob_layout(sqlite3_column_blob(s, 8), ck->n, ck->layout);
    return 0;
}

int store_load_checkpoint(struct store *st, int64_t job, struct store_checkpoint *ck)
{
    if (st->pg)
        return pg_store_load_checkpoint(st->pg, job, ck);
    memset(ck, 0, sizeof *ck);
    return load_row(st, R_CKPT, job, checkpoint_row, ck);
}

void store_checkpoint_release(struct store_checkpoint *ck)
{
    free(ck->layout);
    ck->layout = NULL;
}

int store_load_events(struct store *st, int64_t job, int64_t after, int limit, store_event_cb cb,
                      void *ctx)
{
    if (st->pg)
        return pg_store_load_events(st->pg, job, after, limit, cb, ctx);
    sqlite3_mutex_enter(sqlite3_db_mutex(st->r));
    sqlite3_stmt *s = st->rs[R_EVENTS];
    sqlite3_bind_int64(s, 1, job);
    sqlite3_bind_int64(s, 2, after);
    sqlite3_bind_int(s, 3, limit);
    int rc, count = 0;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        cb(ctx, sqlite3_column_int64(s, 0), (const char *)sqlite3_column_text(s, 1));
        count++;
    }
    sqlite3_reset(s);
    sqlite3_mutex_leave(sqlite3_db_mutex(st->r));
    return rc == SQLITE_DONE ? count : LCN_ESTORE;
}

int64_t store_last_seq(struct store *st, int64_t job)
{
    if (st->pg)
        return pg_store_last_seq(st->pg, job);
    sqlite3_mutex_enter(sqlite3_db_mutex(st->r));
    sqlite3_stmt *s = st->rs[R_LAST_SEQ];
    sqlite3_bind_int64(s, 1, job);
    int64_t v = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int64(s, 0) : LCN_ESTORE;
    sqlite3_reset(s);
    sqlite3_mutex_leave(sqlite3_db_mutex(st->r));
    return v;
}

int64_t store_next_id(struct store *st)
{
    if (st->pg)
        return pg_store_next_id(st->pg);
    sqlite3_mutex_enter(sqlite3_db_mutex(st->r));
    sqlite3_stmt *s = st->rs[R_NEXT_ID];
    int64_t v = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int64(s, 0) : LCN_ESTORE;
    sqlite3_reset(s);
    sqlite3_mutex_leave(sqlite3_db_mutex(st->r));
    return v > 0 ? v : LCN_ESTORE;
}

int store_ping(struct store *st)
{
    if (st->pg)
        return pg_store_ping(st->pg);
    if (db_replaced(st, NULL, 0))
        return LCN_ESTORE;
    sqlite3_mutex_enter(sqlite3_db_mutex(st->r));
    sqlite3_stmt *s = st->rs[R_PING];
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    sqlite3_mutex_leave(sqlite3_db_mutex(st->r));
    return rc == SQLITE_ROW ? 0 : LCN_ESTORE;
}

int store_is_shared(const struct store *st)
{
    return st->pg != NULL;
}

void store_heal_elsewhere(struct store *st)
{
    if (st->pg)
        pg_store_heal_elsewhere(st->pg);
}

int store_heal(struct store *st, int force)
{
    return st->pg ? pg_store_heal(st->pg, force) : 0;
}
