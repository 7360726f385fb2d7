/*
 * cluster.c - the cluster thread (cluster.h has the design): the shared
 * queue's rounds against the database, and their hand-over to the loop.
 */
#include "server/cluster.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "server/log.h"
#include "server/store_pg_queue.h"
#include "util.h"

/* The most jobs with a DELETE pending claimed in one round. */
#define CANCEL_CLAIMS 16

static void job_free(struct cluster_job *j)
{
    if (j->req) {
        job_request_release(j->req);
        free(j->req);
    }
    if (j->have_ck)
        store_checkpoint_release(&j->ck);
    free(j);
}

static void list_free(struct cluster_job *l)
{
    while (l) {
        struct cluster_job *next = l->next;
        job_free(l);
        l = next;
    }
}

static void wake(struct cluster *c)
{
    char b = 1;
    ssize_t rc = write(c->wake[1], &b, 1);
    (void)rc; /* a full pipe is awake already */
}

/* ------------------------------------------------------------ the thread */

struct round {
    struct cluster *c;
    struct cluster_job *head, *tail;
    int claimed;
};

/* A row as the thread keeps it: the status parsed here, off the loop. */
static void take_row(void *ctx, const struct pg_queue_row *row)
{
    struct round *r = ctx;
    struct cluster_job *j = xcalloc(1, sizeof *j);
    j->id = row->id;
    j->claim = row->claim;
    j->cancel = row->cancel;
    json_error_t je;
    json_t *js = json_loads(row->status, 0, &je);
    j->status_ok = js && job_status_parse(&j->st, js) == 0 && j->st.id == row->id;
    json_decref(js);
    if (r->tail)
        r->tail->next = j;
    else
        r->head = j;
    r->tail = j;
}

/* What a claimed job needs to run, read and parsed here. */
static void load_claimed(struct cluster *c, struct cluster_job *j)
{
    char *body = NULL, err[256] = "";
    size_t len = 0;
    int rc = pg_queue_load(c->q, j->id, &body, &len, &j->ck, &j->have_ck, &j->last_seq, err,
                           sizeof err);
    if (rc) {
        j->retry = rc == LCN_ESTORE;
        snprintf(j->why, sizeof j->why, "cannot read the job from the store: %.200s", err);
        return;
    }
    struct job_limits lim = {LCN_MAX_NODES, LCN_MAX_EDGES, 1e12, 1};
    struct job_error e;
    struct job_request *req = xcalloc(1, sizeof *req);
    if (job_request_parse(req, body, len, &lim, &e)) {
        snprintf(j->why, sizeof j->why, "stored request does not parse: %.100s: %.120s", e.field,
                 e.msg);
        free(req);
    } else {
        j->req = req;
    }
    free(body);
}

static void append(struct cluster_job **head, struct cluster_job **tail, struct cluster_job *l,
                   struct cluster_job *ltail)
{
    if (!l)
        return;
    if (*tail)
        (*tail)->next = l;
    else
        *head = l;
    *tail = ltail;
}

/* Renews the held claims when due (and always after a failed round). */
static int renew(struct cluster *c, int64_t *last_ns, char *err, size_t errlen)
{
    int64_t now = lcn_now_ns();
    if (*last_ns && now - *last_ns < c->cfg.lease_ms * 1000000 / 5)
        return 0;
    pthread_mutex_lock(&c->mu);
    size_t n = c->n_held;
    int64_t *claims = xmalloc(sizeof *claims * (n + 1));
    memcpy(claims, c->held, sizeof *claims * n);
    pthread_mutex_unlock(&c->mu);
    int64_t k = pg_queue_renew(c->q, claims, (int)n, err, errlen);
    free(claims);
    if (k < 0)
        return LCN_ESTORE;
    if ((size_t)k < n)
        log_debug("cluster: %lld of %zu claims renewed (the rest ended or were lost)",
                  (long long)k, n);
    *last_ns = now;
    pthread_mutex_lock(&c->mu);
    c->renewed_ns = now;
    pthread_mutex_unlock(&c->mu);
    return 0;
}

static int claim_some(struct cluster *c, struct round *cl, char *err, size_t errlen)
{
    pthread_mutex_lock(&c->mu);
    int cpu = c->want_cpu, gpu = c->want_gpu, devices = c->devices, healthy = c->healthy_devices;
    pthread_mutex_unlock(&c->mu);
    if (cpu < 0)
        return 0; /* stopping */
    int n = pg_queue_claim(c->q, 1, NULL, 0, 0, 0, CANCEL_CLAIMS, take_row, cl, err, errlen);
    if (n < 0)
        return LCN_ESTORE;
    if (cpu + gpu > 0) {
        const char *b[3];
        int nb = 0;
        b[nb++] = "auto";
        if (cpu)
            b[nb++] = "cpu";
        if (gpu)
            b[nb++] = "gpu";
        int m = pg_queue_claim(c->q, 0, b, nb, devices, healthy, cpu + gpu, take_row, cl, err,
                               errlen);
        if (m < 0)
            return LCN_ESTORE;
        n += m;
    }
    pthread_mutex_lock(&c->mu);
    for (struct cluster_job *j = cl->head; j; j = j->next) {
        xgrow((void **)&c->held, sizeof *c->held, &c->cap_held, c->n_held + 1);
        c->held[c->n_held++] = j->claim;
        /* its worker is taken, until the loop says again (after its
         * schedule) how many are idle */
        if (!j->cancel && c->want_cpu > 0)
            c->want_cpu--;
        else if (!j->cancel && c->want_gpu > 0)
            c->want_gpu--;
    }
    pthread_mutex_unlock(&c->mu);
    for (struct cluster_job *j = cl->head; j; j = j->next)
        load_claimed(c, j);
    return 0;
}

/* One round; 0, or LCN_ESTORE with the reason in err. */
static int round_run(struct cluster *c, int64_t *renewed, int *delivered, char *err, size_t errlen)
{
    int conn = pg_queue_connected(c->q, err, errlen);
    if (!conn)
        return LCN_ESTORE;
    /* after an outage the store's read connection is dead too, though
     * libpq only finds out at its next read: replace it now */
    store_heal(c->store, conn == 2);
    if (renew(c, renewed, err, errlen))
        return LCN_ESTORE;
    pthread_mutex_lock(&c->mu);
    int ids = c->want_ids;
    pthread_mutex_unlock(&c->mu);
    int64_t first = 0;
    if (ids && pg_queue_ids(c->q, c->cfg.id_block, &first, err, errlen))
        return LCN_ESTORE;
    struct round rows = {c, NULL, NULL, 0}, cl = {c, NULL, NULL, 1};
    int rc = pg_queue_changes(c->q, take_row, &rows, err, errlen) < 0 ? LCN_ESTORE : 0;
    if (!rc)
        rc = claim_some(c, &cl, err, errlen);
    pthread_mutex_lock(&c->mu);
    append(&c->rows, &c->rows_tail, rows.head, rows.tail);
    append(&c->claims, &c->claims_tail, cl.head, cl.tail);
    if (ids) {
        c->want_ids = 0;
        c->ids_first = first;
        c->ids_n = c->cfg.id_block;
    }
    pthread_mutex_unlock(&c->mu);
    *delivered = rows.head || cl.head || ids;
    return rc;
}

static void *thread_main(void *arg)
{
    struct cluster *c = arg;
    int64_t renewed = 0;
    for (;;) {
        pthread_mutex_lock(&c->mu);
        int quit = c->quit;
        uint64_t round = ++c->begun;
        int synced = c->want_sync;
        c->want_sync = 0;
        pthread_mutex_unlock(&c->mu);
        if (quit)
            break;
        char err[300] = "";
        int delivered = 0;
        int rc = round_run(c, &renewed, &delivered, err, sizeof err);
        delivered |= synced;
        pthread_mutex_lock(&c->mu);
        c->ended = round;
        if (rc && c->healthy)
            log_warn("cluster: the database cannot be reached: %s", err);
        else if (!rc && !c->healthy && c->rounds)
            log_info("cluster: the database is reachable again");
        c->healthy = !rc;
        snprintf(c->why, sizeof c->why, "%s", rc ? err : "");
        c->rounds++;
        pthread_mutex_unlock(&c->mu);
        if (delivered)
            uv_async_send(&c->async);
        if (rc)
            renewed = 0; /* renew first thing once the database is back */
        pthread_mutex_lock(&c->mu);
        int again = c->want_sync;
        pthread_mutex_unlock(&c->mu);
        /* a failed round waits even when a sync is wanted: no busy loop
         * while the database is away */
        if (!again || rc)
            pg_queue_wait(c->q, c->wake[0], (int)c->cfg.poll_ms);
    }
    return NULL;
}

/* ------------------------------------------------------------ the loop */

static void on_async(uv_async_t *h)
{
    struct cluster *c = h->data;
    pthread_mutex_lock(&c->mu);
    struct cluster_job *rows = c->rows, *claims = c->claims;
    c->rows = c->rows_tail = c->claims = c->claims_tail = NULL;
    int64_t first = c->ids_first, n = c->ids_n;
    c->ids_n = 0;
    pthread_mutex_unlock(&c->mu);
    if (rows)
        c->cb.rows(c->cb.ctx, rows);
    list_free(rows);
    if (claims)
        c->cb.claimed(c->cb.ctx, claims);
    list_free(claims);
    if (n)
        c->cb.ids(c->cb.ctx, first, n);
    pthread_mutex_lock(&c->mu);
    uint64_t ended = c->ended;
    pthread_mutex_unlock(&c->mu);
    c->cb.synced(c->cb.sctx, ended);
}

static void on_lease_timer(uv_timer_t *t)
{
    struct cluster *c = t->data;
    pthread_mutex_lock(&c->mu);
    int lost = c->n_held > 0 && lcn_now_ns() - c->renewed_ns > c->give_up_ns;
    size_t n = c->n_held;
    pthread_mutex_unlock(&c->mu);
    if (lost) {
        log_error("cluster: no lease renewal for %.1f s: stopping the %zu jobs this daemon holds "
                  "so that no other daemon runs them at the same time",
                  (double)c->give_up_ns / 1e9, n);
        c->cb.lost(c->cb.ctx);
    }
}

int cluster_start(struct cluster *c, uv_loop_t *loop, struct store *st,
                  const struct cluster_config *cfg, const struct cluster_callbacks *cb, char *err,
                  size_t errlen)
{
    memset(c, 0, sizeof *c);
    c->loop = loop;
    c->store = st;
    c->cfg = *cfg;
    c->cb = *cb;
    c->give_up_ns = cfg->lease_ms * 1000000 * 3 / 4;
    char why[300] = "";
    int rc = pg_queue_open(cfg->url, cfg->owner, cfg->lease_ms, &c->q, why, sizeof why);
    if (rc) {
        snprintf(err, errlen, "postgresql store (queue connection): %s", why);
        return rc;
    }
    int64_t back = pg_queue_release_owner(c->q, why, sizeof why);
    if (back < 0) {
        snprintf(err, errlen, "postgresql store: %s", why);
        pg_queue_close(c->q);
        return LCN_ESTORE;
    }
    if (back > 0)
        log_info("cluster: %lld jobs a previous life of '%s' held are claimable again",
                 (long long)back, cfg->owner);
    if (pipe(c->wake)) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        pg_queue_close(c->q);
        return LCN_ESTORE;
    }
    fcntl(c->wake[0], F_SETFL, O_NONBLOCK);
    fcntl(c->wake[1], F_SETFL, O_NONBLOCK);
    store_heal_elsewhere(st);
    pthread_mutex_init(&c->mu, NULL);
    c->healthy = 1;
    c->renewed_ns = lcn_now_ns();
    c->want_ids = 1;
    uv_async_init(loop, &c->async, on_async);
    c->async.data = c;
    uv_timer_init(loop, &c->lease_timer);
    c->lease_timer.data = c;
    uv_timer_start(&c->lease_timer, on_lease_timer, 100, 100);
    if (pthread_create(&c->th, NULL, thread_main, c)) {
        snprintf(err, errlen, "cannot start the cluster thread");
        uv_close((uv_handle_t *)&c->async, NULL);
        uv_close((uv_handle_t *)&c->lease_timer, NULL);
        return LCN_ESTORE;
    }
    c->started = 1;
    return 0;
}

void cluster_want(struct cluster *c, int cpu_idle, int gpu_idle, int devices, int healthy)
{
    pthread_mutex_lock(&c->mu);
    int more = cpu_idle > c->want_cpu || gpu_idle > c->want_gpu || devices > c->devices;
    c->want_cpu = cpu_idle;
    c->want_gpu = gpu_idle;
    c->devices = devices;
    c->healthy_devices = healthy;
    pthread_mutex_unlock(&c->mu);
    if (more)
        wake(c);
}

uint64_t cluster_sync(struct cluster *c)
{
    pthread_mutex_lock(&c->mu);
    uint64_t next = c->begun + 1;
    int wake_it = !c->want_sync;
    c->want_sync = 1;
    pthread_mutex_unlock(&c->mu);
    if (wake_it)
        wake(c);
    return next;
}

void cluster_want_ids(struct cluster *c)
{
    pthread_mutex_lock(&c->mu);
    c->want_ids = 1;
    pthread_mutex_unlock(&c->mu);
    wake(c);
}

void cluster_drop(struct cluster *c, int64_t claim)
{
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < c->n_held; i++)
        if (c->held[i] == claim) {
            c->held[i] = c->held[--c->n_held];
            break;
        }
    pthread_mutex_unlock(&c->mu);
}

int cluster_healthy(struct cluster *c, char *why, size_t len)
{
    pthread_mutex_lock(&c->mu);
    int ok = c->healthy;
    if (!ok)
        snprintf(why, len, "%s", c->why);
    pthread_mutex_unlock(&c->mu);
    return ok;
}

void cluster_stop(struct cluster *c)
{
    if (!c->started)
        return;
    pthread_mutex_lock(&c->mu);
    c->quit = 1;
    pthread_mutex_unlock(&c->mu);
    wake(c);
    pthread_join(c->th, NULL);
    c->started = 0;
    uv_timer_stop(&c->lease_timer);
    uv_close((uv_handle_t *)&c->async, NULL);
    uv_close((uv_handle_t *)&c->lease_timer, NULL);
    list_free(c->rows);
    list_free(c->claims);
    c->rows = c->claims = NULL;
    free(c->held);
    c->held = NULL;
    close(c->wake[0]);
    close(c->wake[1]);
    pthread_mutex_destroy(&c->mu);
    pg_queue_close(c->q);
}
