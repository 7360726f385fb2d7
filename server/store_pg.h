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
 * One lcnd per database: the write connection holds a session advisory lock
 * (taken again after a reconnection); a second daemon is refused at open
 * with a message that says so. Not yet here (issue 20's later parts): ids
 * drawn from the database for several daemons, claiming queued jobs with
 * leases, following another daemon's events. A lost connection fails the
 * calls (LCN_ESTORE) and the next call reconnects (the store queue retries
 * its commits, storeq.h); a connection attempt gives up after 2 s unless the
 * URL sets connect_timeout, but it is made by the caller's thread, the loop's
 * included (moving reconnection off the loop is part of issue 20's
 * database-fault item).
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
int pg_store_load_request(struct pg_store *st, int64_t job, char **body, size_t *len);
int pg_store_load_checkpoint(struct pg_store *st, int64_t job, struct store_checkpoint *ck);
int pg_store_load_events(struct pg_store *st, int64_t job, int64_t after, int limit,
                         store_event_cb cb, void *ctx);
int64_t pg_store_last_seq(struct pg_store *st, int64_t job);
int64_t pg_store_next_id(struct pg_store *st);
int pg_store_ping(struct pg_store *st);

/* The schema version this binary writes (the number of its migrations). */
int pg_store_schema_version(void);

#endif
