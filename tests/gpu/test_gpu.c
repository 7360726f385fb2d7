/*
 * GPU tests (CTest label "gpu"). Without a CUDA device every test is
 * skipped with a message and the binary exits 77, which CTest reports as
 * skipped, so CI (no GPU) stays green.
 *
 * What is checked:
 *   - the evaluator kernels (full, grid, delta batch) equal the CPU oracle
 *     per edge, on fixtures and random layouts of every generator family
 *     (invalid layouts included for full/grid), and count their pair tests;
 *   - the device solver equals its CPU twin bit for bit (layouts, counts,
 *     tuples, energies, temperatures, counters) for replica counts 1, 2, 4
 *     and proposal-worker widths 1, 2, 32, 256; best is never worse than
 *     current; the same seed gives the same state hashes;
 *   - the engine publishes only layouts the oracle accepts, honours its
 *     budget within 100 ms, and allocates nothing and copies only the
 *     progress record while it runs;
 *   - the device descent equals the CPU's surrogate (counts exactly, the
 *     gradient to rounding) and is deterministic;
 *   - invalid configurations are refused before any launch.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "crossings.h"
#include "err.h"
#include "gen.h"
#include "gpu.h"
#include "layout.h"
#include "repair.h"
#include "rng.h"
#include "solver_ref.h"
#include "stop.h"
#include "state.h"
#include "util.h"
#include "validate.h"

static struct gpu_ctx *ctx;

static int ctx_open(int32_t slots, int32_t nodes, int32_t edges, int32_t replicas, struct gpu_ctx **out)
{
    struct gpu_config cfg;
    gpu_config_default(&cfg);
    cfg.slots = slots;
    cfg.max_nodes = nodes;
    cfg.max_edges = edges;
    cfg.max_replicas = replicas;
    char err[256];
    int rc = gpu_ctx_new(&cfg, out, err, sizeof(err));
    if (rc)
        fprintf(stderr, "gpu context: %s\n", err);
    return rc;
}

static int setup(void **st)
{
    return ctx_open(1, 12000, 24000, 64, &ctx) ? -1 : 0;
}

static int teardown(void **st)
{
    gpu_ctx_free(ctx);
    return 0;
}

static void make(enum gen_family fam, int32_t n, int32_t m, uint64_t seed, struct lcn_graph *g,
                 struct lcn_pt **pts)
{
    struct gen_params p = {.family = fam, .n = n, .m = m, .seed = seed};
    char err[160];
    assert_int_equal(gen_instance(&p, g, pts, NULL, err, sizeof(err)), 0);
}

static void check_counts(const struct lcn_graph *g, const struct lcn_pt *pts)
{
    int32_t *ref = xmalloc(sizeof(int32_t) * (size_t)(g->m + 1));
    int32_t *out = xmalloc(sizeof(int32_t) * (size_t)(g->m + 1));
    if (g->m <= 6000)
        crossings_full(g, pts, ref);
    else
        crossings_grid(g, pts, ref, 0);
    uint64_t tf = 0, tg = 0;
    assert_int_equal(gpu_eval_counts(ctx, 0, g, pts, "full", out, &tf), 0);
    assert_memory_equal(ref, out, sizeof(int32_t) * (size_t)g->m);
    memset(out, 0xab, sizeof(int32_t) * (size_t)g->m);
    assert_int_equal(gpu_eval_counts(ctx, 0, g, pts, "grid", out, &tg), 0);
    assert_memory_equal(ref, out, sizeof(int32_t) * (size_t)g->m);
    assert_true(tf > 0 || g->m < 2);
    /* the full kernel tests every non-adjacent ordered pair */
    free(ref);
    free(out);
}

static void test_eval_families(void **st)
{
    const enum gen_family fams[] = {GEN_RANDOM, GEN_GRID, GEN_DENSE, GEN_LARGE, GEN_PLANTED};
    for (size_t f = 0; f < LCN_ARRAY_LEN(fams); f++) {
        for (uint64_t seed = 1; seed <= 3; seed++) {
            struct lcn_graph g;
            struct lcn_pt *pts;
            make(fams[f], 60 + 20 * (int32_t)seed, 0, seed, &g, &pts);
            check_counts(&g, pts);
            /* an invalid layout: every node on a 3x3 grid of points */
            for (int32_t v = 0; v < g.n; v++) {
                pts[v].x = (v % 3) * 2;
                pts[v].y = ((v / 3) % 3) * 2;
            }
            check_counts(&g, pts);
            graph_release(&g);
            free(pts);
        }
    }
}

static void test_eval_benchmark_shapes(void **st)
{
    const int32_t shapes[][2] = {{48, 96}, {128, 512}, {2519, 4938}, {10466, 20288}};
    for (size_t i = 0; i < LCN_ARRAY_LEN(shapes); i++) {
        struct lcn_graph g;
        struct lcn_pt *pts;
        make(shapes[i][0] > 1000 ? GEN_GRID : GEN_RANDOM, shapes[i][0], shapes[i][1], 7, &g, &pts);
        check_counts(&g, pts);
        graph_release(&g);
        free(pts);
    }
}

static void test_eval_delta(void **st)
{
    struct lcn_graph g;
    struct lcn_pt *pts;
    make(GEN_GRID, 150, 0, 3, &g, &pts);
    struct lcn_state s;
    assert_int_equal(state_init(&s, &g, pts), 0);
    const int32_t W = 64;
    int32_t v[64];
    struct lcn_pt q[64];
    struct lcn_rng r;
    rng_init(&r, 3, 0, RNG_PURPOSE_MOVE);
    for (int32_t i = 0; i < W; i++) {
        v[i] = (int32_t)rng_below(&r, (uint32_t)g.n);
        if (i % 8 == 7) { /* onto another node: invalid */
            q[i] = pts[(v[i] + 1) % g.n];
        } else {
            q[i].x = (int32_t)rng_below(&r, (uint32_t)g.width + 1);
            q[i].y = (int32_t)rng_below(&r, (uint32_t)g.height + 1);
        }
    }
    int32_t *out = xmalloc(sizeof(int32_t) * (size_t)W * (size_t)g.m);
    uint8_t valid[64];
    uint64_t tests = 0;
    assert_int_equal(gpu_eval_delta(ctx, 0, &g, pts, W, v, q, out, valid, &tests), 0);
    assert_true(tests > 0);
    struct lcn_pt *moved = xmalloc(sizeof(*moved) * (size_t)g.n);
    int32_t *ref = xmalloc(sizeof(int32_t) * (size_t)g.m);
    int nvalid = 0;
    for (int32_t i = 0; i < W; i++) {
        memcpy(moved, pts, sizeof(*moved) * (size_t)g.n);
        moved[v[i]] = q[i];
        crossings_full(&g, moved, ref);
        assert_memory_equal(ref, out + (size_t)i * g.m, sizeof(int32_t) * (size_t)g.m);
        int cpu_ok = state_check_move(&s, v[i], q[i]) == STATE_OK;
        assert_int_equal(cpu_ok, valid[i]);
        nvalid += cpu_ok;
    }
    assert_true(nvalid > 0 && nvalid < W);
    free(out);
    free(moved);
    free(ref);
    state_release(&s);
    graph_release(&g);
    free(pts);
}

/* Device solver vs its CPU twin, bit for bit, under extra knobs `tuning`
 * (restart_steps > 0: the twin must have restarted at least twice). */
/* What the generator gives for p: 0 its width, 1 its largest degree. */
static int32_t graph_property(const struct gen_params *p, int which)
{
    struct lcn_graph g;
    struct lcn_pt *pts;
    char err[160];
    assert_int_equal(gen_instance(p, &g, &pts, NULL, err, sizeof(err)), 0);
    int32_t v = which == 0 ? g.width : g.max_degree;
    graph_release(&g);
    free(pts);
    return v;
}

/* the last solver_vs_twin_graph's pair tests ([0] its tuning, [1] the
 * scan) and candidate groups served by the edge grid */
static uint64_t twin_tests[2], twin_grid;
/* 1: the twins start from a stress layout of the generated graph instead of
 * the generator's drawing (whose long edges overflow the grids' entries on
 * large graphs, so the device scans) */
static int twin_stress_start;

static void solver_vs_twin_graph(const struct gen_params *gen, int32_t R, int32_t L, int32_t W,
                                 int32_t batches, int32_t steps, const char *tuning)
{
    struct lcn_graph g;
    struct lcn_pt *pts;
    char gerr[160];
    assert_int_equal(gen_instance(gen, &g, &pts, NULL, gerr, sizeof(gerr)), 0);
    if (twin_stress_start)
        assert_int_equal(layout_make(&g, LAYOUT_STRESS, 7, NULL, NULL, lcn_now_ns() + 60000000000ll,
                                     NULL, pts), 0);
    struct gpu_solver_params gp;
    gpu_solver_params_default(&gp);
    gp.replicas = R;
    gp.ladder = L;
    gp.W = W;
    gp.block = 128;
    char err[160];
    /* the device queries its edge grids unless the tuning says otherwise
     * (the scan's run below must reach the same states); the generators'
     * drawings have long edges (about 12 cells each on the 400-node grid),
     * so the grids get room for 64 entries an edge */
    assert_int_equal(gpu_solver_params_parse(&gp, "evaluator=index,index_items=64", err, sizeof(err)), 0);
    assert_int_equal(gpu_solver_params_parse(&gp, tuning, err, sizeof(err)), 0);
    const int32_t restart_steps = gp.restart_steps;
    size_t nn = (size_t)g.n, mm = (size_t)g.m;
    struct lcn_pt *cur = xmalloc(sizeof(*cur) * R * nn), *best = xmalloc(sizeof(*best) * R * nn);
    int32_t *cnt = xmalloc(sizeof(int32_t) * R * mm);
    struct sol_replica *rep = xmalloc(sizeof(*rep) * (size_t)R);
    assert_int_equal(gpu_solver_debug_run(ctx, 0, &g, pts, &gp, 99, batches, steps, cur, best, cnt, rep), 0);

    struct sol_params sp;
    double temps[64];
    uint32_t r16;
    int64_t lin;
    int32_t sigma0;
    solref_derive(&gp, &g, 99, &sp, temps, &r16, &lin, &sigma0);
    struct solref tw;
    assert_int_equal(solref_init(&tw, &g, &sp, R, L, pts, temps, r16, lin, sigma0), 0);
    for (int32_t b = 0; b < batches; b++)
        solref_batch(&tw, steps, pow(gp.cool, (double)b / batches));
    uint64_t restarts = 0;
    for (int32_t r = 0; r < R; r++)
        restarts += tw.rep[r].restarts;
    if (restart_steps > 0) /* two waves' worth (with groups, of restarts in group waves) */
        assert_true(restarts >= 2 * (uint64_t)(R / L) * (uint64_t)((L + 1) / 2));
    else
        assert_true(restarts == 0);
    uint64_t imports = 0;
    for (int32_t r = 0; r < R; r++)
        imports += tw.rep[r].imports;
    assert_true(gp.groups > 1 && gp.island_take > 0 ? imports > 0 : imports == 0);
    for (int32_t r = 0; r < R; r++) {
        struct sol_replica a = rep[r], t = tw.rep[r];
        a.pair_tests = t.pair_tests = 0; /* the kernel skips boxed-out pairs */
        a.grid_groups = 0;                /* and the twin has no edge grid */
        if (memcmp(&a, &t, sizeof(a)) != 0) {
            fprintf(stderr, "replica %d: step %llu/%llu E %lld/%lld K %d/%d sigma %d/%d slot %d/%d valid %llu/%llu committed %llu/%llu\n",
                    r, (unsigned long long)a.step, (unsigned long long)t.step, (long long)a.E,
                    (long long)t.E, a.cur.K, t.cur.K, a.sigma, t.sigma, a.slot, t.slot,
                    (unsigned long long)a.valid, (unsigned long long)t.valid,
                    (unsigned long long)a.committed, (unsigned long long)t.committed);
        }
        assert_memory_equal(&a, &t, sizeof(a));
        assert_true(obj_cmp(&rep[r].best, &rep[r].cur) <= 0);
        if (t.committed == 0)
            fprintf(stderr, "replica %d (n %d, m %d, %s): no move committed\n", r, g.n, g.m, tuning);
        assert_true(t.committed > 0);
        /* per-operator counters: nested, and summing to the replica's */
        uint64_t st[4] = {0};
        for (int k = 0; k < SOL_OPS; k++) {
            assert_true(t.op_imp[k] <= t.op_acc[k] && t.op_acc[k] <= t.op_valid[k] &&
                        t.op_valid[k] <= t.op_tried[k]);
            st[0] += t.op_tried[k];
            st[1] += t.op_valid[k];
            st[2] += t.op_acc[k];
            st[3] += t.op_imp[k];
        }
        assert_true(st[0] == t.attempted && st[1] == t.valid && st[2] == t.accepted &&
                    st[3] == t.best_updates);
        if (gp.p_median > 0 || gp.ops_bandit)
            assert_true(t.op_tried[SOL_OP_MEDIAN] > 0);
        if (gp.ops_bandit) {
            uint32_t fixed[SOL_OPS];
            sol_fixed_cuts(&sp, fixed);
            assert_true(memcmp(fixed, t.op_cut, sizeof(fixed)) != 0); /* the bandit moved the mix */
        }
    }
    assert_memory_equal(cur, tw.cur, sizeof(*cur) * R * nn);
    assert_memory_equal(best, tw.best, sizeof(*best) * R * nn);
    assert_memory_equal(cnt, tw.cnt, sizeof(int32_t) * R * mm);
    for (int32_t r = 0; r < R; r++) {
        struct lcn_report vr;
        validate_layout(&g, best + (size_t)r * nn, 4, &vr);
        assert_true(vr.valid);
        assert_int_equal(obj_cmp(&vr.obj, &rep[r].best), 0);
        report_release(&vr);
    }
    /* same seed on the scan with the layout in global memory (issue 17: the
     * first run queried the replicas' edge grids unless the tuning said scan,
     * and kept the layout in shared memory unless it said global): the same
     * states, and never more pair tests with the grid than without */
    struct lcn_pt *cur2 = xmalloc(sizeof(*cur2) * R * nn);
    struct sol_replica *rep2 = xmalloc(sizeof(*rep2) * (size_t)R);
    int32_t *cnt2 = xmalloc(sizeof(int32_t) * R * mm);
    struct gpu_solver_params gs = gp;
    assert_int_equal(gpu_solver_params_parse(&gs, "evaluator=scan,layout_mem=global", err, sizeof(err)), 0);
    assert_int_equal(gpu_solver_debug_run(ctx, 0, &g, pts, &gs, 99, batches, steps, cur2, best, cnt2, rep2), 0);
    assert_true(layout_hash(cur, (int32_t)(R * nn)) == layout_hash(cur2, (int32_t)(R * nn)));
    assert_memory_equal(cnt, cnt2, sizeof(int32_t) * R * mm);
    uint64_t t_ix = 0, t_scan = 0, grid = 0;
    for (int32_t r = 0; r < R; r++) {
        assert_true(rep[r].pair_tests <= rep2[r].pair_tests);
        assert_true(rep2[r].grid_groups == 0);
        t_ix += rep[r].pair_tests;
        t_scan += rep2[r].pair_tests;
        grid += rep[r].grid_groups;
        rep2[r].pair_tests = rep[r].pair_tests;
        rep2[r].grid_groups = rep[r].grid_groups;
    }
    assert_memory_equal(rep, rep2, sizeof(*rep) * (size_t)R);
    twin_tests[0] = t_ix;
    twin_tests[1] = t_scan;
    twin_grid = grid;
    if (strstr(tuning, "evaluator=index"))
        fprintf(stderr, "  %s: pair tests %llu with the edge grid (%llu groups from it), %llu with the scan\n",
                tuning, (unsigned long long)t_ix, (unsigned long long)grid, (unsigned long long)t_scan);
    free(cur2);
    free(rep2);
    free(cnt2);
    solref_release(&tw);
    free(cur);
    free(best);
    free(cnt);
    free(rep);
    graph_release(&g);
    free(pts);
}

static void solver_vs_twin_tuned(enum gen_family fam, int32_t n, int32_t R, int32_t L, int32_t W,
                                 int32_t batches, int32_t steps, const char *tuning)
{
    struct gen_params p = {.family = fam, .n = n, .seed = 21};
    solver_vs_twin_graph(&p, R, L, W, batches, steps, tuning);
}

static void solver_vs_twin(enum gen_family fam, int32_t n, int32_t R, int32_t L, int32_t W,
                           int32_t batches, int32_t steps)
{
    solver_vs_twin_tuned(fam, n, R, L, W, batches, steps, "restart_steps=0");
}

static void test_solver_r1_w1(void **st) { solver_vs_twin(GEN_GRID, 80, 1, 1, 1, 3, 50); }
/* one-warp blocks (the default is 1024 threads; the others run 128) */
static void test_solver_r2_w2(void **st) { solver_vs_twin_tuned(GEN_RANDOM, 50, 2, 2, 2, 3, 40, "restart_steps=0,block=32"); }
static void test_solver_r4_w32(void **st) { solver_vs_twin(GEN_PLANTED, 60, 4, 4, 32, 3, 20); }
static void test_solver_r4_w256(void **st) { solver_vs_twin(GEN_DENSE, 40, 4, 2, 256, 2, 5); }
static void test_solver_big_chunks(void **st) { solver_vs_twin(GEN_GRID, 1200, 2, 2, 4, 2, 20); }
/* coordinates past GEOM_SMALL: the 64-bit orientation path (k_steps<0>) */
static void test_solver_wide(void **st)
{
    struct gen_params p = {.family = GEN_RANDOM, .n = 60, .width = 200000, .height = 150000, .seed = 21};
    assert_true(graph_property(&p, 0) > GEOM_SMALL);
    solver_vs_twin_graph(&p, 4, 2, 4, 3, 30, "restart_steps=0");
}
/* degrees past one 64-segment star mask (two chunks per kept edge) */
static void test_solver_high_degree(void **st)
{
    struct gen_params p = {.family = GEN_RANDOM, .n = 90, .m = 2600, .width = 3000, .height = 3000, .seed = 21};
    assert_true(graph_property(&p, 1) > 64);
    solver_vs_twin_graph(&p, 2, 2, 4, 2, 20, "restart_steps=0");
}
/* groups of at most 32 candidates, more than one (W 32, degree past 128:
 * 4096 / degree candidates per group): warp 0's pick across groups */
static void test_solver_small_groups(void **st)
{
    struct gen_params p = {.family = GEN_RANDOM, .n = 140, .m = 8500, .width = 2000, .height = 2000, .seed = 21};
    int32_t d = graph_property(&p, 1);
    assert_true(d > 128 && 4096 / d < 32);
    solver_vs_twin_graph(&p, 2, 2, 32, 2, 5, "restart_steps=0");
}
/* the commit scanning the edges again (reuse=0) on graphs where it would
 * otherwise reuse the scan's kept edges: both paths against the same twin */
static void test_solver_no_reuse(void **st)
{
    solver_vs_twin_tuned(GEN_RANDOM, 50, 2, 2, 2, 3, 40, "restart_steps=0,reuse=0");
    solver_vs_twin_tuned(GEN_PLANTED, 60, 4, 4, 32, 3, 20, "restart_steps=0,reuse=0");
}
/* three ladders: the third runs on the second energy table (alt_every 3) */
static void test_solver_portfolio(void **st)
{
    solver_vs_twin_tuned(GEN_RANDOM, 60, 6, 2, 4, 3, 30, "restart_steps=0,block=1024");
}
/* the same with the second table's p-norm lower branch (pnorm_rho, issue 15),
 * rebuilt on the device whenever the best K improves */
static void test_solver_pnorm(void **st)
{
    solver_vs_twin_tuned(GEN_RANDOM, 60, 6, 2, 4, 3, 30, "restart_steps=0,block=1024,pnorm_rho=0.5");
    solver_vs_twin_tuned(GEN_DENSE, 40, 6, 2, 4, 3, 30, "restart_steps=0,alt_every=1,pnorm_rho=1");
    solver_vs_twin_tuned(GEN_DENSE, 40, 6, 2, 4, 3, 30, "restart_steps=0,alt_every=1,pnorm_rho=0.5,pnorm_up=1");
}
/* the steepness following K (beta_k, issue 15): the tables are rebuilt on
 * the device from the host's ratios per K whenever the best K improves */
static void test_solver_beta_k(void **st)
{
    solver_vs_twin_tuned(GEN_DENSE, 40, 6, 2, 4, 3, 40, "restart_steps=0,beta_k=3.5");
    solver_vs_twin_tuned(GEN_RANDOM, 60, 6, 2, 4, 3, 30, "restart_steps=0,beta_k=1,alt_every=1,pnorm_rho=0.5");
}
/* the median operator and the bandit (issue 15): candidate kinds by the
 * replica's cuts, the median by ranks (one thread per neighbour on the
 * device), the cuts adapted at batch boundaries from the window counters;
 * W 256 takes thread 0's pick over groups wider than a warp */
static void test_solver_ops(void **st)
{
    solver_vs_twin_tuned(GEN_RANDOM, 60, 4, 2, 4, 4, 160, "restart_steps=0,p_local=0.6,p_median=0.2");
    solver_vs_twin_tuned(GEN_DENSE, 40, 6, 2, 4, 4, 160, "restart_steps=0,ops=bandit,block=1024");
    solver_vs_twin_tuned(GEN_PLANTED, 60, 4, 4, 32, 3, 20, "restart_steps=0,ops=bandit,p_median=0.1,bandit_floor=0.1");
    solver_vs_twin_tuned(GEN_DENSE, 40, 4, 2, 256, 2, 5, "restart_steps=0,ops=bandit,p_local=0.5,p_median=0.3");
}
/* elite restarts: the cold halves take the best replica's best layout and
 * counts (or one of the pool's); a tournament of 200 edges (more than the block's 128 threads) and
 * a crossing weight lin in the energy table */
static void test_solver_restarts(void **st)
{
    solver_vs_twin_tuned(GEN_PLANTED, 30, 8, 4, 4, 24, 20, "restart_steps=20,restart_node=0,tournament=200,lin=0.3");
    /* restart_share: the coldest slot of each ladder of 4, then all four */
    solver_vs_twin_tuned(GEN_PLANTED, 30, 8, 4, 4, 24, 20, "restart_steps=20,restart_node=0,restart_share=0.25");
    solver_vs_twin_tuned(GEN_PLANTED, 30, 8, 4, 4, 24, 20, "restart_steps=20,restart_node=0,restart_share=1");
    /* restart_pool: six ladders of 2 spread over up to three elites */
    solver_vs_twin_tuned(GEN_PLANTED, 30, 12, 2, 4, 24, 20, "restart_steps=20,restart_node=0,restart_pool=3");
    /* replica groups: three groups' own tables, waves and imports of the run's elite */
    solver_vs_twin_tuned(GEN_PLANTED, 30, 12, 2, 4, 24, 20,
                         "restart_steps=20,restart_node=0,groups=3,island_every=2,island_take=2");
    solver_vs_twin_tuned(GEN_PLANTED, 30, 16, 2, 4, 24, 20,
                         "restart_steps=20,restart_node=0,groups=4,island_every=3,island_take=3,restart_pool=2");
    /* uneven groups: five ladders of 4 in groups of 2, 2 and 1 ladders */
    solver_vs_twin_tuned(GEN_PLANTED, 30, 20, 4, 4, 24, 20,
                         "restart_steps=20,restart_node=0,groups=3,island_every=2,island_take=2");
}

/* the replicas' edge grids (issue 17) where they are forced: rebuilt after
 * every move (index_rebuild 1), a build that does not fit (index_items 1:
 * those replicas scan), queries whose kept edges span many small chunks
 * (chunk 64, 32), the commit from the grid (reuse 0: no reusing commit),
 * nodes without edges (V2/V3 then scan the nodes), wide coordinates, high
 * degrees */
static void test_solver_index(void **st)
{
    solver_vs_twin_tuned(GEN_GRID, 400, 4, 2, 4, 3, 40, "restart_steps=0,evaluator=index");
    assert_true(twin_grid == 4 * 3 * 40); /* every group of every step */
    solver_vs_twin_tuned(GEN_GRID, 400, 4, 2, 4, 3, 40, "restart_steps=0,evaluator=index,reuse=0");
    assert_true(twin_grid == 4 * 3 * 40);
    solver_vs_twin_tuned(GEN_RANDOM, 60, 4, 2, 4, 3, 40, "restart_steps=0,evaluator=index,index_rebuild=1");
    assert_true(twin_grid > 0);
    /* builds that may not fit: those replicas scan until the next one */
    solver_vs_twin_tuned(GEN_GRID, 400, 4, 2, 4, 3, 40, "restart_steps=0,evaluator=index,index_items=1");
    solver_vs_twin_tuned(GEN_GRID, 1200, 2, 2, 4, 2, 30, "restart_steps=0,evaluator=index,chunk=64");
    assert_true(twin_grid == 2 * 2 * 30); /* a query's kept edges 64 at a time: never the scan */
    solver_vs_twin_tuned(GEN_PLANTED, 60, 4, 4, 32, 3, 20, "restart_steps=0,evaluator=index,chunk=32");
    struct gen_params iso = {.family = GEN_RANDOM, .n = 80, .m = 40, .seed = 21}; /* 27 without edges */
    solver_vs_twin_graph(&iso, 4, 2, 4, 3, 40, "restart_steps=0,evaluator=index,reuse=0");
    assert_true(twin_grid == 4 * 3 * 40);
    struct gen_params w = {.family = GEN_RANDOM, .n = 60, .width = 200000, .height = 150000, .seed = 21};
    solver_vs_twin_graph(&w, 4, 2, 4, 3, 30, "restart_steps=0,evaluator=index,index_rebuild=8");
    struct gen_params h = {.family = GEN_RANDOM, .n = 90, .m = 2600, .width = 3000, .height = 3000, .seed = 21};
    solver_vs_twin_graph(&h, 2, 2, 4, 2, 20, "restart_steps=0,evaluator=index");
}

/* the layout in global memory (issue 17's large graphs) with the edge grid
 * and the reusing commit; a graph past SOL_EXACT_EDGES (the energy table
 * saturates) on a workspace sized for it, with the layout in shared memory
 * (auto) and in global memory */
static void test_solver_global(void **st)
{
    solver_vs_twin_tuned(GEN_GRID, 400, 4, 2, 4, 3, 40, "restart_steps=0,evaluator=index,layout_mem=global");
    assert_true(twin_grid == 4 * 3 * 40);
    solver_vs_twin_tuned(GEN_PLANTED, 60, 4, 4, 32, 3, 20, "restart_steps=0,layout_mem=global");
    struct gen_params w = {.family = GEN_RANDOM, .n = 60, .width = 200000, .height = 150000, .seed = 21};
    solver_vs_twin_graph(&w, 4, 2, 4, 3, 30, "restart_steps=0,layout_mem=global");
    struct gpu_ctx *small = ctx, *big = NULL;
    assert_int_equal(ctx_open(1, 30000, 64000, 8, &big), 0);
    ctx = big;
    struct gen_params d = {.family = GEN_RANDOM, .n = 2000, .m = SOL_EXACT_EDGES + 5000, .seed = 21};
    solver_vs_twin_graph(&d, 2, 2, 2, 2, 30, "restart_steps=0");
    solver_vs_twin_graph(&d, 2, 2, 2, 2, 30, "restart_steps=0,evaluator=index,layout_mem=global");
    /* 30,000 nodes: the layout (240 KB) cannot be in shared memory; auto
     * keeps it in global memory, shared is refused */
    struct gen_params l = {.family = GEN_GRID, .n = 30000, .seed = 21};
    solver_vs_twin_graph(&l, 2, 2, 4, 2, 30, "restart_steps=0");
    struct lcn_graph lg;
    struct lcn_pt *lp;
    char err[200];
    assert_int_equal(gen_instance(&l, &lg, &lp, NULL, err, sizeof(err)), 0);
    struct gpu_solver_params gp;
    gpu_solver_params_default(&gp);
    assert_int_equal(gpu_solver_params_parse(&gp, "replicas=2,ladder=2,layout_mem=shared", err, sizeof(err)), 0);
    struct lcn_pt *cur = xmalloc(sizeof(*cur) * 2 * (size_t)lg.n);
    int32_t *cnt = xmalloc(sizeof(int32_t) * 2 * (size_t)lg.m);
    struct sol_replica rep[2];
    assert_int_equal(gpu_solver_debug_run(ctx, 0, &lg, lp, &gp, 1, 1, 1, cur, cur, cnt, rep), LCN_ETOOBIG);
    free(cur);
    free(cnt);
    free(lp);
    graph_release(&lg);
    /* from a stress layout (short edges: the grids' builds fit): 30,000
     * nodes in global memory with the grid, several launches carrying it
     * (ix_resume); 60,000 / 120,000, where the query's bits (30 KB) and
     * 8,192-edge chunks do not fit one block's shared memory together, so
     * the grid is off and the scan runs (sjob_ix_smem: halving the chunk
     * for it failed this twin on the H200 at d96d0d8); the same states as
     * the scan's */
    twin_stress_start = 1;
    solver_vs_twin_graph(&l, 2, 2, 4, 3, 30, "restart_steps=0,evaluator=index,reuse=0");
    assert_true(twin_grid == 2 * 3 * 30);
    ctx = small;
    gpu_ctx_free(big);
    assert_int_equal(ctx_open(1, 60000, 120000, 4, &big), 0);
    ctx = big;
    struct gen_params x = {.family = GEN_GRID, .n = 60000, .m = 120000, .seed = 21};
    solver_vs_twin_graph(&x, 2, 2, 4, 3, 20, "restart_steps=0,evaluator=index");
    assert_true(twin_grid == 0);
    twin_stress_start = 0;
    ctx = small;
    gpu_ctx_free(big);
}

struct runlog {
    const struct lcn_graph *g;
    int layouts, bad;
    struct lcn_obj last;
};

static void on_layout(void *c, const struct lcn_pt *layout, const struct lcn_obj *obj, double el)
{
    struct runlog *rl = c;
    struct lcn_report r;
    validate_layout(rl->g, layout, 4, &r);
    if (!r.valid || obj_cmp(&r.obj, obj) != 0)
        rl->bad++;
    if (rl->layouts && obj_cmp(obj, &rl->last) > 0)
        rl->bad++; /* published layouts only improve */
    rl->last = *obj;
    rl->layouts++;
    report_release(&r);
}

/*
 * Two jobs of one process with different shared-memory plans at once: the
 * kernel's dynamic shared-memory limit is per function, so a job that set it
 * to its own (smaller) need refused the other job's next launch (seen in a
 * round as "invalid argument" on Automatic-6 beside Automatic-7).
 */
struct cojob {
    struct gpu_ctx *ctx;
    struct lcn_graph g;
    struct lcn_pt *pts;
    int64_t budget_ns;
    int rc;
    struct engine_result res;
};

static void *cojob_run(void *arg)
{
    struct cojob *cj = arg;
    struct engine_params p;
    engine_params_default(&p);
    p.seed = 5;
    p.init = cj->pts;
    p.replicas = 8;
    p.start_ns = lcn_now_ns();
    p.deadline_ns = p.start_ns + cj->budget_ns;
    cj->rc = gpu_engine_run(cj->ctx, &cj->g, &p, NULL, &cj->res);
    return NULL;
}

static void test_engine_concurrent_plans(void **st)
{
    struct gpu_ctx *c2;
    assert_int_equal(ctx_open(2, 4000, 8000, 16, &c2), 0);
    struct cojob big = {.ctx = c2, .budget_ns = 1500000000ll}, small = {.ctx = c2, .budget_ns = 300000000ll};
    make(GEN_RANDOM, 600, 3000, 9, &big.g, &big.pts);
    make(GEN_GRID, 40, 0, 9, &small.g, &small.pts);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, cojob_run, &big), 0);
    struct timespec ts = {0, 400000000};
    nanosleep(&ts, NULL);
    cojob_run(&small); /* its set-up comes while the big job launches */
    pthread_join(th, NULL);
    assert_int_equal(small.rc, 0);
    assert_int_equal(big.rc, 0);
    struct cojob *jobs[2] = {&big, &small};
    for (int i = 0; i < 2; i++) {
        struct lcn_report r;
        validate_layout(&jobs[i]->g, jobs[i]->res.layout, 4, &r);
        assert_true(r.valid);
        assert_int_equal(obj_cmp(&r.obj, &jobs[i]->res.best), 0);
        report_release(&r);
        engine_result_release(&jobs[i]->res);
        graph_release(&jobs[i]->g);
        free(jobs[i]->pts);
    }
    gpu_ctx_free(c2);
}

static void test_engine_budget_residency(void **st)
{
    struct lcn_graph g;
    struct lcn_pt *pts;
    make(GEN_GRID, 400, 0, 5, &g, &pts);
    struct engine_params p;
    engine_params_default(&p);
    p.seed = 3;
    p.init = pts;
    p.start_ns = lcn_now_ns();
    p.deadline_ns = p.start_ns + 1500000000ll;
    p.checkpoint_interval_ns = 200000000;
    struct runlog rl = {&g, 0, 0, {0, 0, 0, 0}};
    p.on_layout = on_layout;
    p.ctx = &rl;
    struct gpu_counters c0, c1;
    gpu_ctx_counters(ctx, &c0);
    struct engine_result res;
    assert_int_equal(gpu_engine_run(ctx, &g, &p, NULL, &res), 0);
    gpu_ctx_counters(ctx, &c1);
    int64_t over = lcn_now_ns() - p.deadline_ns;
    fprintf(stderr, "engine: best K %d, overshoot %.1f ms, %llu launches, evaluated %llu\n",
            res.best.K, over / 1e6, (unsigned long long)(c1.launches - c0.launches),
            (unsigned long long)res.tel.evaluated);
    assert_true(over < 100000000); /* under 100 ms */
    assert_true(c1.mallocs == c0.mallocs && c1.frees == c0.frees);
    struct gpu_run_stats rs;
    gpu_ctx_last_run(ctx, &rs);
    fprintf(stderr, "residency: %llu batches, h2d %llu B, d2h %llu B = %llu records x %llu B + %llu layouts x %llu B\n",
            (unsigned long long)rs.batches, (unsigned long long)rs.h2d_bytes,
            (unsigned long long)rs.d2h_bytes, (unsigned long long)rs.batches,
            (unsigned long long)rs.record_bytes, (unsigned long long)rs.layout_fetches,
            (unsigned long long)rs.layout_bytes);
    assert_true(rs.batches > 0);
    assert_true(rs.mallocs == 0 && rs.frees == 0 && rs.h2d_bytes == 0);
    assert_true(rs.d2h_bytes == rs.batches * rs.record_bytes + rs.layout_fetches * rs.layout_bytes);
    assert_int_equal(rl.bad, 0);
    assert_true(rl.layouts >= 2);
    struct lcn_report r;
    validate_layout(&g, res.layout, 4, &r);
    assert_true(r.valid);
    assert_int_equal(obj_cmp(&r.obj, &res.best), 0);
    report_release(&r);
    assert_string_equal(res.backend, "gpu");
    assert_true(res.tel.evaluated > 0 && res.tel.accepted + res.tel.rejected == res.tel.selected);
    engine_result_release(&res);
    graph_release(&g);
    free(pts);
}

/*
 * A run across two contexts on one device (the stand-in for two GPUs of
 * issue 18): a valid layout, the oracle's tuple, the telemetry of each
 * island in tel.devices summing to the run's, and the elite exchanged
 * (replicas of one island took the other's best at least once).
 */
static void test_engine_islands(void **st)
{
    struct gpu_ctx *two[2] = {NULL, NULL};
    assert_int_equal(ctx_open(1, 2000, 4000, 64, &two[0]), 0);
    assert_int_equal(ctx_open(1, 2000, 4000, 64, &two[1]), 0);
    struct lcn_graph g;
    struct lcn_pt *pts;
    make(GEN_RANDOM, 150, 500, 21, &g, &pts);
    struct engine_params p;
    engine_params_default(&p);
    p.seed = 5;
    p.init = pts;
    p.replicas = 16;
    p.gpus = 2;
    p.tuning = "island_every=2,island_take=2";
    p.start_ns = lcn_now_ns();
    p.deadline_ns = p.start_ns + 2000000000ll;
    p.checkpoint_interval_ns = 200000000;
    struct runlog rl = {&g, 0, 0, {0, 0, 0, 0}};
    p.on_layout = on_layout;
    p.ctx = &rl;
    struct engine_result res;
    assert_int_equal(gpu_engine_run_islands(two, 2, &g, &p, NULL, &res), 0);
    uint64_t sum = 0, imports = 0;
    for (int i = 0; i < res.tel.n_devices; i++) {
        fprintf(stderr, "island %d: device %d, evaluated %llu, accepted %llu, imports %llu\n", i,
                res.tel.devices[i].device, (unsigned long long)res.tel.devices[i].evaluated,
                (unsigned long long)res.tel.devices[i].accepted,
                (unsigned long long)res.tel.devices[i].imports);
        assert_int_equal(res.tel.devices[i].device, i);
        assert_true(res.tel.devices[i].evaluated > 0);
        sum += res.tel.devices[i].evaluated;
        imports += res.tel.devices[i].imports;
    }
    fprintf(stderr, "islands: best K %d nK %d, replicas %d, evaluated %llu\n", res.best.K,
            res.best.nK, res.replicas, (unsigned long long)res.tel.evaluated);
    assert_int_equal(res.tel.n_devices, 2);
    assert_true(sum == res.tel.evaluated);
    assert_int_equal(res.replicas, 16);
    assert_true(imports > 0);
    assert_int_equal(rl.bad, 0);
    struct lcn_report r;
    validate_layout(&g, res.layout, 4, &r);
    assert_true(r.valid);
    assert_int_equal(obj_cmp(&r.obj, &res.best), 0);
    report_release(&r);
    assert_true(gpu_ctx_healthy(two[0]) && gpu_ctx_healthy(two[1]));
    engine_result_release(&res);
    graph_release(&g);
    free(pts);
    gpu_ctx_free(two[0]);
    gpu_ctx_free(two[1]);
}

/*
 * The fault-injection hook (the daemon's test_gpu_fault) on one of two
 * contexts of one device: that context's run fails as a sticky error and
 * the context stays unhealthy; the other context runs on unharmed.
 */
static void test_fault_one_context(void **st)
{
    struct gpu_ctx *a = NULL, *b = NULL;
    assert_int_equal(ctx_open(1, 2000, 4000, 64, &a), 0);
    assert_int_equal(ctx_open(1, 2000, 4000, 64, &b), 0);
    struct lcn_graph g;
    struct lcn_pt *pts;
    make(GEN_RANDOM, 80, 200, 3, &g, &pts);
    struct engine_params p;
    engine_params_default(&p);
    p.init = pts;
    p.replicas = 4;
    p.start_ns = lcn_now_ns();
    p.deadline_ns = p.start_ns + 800000000ll;
    struct engine_result res;
    gpu_ctx_inject_fault(b, lcn_now_ns());
    assert_int_equal(gpu_engine_run(b, &g, &p, NULL, &res), LCN_EGPU_STICKY);
    assert_false(gpu_ctx_healthy(b));
    assert_true(gpu_ctx_healthy(a));
    p.start_ns = lcn_now_ns();
    p.deadline_ns = p.start_ns + 800000000ll;
    assert_int_equal(gpu_engine_run(a, &g, &p, NULL, &res), 0);
    assert_true(res.tel.evaluated > 0);
    engine_result_release(&res);
    assert_int_equal(gpu_engine_run(b, &g, &p, NULL, &res), LCN_EGPU_STICKY); /* stays lost */
    graph_release(&g);
    free(pts);
    gpu_ctx_free(a);
    gpu_ctx_free(b);
}

static void test_force_layout(void **st)
{
    struct lcn_graph g;
    struct lcn_pt *pts;
    make(GEN_GRID, 900, 0, 8, &g, &pts);
    double *xy = xmalloc(sizeof(double) * 2 * (size_t)g.n);
    assert_int_equal(gpu_layout_force(ctx, 0, &g, 0, 5, xy), 0);
    for (int32_t i = 0; i < 2 * g.n; i++)
        assert_true(isfinite(xy[i]));
    struct lcn_pt *snapped = xmalloc(sizeof(*snapped) * (size_t)g.n);
    assert_int_equal(layout_snap(&g, xy, snapped), 0);
    struct lcn_report r, rr;
    validate_layout(&g, snapped, 4, &r);
    assert_true(r.valid);
    assert_int_equal(layout_make(&g, LAYOUT_RANDOM, 5, NULL, NULL, 0, NULL, pts), 0);
    validate_layout(&g, pts, 4, &rr);
    fprintf(stderr, "force: C %lld (random layout: %lld)\n", (long long)r.obj.C, (long long)rr.obj.C);
    assert_true(r.obj.C * 4 < rr.obj.C); /* a near-planar grid graph untangles */
    report_release(&r);
    report_release(&rr);
    free(xy);
    free(snapped);
    graph_release(&g);
    free(pts);
}

/*
 * The device descent against the CPU's (its slow twin, layout_descent_energy):
 * the rounded counts equal per edge, the gradient and the value equal to
 * rounding (the sums run in other orders), on generated graphs with real
 * coordinates, coincident nodes and point-like edges included.
 */
static void descent_twin_case(const struct lcn_graph *g, const double *xy, double tau, double r0)
{
    int32_t n = g->n, m = g->m;
    double *g1 = xmalloc(sizeof(double) * 2 * (size_t)n), *g2 = xmalloc(sizeof(double) * 2 * (size_t)n);
    int32_t *c1 = xmalloc(sizeof(int32_t) * (size_t)m), *c2 = xmalloc(sizeof(int32_t) * (size_t)m);
    double v1 = layout_descent_energy(g, xy, tau, r0, g1, c1), v2 = -1;
    assert_int_equal(gpu_descent_energy(ctx, 0, g, xy, tau, r0, g2, c2, &v2), 0);
    assert_memory_equal(c1, c2, sizeof(int32_t) * (size_t)m);
    double gmax = 0, dmax = 0;
    for (int32_t i = 0; i < 2 * n; i++) {
        gmax = fmax(gmax, fabs(g1[i]));
        dmax = fmax(dmax, fabs(g1[i] - g2[i]));
    }
    assert_true(dmax <= 1e-9 * gmax + 1e-300);
    assert_true(fabs(v1 - v2) <= 1e-9 * fmax(1.0, fabs(v1)));
    free(g1);
    free(g2);
    free(c1);
    free(c2);
}

static void test_descent_twin(void **st)
{
    const struct {
        enum gen_family fam;
        int32_t n;
    } cases[] = {{GEN_RANDOM, 60}, {GEN_DENSE, 40}, {GEN_PLANTED, 80}, {GEN_GRID, 150}, {GEN_DENSE, 300}};
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        struct lcn_graph g;
        struct lcn_pt *pts;
        make(cases[k].fam, cases[k].n, 0, 40 + k, &g, &pts);
        struct lcn_rng r;
        rng_init(&r, 77 + k, 0, RNG_PURPOSE_INIT);
        double *xy = xmalloc(sizeof(double) * 2 * (size_t)g.n);
        for (int32_t i = 0; i < g.n; i++) {
            xy[2 * i] = fmin((double)g.width, pts[i].x + rng_unit53(&r));
            xy[2 * i + 1] = fmin((double)g.height, pts[i].y + rng_unit53(&r));
        }
        double tau0, tau1, r0;
        layout_descent_scales(&g, xy, &tau0, &tau1, &r0);
        descent_twin_case(&g, xy, tau0, r0);
        descent_twin_case(&g, xy, tau1, r0);
        /* coincident nodes (node 0 on node 1, node 2 on node 3) and so point-like edges */
        xy[0] = xy[2];
        xy[1] = xy[3];
        xy[4] = xy[6];
        xy[5] = xy[7];
        descent_twin_case(&g, xy, tau1, r0);
        free(xy);
        graph_release(&g);
        free(pts);
    }
}

/* A whole device descent: deterministic, inside the bounds, its reported
 * total the rounded drawing's, never worse than its start, and (printed)
 * how it compares with the CPU descent from the same drawing. */
static void test_descent_run(void **st)
{
    struct lcn_graph g;
    struct lcn_pt *pts;
    make(GEN_DENSE, 200, 0, 9, &g, &pts);
    int32_t n = g.n, m = g.m;
    double *x0 = xmalloc(sizeof(double) * 2 * (size_t)n), *a = xmalloc(sizeof(double) * 2 * (size_t)n),
           *b = xmalloc(sizeof(double) * 2 * (size_t)n);
    assert_int_equal(layout_make(&g, LAYOUT_RANDOM, 3, NULL, NULL, 0, NULL, pts), 0);
    for (int32_t i = 0; i < n; i++) {
        x0[2 * i] = pts[i].x;
        x0[2 * i + 1] = pts[i].y;
    }
    int32_t *c = xmalloc(sizeof(int32_t) * (size_t)m);
    double tau0, tau1, r0;
    layout_descent_scales(&g, x0, &tau0, &tau1, &r0);
    layout_descent_energy(&g, x0, tau1, r0, NULL, c);
    int64_t c0 = 0;
    for (int32_t i = 0; i < m; i++)
        c0 += c[i];
    c0 /= 2;
    int64_t ca = -1, cb = -1;
    int32_t da = 0, db = 0;
    memcpy(a, x0, sizeof(double) * 2 * (size_t)n);
    memcpy(b, x0, sizeof(double) * 2 * (size_t)n);
    assert_int_equal(gpu_layout_descent(ctx, 0, &g, 300, NULL, a, &ca, &da), 0);
    assert_int_equal(gpu_layout_descent(ctx, 0, &g, 300, NULL, b, &cb, &db), 0);
    assert_int_equal(da, 300);
    assert_memory_equal(a, b, sizeof(double) * 2 * (size_t)n);
    assert_true(ca == cb && ca >= 0 && ca <= c0);
    for (int32_t i = 0; i < n; i++)
        assert_true(a[2 * i] >= 0 && a[2 * i] <= g.width && a[2 * i + 1] >= 0 && a[2 * i + 1] <= g.height);
    layout_descent_energy(&g, a, tau1, r0, NULL, c);
    int64_t t = 0;
    for (int32_t i = 0; i < m; i++)
        t += c[i];
    assert_int_equal(t / 2, ca);
    memcpy(b, x0, sizeof(double) * 2 * (size_t)n);
    int64_t ccpu = -1;
    layout_descent_stop(&g, 0, NULL, b, &ccpu);
    fprintf(stderr, "descent: start C %lld, device (300 passes) %lld, CPU (default passes) %lld\n",
            (long long)c0, (long long)ca, (long long)ccpu);
    /* a stop that has fired ends the descent after its first pass, with that drawing */
    LCN_ATOMIC_INT fired = 1;
    struct lcn_stop cancel = {0, &fired, 0};
    memcpy(b, x0, sizeof(double) * 2 * (size_t)n);
    assert_int_equal(gpu_layout_descent(ctx, 0, &g, 300, &cancel, b, &cb, &db), 0);
    assert_int_equal(db, 1);
    assert_memory_equal(b, x0, sizeof(double) * 2 * (size_t)n);
    free(c);
    free(x0);
    free(a);
    free(b);
    graph_release(&g);
    free(pts);
}

static void test_invalid_config_refused(void **st)
{
    struct lcn_graph g;
    struct lcn_pt *pts;
    make(GEN_GRID, 100, 0, 5, &g, &pts);
    struct gpu_counters c0, c1;
    gpu_ctx_counters(ctx, &c0);
    struct gpu_solver_params gp;
    const int bad_w[] = {0, SOL_WMAX + 1};
    struct lcn_pt *cur = xmalloc(sizeof(*cur) * 64 * 100);
    int32_t *cnt = xmalloc(sizeof(int32_t) * 64 * (size_t)g.m);
    struct sol_replica rep[64];
    for (size_t i = 0; i < 2; i++) {
        gpu_solver_params_default(&gp);
        gp.replicas = 2;
        gp.ladder = 2;
        gp.W = bad_w[i];
        assert_int_equal(gpu_solver_debug_run(ctx, 0, &g, pts, &gp, 1, 1, 1, cur, cur, cnt, rep), LCN_EINVAL);
    }
    gpu_solver_params_default(&gp);
    gp.replicas = 2;
    gp.ladder = 65;
    assert_int_equal(gpu_solver_debug_run(ctx, 0, &g, pts, &gp, 1, 1, 1, cur, cur, cnt, rep), LCN_EINVAL);
    gp.ladder = 2;
    gp.block = 100;
    assert_int_equal(gpu_solver_debug_run(ctx, 0, &g, pts, &gp, 1, 1, 1, cur, cur, cnt, rep), LCN_EINVAL);
    gpu_ctx_counters(ctx, &c1);
    assert_true(c1.launches == c0.launches);
    /* a node of degree > SOL_DMAX does not fit */
    int32_t n = SOL_DMAX + 10;
    int32_t *s = xmalloc(sizeof(int32_t) * (size_t)n), *t = xmalloc(sizeof(int32_t) * (size_t)n);
    for (int32_t i = 0; i < n - 1; i++) {
        s[i] = 0;
        t[i] = i + 1;
    }
    struct lcn_graph star;
    assert_int_equal(graph_init(&star, n, n - 1, s, t, 1000, 1000, NULL), 0);
    char why[200];
    assert_int_equal(gpu_fits(ctx, &star, why, sizeof(why)), LCN_ETOOBIG);
    graph_release(&star);
    free(s);
    free(t);
    free(cur);
    free(cnt);
    graph_release(&g);
    free(pts);
}

int main(void)
{
    if (gpu_device_count() <= 0) {
        printf("SKIP: no CUDA device; GPU tests not run\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eval_families),
        cmocka_unit_test(test_eval_benchmark_shapes),
        cmocka_unit_test(test_eval_delta),
        cmocka_unit_test(test_solver_r1_w1),
        cmocka_unit_test(test_solver_r2_w2),
        cmocka_unit_test(test_solver_r4_w32),
        cmocka_unit_test(test_solver_r4_w256),
        cmocka_unit_test(test_solver_big_chunks),
        cmocka_unit_test(test_solver_wide),
        cmocka_unit_test(test_solver_high_degree),
        cmocka_unit_test(test_solver_small_groups),
        cmocka_unit_test(test_solver_no_reuse),
        cmocka_unit_test(test_solver_portfolio),
        cmocka_unit_test(test_solver_pnorm),
        cmocka_unit_test(test_solver_ops),
        cmocka_unit_test(test_solver_beta_k),
        cmocka_unit_test(test_solver_restarts),
        cmocka_unit_test(test_solver_index),
        cmocka_unit_test(test_solver_global),
        cmocka_unit_test(test_engine_budget_residency),
        cmocka_unit_test(test_engine_concurrent_plans),
        cmocka_unit_test(test_engine_islands),
        cmocka_unit_test(test_fault_one_context),
        cmocka_unit_test(test_force_layout),
        cmocka_unit_test(test_descent_twin),
        cmocka_unit_test(test_descent_run),
        cmocka_unit_test(test_invalid_config_refused),
    };
    /* LCN_TEST_FILTER=PATTERN runs the matching tests only (cmocka's '*'
     * and '?'): run-on-gpu.sh's sanitize phase runs the twins one by one */
    const char *filter = getenv("LCN_TEST_FILTER");
    if (filter && *filter)
        cmocka_set_test_filter(filter);
    return cmocka_run_group_tests(tests, setup, teardown);
}
