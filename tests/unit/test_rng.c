/*
 * rng.h: Philox-4x32-10 known answers, the stream layout (key, counter
 * words, draw order), determinism, stream separation and the ranges of the
 * derived draws.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testkit.h"

/*
 * Random123 tests/kat_vectors (DEShawResearch/random123), the three
 * "philox4x32 10" lines: counter (4 words), key (2 words), expected output.
 */
static const uint32_t kat[3][10] = {
    {0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x6627e8d5, 0xe169c58d,
     0xbc57ac4c, 0x9b00dbd8},
    {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d, 0x41c83b0e,
     0xa20bc7c6, 0x6d5451fd},
    {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09, 0x94fdcceb,
     0x5001e420, 0x24126ea1},
};

static void test_known_answers(void **s)
{
    for (int i = 0; i < 3; i++) {
        struct lcn_u32x4 ctr = {{kat[i][0], kat[i][1], kat[i][2], kat[i][3]}};
        struct lcn_u32x4 out = rng_philox(ctr, kat[i][4], kat[i][5]);
        for (int j = 0; j < 4; j++)
            assert_int_equal(out.v[j], kat[i][6 + j]);
    }
}

/* The documented layout: key = seed, counter = (step, stream, purpose, lane),
 * four words per block, so the device can replay a host draw. */
static void test_stream_layout(void **s)
{
    uint64_t seed = 0x0123456789abcdefull;
    struct lcn_rng r;
    rng_init(&r, seed, 42, RNG_PURPOSE_ACCEPT);
    for (uint32_t step = 0; step < 5; step++) {
        struct lcn_u32x4 ctr = {{step, 42, RNG_PURPOSE_ACCEPT, 0}};
        struct lcn_u32x4 blk = rng_philox(ctr, 0x89abcdefu, 0x01234567u);
        uint32_t got[4];
        for (int j = 0; j < 4; j++)
            got[j] = rng_u32(&r);
        /* the block's words are handed out last word first */
        for (int j = 0; j < 4; j++)
            assert_int_equal(got[j], blk.v[3 - j]);
    }
}

static void test_counter_wrap(void **s)
{
    struct lcn_rng r;
    rng_init(&r, 7, 1, RNG_PURPOSE_MOVE);
    r.ctr.v[0] = 0xffffffffu;
    uint32_t a = rng_u32(&r);
    assert_int_equal(r.ctr.v[0], 0);
    assert_int_equal(r.ctr.v[3], 1); /* the carry goes to the top word */
    for (int j = 0; j < 3; j++)
        rng_u32(&r);
    uint32_t b = rng_u32(&r);
    struct lcn_u32x4 c0 = {{0xffffffffu, 1, RNG_PURPOSE_MOVE, 0}},
                     c1 = {{0, 1, RNG_PURPOSE_MOVE, 1}};
    assert_int_equal(a, rng_philox(c0, 7, 0).v[3]);
    assert_int_equal(b, rng_philox(c1, 7, 0).v[3]);
}

static void test_determinism(void **s)
{
    struct lcn_rng a, b;
    rng_init(&a, 99, 3, RNG_PURPOSE_MOVE);
    rng_init(&b, 99, 3, RNG_PURPOSE_MOVE);
    for (int i = 0; i < 10000; i++)
        assert_int_equal(rng_u32(&a), rng_u32(&b));
    /* re-initialising restarts the sequence */
    rng_init(&a, 99, 3, RNG_PURPOSE_MOVE);
    struct lcn_rng c;
    rng_init(&c, 99, 3, RNG_PURPOSE_MOVE);
    for (int i = 0; i < 100; i++)
        assert_int_equal(rng_below(&a, 1000), rng_below(&c, 1000));
}

static int cmp_u32(const void *p, const void *q)
{
    uint32_t a = *(const uint32_t *)p, b = *(const uint32_t *)q;
    return (a > b) - (a < b);
}

/* Number of words the two sequences have in common (as multisets). */
static int common_words(uint32_t *x, uint32_t *y, int n)
{
    qsort(x, (size_t)n, sizeof(*x), cmp_u32);
    qsort(y, (size_t)n, sizeof(*y), cmp_u32);
    int i = 0, j = 0, k = 0;
    while (i < n && j < n) {
        if (x[i] == y[j]) {
            k++;
            i++;
            j++;
        } else if (x[i] < y[j]) {
            i++;
        } else {
            j++;
        }
    }
    return k;
}

static void test_stream_separation(void **s)
{
    enum { N = 8192 };
    /* (seed, stream, purpose) differing in one component at a time */
    static const struct {
        uint64_t seed;
        uint32_t stream, purpose;
    } cfg[] = {
        {1, 0, RNG_PURPOSE_MOVE}, {2, 0, RNG_PURPOSE_MOVE},   {1ull << 32, 0, RNG_PURPOSE_MOVE},
        {1, 1, RNG_PURPOSE_MOVE}, {1, 0, RNG_PURPOSE_ACCEPT}, {1, 0xffffffffu, RNG_PURPOSE_MOVE},
        {0, 0, RNG_PURPOSE_MOVE},
    };
    size_t nc = LCN_ARRAY_LEN(cfg);
    uint32_t(*w)[N] = xmalloc(sizeof(*w) * nc);
    for (size_t i = 0; i < nc; i++) {
        struct lcn_rng r;
        rng_init(&r, cfg[i].seed, cfg[i].stream, cfg[i].purpose);
        for (int j = 0; j < N; j++)
            w[i][j] = rng_u32(&r);
    }
    uint32_t *x = xmalloc(sizeof(uint32_t) * N), *y = xmalloc(sizeof(uint32_t) * N);
    for (size_t i = 0; i < nc; i++) {
        for (size_t k = i + 1; k < nc; k++) {
            /* no two streams start alike or run in lock step */
            int same_pos = 0;
            for (int j = 0; j < N; j++)
                same_pos += w[i][j] == w[k][j];
            assert_true(same_pos <= 1);
            /* and they share no more words than independent draws would
             * (expected N^2 / 2^32 = 0.016) */
            memcpy(x, w[i], sizeof(uint32_t) * N);
            memcpy(y, w[k], sizeof(uint32_t) * N);
            assert_true(common_words(x, y, N) <= 2);
        }
    }
    free(x);
    free(y);
    free(w);
}

static void test_below_range(void **s)
{
    static const uint32_t ns[] = {1, 2, 3, 7, 10, 1000, 1u << 31, 0xfffffffeu, 0xffffffffu};
    struct lcn_rng r;
    rng_init(&r, 5, 0, RNG_PURPOSE_GEN);
    for (size_t i = 0; i < LCN_ARRAY_LEN(ns); i++) {
        uint32_t mx = 0;
        for (int j = 0; j < 100000; j++) {
            uint32_t v = rng_below(&r, ns[i]);
            assert_true(v < ns[i]);
            mx = v > mx ? v : mx;
        }
        if (ns[i] == 1)
            assert_int_equal(mx, 0);
        else
            assert_true(mx >= ns[i] - ns[i] / 100 - 1); /* the top of the range is reached */
    }
    /* every value of a small range, in about equal shares (fixed seed:
     * deterministic; the bound is ~8 standard deviations) */
    enum { K = 6, DRAWS = 600000 };
    int64_t cnt[K] = {0};
    for (int j = 0; j < DRAWS; j++)
        cnt[rng_below(&r, K)]++;
    for (int k = 0; k < K; k++)
        assert_true(llabs(cnt[k] - DRAWS / K) < 2400);
}

static void test_unit_ranges(void **s)
{
    struct lcn_rng r;
    rng_init(&r, 11, 0, RNG_PURPOSE_ACCEPT);
    double sum = 0, sum53 = 0;
    float lo = 1, hi = 0;
    for (int j = 0; j < 200000; j++) {
        float u = rng_unit(&r);
        double d = rng_unit53(&r);
        assert_true(u >= 0.0f && u < 1.0f);
        assert_true(d >= 0.0 && d < 1.0);
        sum += u;
        sum53 += d;
        lo = u < lo ? u : lo;
        hi = u > hi ? u : hi;
    }
    assert_true(lo < 0.001f && hi > 0.999f);
    assert_true(sum / 200000 > 0.49 && sum / 200000 < 0.51);
    assert_true(sum53 / 200000 > 0.49 && sum53 / 200000 < 0.51);
    /* the extremes of the mappings: all-zero and all-one words */
    struct lcn_rng z = r;
    z.buf.v[0] = z.buf.v[1] = 0xffffffffu;
    z.have = 2;
    assert_true(rng_unit53(&z) < 1.0);
    z.buf.v[0] = 0xffffffffu;
    z.have = 1;
    assert_true(rng_unit(&z) < 1.0f);
    z.buf.v[0] = 0;
    z.have = 1;
    assert_true(rng_unit(&z) == 0.0f);
    z.buf.v[0] = 0xffffffffu;
    z.have = 1;
    assert_int_equal(rng_below(&z, 10), 9);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_answers),     cmocka_unit_test(test_stream_layout),
        cmocka_unit_test(test_counter_wrap),      cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_stream_separation), cmocka_unit_test(test_below_range),
        cmocka_unit_test(test_unit_ranges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
