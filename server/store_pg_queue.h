/*
 * store_pg_queue.h - the shared queue's statements (issue 20): what the
 * cluster thread (cluster.h) asks a PostgreSQL job store that several
 * daemons share. One struct pg_queue is one connection of its own, used by
 * one thread (it blocks: never the loop).
 *
 * The jobs table's columns for the queue (store_pg.c, migration 2):
 *   backend      the requested backend; claims filter on it
 *   owner        the name of the daemon that claimed the job last
 *   claim        that claim's number (sequence claims): the fence of the
 *                owner's writes (store.h, store_op.claim)
 *   lease_until  ms (the database's clock) until which the claim holds;
 *                0 when nobody holds the job
 *   cancel       a DELETE came through a daemon that does not run the job
 *   txid         the transaction that last wrote the row (a trigger sets
 *                it), which pg_queue_changes follows
 * A job may be claimed when it is queued or running and its lease_until
 * has passed (0 for a job nobody claimed, or one released at a shutdown):
 * jobs with a DELETE pending first, then interrupted ones, then the oldest.
 */
#ifndef LCN_SERVER_STORE_PG_QUEUE_H
#define LCN_SERVER_STORE_PG_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#include "server/store.h"

struct pg_queue;

/* One row of the jobs table as the queue reads it; valid for the call. */
struct pg_queue_row {
    int64_t id;
    int64_t claim; /* 0: none */
    int cancel;
    const char *state;
    const char *status;
};
typedef void (*pg_queue_row_cb)(void *ctx, const struct pg_queue_row *row);

/* Connects (no schema work: store_open did that) and takes the owner
 * name's lock for the connection's life, waiting up to lease_ms for a
 * previous session of the name to end. Returns 0 with *out, LCN_EBUSY when
 * another live daemon holds the name, or LCN_ESTORE, with the reason in
 * err. owner names this daemon in the owner column; lease_ms is the lease
 * a claim or a renewal gives. */
int pg_queue_open(const char *url, const char *owner, int64_t lease_ms, struct pg_queue **out,
                  char *err, size_t errlen);
void pg_queue_close(struct pg_queue *q);

/* 1 when the connection is usable, 2 when it is after a reconnection (it
 * had dropped; LISTEN is issued and the name's lock taken again), else 0
 * with the reason in err (also when another daemon took the name while
 * this one was cut off). */
int pg_queue_connected(struct pg_queue *q, char *err, size_t errlen);

/* Gives back every claim held under this daemon's owner name (a previous
 * life of this daemon that died: it runs nothing any more). Returns the
 * number of jobs released or LCN_ESTORE. */
int64_t pg_queue_release_owner(struct pg_queue *q, char *err, size_t errlen);

/* Reserves n ids: *first .. *first + n - 1 are this daemon's to give out.
 * Returns 0 or LCN_ESTORE. */
int pg_queue_ids(struct pg_queue *q, int64_t n, int64_t *first, char *err, size_t errlen);

/* Every row written since the previous call (the first call: every row),
 * in one snapshot; a row may come again. Returns the number of rows or
 * LCN_ESTORE. */
int pg_queue_changes(struct pg_queue *q, pg_queue_row_cb cb, void *ctx, char *err, size_t errlen);

/* Claims up to limit claimable jobs (header) in one transaction: with
 * cancels = 1 only those with a DELETE pending (any backend), else only
 * those without one whose backend is one of backends[0..nb) and whose run
 * needs at most max_gpus devices (the gpus column; below 1 counts as 1, so a
 * daemon without GPUs still claims one-device jobs). A gpu or auto job
 * newer than a claimable one this daemon could run on its healthy devices
 * (gpus <= healthy) but not now (gpus > max_gpus) is left alone: the older
 * job waits for the devices, and newer GPU jobs do not take them one at a
 * time (the local queue's rule, DAEMON.md). Each claimed row goes to cb.
 * Returns the number claimed or LCN_ESTORE. */
int pg_queue_claim(struct pg_queue *q, int cancels, const char *const *backends, int nb, int max_gpus,
                   int healthy, int limit, pg_queue_row_cb cb, void *ctx, char *err, size_t errlen);

/* What a claimed job needs to run: its request (*body, malloc'd), its
 * checkpoint (*have_ck: 1 when there is one; release it with
 * store_checkpoint_release) and its largest event seq. Returns 0,
 * LCN_ENOTFOUND when what is stored is missing or does not decode (for
 * good), or LCN_ESTORE when a statement failed (the connection, a
 * timeout: worth another try). */
int pg_queue_load(struct pg_queue *q, int64_t id, char **body, size_t *len,
                  struct store_checkpoint *ck, int *have_ck, int64_t *last_seq, char *err,
                  size_t errlen);

/* Renews the lease of the claims[0..n) whose lease has not expired.
 * Returns the number renewed or LCN_ESTORE. */
int64_t pg_queue_renew(struct pg_queue *q, const int64_t *claims, int n, char *err, size_t errlen);

/* Waits up to timeout_ms for a notification (a job queued or a DELETE
 * through any daemon) or for wake_fd to become readable (drained). Returns
 * 1 when something came, 0 on timeout. */
int pg_queue_wait(struct pg_queue *q, int wake_fd, int timeout_ms);

#endif
