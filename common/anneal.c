#include "anneal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "util.h"

void anneal_params_default(struct anneal_params *ap)
{
    memset(ap, 0, sizeof(*ap));
    ap->proposal_workers = 4;
    ap->p_global = 0.05;
    ap->p_bary = 0.15;
    ap->p_focus = 0.3;
    ap->p_partner = 0;
    ap->p_weighted = 0.3;
    ap->focus_slack = 1;
    ap->a_K = 0;
    ap->a_nK = 0;
    ap->lin = 0.02;
    ap->quad = 0;
    ap->exp_w = 0.1;
    ap->base = 4;
    ap->hinge_w = 1;
    ap->hinge_off = 1;
    ap->pnorm_w = 0;
    ap->pnorm_rho = 0.5;
}

/* ---- energy ------------------------------------------------------------ */

/*
 * The table holds f(c) in fixed point (units of 2^-16), each entry capped
 * at 2^50, so that a move's delta is an exact integer sum: the same for
 * any order of the change list, hence for either evaluator.
 */
#define ENERGY_ONE 65536.0
#define ENERGY_CAP 1125899906842624.0 /* 2^50 */

static double exp_term(const struct anneal_params *ap, int32_t x)
{
    double b = ap->base;
    double capped = x > 20 ? 20 : (double)x;
    double v = pow(b, capped) / (1.0 - 1.0 / b);
    if (x > 20)
        v *= 1.0 + (double)(x - 20);
    return v;
}

static int64_t fixed(double v)
{
    v *= ENERGY_ONE;
    if (!(v < ENERGY_CAP))
        v = ENERGY_CAP;
    if (!(v > -ENERGY_CAP))
        v = -ENERGY_CAP;
    return (int64_t)llround(v);
}

void anneal_energy_init(struct anneal_energy *en, const struct anneal_params *ap, int32_t m,
                        int32_t Kref)
{
    en->ap = *ap;
    if (!(en->ap.base > 1.0))
        en->ap.base = 2.0;
    en->m = m;
    en->f = xmalloc(sizeof(int64_t) * ((size_t)m + 1));
    en->a_K = fixed(ap->a_K);
    en->a_nK = fixed(ap->a_nK);
    en->Kref = -1;
    anneal_energy_set_kref(en, Kref);
}

void anneal_energy_set_kref(struct anneal_energy *en, int32_t Kref)
{
    if (Kref == en->Kref)
        return;
    en->Kref = Kref;
    const struct anneal_params *ap = &en->ap;
    for (int32_t c = 0; c <= en->m; c++) {
        double v = ap->lin * c + ap->quad * (double)c * c;
        if (ap->exp_w != 0)
            v += ap->exp_w * exp_term(ap, c - Kref);
        if (ap->hinge_w != 0 && c - Kref + ap->hinge_off > 0) {
            double h = (double)(c - Kref + ap->hinge_off);
            v += ap->hinge_w * h * h;
        }
        if (ap->pnorm_w != 0 && Kref > 0 && c > 0) {
            /* in logs: (c/K)^p overflows long before the table's cap */
            double lg = ap->pnorm_rho * Kref * log((double)c / Kref);
            v += lg > 40 ? ENERGY_CAP : ap->pnorm_w * exp(lg);
        }
        en->f[c] = fixed(v);
    }
}

void anneal_energy_release(struct anneal_energy *en)
{
    free(en->f);
    memset(en, 0, sizeof(*en));
}

double anneal_energy_of(const struct anneal_energy *en, const struct lcn_state *st)
{
    double e = 0; /* a sum of up to m entries of up to 2^50: in double */
    for (int32_t i = 0; i < st->g->m; i++)
        e += (double)en->f[st->cnt[i]];
    struct lcn_obj o;
    state_obj(st, &o);
    return (e + (double)en->a_K * o.K + (double)en->a_nK * o.nK) / ENERGY_ONE;
}

/* The exact energy change of a move, in units of 2^-16. */
static int64_t energy_delta(const struct anneal_energy *en, const struct lcn_state *st,
                            const struct lcn_move *mv, const struct lcn_obj *cur)
{
    const int64_t *f = en->f;
    int64_t d = 0;
    for (int32_t i = 0; i < mv->n; i++) {
        int32_t c = st->cnt[mv->edge[i]];
        d += f[c + mv->d[i]] - f[c];
    }
    return d + en->a_K * (mv->obj.K - cur->K) + en->a_nK * (mv->obj.nK - cur->nK);
}

/* ---- replica ------------------------------------------------------------ */

void anneal_replica_init(struct anneal_replica *r, int32_t id, const struct lcn_state *proto,
                         uint64_t seed, int32_t workers)
{
    anneal_replica_init_stop(r, id, proto, seed, workers, NULL);
}

int anneal_replica_init_stop(struct anneal_replica *r, int32_t id, const struct lcn_state *proto,
                             uint64_t seed, int32_t workers, const struct lcn_stop *stop)
{
    memset(r, 0, sizeof(*r));
    const struct lcn_graph *g = proto->g;
    int rc = state_clone_stop(&r->st, proto, stop);
    if (rc)
        return rc;
    r->id = id;
    r->g = g;
    rng_init(&r->rng, seed, (uint32_t)id, RNG_PURPOSE_MOVE);
    r->W = workers < 1 ? 1 : workers;
    r->cand = xmalloc(sizeof(*r->cand) * (size_t)r->W);
    for (int32_t w = 0; w < r->W; w++)
        move_init(&r->cand[w]);
    r->best_pts = xmalloc(sizeof(struct lcn_pt) * (size_t)(g->n ? g->n : 1));
    memcpy(r->best_pts, proto->pts, sizeof(struct lcn_pt) * (size_t)g->n);
    state_obj(&r->st, &r->best);
    r->best_pending = 0;
    r->hot = xmalloc(sizeof(int32_t) * (size_t)(g->m ? g->m : 1));
    r->partners = xmalloc(sizeof(int32_t) * (size_t)(g->m ? g->m : 1));
    r->nhot = 0;
    r->hot_K = -1;
    return 0;
}

void anneal_replica_release(struct anneal_replica *r)
{
    for (int32_t w = 0; w < r->W; w++)
        move_release(&r->cand[w]);
    free(r->cand);
    free(r->best_pts);
    free(r->hot);
    free(r->partners);
    state_release(&r->st);
    memset(r, 0, sizeof(*r));
}

void anneal_replica_flush_best(struct anneal_replica *r)
{
    if (r->best_pending) {
        memcpy(r->best_pts, r->st.pts, sizeof(struct lcn_pt) * (size_t)r->g->n);
        r->best_pending = 0;
    }
}

int anneal_replica_reset(struct anneal_replica *r, const struct lcn_pt *pts)
{
    anneal_replica_flush_best(r);
    int rc = state_reset(&r->st, pts);
    if (rc)
        return rc;
    struct lcn_obj o;
    state_obj(&r->st, &o);
    if (obj_cmp(&o, &r->best) < 0) {
        r->best = o;
        memcpy(r->best_pts, pts, sizeof(struct lcn_pt) * (size_t)r->g->n);
    }
    r->hot_K = -1;
    return 0;
}

static double gauss(struct anneal_replica *r)
{
    if (r->have_spare) {
        r->have_spare = 0;
        return r->gauss_spare;
    }
    double u = rng_unit53(&r->rng), v = rng_unit53(&r->rng);
    double rad = sqrt(-2.0 * log(1.0 - u)); /* 1 - u in (0, 1] */
    double a = 6.283185307179586 * v;
    r->gauss_spare = rad * sin(a);
    r->have_spare = 1;
    return rad * cos(a);
}

static void rebuild_hot(struct anneal_replica *r, int32_t K, int32_t slack)
{
    const int32_t *c = r->st.cnt;
    int32_t lo = LCN_MAX(1, K - slack), k = 0;
    for (int32_t e = 0; e < r->g->m; e++)
        if (c[e] >= lo)
            r->hot[k++] = e;
    r->nhot = k;
    r->hot_K = K;
    r->hot_stale = 0;
}

static int32_t endpoint(struct anneal_replica *r, int32_t e)
{
    return (rng_u32(&r->rng) & 1) ? r->g->eu[e] : r->g->ev[e];
}

static int32_t pick_node(struct anneal_replica *r, const struct anneal_params *ap,
                         const struct lcn_obj *cur)
{
    const struct lcn_graph *g = r->g;
    if (g->m > 0 && cur->K > 0) {
        double u = rng_unit53(&r->rng);
        if (u < ap->p_focus + ap->p_partner) {
            if (r->hot_K != cur->K || r->hot_stale > 32)
                rebuild_hot(r, cur->K, ap->focus_slack);
            int32_t lo = LCN_MAX(1, cur->K - ap->focus_slack);
            for (int t = 0; t < 4 && r->nhot > 0; t++) {
                int32_t e = r->hot[rng_below(&r->rng, (uint32_t)r->nhot)];
                if (r->st.cnt[e] < lo) {
                    r->hot_stale++;
                    continue;
                }
                if (u < ap->p_focus)
                    return endpoint(r, e);
                int32_t k = state_edge_partners(&r->st, e, r->partners);
                if (k > 0)
                    return endpoint(r, r->partners[rng_below(&r->rng, (uint32_t)k)]);
            }
        } else if (u < ap->p_focus + ap->p_partner + ap->p_weighted) {
            for (int t = 0; t < 16; t++) {
                int32_t e = (int32_t)rng_below(&r->rng, (uint32_t)g->m);
                if ((int32_t)rng_below(&r->rng, (uint32_t)cur->K) < r->st.cnt[e])
                    return endpoint(r, e);
            }
        }
    }
    return (int32_t)rng_below(&r->rng, (uint32_t)g->n);
}

static int32_t clamp_coord(double x, int32_t hi)
{
    if (!(x > 0))
        return 0;
    if (x >= hi)
        return hi;
    return (int32_t)floor(x + 0.5);
}

static struct lcn_pt pick_point(struct anneal_replica *r, const struct anneal_params *ap,
                                double sigma, int32_t v)
{
    const struct lcn_graph *g = r->g;
    struct lcn_pt p = r->st.pts[v], q;
    double u = rng_unit53(&r->rng);
    int32_t deg = graph_degree(g, v);
    if (u < ap->p_global) {
        q.x = (int32_t)rng_below(&r->rng, (uint32_t)g->width + 1);
        q.y = (int32_t)rng_below(&r->rng, (uint32_t)g->height + 1);
    } else if (u < ap->p_global + ap->p_bary && deg > 0) {
        double sx = 0, sy = 0;
        for (int32_t k = g->inc_off[v]; k < g->inc_off[v + 1]; k++) {
            struct lcn_pt w = r->st.pts[graph_other(g, g->inc[k], v)];
            sx += w.x;
            sy += w.y;
        }
        double s = LCN_MAX(1.0, sigma * 0.5);
        q.x = clamp_coord(sx / deg + s * gauss(r), g->width);
        q.y = clamp_coord(sy / deg + s * gauss(r), g->height);
    } else {
        q.x = clamp_coord(p.x + sigma * gauss(r), g->width);
        q.y = clamp_coord(p.y + sigma * gauss(r), g->height);
    }
    if (geom_pt_eq(p, q)) {
        /* a null move: step to a random neighbouring point instead */
        uint32_t d = rng_below(&r->rng, 8);
        static const int dx[8] = {1, 1, 0, -1, -1, -1, 0, 1}, dy[8] = {0, 1, 1, 1, 0, -1, -1, -1};
        q.x = p.x + dx[d];
        q.y = p.y + dy[d];
        if (q.x < 0 || q.x > g->width)
            q.x = p.x - dx[d];
        if (q.y < 0 || q.y > g->height)
            q.y = p.y - dy[d];
    }
    return q;
}

static int should_stop(const struct anneal_ctl *ctl)
{
    if (ctl->stop && atomic_load_explicit(ctl->stop, memory_order_relaxed))
        return 1;
    if (ctl->cancel && atomic_load_explicit(ctl->cancel, memory_order_relaxed))
        return 1;
    return ctl->stop_ns && lcn_now_ns() >= ctl->stop_ns;
}

int64_t anneal_sweep(struct anneal_replica *r, const struct anneal_params *ap,
                     const struct anneal_ctl *ctl, int64_t moves)
{
    const struct anneal_energy *en = ctl->en;
    struct lcn_state *st = &r->st;
    struct anneal_counters *cn = &r->cnt;
    const double T = ctl->T;
    r->E = anneal_energy_of(en, st);
    struct lcn_obj cur;
    state_obj(st, &cur);
    int64_t i;
    for (i = 0; i < moves; i++) {
        if ((i & 15) == 0 && should_stop(ctl))
            break;
        if (r->g->n == 0)
            break;
        int32_t v = pick_node(r, ap, &cur);
        int32_t best = -1;
        int64_t bestd = 0;
        for (int32_t w = 0; w < r->W; w++) {
            struct lcn_pt q = pick_point(r, ap, ctl->sigma, v);
            cn->attempted++;
            if (!state_propose(st, v, q, &r->cand[w]))
                continue;
            cn->valid++;
            cn->evaluated++;
            int64_t d = energy_delta(en, st, &r->cand[w], &cur);
            if (best < 0 || d < bestd) {
                best = w;
                bestd = d;
            }
        }
        if (best < 0)
            continue;
        cn->selected++;
        int accept =
            bestd <= 0 || (T > 0 && rng_unit53(&r->rng) < exp(-(double)bestd / ENERGY_ONE / T));
        if (!accept) {
            cn->rejected++;
            continue;
        }
        cn->accepted++;
        const struct lcn_move *mv = &r->cand[best];
        int better = obj_cmp(&mv->obj, &r->best) < 0;
        if (r->best_pending && !better)
            anneal_replica_flush_best(r); /* the state is about to leave its best */
        state_commit(st, mv);
        cn->committed++;
        r->E += (double)bestd / ENERGY_ONE;
        cur = mv->obj;
        if (better) {
            r->best = cur;
            r->best_pending = 1;
            cn->replica_best_updates++;
            if (ctl->on_improve)
                ctl->on_improve(ctl->ctx, r->id, &r->best);
        }
    }
    return i;
}
