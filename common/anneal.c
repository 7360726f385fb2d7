#include "anneal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "util.h"

void anneal_params_default(struct anneal_params *ap)
{
    *ap = (struct anneal_params){
        .proposal_workers = 4,
        /* measured (bench/results/ops-cpu-20261202): better median K than the
         * mix without the new operators on 3 of 4 graphs at equal moves */
        .p_pair = 0.03,
        .p_swap = 0.02,
        .p_cluster = 0.1,
        .p_global = 0.05,
        .p_bary = 0.15,
        .p_median = 0.1,
        .p_empty = 0.02,
        .ops_mode = ANNEAL_OPS_FIXED,
        .bandit_floor = 0.02,
        .bandit_every = 1000,
        .bandit_decay = 0.8,
        .bandit_bonus = 1,
        .p_focus = 0.3,
        .p_partner = 0,
        .p_weighted = 0.3,
        .focus_slack = 1,
        .a_K = 0,
        .a_nK = 0,
        .lin = 0.02,
        .quad = 0,
        .exp_w = 1,
        .base = 4,
        .hinge_w = 0,
        .hinge_off = 1,
        .pnorm_w = 0,
        .pnorm_rho = 0.5,
        .beta_k = 3.5,
    };
}

/* ---- energy ------------------------------------------------------------ */

/*
 * The table holds f(c) in fixed point (units of 2^-16), each entry capped
 * at 2^50, so that a move's delta is an exact integer sum: the same for
 * any order of the change list, hence for either evaluator.
 */
#define ENERGY_ONE 65536.0
#define ENERGY_CAP 1125899906842624.0 /* 2^50 */

static double exp_term(double b, int32_t x)
{
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
    double b = ap->base;
    if (ap->beta_k > 0) {
        /* the steepness follows K: the GPU engine's rule (docs/GPU.md) */
        double beta = ap->beta_k / sqrt((double)(Kref > 1 ? Kref : 1));
        b = exp(beta < 0.05 ? 0.05 : (beta > 2 ? 2 : beta));
    }
    for (int32_t c = 0; c <= en->m; c++) {
        double v = ap->lin * c + ap->quad * (double)c * c;
        if (ap->exp_w != 0)
            v += ap->exp_w * exp_term(b, c - Kref);
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
    int32_t maxdeg = 0;
    for (int32_t v = 0; v < g->n; v++)
        maxdeg = LCN_MAX(maxdeg, graph_degree(g, v));
    r->scratch = xmalloc(sizeof(int32_t) * (2 * (size_t)maxdeg + 1));
    r->steps_v = xmalloc(sizeof(int32_t) * (ANNEAL_CLUSTER_MAX + 1));
    r->steps_to = xmalloc(sizeof(struct lcn_pt) * (ANNEAL_CLUSTER_MAX + 1));
    r->steps_from = xmalloc(sizeof(struct lcn_pt) * (ANNEAL_CLUSTER_MAX + 1));
    r->cand_op = xmalloc(sizeof(int32_t) * (size_t)r->W);
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
    free(r->scratch);
    free(r->steps_v);
    free(r->steps_to);
    free(r->steps_from);
    free(r->cand_op);
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

/* ---- operators ---------------------------------------------------------- */

/* Per-move distribution over the operators of the fixed mix (anneal.h). */
static void fixed_mix(const struct anneal_params *ap, double *prob)
{
    double pm = ap->p_pair + ap->p_swap + ap->p_cluster;
    double share = pm < 1 ? 1 - pm : 0, scale = pm > 1 ? 1 / pm : 1;
    double ps = ap->p_global + ap->p_bary + ap->p_median + ap->p_empty;
    double sscale = ps > 1 ? 1 / ps : 1;
    prob[ENGINE_OP_PAIR] = ap->p_pair * scale;
    prob[ENGINE_OP_SWAP] = ap->p_swap * scale;
    prob[ENGINE_OP_CLUSTER] = ap->p_cluster * scale;
    prob[ENGINE_OP_GLOBAL] = share * ap->p_global * sscale;
    prob[ENGINE_OP_BARY] = share * ap->p_bary * sscale;
    prob[ENGINE_OP_MEDIAN] = share * ap->p_median * sscale;
    prob[ENGINE_OP_EMPTY] = share * ap->p_empty * sscale;
    prob[ENGINE_OP_LOCAL] = share * (ps < 1 ? 1 - ps : 0);
}

/* The draw thresholds of a bandit's prob[]. */
static void bandit_thresholds(struct anneal_bandit *b)
{
    static const int multi[3] = {ENGINE_OP_PAIR, ENGINE_OP_SWAP, ENGINE_OP_CLUSTER};
    static const int single[4] = {ENGINE_OP_GLOBAL, ENGINE_OP_BARY, ENGINE_OP_MEDIAN,
                                  ENGINE_OP_EMPTY};
    double c = 0;
    for (int i = 0; i < 3; i++)
        b->multi[i] = c += b->prob[multi[i]];
    double rest = 1 - c;
    c = 0;
    for (int i = 0; i < 4; i++)
        b->single[i] = c += rest > 0 ? b->prob[single[i]] / rest : 0;
}

void anneal_replica_set_ops(struct anneal_replica *r, const struct anneal_params *ap)
{
    struct anneal_bandit *b = &r->bandit;
    memset(b, 0, sizeof(*b));
    b->ready = 1;
    fixed_mix(ap, b->prob);
    if (ap->ops_mode == ANNEAL_OPS_FIXED) {
        /* the very expressions of the mix before issue 15: the same draws */
        b->multi[0] = ap->p_pair;
        b->multi[1] = ap->p_pair + ap->p_swap;
        b->multi[2] = ap->p_pair + ap->p_swap + ap->p_cluster;
        b->single[0] = ap->p_global;
        b->single[1] = ap->p_global + ap->p_bary;
        b->single[2] = ap->p_global + ap->p_bary + ap->p_median;
        b->single[3] = ap->p_global + ap->p_bary + ap->p_median + ap->p_empty;
        return;
    }
    double floor = ap->bandit_floor, sum = 0;
    for (int op = 0; op < ENGINE_OPS; op++)
        sum += b->prob[op];
    for (int op = 0; op < ENGINE_OPS; op++)
        b->prob[op] =
            floor + (1 - ENGINE_OPS * floor) * (sum > 0 ? b->prob[op] / sum : 1.0 / ENGINE_OPS);
    bandit_thresholds(b);
}

/*
 * A bandit update (anneal.h): fold the window into the decayed sums and
 * match the probabilities to reward per cost, above the floor. An operator
 * never tried gets the best score seen (optimism); with no reward at all
 * the probabilities stay.
 */
static void bandit_update(struct anneal_bandit *b, const struct anneal_params *ap)
{
    double score[ENGINE_OPS], best = 0, sum = 0;
    for (int op = 0; op < ENGINE_OPS; op++) {
        b->R[op] = ap->bandit_decay * b->R[op] + b->wr[op];
        b->C[op] = ap->bandit_decay * b->C[op] + b->wc[op];
        b->wr[op] = b->wc[op] = 0;
        score[op] = b->C[op] > 0 ? b->R[op] / b->C[op] : -1;
        best = LCN_MAX(best, score[op]);
    }
    for (int op = 0; op < ENGINE_OPS; op++) {
        if (score[op] < 0)
            score[op] = best;
        sum += score[op];
    }
    b->updates++;
    if (!(sum > 0))
        return;
    for (int op = 0; op < ENGINE_OPS; op++)
        b->prob[op] = ap->bandit_floor + (1 - ENGINE_OPS * ap->bandit_floor) * score[op] / sum;
    bandit_thresholds(b);
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Sorts k ints: insertion for the usual small degrees, qsort for hubs. */
static void sort_i32(int32_t *a, int32_t k)
{
    if (k > 32) {
        qsort(a, (size_t)k, sizeof(*a), cmp_i32);
        return;
    }
    for (int32_t i = 1; i < k; i++) {
        int32_t x = a[i], j = i;
        for (; j > 0 && a[j - 1] > x; j--)
            a[j] = a[j - 1];
        a[j] = x;
    }
}

/* Coordinate-wise median of v's neighbours (deg > 0), in *mx, *my. */
static void neighbour_median(struct anneal_replica *r, int32_t v, double *mx, double *my)
{
    const struct lcn_graph *g = r->g;
    int32_t deg = graph_degree(g, v), *xs = r->scratch, *ys = r->scratch + deg;
    for (int32_t k = 0; k < deg; k++) {
        struct lcn_pt w = r->st.pts[graph_other(g, g->inc[g->inc_off[v] + k], v)];
        xs[k] = w.x;
        ys[k] = w.y;
    }
    sort_i32(xs, deg);
    sort_i32(ys, deg);
    if (deg & 1) {
        *mx = xs[deg / 2];
        *my = ys[deg / 2];
    } else {
        *mx = ((double)xs[deg / 2 - 1] + xs[deg / 2]) / 2;
        *my = ((double)ys[deg / 2 - 1] + ys[deg / 2]) / 2;
    }
}

/* A random point of the emptiest of 4 sampled cells of the node grid. */
static struct lcn_pt empty_point(struct anneal_replica *r)
{
    const struct lcn_graph *g = r->g;
    const struct lcn_grid *ng = &r->st.ng;
    uint32_t ncell = (uint32_t)ng->gx * (uint32_t)ng->gy;
    int32_t best = -1, best_len = 0;
    for (int t = 0; t < 4; t++) {
        int32_t c = (int32_t)rng_below(&r->rng, ncell);
        if (best < 0 || ng->cells[c].len < best_len) {
            best = c;
            best_len = ng->cells[c].len;
        }
    }
    int64_t x0 = ng->ox + (int64_t)(best % ng->gx) * ng->cs;
    int64_t y0 = ng->oy + (int64_t)(best / ng->gx) * ng->cs;
    x0 = LCN_MIN(x0, g->width);
    y0 = LCN_MIN(y0, g->height);
    int64_t x1 = LCN_MIN(x0 + ng->cs - 1, g->width), y1 = LCN_MIN(y0 + ng->cs - 1, g->height);
    struct lcn_pt q;
    q.x = (int32_t)(x0 + rng_below(&r->rng, (uint32_t)(x1 - x0 + 1)));
    q.y = (int32_t)(y0 + rng_below(&r->rng, (uint32_t)(y1 - y0 + 1)));
    return q;
}

/* A candidate point for v from the single-node operators; *op says which. */
static struct lcn_pt pick_point(struct anneal_replica *r, double sigma, int32_t v, int32_t *op)
{
    const struct lcn_graph *g = r->g;
    const double *th = r->bandit.single;
    struct lcn_pt p = r->st.pts[v], q;
    double u = rng_unit53(&r->rng);
    int32_t deg = graph_degree(g, v);
    int32_t kind = u < th[0]   ? ENGINE_OP_GLOBAL
                   : u < th[1] ? ENGINE_OP_BARY
                   : u < th[2] ? ENGINE_OP_MEDIAN
                   : u < th[3] ? ENGINE_OP_EMPTY
                               : ENGINE_OP_LOCAL;
    if ((kind == ENGINE_OP_BARY || kind == ENGINE_OP_MEDIAN) && deg == 0)
        kind = ENGINE_OP_LOCAL;
    if (kind == ENGINE_OP_GLOBAL) {
        q.x = (int32_t)rng_below(&r->rng, (uint32_t)g->width + 1);
        q.y = (int32_t)rng_below(&r->rng, (uint32_t)g->height + 1);
    } else if (kind == ENGINE_OP_BARY || kind == ENGINE_OP_MEDIAN) {
        double cx = 0, cy = 0;
        if (kind == ENGINE_OP_BARY) {
            for (int32_t k = g->inc_off[v]; k < g->inc_off[v + 1]; k++) {
                struct lcn_pt w = r->st.pts[graph_other(g, g->inc[k], v)];
                cx += w.x;
                cy += w.y;
            }
            cx /= deg;
            cy /= deg;
        } else {
            neighbour_median(r, v, &cx, &cy);
        }
        double s = LCN_MAX(1.0, sigma * 0.5);
        q.x = clamp_coord(cx + s * gauss(r), g->width);
        q.y = clamp_coord(cy + s * gauss(r), g->height);
    } else if (kind == ENGINE_OP_EMPTY) {
        q = empty_point(r);
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
    *op = kind;
    return q;
}

/*
 * A translation vector for the nodes steps_v[0..k): Gaussian of the slot's
 * radius per axis, clamped so that every node stays within the bounds,
 * never (0, 0) unless no node can move at all.
 */
static struct lcn_pt translation(struct anneal_replica *r, double sigma, int32_t k)
{
    const struct lcn_graph *g = r->g;
    int64_t lox = -(int64_t)g->width, hix = g->width, loy = -(int64_t)g->height, hiy = g->height;
    for (int32_t i = 0; i < k; i++) {
        struct lcn_pt p = r->st.pts[r->steps_v[i]];
        lox = LCN_MAX(lox, -(int64_t)p.x);
        hix = LCN_MIN(hix, (int64_t)g->width - p.x);
        loy = LCN_MAX(loy, -(int64_t)p.y);
        hiy = LCN_MIN(hiy, (int64_t)g->height - p.y);
    }
    double dx = floor(sigma * gauss(r) + 0.5), dy = floor(sigma * gauss(r) + 0.5);
    int64_t x = dx < (double)lox ? lox : dx > (double)hix ? hix : (int64_t)dx;
    int64_t y = dy < (double)loy ? loy : dy > (double)hiy ? hiy : (int64_t)dy;
    if (x == 0 && y == 0) {
        uint32_t d = rng_below(&r->rng, 4);
        x = d == 0 ? 1 : d == 1 ? -1 : 0;
        y = d == 2 ? 1 : d == 3 ? -1 : 0;
        x = LCN_MAX(lox, LCN_MIN(hix, x));
        y = LCN_MAX(loy, LCN_MIN(hiy, y));
    }
    return (struct lcn_pt){(int32_t)x, (int32_t)y};
}

/*
 * Steps of a translation of steps_v[0..k) by t, front first: the nodes in
 * decreasing order of their projection on t (ties: list order), so that a
 * node moves into room its predecessors in the move have already left.
 */
static void translate_steps(struct anneal_replica *r, int32_t k, struct lcn_pt t)
{
    int32_t *v = r->steps_v;
    const struct lcn_pt *pts = r->st.pts;
    for (int32_t i = 1; i < k; i++) {
        int32_t x = v[i], j = i;
        int64_t px = (int64_t)pts[x].x * t.x + (int64_t)pts[x].y * t.y;
        while (j > 0 && (int64_t)pts[v[j - 1]].x * t.x + (int64_t)pts[v[j - 1]].y * t.y < px) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = x;
    }
    for (int32_t i = 0; i < k; i++)
        r->steps_to[i] = (struct lcn_pt){pts[v[i]].x + t.x, pts[v[i]].y + t.y};
}

/* Whether a node other than v sits on q (the node grid's V2 test). */
static int occupied_by_other(const struct lcn_state *st, int32_t v, struct lcn_pt q)
{
    const struct lcn_cell *c = &st->ng.cells[grid_cell_of(&st->ng, q)];
    for (int32_t i = 0; i < c->len; i++)
        if (c->ids[i] != v && geom_pt_eq(st->pts[c->ids[i]], q))
            return 1;
    return 0;
}

/* A random edge among the hot ones (c[e] >= K - focus_slack), else any edge. */
static int32_t hot_edge(struct anneal_replica *r, const struct anneal_params *ap,
                        const struct lcn_obj *cur)
{
    if (r->hot_K != cur->K || r->hot_stale > 32)
        rebuild_hot(r, cur->K, ap->focus_slack);
    int32_t lo = LCN_MAX(1, cur->K - ap->focus_slack);
    for (int t = 0; t < 4 && r->nhot > 0; t++) {
        int32_t e = r->hot[rng_below(&r->rng, (uint32_t)r->nhot)];
        if (r->st.cnt[e] >= lo)
            return e;
        r->hot_stale++;
    }
    return (int32_t)rng_below(&r->rng, (uint32_t)r->g->m);
}

/*
 * The steps of a compound move (PAIR, SWAP, CLUSTER) into steps_v and
 * steps_to; returns their number (0: the operator has nothing to move).
 */
static int32_t compound_steps(struct anneal_replica *r, const struct anneal_params *ap,
                              double sigma, int32_t op, const struct lcn_obj *cur)
{
    const struct lcn_graph *g = r->g;
    const struct lcn_pt *pts = r->st.pts;
    if (op == ENGINE_OP_PAIR) {
        if (g->m == 0)
            return 0;
        int32_t e = hot_edge(r, ap, cur);
        r->steps_v[0] = g->eu[e];
        r->steps_v[1] = g->ev[e];
        translate_steps(r, 2, translation(r, sigma, 2));
        return 2;
    }
    if (op == ENGINE_OP_CLUSTER) {
        int32_t v = pick_node(r, ap, cur), k = 0;
        r->steps_v[k++] = v;
        for (int32_t i = g->inc_off[v]; i < g->inc_off[v + 1] && k <= ANNEAL_CLUSTER_MAX; i++) {
            int32_t w = graph_other(g, g->inc[i], v), d = graph_degree(g, w);
            if (d == 1 || d == 2)
                r->steps_v[k++] = w;
        }
        translate_steps(r, k, translation(r, sigma, k));
        return k;
    }
    /* SWAP: a (the move mix's node) and b (with 1/2 a neighbour of one of a's
     * neighbours, else uniform) exchange points through a free point t next
     * to a: a -> t, b -> pa, a -> pb */
    if (g->n < 2)
        return 0;
    int32_t a = pick_node(r, ap, cur), b = -1;
    if ((rng_u32(&r->rng) & 1) && graph_degree(g, a) > 0) {
        int32_t da = graph_degree(g, a);
        int32_t w =
            graph_other(g, g->inc[g->inc_off[a] + (int32_t)rng_below(&r->rng, (uint32_t)da)], a);
        int32_t dw = graph_degree(g, w);
        b = graph_other(g, g->inc[g->inc_off[w] + (int32_t)rng_below(&r->rng, (uint32_t)dw)], w);
    }
    if (b < 0 || b == a)
        b = (a + 1 + (int32_t)rng_below(&r->rng, (uint32_t)g->n - 1)) % g->n;
    struct lcn_pt pa = pts[a], pb = pts[b], t = pa;
    static const int dx[8] = {1, 1, 0, -1, -1, -1, 0, 1}, dy[8] = {0, 1, 1, 1, 0, -1, -1, -1};
    uint32_t d0 = rng_below(&r->rng, 8);
    for (uint32_t i = 0; i < 8; i++) {
        struct lcn_pt c = {pa.x + dx[(d0 + i) & 7], pa.y + dy[(d0 + i) & 7]};
        if (c.x >= 0 && c.x <= g->width && c.y >= 0 && c.y <= g->height && !geom_pt_eq(c, pb) &&
            !occupied_by_other(&r->st, a, c)) {
            t = c;
            break;
        }
    }
    if (geom_pt_eq(t, pa))
        return 0; /* no free point next to a */
    r->steps_v[0] = a;
    r->steps_to[0] = t;
    r->steps_v[1] = b;
    r->steps_to[1] = pa;
    r->steps_v[2] = a;
    r->steps_to[2] = pb;
    return 3;
}

static int should_stop(const struct anneal_ctl *ctl)
{
    if (ctl->stop && atomic_load_explicit(ctl->stop, memory_order_relaxed))
        return 1;
    if (ctl->cancel && atomic_load_explicit(ctl->cancel, memory_order_relaxed))
        return 1;
    return ctl->stop_ns && lcn_now_ns() >= ctl->stop_ns;
}

/* What a replica's move needs besides the replica. */
struct move_ctx {
    const struct anneal_params *ap;
    const struct anneal_ctl *ctl;
    struct lcn_obj cur;
};

/* Books an accepted move of operator op with energy change d (fixed point). */
static void accepted_move(struct anneal_replica *r, const struct move_ctx *mc, int32_t op,
                          int64_t d, int better)
{
    struct anneal_counters *cn = &r->cnt;
    cn->accepted++;
    cn->committed++;
    cn->ops[op].accepted++;
    r->E += (double)d / ENERGY_ONE;
    r->bandit.wr[op] += (d < 0 ? (double)-d / ENERGY_ONE : 0) + (better ? mc->ap->bandit_bonus : 0);
    if (better) {
        cn->ops[op].improved++;
        r->best = mc->cur;
        r->best_pending = 1;
        cn->replica_best_updates++;
        if (mc->ctl->on_improve)
            mc->ctl->on_improve(mc->ctl->ctx, r->id, &r->best);
    }
}

static int metropolis(struct anneal_replica *r, double T, int64_t d)
{
    return d <= 0 || (T > 0 && rng_unit53(&r->rng) < exp(-(double)d / ENERGY_ONE / T));
}

/* Undoes steps done-1 .. 0 of a compound move: each reverse step restores a
 * layout the move went through, hence valid. Returns the proposals made. */
static int32_t undo_steps(struct anneal_replica *r, int32_t done)
{
    struct lcn_move *mv = &r->cand[0];
    for (int32_t j = done - 1; j >= 0; j--) {
        int ok = state_propose(&r->st, r->steps_v[j], r->steps_from[j], mv);
        LCN_ASSERT(ok);
        state_commit(&r->st, mv);
    }
    return done;
}

/*
 * A compound move: its node steps proposed and committed one by one on the
 * single-node API, their exact energy changes summed, one Metropolis test
 * on the sum; undone in reverse order on rejection or at the first step
 * that would make the layout invalid (the intermediate layouts must be
 * valid too, which can refuse a move whose end layout would be).
 */
static void compound_move(struct anneal_replica *r, struct move_ctx *mc, int32_t op)
{
    struct anneal_counters *cn = &r->cnt;
    struct lcn_state *st = &r->st;
    const struct anneal_energy *en = mc->ctl->en;
    cn->attempted++;
    cn->ops[op].tried++;
    int32_t k = compound_steps(r, mc->ap, mc->ctl->sigma, op, &mc->cur);
    if (k == 0) {
        r->bandit.wc[op] += 1;
        return;
    }
    anneal_replica_flush_best(r); /* the steps leave the current layout */
    struct lcn_move *mv = &r->cand[0];
    struct lcn_obj o = mc->cur;
    int64_t d = 0;
    int32_t done = 0, props = 0;
    for (; done < k; done++) {
        int32_t v = r->steps_v[done];
        r->steps_from[done] = st->pts[v];
        props++;
        if (!state_propose(st, v, r->steps_to[done], mv))
            break;
        d += energy_delta(en, st, mv, &o);
        o = mv->obj;
        state_commit(st, mv);
    }
    if (done < k) {
        r->bandit.wc[op] += props + undo_steps(r, done);
        return;
    }
    cn->valid++;
    cn->evaluated++;
    cn->selected++;
    cn->ops[op].valid++;
    if (!metropolis(r, mc->ctl->T, d)) {
        cn->rejected++;
        r->bandit.wc[op] += props + undo_steps(r, done);
        return;
    }
    r->bandit.wc[op] += props;
    int better = obj_cmp(&o, &r->best) < 0;
    mc->cur = o;
    accepted_move(r, mc, op, d, better);
}

/* A single-node move: best of W candidate points for one node. */
static void single_move(struct anneal_replica *r, struct move_ctx *mc)
{
    struct anneal_counters *cn = &r->cnt;
    struct lcn_state *st = &r->st;
    int32_t v = pick_node(r, mc->ap, &mc->cur);
    int32_t best = -1;
    int64_t bestd = 0;
    for (int32_t w = 0; w < r->W; w++) {
        int32_t op;
        struct lcn_pt q = pick_point(r, mc->ctl->sigma, v, &op);
        r->cand_op[w] = op;
        cn->attempted++;
        cn->ops[op].tried++;
        r->bandit.wc[op] += 1;
        if (!state_propose(st, v, q, &r->cand[w]))
            continue;
        cn->valid++;
        cn->evaluated++;
        cn->ops[op].valid++;
        obj_keep_best(&best, &bestd, w, energy_delta(mc->ctl->en, st, &r->cand[w], &mc->cur));
    }
    if (best < 0)
        return;
    cn->selected++;
    if (!metropolis(r, mc->ctl->T, bestd)) {
        cn->rejected++;
        return;
    }
    const struct lcn_move *mv = &r->cand[best];
    int better = obj_cmp(&mv->obj, &r->best) < 0;
    if (r->best_pending && !better)
        anneal_replica_flush_best(r); /* the state is about to leave its best */
    state_commit(st, mv);
    mc->cur = mv->obj;
    accepted_move(r, mc, r->cand_op[best], bestd, better);
}

int64_t anneal_sweep(struct anneal_replica *r, const struct anneal_params *ap,
                     const struct anneal_ctl *ctl, int64_t moves)
{
    struct anneal_bandit *b = &r->bandit;
    if (!b->ready)
        anneal_replica_set_ops(r, ap);
    r->E = anneal_energy_of(ctl->en, &r->st);
    struct move_ctx mc = {ap, ctl, {0, 0, 0, 0}};
    state_obj(&r->st, &mc.cur);
    int64_t i;
    for (i = 0; i < moves; i++) {
        if ((i & 15) == 0 && should_stop(ctl))
            break;
        if (r->g->n == 0)
            break;
        if (ap->ops_mode == ANNEAL_OPS_BANDIT && b->moves > 0 && b->moves % ap->bandit_every == 0)
            bandit_update(b, ap);
        b->moves++;
        if (b->multi[2] > 0) {
            /* drawn only when a compound operator can be: the fixed mix of
             * before issue 15 keeps its random stream */
            double u = rng_unit53(&r->rng);
            if (u < b->multi[2]) {
                compound_move(r, &mc,
                              u < b->multi[0]   ? ENGINE_OP_PAIR
                              : u < b->multi[1] ? ENGINE_OP_SWAP
                                                : ENGINE_OP_CLUSTER);
                continue;
            }
        }
        single_move(r, &mc);
    }
    return i;
}
