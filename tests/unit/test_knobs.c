/* The engines' tuning tables (opts.h's key=value front end; test_opts
 * covers the front end itself). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "err.h"
#include "gpu.h"
#include "util.h"

static void test_gpu_knobs(void **st)
{
    struct gpu_solver_params p;
    char err[200];
    gpu_solver_params_default(&p);
    assert_int_equal(
        gpu_solver_params_parse(&p, "W=32,ladder=8,t_hi=3.5,beta=0.5", err, sizeof(err)), 0);
    assert_int_equal(p.W, 32);
    assert_int_equal(p.ladder, 8);
    assert_true(p.t_hi == 3.5 && p.beta == 0.5);
    assert_int_equal(gpu_solver_params_parse(&p, "W=257", err, sizeof(err)), LCN_EINVAL);
    assert_string_equal(err, "tuning: W: expected an integer in [1, 256], got '257'");
    assert_int_equal(gpu_solver_params_parse(&p, "hinge_w=1", err, sizeof(err)), LCN_EINVAL);
    assert_string_equal(err, "tuning: unknown key 'hinge_w'");
    /* ops: one of the names both engines share */
    assert_int_equal(p.ops_bandit, 0);
    assert_int_equal(gpu_solver_params_parse(&p, "ops=bandit", err, sizeof(err)), 0);
    assert_int_equal(p.ops_bandit, 1);
    assert_int_equal(gpu_solver_params_parse(&p, "ops=fixed", err, sizeof(err)), 0);
    assert_int_equal(p.ops_bandit, 0);
    assert_int_equal(gpu_solver_params_parse(&p, "ops=greedy", err, sizeof(err)), LCN_EINVAL);
    assert_string_equal(err, "tuning: ops: expected one of fixed|bandit, got 'greedy'");
    assert_int_equal(gpu_solver_params_parse(&p, "p_local=0.9,p_bary=0.2", err, sizeof(err)),
                     LCN_EINVAL);
    /* the search knobs of the restarts and the tournament, and their ranges */
    gpu_solver_params_default(&p);
    assert_int_equal(p.restart_steps, 5000);
    assert_int_equal(p.restart_node, 50);
    assert_int_equal(p.ladder, 2);
    assert_int_equal(p.tournament, 64);
    assert_true(p.lin == 0);
    assert_int_equal(
        gpu_solver_params_parse(&p, "restart_steps=0,tournament=256,lin=0.25", err, sizeof(err)),
        0);
    assert_true(p.restart_steps == 0 && p.tournament == 256 && p.lin == 0.25);
    assert_int_equal(gpu_solver_params_parse(&p, "tournament=257", err, sizeof(err)), LCN_EINVAL);
    assert_int_equal(gpu_solver_params_parse(&p, "tournament=0", err, sizeof(err)), LCN_EINVAL);
    assert_int_equal(gpu_solver_params_parse(&p, "restart_steps=-1", err, sizeof(err)), LCN_EINVAL);
    assert_int_equal(gpu_solver_params_parse(&p, "restart_node=200", err, sizeof(err)), 0);
    assert_int_equal(p.restart_node, 200);
    assert_int_equal(gpu_solver_params_parse(&p, "restart_node=-1", err, sizeof(err)), LCN_EINVAL);
    assert_int_equal(gpu_solver_params_parse(&p, "lin=16.5", err, sizeof(err)), LCN_EINVAL);
    /* restart_share: the share of each ladder that restarts from the elite */
    gpu_solver_params_default(&p);
    assert_true(p.restart_share == 0.5);
    assert_int_equal(gpu_solver_params_parse(&p, "restart_share=0.25", err, sizeof(err)), 0);
    assert_true(p.restart_share == 0.25);
    assert_int_equal(gpu_solver_params_parse(&p, "restart_share=1.5", err, sizeof(err)),
                     LCN_EINVAL);
    assert_string_equal(err, "tuning: restart_share: expected a number in [0, 1], got '1.5'");
    /* a run across GPUs: how often and how many replicas take the elite */
    gpu_solver_params_default(&p);
    assert_int_equal(p.island_every, 25);
    assert_int_equal(p.island_take, 2);
    assert_int_equal(gpu_solver_params_parse(&p, "island_every=5,island_take=0", err, sizeof(err)),
                     0);
    assert_true(p.island_every == 5 && p.island_take == 0);
    assert_int_equal(gpu_solver_params_parse(&p, "island_every=0", err, sizeof(err)), LCN_EINVAL);
    assert_string_equal(err, "tuning: island_every: expected an integer in [1, 1000000], got '0'");
    assert_int_equal(gpu_solver_params_parse(&p, "island_take=-1", err, sizeof(err)), LCN_EINVAL);
    /* an integer knob takes an integer */
    assert_int_equal(gpu_solver_params_parse(&p, "ladder=2.5", err, sizeof(err)), LCN_EINVAL);
    assert_string_equal(err, "tuning: ladder: expected an integer in [1, 64], got '2.5'");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpu_knobs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
