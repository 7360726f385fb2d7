/*
 * grid.h: geometry of the uniform grid and the segment supercover.
 *
 * The slow twin of grid_segment_cells is an exact rasterisation: the cells a
 * segment touches can only change where it crosses a grid line, so the cell
 * of every such crossing point and of every midpoint between consecutive
 * crossings (exact rationals, 128-bit) is the complete set of half-open
 * cells [i*cs, (i+1)*cs) x [j*cs, (j+1)*cs) the segment has a point in. The
 * supercover must contain all of them (conservative), may add only cells
 * next to them, and must not repeat a cell.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "grid.h"
#include "testkit.h"

typedef __int128 i128;

struct frac {
    i128 n, d; /* value n/d, d > 0 */
};

static int frac_cmp(const void *p, const void *q)
{
    const struct frac *a = p, *b = q;
    i128 l = a->n * b->d, r = b->n * a->d;
    return (l > r) - (l < r);
}

static i128 floor_div128(i128 a, i128 b) /* b > 0 */
{
    i128 q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

static i128 ceil_div128(i128 a, i128 b) /* b > 0 */
{
    return -floor_div128(-a, b);
}

/* Appends the parameters t in [0,1] where the coordinate a + t*d (relative
 * to the grid origin) is a multiple of cs. */
static void line_hits(i128 a, i128 d, i128 cs, struct frac **t, int *n, int *cap)
{
    if (d == 0)
        return;
    i128 lo = a < a + d ? a : a + d, hi = a < a + d ? a + d : a;
    for (i128 k = ceil_div128(lo, cs); k * cs <= hi; k++) {
        if (*n == *cap) {
            *cap *= 2;
            *t = xrealloc(*t, sizeof(**t) * (size_t)*cap);
        }
        i128 num = k * cs - a, den = d;
        if (den < 0) {
            num = -num;
            den = -den;
        }
        (*t)[(*n)++] = (struct frac){num, den};
    }
}

/* Marks (stamp) the exact cells of segment ab; returns their number. */
static int exact_cells(const struct lcn_grid *gr, struct lcn_pt a, struct lcn_pt b, int32_t *mark,
                       int32_t stamp)
{
    i128 ax = (i128)a.x - gr->ox, ay = (i128)a.y - gr->oy;
    i128 dx = (i128)b.x - a.x, dy = (i128)b.y - a.y, cs = gr->cs;
    int cap = 64, n = 0;
    struct frac *t = xmalloc(sizeof(*t) * (size_t)cap);
    t[n++] = (struct frac){0, 1};
    t[n++] = (struct frac){1, 1};
    line_hits(ax, dx, cs, &t, &n, &cap);
    line_hits(ay, dy, cs, &t, &n, &cap);
    qsort(t, (size_t)n, sizeof(*t), frac_cmp);
    int found = 0;
    for (int i = 0; i < n; i++) {
        for (int mid = 0; mid < 2; mid++) {
            struct frac f = t[i];
            if (mid) {
                if (i + 1 == n)
                    break;
                f = (struct frac){t[i].n * t[i + 1].d + t[i + 1].n * t[i].d,
                                  2 * t[i].d * t[i + 1].d};
            }
            i128 cx = floor_div128(ax * f.d + f.n * dx, f.d * cs);
            i128 cy = floor_div128(ay * f.d + f.n * dy, f.d * cs);
            assert_true(cx >= 0 && cx < gr->gx && cy >= 0 && cy < gr->gy);
            int32_t cell = (int32_t)(cy * gr->gx + cx);
            if (mark[cell] != stamp) {
                mark[cell] = stamp;
                found++;
            }
        }
    }
    free(t);
    return found;
}

struct checker {
    int32_t *exact, *got;
    int32_t stamp;
    int64_t n_exact, n_got; /* totals, for the over-inclusion ratio */
};

static void checker_init(struct checker *ck, const struct lcn_grid *gr)
{
    size_t cells = (size_t)gr->gx * (size_t)gr->gy;
    ck->exact = xmalloc(sizeof(int32_t) * cells);
    ck->got = xmalloc(sizeof(int32_t) * cells);
    for (size_t i = 0; i < cells; i++)
        ck->exact[i] = ck->got[i] = -1;
    ck->stamp = 0;
    ck->n_exact = ck->n_got = 0;
}

static void checker_release(struct checker *ck)
{
    free(ck->exact);
    free(ck->got);
}

/* Checks the supercover of ab against the exact rasterisation. */
static void check_segment(struct lcn_grid *gr, struct checker *ck, struct lcn_pt a, struct lcn_pt b)
{
    int32_t stamp = ++ck->stamp;
    int ne = exact_cells(gr, a, b, ck->exact, stamp);
    int32_t k = grid_segment_cells(gr, a, b);
    for (int32_t i = 0; i < k; i++) {
        int32_t c = gr->tmp[i];
        assert_true(c >= 0 && c < gr->gx * gr->gy);
        assert_true(ck->got[c] != stamp); /* no repeats */
        ck->got[c] = stamp;
    }
    int covered = 0;
    for (int32_t i = 0; i < k; i++) {
        int32_t c = gr->tmp[i], cx = c % gr->gx, cy = c / gr->gx;
        if (ck->exact[c] == stamp) {
            covered++;
            continue;
        }
        /* an extra cell must be next to a touched one */
        int near = 0;
        for (int ddy = -1; ddy <= 1 && !near; ddy++)
            for (int ddx = -1; ddx <= 1 && !near; ddx++) {
                int32_t x = cx + ddx, y = cy + ddy;
                if (x >= 0 && y >= 0 && x < gr->gx && y < gr->gy &&
                    ck->exact[y * gr->gx + x] == stamp)
                    near = 1;
            }
        assert_true(near);
    }
    if (covered != ne) {
        fprintf(stderr, "supercover misses %d of %d cells: (%d,%d)-(%d,%d) cs=%lld\n", ne - covered,
                ne, a.x, a.y, b.x, b.y, (long long)gr->cs);
    }
    assert_int_equal(covered, ne);
    /* the endpoints' own cells are always there */
    assert_true(ck->got[grid_cell_of(gr, a)] == stamp && ck->got[grid_cell_of(gr, b)] == stamp);
    ck->n_exact += ne;
    ck->n_got += k;
}

static void test_init_geometry(void **s)
{
    static const int64_t box[][4] = {
        {0, 0, 0, 0},
        {0, 0, 9, 9},
        {0, 0, 10, 10},
        {-5, -7, 5, 3},
        {0, 0, 1000, 3},
        {3, 0, 4, 100000},
        {-TK_L, -TK_L, TK_L, TK_L},
        {0, 0, TK_L, TK_L},
        {250000, 0, 250000, 250000},
    };
    static const int32_t sides[] = {0, 1, 2, 7, 95, 1024};
    for (size_t i = 0; i < LCN_ARRAY_LEN(box); i++) {
        for (size_t j = 0; j < LCN_ARRAY_LEN(sides); j++) {
            struct lcn_grid gr;
            grid_init(&gr, box[i][0], box[i][1], box[i][2], box[i][3], sides[j]);
            int32_t ps = sides[j] < 1 ? 1 : sides[j];
            assert_true(gr.cs >= 1);
            assert_true(gr.gx >= 1 && gr.gy >= 1 && gr.gx <= ps && gr.gy <= ps);
            assert_true(gr.gx * gr.cs > box[i][2] - box[i][0]);
            assert_true(gr.gy * gr.cs > box[i][3] - box[i][1]);
            assert_int_equal(grid_cell_of(&gr, PT((int32_t)box[i][0], (int32_t)box[i][1])), 0);
            int64_t cx = (box[i][2] - box[i][0]) / gr.cs, cy = (box[i][3] - box[i][1]) / gr.cs;
            assert_true(cx < gr.gx && cy < gr.gy);
            assert_int_equal(grid_cell_of(&gr, PT((int32_t)box[i][2], (int32_t)box[i][3])),
                             cy * gr.gx + cx);
            grid_release(&gr);
        }
    }
    assert_int_equal(grid_side_for_edges(0), 1);
    assert_int_equal(grid_side_for_edges(1), 1);
    assert_int_equal(grid_side_for_edges(202), 10);
    assert_int_equal(grid_side_for_edges(4938), 47);
    assert_int_equal(grid_side_for_edges(20288), 95);
    assert_int_equal(grid_side_for_edges(LCN_MAX_EDGES), 1024);
}

/* Random segments of every length on grids of several cell sizes. */
static void test_supercover_random(void **s)
{
    struct lcn_rng r;
    rng_init(&r, 1, 0, RNG_PURPOSE_GEN);
    static const int32_t sides[] = {1, 2, 3, 5, 13, 40};
    for (size_t j = 0; j < LCN_ARRAY_LEN(sides); j++) {
        struct lcn_grid gr;
        grid_init(&gr, -20, 5, 117, 80, sides[j]);
        struct checker ck;
        checker_init(&ck, &gr);
        for (int i = 0; i < 4000; i++) {
            struct lcn_pt a = tk_rand_pt(&r, -20, 5, 117, 80), b;
            if (i % 3 == 0) /* short segments */
                b = tk_rand_pt(&r, LCN_MAX(-20, a.x - 4), LCN_MAX(5, a.y - 4),
                               LCN_MIN(117, a.x + 4), LCN_MIN(80, a.y + 4));
            else
                b = tk_rand_pt(&r, -20, 5, 117, 80);
            check_segment(&gr, &ck, a, b);
        }
        /* conservative, but not wildly so */
        assert_true(ck.n_got <= 3 * ck.n_exact);
        checker_release(&ck);
        grid_release(&gr);
    }
}

/* Vertical, horizontal, degenerate, along grid lines and through corners. */
static void test_supercover_adversarial(void **s)
{
    struct lcn_grid gr;
    grid_init(&gr, 0, 0, 99, 99, 10); /* cs = 10 */
    assert_int_equal(gr.cs, 10);
    struct checker ck;
    checker_init(&ck, &gr);
    for (int32_t x = 0; x <= 99; x += 3) {
        for (int32_t y0 = 0; y0 <= 99; y0 += 7) {
            for (int32_t y1 = 0; y1 <= 99; y1 += 11) {
                check_segment(&gr, &ck, PT(x, y0), PT(x, y1)); /* vertical (and points) */
                check_segment(&gr, &ck, PT(y0, x), PT(y1, x)); /* horizontal */
            }
        }
    }
    /* exactly on grid lines, and from corner to corner (diagonals through
     * every intermediate corner, knight moves, long shallow slopes) */
    for (int32_t i = 0; i <= 9; i++) {
        for (int32_t j = 0; j <= 9; j++) {
            for (int32_t k = 0; k <= 9; k++) {
                for (int32_t l = 0; l <= 9; l += 3) {
                    check_segment(&gr, &ck, PT(10 * i, 10 * j), PT(10 * k, 10 * l));
                    check_segment(&gr, &ck, PT(10 * i, 10 * j), PT(10 * k + 9, 10 * l + 9));
                    check_segment(&gr, &ck, PT(10 * i + 9, 10 * j), PT(10 * k, 10 * l + 9));
                }
            }
        }
    }
    /* one unit off a corner on either side */
    for (int32_t i = 1; i <= 8; i++) {
        check_segment(&gr, &ck, PT(10 * i - 1, 0), PT(10 * i + 1, 99));
        check_segment(&gr, &ck, PT(0, 10 * i - 1), PT(99, 10 * i + 1));
        check_segment(&gr, &ck, PT(10 * i - 5, 10 * i - 4), PT(10 * i + 5, 10 * i + 6));
        check_segment(&gr, &ck, PT(10 * i - 5, 10 * i - 6), PT(10 * i + 5, 10 * i + 4));
    }
    checker_release(&ck);
    grid_release(&gr);

    /* a grid with cs = 1: every lattice point is a cell corner */
    grid_init(&gr, 0, 0, 12, 12, 13);
    assert_int_equal(gr.cs, 1);
    checker_init(&ck, &gr);
    for (int32_t a = 0; a < 13 * 13; a += 2)
        for (int32_t b = 0; b < 13 * 13; b += 3)
            check_segment(&gr, &ck, PT(a % 13, a / 13), PT(b % 13, b / 13));
    checker_release(&ck);
    grid_release(&gr);
}

/* Large coordinates: grids over [-L, L]^2 and [0, L]^2. */
static void test_supercover_large(void **s)
{
    struct lcn_rng r;
    rng_init(&r, 2, 0, RNG_PURPOSE_GEN);
    const int32_t L = TK_L;
    static const int64_t box[][4] = {{-TK_L, -TK_L, TK_L, TK_L}, {0, 0, TK_L, TK_L}};
    static const int32_t sides[] = {7, 95, 1024};
    for (size_t bi = 0; bi < LCN_ARRAY_LEN(box); bi++) {
        for (size_t j = 0; j < LCN_ARRAY_LEN(sides); j++) {
            struct lcn_grid gr;
            grid_init(&gr, box[bi][0], box[bi][1], box[bi][2], box[bi][3], sides[j]);
            struct checker ck;
            checker_init(&ck, &gr);
            int32_t lo = (int32_t)box[bi][0];
            for (int i = 0; i < 600; i++) {
                struct lcn_pt a = tk_rand_pt(&r, lo, lo, L, L), b = tk_rand_pt(&r, lo, lo, L, L);
                if (i % 4 == 1)
                    b.x = a.x; /* vertical */
                if (i % 4 == 2)
                    b.y = a.y; /* horizontal */
                check_segment(&gr, &ck, a, b);
            }
            /* the extreme corners and the full diagonals */
            check_segment(&gr, &ck, PT(lo, lo), PT(L, L));
            check_segment(&gr, &ck, PT(lo, L), PT(L, lo));
            check_segment(&gr, &ck, PT(lo, lo), PT(L, lo + 1));
            check_segment(&gr, &ck, PT(L, L), PT(L, L));
            /* through a cell corner near the top right */
            int64_t cx = (gr.gx - 1) * gr.cs + gr.ox, cy = (gr.gy - 1) * gr.cs + gr.oy;
            check_segment(&gr, &ck, PT((int32_t)(cx - 3), (int32_t)(cy - 3)),
                          PT((int32_t)LCN_MIN(cx + 3, L), (int32_t)LCN_MIN(cy + 3, L)));
            checker_release(&ck);
            grid_release(&gr);
        }
    }
}

static void test_add_remove(void **s)
{
    struct lcn_rng r;
    rng_init(&r, 3, 0, RNG_PURPOSE_GEN);
    struct lcn_grid gr;
    grid_init(&gr, 0, 0, 63, 63, 8);
    enum { NSEG = 200 };
    struct lcn_pt a[NSEG], b[NSEG];
    for (int i = 0; i < NSEG; i++) {
        a[i] = tk_rand_pt(&r, 0, 0, 63, 63);
        b[i] = tk_rand_pt(&r, 0, 0, 63, 63);
        grid_add_segment(&gr, i, a[i], b[i]);
    }
    int32_t cells = gr.gx * gr.gy;
    /* cell contents equal, as a multiset, the segments whose cover holds the cell */
    int32_t *expect = xcalloc((size_t)cells * NSEG, sizeof(int32_t));
    for (int i = 0; i < NSEG; i++) {
        int32_t k = grid_segment_cells(&gr, a[i], b[i]);
        for (int32_t j = 0; j < k; j++)
            expect[gr.tmp[j] * NSEG + i]++;
    }
    for (int32_t c = 0; c < cells; c++) {
        int32_t have[NSEG] = {0};
        for (int32_t j = 0; j < gr.cells[c].len; j++)
            have[gr.cells[c].ids[j]]++;
        for (int i = 0; i < NSEG; i++)
            assert_int_equal(have[i], expect[c * NSEG + i]);
    }
    /* removing the odd ones leaves exactly the even ones */
    for (int i = 1; i < NSEG; i += 2)
        grid_remove_segment(&gr, i, a[i], b[i]);
    for (int32_t c = 0; c < cells; c++) {
        int32_t n_even = 0;
        for (int i = 0; i < NSEG; i += 2)
            n_even += expect[c * NSEG + i];
        assert_int_equal(gr.cells[c].len, n_even);
        for (int32_t j = 0; j < gr.cells[c].len; j++)
            assert_int_equal(gr.cells[c].ids[j] % 2, 0);
    }
    /* single-cell add/remove, then clear */
    int32_t c0 = grid_cell_of(&gr, PT(63, 0));
    int32_t before = gr.cells[c0].len;
    grid_cell_add(&gr, c0, 999);
    grid_cell_add(&gr, c0, 999);
    grid_cell_remove(&gr, c0, 999);
    assert_int_equal(gr.cells[c0].len, before + 1);
    grid_clear(&gr);
    for (int32_t c = 0; c < cells; c++)
        assert_int_equal(gr.cells[c].len, 0);
    free(expect);
    grid_release(&gr);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_geometry),
        cmocka_unit_test(test_supercover_random),
        cmocka_unit_test(test_supercover_adversarial),
        cmocka_unit_test(test_supercover_large),
        cmocka_unit_test(test_add_remove),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
