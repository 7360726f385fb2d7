/*
 * store.h - the durable job store: one SQLite database (WAL mode) in the
 * state directory.
 *
 * Schema (docs/DAEMON.md has the full story):
 *   meta(key, value)                 schema_version (2), next_id (the id the
 *                                    next job gets: raised by every insert
 *                                    in its transaction, never lowered, so
 *                                    ids are never reused whatever
 *                                    retention deletes)
 *   jobs(id, state, created_ms, updated_ms, status)
 *                                    status = the job status JSON the API
 *                                    shows (proto/job.h), the source of
 *                                    truth after a restart
 *   requests(job, body)              the POST /jobs body as received
 *   events(job, seq, body)           progress events, body = event JSON
 *   checkpoints(job, seq, elapsed_s, K, nK, Phi, C, final, n, layout)
 *                                    the latest validated layout of a job
 *                                    (n points, little-endian int32 x, y);
 *                                    final = 1 once the job ended
 *
 * Writes go through store_apply, which runs a batch of operations in one
 * transaction: the batch is durable (per the configured synchronous mode)
 * when it returns 0. Reads use a second connection, so a reader never waits
 * for a commit in progress (WAL).
 *
 * Threading: the write connection is used by one thread at a time (the
 * store thread, see storeq.h; or the loop at start-up before that thread
 * exists). The read connection is opened in SQLite's serialized mode and
 * may be used from any thread; the loop uses it for short indexed reads
 * and the thread pool for request and layout blobs.
 */
#ifndef LCN_SERVER_STORE_H
#define LCN_SERVER_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "geom.h"
#include "objective.h"

struct store;

/* One event row. */
struct store_event {
    int64_t seq;
    char *body; /* event JSON, owned */
};

/* One job's writes within a batch. Every part is optional. */
struct store_op {
    int64_t job;
    /* insert the job with its request (create = 1) */
    int create;
    int64_t created_ms;
    char *request; /* owned */
    size_t request_len;
    /* replace the job row's state and status (status != NULL) */
    char *state;  /* owned */
    char *status; /* owned */
    int64_t updated_ms;
    /* append events */
    struct store_event *events; /* owned */
    int32_t n_events, cap_events;
    /* replace the checkpoint (layout != NULL) */
    struct lcn_pt *layout; /* owned, n points */
    int32_t n;
    struct lcn_obj obj;
    double elapsed_s;
    int64_t ckpt_seq;
    int final;
    /* delete the job and everything it owns (applied after the rest) */
    int remove;
    /* only raise next_id past job: an id given out whose insert was given
     * up after a failed commit (jobs.c) stays used */
    int reserve;

    /* The shared queue (PostgreSQL only, store_pg.h; the SQLite store
     * never sees these set). claim > 0: the op belongs to the run that
     * holds this claim on the job, and is applied only while the claim is
     * the job's and its lease has not expired (it renews the lease by
     * lease_ms); otherwise nothing of it is written and fenced is set.
     * release: the claim is given up after the op's writes (the job may be
     * claimed by any daemon at once). cancel_flag: a DELETE through a
     * daemon that does not run the job: only the job's cancel column is set
     * (and the daemons are notified). backend and gpus: the requested
     * backend of an inserted job (lcn_backend_name) and the devices its run
     * needs (solver.gpus, 1 for "all"), which claims filter on. */
    int64_t claim;
    int64_t lease_ms;
    int release;
    int cancel_flag;
    const char *backend; /* static string, not owned */
    int32_t gpus;
    int fenced;          /* filled by store_apply */

    /* filled by store_apply */
    int rc;
    /* set by storeq once the op is part of a batch: no more changes */
    int sealed;
    /* owner's fields (the loop's) */
    void *owner;
    struct store_op *next;
};

/* Allocates a zeroed op for job. */
struct store_op *store_op_new(int64_t job);
/* Appends an event (body is taken over). */
void store_op_add_event(struct store_op *op, int64_t seq, char *body);
/* Turns op into an id reservation (reserve = 1): frees and clears every
 * other part (the owner is left alone). */
void store_op_make_reserve(struct store_op *op);
/* Frees an op and everything it owns. */
void store_op_free(struct store_op *op);

enum store_sync { STORE_SYNC_NORMAL = 0, STORE_SYNC_FULL = 1 };

/*
 * Opens (creating when missing) the database at path, in WAL mode with the
 * given synchronous mode, and creates the schema; a version 1 database is
 * migrated (next_id). Returns 0 with *out set, or LCN_ESTORE with a
 * message in err. A path that is a postgresql:// (or postgres://) URL opens
 * the PostgreSQL store instead (store_pg.h: the same operations, the same
 * meaning; sync does not apply), and every call below goes there.
 */
int store_open(const char *path, int sync, struct store **out, char *err, size_t errlen);
void store_close(struct store *st);

/*
 * Applies the ops of the list (linked by next) in one transaction. Returns
 * 0 once committed, or LCN_ESTORE (nothing of the batch is applied; the
 * message is in err). Sets op->rc for every op.
 */
int store_apply(struct store *st, struct store_op *ops, char *err, size_t errlen);

/* Test hook: the next n calls of store_apply fail at COMMIT, as on a full
 * disk (everything is rolled back, err says "injected"). Any thread. */
void store_fail_commits(struct store *st, int n);

/* Called by store_load_jobs for each job in ascending id order; status is
 * valid for the call only. Return nonzero to stop. */
typedef int (*store_job_cb)(void *ctx, int64_t id, const char *state, const char *status);
int store_load_jobs(struct store *st, store_job_cb cb, void *ctx);

/* Calls cb for the job with this id when it exists. Returns 1 (found), 0
 * (no such job) or LCN_ESTORE. */
int store_load_job(struct store *st, int64_t job, store_job_cb cb, void *ctx);

/* The request body of a job (malloc'd, NUL-terminated, *len without the
 * NUL). Returns 0, LCN_ENOTFOUND or LCN_ESTORE. */
int store_load_request(struct store *st, int64_t job, char **body, size_t *len);

struct store_checkpoint {
    struct lcn_pt *layout; /* malloc'd, n points */
    int32_t n;
    struct lcn_obj obj;
    double elapsed_s;
    int64_t seq;
    int final;
};

/* The latest checkpoint of a job. Returns 0, LCN_ENOTFOUND (none yet) or
 * LCN_ESTORE. */
int store_load_checkpoint(struct store *st, int64_t job, struct store_checkpoint *ck);
void store_checkpoint_release(struct store_checkpoint *ck);

/* Called by store_load_events for each event, oldest first. */
typedef void (*store_event_cb)(void *ctx, int64_t seq, const char *body);
/* Events of job with seq > after, at most limit. Returns the number of
 * events delivered or LCN_ESTORE. */
int store_load_events(struct store *st, int64_t job, int64_t after, int limit, store_event_cb cb,
                      void *ctx);

/* The largest event seq stored for job (0 when none), or LCN_ESTORE. */
int64_t store_last_seq(struct store *st, int64_t job);

/* The id the next job gets (meta next_id, > every id ever stored), or
 * LCN_ESTORE. */
int64_t store_next_id(struct store *st);

/* A cheap liveness query on the read connection. Returns 0 or LCN_ESTORE. */
int store_ping(struct store *st);

/* 1 when the store is a PostgreSQL database (shared by several daemons:
 * store_pg.h). */
int store_is_shared(const struct store *st);

/* PostgreSQL only (no-ops for SQLite): from store_heal_elsewhere on, a read
 * whose connection dropped fails at once instead of reconnecting on the
 * caller's thread, and store_heal (called by a thread that may block)
 * reconnects it, when it dropped or when force is set (the caller knows the
 * server went away). store_heal returns 0 when reads can proceed. */
void store_heal_elsewhere(struct store *st);
int store_heal(struct store *st, int force);


#endif
