/*
 * engine.c - the CPU engine: starting layouts, then parallel tempering over
 * annealing replicas (anneal.h) on worker threads.
 *
 * Concurrency design:
 *   - The calling thread builds the starting layouts, starts T workers and
 *     then only coordinates: every few milliseconds it drains the progress
 *     queue into on_progress, sends telemetry and checkpoints, and watches
 *     the clock. Every callback therefore runs on the calling thread.
 *   - In a sweep, each replica runs sweep_moves moves (the coldest slot's
 *     times cold_boost) on whichever worker takes it from the shared
 *     hand-out counter; then all workers meet at a barrier; worker 0 alone runs the exchange step
 * (elite update, replica exchanges, step-size adaptation, restarts, stop decisions) while the
 * others wait at a second barrier. Everything the exchange step decides depends on replica states
 * only, never on timing, so a run that is not cut by the clock or the cancel flag is a
 * deterministic function of (graph, layout, parameters) for any number of workers.
 *   - Shared between threads: `stop` (atomic; set by anyone, read by all),
 *     the elite layout and the progress queue (mutex `mu`), and the
 *     published telemetry counters (relaxed atomics, written by the owning
 *     worker, read by the coordinator).
 */
#include "engine.h"

#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "anneal.h"
#include "crossings.h"
#include "err.h"
#include "layout.h"
#include "opts.h"
#include "rng.h"
#include "state.h"
#include "stop.h"
#include "util.h"
#include "validate.h"

const char *engine_stop_name(enum engine_stop s)
{
#define ENGINE_STOP_STR(name, str) [ENGINE_STOP_##name] = str,
    static const char *const names[] = {ENGINE_STOP_MAP(ENGINE_STOP_STR)};
#undef ENGINE_STOP_STR
    return (unsigned)s < LCN_ARRAY_LEN(names) ? names[s] : "?";
}

void engine_telemetry_add(struct engine_telemetry *a, const struct engine_telemetry *b)
{
#define ADD(f) a->f += b->f;
    ENGINE_TEL_COUNTERS(ADD)
#undef ADD
    for (int k = 0; k < ENGINE_OPS; k++) {
        a->ops[k].tried += b->ops[k].tried;
        a->ops[k].valid += b->ops[k].valid;
        a->ops[k].accepted += b->ops[k].accepted;
        a->ops[k].improved += b->ops[k].improved;
    }
}

void engine_params_default(struct engine_params *p)
{
    memset(p, 0, sizeof(*p));
    p->seed = 1;
    p->target_k = -1;
    p->start_ns = lcn_now_ns();
    p->deadline_ns = p->start_ns + 10 * (int64_t)1000000000;
}

static int limit_check(const char *name, int32_t v, int32_t max, char *err, size_t errlen)
{
    if (v >= 0 && v <= max)
        return 0;
    if (err && errlen)
        snprintf(err, errlen, "%s: %d is outside [0, %d]", name, v, max);
    return LCN_EINVAL;
}

int engine_params_check(const struct engine_params *p, char *err, size_t errlen)
{
    int rc = limit_check("threads", p->threads, LCN_MAX_THREADS, err, errlen);
    if (!rc)
        rc = limit_check("replicas", p->replicas, LCN_MAX_REPLICAS, err, errlen);
    if (!rc)
        rc = limit_check("proposal_workers", p->proposal_workers, LCN_MAX_PROPOSAL_WORKERS, err,
                         errlen);
    if (!rc)
        rc = limit_check("gpus", p->gpus, ENGINE_MAX_DEVICES, err, errlen);
    return rc;
}

void engine_result_release(struct engine_result *r)
{
    free(r->layout);
    memset(r, 0, sizeof(*r));
}

/* ---- knobs ------------------------------------------------------------- */

struct cpu_knobs {
    struct anneal_params ap;
    int32_t sweep_moves;    /* moves per replica between exchanges; 0 = from the graph size */
    double t_lo, t_hi;      /* temperature ladder ends */
    double t_shape;         /* ladder position f in [0,1] maps to t_lo (t_hi/t_lo)^(f^t_shape) */
    int32_t stall_sweeps;   /* restart the cold half from the elite after this many flat sweeps */
    double restart_share;   /* the share of the ladder, coldest first, that restarts (0.5: half) */
    int32_t cold_boost;     /* the coldest slot's replica runs this many sweeps' moves per sweep */
    double start_share;     /* share of the budget the starting layouts may use */
    int32_t starts;         /* bit mask over enum layout_kind */
    int32_t start_variants; /* rounds of (stress, force) starts with seeds seed + round */
    int32_t start_rank;     /* 0: rank starts by tuple, 1: by total crossings first */
    int32_t start_spread;   /* 1: replica r starts from the r-th start; 0: all from the best;
                               -1: 1 on sparse graphs (m <= 2.5 n), else 0 */
    int32_t evaluator;      /* 0 auto (chosen per graph and start), 1 grid, 2 scan */
    double accept_lo, accept_hi; /* step-size adaptation band (accepted / selected) */
    int32_t debug;               /* 1: print per-slot statistics to stderr at the end */
    int32_t fault_stall_ms; /* fault injection for the daemon's tests: once its start is
                               validated the run sleeps this long, deaf to its deadline
                               and cancel flag */
    int32_t ckpt_solo;      /* checkpoints (the elite revalidated, the fallback of the final
                               pass) for a caller without on_layout: -1 when one oracle pass
                               takes >= LCN_ORACLE_CHEAP_NS, 0 never, 1 always */
    int32_t fault_final_miss; /* tests: the final oracle pass counts as out of time */
};

static void knobs_default(struct cpu_knobs *k)
{
    memset(k, 0, sizeof(*k));
    anneal_params_default(&k->ap);
    k->sweep_moves = 0;
    k->t_lo = 0.02;
    k->t_hi = 3.0;
    k->t_shape = 1.0;
    k->stall_sweeps = 50;
    k->restart_share = 0.5;
    k->cold_boost = 1;
    k->start_share = 0.15;
    k->start_variants = 4;
    k->start_rank = 0;
    k->start_spread = -1;
    k->starts = (1 << LAYOUT_INPUT) | (1 << LAYOUT_FORCE) | (1 << LAYOUT_STRESS) |
                (1 << LAYOUT_RANDOM) | (1 << LAYOUT_CIRCLE) | (1 << LAYOUT_DESCENT);
    k->accept_lo = 0.2;
    k->accept_hi = 0.5;
    k->ckpt_solo = -1;
}

#define AP(f) offsetof(struct cpu_knobs, ap) + offsetof(struct anneal_params, f)
/* starts: "+"-separated layout kind names, stored as a bit mask. */
static int parse_starts(const char *val, void *field, char *err, size_t errlen)
{
    int32_t mask = 0;
    int rc = 0;
    char *s2 = NULL, *vcopy = xstrdup(val);
    for (char *nm = strtok_r(vcopy, "+", &s2); nm && !rc; nm = strtok_r(NULL, "+", &s2)) {
        enum layout_kind lk;
        if (layout_kind_parse(nm, &lk)) {
            snprintf(err, errlen, "unknown layout '%s'", nm);
            rc = LCN_EINVAL;
        } else {
            mask |= 1 << lk;
        }
    }
    free(vcopy);
    if (!rc && mask == 0) {
        snprintf(err, errlen, "no layout named");
        rc = LCN_EINVAL;
    }
    if (!rc)
        *(int32_t *)field = mask;
    return rc;
}

static const struct opt knob_table[] = {
    OPT_I32("proposal_workers", AP(proposal_workers), 1, LCN_MAX_PROPOSAL_WORKERS),
    OPT_CHOICE("ops", AP(ops_mode), ENGINE_OPS_MODES), /* enum anneal_ops_mode */
    OPT_DBL("p_global", AP(p_global), 0, 1),
    OPT_DBL("p_bary", AP(p_bary), 0, 1),
    OPT_DBL("p_median", AP(p_median), 0, 1),
    OPT_DBL("p_empty", AP(p_empty), 0, 1),
    OPT_DBL("p_pair", AP(p_pair), 0, 1),
    OPT_DBL("p_swap", AP(p_swap), 0, 1),
    OPT_DBL("p_cluster", AP(p_cluster), 0, 1),
    OPT_DBL("bandit_floor", AP(bandit_floor), 0, 1.0 / ENGINE_OPS),
    OPT_I32("bandit_every", AP(bandit_every), 1, 1e9),
    OPT_DBL("bandit_decay", AP(bandit_decay), 0, 0.999999),
    OPT_DBL("bandit_bonus", AP(bandit_bonus), 0, 1e9),
    OPT_DBL("p_focus", AP(p_focus), 0, 1),
    OPT_DBL("p_partner", AP(p_partner), 0, 1),
    OPT_DBL("p_weighted", AP(p_weighted), 0, 1),
    OPT_I32("focus_slack", AP(focus_slack), 0, 1e6),
    OPT_DBL("a_K", AP(a_K), 0, 1e9),
    OPT_DBL("a_nK", AP(a_nK), 0, 1e9),
    OPT_DBL("lin", AP(lin), 0, 1e9),
    OPT_DBL("quad", AP(quad), 0, 1e9),
    OPT_DBL("exp_w", AP(exp_w), 0, 1e9),
    OPT_DBL("base", AP(base), 1.01, 1e3),
    OPT_DBL("beta_k", AP(beta_k), 0, 100),
    OPT_DBL("hinge_w", AP(hinge_w), 0, 1e9),
    OPT_I32("hinge_off", AP(hinge_off), -1000, 1000),
    OPT_DBL("pnorm_w", AP(pnorm_w), 0, 1e9),
    OPT_DBL("pnorm_rho", AP(pnorm_rho), 0.01, 10),
    OPT_I32("sweep_moves", offsetof(struct cpu_knobs, sweep_moves), 0, 1e8),
    OPT_DBL("t_lo", offsetof(struct cpu_knobs, t_lo), 0, 1e9),
    OPT_DBL("t_hi", offsetof(struct cpu_knobs, t_hi), 0, 1e9),
    OPT_DBL("t_shape", offsetof(struct cpu_knobs, t_shape), 0.1, 10),
    OPT_I32("stall_sweeps", offsetof(struct cpu_knobs, stall_sweeps), 1, 1e9),
    OPT_DBL("restart_share", offsetof(struct cpu_knobs, restart_share), 0, 1),
    OPT_I32("cold_boost", offsetof(struct cpu_knobs, cold_boost), 1, 64),
    OPT_DBL("start_share", offsetof(struct cpu_knobs, start_share), 0, 1),
    {.name = "starts",
     .kind = OPT_CUSTOM,
     .off = offsetof(struct cpu_knobs, starts),
     .set = parse_starts},
    OPT_I32("start_variants", offsetof(struct cpu_knobs, start_variants), 1, 1000),
    OPT_I32("start_rank", offsetof(struct cpu_knobs, start_rank), 0, 1),
    OPT_I32("start_spread", offsetof(struct cpu_knobs, start_spread), -1, 1),
    OPT_CHOICE("evaluator", offsetof(struct cpu_knobs, evaluator), "auto|grid|scan"),
    OPT_DBL("accept_lo", offsetof(struct cpu_knobs, accept_lo), 0, 1),
    OPT_DBL("accept_hi", offsetof(struct cpu_knobs, accept_hi), 0, 1),
    OPT_I32("debug", offsetof(struct cpu_knobs, debug), 0, 1),
    OPT_I32("fault_stall_ms", offsetof(struct cpu_knobs, fault_stall_ms), 0, 600000),
    OPT_I32("ckpt_solo", offsetof(struct cpu_knobs, ckpt_solo), -1, 1),
    OPT_I32("fault_final_miss", offsetof(struct cpu_knobs, fault_final_miss), 0, 1),
};
#undef AP

/* Parses "key=value,..." into k (opts.h). */
static int cpu_knobs_parse(struct cpu_knobs *k, const char *spec, char *err, size_t errlen)
{
    return opts_parse_kv(knob_table, LCN_ARRAY_LEN(knob_table), k, spec, "tuning", err, errlen);
}

int engine_cpu_tuning_check(const char *tuning, char *err, size_t errlen)
{
    struct cpu_knobs k;
    knobs_default(&k);
    return cpu_knobs_parse(&k, tuning, err, errlen);
}

int engine_tuning_fault(const char *tuning, char *knob, size_t len)
{
    /* the keys as opts_parse_kv reads them: items between commas, up to '=' */
    for (const char *p = tuning; p && *p;) {
        size_t n = strcspn(p, ","), k = strcspn(p, "=,");
        const struct opt *o = opts_find(knob_table, LCN_ARRAY_LEN(knob_table), p, k);
        if (k < n && o && !strncmp(o->name, "fault_", 6)) {
            if (knob && len)
                snprintf(knob, len, "%.*s", (int)k, p);
            return 1;
        }
        p += n + (p[n] == ',');
    }
    return 0;
}

/* ---- shared run state ---------------------------------------------------- */

#define EVQ_CAP 1024
/* published counters per replica: 8 run counters, then 4 per operator */
#define PUB_OPS 8
#define PUB_N   (PUB_OPS + 4 * ENGINE_OPS)

struct run {
    const struct lcn_graph *g;
    const struct engine_params *p;
    struct cpu_knobs kn;
    int32_t R, T;
    int64_t sweep_moves;
    enum state_eval eval;
    struct anneal_replica *rep;
    struct anneal_energy en;
    double *slot_T, *slot_sigma;
    int32_t *rep_at;               /* slot -> replica */
    int32_t *slot_of;              /* replica -> slot */
    uint64_t *last_sel, *last_acc; /* per replica, at the previous exchange step */
    struct lcn_rng xrng;
    pthread_barrier_t bar;
    atomic_int stop;     /* workers: leave the sweep now */
    atomic_int next;     /* next index into order[] to hand out in this sweep */
    int32_t *order;      /* replicas in hand-out order: the boosted cold slot first */
    atomic_int finished; /* set by the exchange step: the workers exit */
    enum engine_stop stop_reason; /* decided by the exchange step */
    int64_t stop_ns;     /* the annealing deadline (before the final validation) */
    int64_t began_ns;    /* lcn_now_ns() when engine_cpu_run began */
    int64_t sweeps, last_elite_sweep;
    uint64_t exchanges_attempted, exchanges_accepted, restarts; /* exchange step only */

    pthread_mutex_t mu; /* guards everything below */
    struct lcn_pt *elite;
    struct lcn_obj elite_obj;
    uint64_t elite_version;
    struct lcn_obj gbest; /* best tuple claimed so far (events) */
    struct engine_event evq[EVQ_CAP];
    int32_t evq_len;
    uint64_t best_updates;
    double ttt;
    int target_hit;
    uint64_t tel_exch_att, tel_exch_acc, tel_restarts;

    /* published counters, per replica: written by the owning worker */
    _Atomic uint64_t (*pub)[PUB_N];
};

static double elapsed_s(const struct run *run)
{
    return (double)(lcn_now_ns() - run->p->start_ns) / 1e9;
}

/* Records a strict improvement of the best claimed tuple (under mu). */
static void note_best_locked(struct run *run, const struct lcn_obj *o, const char *stage)
{
    if (obj_cmp(o, &run->gbest) >= 0)
        return;
    run->gbest = *o;
    run->best_updates++;
    struct engine_event ev = {elapsed_s(run), stage, *o};
    if (run->evq_len < EVQ_CAP)
        run->evq[run->evq_len++] = ev;
    else
        run->evq[EVQ_CAP - 1] = ev; /* coalesce: keep the newest */
    if (run->p->target_k >= 0 && o->K <= run->p->target_k && !run->target_hit) {
        run->target_hit = 1;
        run->ttt = ev.elapsed_s;
    }
}

static void on_improve(void *ctx, int32_t replica, const struct lcn_obj *best)
{
    struct run *run = ctx;
    pthread_mutex_lock(&run->mu);
    note_best_locked(run, best, "anneal");
    pthread_mutex_unlock(&run->mu);
}

static void publish_counters(struct run *run, int32_t r)
{
    const struct anneal_counters *c = &run->rep[r].cnt;
    _Atomic uint64_t *p = run->pub[r];
    atomic_store_explicit(&p[0], c->attempted, memory_order_relaxed);
    atomic_store_explicit(&p[1], c->valid, memory_order_relaxed);
    atomic_store_explicit(&p[2], c->evaluated, memory_order_relaxed);
    atomic_store_explicit(&p[3], c->selected, memory_order_relaxed);
    atomic_store_explicit(&p[4], c->accepted, memory_order_relaxed);
    atomic_store_explicit(&p[5], c->rejected, memory_order_relaxed);
    atomic_store_explicit(&p[6], c->committed, memory_order_relaxed);
    atomic_store_explicit(&p[7], run->rep[r].st.pair_tests, memory_order_relaxed);
    for (int op = 0; op < ENGINE_OPS; op++) {
        const struct engine_op_stats *o = &c->ops[op];
        _Atomic uint64_t *q = p + PUB_OPS + 4 * op;
        atomic_store_explicit(&q[0], o->tried, memory_order_relaxed);
        atomic_store_explicit(&q[1], o->valid, memory_order_relaxed);
        atomic_store_explicit(&q[2], o->accepted, memory_order_relaxed);
        atomic_store_explicit(&q[3], o->improved, memory_order_relaxed);
    }
}

static void collect_telemetry(struct run *run, struct engine_telemetry *t)
{
    memset(t, 0, sizeof(*t));
    for (int32_t r = 0; r < run->R; r++) {
        _Atomic uint64_t *p = run->pub[r];
        t->attempted += atomic_load_explicit(&p[0], memory_order_relaxed);
        t->valid += atomic_load_explicit(&p[1], memory_order_relaxed);
        t->evaluated += atomic_load_explicit(&p[2], memory_order_relaxed);
        t->selected += atomic_load_explicit(&p[3], memory_order_relaxed);
        t->accepted += atomic_load_explicit(&p[4], memory_order_relaxed);
        t->rejected += atomic_load_explicit(&p[5], memory_order_relaxed);
        t->committed += atomic_load_explicit(&p[6], memory_order_relaxed);
        t->pair_tests += atomic_load_explicit(&p[7], memory_order_relaxed);
        for (int op = 0; op < ENGINE_OPS; op++) {
            struct engine_op_stats *o = &t->ops[op];
            _Atomic uint64_t *q = p + PUB_OPS + 4 * op;
            o->tried += atomic_load_explicit(&q[0], memory_order_relaxed);
            o->valid += atomic_load_explicit(&q[1], memory_order_relaxed);
            o->accepted += atomic_load_explicit(&q[2], memory_order_relaxed);
            o->improved += atomic_load_explicit(&q[3], memory_order_relaxed);
        }
    }
    pthread_mutex_lock(&run->mu);
    t->best_updates = run->best_updates;
    t->exchanges_attempted = run->tel_exch_att;
    t->exchanges_accepted = run->tel_exch_acc;
    t->restarts = run->tel_restarts;
    pthread_mutex_unlock(&run->mu);
    t->elapsed_s = elapsed_s(run);
}

/* ---- the exchange step (worker 0, all others parked at the barrier) ---- */

/* The hand-out order of the next sweep: the coldest slot's replica first. */
static void set_order(struct run *run)
{
    int32_t k = 0;
    run->order[k++] = run->rep_at[0];
    for (int32_t r = 0; r < run->R; r++)
        if (r != run->rep_at[0])
            run->order[k++] = r;
    atomic_store(&run->next, 0);
}

static void exchange_step(struct run *run)
{
    int32_t R = run->R;
    run->sweeps++;
    for (int32_t r = 0; r < R; r++)
        anneal_replica_flush_best(&run->rep[r]);

    /* elite: the best replica best, lowest index on ties */
    int32_t bi = 0;
    for (int32_t r = 1; r < R; r++)
        if (obj_cmp(&run->rep[r].best, &run->rep[bi].best) < 0)
            bi = r;
    if (obj_cmp(&run->rep[bi].best, &run->elite_obj) < 0) {
        pthread_mutex_lock(&run->mu);
        memcpy(run->elite, run->rep[bi].best_pts, sizeof(struct lcn_pt) * (size_t)run->g->n);
        run->elite_obj = run->rep[bi].best;
        run->elite_version++;
        pthread_mutex_unlock(&run->mu);
        run->last_elite_sweep = run->sweeps;
    }

    /* stop decisions: deterministic ones first */
    const struct engine_params *p = run->p;
    int reason = -1;
    if (run->elite_obj.C == 0)
        reason = ENGINE_STOP_OPTIMAL;
    else if (p->stop_at_target && p->target_k >= 0 && run->elite_obj.K <= p->target_k)
        reason = ENGINE_STOP_TARGET;
    else if (p->move_limit > 0 && run->sweeps * run->sweep_moves >= p->move_limit)
        reason = ENGINE_STOP_LIMIT;
    else if (p->cancel && atomic_load(p->cancel))
        reason = ENGINE_STOP_CANCELLED;
    else if (atomic_load(&run->stop) || lcn_now_ns() >= run->stop_ns)
        reason = ENGINE_STOP_DEADLINE;
    if (reason >= 0) {
        run->stop_reason = reason;
        atomic_store(&run->finished, 1);
        return;
    }

    /* energy reference follows the elite's K */
    anneal_energy_set_kref(&run->en, run->elite_obj.K);

    /* step size per slot, from the acceptance of the replica that ran there */
    double maxdim = LCN_MAX(1.0, LCN_MAX(run->g->width, run->g->height) / 2.0);
    for (int32_t r = 0; r < R; r++) {
        const struct anneal_counters *c = &run->rep[r].cnt;
        uint64_t sel = c->selected - run->last_sel[r], acc = c->accepted - run->last_acc[r];
        run->last_sel[r] = c->selected;
        run->last_acc[r] = c->accepted;
        if (sel < 16)
            continue;
        double ratio = (double)acc / (double)sel, *sg = &run->slot_sigma[run->slot_of[r]];
        if (ratio > run->kn.accept_hi)
            *sg = LCN_MIN(maxdim, *sg * 1.15);
        else if (ratio < run->kn.accept_lo)
            *sg = LCN_MAX(1.0, *sg / 1.15);
    }

    /* replica exchange between neighbouring temperatures */
    double *E = xmalloc(sizeof(double) * (size_t)R);
    for (int32_t r = 0; r < R; r++)
        E[r] = anneal_energy_of(&run->en, &run->rep[r].st);
    for (int32_t s = (int32_t)(run->sweeps & 1); s + 1 < R; s += 2) {
        int32_t a = run->rep_at[s], b = run->rep_at[s + 1];
        double x = (1.0 / run->slot_T[s] - 1.0 / run->slot_T[s + 1]) * (E[a] - E[b]);
        run->exchanges_attempted++;
        if (x >= 0 || rng_unit53(&run->xrng) < exp(x)) {
            run->exchanges_accepted++;
            run->rep_at[s] = b;
            run->rep_at[s + 1] = a;
            run->slot_of[a] = s + 1;
            run->slot_of[b] = s;
        }
    }
    free(E);

    /* restarts in waves: when the elite is flat, the cold half (restart_share) restarts from it */
    if (run->sweeps - run->last_elite_sweep >= run->kn.stall_sweeps) {
        for (int32_t s = 0; s < engine_restart_slots(run->kn.restart_share, R); s++) {
            int32_t r = run->rep_at[s];
            anneal_replica_reset(&run->rep[r], run->elite);
            run->restarts++;
        }
        run->last_elite_sweep = run->sweeps;
    }

    set_order(run);
    pthread_mutex_lock(&run->mu);
    run->tel_exch_att = run->exchanges_attempted;
    run->tel_exch_acc = run->exchanges_accepted;
    run->tel_restarts = run->restarts;
    pthread_mutex_unlock(&run->mu);
}

struct worker {
    struct run *run;
    int32_t t;
    pthread_t th;
};

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct run *run = w->run;
    for (;;) {
        /* replicas are handed out dynamically, longest sweeps first: which thread
         * runs a replica does not change its trajectory */
        for (;;) {
            int32_t i = atomic_fetch_add(&run->next, 1);
            if (i >= run->R || atomic_load_explicit(&run->stop, memory_order_relaxed))
                break;
            int32_t r = run->order[i];
            int32_t s = run->slot_of[r];
            struct anneal_ctl ctl = {
                .en = &run->en,
                .T = run->slot_T[s],
                .sigma = run->slot_sigma[s],
                .stop = &run->stop,
                .cancel = run->p->cancel,
                .stop_ns = run->stop_ns,
                .on_improve = on_improve,
                .ctx = run,
            };
            int64_t moves = run->sweep_moves * (s == 0 ? run->kn.cold_boost : 1);
            anneal_sweep(&run->rep[r], &run->kn.ap, &ctl, moves);
            publish_counters(run, r);
        }
        pthread_barrier_wait(&run->bar);
        if (w->t == 0)
            exchange_step(run);
        pthread_barrier_wait(&run->bar);
        if (atomic_load(&run->finished))
            break;
    }
    return NULL;
}

/* ---- publishing ----------------------------------------------------------- */

/* The hard limit of every phase (stop.h: the deadline, the cancel flag
 * from LCN_CANCEL_GRACE_NS into the run). */
static struct lcn_stop hard_stop(const struct run *run)
{
    return lcn_stop_run(run->p, run->began_ns);
}

static void drain_events(struct run *run)
{
    struct engine_event ev[EVQ_CAP];
    pthread_mutex_lock(&run->mu);
    int32_t k = run->evq_len;
    memcpy(ev, run->evq, sizeof(ev[0]) * (size_t)k);
    run->evq_len = 0;
    pthread_mutex_unlock(&run->mu);
    if (run->p->on_progress)
        for (int32_t i = 0; i < k; i++)
            run->p->on_progress(run->p->ctx, &ev[i]);
}

/* ---- the run ---------------------------------------------------------- */

static int32_t default_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : (int32_t)LCN_MIN(n, 256);
}

static int64_t auto_sweep_moves(const struct lcn_graph *g)
{
    /* a few milliseconds of moves per replica between exchanges on graphs of
     * a few hundred edges; fewer on large graphs, whose moves cost more */
    return g->m > 20000 ? 25 : (g->m > 4000 ? 50 : 100);
}

/*
 * Picks the faster evaluator for this graph and start by timing both on
 * the same sample of moves (W candidates for each of a few nodes, local and
 * medium steps). The two evaluators are exact twins and the energy is exact
 * (anneal.h), so the run's trajectory and result do not depend on this
 * timing-based choice, only its speed does (tests/unit/test_engine.c runs
 * both and compares the layouts).
 */
static enum state_eval choose_evaluator(const struct lcn_state *proto, int32_t workers, int debug,
                                        const struct lcn_stop *stop)
{
    const struct lcn_graph *g = proto->g;
    if (g->m == 0 || g->n == 0)
        return STATE_EVAL_GRID;
    double ns_per[2] = {0, 0};
    int32_t W = LCN_MAX(1, workers);
    for (int ev = 0; ev < 2; ev++) {
        struct lcn_state st;
        if (state_clone_stop(&st, proto, stop))
            return STATE_EVAL_GRID; /* no time to time them: either counts exactly */
        state_set_evaluator(&st, (enum state_eval)ev);
        struct lcn_move mv;
        move_init(&mv);
        struct lcn_rng r;
        rng_init(&r, 0x45564131u, 0, RNG_PURPOSE_INIT);
        int32_t maxdim = LCN_MAX(g->width, g->height);
        int64_t t0 = lcn_now_ns(), spent = 0;
        int32_t done = 0;
        for (int32_t i = 0; i < 256 && (i < 8 || spent < 3000000); i++) {
            int32_t v = (int32_t)rng_below(&r, (uint32_t)g->n);
            int32_t rad = LCN_MAX(1, (i & 1) ? maxdim / 8 : maxdim / 64);
            for (int32_t w = 0; w < W; w++) {
                struct lcn_pt q = st.pts[v];
                q.x =
                    LCN_MAX(0, LCN_MIN(g->width,
                                       q.x + (int32_t)rng_below(&r, 2 * (uint32_t)rad + 1) - rad));
                q.y =
                    LCN_MAX(0, LCN_MIN(g->height,
                                       q.y + (int32_t)rng_below(&r, 2 * (uint32_t)rad + 1) - rad));
                state_propose(&st, v, q, &mv);
                done++;
            }
            spent = lcn_now_ns() - t0;
        }
        ns_per[ev] = (double)spent / LCN_MAX(1, done);
        move_release(&mv);
        state_release(&st);
    }
    if (debug)
        fprintf(stderr, "evaluator ns per proposal: grid %.0f scan %.0f\n", ns_per[0], ns_per[1]);
    return ns_per[STATE_EVAL_SCAN] < ns_per[STATE_EVAL_GRID] ? STATE_EVAL_SCAN : STATE_EVAL_GRID;
}

/* A starting layout, its per-edge crossing counts and its tuple. */
struct start {
    struct lcn_pt *pts;
    int32_t *c;
    struct lcn_obj obj;
};

/* Ranking of starts: by tuple, or by total crossings first (start_rank=1). */
static int start_better(const struct cpu_knobs *kn, const struct lcn_obj *a,
                        const struct lcn_obj *b)
{
    if (kn->start_rank == 1 && a->C != b->C)
        return a->C < b->C;
    return obj_cmp(a, b) < 0;
}

/*
 * Builds starting layouts while the start share of the budget lasts: the
 * caller's layout, then rounds of (stress, force) variants with seeds
 * seed+round (round 0 also circle and random), at most start_variants
 * rounds. Keeps the best `keep` by the start ranking in st[0..*count),
 * best first, and reports a progress event for each strict improvement of
 * the best tuple. When the hard stop (deadline, cancel) fires, the starts
 * made so far are kept; with none made, its code is returned.
 */
static int build_starts(struct run *run, struct start *st, int32_t keep, int32_t *count)
{
    const struct lcn_graph *g = run->g;
    const struct engine_params *p = run->p;
    struct lcn_stop hard = hard_stop(run);
    int64_t budget = p->deadline_ns - p->start_ns;
    int64_t start_deadline = p->start_ns + (int64_t)(run->kn.start_share * (double)budget);
    static const char *const stage[] = {"start:input",  "start:force",  "start:stress",
                                        "start:random", "start:circle", "start:descent"};
    struct lcn_pt *pts = xmalloc(sizeof(*pts) * (size_t)(g->n ? g->n : 1));
    int32_t *c = xmalloc(sizeof(int32_t) * (size_t)(g->m ? g->m : 1));
    int have = 0, rc = 0, stop = 0;
    struct lcn_obj best_tuple = {0, 0, 0, 0};
    *count = 0;
    for (int32_t round = 0; round < run->kn.start_variants && !stop && !rc; round++) {
        /* the caller's layout first (a resumed job's checkpoint must come first),
         * then stress: cheap on any graph and the best start on sparse ones
         * (past LAYOUT_QUICK_NODES a quick one first) */
        static const enum layout_kind order[] = {LAYOUT_INPUT,  LAYOUT_STRESS, LAYOUT_STRESS,
                                                 LAYOUT_DESCENT, LAYOUT_FORCE, LAYOUT_CIRCLE,
                                                 LAYOUT_RANDOM};
        for (size_t i = 0; i < LCN_ARRAY_LEN(order); i++) {
            enum layout_kind k = order[i];
            const int quick = i == 1;
            if (!(run->kn.starts & (1 << k)))
                continue;
            if (quick && (round > 0 || g->n <= LAYOUT_QUICK_NODES))
                continue;
            if (round > 0 && k != LAYOUT_STRESS && k != LAYOUT_FORCE && k != LAYOUT_DESCENT)
                continue;
            if (k == LAYOUT_INPUT && !p->init)
                continue;
            if (!layout_start_worth(g, k, have, p->init, p->has_xy, start_deadline, p->deadline_ns))
                continue;
            if (have && (lcn_now_ns() >= start_deadline || (p->cancel && atomic_load(p->cancel)))) {
                stop = 1;
                break;
            }
            int64_t t_make = lcn_now_ns();
            int r = layout_make(g, k, p->seed + (uint64_t)round, p->init, p->has_xy,
                                quick ? layout_quick_deadline(start_deadline) : start_deadline,
                                &hard, pts);
            uint64_t tests;
            if (r == 0)
                r = crossings_grid_stop(g, pts, c, 0, &hard, &tests);
            if (run->kn.debug)
                fprintf(stderr, "start %s#%d: %d in %.3f s (at %.3f s)\n", layout_kind_name(k),
                        round, r, (double)(lcn_now_ns() - t_make) / 1e9, elapsed_s(run));
            if (r == LCN_EDEADLINE || r == LCN_ECANCELLED) {
                stop = 1;
                if (!have)
                    rc = r;
                break;
            }
            if (r)
                continue; /* e.g. repair found no valid point for some node: try the others */
            struct lcn_obj o;
            obj_from_counts(&o, c, g->m);
            if (run->kn.debug) {
                char b[96];
                obj_format(&o, b, sizeof(b));
                fprintf(stderr, "  -> %s\n", b);
            }
            if (!have || obj_cmp(&o, &best_tuple) < 0) {
                best_tuple = o;
                pthread_mutex_lock(&run->mu);
                note_best_locked(run, &o, stage[k]);
                pthread_mutex_unlock(&run->mu);
                /* reported now, not when the start phase (start_share of the
                 * budget) ends: a warm start's K shows at once */
                drain_events(run);
            }
            have = 1;
            /* insert into the kept list, best first */
            int32_t pos = *count;
            while (pos > 0 && start_better(&run->kn, &o, &st[pos - 1].obj))
                pos--;
            if (pos >= keep)
                continue;
            struct start tmp = st[keep - 1]; /* reuse the buffer that falls off */
            if (*count < keep)
                tmp = st[*count], (*count)++;
            for (int32_t j = *count - 1; j > pos; j--)
                st[j] = st[j - 1];
            st[pos] = tmp;
            memcpy(st[pos].pts, pts, sizeof(*pts) * (size_t)g->n);
            memcpy(st[pos].c, c, sizeof(*c) * (size_t)g->m);
            st[pos].obj = o;
        }
    }
    free(c);
    free(pts);
    if (!rc && !have)
        rc = LCN_EINVAL; /* no kind of start could be made valid in these bounds */
    return rc;
}

static void starts_free(struct start *st, int32_t keep)
{
    for (int32_t i = 0; i < keep; i++) {
        free(st[i].pts);
        free(st[i].c);
    }
    free(st);
}

/*
 * The replicas' states: replica r starts from starts[r % nstarts] (start
 * spread) or from the best start, each state built from the start's known
 * counts (no recount). Gives up between two replicas when the hard stop
 * fires: returns its code, with *ready replicas built.
 */
static int replicas_init(struct run *run, const struct start *starts, int32_t nstarts,
                         int32_t ebest, int32_t *ready)
{
    const struct lcn_graph *g = run->g;
    const struct engine_params *p = run->p;
    /* the states are built until the search's own stop time: past it the
     * rest of the budget is kept for validating the start's result */
    struct lcn_stop hard = hard_stop(run);
    hard.deadline_ns = run->stop_ns;
    int32_t R = run->R, maxdim = LCN_MAX(g->width, g->height);
    int rc = 0;
    *ready = 0;
    struct lcn_state *proto = xcalloc((size_t)nstarts, sizeof(*proto));
    rc = state_init_counts(&proto[ebest], g, starts[ebest].pts, starts[ebest].c, &hard);
    LCN_ASSERT(rc == 0 || rc == LCN_EDEADLINE || rc == LCN_ECANCELLED); /* valid and in bounds */
    if (rc) {
        free(proto);
        return rc;
    }
    /* past the stop time already (a budget shorter than the start phase on
     * a large graph): the workers stop at their first check, so no evaluator
     * is timed (either one counts exactly; only speed would differ) */
    run->eval = run->kn.evaluator == 1 ? STATE_EVAL_GRID
                : run->kn.evaluator == 2 ? STATE_EVAL_SCAN
                : lcn_now_ns() >= run->stop_ns
                    ? STATE_EVAL_GRID
                    : choose_evaluator(&proto[ebest], run->kn.ap.proposal_workers, run->kn.debug,
                                       &hard);
    state_set_evaluator(&proto[ebest], run->eval);
    for (int32_t i = 0; i < nstarts && i < R && run->kn.start_spread && !rc; i++) {
        if (i == ebest)
            continue;
        rc = state_init_counts(&proto[i], g, starts[i].pts, starts[i].c, &hard);
        if (!rc)
            state_set_evaluator(&proto[i], run->eval);
    }
    for (int32_t r = 0; r < R && !rc; r++) {
        rc = anneal_replica_init_stop(&run->rep[r], r,
                                      &proto[run->kn.start_spread ? r % nstarts : ebest], p->seed,
                                      run->kn.ap.proposal_workers, &hard);
        if (rc)
            break;
        double f = R > 1 ? (double)r / (R - 1) : 0;
        run->slot_T[r] = run->kn.t_lo * pow(run->kn.t_hi / run->kn.t_lo, pow(f, run->kn.t_shape));
        run->slot_sigma[r] = LCN_MAX(1.0, maxdim * (0.02 + 0.2 * f));
        run->rep_at[r] = r;
        run->slot_of[r] = r;
        *ready = r + 1;
    }
    for (int32_t i = 0; i < nstarts; i++)
        if (proto[i].g)
            state_release(&proto[i]);
    free(proto);
    return rc;
}

/*
 * The last validated layout of a run (the start, then each checkpoint the
 * oracle passed): what the run returns when the newest best cannot be
 * validated in time.
 */
struct validated {
    struct lcn_pt *pts;
    struct lcn_obj obj;
};

/*
 * Checkpoints: the elite, revalidated, when it changed since the last one.
 * The oracle gives up when the hard stop fires (the checkpoint is skipped,
 * the search is stopping anyway). Returns LCN_ECORRUPT when the oracle
 * disagrees with the elite's claim.
 */
static int checkpoint(struct run *run, struct lcn_pt *snap, uint64_t *published,
                      struct validated *last, int64_t *took)
{
    const struct lcn_graph *g = run->g;
    const struct engine_params *p = run->p;
    struct lcn_stop hard = hard_stop(run);
    pthread_mutex_lock(&run->mu);
    uint64_t ver = run->elite_version;
    struct lcn_obj eo = run->elite_obj;
    if (ver != *published)
        memcpy(snap, run->elite, sizeof(struct lcn_pt) * (size_t)g->n);
    pthread_mutex_unlock(&run->mu);
    if (ver == *published)
        return 0;
    /* version 0 is the start, which the oracle passed before the search */
    int64_t t0 = lcn_now_ns();
    int rc = ver == 0 ? 0 : validate_claim(g, snap, &eo, &hard, NULL, NULL, 0);
    *took = ver == 0 ? 0 : lcn_now_ns() - t0;
    if (rc == LCN_ECORRUPT)
        return rc;
    if (rc)
        return 0; /* stopped before a verdict */
    memcpy(last->pts, snap, sizeof(struct lcn_pt) * (size_t)g->n);
    last->obj = eo;
    *published = ver;
    if (p->on_layout)
        p->on_layout(p->ctx, snap, &eo, elapsed_s(run));
    return 0;
}

/*
 * The run's result: the elite, or a replica best that beat it after the
 * last step, once the oracle agrees. A stop by deadline validates it within
 * the time kept for that (stop_ns); a cancelled run validates it only when
 * the oracle takes a few milliseconds on this graph. Otherwise, or when the
 * oracle runs past the deadline, the last validated layout is the result:
 * a job ends within milliseconds of its deadline or of a DELETE.
 */
static int final_layout(struct run *run, int32_t ready, int64_t t_val, const struct validated *last,
                        struct lcn_pt *out, struct lcn_obj *obj)
{
    const struct lcn_graph *g = run->g;
    const struct engine_params *p = run->p;
    const struct lcn_pt *fin = run->elite;
    struct lcn_obj fin_obj = run->elite_obj;
    for (int32_t r = 0; r < ready; r++) {
        anneal_replica_flush_best(&run->rep[r]);
        if (obj_cmp(&run->rep[r].best, &fin_obj) < 0) {
            fin = run->rep[r].best_pts;
            fin_obj = run->rep[r].best;
        }
    }
    size_t bytes = sizeof(struct lcn_pt) * (size_t)g->n;
    /* the oracle's verdict on the last validated layout stands for the same points */
    int same = obj_cmp(&fin_obj, &last->obj) == 0 && memcmp(fin, last->pts, bytes) == 0;
    int cancelled = p->cancel && atomic_load(p->cancel);
    int rc = same ? 0 : LCN_ECANCELLED;
    if (!same && run->kn.fault_final_miss)
        rc = LCN_EDEADLINE; /* tests: as if the oracle ran out of time */
    else if (!same && (!cancelled || lcn_final_cheap(p, t_val))) {
        struct lcn_stop dl = lcn_final_stop(p, t_val);
        rc = validate_claim(g, fin, &fin_obj, &dl, NULL, NULL, 0);
        if (rc == LCN_ECORRUPT)
            return rc;
    }
    if (rc) {
        fin = last->pts;
        fin_obj = last->obj;
    }
    memcpy(out, fin, bytes);
    *obj = fin_obj;
    return 0;
}

/*
 * One CPU engine run, set-up, loop and teardown apart: cj_new (knobs and
 * the run), cj_setup (starts, the oracle's pass on the best one, the
 * replicas), cj_loop (the workers and the supervisor), cj_report (the
 * final layout and the result) and cj_free, the one cleanup path whatever
 * phase stopped the run.
 */
struct cpu_job {
    struct run *run;
    int64_t t_val;         /* one oracle pass on the start */
    int32_t ready;         /* replicas initialised */
    int halted;            /* the stop fired while the replicas were made */
    int corrupt;           /* the oracle disagreed with a claim */
    int mutex, replicas;   /* what cj_free must undo */
    struct lcn_obj start_obj;
    struct validated last; /* the last layout the oracle passed */
    struct lcn_pt *snap;   /* checkpoint and result buffer */
};

static void cj_free(struct cpu_job *cj)
{
    struct run *run = cj->run;
    if (!run)
        return;
    free(cj->snap);
    free(cj->last.pts);
    if (cj->replicas && !cj->halted) {
        pthread_barrier_destroy(&run->bar);
        anneal_energy_release(&run->en);
    }
    for (int32_t r = 0; r < cj->ready; r++)
        anneal_replica_release(&run->rep[r]);
    LCN_FREE_ALL(run->rep, run->pub, run->slot_T, run->slot_sigma, run->rep_at, run->slot_of,
                 run->order, run->last_sel, run->last_acc, run->elite);
    if (cj->mutex)
        pthread_mutex_destroy(&run->mu);
    free(run);
    cj->run = NULL;
}

/* The knobs (the tuning over the defaults, the caller's overrides) and the run's sizes. */
static int cj_new(struct cpu_job *cj, const struct lcn_graph *g, const struct engine_params *p)
{
    memset(cj, 0, sizeof(*cj));
    struct run *run = cj->run = xcalloc(1, sizeof(*run));
    run->g = g;
    run->p = p;
    knobs_default(&run->kn);
    char err[160];
    int rc = engine_params_check(p, err, sizeof(err));
    if (!rc)
        rc = cpu_knobs_parse(&run->kn, p->tuning, err, sizeof(err));
    if (rc) {
        fprintf(stderr, "lcn cpu: %s\n", err);
        return rc;
    }
    if (p->proposal_workers > 0)
        run->kn.ap.proposal_workers = p->proposal_workers;
    if (((int64_t)g->width + 1) * ((int64_t)g->height + 1) < g->n)
        return LCN_EINVAL;
    run->T = p->threads > 0 ? p->threads : default_threads();
    run->R = (int32_t)LCN_CPU_REPLICAS(run->T, p->replicas);
    run->T = LCN_MIN(run->T, run->R);
    run->sweep_moves = run->kn.sweep_moves > 0 ? run->kn.sweep_moves : auto_sweep_moves(g);
    pthread_mutex_init(&run->mu, NULL);
    cj->mutex = 1;
    run->gbest = (struct lcn_obj){INT32_MAX, INT32_MAX, INT64_MAX, INT64_MAX};
    run->elite_obj = run->gbest;
    run->ttt = -1;
    run->began_ns = lcn_now_ns();
    return 0;
}

/* The replicas' arrays, the elite and the validated start; then the replicas
 * from the ranked starts (replica r from starts[r % nstarts]). */
static void cj_replicas(struct cpu_job *cj, const struct start *starts, int32_t nstarts, int32_t ebest)
{
    struct run *run = cj->run;
    const struct lcn_graph *g = run->g;
    int32_t R = run->R;
    size_t nbytes = sizeof(struct lcn_pt) * (size_t)(g->n ? g->n : 1);
    run->rep = xcalloc((size_t)R, sizeof(*run->rep));
    run->pub = xcalloc((size_t)R, sizeof(*run->pub));
    run->slot_T = xmalloc(sizeof(double) * (size_t)R);
    run->slot_sigma = xmalloc(sizeof(double) * (size_t)R);
    run->rep_at = xmalloc(sizeof(int32_t) * (size_t)R);
    run->slot_of = xmalloc(sizeof(int32_t) * (size_t)R);
    run->order = xmalloc(sizeof(int32_t) * (size_t)R);
    run->last_sel = xcalloc((size_t)R, sizeof(uint64_t));
    run->last_acc = xcalloc((size_t)R, sizeof(uint64_t));
    run->elite = xmalloc(nbytes);
    memcpy(run->elite, starts[ebest].pts, sizeof(struct lcn_pt) * (size_t)g->n);
    run->elite_obj = cj->start_obj;
    cj->last.pts = xmalloc(nbytes);
    cj->last.obj = cj->start_obj;
    memcpy(cj->last.pts, starts[ebest].pts, sizeof(struct lcn_pt) * (size_t)g->n);
    cj->snap = xmalloc(nbytes);
    cj->halted = replicas_init(run, starts, nstarts, ebest, &cj->ready);
    cj->replicas = 1;
    if (!cj->halted) {
        set_order(run);
        anneal_energy_init(&run->en, &run->kn.ap, g->m, cj->start_obj.K);
        rng_init(&run->xrng, run->p->seed, 0, RNG_PURPOSE_EXCHANGE);
        pthread_barrier_init(&run->bar, NULL, (unsigned)run->T);
    }
}

/* Up to R ranked starts; the oracle passes the best one before anything is
 * published (timing it tells how early the search must stop to validate its
 * result); then the replicas. */
static int cj_setup(struct cpu_job *cj)
{
    struct run *run = cj->run;
    const struct lcn_graph *g = run->g;
    const struct engine_params *p = run->p;
    struct lcn_stop hard = hard_stop(run);
    if (run->kn.start_spread < 0)
        run->kn.start_spread = 2 * (int64_t)g->m <= 5 * (int64_t)g->n;
    int32_t keep = LCN_MAX(1, LCN_MIN(run->R, 64)), nstarts = 0;
    struct start *starts = xcalloc((size_t)keep, sizeof(*starts));
    for (int32_t i = 0; i < keep; i++) {
        starts[i].pts = xmalloc(sizeof(struct lcn_pt) * (size_t)(g->n ? g->n : 1));
        starts[i].c = xmalloc(sizeof(int32_t) * (size_t)(g->m ? g->m : 1));
    }
    int rc = build_starts(run, starts, keep, &nstarts);
    drain_events(run);
    /* the elite starts as the best tuple among them (the best reported) */
    int32_t ebest = 0;
    for (int32_t i = 1; i < nstarts; i++)
        if (obj_cmp(&starts[i].obj, &starts[ebest].obj) < 0)
            ebest = i;
    int64_t t0 = lcn_now_ns();
    if (!rc)
        rc = validate_claim(g, starts[ebest].pts, &starts[ebest].obj, &hard, NULL, NULL, 0);
    cj->t_val = lcn_now_ns() - t0;
    if (rc) {
        starts_free(starts, keep);
        return rc; /* LCN_EDEADLINE / LCN_ECANCELLED: nothing validated in time */
    }
    if (run->kn.fault_stall_ms > 0) { /* fault injection (tests): deaf to everything */
        struct timespec ts = {run->kn.fault_stall_ms / 1000,
                              (long)(run->kn.fault_stall_ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) != 0)
            ;
    }
    cj->start_obj = starts[ebest].obj;
    run->stop_ns = p->deadline_ns - LCN_MAX((int64_t)5000000, lcn_final_reserve_ns(p, cj->t_val));
    if (run->kn.debug)
        fprintf(stderr, "starts done at %.3f s, oracle %.3f s\n", elapsed_s(run),
                (double)cj->t_val / 1e9);
    cj_replicas(cj, starts, nstarts, ebest);
    starts_free(starts, keep);
    return 0;
}

/* The workers sweep while this thread drains events, publishes telemetry
 * and checkpoints (the first one, the validated start, at once: a crash
 * before the first interval still leaves a layout to resume from) and
 * raises the stop at the deadline or on cancel. */
static void cj_loop(struct cpu_job *cj)
{
    struct run *run = cj->run;
    const struct engine_params *p = run->p;
    if (run->kn.debug)
        fprintf(stderr, "replicas ready at %.3f s, evaluator %d\n", elapsed_s(run), (int)run->eval);
    if (cj->halted) {
        run->stop_reason = cj->halted == LCN_ECANCELLED ? ENGINE_STOP_CANCELLED : ENGINE_STOP_DEADLINE;
        return;
    }
    if (run->g->m == 0 || cj->start_obj.C == 0) {
        run->stop_reason = ENGINE_STOP_OPTIMAL;
        atomic_store(&run->finished, 1);
        return;
    }
    int64_t tel_every = p->telemetry_interval_ns > 0 ? p->telemetry_interval_ns : 1000000000;
    int64_t ckpt_every = p->checkpoint_interval_ns > 0 ? p->checkpoint_interval_ns : 1000000000;
    int64_t next_tel = lcn_now_ns() + tel_every, next_ckpt = lcn_now_ns();
    /* Without a caller's on_layout the elite is still revalidated now and
     * then when the oracle is slow (a large graph): the final pass may not
     * fit the time kept for it (an annealed layout can take the oracle
     * longer than the start did), and then the last validated layout is
     * the result. At most a quarter of the supervisor's time goes to it. */
    const int ckpt = p->on_layout != NULL || run->kn.ckpt_solo == 1 ||
                     (run->kn.ckpt_solo < 0 && cj->t_val >= LCN_ORACLE_CHEAP_NS);
    if (!p->on_layout)
        ckpt_every = LCN_MAX(ckpt_every, 4 * cj->t_val);
    int64_t stop_at = run->stop_ns; /* moved earlier when a pass took longer than t_val */
    uint64_t published_version = UINT64_MAX;
    struct worker *ws = xcalloc((size_t)run->T, sizeof(*ws));
    for (int32_t t = 0; t < run->T; t++) {
        ws[t].run = run;
        ws[t].t = t;
        if (pthread_create(&ws[t].th, NULL, worker_main, &ws[t]) != 0)
            LCN_ASSERT(!"pthread_create failed");
    }
    while (!atomic_load(&run->finished)) {
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
        int64_t now = lcn_now_ns();
        if (now >= stop_at || (p->cancel && atomic_load(p->cancel)))
            atomic_store(&run->stop, 1);
        drain_events(run);
        if (p->on_telemetry && now >= next_tel) {
            struct engine_telemetry t;
            collect_telemetry(run, &t);
            p->on_telemetry(p->ctx, &t);
            next_tel = now + tel_every;
        }
        if (ckpt && now >= next_ckpt && !atomic_load(&run->stop)) {
            int64_t took = 0;
            if (checkpoint(run, cj->snap, &published_version, &cj->last, &took) != 0) {
                cj->corrupt = 1;
                atomic_store(&run->stop, 1);
            }
            if (took > cj->t_val) { /* keep time for a pass as slow as this one */
                cj->t_val = took;
                stop_at = LCN_MIN(stop_at, p->deadline_ns - LCN_MAX((int64_t)5000000,
                                                                    lcn_final_reserve_ns(p, took)));
            }
            next_ckpt = lcn_now_ns() + ckpt_every;
        }
    }
    for (int32_t t = 0; t < run->T; t++)
        pthread_join(ws[t].th, NULL);
    free(ws);
}

/* debug=1: each slot's temperature, step, acceptance and tuples (and the bandit's mix). */
static void cj_debug_slots(const struct cpu_job *cj)
{
    const struct run *run = cj->run;
    for (int32_t sl = 0; sl < cj->ready; sl++) {
        const struct anneal_replica *rp = &run->rep[run->rep_at[sl]];
        char b1[96], b2[96];
        struct lcn_obj cur;
        state_obj(&rp->st, &cur);
        obj_format(&cur, b1, sizeof(b1));
        obj_format(&rp->best, b2, sizeof(b2));
        fprintf(stderr,
                "slot %2d T %.4f sigma %8.1f | replica %2d acc/sel %.3f zero/sel %.3f cur %s "
                "best %s\n",
                sl, run->slot_T[sl], run->slot_sigma[sl], rp->id,
                rp->cnt.selected ? (double)rp->cnt.accepted / rp->cnt.selected : 0,
                rp->cnt.selected ? (double)(rp->cnt.replica_best_updates / 1000000) / rp->cnt.selected
                                 : 0,
                b1, b2);
        if (run->kn.ap.ops_mode == ANNEAL_OPS_BANDIT) {
            fprintf(stderr, "        bandit after %lld updates:", (long long)rp->bandit.updates);
            for (int op = 0; op < ENGINE_OPS; op++)
                fprintf(stderr, " %s %.3f", engine_op_name((enum engine_op)op), rp->bandit.prob[op]);
            fprintf(stderr, "\n");
        }
    }
}

/* The final layout (revalidated, or the last validated one) and the result. */
static int cj_report(struct cpu_job *cj, struct engine_result *out)
{
    struct run *run = cj->run;
    const struct engine_params *p = run->p;
    drain_events(run);
    struct lcn_obj fin_obj;
    if (!cj->corrupt && final_layout(run, cj->ready, cj->t_val, &cj->last, cj->snap, &fin_obj) != 0)
        cj->corrupt = 1;
    if (run->kn.debug)
        cj_debug_slots(cj);
    struct engine_telemetry tel;
    for (int32_t r = 0; r < cj->ready; r++)
        publish_counters(run, r); /* the workers are gone: the exact final counts */
    collect_telemetry(run, &tel);
    if (cj->corrupt)
        return LCN_ECORRUPT;
    out->best = fin_obj;
    out->layout = cj->snap;
    cj->snap = NULL;
    out->stop = run->stop_reason;
    out->backend = "cpu";
    out->evaluator = run->eval == STATE_EVAL_SCAN ? "scan-delta" : "grid-delta";
    out->threads = run->T;
    out->replicas = run->R;
    out->proposal_workers = run->kn.ap.proposal_workers;
    out->tel = tel;
    out->time_to_target_s = run->target_hit ? run->ttt : -1;
    if (p->on_layout)
        p->on_layout(p->ctx, out->layout, &out->best, elapsed_s(run));
    out->elapsed_s = elapsed_s(run);
    out->tel.elapsed_s = out->elapsed_s;
    return 0;
}

int engine_cpu_run(const struct lcn_graph *g, const struct engine_params *p,
                   struct engine_result *out)
{
    memset(out, 0, sizeof(*out));
    struct cpu_job cj;
    int rc = cj_new(&cj, g, p);
    if (!rc)
        rc = cj_setup(&cj);
    if (!rc) {
        cj_loop(&cj);
        rc = cj_report(&cj, out);
    }
    cj_free(&cj);
    return rc;
}
