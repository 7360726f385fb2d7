/*
 * store_pg.h - the job store in PostgreSQL (issue 20, first part): the same
 * operations and the same meaning as the SQLite store (store.h), for a
 * database named by a URL (store_url = postgresql://... in the
 * configuration). store.c hands every call of a store opened from such a
 * URL to these functions, so the daemon above does not know which one it
 * writes to.
 *
 * Schema: the SQLite store's tables (meta, jobs, requests, events,
 * checkpoints) with PostgreSQL types (bigint ids, text status and event
 * bodies, bytea request bodies and layouts). It is created and migrated by
 * lcnd itself: meta's schema_version names the last migration applied; a
 * database whose version is newer than this binary's is refused with a
 * message that says so. Migrations run in one transaction under an advisory
 * lock, so daemons started at once against a new database do not race.
 *
 * Connections: one for writes (the store thread, like SQLite's write
 * connection) and one for reads, shared by the loop and the thread pool
 * under a mutex (a libpq connection serves one query at a time).
 *
 * Several daemons share one database (issue 20): ids come from meta's
 * next_id in blocks, queued jobs are claimed with leases and followed by
 * every daemon (store_pg_queue.h); an op that belongs to a claim is fenced
 * (store.h: written only while its claim holds). A lost connection fails
 * the calls (LCN_ESTORE); the write connection reconnects on its next
 * commit (the store thread: the store queue retries, storeq.h); the read
 * connection reconnects on its next read, or, once pg_store_heal_elsewhere
 * was called, only through pg_store_heal on another thread, so that the
 * loop never waits for a connection attempt (up to 2 s unless the URL sets
 * connect_timeout).
 */
#ifndef LCN_SERVER_STORE_PG_H
#define LCN_SERVER_STORE_PG_H

#include <stddef.h>
#include <stdint.h>

#include "server/store.h"

struct pg_store;

/* 1 when url names a PostgreSQL database (postgresql:// or postgres://). */
int pg_store_is_url(const char *url);

/* Connects, creates or migrates the schema. Returns 0 with *out, or
 * LCN_ESTORE with the reason in err (the password, if any, never is). */
int pg_store_open(const char *url, struct pg_store **out, char *err, size_t errlen);
void pg_store_close(struct pg_store *st);

int pg_store_apply(struct pg_store *st, struct store_op *ops, char *err, size_t errlen);
void pg_store_fail_commits(struct pg_store *st, int n);
int pg_store_load_jobs(struct pg_store *st, store_job_cb cb, void *ctx);
int pg_store_load_job(struct pg_store *st, int64_t job, store_job_cb cb, void *ctx);
int pg_store_load_request(struct pg_store *st, int64_t job, char **body, size_t *len);
int pg_store_load_checkpoint(struct pg_store *st, int64_t job, struct store_checkpoint *ck);
int pg_store_load_events(struct pg_store *st, int64_t job, int64_t after, int limit,
                         store_event_cb cb, void *ctx);
int64_t pg_store_last_seq(struct pg_store *st, int64_t job);
int64_t pg_store_next_id(struct pg_store *st);
int pg_store_ping(struct pg_store *st);

/* From now on a read whose connection dropped fails at once; pg_store_heal
 * reconnects. */
void pg_store_heal_elsewhere(struct pg_store *st);
/* Reconnects the read connection when it dropped, or when force is set
 * (blocks the caller for up to the connect timeout: not the loop). Returns
 * 0 when it is usable. */
int pg_store_heal(struct pg_store *st, int force);

/* The schema version this binary writes (the number of its migrations). */
int pg_store_schema_version(void);

#endif
