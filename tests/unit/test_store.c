/* The job store (store.c) and its group-commit queue (storeq.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>
#include <uv.h>

#include "err.h"
#include "server/store.h"
#include "server/storeq.h"
#include "util.h"

static char dir[64];
static char dbpath[128];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/lcn-test-store-XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(dbpath, sizeof dbpath, "%s/jobs.db", dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static struct store_op *insert_op(int64_t id, const char *status, const char *req)
{
    struct store_op *op = store_op_new(id);
    op->create = 1;
    op->created_ms = 1000 + id;
    op->request = xstrdup(req);
    op->request_len = strlen(req);
    op->state = xstrdup("queued");
    op->status = xstrdup(status);
    store_op_add_event(op, 1, xstrdup("{\"seq\":1}"));
    return op;
}

struct rows {
    int n;
    int64_t ids[16];
    char states[16][16];
    char status[16][64];
};

static int row_cb(void *ctx, int64_t id, const char *state, const char *status)
{
    struct rows *r = ctx;
    if (r->n == 16)
        return 1;
    r->ids[r->n] = id;
    snprintf(r->states[r->n], 16, "%s", state);
    snprintf(r->status[r->n], 64, "%s", status);
    r->n++;
    return 0;
}

struct evs {
    int n;
    int64_t seq[64];
    char body[64][32];
};

static void ev_cb(void *ctx, int64_t seq, const char *body)
{
    struct evs *e = ctx;
    e->seq[e->n] = seq;
    snprintf(e->body[e->n], 32, "%s", body);
    e->n++;
}

static void test_roundtrip(void **state)
{
    (void)state;
    struct store *st;
    char err[256];
    assert_int_equal(store_open(dbpath, STORE_SYNC_FULL, &st, err, sizeof err), 0);

    struct store_op *a = insert_op(1, "{\"a\":1}", "{\"graph\":1}");
    struct store_op *b = insert_op(2, "{\"b\":1}", "{\"graph\":2}");
    a->next = b;
    assert_int_equal(store_apply(st, a, err, sizeof err), 0);
    assert_int_equal(a->rc, 0);
    store_op_free(a);
    store_op_free(b);

    /* update, events, checkpoint with negative and large coordinates */
    struct store_op *u = store_op_new(1);
    u->state = xstrdup("running");
    u->status = xstrdup("{\"a\":2}");
    for (int s = 2; s <= 5; s++) {
        char buf[32];
        snprintf(buf, sizeof buf, "{\"seq\":%d}", s);
        store_op_add_event(u, s, xstrdup(buf));
    }
    struct lcn_pt pts[3] = {{0, 0}, {-5, 1073741823}, {-1073741823, 7}};
    u->layout = xmalloc(sizeof pts);
    memcpy(u->layout, pts, sizeof pts);
    u->n = 3;
    u->obj = (struct lcn_obj){4, 2, 20, 5};
    u->elapsed_s = 1.25;
    u->ckpt_seq = 5;
    assert_int_equal(store_apply(st, u, err, sizeof err), 0);
    store_op_free(u);

    struct rows r = {0};
    assert_int_equal(store_load_jobs(st, row_cb, &r), 0);
    assert_int_equal(r.n, 2);
    assert_int_equal(r.ids[0], 1);
    assert_string_equal(r.states[0], "running");
    assert_string_equal(r.status[0], "{\"a\":2}");
    assert_string_equal(r.states[1], "queued");

    struct evs e = {0};
    assert_int_equal(store_load_events(st, 1, 2, 2, ev_cb, &e), 2);
    assert_int_equal(e.seq[0], 3);
    assert_int_equal(e.seq[1], 4);
    assert_string_equal(e.body[0], "{\"seq\":3}");
    assert_int_equal(store_last_seq(st, 1), 5);
    assert_int_equal(store_last_seq(st, 2), 1);
    assert_int_equal(store_last_seq(st, 99), 0);

    char *body;
    size_t len;
    assert_int_equal(store_load_request(st, 2, &body, &len), 0);
    assert_string_equal(body, "{\"graph\":2}");
    assert_int_equal(len, 11);
    free(body);
    assert_int_equal(store_load_request(st, 3, &body, &len), LCN_ENOTFOUND);

    struct store_checkpoint ck;
    assert_int_equal(store_load_checkpoint(st, 1, &ck), 0);
    assert_int_equal(ck.n, 3);
    assert_memory_equal(ck.layout, pts, sizeof pts);
    assert_int_equal(ck.obj.K, 4);
    assert_int_equal(ck.obj.Phi, 20);
    assert_true(ck.elapsed_s == 1.25);
    assert_int_equal(ck.final, 0);
    store_checkpoint_release(&ck);
    assert_int_equal(store_load_checkpoint(st, 2, &ck), LCN_ENOTFOUND);
    assert_int_equal(store_ping(st), 0);
    store_close(st);

    /* everything survives a reopen */
    assert_int_equal(store_open(dbpath, STORE_SYNC_NORMAL, &st, err, sizeof err), 0);
    memset(&r, 0, sizeof r);
    assert_int_equal(store_load_jobs(st, row_cb, &r), 0);
    assert_int_equal(r.n, 2);
    assert_int_equal(store_load_checkpoint(st, 1, &ck), 0);
    assert_memory_equal(ck.layout, pts, sizeof pts);
    store_checkpoint_release(&ck);

    /* delete removes every row of the job */
    struct store_op *del = store_op_new(1);
    del->remove = 1;
    assert_int_equal(store_apply(st, del, err, sizeof err), 0);
    store_op_free(del);
    memset(&r, 0, sizeof r);
    assert_int_equal(store_load_jobs(st, row_cb, &r), 0);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.ids[0], 2);
    assert_int_equal(store_last_seq(st, 1), 0);
    assert_int_equal(store_load_checkpoint(st, 1, &ck), LCN_ENOTFOUND);
    assert_int_equal(store_load_request(st, 1, &body, &len), LCN_ENOTFOUND);
    store_close(st);
}

/* A failing op rolls the whole batch back. */
static void test_batch_atomic(void **state)
{
    (void)state;
    struct store *st;
    char err[256];
    assert_int_equal(store_open(dbpath, STORE_SYNC_FULL, &st, err, sizeof err), 0);
    struct store_op *a = insert_op(1, "{}", "{}");
    assert_int_equal(store_apply(st, a, err, sizeof err), 0);
    store_op_free(a);
    struct store_op *b = insert_op(2, "{}", "{}");
    struct store_op *dup = insert_op(1, "{}", "{}"); /* primary key clash */
    b->next = dup;
    assert_int_equal(store_apply(st, b, err, sizeof err), LCN_ESTORE);
    assert_int_equal(b->rc, LCN_ESTORE);
    assert_int_equal(dup->rc, LCN_ESTORE);
    assert_true(strlen(err) > 0);
    store_op_free(b);
    store_op_free(dup);
    struct rows r = {0};
    assert_int_equal(store_load_jobs(st, row_cb, &r), 0);
    assert_int_equal(r.n, 1); /* job 2 was rolled back */
    store_close(st);
}

static void test_open_errors(void **state)
{
    (void)state;
    struct store *st;
    char err[256];
    assert_int_equal(
        store_open("/nonexistent-dir/x/jobs.db", STORE_SYNC_FULL, &st, err, sizeof err),
        LCN_ESTORE);
    assert_null(st);
    /* a newer schema is refused */
    assert_int_equal(store_open(dbpath, STORE_SYNC_FULL, &st, err, sizeof err), 0);
    store_close(st);
    char cmd[300];
    snprintf(cmd, sizeof cmd,
             "python3 -c \"import sqlite3; c=sqlite3.connect('%s'); c.execute(\\\"update meta set "
             "value='99' where key='schema_version'\\\"); c.commit()\"",
             dbpath);
    if (system(cmd) != 0)
        skip();
    assert_int_equal(store_open(dbpath, STORE_SYNC_FULL, &st, err, sizeof err), LCN_ESTORE);
    assert_non_null(strstr(err, "schema version 99"));
}

/* Runs sql on the database behind the store's back. */
static void sql_exec(const char *sql)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(dbpath, &db), SQLITE_OK);
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK)
        fprintf(stderr, "%s: %s\n", sql, msg);
    sqlite3_free(msg);
    sqlite3_close(db);
    assert_int_equal(rc, SQLITE_OK);
}

/* The integer the query answers (its first column of its first row). */
static int64_t sql_int(const char *sql)
{
    sqlite3 *db;
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_open(dbpath, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    sqlite3_close(db);
    return v;
}

static void apply_ok(struct store *st, struct store_op *op)
{
    char err[256];
    assert_int_equal(store_apply(st, op, err, sizeof err), 0);
    store_op_free(op);
}

static void remove_job(struct store *st, int64_t id)
{
    struct store_op *del = store_op_new(id);
    del->remove = 1;
    apply_ok(st, del);
}

/* Ids are never reused: the next id is stored and raised by each insert
 * in its transaction, so it survives retention deleting the newest jobs
 * (issue 14: ids restarted at 1 once retention had emptied the store). */
static void test_next_id(void **state)
{
    (void)state;
    struct store *st;
    char err[256];
    assert_int_equal(store_open(dbpath, STORE_SYNC_FULL, &st, err, sizeof err), 0);
    assert_int_equal(store_next_id(st), 1);
    for (int id = 1; id <= 3; id++)
        apply_ok(st, insert_op(id, "{}", "{}"));
    assert_int_equal(store_next_id(st), 4);
    /* a rolled-back insert does not raise it */
    struct store_op *a = insert_op(10, "{}", "{}"), *dup = insert_op(3, "{}", "{}");
    a->next = dup;
    assert_int_equal(store_apply(st, a, err, sizeof err), LCN_ESTORE);
    store_op_free(a);
    store_op_free(dup);
    assert_int_equal(store_next_id(st), 4);
    for (int id = 1; id <= 3; id++)
        remove_job(st, id);
    store_close(st);
    assert_int_equal(store_open(dbpath, STORE_SYNC_FULL, &st, err, sizeof err), 0);
    assert_int_equal(store_next_id(st), 4);
    store_close(st);
}

/* A version 1 database (no next_id) is migrated at open: next_id = the
 * largest id any table mentions + 1; what is there is kept. */
static void test_migrate_v1(void **state)
{
    (void)state;
    struct store *st;
    char err[256];
    assert_int_equal(store_open(dbpath, STORE_SYNC_FULL, &st, err, sizeof err), 0);
    for (int id = 1; id <= 5; id++)
        apply_ok(st, insert_op(id, "{}", "{}"));
    remove_job(st, 5);
    store_close(st);
    sql_exec("DELETE FROM meta WHERE key = 'next_id';"
             "UPDATE meta SET value = '1' WHERE key = 'schema_version';");
    assert_int_equal(store_open(dbpath, STORE_SYNC_FULL, &st, err, sizeof err), 0);
    assert_int_equal(store_next_id(st), 5);
    struct rows r = {0};
    assert_int_equal(store_load_jobs(st, row_cb, &r), 0);
    assert_int_equal(r.n, 4);
    store_close(st);
    assert_int_equal(sql_int("SELECT value FROM meta WHERE key = 'schema_version'"), 2);

    /* a next_id behind the ids stored (an orphaned event row included) is
     * raised past them */
    sql_exec("UPDATE meta SET value = '2' WHERE key = 'next_id';"
             "INSERT INTO events(job, seq, body) VALUES (9, 1, '{}');");
    assert_int_equal(store_open(dbpath, STORE_SYNC_FULL, &st, err, sizeof err), 0);
    assert_int_equal(store_next_id(st), 10);
    store_close(st);
}

static void open_refused(const char *why)
{
    struct store *st;
    char err[512] = "";
    assert_int_equal(store_open(dbpath, STORE_SYNC_FULL, &st, err, sizeof err), LCN_ESTORE);
    assert_null(st);
    if (!strstr(err, why) || strncmp(err, dbpath, strlen(dbpath)))
        fprintf(stderr, "err: %s\n", err);
    assert_non_null(strstr(err, why));
    assert_int_equal(strncmp(err, dbpath, strlen(dbpath)), 0);
}

/* A store with enough jobs to span many pages, closed (the WAL folded in). */
static void fill_store(int jobs)
{
    struct store *st;
    char err[256];
    assert_int_equal(store_open(dbpath, STORE_SYNC_NORMAL, &st, err, sizeof err), 0);
    char req[3000];
    memset(req, 'r', sizeof req - 1);
    req[sizeof req - 1] = 0;
    for (int id = 1; id <= jobs; id++)
        apply_ok(st, insert_op(id, "{\"state\":\"queued\"}", req));
    store_close(st);
}

/* A table or column missing (issue 14: a dropped jobs table let the daemon
 * report ready while the first POST retried forever) is refused at open
 * with what is missing; so is a version without a schema_version. */
static void test_layout_checked(void **state)
{
    (void)state;
    fill_store(3);
    sql_exec("DROP TABLE jobs");
    open_refused("table jobs is missing");
    /* nothing was created behind the damage: still refused */
    open_refused("table jobs is missing");
    teardown(NULL);
    setup(NULL);
    fill_store(3);
    sql_exec("ALTER TABLE checkpoints DROP COLUMN layout");
    open_refused("table checkpoints has no column layout");
    teardown(NULL);
    setup(NULL);
    fill_store(3);
    sql_exec("DELETE FROM meta WHERE key = 'schema_version'");
    open_refused("no schema version");
}

/* Overwrites page `page` (1-based) of the database file with a pattern. */
static void smash_page(long page, long page_size)
{
    FILE *f = fopen(dbpath, "r+b");
    assert_non_null(f);
    char junk[65536];
    assert_true(page_size <= (long)sizeof junk);
    memset(junk, 0x5a, (size_t)page_size);
    assert_int_equal(fseek(f, (page - 1) * page_size, SEEK_SET), 0);
    assert_int_equal(fwrite(junk, 1, (size_t)page_size, f), (size_t)page_size);
    assert_int_equal(fclose(f), 0);
}

/* Damage in the middle of the file is found at open (PRAGMA quick_check),
 * not by the first client who reads that page (issue 14: /readyz said ok
 * and a solution then answered 500). */
static void test_integrity_checked(void **state)
{
    (void)state;
    fill_store(60);
    long pages = (long)sql_int("PRAGMA page_count"), size = (long)sql_int("PRAGMA page_size");
    assert_true(pages > 20);
    smash_page(pages / 2, size);
    open_refused("the database is damaged (quick_check: ");
    /* not a database at all */
    FILE *f = fopen(dbpath, "wb");
    assert_non_null(f);
    for (int i = 0; i < 512; i++)
        fputs("garbage!", f);
    fclose(f);
    open_refused("file is not a database");
}

/* ---- storeq: ordering, completion on the loop, batching, retry ---- */

struct qctx {
    int64_t done[256];
    int n;
    struct storeq *q;
    int64_t failed[256]; /* on_fail calls, by job */
    int nf;
};

static void on_done(void *ctx, struct store_op *op)
{
    struct qctx *c = ctx;
    c->done[c->n++] = op->job;
}

static void test_storeq_order(void **state)
{
    (void)state;
    struct store *st;
    char err[256];
    assert_int_equal(store_open(dbpath, STORE_SYNC_NORMAL, &st, err, sizeof err), 0);
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct storeq q;
    struct qctx c = {{0}, 0, &q, {0}, 0};
    assert_int_equal(storeq_init(&q, &loop, st, on_done, NULL, &c), 0);
    for (int i = 1; i <= 100; i++)
        storeq_submit(&q, insert_op(i, "{}", "{}"));
    assert_false(storeq_idle(&q));
    while (!storeq_idle(&q))
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(c.n, 100);
    for (int i = 0; i < 100; i++)
        assert_int_equal(c.done[i], i + 1);
    /* the first op went alone; the rest were grouped into few commits */
    assert_true(q.batches >= 2);
    assert_true(q.batches <= 100);
    assert_int_equal(q.ops_committed, 100);
    assert_int_equal(q.healthy, 1);
    storeq_close(&q);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    struct rows r = {0};
    assert_int_equal(store_load_jobs(st, row_cb, &r), 0);
    assert_int_equal(r.n, 16); /* stopped by the callback */
    assert_int_equal(r.ids[15], 16);
    store_close(st);
}

static void on_tick(uv_timer_t *t)
{
    (void)t;
}

/* A batch that cannot commit is retried, not dropped, and the queue
 * reports itself unhealthy meanwhile; ops behind it wait their turn. */
static void test_storeq_retry(void **state)
{
    (void)state;
    struct store *st;
    char err[256];
    assert_int_equal(store_open(dbpath, STORE_SYNC_NORMAL, &st, err, sizeof err), 0);
    struct store_op *first = insert_op(7, "{}", "{}");
    assert_int_equal(store_apply(st, first, err, sizeof err), 0);
    store_op_free(first);
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct storeq q;
    struct qctx c = {{0}, 0, &q, {0}, 0};
    assert_int_equal(storeq_init(&q, &loop, st, on_done, NULL, &c), 0);
    q.retry_ms = 20;
    storeq_submit(&q, insert_op(7, "{}", "{}")); /* clashes until job 7 is gone */
    storeq_submit(&q, insert_op(8, "{}", "{}"));
    uv_timer_t t;
    uv_timer_init(&loop, &t);
    uv_timer_start(&t, on_tick, 5, 5);
    while (q.failures < 2)
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(q.healthy, 0);
    assert_int_equal(c.n, 0);
    /* make room: delete job 7 behind the queue's back (another connection:
     * the queue's thread owns the write connection of st) */
    struct store *st2;
    assert_int_equal(store_open(dbpath, STORE_SYNC_NORMAL, &st2, err, sizeof err), 0);
    struct store_op *del = store_op_new(7);
    del->remove = 1;
    assert_int_equal(store_apply(st2, del, err, sizeof err), 0);
    store_op_free(del);
    store_close(st2);
    while (!storeq_idle(&q))
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(q.healthy, 1);
    assert_int_equal(c.n, 2);
    assert_int_equal(c.done[0], 7);
    assert_int_equal(c.done[1], 8);
    uv_close((uv_handle_t *)&t, NULL);
    storeq_close(&q);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    store_close(st);
}

/* What jobs.c does with an insert it gives up: only the id stays. */
static void on_fail(void *ctx, struct store_op *op)
{
    struct qctx *c = ctx;
    c->failed[c->nf++] = op->job;
    if (op->job == 2 && op->create)
        store_op_make_reserve(op);
}

/* A failed commit is told to the owners of every op in the batch and of
 * every op queued behind it, at each failure, so that nobody waits for
 * the store to recover (issue 14: a POST or DELETE got no answer while the
 * disk was full). What an owner leaves in its op is retried in order; an
 * insert turned into an id reservation creates nothing but keeps the id
 * used. The failure is injected with the store's test hook. */
static void test_storeq_fail_tells_owners(void **state)
{
    (void)state;
    struct store *st;
    char err[256];
    assert_int_equal(store_open(dbpath, STORE_SYNC_NORMAL, &st, err, sizeof err), 0);
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct storeq q;
    struct qctx c = {{0}, 0, &q, {0}, 0};
    assert_int_equal(storeq_init(&q, &loop, st, on_done, on_fail, &c), 0);
    q.retry_ms = 20;
    store_fail_commits(st, 2);
    storeq_submit(&q, insert_op(1, "{}", "{}")); /* in flight at once */
    storeq_submit(&q, insert_op(2, "{}", "{}")); /* pending behind it */
    storeq_submit(&q, insert_op(3, "{}", "{}"));
    uv_timer_t t;
    uv_timer_init(&loop, &t);
    uv_timer_start(&t, on_tick, 5, 5);
    while (q.failures < 1)
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(q.healthy, 0);
    assert_int_equal(c.nf, 3);
    assert_int_equal(c.failed[0], 1);
    assert_int_equal(c.failed[1], 2);
    assert_int_equal(c.failed[2], 3);
    assert_int_equal(c.n, 0);
    while (!storeq_idle(&q))
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(q.failures, 2);
    assert_int_equal(c.nf, 6); /* told again at the second failure */
    assert_int_equal(q.healthy, 1);
    assert_int_equal(c.n, 3);
    for (int i = 0; i < 3; i++)
        assert_int_equal(c.done[i], i + 1);
    uv_close((uv_handle_t *)&t, NULL);
    storeq_close(&q);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    struct rows r = {0};
    assert_int_equal(store_load_jobs(st, row_cb, &r), 0);
    assert_int_equal(r.n, 2);
    assert_int_equal(r.ids[0], 1);
    assert_int_equal(r.ids[1], 3);
    char *body;
    size_t len;
    assert_int_equal(store_load_request(st, 2, &body, &len), LCN_ENOTFOUND);
    assert_int_equal(store_last_seq(st, 2), 0);
    assert_int_equal(store_next_id(st), 4);
    store_close(st);

    /* a reservation alone still raises next_id */
    assert_int_equal(store_open(dbpath, STORE_SYNC_NORMAL, &st, err, sizeof err), 0);
    struct store_op *res = insert_op(9, "{}", "{}");
    store_op_make_reserve(res);
    assert_int_equal(res->reserve, 1);
    assert_int_equal(res->job, 9);
    assert_null(res->request);
    assert_int_equal(res->n_events, 0);
    apply_ok(st, res);
    assert_int_equal(store_next_id(st), 10);
    assert_int_equal(store_load_request(st, 9, &body, &len), LCN_ENOTFOUND);
    store_close(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_roundtrip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batch_atomic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_next_id, setup, teardown),
        cmocka_unit_test_setup_teardown(test_migrate_v1, setup, teardown),
        cmocka_unit_test_setup_teardown(test_layout_checked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_integrity_checked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_storeq_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_storeq_retry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_storeq_fail_tells_owners, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
