/* knobs.h: the tuning-string parser shared by the engines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "err.h"
#include "gpu.h"
#include "knobs.h"
#include "util.h"

struct k {
    int32_t n;
    double x;
    int32_t color;
};

static int parse_color(const char *val, void *field, char *err, size_t errlen)
{
    if (strcmp(val, "red") && strcmp(val, "blue")) {
        snprintf(err, errlen, "tuning: color: '%s' is not red or blue", val);
        return LCN_EINVAL;
    }
    *(int32_t *)field = val[0] == 'r' ? 1 : 2;
    return 0;
}

static const struct knob table[] = {
    {"n", KNOB_INT, offsetof(struct k, n), 1, 10, NULL},
    {"x", KNOB_DOUBLE, offsetof(struct k, x), -1, 1, NULL},
    {"color", KNOB_CUSTOM, offsetof(struct k, color), 0, 0, parse_color},
};

static int parse(struct k *v, const char *spec, char *err)
{
    memset(v, 0, sizeof(*v));
    err[0] = 0;
    return knobs_parse(table, LCN_ARRAY_LEN(table), v, spec, err, 160);
}

static void test_values(void **st)
{
    struct k v;
    char err[160];
    assert_int_equal(parse(&v, NULL, err), 0);
    assert_int_equal(parse(&v, "", err), 0);
    assert_int_equal(parse(&v, "n=7,x=-0.25,color=blue", err), 0);
    assert_int_equal(v.n, 7);
    assert_true(v.x == -0.25);
    assert_int_equal(v.color, 2);
    assert_int_equal(parse(&v, "n=1,n=10", err), 0); /* the last one wins */
    assert_int_equal(v.n, 10);
}

static void test_errors(void **st)
{
    struct k v;
    char err[160];
    assert_int_equal(parse(&v, "n=11", err), LCN_EINVAL);
    assert_string_equal(err, "tuning: n: bad value '11' (an integer in [1, 10])");
    assert_int_equal(parse(&v, "n=2.5", err), LCN_EINVAL);
    assert_int_equal(parse(&v, "x=nan", err), LCN_EINVAL);
    assert_int_equal(parse(&v, "x=", err), LCN_EINVAL);
    assert_int_equal(parse(&v, "x=0.5junk", err), LCN_EINVAL);
    assert_int_equal(parse(&v, "y=1", err), LCN_EINVAL);
    assert_string_equal(err, "tuning: unknown key 'y'");
    assert_int_equal(parse(&v, "n", err), LCN_EINVAL);
    assert_string_equal(err, "tuning: 'n' is not key=value");
    assert_int_equal(parse(&v, "n=3,color=green", err), LCN_EINVAL);
    assert_string_equal(err, "tuning: color: 'green' is not red or blue");
    assert_int_equal(v.n, 3); /* entries before the bad one were applied */
}

static void test_gpu_knobs(void **st)
{
    struct gpu_solver_params p;
    char err[200];
    gpu_solver_params_default(&p);
    assert_int_equal(gpu_solver_params_parse(&p, "W=32,ladder=8,t_hi=3.5,beta=0.5", err, sizeof(err)), 0);
    assert_int_equal(p.W, 32);
    assert_int_equal(p.ladder, 8);
    assert_true(p.t_hi == 3.5 && p.beta == 0.5);
    assert_int_equal(gpu_solver_params_parse(&p, "W=257", err, sizeof(err)), LCN_EINVAL);
    assert_int_equal(gpu_solver_params_parse(&p, "hinge_w=1", err, sizeof(err)), LCN_EINVAL);
    assert_int_equal(gpu_solver_params_parse(&p, "p_local=0.9,p_bary=0.2", err, sizeof(err)), LCN_EINVAL);
    /* the search knobs of the restarts and the tournament, and their ranges */
    gpu_solver_params_default(&p);
    assert_int_equal(p.restart_steps, 5000);
    assert_int_equal(p.restart_node, 50);
    assert_int_equal(p.ladder, 2);
    assert_int_equal(p.tournament, 64);
    assert_true(p.lin == 0);
    assert_int_equal(gpu_solver_params_parse(&p, "restart_steps=0,tournament=256,lin=0.25", err, sizeof(err)), 0);
    assert_true(p.restart_steps == 0 && p.tournament == 256 && p.lin == 0.25);
    assert_int_equal(gpu_solver_params_parse(&p, "tournament=257", err, sizeof(err)), LCN_EINVAL);
    assert_int_equal(gpu_solver_params_parse(&p, "tournament=0", err, sizeof(err)), LCN_EINVAL);
    assert_int_equal(gpu_solver_params_parse(&p, "restart_steps=-1", err, sizeof(err)), LCN_EINVAL);
    assert_int_equal(gpu_solver_params_parse(&p, "restart_node=200", err, sizeof(err)), 0);
    assert_int_equal(p.restart_node, 200);
    assert_int_equal(gpu_solver_params_parse(&p, "restart_node=-1", err, sizeof(err)), LCN_EINVAL);
    assert_int_equal(gpu_solver_params_parse(&p, "lin=16.5", err, sizeof(err)), LCN_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_gpu_knobs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
