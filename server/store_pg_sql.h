/*
 * store_pg_sql.h - the libpq helpers the two PostgreSQL files share
 * (store_pg.c, the job store; store_pg_queue.c, the shared queue). Not for
 * other modules: they go through store.h and store_pg_queue.h.
 */
#ifndef LCN_SERVER_STORE_PG_SQL_H
#define LCN_SERVER_STORE_PG_SQL_H

#include <stddef.h>

#include <libpq-fe.h>

/* A connection to url (connect_timeout 2 s unless the URL sets one), or
 * NULL with libpq's reason in err (err may be NULL). */
PGconn *pg_connect(const char *url, char *err, size_t errlen);

/* libpq's last message on c without its trailing newline. */
void pg_conn_error(PGconn *c, char *err, size_t errlen);

/* Runs sql with n parameters (text, except those with lens[i] >= 0:
 * binary of that length; lens may be NULL). Returns the result (the caller
 * clears it) when it succeeded, else NULL with the message in err. */
PGresult *pg_run(PGconn *c, const char *sql, int n, const char *const *vals, const int *lens,
                 char *err, size_t errlen);

/* pg_run for statements whose result is not needed: 0 or LCN_ESTORE. */
int pg_exec(PGconn *c, const char *sql, int n, const char *const *vals, const int *lens, char *err,
            size_t errlen);

/* The bytea value at (row, col) of res, unescaped into a malloc'd buffer
 * with a NUL after it; NULL when it cannot be decoded. */
unsigned char *pg_bytea(const PGresult *res, int row, int col, size_t *len);

/* A job's checkpoint: the query (parameter $1 the job id) and the decoding
 * of its one row into ck (0, or LCN_ESTORE for a row that does not decode). */
#define PG_SQL_CHECKPOINT \
    "SELECT seq, elapsed_s, k, nk, phi, c, final, n, layout FROM checkpoints WHERE job = $1"
struct store_checkpoint;
int pg_checkpoint_row(const PGresult *res, struct store_checkpoint *ck);

#endif
