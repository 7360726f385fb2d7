/*
 * anneal.h: the move operators one at a time, their counters and the
 * adaptive operator selection.
 *
 * Each operator is forced alone (a fixed mix with only that operator) on
 * several generated families, with each evaluator: after thousands of
 * moves the layout passes the oracle with the state's tuple, a full
 * recount finds no difference, the replica best validates, the counters'
 * identities hold, and the two evaluators followed the same trajectory.
 * The bandit's trajectory (layout and probabilities) is a function of the
 * seed.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testkit.h"

#include "anneal.h"
#include "err.h"
#include "gen.h"
#include "validate.h"

struct inst {
    struct lcn_graph g;
    struct lcn_pt *pts;
};

static void inst_make(struct inst *in, enum gen_family fam, int32_t n, uint64_t seed)
{
    struct gen_params gp = {.family = fam, .n = n, .seed = seed};
    char err[160];
    assert_int_equal(gen_instance(&gp, &in->g, &in->pts, NULL, err, sizeof(err)), 0);
}

static void inst_drop(struct inst *in)
{
    graph_release(&in->g);
    free(in->pts);
}

/* A fixed mix of operator op alone. */
static void only(struct anneal_params *ap, enum engine_op op)
{
    anneal_params_default(ap);
    ap->p_global = ap->p_bary = ap->p_median = ap->p_empty = 0;
    ap->p_pair = ap->p_swap = ap->p_cluster = 0;
    switch (op) {
    case ENGINE_OP_LOCAL:
        break;
    case ENGINE_OP_BARY:
        ap->p_bary = 1;
        break;
    case ENGINE_OP_MEDIAN:
        ap->p_median = 1;
        break;
    case ENGINE_OP_GLOBAL:
        ap->p_global = 1;
        break;
    case ENGINE_OP_EMPTY:
        ap->p_empty = 1;
        break;
    case ENGINE_OP_PAIR:
        ap->p_pair = 1;
        break;
    case ENGINE_OP_SWAP:
        ap->p_swap = 1;
        break;
    case ENGINE_OP_CLUSTER:
        ap->p_cluster = 1;
        break;
    default:
        fail();
    }
}

/* improved <= accepted <= valid <= tried per operator; the sums match the run counters. */
static void check_counters(const struct anneal_counters *c)
{
    assert_int_equal(tk_check_ops(c->ops, c->attempted, c->valid, c->accepted),
                     c->replica_best_updates);
    assert_int_equal(c->accepted + c->rejected, c->selected);
    assert_int_equal(c->committed, c->accepted);
}

/* The layout is valid with the claimed tuple, and the counts are exact. */
static void check_layout(const struct lcn_graph *g, const struct lcn_pt *pts,
                         const struct lcn_obj *claimed)
{
    struct lcn_report rep;
    assert_int_equal(validate_layout(g, pts, 4, &rep), 0);
    assert_true(rep.valid);
    assert_int_equal(obj_cmp(&rep.obj, claimed), 0);
    report_release(&rep);
}

/* Runs `moves` moves of one replica under ap in sweeps of 100 at temperature T. */
static void run_replica(struct anneal_replica *r, const struct inst *in,
                        const struct anneal_params *ap, enum state_eval ev, uint64_t seed, double T,
                        int64_t moves)
{
    struct lcn_state proto;
    assert_int_equal(state_init(&proto, &in->g, in->pts), 0);
    state_set_evaluator(&proto, ev);
    anneal_replica_init(r, 0, &proto, seed, ap->proposal_workers);
    state_release(&proto);
    struct lcn_obj o;
    state_obj(&r->st, &o);
    struct anneal_energy en;
    anneal_energy_init(&en, ap, in->g.m, o.K);
    int32_t maxdim = in->g.width > in->g.height ? in->g.width : in->g.height;
    struct anneal_ctl ctl = {.en = &en, .T = T, .sigma = maxdim / 16.0 + 1};
    for (int64_t done = 0; done < moves; done += 100) {
        assert_int_equal(anneal_sweep(r, ap, &ctl, 100), 100);
        state_obj(&r->st, &o);
        anneal_energy_set_kref(&en, r->best.K);
    }
    anneal_energy_release(&en);
}

static void test_each_operator(void **s)
{
    (void)s;
    const enum gen_family fams[4] = {GEN_RANDOM, GEN_GRID, GEN_DENSE, GEN_PLANTED};
    for (int op = 0; op < ENGINE_OPS; op++) {
        /* summed over the families: a compound move on the nearly complete
         * dense graph may find no valid way in 3000 tries */
        uint64_t valid = 0, accepted = 0;
        for (int fi = 0; fi < 4; fi++) {
            struct inst in;
            inst_make(&in, fams[fi], 40, 100 + (uint64_t)fi);
            struct anneal_params ap;
            only(&ap, (enum engine_op)op);
            struct anneal_replica r[2];
            for (int ev = 0; ev < 2; ev++) {
                run_replica(&r[ev], &in, &ap, (enum state_eval)ev, 7 + (uint64_t)op, 0.5, 3000);
                struct lcn_obj o;
                state_obj(&r[ev].st, &o);
                check_layout(&in.g, r[ev].st.pts, &o);
                assert_int_equal(state_recount(&r[ev].st), 0);
                anneal_replica_flush_best(&r[ev]);
                check_layout(&in.g, r[ev].best_pts, &r[ev].best);
                const struct anneal_counters *c = &r[ev].cnt;
                check_counters(c);
                /* only the forced operator was drawn (BARY and MEDIAN step
                 * locally for a node without neighbours) */
                for (int k = 0; k < ENGINE_OPS; k++)
                    if (k != op &&
                        !(k == ENGINE_OP_LOCAL && (op == ENGINE_OP_BARY || op == ENGINE_OP_MEDIAN)))
                        assert_int_equal(c->ops[k].tried, 0);
                assert_true(c->ops[op].tried > 0);
                valid += c->ops[op].valid;
                accepted += c->ops[op].accepted;
            }
            /* the evaluators are exact twins: the same trajectory */
            assert_memory_equal(r[0].st.pts, r[1].st.pts, sizeof(struct lcn_pt) * (size_t)in.g.n);
            assert_memory_equal(r[0].cnt.ops, r[1].cnt.ops, sizeof(r[0].cnt.ops));
            for (int ev = 0; ev < 2; ev++)
                anneal_replica_release(&r[ev]);
            inst_drop(&in);
        }
        assert_true(valid > 0);
        assert_true(accepted > 0);
    }
}

/* Every operator at once in a fixed mix, hot and cold. */
static void test_all_operators_mixed(void **s)
{
    (void)s;
    struct inst in;
    inst_make(&in, GEN_RANDOM, 60, 5);
    struct anneal_params ap;
    anneal_params_default(&ap);
    ap.p_median = 0.1;
    ap.p_empty = 0.1;
    ap.p_pair = 0.1;
    ap.p_swap = 0.1;
    ap.p_cluster = 0.1;
    const double temps[2] = {0.02, 3};
    for (int i = 0; i < 2; i++) {
        struct anneal_replica r;
        run_replica(&r, &in, &ap, STATE_EVAL_SCAN, 9, temps[i], 5000);
        struct lcn_obj o;
        state_obj(&r.st, &o);
        check_layout(&in.g, r.st.pts, &o);
        assert_int_equal(state_recount(&r.st), 0);
        check_counters(&r.cnt);
        for (int op = 0; op < ENGINE_OPS; op++)
            assert_true(r.cnt.ops[op].tried > 0);
        anneal_replica_release(&r);
    }
    inst_drop(&in);
}

/* The bandit: deterministic for a seed, probabilities above the floor,
 * summing to 1, adapted (they left the start), the layout exact. */
static void test_bandit(void **s)
{
    (void)s;
    const enum gen_family fams[2] = {GEN_RANDOM, GEN_DENSE};
    for (int fi = 0; fi < 2; fi++) {
        struct inst in;
        inst_make(&in, fams[fi], 50, 30 + (uint64_t)fi);
        struct anneal_params ap;
        anneal_params_default(&ap);
        ap.ops_mode = ANNEAL_OPS_BANDIT;
        ap.bandit_every = 200;
        ap.bandit_floor = 0.03;
        struct anneal_replica r[3];
        for (int k = 0; k < 3; k++)
            run_replica(&r[k], &in, &ap, k == 2 ? STATE_EVAL_SCAN : STATE_EVAL_GRID, 11, 0.3, 6000);
        struct anneal_replica start;
        struct lcn_state proto;
        assert_int_equal(state_init(&proto, &in.g, in.pts), 0);
        anneal_replica_init(&start, 0, &proto, 11, 4);
        anneal_replica_set_ops(&start, &ap);
        for (int k = 1; k < 3; k++) {
            assert_memory_equal(r[0].st.pts, r[k].st.pts, sizeof(struct lcn_pt) * (size_t)in.g.n);
            assert_memory_equal(r[0].bandit.prob, r[k].bandit.prob, sizeof(r[0].bandit.prob));
            assert_memory_equal(r[0].cnt.ops, r[k].cnt.ops, sizeof(r[0].cnt.ops));
        }
        const struct anneal_bandit *b = &r[0].bandit;
        assert_int_equal(b->updates, 6000 / 200 - 1);
        double sum = 0;
        int moved = 0;
        for (int op = 0; op < ENGINE_OPS; op++) {
            assert_true(b->prob[op] >= ap.bandit_floor - 1e-12);
            sum += b->prob[op];
            moved |= b->prob[op] != start.bandit.prob[op];
            assert_true(r[0].cnt.ops[op].tried > 0);
        }
        assert_true(sum > 1 - 1e-9 && sum < 1 + 1e-9);
        assert_true(moved);
        struct lcn_obj o;
        state_obj(&r[0].st, &o);
        check_layout(&in.g, r[0].st.pts, &o);
        assert_int_equal(state_recount(&r[0].st), 0);
        check_counters(&r[0].cnt);
        for (int k = 0; k < 3; k++)
            anneal_replica_release(&r[k]);
        anneal_replica_release(&start);
        state_release(&proto);
        inst_drop(&in);
    }
}

/* The fixed mix with the new operators at 0 (the mix before them) draws
 * only local, bary and global; the default mix draws every operator. */
/* beta_k: the exponential term's steepness follows Kref (beta_k / sqrt(K),
 * clamped to [0.05, 2]), the table rebuilt when Kref changes */
static void test_energy_beta_k(void **s)
{
    (void)s;
    struct anneal_params ap;
    anneal_params_default(&ap);
    ap.lin = 0;
    ap.hinge_w = 0;
    ap.exp_w = 1;
    ap.beta_k = 3.5;
    struct anneal_energy en;
    anneal_energy_init(&en, &ap, 400, 196); /* beta 3.5 / 14 = 0.25 */
    for (int c = 190; c < 210; c++)
        assert_true(fabs((double)en.f[c + 1] / (double)en.f[c] - exp(0.25)) < 1e-4);
    anneal_energy_set_kref(&en, 4); /* beta 1.75 */
    for (int c = 4; c < 12; c++) /* below the table's cap */
        assert_true(fabs((double)en.f[c + 1] / (double)en.f[c] - exp(1.75)) < 1e-4);
    anneal_energy_set_kref(&en, 1); /* clamped at 2 */
    assert_true(fabs((double)en.f[3] / (double)en.f[2] - exp(2.0)) < 1e-4);
    anneal_energy_release(&en);
    /* off: the fixed base */
    ap.beta_k = 0;
    anneal_energy_init(&en, &ap, 400, 196);
    assert_true(fabs((double)en.f[201] / (double)en.f[200] - 4.0) < 1e-4);
    anneal_energy_release(&en);
}

static void test_fixed_default(void **s)
{
    (void)s;
    struct inst in;
    inst_make(&in, GEN_GRID, 40, 3);
    struct anneal_params ap;
    anneal_params_default(&ap);
    struct anneal_replica d;
    run_replica(&d, &in, &ap, STATE_EVAL_GRID, 4, 0.5, 2000);
    check_counters(&d.cnt);
    for (int op = 0; op < ENGINE_OPS; op++)
        assert_true(d.cnt.ops[op].tried > 0);
    anneal_replica_release(&d);
    ap.p_median = ap.p_empty = ap.p_pair = ap.p_swap = ap.p_cluster = 0;
    struct anneal_replica r;
    run_replica(&r, &in, &ap, STATE_EVAL_GRID, 4, 0.5, 2000);
    check_counters(&r.cnt);
    for (int op = 0; op < ENGINE_OPS; op++) {
        int used = op == ENGINE_OP_LOCAL || op == ENGINE_OP_BARY || op == ENGINE_OP_GLOBAL;
        assert_int_equal(r.cnt.ops[op].tried > 0, used);
    }
    anneal_replica_release(&r);
    inst_drop(&in);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_operator),
        cmocka_unit_test(test_all_operators_mixed),
        cmocka_unit_test(test_bandit),
        cmocka_unit_test(test_fixed_default),
        cmocka_unit_test(test_energy_beta_k),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
