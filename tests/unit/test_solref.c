/*
 * The CPU twin of the device solver: its incremental counts, tuples,
 * energies and best layouts must match the oracle after every batch, and it
 * must be deterministic. (The GPU tests then compare the kernel with it.)
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "crossings.h"
#include "engine.h"
#include "gen.h"
#include "gpu.h"
#include "solver_ref.h"
#include "util.h"
#include "validate.h"

/* The device runs every proposal-worker count that admission lets through:
 * one limit (engine.h), which the device solver's own bound must equal. */
_Static_assert(SOL_WMAX == LCN_MAX_PROPOSAL_WORKERS,
               "SOL_WMAX (gpu/solver_core.h) differs from LCN_MAX_PROPOSAL_WORKERS (engine.h)");

static void make(enum gen_family fam, int32_t n, uint64_t seed, struct lcn_graph *g,
                 struct lcn_pt **pts)
{
    struct gen_params p = {.family = fam, .n = n, .seed = seed};
    char err[160];
    assert_int_equal(gen_instance(&p, g, pts, NULL, err, sizeof(err)), 0);
}

static void check_replicas(struct solref *s)
{
    const struct lcn_graph *g = s->g;
    int32_t *c = xmalloc(sizeof(int32_t) * (size_t)(g->m + 1));
    for (int32_t r = 0; r < s->R; r++) {
        const struct lcn_pt *cur = s->cur + (size_t)r * g->n;
        crossings_full(g, cur, c);
        assert_memory_equal(c, s->cnt + (size_t)r * g->m, sizeof(int32_t) * (size_t)g->m);
        struct lcn_obj o;
        assert_int_equal(obj_from_counts(&o, c, g->m), 0);
        assert_int_equal(obj_cmp(&o, &s->rep[r].cur), 0);
        assert_true(obj_cmp(&s->rep[r].best, &s->rep[r].cur) <= 0);
        struct lcn_report rep;
        validate_layout(g, cur, 4, &rep);
        assert_true(rep.valid);
        report_release(&rep);
        validate_layout(g, s->best + (size_t)r * g->n, 4, &rep);
        assert_true(rep.valid);
        assert_int_equal(obj_cmp(&rep.obj, &s->rep[r].best), 0);
        report_release(&rep);
        assert_true(s->rep[r].E == solref_energy(s, r));
        assert_true(s->rep[r].accepted + s->rep[r].rejected == s->rep[r].selected);
        assert_true(s->rep[r].committed == s->rep[r].accepted);
        assert_true(s->rep[r].valid <= s->rep[r].attempted);
    }
    free(c);
    /* the slots of each ladder are a permutation */
    for (int32_t base = 0; base < s->R; base += s->L) {
        uint64_t seen = 0;
        for (int32_t i = 0; i < s->L; i++)
            seen |= 1ull << s->rep[base + i].slot;
        assert_true(seen == (s->L == 64 ? ~0ull : (1ull << s->L) - 1));
    }
}

/* What solref_derive makes of solver params for a graph (seed 5). */
struct derived {
    struct sol_params sp;
    double temps[64];
    uint32_t r16;
    int64_t lin;
    int32_t sigma0;
};

static void derive(const struct gpu_solver_params *gp, const struct lcn_graph *g, struct derived *d)
{
    solref_derive(gp, g, 5, &d->sp, d->temps, &d->r16, &d->lin, &d->sigma0);
}

static void run_twin_tuned(enum gen_family fam, int32_t n, int32_t W, int32_t R, int32_t L,
                           const char *tuning)
{
    struct lcn_graph g;
    struct lcn_pt *pts;
    make(fam, n, 11, &g, &pts);
    struct gpu_solver_params gp;
    gpu_solver_params_default(&gp);
    gp.W = W;
    gp.ladder = L;
    gp.restart_steps = 0;
    char err[160];
    assert_int_equal(gpu_solver_params_parse(&gp, tuning, err, sizeof(err)), 0);
    struct derived d;
    derive(&gp, &g, &d);
    struct solref a, b;
    assert_int_equal(solref_init(&a, &g, &d.sp, R, L, pts, d.temps, d.r16, d.lin, d.sigma0), 0);
    assert_int_equal(solref_init(&b, &g, &d.sp, R, L, pts, d.temps, d.r16, d.lin, d.sigma0), 0);
    for (int batch = 0; batch < 4; batch++) {
        solref_batch(&a, 30, 1.0 - 0.2 * batch);
        solref_batch(&b, 30, 1.0 - 0.2 * batch);
        check_replicas(&a);
    }
    /* determinism: identical states */
    assert_memory_equal(a.cur, b.cur, sizeof(struct lcn_pt) * (size_t)R * g.n);
    assert_memory_equal(a.best, b.best, sizeof(struct lcn_pt) * (size_t)R * g.n);
    assert_memory_equal(a.rep, b.rep, sizeof(struct sol_replica) * (size_t)R);
    /* the global best is the best replica's best */
    for (int32_t r = 0; r < R; r++)
        assert_true(obj_cmp(&a.gbest, &a.rep[r].best) <= 0);
    assert_true(a.ex_att > 0 || L == 1);
    for (int32_t r = 0; r < R; r++)
        assert_true(a.rep[r].restarts == 0); /* restart_steps 0: never */
    solref_release(&a);
    solref_release(&b);
    graph_release(&g);
    free(pts);
}

static void run_twin(enum gen_family fam, int32_t n, int32_t W, int32_t R, int32_t L)
{
    run_twin_tuned(fam, n, W, R, L, "");
}

/* issue 15's knobs: the steepness following K, the median operator, the
 * bandit; the replicas stay consistent with full recounts */
static void test_twin_issue15(void **st)
{
    run_twin_tuned(GEN_DENSE, 40, 4, 4, 2, "beta_k=3.5,ops=bandit,p_local=0.6,p_median=0.1");
    run_twin_tuned(GEN_RANDOM, 40, 8, 6, 2, "beta_k=2,pnorm_rho=0.5,pnorm_up=1,p_local=0.5,p_median=0.3");
}

static void test_twin_grid(void **st)
{
    run_twin(GEN_GRID, 60, 1, 4, 4);
}

static void test_twin_random_w4(void **st)
{
    run_twin(GEN_RANDOM, 40, 4, 4, 2);
}

static void test_twin_dense_w32(void **st)
{
    run_twin(GEN_DENSE, 40, 32, 2, 2);
}

static void test_twin_planted(void **st)
{
    run_twin(GEN_PLANTED, 50, 2, 8, 8);
}

/* Three ladders of two with alt_every 3: ladder 2 (replicas 4, 5) runs on
 * the second, steeper table; each replica's energy is the sum under its
 * own table (check_replicas), and the two tables differ. */
static void test_twin_energy_portfolio(void **st)
{
    run_twin(GEN_RANDOM, 40, 2, 6, 2);
    struct lcn_graph g;
    struct lcn_pt *pts;
    make(GEN_RANDOM, 40, 11, &g, &pts);
    struct gpu_solver_params gp;
    gpu_solver_params_default(&gp);
    gp.ladder = 2;
    gp.alt_every = 3;
    gp.beta_alt = 2.0;
    struct derived d;
    derive(&gp, &g, &d);
    assert_true(d.sp.alt_every == 3 && d.sp.r16_alt > d.r16);
    for (int32_t r = 0; r < 6; r++)
        assert_int_equal(sol_table(&d.sp, r, 2), r >= 4);
    struct solref a;
    assert_int_equal(solref_init(&a, &g, &d.sp, 6, 2, pts, d.temps, d.r16, d.lin, d.sigma0), 0);
    assert_true(a.rep[4].E != a.rep[0].E); /* same start layout, other table */
    assert_true(a.rep[4].E == solref_energy(&a, 4) && a.rep[0].E == solref_energy(&a, 0));
    solref_release(&a);
    gp.alt_every = 0; /* one table: every replica alike */
    derive(&gp, &g, &d);
    assert_int_equal(sol_table(&d.sp, 4, 2), 0);
    assert_true(d.sp.r16_alt == d.r16);
    graph_release(&g);
    free(pts);
    (void)st;
}

/*
 * Elite restarts: after a boundary that restarted, every restarted replica
 * holds the elite's best layout, counts and tuple (check_replicas recounts
 * them), it is in the cold half of its ladder, and the waves are counted;
 * the twin stays deterministic.
 */
static uint64_t total_restarts(const struct solref *s)
{
    uint64_t t = 0;
    for (int32_t r = 0; r < s->R; r++)
        t += s->rep[r].restarts;
    return t;
}

static void test_twin_restarts(void **st)
{
    struct lcn_graph g;
    struct lcn_pt *pts;
    make(GEN_PLANTED, 30, 3, &g, &pts);
    struct gpu_solver_params gp;
    gpu_solver_params_default(&gp);
    gp.ladder = 4;
    gp.restart_steps = 20;
    struct derived d;
    /* restart_node raises the wait to restart_node x n; 0 restart_steps stays 0 */
    gp.restart_node = 2;
    derive(&gp, &g, &d);
    assert_int_equal(d.sp.restart_steps, 2 * g.n);
    gp.restart_node = 1000000;
    derive(&gp, &g, &d);
    assert_int_equal(d.sp.restart_steps, LCN_MIN((int64_t)INT32_MAX, (int64_t)1000000 * g.n));
    gp.restart_steps = 0;
    derive(&gp, &g, &d);
    assert_int_equal(d.sp.restart_steps, 0);
    gp.restart_steps = 20;
    gp.restart_node = 0;
    derive(&gp, &g, &d);
    assert_int_equal(d.sp.restart_steps, 20);
    const int32_t R = 8, L = 4, n = g.n;
    struct solref a, b;
    assert_int_equal(solref_init(&a, &g, &d.sp, R, L, pts, d.temps, d.r16, d.lin, d.sigma0), 0);
    assert_int_equal(solref_init(&b, &g, &d.sp, R, L, pts, d.temps, d.r16, d.lin, d.sigma0), 0);
    int waves = 0;
    uint64_t *before = xcalloc((size_t)R, sizeof(uint64_t));
    int32_t *slot = xcalloc((size_t)R, sizeof(int32_t));
    for (int batch = 0; batch < 24; batch++) {
        for (int32_t r = 0; r < R; r++) {
            before[r] = a.rep[r].restarts;
            slot[r] = a.rep[r].slot;
        }
        solref_batch(&a, 20, 1.0 - 0.03 * batch);
        solref_batch(&b, 20, 1.0 - 0.03 * batch);
        check_replicas(&a);
        int restarted = 0;
        for (int32_t r = 0; r < R; r++) {
            if (a.rep[r].restarts == before[r])
                continue;
            restarted++;
            assert_true(a.rep[r].restarts == before[r] + 1);
            assert_true(slot[r] < (L + 1) / 2); /* cold half, before this boundary's exchanges */
            assert_memory_equal(a.cur + (size_t)r * n, a.best + (size_t)a.gbest_rep * n,
                                sizeof(struct lcn_pt) * (size_t)n);
            assert_int_equal(obj_cmp(&a.rep[r].cur, &a.gbest), 0);
            assert_int_equal(obj_cmp(&a.rep[r].best, &a.gbest), 0);
        }
        assert_true(restarted == 0 || restarted == R / L * ((L + 1) / 2));
        waves += restarted > 0;
    }
    assert_true(waves >= 2);
    assert_true(total_restarts(&a) == (uint64_t)waves * (R / L) * ((L + 1) / 2));
    assert_memory_equal(a.cur, b.cur, sizeof(struct lcn_pt) * (size_t)R * n);
    assert_memory_equal(a.rep, b.rep, sizeof(struct sol_replica) * (size_t)R);
    free(before);
    free(slot);
    solref_release(&a);
    solref_release(&b);
    graph_release(&g);
    free(pts);
    (void)st;
}

/* sol_elite_pool against a slow twin: sort the replicas of a group by
 * (best tuple, index) and keep the first of each distinct tuple; random
 * tuples with many ties, pools of 1..SOL_POOL_MAX, one to four groups of
 * ladders. Then sol_restart_source: members restart from themselves, the
 * others from the pool member of their ladder's turn; and sol_group_worst
 * against a sort by (current tuple, index), worst first. */
static void test_elite_pool(void **st)
{
    struct lcn_rng rg;
    rng_init(&rg, 7, 0, 0);
    for (int trial = 0; trial < 300; trial++) {
        const int32_t L = 1 + (int32_t)rng_below(&rg, 4);
        int32_t R = L * (1 + (int32_t)rng_below(&rg, 40 / L)), P = 1 + (int32_t)rng_below(&rg, SOL_POOL_MAX);
        struct sol_params sp;
        memset(&sp, 0, sizeof(sp));
        sp.groups = 1 + (int32_t)rng_below(&rg, 4);
        const int32_t ng = sol_ngroups(&sp, R, L);
        assert_true(ng >= 1 && ng <= sp.groups && ng <= R / L);
        struct sol_replica rep[40];
        memset(rep, 0, sizeof(rep));
        for (int32_t r = 0; r < R; r++) {
            rep[r].best.K = 3 + (int32_t)rng_below(&rg, 3);
            rep[r].best.nK = 1 + (int32_t)rng_below(&rg, 2);
            rep[r].best.C = 10 + (int64_t)rng_below(&rg, 2);
            rep[r].cur = rep[r].best;
            rep[r].cur.K += (int32_t)rng_below(&rg, 2);
        }
        for (int32_t h = 0; h < ng; h++) {
            int32_t r0, r1; /* the range is the members, whole ladders */
            sol_group_range(ng, h, R, L, &r0, &r1);
            assert_true(r0 < r1 && r0 % L == 0 && r1 % L == 0 && r1 <= R);
            for (int32_t r = 0; r < R; r++)
                assert_int_equal(sol_group_of(ng, r, R, L) == h, r >= r0 && r < r1);
            int32_t pool[SOL_POOL_MAX], slow[SOL_POOL_MAX], ns = 0;
            int32_t np = sol_elite_pool(rep, R, L, ng, h, P, pool);
            int32_t ord[40], no = 0;
            for (int32_t i = 0; i < R; i++)
                if (sol_group_of(ng, i, R, L) == h)
                    ord[no++] = i;
            assert_true(no >= L); /* whole ladders */
            for (int32_t i = 1; i < no; i++) /* insertion sort: stable, so ties keep index order */
                for (int32_t j = i; j > 0 && obj_cmp(&rep[ord[j]].best, &rep[ord[j - 1]].best) < 0; j--) {
                    int32_t t = ord[j];
                    ord[j] = ord[j - 1];
                    ord[j - 1] = t;
                }
            for (int32_t i = 0; i < no && ns < P; i++)
                if (i == 0 || obj_cmp(&rep[ord[i]].best, &rep[ord[i - 1]].best) != 0)
                    slow[ns++] = ord[i];
            assert_int_equal(np, ns);
            assert_memory_equal(pool, slow, sizeof(int32_t) * (size_t)np);
            for (int32_t r = 0; r < R; r++) {
                if (sol_group_of(ng, r, R, L) != h)
                    continue;
                int32_t src = sol_restart_source(pool, np, r, L), member = 0;
                for (int32_t i = 0; i < np; i++)
                    member |= pool[i] == r;
                assert_int_equal(src, member ? r : pool[(r / L) % np]);
            }
            /* the worst by current tuple: sorted worst first, ties to the highest index */
            no = 0;
            for (int32_t i = R - 1; i >= 0; i--)
                if (sol_group_of(ng, i, R, L) == h)
                    ord[no++] = i;
            for (int32_t i = 1; i < no; i++)
                for (int32_t j = i; j > 0 && obj_cmp(&rep[ord[j]].cur, &rep[ord[j - 1]].cur) > 0; j--) {
                    int32_t t = ord[j];
                    ord[j] = ord[j - 1];
                    ord[j - 1] = t;
                }
            int32_t take = (int32_t)rng_below(&rg, SOL_TAKE_MAX + 1), worst[SOL_TAKE_MAX];
            int32_t nw = sol_group_worst(rep, R, L, ng, h, take, worst);
            assert_int_equal(nw, LCN_MIN(take, no));
            assert_memory_equal(worst, ord, sizeof(int32_t) * (size_t)nw);
        }
    }
    (void)st;
}

/*
 * Replica groups (knob groups): five ladders of 2 in three groups (2, 2 and
 * 1 ladders). Each batch's steps, then a snapshot, then the boundary, so
 * that every decision is checked against the state it was taken on: each
 * group's tables are its own K's (sol_energy_tables at the group's best K);
 * imports happen only at boundaries that are multiples of island_every and
 * only when the run's best is new since the last import; each group whose
 * best is worse than the run's then imports into its min(island_take, size)
 * worst replicas by current tuple (ties: the highest index), which take the
 * run's best layout and tuple, and has no wave at that boundary; a wave
 * restarts the cold slot of each ladder of its group only, when that
 * group's own best has been flat for restart_steps (on its slowest
 * replica). Over the run imports, skipped waves and waves all happen, the
 * replicas stay consistent with full recounts, and the twin is
 * deterministic.
 */
static void test_twin_groups(void **st)
{
    struct lcn_graph g;
    struct lcn_pt *pts;
    make(GEN_PLANTED, 30, 3, &g, &pts);
    struct gpu_solver_params gp;
    gpu_solver_params_default(&gp);
    char err[160];
    assert_int_not_equal(gpu_solver_params_parse(&gp, "groups=17", err, sizeof err), 0);
    assert_int_equal(gpu_solver_params_parse(&gp, "ladder=2,restart_steps=60,restart_node=0,groups=3,"
                                                  "island_every=2,island_take=3",
                                             err, sizeof err), 0);
    struct derived d;
    derive(&gp, &g, &d);
    assert_int_equal(d.sp.groups, 3);
    const int32_t R = 10, L = 2, n = g.n, m = g.m, ng = sol_ngroups(&d.sp, R, L);
    assert_int_equal(ng, 3);
    static const int32_t group_of[10] = {0, 0, 0, 0, 1, 1, 1, 1, 2, 2}; /* ladder l: l 3 / 5 */
    struct solref a, b;
    assert_int_equal(solref_init(&a, &g, &d.sp, R, L, pts, d.temps, d.r16, d.lin, d.sigma0), 0);
    assert_int_equal(solref_init(&b, &g, &d.sp, R, L, pts, d.temps, d.r16, d.lin, d.sigma0), 0);
    int64_t *w = xmalloc(sizeof(int64_t) * 2 * (size_t)(m + 1));
    uint64_t imported = 0, waves = 0, skipped = 0, flat[3] = {0, 0, 0};
    struct lcn_obj last_ex = {0, 0, 0, 0}, gbest_before[3];
    int ex_done = 0;
    for (int h = 0; h < 3; h++)
        gbest_before[h] = a.grp[h].best;
    for (int batch = 0; batch < 60; batch++) {
        for (int32_t r = 0; r < R; r++)
            for (int i = 0; i < 20; i++)
                solref_step(&a, r, 1.0);
        /* the state the boundary decides on */
        struct sol_replica pre[10];
        memcpy(pre, a.rep, sizeof(pre));
        int32_t gb = 0;
        for (int32_t r = 1; r < R; r++)
            if (obj_cmp(&pre[r].best, &pre[gb].best) < 0)
                gb = r;
        const int due = batch % 2 == 0 && (!ex_done || obj_cmp(&pre[gb].best, &last_ex) < 0);
        solref_boundary(&a, 1.0);
        solref_batch(&b, 20, 1.0);
        check_replicas(&a);
        assert_int_equal(a.gbest_rep, gb);
        for (int32_t h = 0; h < ng; h++) {
            int32_t mem[4], nm = 0, nimp = 0, nrs = 0;
            for (int32_t r = 0; r < R; r++)
                if (group_of[r] == h) {
                    assert_int_equal(sol_group_of(ng, r, R, L), h);
                    mem[nm++] = r;
                }
            /* the expected importers: the worst by current tuple, ties to the highest index */
            int32_t want[4], nw = 0;
            const int imports = due && obj_cmp(&a.grp[h].best, &pre[gb].best) > 0;
            if (imports) {
                nw = LCN_MIN(3, nm);
                for (int32_t i = 0; i < nw; i++) {
                    int32_t x = -1;
                    for (int32_t j = 0; j < nm; j++) {
                        int taken = 0;
                        for (int32_t q = 0; q < i; q++)
                            taken |= want[q] == mem[j];
                        if (!taken && (x < 0 || obj_cmp(&pre[mem[j]].cur, &pre[x].cur) >= 0))
                            x = mem[j];
                    }
                    want[i] = x;
                }
            }
            for (int32_t j = 0; j < nm; j++) {
                const int32_t r = mem[j];
                int expect = 0;
                for (int32_t i = 0; i < nw; i++)
                    expect |= want[i] == r;
                assert_int_equal(a.rep[r].imports - pre[r].imports, (uint64_t)expect);
                if (expect) {
                    assert_true(a.rep[r].restarts == pre[r].restarts);
                    assert_memory_equal(a.cur + (size_t)r * n, a.best + (size_t)gb * n,
                                        sizeof(struct lcn_pt) * (size_t)n);
                    assert_int_equal(obj_cmp(&a.rep[r].cur, &pre[gb].best), 0);
                    nimp++;
                }
                if (a.rep[r].restarts != pre[r].restarts) {
                    assert_true(a.rep[r].restarts == pre[r].restarts + 1);
                    assert_true(pre[r].slot == 0); /* the cold slot of a ladder of 2 */
                    nrs++;
                }
            }
            assert_int_equal(nimp, nw);
            assert_true(nrs == 0 || (nrs == nm / 2 && nimp == 0)); /* one cold slot a ladder */
            /* a wave only after the group's own best was flat for restart_steps steps */
            flat[h] = obj_cmp(&a.grp[h].best, &gbest_before[h]) < 0 ? 0 : flat[h] + 20;
            if (nrs)
                assert_true(flat[h] >= 60);
            if (nrs)
                flat[h] = 0;
            gbest_before[h] = a.grp[h].best;
            if (imports && flat[h] >= 60)
                skipped++;
            imported += (uint64_t)nimp;
            waves += nrs > 0;
            /* the group's own tables, at its own best K */
            assert_int_equal(a.grp[h].kref, a.grp[h].best.K);
            sol_energy_tables(w, &a.sp, a.grp[h].kref, a.r16, a.lin, a.rk);
            assert_memory_equal(w, a.wtab + (size_t)2 * h * (m + 1), sizeof(int64_t) * 2 * (size_t)(m + 1));
        }
        if (due) {
            last_ex = pre[gb].best;
            ex_done = 1;
        }
    }
    assert_true(imported > 0);
    assert_true(waves >= 2);
    assert_true(skipped > 0); /* some group imported when its own wave was due */
    assert_memory_equal(a.cur, b.cur, sizeof(struct lcn_pt) * (size_t)R * n);
    assert_memory_equal(a.rep, b.rep, sizeof(struct sol_replica) * (size_t)R);
    /* more groups than ladders: one per ladder */
    assert_int_equal(gpu_solver_params_parse(&gp, "groups=16", err, sizeof err), 0);
    derive(&gp, &g, &d);
    assert_int_equal(sol_ngroups(&d.sp, R, L), 5);
    free(w);
    solref_release(&a);
    solref_release(&b);
    graph_release(&g);
    free(pts);
    (void)st;
}

/* Restart waves with restart_pool = 3 on six ladders of 2: every restarted
 * replica holds the best layout of some replica (its pool source: a wave
 * writes no source's best, and exchanges move no layout), the restarted
 * replicas of a wave hold at most three distinct tuples, and some wave
 * spread them over more than one. The exact choice is sol_elite_pool's
 * (test_elite_pool), and the device follows the twin bit for bit (test_gpu). */
static void test_twin_restart_pool(void **st)
{
    struct lcn_graph g;
    struct lcn_pt *pts;
    make(GEN_PLANTED, 30, 3, &g, &pts);
    struct gpu_solver_params gp;
    gpu_solver_params_default(&gp);
    char err[128];
    assert_int_equal(gpu_solver_params_parse(&gp, "ladder=2,restart_steps=20,restart_node=0,restart_pool=3",
                                             err, sizeof err), 0);
    struct derived d;
    derive(&gp, &g, &d);
    assert_int_equal(d.sp.restart_pool, 3);
    const int32_t R = 12, L = 2, n = g.n;
    struct solref a;
    assert_int_equal(solref_init(&a, &g, &d.sp, R, L, pts, d.temps, d.r16, d.lin, d.sigma0), 0);
    int waves = 0, spread = 0;
    for (int batch = 0; batch < 40; batch++) {
        uint64_t before[12];
        for (int32_t r = 0; r < R; r++)
            before[r] = a.rep[r].restarts;
        solref_batch(&a, 20, 1.0);
        check_replicas(&a);
        struct lcn_obj seen[12];
        int ns = 0, restarted = 0;
        for (int32_t r = 0; r < R; r++) {
            if (a.rep[r].restarts == before[r])
                continue;
            restarted++;
            int found = 0;
            for (int32_t s = 0; s < R && !found; s++)
                found = obj_cmp(&a.rep[r].cur, &a.rep[s].best) == 0 &&
                        memcmp(a.cur + (size_t)r * n, a.best + (size_t)s * n, sizeof(struct lcn_pt) * (size_t)n) == 0;
            assert_true(found);
            int dup = 0;
            for (int i = 0; i < ns; i++)
                dup |= obj_cmp(&seen[i], &a.rep[r].cur) == 0;
            if (!dup)
                seen[ns++] = a.rep[r].cur;
        }
        assert_true(ns <= 3);
        assert_true(restarted == 0 || restarted == R / L);
        waves += restarted > 0;
        spread += ns > 1;
    }
    assert_true(waves >= 2);
    assert_true(spread >= 1);
    solref_release(&a);
    graph_release(&g);
    free(pts);
    (void)st;
}

/*
 * The device step's star test (sol_star_masks + sol_star_meets, orientations
 * shared) against geom_segments_meet per segment, its slow twin: random
 * stars on small grids (many collinear, touching and coincident cases),
 * degrees past one 64-segment mask, edges sharing an endpoint with a far end.
 */
static void test_star_masks(void **st)
{
    (void)st;
    static struct lcn_pt pu[SOL_DMAX];
    static int32_t u[SOL_DMAX];
    uint64_t x = 0x9e3779b97f4a7c15ull, cases = 0, met = 0, counted = 0;
#define NEXT() (x ^= x << 13, x ^= x >> 7, x ^= x << 17, x)
    for (int it = 0; it < 20000; it++) {
        int32_t span = it % 4 == 0 ? 4 : it % 4 == 1 ? 12 : it % 4 == 2 ? 1000 : GEOM_SMALL + 1;
        int small = (it / 4) % 2; /* both orientation paths, coordinates in [0, GEOM_SMALL] */
        int32_t d = 1 + (int32_t)(NEXT() % (it % 10 == 0 ? 200 : 40));
        struct lcn_pt p = {(int32_t)(NEXT() % span), (int32_t)(NEXT() % span)};
        for (int32_t k = 0; k < d; k++) {
            pu[k].x = (int32_t)(NEXT() % span);
            pu[k].y = (int32_t)(NEXT() % span);
            u[k] = (int32_t)(NEXT() % 64);
        }
        int32_t ea = (int32_t)(NEXT() % 64), eb = (int32_t)(NEXT() % 64);
        struct lcn_pt a = {(int32_t)(NEXT() % span), (int32_t)(NEXT() % span)};
        struct lcn_pt b = {(int32_t)(NEXT() % span), (int32_t)(NEXT() % span)};
        if (NEXT() % 4 == 0)
            a = pu[NEXT() % (uint64_t)d]; /* an end on a far end's point */
        for (int32_t k0 = 0; k0 < d; k0 += 64) {
            uint64_t pos, neg;
            sol_star_masks(small, pu, u, d, k0, ea, eb, a, b, &pos, &neg);
            uint64_t got = sol_star_meets(small, p, a, b, pos, neg, pu, k0);
            int32_t want_counted = 0;
            for (int32_t j = 0; j < 64; j++) {
                int32_t k = k0 + j;
                int skip = k >= d || u[k] == ea || u[k] == eb;
                int want = !skip && geom_segments_meet(p, pu[k], a, b);
                want_counted += !skip;
                assert_int_equal((int)((got >> j) & 1), want);
                met += (uint64_t)want;
                cases++;
            }
            assert_int_equal(sol_star_counted(pos, neg), want_counted);
            counted += (uint64_t)want_counted;
        }
    }
#undef NEXT
    /* the fixtures reach both answers often */
    assert_true(met > 10000);
    assert_true(counted - met > 10000);
    assert_true(cases > counted);
}

static void test_energy_table(void **st)
{
    int64_t w[200];
    uint32_t r16 = 178145; /* e^1 */
    sol_energy_table(w, 199, 50, r16, 1, 0, 0);
    assert_true(w[50] == SOL_W_BASE + 50);
    for (int c = 1; c <= 199; c++)
        assert_true(w[c] > w[c - 1]); /* strictly increasing */
    /* convex near the reference */
    for (int c = 40; c < 60; c++)
        assert_true(w[c + 1] - w[c] >= w[c] - w[c - 1]);
    /* the sum over the largest graph the solver takes cannot overflow: up
     * to SOL_EXACT_EDGES unclamped, past it the table saturates (issue 17) */
    int64_t *big = xmalloc(sizeof(int64_t) * (SOL_MAX_EDGES + 1));
    sol_energy_table(big, SOL_EXACT_EDGES, 0, r16, 1, 0, 0);
    assert_true(big[SOL_EXACT_EDGES] < INT64_MAX / SOL_EXACT_EDGES);
    assert_true(big[SOL_EXACT_EDGES] - SOL_EXACT_EDGES < SOL_W_SUM_CAP / (SOL_EXACT_EDGES + 1));
    sol_energy_table(big, SOL_MAX_EDGES, 0, r16, 1, 0, 0);
    assert_true(big[SOL_MAX_EDGES] < INT64_MAX / SOL_MAX_EDGES);
    assert_true(big[SOL_MAX_EDGES] == SOL_W_SUM_CAP / (SOL_MAX_EDGES + 1) + SOL_MAX_EDGES);
    for (int c = 1; c <= SOL_MAX_EDGES; c++)
        assert_true(big[c] > big[c - 1]); /* the crossing weight still orders them */

    /* the p-norm lower branch (pnorm_rho 0.5 = 32768/65536, kref 50): each
     * step down divides by 1 + 0.5 * 50 / (c+1), so 1.5 from 50 to 49; the
     * upper branch is the exponential one */
    int64_t pn[200];
    sol_energy_table(pn, 199, 50, r16, 1, 32768, 0);
    assert_true(pn[50] == SOL_W_BASE + 50);
    assert_true(pn[49] == (int64_t)SOL_W_BASE * 65536 / (65536 + 32768) + 49);
    assert_true(pn[48] == (pn[49] - 49) * 65536 / (65536 + 32768 * 50 / 49) + 48);
    for (int c = 50; c <= 199; c++)
        assert_true(pn[c] == w[c]);
    for (int c = 1; c <= 199; c++)
        assert_true(pn[c] > pn[c - 1]);
    /* flatter than e per step just below kref: more weight on edges near K */
    assert_true(pn[45] > w[45]);
    /* pn_up: the same p-norm above kref (1 + 0.5 * 50 / 50 = 1.5 from 50 to
     * 51), the lower branch unchanged; without pn16 it changes nothing */
    int64_t pu[200], e1[200];
    sol_energy_table(pu, 199, 50, r16, 1, 32768, 1);
    for (int c = 0; c <= 50; c++)
        assert_true(pu[c] == pn[c]);
    assert_true(pu[51] == (int64_t)SOL_W_BASE * (65536 + 32768) / 65536 + 51);
    for (int c = 1; c <= 199; c++)
        assert_true(pu[c] > pu[c - 1]);
    assert_true(pu[60] < w[60]); /* flatter than e per step above kref */
    sol_energy_table(e1, 199, 50, r16, 1, 0, 1);
    assert_memory_equal(e1, w, sizeof(w));
    sol_energy_table(big, SOL_EXACT_EDGES, 1, r16, 1, 655360, 1); /* rho 10, kref 1 */
    assert_true(big[SOL_EXACT_EDGES] < INT64_MAX / SOL_EXACT_EDGES);
    sol_energy_table(big, SOL_MAX_EDGES, 1, r16, 1, 655360, 1);
    assert_true(big[SOL_MAX_EDGES] < INT64_MAX / SOL_MAX_EDGES);
    free(big);
    /* sol_energy_tables puts it in the second table only, with alt_every */
    struct sol_params sp = {.m = 199, .alt_every = 3, .r16_alt = r16, .pn16 = 32768};
    int64_t two[400];
    sol_energy_tables(two, &sp, 50, r16, 1, NULL);
    for (int c = 0; c <= 199; c++)
        assert_true(two[c] == w[c] && two[200 + c] == pn[c]);

    /* beta_k: the ratios per K (solref_fill_ratios), the first table's
     * clamp(beta_k / sqrt(K), 0.05, 2), the second's alt_ratio times that */
    struct sol_params sk = {.m = 199, .alt_every = 3, .r16_alt = r16, .beta_k = 3.5, .alt_ratio = 2};
    uint32_t rk[400];
    solref_fill_ratios(&sk, r16, rk);
    assert_int_equal(rk[0], (uint32_t)llround(65536.0 * exp(2.0)));      /* K 0, 1: clamped at 2 */
    assert_int_equal(rk[4], (uint32_t)llround(65536.0 * exp(1.75)));     /* 3.5 / 2 */
    assert_int_equal(rk[196], (uint32_t)llround(65536.0 * exp(0.25)));   /* 3.5 / 14 */
    assert_int_equal(rk[200 + 196], (uint32_t)llround(65536.0 * exp(0.5)));
    for (int k = 2; k <= 199; k++)
        assert_true(rk[k] <= rk[k - 1] && rk[200 + k] >= rk[k]); /* softer as K grows */
    int64_t tk[400], t1[200];
    sol_energy_tables(tk, &sk, 196, r16, 1, rk);
    sol_energy_table(t1, 199, 196, rk[196], 1, 0, 0);
    assert_memory_equal(tk, t1, sizeof(t1));
    /* without beta_k the ratios are the fixed ones, for every K */
    sk.beta_k = 0;
    solref_fill_ratios(&sk, r16, rk);
    for (int k = 0; k <= 199; k++)
        assert_true(rk[k] == r16 && rk[200 + k] == r16);
}

static void test_candidates_in_bounds(void **st)
{
    struct sol_params sp = {.n = 10, .m = 0, .width = 7, .height = 3, .W = 1, .p_local = 30000,
                            .p_bary = 20000, .sigma_min = 1, .sigma_max = 3, .k0 = 9};
    sp.p_median = 10000;
    uint32_t cut[SOL_OPS];
    sol_fixed_cuts(&sp, cut);
    struct lcn_pt p = {0, 3}, bary = {7, 0}, med = {2, 1};
    int seen[SOL_OPS] = {0};
    for (uint64_t s = 0; s < 5000; s++) {
        struct lcn_pt q = sol_candidate(&sp, s, 3, (uint32_t)(s % 5), p, bary, med, 3, cut);
        assert_true(q.x >= 0 && q.x <= 7 && q.y >= 0 && q.y <= 3);
        assert_false(q.x == p.x && q.y == p.y);
        seen[sol_op_of(sol_candidate_draw(&sp, s, 3, 2 * (uint32_t)(s % 5)), cut)]++;
    }
    for (int k = 0; k < SOL_OPS; k++)
        assert_true(seen[k] > 0); /* every kind drawn (30%, 20%, 15%, 35%) */
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* sol_median_rank against sorting (its slow twin): exactly one neighbour
 * has the median's rank and its value is the sorted array's (d-1)/2-th */
static void test_median_rank(void **st)
{
    struct lcn_rng r;
    rng_init(&r, 5, 0, 0);
    int32_t xs[SOL_DMAX], sorted[SOL_DMAX];
    for (int trial = 0; trial < 2000; trial++) {
        int32_t d = 1 + (int32_t)rng_below(&r, trial < 1000 ? 9 : SOL_DMAX);
        int32_t span = 1 + (int32_t)rng_below(&r, trial % 3 ? 5 : 1000000); /* many ties */
        for (int32_t k = 0; k < d; k++)
            xs[k] = sorted[k] = (int32_t)rng_below(&r, (uint32_t)span);
        qsort(sorted, (size_t)d, sizeof(int32_t), cmp_i32);
        int found = 0;
        for (int32_t k = 0; k < d; k++)
            if (sol_median_rank(xs, d, k) == (d - 1) / 2) {
                found++;
                assert_int_equal(xs[k], sorted[(d - 1) / 2]);
            }
        assert_int_equal(found, 1);
    }
}

/* The bandit: no update below 512 candidates in the window; then every
 * operator keeps at least its floor, the cuts rise, the operator with the
 * best gain per candidate gets the largest share, the window halves, and
 * the result is a function of the counters alone */
static void test_bandit_update(void **st)
{
    struct sol_params sp = {.bandit = 1, .bandit_floor = 3277, .p_local = 45875, .p_bary = 9830};
    struct sol_replica x;
    memset(&x, 0, sizeof(x));
    sol_fixed_cuts(&sp, x.op_cut);
    uint32_t fixed[SOL_OPS];
    memcpy(fixed, x.op_cut, sizeof(fixed));
    x.win_tried[0] = 100;
    sol_bandit_update(&sp, &x);
    assert_memory_equal(fixed, x.op_cut, sizeof(fixed)); /* window too small */
    uint32_t tried[SOL_OPS] = {400, 100, 100, 100}, gain[SOL_OPS] = {40, 2, 30, 0};
    memcpy(x.win_tried, tried, sizeof(tried));
    memcpy(x.win_gain, gain, sizeof(gain));
    struct sol_replica y = x;
    sol_bandit_update(&sp, &x);
    sol_bandit_update(&sp, &y);
    assert_memory_equal(&x, &y, sizeof(x));
    uint32_t prev = 0, share[SOL_OPS];
    for (int k = 0; k < SOL_OPS; k++) {
        share[k] = x.op_cut[k] - prev;
        prev = x.op_cut[k];
        assert_true(share[k] >= sp.bandit_floor);
        assert_int_equal(x.win_tried[k], tried[k] / 2);
        assert_int_equal(x.win_gain[k], gain[k] / 2);
    }
    assert_int_equal(x.op_cut[SOL_OPS - 1], 65536);
    /* gain per candidate: median 0.3 > local 0.1 > bary 0.02 > global 0 */
    assert_true(share[SOL_OP_MEDIAN] > share[SOL_OP_LOCAL] && share[SOL_OP_LOCAL] > share[SOL_OP_BARY] &&
                share[SOL_OP_BARY] > share[SOL_OP_GLOBAL]);
    /* off: nothing changes */
    sp.bandit = 0;
    y = x;
    y.win_tried[0] = 5000;
    struct sol_replica z = y;
    sol_bandit_update(&sp, &y);
    assert_memory_equal(&y, &z, sizeof(y));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_energy_table),    cmocka_unit_test(test_star_masks),    cmocka_unit_test(test_candidates_in_bounds),
        cmocka_unit_test(test_median_rank),     cmocka_unit_test(test_bandit_update),
        cmocka_unit_test(test_twin_grid),       cmocka_unit_test(test_twin_random_w4),
        cmocka_unit_test(test_twin_dense_w32),  cmocka_unit_test(test_twin_planted),
        cmocka_unit_test(test_twin_energy_portfolio), cmocka_unit_test(test_twin_restarts),
        cmocka_unit_test(test_twin_issue15),    cmocka_unit_test(test_elite_pool),
        cmocka_unit_test(test_twin_restart_pool), cmocka_unit_test(test_twin_groups),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
