#include "solver_ref.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crossings.h"
#include "gpu.h"
#include "gpu_knobs.h"
#include "opts.h"
#include "err.h"
#include "util.h"

void solref_fill_ltab(double *ltab)
{
    for (int i = 0; i < SOL_LTAB; i++)
        ltab[i] = -log((i + 0.5) / SOL_LTAB);
}

void solref_fill_temps(double *temps, int32_t L, double t_lo, double t_hi)
{
    for (int32_t s = 0; s < L; s++)
        temps[s] = L == 1 ? t_lo : t_lo * pow(t_hi / t_lo, (double)s / (L - 1));
}

void solref_derive(const struct gpu_solver_params *gp, const struct lcn_graph *g, uint64_t seed,
                   struct sol_params *sp, double *temps, uint32_t *r16, int64_t *lin,
                   int32_t *sigma0)
{
    memset(sp, 0, sizeof(*sp));
    sp->n = g->n;
    sp->m = g->m;
    sp->width = g->width;
    sp->height = g->height;
    sp->W = gp->W;
    sp->tournament = gp->tournament;
    sp->p_hot = (uint32_t)(gp->p_hot * 65536.0);
    sp->p_local = (uint32_t)(gp->p_local * 65536.0);
    sp->p_bary = (uint32_t)(gp->p_bary * 65536.0);
    sp->p_median = (uint32_t)(gp->p_median * 65536.0);
    sp->bandit = gp->ops_bandit;
    sp->bandit_floor = (uint32_t)(gp->bandit_floor * 65536.0);
    int32_t span = LCN_MAX(g->width, g->height);
    sp->sigma_min = 1;
    sp->sigma_max = LCN_MAX(1, span / 2);
    sp->k0 = (uint32_t)seed;
    sp->k1 = (uint32_t)(seed >> 32);
    solref_fill_temps(temps, gp->ladder, gp->t_lo * SOL_W_BASE, gp->t_hi * SOL_W_BASE);
    *r16 = (uint32_t)llround(65536.0 * exp(gp->beta));
    sp->alt_every = gp->alt_every;
    sp->r16_alt = gp->alt_every > 0 ? (uint32_t)llround(65536.0 * exp(gp->beta_alt)) : *r16;
    sp->beta_k = gp->beta_k;
    sp->alt_ratio = gp->beta_alt / gp->beta;
    sp->pn16 = (uint32_t)llround(65536.0 * gp->pnorm_rho);
    sp->pn_up = gp->pnorm_up;
    sp->restart_steps = gp->restart_steps;
    if (gp->restart_steps > 0 && gp->restart_node > 0)
        sp->restart_steps = (int32_t)LCN_MIN((int64_t)INT32_MAX,
                                             LCN_MAX((int64_t)gp->restart_steps, (int64_t)gp->restart_node * g->n));
    sp->restart_slots = engine_restart_slots(gp->restart_share, gp->ladder);
    sp->restart_pool = gp->restart_pool;
    sp->groups = LCN_MAX(1, LCN_MIN(gp->groups, SOL_GROUPS_MAX));
    sp->group_every = LCN_MAX(1, gp->island_every);
    sp->group_take = LCN_MAX(0, LCN_MIN(gp->island_take, SOL_TAKE_MAX));
    *lin = gp->lin > 0 ? LCN_MAX(1, llround(gp->lin * SOL_W_BASE)) : 1;
    *sigma0 = LCN_MAX(1, span / 10);
}

void solref_fill_ratios(const struct sol_params *sp, uint32_t r16, uint32_t *rk)
{
    int32_t m = sp->m;
    for (int32_t k = 0; k <= m; k++) {
        if (sp->beta_k > 0) {
            double b = sp->beta_k / sqrt((double)LCN_MAX(k, 1));
            b = b < 0.05 ? 0.05 : (b > 2 ? 2 : b);
            double ba = b * sp->alt_ratio;
            ba = ba < 0.05 ? 0.05 : (ba > 5 ? 5 : ba);
            rk[k] = (uint32_t)llround(65536.0 * exp(b));
            rk[m + 1 + k] = (uint32_t)llround(65536.0 * exp(ba));
        } else {
            rk[k] = r16;
            rk[m + 1 + k] = sp->alt_every > 0 ? sp->r16_alt : r16;
        }
    }
}

static int64_t energy_of(const int64_t *w, const int32_t *c, int32_t m)
{
    int64_t e = 0;
    for (int32_t i = 0; i < m; i++)
        e += w[c[i]];
    return e;
}

/* The energy table replica r uses. */
static const int64_t *wtab_of(const struct solref *s, int32_t r)
{
    return s->wtab + (size_t)sol_wtab_of(&s->sp, r, s->R, s->L) * (size_t)(s->g->m + 1);
}

int64_t solref_energy(const struct solref *s, int32_t r)
{
    return energy_of(wtab_of(s, r), s->cnt + (size_t)r * s->g->m, s->g->m);
}

int solref_init(struct solref *s, const struct lcn_graph *g, const struct sol_params *sp,
                int32_t R, int32_t L, const struct lcn_pt *start, const double *temps,
                uint32_t r16, int64_t lin, int32_t sigma0)
{
    memset(s, 0, sizeof(*s));
    if (R < 1 || L < 1 || R % L != 0 || g->m > SOL_MAX_EDGES || g->max_degree > SOL_DMAX ||
        sp->W < 1 || sp->W > SOL_WMAX)
        return LCN_EINVAL;
    for (int32_t v = 0; v < g->n; v++)
        if (start[v].x < 0 || start[v].y < 0 || start[v].x > g->width || start[v].y > g->height)
            return LCN_EINVAL;
    int32_t n = g->n, m = g->m;
    s->g = g;
    s->sp = *sp;
    s->R = R;
    s->L = L;
    s->cur = xmalloc(sizeof(struct lcn_pt) * (size_t)R * (size_t)(n ? n : 1));
    s->best = xmalloc(sizeof(struct lcn_pt) * (size_t)R * (size_t)(n ? n : 1));
    s->cnt = xmalloc(sizeof(int32_t) * (size_t)R * (size_t)(m ? m : 1));
    s->bcnt = xmalloc(sizeof(int32_t) * (size_t)R * (size_t)(m ? m : 1));
    s->hist = xcalloc((size_t)R * (size_t)(m + 1), sizeof(int32_t));
    s->rep = xcalloc((size_t)R, sizeof(*s->rep));
    s->ends = xmalloc(sizeof(int32_t) * 2 * (size_t)(m ? m : 1));
    const int32_t ng = sol_ngroups(sp, R, L);
    s->wtab = xmalloc(sizeof(int64_t) * 2 * (size_t)ng * (size_t)(m + 1));
    s->rk = xmalloc(sizeof(uint32_t) * 2 * (size_t)(m + 1));
    s->ltab = xmalloc(sizeof(double) * SOL_LTAB);
    s->temps = xmalloc(sizeof(double) * (size_t)L);
    for (int32_t e = 0; e < m; e++) {
        s->ends[2 * e] = g->eu[e];
        s->ends[2 * e + 1] = g->ev[e];
    }
    solref_fill_ltab(s->ltab);
    memcpy(s->temps, temps, sizeof(double) * (size_t)L);
    int32_t *c0 = xmalloc(sizeof(int32_t) * (size_t)(m ? m : 1));
    crossings_grid(g, start, c0, 0);
    struct lcn_obj o;
    obj_from_counts(&o, c0, m);
    s->r16 = r16;
    s->lin = lin;
    solref_fill_ratios(sp, r16, s->rk);
    for (int32_t h = 0; h < ng; h++) {
        s->grp[h].best = o;
        s->grp[h].kref = o.K;
        sol_energy_tables(s->wtab + (size_t)2 * h * (m + 1), sp, o.K, r16, lin, s->rk);
    }
    int64_t E0[2] = {energy_of(s->wtab, c0, m), energy_of(s->wtab + m + 1, c0, m)};
    for (int32_t r = 0; r < R; r++) {
        memcpy(s->cur + (size_t)r * n, start, sizeof(struct lcn_pt) * (size_t)n);
        memcpy(s->best + (size_t)r * n, start, sizeof(struct lcn_pt) * (size_t)n);
        memcpy(s->cnt + (size_t)r * m, c0, sizeof(int32_t) * (size_t)m);
        memcpy(s->bcnt + (size_t)r * m, c0, sizeof(int32_t) * (size_t)m);
        int32_t *h = s->hist + (size_t)r * (m + 1);
        for (int32_t e = 0; e < m; e++)
            h[c0[e]]++;
        struct sol_replica *rp = &s->rep[r];
        rp->E = E0[sol_table(sp, r, L)];
        rp->cur = rp->best = o;
        rp->sigma = sigma0 < sp->sigma_min ? sp->sigma_min : (sigma0 > sp->sigma_max ? sp->sigma_max : sigma0);
        rp->slot = r % L;
        sol_fixed_cuts(sp, rp->op_cut);
    }
    free(c0);
    s->gbest = o;
    s->gbest_rep = 0;
    return 0;
}

void solref_release(struct solref *s)
{
    free(s->cur);
    free(s->best);
    free(s->cnt);
    free(s->bcnt);
    free(s->hist);
    free(s->rep);
    free(s->ends);
    free(s->wtab);
    free(s->rk);
    free(s->ltab);
    free(s->temps);
    memset(s, 0, sizeof(*s));
}

/* Crossing predicate between a moving segment and edge f (shared-endpoint pairs excluded by caller). */
static int meets(struct lcn_pt a, struct lcn_pt b, struct lcn_pt c, struct lcn_pt d)
{
    return geom_segments_meet(a, b, c, d);
}

/* The neighbours' barycentre and coordinate-wise median of node v (p when
 * it has none): the step's star phase. */
static void ref_star(const struct solref *s, const struct lcn_pt *pts, int32_t v,
                     struct lcn_pt *bary, struct lcn_pt *med)
{
    const struct lcn_graph *g = s->g;
    int32_t d = graph_degree(g, v);
    const int32_t *inc = g->inc + g->inc_off[v];
    *bary = *med = pts[v];
    if (d == 0)
        return;
    int64_t bx = 0, by = 0;
    int32_t xs[SOL_DMAX], ys[SOL_DMAX];
    for (int32_t k = 0; k < d; k++) {
        struct lcn_pt pu = pts[graph_other(g, inc[k], v)];
        bx += pu.x;
        by += pu.y;
        xs[k] = pu.x;
        ys[k] = pu.y;
    }
    bary->x = (int32_t)(bx / d);
    bary->y = (int32_t)(by / d);
    for (int32_t k = 0; k < d; k++) {
        if (sol_median_rank(xs, d, k) == (d - 1) / 2)
            med->x = xs[k];
        if (sol_median_rank(ys, d, k) == (d - 1) / 2)
            med->y = ys[k];
    }
}

/* Whether moving v to q breaks validity (V2: onto a node; V3: a new
 * incident segment through a node, or q on another edge's interior). */
static int ref_invalid(const struct solref *s, const struct lcn_pt *pts, int32_t v, struct lcn_pt q)
{
    const struct lcn_graph *g = s->g;
    int32_t d = graph_degree(g, v);
    const int32_t *inc = g->inc + g->inc_off[v];
    for (int32_t w = 0; w < g->n; w++) {
        if (w == v)
            continue;
        if (geom_pt_eq(pts[w], q))
            return 1;
        for (int32_t k = 0; k < d; k++) {
            int32_t u = graph_other(g, inc[k], v);
            if (w != u && geom_on_interior(q, pts[u], pts[w]))
                return 1;
        }
    }
    for (int32_t f = 0; f < g->m; f++)
        if (g->eu[f] != v && g->ev[f] != v && geom_on_interior(pts[g->eu[f]], pts[g->ev[f]], q))
            return 1;
    return 0;
}

/*
 * The crossing changes of moving v from p to q: per edge f not incident to
 * v, delta[f] (new minus old crossings with v's star; NULL: not wanted),
 * and per incident edge k its new count nc[k]. Returns the energy change
 * under table wt (counts cnt); *tests (may be NULL) counts the pair tests.
 */
static int64_t ref_move(const struct solref *s, const struct lcn_pt *pts, const int32_t *cnt,
                        const int64_t *wt, int32_t v, struct lcn_pt q, int32_t *delta,
                        int32_t *nc, uint64_t *tests)
{
    const struct lcn_graph *g = s->g;
    int32_t d = graph_degree(g, v);
    const int32_t *inc = g->inc + g->inc_off[v];
    struct lcn_pt p = pts[v];
    int64_t dE = 0;
    for (int32_t k = 0; k < d; k++)
        nc[k] = 0;
    for (int32_t f = 0; f < g->m; f++) {
        int32_t fu = g->eu[f], fv = g->ev[f], df = 0;
        if (fu != v && fv != v) {
            struct lcn_pt a = pts[fu], b = pts[fv];
            for (int32_t k = 0; k < d; k++) {
                int32_t u = graph_other(g, inc[k], v);
                if (fu == u || fv == u)
                    continue;
                if (tests)
                    *tests += 2;
                df -= meets(p, pts[u], a, b);
                if (meets(q, pts[u], a, b)) {
                    df++;
                    nc[k]++;
                }
            }
            if (df)
                dE += wt[cnt[f] + df] - wt[cnt[f]];
        }
        if (delta)
            delta[f] = df;
    }
    for (int32_t k = 0; k < d; k++)
        dE += wt[nc[k]] - wt[cnt[inc[k]]];
    return dE;
}

/* Commits v to q in replica r: counts, histogram, tuple, energy, and the
 * replica's best (layout and counts) on a strict improvement. */
static void ref_commit(struct solref *s, int32_t r, int32_t v, struct lcn_pt q, int64_t dE, int wop)
{
    const struct lcn_graph *g = s->g;
    int32_t n = g->n, m = g->m;
    struct sol_replica *rp = &s->rep[r];
    struct lcn_pt *pts = s->cur + (size_t)r * n;
    int32_t *cnt = s->cnt + (size_t)r * m;
    int32_t *hist = s->hist + (size_t)r * (m + 1);
    int32_t d = graph_degree(g, v);
    const int32_t *inc = g->inc + g->inc_off[v];
    int32_t nc[SOL_DMAX];
    int32_t *delta = xmalloc(sizeof(int32_t) * (size_t)(m ? m : 1));
    ref_move(s, pts, cnt, wtab_of(s, r), v, q, delta, nc, NULL);
    int32_t K = rp->cur.K, newmax = 0;
    int64_t dphi = 0, dsum = 0;
    for (int32_t f = 0; f < m; f++) {
        if (!delta[f])
            continue;
        int32_t o = cnt[f], nn = o + delta[f];
        hist[o]--;
        hist[nn]++;
        dphi += (int64_t)nn * nn - (int64_t)o * o;
        dsum += delta[f];
        cnt[f] = nn;
        if (nn > newmax)
            newmax = nn;
    }
    free(delta);
    for (int32_t k = 0; k < d; k++) {
        int32_t e = inc[k], o = cnt[e], nn = nc[k];
        if (nn != o) {
            hist[o]--;
            hist[nn]++;
            dphi += (int64_t)nn * nn - (int64_t)o * o;
            dsum += nn - o;
            cnt[e] = nn;
        }
        if (nn > newmax)
            newmax = nn;
    }
    pts[v] = q;
    if (newmax > K)
        K = newmax;
    while (K > 0 && hist[K] == 0)
        K--;
    rp->cur.K = K;
    rp->cur.nK = m ? hist[K] : 0;
    rp->cur.Phi += dphi;
    rp->cur.C += dsum / 2;
    rp->E += dE;
    rp->committed++;
    if (obj_cmp(&rp->cur, &rp->best) < 0) {
        rp->best = rp->cur;
        rp->best_updates++;
        rp->op_imp[wop]++;
        memcpy(s->best + (size_t)r * n, pts, sizeof(struct lcn_pt) * (size_t)n);
        memcpy(s->bcnt + (size_t)r * m, cnt, sizeof(int32_t) * (size_t)m);
    }
}

void solref_step(struct solref *s, int32_t r, double tscale)
{
    const struct sol_params *sp = &s->sp;
    struct sol_replica *rp = &s->rep[r];
    struct lcn_pt *pts = s->cur + (size_t)r * s->g->n;
    const int32_t *cnt = s->cnt + (size_t)r * s->g->m;
    const int64_t *wt = wtab_of(s, r);
    uint64_t step = rp->step++;

    int32_t v = sol_pick_node(sp, step, (uint32_t)r, cnt, s->ends);
    struct lcn_pt p = pts[v], bary, med;
    ref_star(s, pts, v, &bary, &med);
    int32_t best_c = -1, nc[SOL_DMAX];
    int64_t best_dE = 0;
    for (int32_t c = 0; c < sp->W; c++) {
        struct lcn_pt q = sol_candidate(sp, step, (uint32_t)r, (uint32_t)c, p, bary, med, rp->sigma,
                                        rp->op_cut);
        const int op = sol_op_of(sol_candidate_draw(sp, step, (uint32_t)r, 2 * (uint32_t)c), rp->op_cut);
        rp->op_tried[op]++;
        rp->win_tried[op]++;
        rp->attempted++;
        rp->evaluated++;
        int64_t dE = ref_move(s, pts, cnt, wt, v, q, NULL, nc, &rp->pair_tests);
        if (ref_invalid(s, pts, v, q))
            continue;
        rp->valid++;
        rp->op_valid[op]++;
        if (best_c < 0 || dE < best_dE) {
            best_c = c;
            best_dE = dE;
        }
    }
    if (best_c < 0)
        return;
    rp->selected++;
    rp->win_att++;
    double T = s->temps[rp->slot] * tscale;
    rp->T = T;
    uint32_t word = sol_draw(sp, step, (uint32_t)r, RNG_PURPOSE_ACCEPT, SOL_LANE_ACCEPT).v[0];
    if (!sol_accept(best_dE, T, s->ltab, word)) {
        rp->rejected++;
        return;
    }
    rp->accepted++;
    rp->win_acc++;
    const int wop = sol_op_of(sol_candidate_draw(sp, step, (uint32_t)r, 2 * (uint32_t)best_c), rp->op_cut);
    rp->op_acc[wop]++;
    if (best_dE < 0)
        rp->win_gain[wop]++;
    struct lcn_pt q = sol_candidate(sp, step, (uint32_t)r, (uint32_t)best_c, p, bary, med, rp->sigma,
                                    rp->op_cut);
    ref_commit(s, r, v, q, best_dE, wop);
}

/* Replica r takes replica b's best layout (sol_group_source). */
static void restart_from(struct solref *s, int32_t r, int32_t b)
{
    int32_t n = s->g->n, m = s->g->m;
    struct sol_replica *rp = &s->rep[r];
    const struct sol_replica *eb = &s->rep[b];
    memcpy(s->cur + (size_t)r * n, s->best + (size_t)b * n, sizeof(struct lcn_pt) * (size_t)n);
    memcpy(s->cnt + (size_t)r * m, s->bcnt + (size_t)b * m, sizeof(int32_t) * (size_t)m);
    int32_t *h = s->hist + (size_t)r * (m + 1);
    memset(h, 0, sizeof(int32_t) * (size_t)(m + 1));
    for (int32_t e = 0; e < m; e++)
        h[s->cnt[(size_t)r * m + e]]++;
    rp->cur = eb->best;
    if (r != b && obj_cmp(&eb->best, &rp->best) < 0) {
        rp->best = eb->best;
        memcpy(s->best + (size_t)r * n, s->best + (size_t)b * n, sizeof(struct lcn_pt) * (size_t)n);
        memcpy(s->bcnt + (size_t)r * m, s->bcnt + (size_t)b * m, sizeof(int32_t) * (size_t)m);
    }
}

void solref_boundary(struct solref *s, double tscale)
{
    int32_t R = s->R, L = s->L;
    /* global best: lowest tuple, ties to the lowest replica index */
    int32_t gb = 0;
    for (int32_t r = 1; r < R; r++)
        if (obj_cmp(&s->rep[r].best, &s->rep[gb].best) < 0)
            gb = r;
    s->gbest = s->rep[gb].best;
    s->gbest_rep = gb;
    /* the groups' decisions (as k_best's), their tables, then the layouts
     * they move (as k_energy's) */
    sol_groups_boundary(&s->sp, s->rep, R, L, s->batch, gb, s->grp, &s->ex, &s->ex_done);
    for (int32_t h = 0; h < sol_ngroups(&s->sp, R, L); h++) {
        struct sol_group *x = &s->grp[h];
        if (x->best.K != x->kref) {
            x->kref = x->best.K;
            sol_energy_tables(s->wtab + (size_t)2 * h * (s->g->m + 1), &s->sp, x->kref, s->r16,
                              s->lin, s->rk);
        }
    }
    for (int32_t r = 0; r < R; r++) {
        int32_t b = -1;
        int how = sol_group_source(&s->sp, s->grp, R, L, r, s->rep[r].slot, &b);
        if (how >= 0) {
            restart_from(s, r, b);
            if (how)
                s->rep[r].imports++;
            else
                s->rep[r].restarts++;
        }
    }
    for (int32_t r = 0; r < R; r++)
        s->rep[r].E = solref_energy(s, r);
    /* exchanges within each ladder, alternating parity */
    int32_t parity = (int32_t)(s->batch & 1);
    int32_t *of_slot = xmalloc(sizeof(int32_t) * (size_t)L);
    for (int32_t base = 0; base < R; base += L) {
        for (int32_t i = 0; i < L; i++)
            of_slot[s->rep[base + i].slot] = base + i;
        for (int32_t t = parity; t + 1 < L; t += 2) {
            int32_t i = of_slot[t], j = of_slot[t + 1];
            uint32_t word = sol_draw(&s->sp, s->batch, (uint32_t)(base / L), RNG_PURPOSE_EXCHANGE,
                                     (uint32_t)t)
                                .v[0];
            struct sol_replica *ri = &s->rep[i], *rj = &s->rep[j];
            s->ex_att++;
            if (sol_exchange(ri->E, rj->E, s->temps[t] * tscale, s->temps[t + 1] * tscale, s->ltab,
                             word)) {
                ri->slot = t + 1;
                rj->slot = t;
                of_slot[t] = j;
                of_slot[t + 1] = i;
                s->ex_acc++;
            }
        }
    }
    free(of_slot);
    for (int32_t r = 0; r < R; r++) {
        struct sol_replica *rp = &s->rep[r];
        rp->sigma = sol_adapt_sigma(rp->sigma, rp->win_att, rp->win_acc, s->sp.sigma_min,
                                    s->sp.sigma_max);
        if (rp->win_att >= 64)
            rp->win_att = rp->win_acc = 0;
        sol_bandit_update(&s->sp, rp);
    }
    s->batch++;
}

void solref_batch(struct solref *s, int32_t S, double tscale)
{
    for (int32_t r = 0; r < s->R; r++)
        for (int32_t i = 0; i < S; i++)
            solref_step(s, r, tscale);
    solref_boundary(s, tscale);
}

void gpu_solver_params_default(struct gpu_solver_params *sp)
{
    memset(sp, 0, sizeof(*sp));
    sp->replicas = 0;
    sp->ladder = 2;
    sp->W = 4;
    sp->block = 1024;
    sp->batch_steps = 0;
    sp->max_steps = 0;
    sp->t_lo = 0.1;
    sp->t_hi = 5.0;
    sp->cool = 0.1;
    sp->beta = 1.0;
    sp->beta_alt = 2.0;
    sp->beta_k = 3.5;
    sp->alt_every = 3;
    sp->pnorm_rho = 0;
    sp->tournament = 64;
    sp->p_hot = 0.6;
    sp->p_local = 0.7;
    sp->p_bary = 0.15;
    sp->p_median = 0;
    sp->ops_bandit = 0;
    sp->bandit_floor = 0.05;
    sp->restart_steps = 5000;
    sp->restart_node = 50;
    sp->restart_share = 0.5;
    sp->restart_pool = 1;
    sp->lin = 0;
    sp->reuse = 1;
    sp->island_every = 25;
    sp->island_take = 2;
    sp->groups = 1;
    sp->evaluator = GPU_EVAL_AUTO;
    sp->index_items = 16;
    sp->index_rebuild = 0;
    sp->chunk = 0;
    sp->layout_mem = GPU_MEM_AUTO;
    sp->debug = 0;
}

/* The GPU engine's knobs: one table drives parsing and ranges (opts.h). */
#define GK(f) offsetof(struct gpu_solver_params, f)
static const struct opt gknobs[] = {
    OPT_I32("replicas", GK(replicas), 0, 65536),
    OPT_I32("ladder", GK(ladder), 1, 64),
    OPT_I32("W", GK(W), 1, SOL_WMAX),
    OPT_I32("block", GK(block), 32, 1024),
    OPT_I32("batch_steps", GK(batch_steps), 0, 1 << 20),
    OPT_I32("tournament", GK(tournament), 1, SOL_TMAX),
    OPT_DBL("t_lo", GK(t_lo), 1e-6, 1e6),
    OPT_DBL("t_hi", GK(t_hi), 1e-6, 1e6),
    OPT_DBL("cool", GK(cool), 1e-6, 1),
    OPT_DBL("beta", GK(beta), 0.01, 5),
    OPT_DBL("beta_alt", GK(beta_alt), 0.01, 5),
    OPT_DBL("beta_k", GK(beta_k), 0, 100),
    OPT_I32("alt_every", GK(alt_every), 0, 64),
    OPT_DBL("pnorm_rho", GK(pnorm_rho), 0, 10),
    OPT_I32("pnorm_up", GK(pnorm_up), 0, 1),
    OPT_DBL("p_hot", GK(p_hot), 0, 1),
    OPT_DBL("p_local", GK(p_local), 0, 1),
    OPT_DBL("p_bary", GK(p_bary), 0, 1),
    OPT_DBL("p_median", GK(p_median), 0, 1),
    OPT_CHOICE("ops", GK(ops_bandit), ENGINE_OPS_MODES),
    OPT_DBL("bandit_floor", GK(bandit_floor), 0, 0.25),
    OPT_DBL("lin", GK(lin), 0, 16),
    OPT_I32("restart_steps", GK(restart_steps), 0, 1000000000),
    OPT_I32("restart_node", GK(restart_node), 0, 1000000),
    OPT_DBL("restart_share", GK(restart_share), 0, 1),
    OPT_I32("restart_pool", GK(restart_pool), 1, SOL_POOL_MAX),
    OPT_I32("reuse", GK(reuse), 0, 1),
    OPT_I32("island_every", GK(island_every), 1, 1000000),
    OPT_I32("island_take", GK(island_take), 0, 65536),
    OPT_I32("groups", GK(groups), 1, SOL_GROUPS_MAX),
    OPT_CHOICE("evaluator", GK(evaluator), GPU_EVAL_CHOICES),
    OPT_I32("index_items", GK(index_items), 1, 64),
    OPT_I32("index_rebuild", GK(index_rebuild), 0, 1 << 30),
    OPT_I32("chunk", GK(chunk), 0, 1 << 20),
    OPT_CHOICE("layout_mem", GK(layout_mem), GPU_MEM_CHOICES),
    OPT_I32("debug", GK(debug), 0, 1),
};
#undef GK

int gpu_solver_params_parse(struct gpu_solver_params *sp, const char *spec, char *err, size_t errlen)
{
    int rc = opts_parse_kv(gknobs, LCN_ARRAY_LEN(gknobs), sp, spec, "tuning", err, errlen);
    if (!rc && sp->p_local + sp->p_bary + sp->p_median > 1) {
        snprintf(err, errlen, "tuning: p_local + p_bary + p_median must not exceed 1");
        rc = LCN_EINVAL;
    }
    return rc;
}

int gpu_tuning_check(const char *tuning, char *err, size_t errlen)
{
    struct gpu_solver_params gp;
    gpu_solver_params_default(&gp);
    return gpu_solver_params_parse(&gp, tuning, err, errlen);
}
