/*
 * state.h: the incremental (delta) evaluator against its slow twins.
 *
 * Every proposal in the random walks is checked against an oracle built from
 * scratch on the moved layout: the validity verdict against validate_layout,
 * the change list against the per-edge difference of crossings_full, the
 * claimed tuple against the oracle's tuple. Proposals must not change the
 * state; commits must leave counts equal to crossings_full per edge.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "err.h"
#include "gen.h"
#include "repair.h"
#include "state.h"
#include "testkit.h"

/* ---- snapshots: a proposal must leave the state as it found it ---- */

struct snap {
    struct lcn_pt *pts;
    int32_t *cnt;
    struct lcn_obj obj;
    uint64_t generation;
};

static void snap_take(struct snap *sn, const struct lcn_state *st)
{
    sn->pts = xmalloc(sizeof(*sn->pts) * (size_t)(st->g->n + 1));
    sn->cnt = xmalloc(sizeof(int32_t) * (size_t)(st->g->m + 1));
    memcpy(sn->pts, st->pts, sizeof(*sn->pts) * (size_t)st->g->n);
    memcpy(sn->cnt, st->cnt, sizeof(int32_t) * (size_t)st->g->m);
    state_obj(st, &sn->obj);
    sn->generation = st->generation;
}

static void snap_expect(const struct snap *sn, const struct lcn_state *st)
{
    assert_memory_equal(sn->pts, st->pts, sizeof(*sn->pts) * (size_t)st->g->n);
    assert_memory_equal(sn->cnt, st->cnt, sizeof(int32_t) * (size_t)st->g->m);
    struct lcn_obj o;
    state_obj(st, &o);
    assert_int_equal(obj_cmp(&o, &sn->obj), 0);
    assert_int_equal(sn->generation, st->generation);
    /* the per-proposal scratch is idle again */
    for (int32_t e = 0; e < st->g->m; e++)
        assert_int_equal(st->acc[e], 0);
    assert_int_equal(state_check(st), 0);
}

static void snap_release(struct snap *sn)
{
    free(sn->pts);
    free(sn->cnt);
}

/* ---- the oracle for one proposal ---- */

struct oracle {
    int32_t *before, *after, *seen;
    struct lcn_pt *moved;
};

static void oracle_init(struct oracle *o, const struct lcn_graph *g)
{
    o->before = xmalloc(sizeof(int32_t) * (size_t)(g->m + 1));
    o->after = xmalloc(sizeof(int32_t) * (size_t)(g->m + 1));
    o->seen = xcalloc((size_t)g->m + 1, sizeof(int32_t));
    o->moved = xmalloc(sizeof(struct lcn_pt) * (size_t)(g->n + 1));
}

static void oracle_release(struct oracle *o)
{
    free(o->before);
    free(o->after);
    free(o->seen);
    free(o->moved);
}

/* 1 when the report lists a violation matching (kind, a or -1, b or -1). */
static int has_violation(const struct lcn_report *r, enum lcn_vkind k, int32_t a, int32_t b)
{
    for (int32_t i = 0; i < r->listed; i++)
        if (r->list[i].kind == k && (a < 0 || r->list[i].a == a) && (b < 0 || r->list[i].b == b))
            return 1;
    return 0;
}

static int incident(const struct lcn_graph *g, int32_t e, int32_t v)
{
    return g->eu[e] == v || g->ev[e] == v;
}

/*
 * Proposes moving v to q and checks everything against the oracle. When
 * check_verdict is set the current layout is valid and the verdict must
 * agree with validate_layout on the moved layout. Commits valid moves when
 * commit is set. Returns the verdict.
 */
static enum state_invalid propose_checked(struct lcn_state *st, struct lcn_move *mv,
                                          struct oracle *o, int32_t v, struct lcn_pt q,
                                          int check_verdict, int commit)
{
    const struct lcn_graph *g = st->g;
    struct snap sn;
    snap_take(&sn, st);
    int ok = state_propose(st, v, q, mv);
    snap_expect(&sn, st);
    snap_release(&sn);
    assert_int_equal(ok, mv->why == STATE_OK);
    assert_int_equal(mv->why, state_check_move(st, v, q));
    assert_true(mv->v == v && geom_pt_eq(mv->to, q) && geom_pt_eq(mv->from, st->pts[v]));

    memcpy(o->moved, st->pts, sizeof(struct lcn_pt) * (size_t)g->n);
    o->moved[v] = q;
    if (check_verdict) {
        struct lcn_report r;
        validate_layout(g, o->moved, 4096, &r);
        assert_int_equal(r.total, r.listed);
        switch (mv->why) {
        case STATE_OK:
            assert_true(r.valid);
            break;
        case STATE_OUT_OF_BOUNDS:
            assert_true(has_violation(&r, LCN_V1_OUT_OF_BOUNDS, v, -1));
            break;
        case STATE_OCCUPIED:
            assert_true(has_violation(&r, LCN_V2_SHARED_POINT, -1, -1));
            break;
        case STATE_ON_EDGE:
            assert_true(has_violation(&r, LCN_V3_NODE_ON_EDGE, v, -1));
            break;
        case STATE_EDGE_ON_NODE: {
            int found = 0;
            for (int32_t i = 0; i < r.listed; i++)
                found |= r.list[i].kind == LCN_V3_NODE_ON_EDGE && incident(g, r.list[i].b, v);
            assert_true(found);
            break;
        }
        }
        report_release(&r);
    }
    if (!ok) {
        assert_int_equal(mv->n, 0);
        return mv->why;
    }

    /*
     * The change list is exactly the per-edge difference of the oracle. The
     * current counts were checked against crossings_full when the walk began
     * and after every commit, and proposals leave them alone (snap_expect).
     */
    memcpy(o->before, st->cnt, sizeof(int32_t) * (size_t)g->m);
    crossings_full(g, o->moved, o->after);
    for (int32_t i = 0; i < mv->n; i++) {
        int32_t e = mv->edge[i];
        assert_true(e >= 0 && e < g->m);
        assert_int_equal(o->seen[e], 0); /* listed once */
        o->seen[e] = 1;
        assert_int_not_equal(mv->d[i], 0);
        assert_int_equal(mv->d[i], o->after[e] - o->before[e]);
    }
    for (int32_t e = 0; e < g->m; e++) {
        if (!o->seen[e])
            assert_int_equal(o->after[e], o->before[e]);
        o->seen[e] = 0;
    }
    /* the claimed tuple is the oracle's */
    struct lcn_obj want;
    assert_int_equal(obj_from_counts(&want, o->after, g->m), 0);
    assert_int_equal(obj_cmp(&mv->obj, &want), 0);

    if (commit) {
        uint64_t gen = st->generation;
        state_commit(st, mv);
        assert_int_equal(st->generation, gen + 1);
        assert_true(geom_pt_eq(st->pts[v], q));
        for (int32_t e = 0; e < g->m; e++)
            assert_int_equal(st->cnt[e], o->after[e]);
        struct lcn_obj now;
        state_obj(st, &now);
        assert_int_equal(obj_cmp(&now, &want), 0);
        assert_int_equal(state_check(st), 0);
    }
    return STATE_OK;
}

/* ---- move targets that hit every rule ---- */

static int32_t gcd32(int32_t a, int32_t b)
{
    a = a < 0 ? -a : a;
    b = b < 0 ? -b : b;
    while (b) {
        int32_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static struct lcn_pt pick_target(const struct lcn_state *st, struct lcn_rng *r, int32_t v)
{
    const struct lcn_graph *g = st->g;
    const struct lcn_pt *pts = st->pts;
    struct lcn_pt p = pts[v];
    int64_t W = g->width, H = g->height;
    switch (rng_below(r, 10)) {
    case 0:
    case 1:
    case 2: /* anywhere */
        return tk_rand_pt(r, 0, 0, W, H);
    case 3:
    case 4: { /* nearby */
        int64_t x = p.x + (int64_t)rng_below(r, 5) - 2, y = p.y + (int64_t)rng_below(r, 5) - 2;
        return PT((int32_t)LCN_MIN(LCN_MAX(x, 0), W), (int32_t)LCN_MIN(LCN_MAX(y, 0), H));
    }
    case 5: /* onto another node */
        return pts[rng_below(r, (uint32_t)g->n)];
    case 6: { /* onto a lattice point inside some edge */
        if (g->m == 0)
            break;
        int32_t f = (int32_t)rng_below(r, (uint32_t)g->m);
        struct lcn_pt a = pts[g->eu[f]], b = pts[g->ev[f]];
        int32_t k = gcd32(b.x - a.x, b.y - a.y);
        if (k < 2)
            break;
        int32_t t = 1 + (int32_t)rng_below(r, (uint32_t)k - 1);
        return PT(a.x + (b.x - a.x) / k * t, a.y + (b.y - a.y) / k * t);
    }
    case 7: { /* so that an incident edge runs through a node: q = u + j (w - u) */
        int32_t deg = graph_degree(g, v);
        if (deg == 0)
            break;
        int32_t u = graph_other(g, g->inc[g->inc_off[v] + (int32_t)rng_below(r, (uint32_t)deg)], v);
        struct lcn_pt pu = pts[u], pw = pts[rng_below(r, (uint32_t)g->n)];
        int64_t j = 2 + rng_below(r, 2);
        int64_t x = pu.x + j * ((int64_t)pw.x - pu.x), y = pu.y + j * ((int64_t)pw.y - pu.y);
        if (x < 0 || y < 0 || x > W || y > H)
            break;
        return PT((int32_t)x, (int32_t)y);
    }
    case 8: { /* out of bounds by one on a random side */
        int s = (int)rng_below(r, 4);
        int64_t x = s == 1 ? W + 1 : (s == 0 ? -1 : p.x), y = s == 3 ? H + 1 : (s == 2 ? -1 : p.y);
        return PT((int32_t)x, (int32_t)y);
    }
    default: /* stay */
        return p;
    }
    return tk_rand_pt(r, 0, 0, W, H);
}

struct walk_stats {
    int64_t verdict[5];
    int64_t committed;
};

static void walk(struct lcn_state *st, struct lcn_rng *r, int moves, int check_verdict,
                 struct walk_stats *ws)
{
    const struct lcn_graph *g = st->g;
    struct lcn_move mv;
    move_init(&mv);
    struct oracle o;
    oracle_init(&o, g);
    tk_check_counts(g, st->pts, st->cnt);
    for (int i = 0; i < moves; i++) {
        int32_t v = (int32_t)rng_below(r, (uint32_t)g->n);
        struct lcn_pt q = pick_target(st, r, v);
        int commit = rng_below(r, 4) != 0;
        enum state_invalid why = propose_checked(st, &mv, &o, v, q, check_verdict, commit);
        ws->verdict[why]++;
        ws->committed += why == STATE_OK && commit;
        if (i % 97 == 0)
            assert_int_equal(state_recount(st), 0);
    }
    assert_int_equal(state_recount(st), 0);
    tk_check_counts(g, st->pts, st->cnt);
    oracle_release(&o);
    move_release(&mv);
}

static void family_walk(enum gen_family fam, int32_t n, uint64_t seed, int moves)
{
    struct gen_params p = {.family = fam, .n = n, .seed = seed};
    struct lcn_graph g;
    struct lcn_pt *pts;
    char err[160];
    assert_int_equal(gen_instance(&p, &g, &pts, NULL, err, sizeof(err)), 0);
    struct lcn_state st;
    assert_int_equal(state_init(&st, &g, pts), 0);
    tk_check_counts(&g, st.pts, st.cnt);
    struct lcn_rng r;
    rng_init(&r, seed, 7, RNG_PURPOSE_MOVE);
    struct walk_stats ws = {{0}, 0};
    walk(&st, &r, moves, 1, &ws);
    /* the walk exercised every verdict (the generators' layouts are valid) */
    for (int k = 0; k < 5; k++)
        assert_true(ws.verdict[k] > 0);
    /* dense layouts reject most moves (a random point is usually on an edge) */
    assert_true(ws.committed > moves / 20);
    state_release(&st);
    graph_release(&g);
    free(pts);
}

static void test_walk_random(void **s)
{
    for (uint64_t seed = 1; seed <= 2; seed++)
        family_walk(GEN_RANDOM, 40, seed, 1000);
}

static void test_walk_grid(void **s)
{
    for (uint64_t seed = 1; seed <= 2; seed++)
        family_walk(GEN_GRID, 100, seed, 1000);
}

static void test_walk_dense(void **s)
{
    family_walk(GEN_DENSE, 32, 3, 2000);
}

static void test_walk_large(void **s)
{
    family_walk(GEN_LARGE, 80, 4, 2000);
}

static void test_walk_planted(void **s)
{
    family_walk(GEN_PLANTED, 60, 5, 2000);
}

/* Bounds at the coordinate limit: the predicates see 2^30-scale values. */
static void test_walk_huge_bounds(void **s)
{
    struct lcn_rng r;
    rng_init(&r, 9, 0, RNG_PURPOSE_GEN);
    struct lcn_graph g;
    tk_random_graph(&g, &r, 30, 70, TK_L, TK_L);
    struct lcn_pt pts[30];
    for (int32_t v = 0; v < 30; v++)
        pts[v] = v % 3 ? tk_rand_pt(&r, 0, 0, TK_L, TK_L) : PT(v * 1000, v * 1000 + v % 2);
    assert_int_equal(repair_layout(&g, pts, NULL, NULL), 0);
    struct lcn_state st;
    assert_int_equal(state_init(&st, &g, pts), 0);
    struct walk_stats ws = {{0}, 0};
    walk(&st, &r, 1000, 1, &ws);
    assert_true(ws.committed > 200);
    assert_true(ws.verdict[STATE_OCCUPIED] > 0 && ws.verdict[STATE_OUT_OF_BOUNDS] > 0);
    state_release(&st);
    graph_release(&g);
}

/* From invalid layouts the verdicts assume nothing, but counts stay exact. */
static void test_walk_invalid_start(void **s)
{
    static const enum tk_layout kinds[] = {TK_LAY_TINY_BOX, TK_LAY_LINE, TK_LAY_FEW_LINES,
                                           TK_LAY_ON_EDGES};
    struct lcn_rng r;
    rng_init(&r, 10, 0, RNG_PURPOSE_GEN);
    for (size_t k = 0; k < LCN_ARRAY_LEN(kinds); k++) {
        struct lcn_graph g;
        tk_random_graph(&g, &r, 24, 60, 120, 120);
        struct lcn_pt pts[24];
        tk_layout(&g, &r, kinds[k], pts);
        for (int32_t v = 0; v < 24; v++) /* the line layouts reach y = -26 */
            pts[v] = PT(pts[v].x + 10, pts[v].y + 40);
        struct lcn_report rep;
        validate_layout(&g, pts, 0, &rep);
        assert_false(rep.valid);
        report_release(&rep);
        struct lcn_state st;
        assert_int_equal(state_init(&st, &g, pts), 0);
        tk_check_counts(&g, st.pts, st.cnt);
        struct walk_stats ws = {{0}, 0};
        walk(&st, &r, 500, 0, &ws);
        assert_true(ws.committed > 100);
        state_release(&st);
        graph_release(&g);
    }
}

/* ---- fixtures ---- */

/*
 *  e0 = 0-1 horizontal (0,5)-(10,5), crossed by e1, e2, e3 (verticals at
 *  x = 2, 4, 6); e4 (7,9)-(9,7) and e5 (7,7)-(9,9) cross at (8,8);
 *  node 12 at (0,0) is isolated. Counts [3,1,1,1,1,1], tuple (3,1,14,4).
 */
static const int32_t fx_src[] = {0, 2, 4, 6, 8, 10}, fx_dst[] = {1, 3, 5, 7, 9, 11};
static const struct lcn_pt fx_pts[] = {PT(0, 5), PT(10, 5), PT(2, 4), PT(2, 6), PT(4, 4),
                                       PT(4, 6), PT(6, 4),  PT(6, 6), PT(7, 9), PT(9, 7),
                                       PT(7, 7), PT(9, 9),  PT(0, 0)};

struct fixture {
    struct lcn_graph g;
    struct lcn_state st;
    struct lcn_move mv;
    struct oracle o;
};

static void fx_init(struct fixture *f)
{
    tk_graph(&f->g, 13, 6, fx_src, fx_dst, 10, 10);
    struct lcn_report r;
    validate_layout(&f->g, fx_pts, 10, &r);
    assert_true(r.valid);
    report_release(&r);
    assert_int_equal(state_init(&f->st, &f->g, fx_pts), 0);
    move_init(&f->mv);
    oracle_init(&f->o, &f->g);
    static const int32_t want[] = {3, 1, 1, 1, 1, 1};
    for (int e = 0; e < 6; e++)
        assert_int_equal(f->st.cnt[e], want[e]);
    struct lcn_obj o;
    state_obj(&f->st, &o);
    assert_true(o.K == 3 && o.nK == 1 && o.Phi == 14 && o.C == 4);
}

static void fx_release(struct fixture *f)
{
    oracle_release(&f->o);
    move_release(&f->mv);
    state_release(&f->st);
    graph_release(&f->g);
}

static void expect_obj(const struct lcn_obj *o, int32_t K, int32_t nK, int64_t phi, int64_t c)
{
    assert_int_equal(o->K, K);
    assert_int_equal(o->nK, nK);
    assert_int_equal(o->Phi, phi);
    assert_int_equal(o->C, c);
}

static int32_t delta_of(const struct lcn_move *mv, int32_t e)
{
    for (int32_t i = 0; i < mv->n; i++)
        if (mv->edge[i] == e)
            return mv->d[i];
    return 0;
}

static void test_fixture_noop(void **s)
{
    struct fixture f;
    fx_init(&f);
    assert_int_equal(propose_checked(&f.st, &f.mv, &f.o, 3, PT(2, 6), 1, 1), STATE_OK);
    assert_int_equal(f.mv.n, 0);
    expect_obj(&f.mv.obj, 3, 1, 14, 4);
    assert_int_equal(f.st.generation, 1);
    fx_release(&f);
}

static void test_fixture_remove_max(void **s)
{
    struct fixture f;
    fx_init(&f);
    /* shortening e0 to (0,5)-(5,5) drops two of its crossings: K 3 -> 2 */
    assert_int_equal(propose_checked(&f.st, &f.mv, &f.o, 1, PT(5, 5), 1, 0), STATE_OK);
    expect_obj(&f.mv.obj, 2, 1, 8, 3);
    /* shortening it to (0,5)-(1,5) drops all three: K 3 -> 1 held by e4, e5 */
    assert_int_equal(propose_checked(&f.st, &f.mv, &f.o, 1, PT(1, 5), 1, 1), STATE_OK);
    expect_obj(&f.mv.obj, 1, 2, 2, 1);
    assert_int_equal(f.mv.n, 4);
    assert_int_equal(delta_of(&f.mv, 0), -3);
    for (int e = 1; e <= 3; e++)
        assert_int_equal(delta_of(&f.mv, e), -1);
    struct lcn_obj o;
    state_obj(&f.st, &o);
    expect_obj(&o, 1, 2, 2, 1);
    /* and back: K returns to 3 with n_K = 1 */
    assert_int_equal(propose_checked(&f.st, &f.mv, &f.o, 1, PT(10, 5), 1, 1), STATE_OK);
    state_obj(&f.st, &o);
    expect_obj(&o, 3, 1, 14, 4);
    fx_release(&f);
}

static void test_fixture_new_crossing(void **s)
{
    struct fixture f;
    fx_init(&f);
    /* e3 = (6,4)-(10,10) keeps its crossing with e0 and now crosses e4 at (8.4, 7.6) */
    assert_int_equal(propose_checked(&f.st, &f.mv, &f.o, 7, PT(10, 10), 1, 1), STATE_OK);
    assert_int_equal(f.mv.n, 2);
    assert_int_equal(delta_of(&f.mv, 3), 1);
    assert_int_equal(delta_of(&f.mv, 4), 1);
    expect_obj(&f.mv.obj, 3, 1, 20, 5);
    /* e3 = (6,4)-(8,10) would run through node 10 at (7,7) */
    assert_int_equal(propose_checked(&f.st, &f.mv, &f.o, 7, PT(8, 10), 1, 1), STATE_EDGE_ON_NODE);
    fx_release(&f);
}

static void test_fixture_isolated(void **s)
{
    struct fixture f;
    fx_init(&f);
    static const struct lcn_pt ok[] = {PT(1, 1), PT(10, 0), PT(10, 10), PT(5, 4), PT(0, 0)};
    for (size_t i = 0; i < LCN_ARRAY_LEN(ok); i++) {
        assert_int_equal(propose_checked(&f.st, &f.mv, &f.o, 12, ok[i], 1, 1), STATE_OK);
        assert_int_equal(f.mv.n, 0);
        expect_obj(&f.mv.obj, 3, 1, 14, 4);
    }
    /* onto an edge (e0, then the crossing e4/e5 at (8,8)), onto a node */
    assert_int_equal(propose_checked(&f.st, &f.mv, &f.o, 12, PT(3, 5), 1, 1), STATE_ON_EDGE);
    assert_int_equal(propose_checked(&f.st, &f.mv, &f.o, 12, PT(8, 8), 1, 1), STATE_ON_EDGE);
    assert_int_equal(propose_checked(&f.st, &f.mv, &f.o, 12, PT(9, 9), 1, 1), STATE_OCCUPIED);
    fx_release(&f);
}

static void test_fixture_every_reason(void **s)
{
    struct fixture f;
    fx_init(&f);
    static const struct {
        int32_t v;
        struct lcn_pt q;
        enum state_invalid why;
    } cases[] = {
        /* V1 on every side and far out */
        {12, PT(-1, 0), STATE_OUT_OF_BOUNDS},
        {12, PT(11, 3), STATE_OUT_OF_BOUNDS},
        {12, PT(3, 11), STATE_OUT_OF_BOUNDS},
        {12, PT(0, -1), STATE_OUT_OF_BOUNDS},
        {1, PT(-TK_L, TK_L), STATE_OUT_OF_BOUNDS},
        /* V2: onto node 0, onto node 1 (its own neighbour) */
        {12, PT(0, 5), STATE_OCCUPIED},
        {0, PT(10, 5), STATE_OCCUPIED},
        /* V3: onto e0's interior, onto the crossing point of e0 and e3 */
        {2, PT(5, 5), STATE_ON_EDGE},
        {9, PT(6, 5), STATE_ON_EDGE},
        {11, PT(5, 5), STATE_ON_EDGE},
        /* V3: e3 = (6,4)-(8,10) through node 10 at (7,7);
         *     e4 = (7,9)-(5,3) through node 7 at (6,6) */
        {7, PT(8, 10), STATE_EDGE_ON_NODE},
        {9, PT(5, 3), STATE_EDGE_ON_NODE},
        /* valid: e1 = (2,4)-(2,10), e1 = (4,2)-(2,6) (lattice point (3,4) is
         * free), e0 = (0,5)-(8,5), e5 = (10,9)-(9,9) */
        {3, PT(2, 10), STATE_OK},
        {2, PT(4, 2), STATE_OK},
        {1, PT(8, 5), STATE_OK},
        {10, PT(10, 9), STATE_OK},
    };
    for (size_t i = 0; i < LCN_ARRAY_LEN(cases); i++) {
        struct snap sn;
        snap_take(&sn, &f.st);
        enum state_invalid why = propose_checked(&f.st, &f.mv, &f.o, cases[i].v, cases[i].q, 1, 0);
        if (why != cases[i].why)
            fprintf(stderr, "case %zu: verdict %d, want %d\n", i, (int)why, (int)cases[i].why);
        assert_int_equal(why, cases[i].why);
        snap_expect(&sn, &f.st); /* rejected or not committed: nothing changed */
        snap_release(&sn);
    }
    fx_release(&f);
}

/* ---- corruption, reset, scratch wrap-around, contracts ---- */

static void test_corruption_detected(void **s)
{
    struct fixture f;
    fx_init(&f);
    int32_t want[6];
    crossings_full(&f.g, f.st.pts, want);
    /* odd sum */
    f.st.cnt[2]++;
    assert_int_equal(state_check(&f.st), LCN_ECORRUPT);
    assert_int_equal(state_recount(&f.st), LCN_ECORRUPT);
    assert_int_equal(state_check(&f.st), 0);
    assert_memory_equal(f.st.cnt, want, sizeof(want));
    /* even sum, wrong K: an edge claims more than the maximum */
    f.st.cnt[4] += 4;
    assert_int_equal(state_check(&f.st), LCN_ECORRUPT);
    assert_int_equal(state_recount(&f.st), LCN_ECORRUPT);
    assert_memory_equal(f.st.cnt, want, sizeof(want));
    /* the histogram's K alone is wrong */
    f.st.hist.K = 2;
    assert_int_equal(state_check(&f.st), LCN_ECORRUPT);
    assert_int_equal(state_recount(&f.st), LCN_ECORRUPT);
    assert_int_equal(state_check(&f.st), 0);
    /* counts and histogram wrong together but consistent: the cheap check
     * cannot see it, the recount does */
    hist_change(&f.st.hist, f.st.cnt[4], 1);
    f.st.cnt[4]++;
    hist_change(&f.st.hist, f.st.cnt[5], 1);
    f.st.cnt[5]++;
    assert_int_equal(state_check(&f.st), 0);
    assert_int_equal(state_recount(&f.st), LCN_ECORRUPT);
    assert_memory_equal(f.st.cnt, want, sizeof(want));
    assert_int_equal(state_recount(&f.st), 0);
    /* the repaired state keeps working */
    assert_int_equal(propose_checked(&f.st, &f.mv, &f.o, 1, PT(1, 5), 1, 1), STATE_OK);
    struct lcn_obj o;
    state_obj(&f.st, &o);
    expect_obj(&o, 1, 2, 2, 1);
    fx_release(&f);
}

static void test_reset_and_init_bounds(void **s)
{
    struct fixture f;
    fx_init(&f);
    struct lcn_pt other[13];
    memcpy(other, fx_pts, sizeof(other));
    other[1] = PT(1, 5);
    uint64_t gen = f.st.generation;
    assert_int_equal(state_reset(&f.st, other), 0);
    assert_int_equal(f.st.generation, gen + 1);
    tk_check_counts(&f.g, f.st.pts, f.st.cnt);
    struct lcn_obj o;
    state_obj(&f.st, &o);
    expect_obj(&o, 1, 2, 2, 1);
    /* a reset with a point out of bounds is refused and changes nothing */
    struct snap sn;
    snap_take(&sn, &f.st);
    other[5] = PT(11, 0);
    assert_int_equal(state_reset(&f.st, other), LCN_ERANGE);
    snap_expect(&sn, &f.st);
    snap_release(&sn);
    /* the moves still work on the reset state */
    assert_int_equal(propose_checked(&f.st, &f.mv, &f.o, 1, PT(10, 5), 1, 1), STATE_OK);
    fx_release(&f);

    struct lcn_graph g;
    tk_graph(&g, 13, 6, fx_src, fx_dst, 10, 10);
    struct lcn_state st;
    memcpy(other, fx_pts, sizeof(other));
    other[12] = PT(0, -1);
    assert_int_equal(state_init(&st, &g, other), LCN_ERANGE);
    state_release(&st); /* safe after a failed init */
    graph_release(&g);
}

/* The per-edge stamp wraps at INT32_MAX; proposals across the wrap stay exact. */
static void test_stamp_wrap(void **s)
{
    struct gen_params p = {.family = GEN_GRID, .n = 60, .seed = 21};
    struct lcn_graph g;
    struct lcn_pt *pts;
    char err[160];
    assert_int_equal(gen_instance(&p, &g, &pts, NULL, err, sizeof(err)), 0);
    struct lcn_state st;
    assert_int_equal(state_init(&st, &g, pts), 0);
    st.stamp = INT32_MAX - 5;
    /* stamps left by earlier proposals: recent ones, and old small ones that
     * the first stamps after the wrap would collide with if seen[] were not
     * cleared */
    for (int32_t e = 0; e < g.m; e++)
        st.seen[e] = e % 2 ? INT32_MAX - 6 - e % 5 : 1 + e % 4;
    struct lcn_rng r;
    rng_init(&r, 3, 0, RNG_PURPOSE_MOVE);
    struct walk_stats ws = {{0}, 0};
    walk(&st, &r, 200, 1, &ws);
    assert_true(st.stamp < 10000); /* it wrapped */
    state_release(&st);
    graph_release(&g);
    free(pts);
}

/* Committing a stale or invalid move is a programmer error: it aborts. */
static int aborts_in_child(void (*fn)(struct lcn_state *, struct lcn_move *), struct lcn_state *st,
                           struct lcn_move *mv)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0)
            dup2(fd, 2);
        fn(st, mv);
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

static void do_commit(struct lcn_state *st, struct lcn_move *mv)
{
    state_commit(st, mv);
}

static void test_commit_contract(void **s)
{
    struct fixture f;
    fx_init(&f);
    /* evaluated, then the state moved on: stale */
    assert_int_equal(state_propose(&f.st, 1, PT(5, 5), &f.mv), 1);
    struct lcn_move other;
    move_init(&other);
    assert_int_equal(state_propose(&f.st, 12, PT(1, 1), &other), 1);
    state_commit(&f.st, &other);
    assert_true(aborts_in_child(do_commit, &f.st, &f.mv));
    /* invalid move */
    assert_int_equal(state_propose(&f.st, 12, PT(0, 5), &f.mv), 0);
    assert_true(aborts_in_child(do_commit, &f.st, &f.mv));
    move_release(&other);
    fx_release(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixture_noop),
        cmocka_unit_test(test_fixture_remove_max),
        cmocka_unit_test(test_fixture_new_crossing),
        cmocka_unit_test(test_fixture_isolated),
        cmocka_unit_test(test_fixture_every_reason),
        cmocka_unit_test(test_corruption_detected),
        cmocka_unit_test(test_reset_and_init_bounds),
        cmocka_unit_test(test_stamp_wrap),
        cmocka_unit_test(test_commit_contract),
        cmocka_unit_test(test_walk_random),
        cmocka_unit_test(test_walk_grid),
        cmocka_unit_test(test_walk_dense),
        cmocka_unit_test(test_walk_large),
        cmocka_unit_test(test_walk_planted),
        cmocka_unit_test(test_walk_huge_bounds),
        cmocka_unit_test(test_walk_invalid_start),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
