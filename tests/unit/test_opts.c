/* opts.h: the option engine behind every command line, the config file and
 * the tuning knobs: each kind, ranges, both front ends, help. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "err.h"
#include "opts.h"
#include "util.h"

struct o {
    int quiet;
    int on;
    int64_t count;
    int32_t small;
    double budget;
    double frac;
    const char *out;
    char *owned;
    int color;
    int32_t mask;
    int count_given;
};

/* A custom setter: "a+b+c" letters into a bit mask. */
static int set_letters(const char *val, void *field, char *err, size_t errlen)
{
    int32_t m = 0;
    for (const char *p = val; *p; p++) {
        if (*p == '+')
            continue;
        if (*p < 'a' || *p > 'z') {
            snprintf(err, errlen, "'%c' is not a letter", *p);
            return LCN_EINVAL;
        }
        m |= 1 << (*p - 'a');
    }
    *(int32_t *)field = m;
    return 0;
}

#define OFF(f) offsetof(struct o, f)
static const struct opt table[] = {
    {.name = "quiet", .kind = OPT_FLAG, .off = OFF(quiet), .help = "no progress"},
    {.name = "on", .kind = OPT_BOOL, .off = OFF(on), .def = "true", .help = "switch"},
    {.name = "count",
     .kind = OPT_INT,
     .off = OFF(count),
     .min = 1,
     .max = 10,
     .def = "3",
     .seen = OPT_SEEN(struct o, count_given),
     .short_name = 'c',
     .help = "how many"},
    {.name = "small",
     .kind = OPT_INT32,
     .off = OFF(small),
     .min = -5,
     .max = INFINITY,
     .help = "an int32"},
    {.name = "budget_s",
     .kind = OPT_DOUBLE,
     .off = OFF(budget),
     .min = 0,
     .max = INFINITY,
     .flags = OPT_GT_MIN,
     .arg = "S",
     .help = "seconds"},
    {.name = "frac", .kind = OPT_DOUBLE, .off = OFF(frac), .min = 0, .max = 1, .help = "a share"},
    {.name = "out",
     .kind = OPT_STRING,
     .off = OFF(out),
     .short_name = 'o',
     .arg = "FILE",
     .help = "where to write"},
    {.name = "owned",
     .kind = OPT_STRDUP,
     .off = OFF(owned),
     .def = "x",
     .flags = OPT_ONE_LINE,
     .help = "a copied string"},
    {.name = "color",
     .kind = OPT_ENUM,
     .off = OFF(color),
     .choices = "red|green|blue",
     .def = "green",
     .help = "a colour"},
    {.name = "letters",
     .kind = OPT_CUSTOM,
     .off = OFF(mask),
     .set = set_letters,
     .help = "letters joined by +"},
};
#undef OFF

static char err[300];

static void init(struct o *v)
{
    memset(v, 0, sizeof *v);
    opts_defaults(table, LCN_ARRAY_LEN(table), v);
    err[0] = 0;
}

/* Parses a NULL-terminated argument list (argv[0] = "cmd" is added). */
static int parse(struct o *v, struct opts_args *a, ...)
{
    char *argv[32] = {"cmd"};
    int argc = 1;
    va_list ap;
    va_start(ap, a);
    for (char *s; (s = va_arg(ap, char *));)
        argv[argc++] = s;
    va_end(ap);
    struct opts_set set = {table, LCN_ARRAY_LEN(table), v};
    return opts_parse_argv(&set, 1, argc, argv, a, err, sizeof err);
}

static void test_defaults_and_release(void **state)
{
    (void)state;
    struct o v;
    init(&v);
    assert_int_equal(v.on, 1);
    assert_int_equal(v.count, 3);
    assert_int_equal(v.count_given, 0); /* a default is not "given" */
    assert_string_equal(v.owned, "x");
    assert_int_equal(v.color, 1);
    assert_null(v.out);
    opts_release(table, LCN_ARRAY_LEN(table), &v);
    assert_null(v.owned);
}

static void test_every_kind(void **state)
{
    (void)state;
    struct o v;
    char *pos[2];
    struct opts_args a = {.pos = pos, .max_pos = 2};
    init(&v);
    assert_int_equal(parse(&v, &a, "--quiet", "--on=no", "--count", "7", "--small=-5", "--budget-s",
                           "0.25", "--frac=1", "-o", "f.json", "--owned", "copy", "--color", "blue",
                           "--letters=a+c", NULL),
                     0);
    assert_int_equal(v.quiet, 1);
    assert_int_equal(v.on, 0);
    assert_int_equal(v.count, 7);
    assert_int_equal(v.count_given, 1);
    assert_int_equal(v.small, -5);
    assert_true(v.budget == 0.25);
    assert_true(v.frac == 1);
    assert_string_equal(v.out, "f.json");
    assert_string_equal(v.owned, "copy");
    assert_int_equal(v.color, 2);
    assert_int_equal(v.mask, 1 | 4);
    assert_int_equal(a.npos, 0);
    opts_release(table, LCN_ARRAY_LEN(table), &v);
}

static void test_value_forms(void **state)
{
    (void)state;
    struct o v;
    char *pos[2];
    struct opts_args a = {.pos = pos, .max_pos = 2};
    /* --x=v, --x v, -x v, positional arguments anywhere, "--" and "-" */
    init(&v);
    assert_int_equal(parse(&v, &a, "in.json", "--count=4", "-", "--out", "o", NULL), 0);
    assert_int_equal(v.count, 4);
    assert_string_equal(v.out, "o");
    assert_int_equal(a.npos, 2);
    assert_string_equal(pos[0], "in.json");
    assert_string_equal(pos[1], "-");
    assert_int_equal(parse(&v, &a, "-c", "9", "--", "--count", NULL), 0);
    assert_int_equal(v.count, 9);
    assert_int_equal(a.npos, 1);
    assert_string_equal(pos[0], "--count");
    /* a boolean's value may be left out; a word after it that is no boolean stays */
    assert_int_equal(parse(&v, &a, "--on", "false", NULL), 0);
    assert_int_equal(v.on, 0);
    assert_int_equal(parse(&v, &a, "--on", "file", NULL), 0);
    assert_int_equal(v.on, 1);
    assert_int_equal(a.npos, 1);
    assert_string_equal(pos[0], "file");
    /* a repeated option: the last one wins */
    assert_int_equal(parse(&v, &a, "--count", "2", "--count=5", "-c", "6", NULL), 0);
    assert_int_equal(v.count, 6);
    assert_int_equal(parse(&v, &a, "--owned", "a", "--owned", "b", NULL), 0);
    assert_string_equal(v.owned, "b"); /* the first copy was freed (ASan would tell) */
    opts_release(table, LCN_ARRAY_LEN(table), &v);
}

static void test_argv_errors(void **state)
{
    (void)state;
    struct o v;
    char *pos[1];
    struct opts_args a = {.pos = pos, .max_pos = 1};
    init(&v);
    assert_int_equal(parse(&v, &a, "--bogus", NULL), LCN_EINVAL);
    assert_string_equal(err, "unknown option '--bogus'");
    assert_int_equal(parse(&v, &a, "--bogus=1", NULL), LCN_EINVAL);
    assert_string_equal(err, "unknown option '--bogus'");
    assert_int_equal(parse(&v, &a, "-x", NULL), LCN_EINVAL);
    assert_string_equal(err, "unknown option '-x'");
    assert_int_equal(parse(&v, &a, "--out", NULL), LCN_EINVAL);
    assert_string_equal(err, "--out needs a value");
    assert_int_equal(parse(&v, &a, "-o", NULL), LCN_EINVAL);
    assert_string_equal(err, "-o needs a value");
    assert_int_equal(parse(&v, &a, "--quiet=1", NULL), LCN_EINVAL);
    assert_string_equal(err, "--quiet takes no value");
    assert_int_equal(parse(&v, &a, "a", "b", NULL), LCN_EINVAL);
    assert_string_equal(err, "unexpected argument 'b'");
    assert_int_equal(parse(&v, &a, "--count", "x", NULL), LCN_EINVAL);
    assert_string_equal(err, "--count: expected an integer in [1, 10], got 'x'");
    assert_int_equal(parse(&v, &a, "-c", "11", NULL), LCN_ERANGE);
    assert_string_equal(err, "-c: expected an integer in [1, 10], got '11'");
    assert_int_equal(parse(&v, &a, "--budget-s", "0", NULL), LCN_ERANGE);
    assert_string_equal(err, "--budget-s: expected a number > 0, got '0'");
    assert_int_equal(parse(&v, &a, "--budget-s=x", NULL), LCN_EINVAL);
    assert_string_equal(err, "--budget-s: expected a number > 0, got 'x'");
    assert_int_equal(parse(&v, &a, "--color", "tpu", NULL), LCN_EINVAL);
    assert_string_equal(err, "--color: expected one of red|green|blue, got 'tpu'");
    assert_int_equal(parse(&v, &a, "--on=maybe", NULL), LCN_EINVAL);
    assert_string_equal(err, "--on: expected true or false, got 'maybe'");
    assert_int_equal(parse(&v, &a, "--letters", "a+1", NULL), LCN_EINVAL);
    assert_string_equal(err, "--letters: '1' is not a letter");
    assert_int_equal(parse(&v, &a, "--owned", "a\nb", NULL), LCN_EINVAL);
    assert_string_equal(err, "--owned: expected one line, got a newline");
    opts_release(table, LCN_ARRAY_LEN(table), &v);
}

static void test_help_stops(void **state)
{
    (void)state;
    struct o v;
    char *pos[1];
    struct opts_args a = {.pos = pos, .max_pos = 1};
    init(&v);
    assert_int_equal(parse(&v, &a, "--count", "4", "--help", "--bogus", NULL), OPTS_HELP);
    assert_int_equal(v.count, 4);
    assert_int_equal(parse(&v, &a, "-h", NULL), OPTS_HELP);
    /* before the command name: stop at the first positional argument */
    struct opts_args g = {.stop_at_positional = 1};
    assert_int_equal(parse(&v, &g, "--count", "2", "list", "--bogus", NULL), 0);
    assert_int_equal(g.next, 3);
    assert_int_equal(g.npos, 0);
    assert_int_equal(parse(&v, &g, "--quiet", NULL), 0);
    assert_int_equal(g.next, 2);
    opts_release(table, LCN_ARRAY_LEN(table), &v);
}

/* Two sets: a command's table and the shared one, each with its own base. */
static void test_two_sets(void **state)
{
    (void)state;
    struct common {
        const char *server;
        int json;
    } c = {NULL, 0};
    static const struct opt common_opts[] = {
        {.name = "server",
         .kind = OPT_STRING,
         .off = offsetof(struct common, server),
         .help = "url"},
        {.name = "json", .kind = OPT_FLAG, .off = offsetof(struct common, json), .help = "json"},
    };
    struct o v;
    init(&v);
    struct opts_set sets[] = {{table, LCN_ARRAY_LEN(table), &v},
                              {common_opts, LCN_ARRAY_LEN(common_opts), &c}};
    char *argv[] = {"cmd", "--json", "--count", "8", "--server=http://x", NULL};
    struct opts_args a = {0};
    assert_int_equal(opts_parse_argv(sets, 2, 5, argv, &a, err, sizeof err), 0);
    assert_int_equal(c.json, 1);
    assert_string_equal(c.server, "http://x");
    assert_int_equal(v.count, 8);
    opts_release(table, LCN_ARRAY_LEN(table), &v);
}

static void test_kv(void **state)
{
    (void)state;
    struct o v;
    init(&v);
    assert_int_equal(
        opts_parse_kv(table, LCN_ARRAY_LEN(table), &v, NULL, "tuning", err, sizeof err), 0);
    assert_int_equal(opts_parse_kv(table, LCN_ARRAY_LEN(table), &v, "", "tuning", err, sizeof err),
                     0);
    assert_int_equal(opts_parse_kv(table, LCN_ARRAY_LEN(table), &v,
                                   "count=2,frac=0.5,color=red,letters=b,count=4", "tuning", err,
                                   sizeof err),
                     0);
    assert_int_equal(v.count, 4); /* the last one wins */
    assert_true(v.frac == 0.5);
    assert_int_equal(v.color, 0);
    assert_int_equal(v.mask, 2);
    assert_int_equal(
        opts_parse_kv(table, LCN_ARRAY_LEN(table), &v, "count=5,frac=2", "tuning", err, sizeof err),
        LCN_EINVAL);
    assert_string_equal(err, "tuning: frac: expected a number in [0, 1], got '2'");
    assert_int_equal(v.count, 5); /* entries before the bad one were applied */
    assert_int_equal(
        opts_parse_kv(table, LCN_ARRAY_LEN(table), &v, "count=2.5", "tuning", err, sizeof err),
        LCN_EINVAL);
    assert_string_equal(err, "tuning: count: expected an integer in [1, 10], got '2.5'");
    assert_int_equal(
        opts_parse_kv(table, LCN_ARRAY_LEN(table), &v, "y=1", "tuning", err, sizeof err),
        LCN_EINVAL);
    assert_string_equal(err, "tuning: unknown key 'y'");
    assert_int_equal(
        opts_parse_kv(table, LCN_ARRAY_LEN(table), &v, "count", "tuning", err, sizeof err),
        LCN_EINVAL);
    assert_string_equal(err, "tuning: 'count' is not key=value");
    assert_int_equal(
        opts_parse_kv(table, LCN_ARRAY_LEN(table), &v, "color=pink", "tuning", err, sizeof err),
        LCN_EINVAL);
    assert_string_equal(err, "tuning: color: expected one of red|green|blue, got 'pink'");
    opts_release(table, LCN_ARRAY_LEN(table), &v);
}

/* Numbers: strict syntax, the edges of the ranges, open sides, int64 ends. */
static void test_numbers(void **state)
{
    (void)state;
    struct o v;
    init(&v);
    const struct opt *count = opts_find(table, LCN_ARRAY_LEN(table), "count", 5);
    const struct opt *small = opts_find(table, LCN_ARRAY_LEN(table), "small", 5);
    const struct opt *frac = opts_find(table, LCN_ARRAY_LEN(table), "frac", 4);
    const char *bad_int[] = {"",    " 3",  "+3", "3 ", "0x3", "3.0", "1e1", "99999999999999999999",
                             "007", "-03", "-",  "--3"};
    for (size_t i = 0; i < LCN_ARRAY_LEN(bad_int); i++)
        assert_int_equal(opts_set_value(count, &v, bad_int[i], err, sizeof err), LCN_EINVAL);
    assert_int_equal(opts_set_value(count, &v, "1", err, sizeof err), 0);
    assert_int_equal(opts_set_value(count, &v, "10", err, sizeof err), 0);
    assert_int_equal(opts_set_value(count, &v, "0", err, sizeof err), LCN_ERANGE);
    assert_string_equal(err, "expected an integer in [1, 10], got '0'");
    /* int32: the open side ends at the type's end */
    assert_int_equal(opts_set_value(small, &v, "2147483647", err, sizeof err), 0);
    assert_int_equal(v.small, INT32_MAX);
    assert_int_equal(opts_set_value(small, &v, "2147483648", err, sizeof err), LCN_ERANGE);
    assert_string_equal(err, "expected an integer >= -5, got '2147483648'");
    /* numbers as JSON writes them: strtod also reads hexadecimal, ".5" and "5." */
    const char *bad_num[] = {"",      "nan", "inf", "1e999", " 0.5", "0.5x", "+0.5", "0x10",
                             "0x1p3", ".5",  "5.",  "05",    "1e",   "1e+",  "-.5",  "1.e3"};
    for (size_t i = 0; i < LCN_ARRAY_LEN(bad_num); i++)
        assert_int_equal(opts_set_value(frac, &v, bad_num[i], err, sizeof err), LCN_EINVAL);
    assert_int_equal(opts_set_value(frac, &v, "1e-3", err, sizeof err), 0);
    assert_true(v.frac == 1e-3);
    assert_int_equal(opts_set_value(frac, &v, "0.25E+0", err, sizeof err), 0);
    assert_true(v.frac == 0.25);
    assert_int_equal(opts_set_value(frac, &v, "0x1p-2", err, sizeof err), LCN_EINVAL);
    assert_string_equal(err, "expected a number in [0, 1], got '0x1p-2'");
    /* int64 options whose range ends at the type's ends */
    struct {
        int64_t x;
    } w;
    const struct opt wide = {.name = "seed", .kind = OPT_INT, .off = 0, .min = 0, .max = INT64_MAX};
    assert_int_equal(opts_set_value(&wide, &w, "9223372036854775807", err, sizeof err), 0);
    assert_true(w.x == INT64_MAX);
    assert_int_equal(opts_set_value(&wide, &w, "-1", err, sizeof err), LCN_ERANGE);
    assert_string_equal(err, "expected an integer >= 0, got '-1'");
    const struct opt any = {.name = "any", .kind = OPT_INT, .off = 0};
    assert_int_equal(opts_set_value(&any, &w, "-9223372036854775808", err, sizeof err), 0);
    assert_true(w.x == INT64_MIN);
    opts_release(table, LCN_ARRAY_LEN(table), &v);
}

static void test_find_and_format(void **state)
{
    (void)state;
    struct o v;
    init(&v);
    /* '-' and '_' alike, whole names only */
    assert_ptr_equal(opts_find(table, LCN_ARRAY_LEN(table), "budget-s", 8), &table[4]);
    assert_ptr_equal(opts_find(table, LCN_ARRAY_LEN(table), "budget_s", 8), &table[4]);
    assert_null(opts_find(table, LCN_ARRAY_LEN(table), "budget", 6));
    assert_null(opts_find(table, LCN_ARRAY_LEN(table), "counts", 6));
    /* every value formats to what reads back to it */
    char *pos[1];
    struct opts_args a = {.pos = pos, .max_pos = 1};
    assert_int_equal(parse(&v, &a, "--budget-s", "0.1", "--frac", "0.3", "--small", "-2", "--out",
                           "o", "--color", "blue", "--on", "no", NULL),
                     0);
    for (size_t i = 0; i < LCN_ARRAY_LEN(table); i++) {
        const struct opt *o = &table[i];
        if (o->kind == OPT_CUSTOM || o->kind == OPT_FLAG)
            continue;
        char buf[64], buf2[64];
        opts_format_value(o, &v, buf, sizeof buf);
        struct o w = v;
        w.owned = NULL;
        assert_int_equal(opts_set_value(o, &w, buf, err, sizeof err), 0);
        opts_format_value(o, &w, buf2, sizeof buf2);
        assert_string_equal(buf, buf2);
        free(w.owned);
    }
    char buf[64];
    opts_format_value(&table[4], &v, buf, sizeof buf);
    assert_string_equal(buf, "0.1");
    opts_format_value(&table[8], &v, buf, sizeof buf);
    assert_string_equal(buf, "blue");
    opts_flag_name(&table[4], buf, sizeof buf);
    assert_string_equal(buf, "--budget-s");
    opts_describe(&table[3], buf, sizeof buf);
    assert_string_equal(buf, "an integer >= -5");
    opts_release(table, LCN_ARRAY_LEN(table), &v);
}

static char *help_text(void)
{
    struct o v;
    init(&v);
    struct opts_set set = {table, LCN_ARRAY_LEN(table), &v};
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    opts_write_help(f, &set, 1);
    fclose(f);
    opts_release(table, LCN_ARRAY_LEN(table), &v);
    return text;
}

static void test_help(void **state)
{
    (void)state;
    char *text = help_text();
    /* every option, with its value's name, help, range and default */
    for (size_t i = 0; i < LCN_ARRAY_LEN(table); i++) {
        char flag[64];
        opts_flag_name(&table[i], flag, sizeof flag);
        assert_non_null(strstr(text, flag));
        assert_non_null(strstr(text, table[i].help));
    }
    assert_non_null(strstr(text, "  -c, --count N         how many\n"
                                 "                        (an integer in [1, 10]; default 3)\n"));
    assert_non_null(strstr(text, "  --budget-s S          seconds\n"
                                 "                        (a number > 0)\n"));
    assert_non_null(strstr(text, "  -o, --out FILE        where to write\n"));
    /* a head too long for the column puts the help on the next line */
    assert_non_null(strstr(text,
                           "  --color red|green|blue\n"
                           "                        a colour\n"
                           "                        (one of red|green|blue; default green)\n"));
    assert_non_null(strstr(text, "  --on [BOOL]           switch\n"
                                 "                        (true or false; default true)\n"));
    assert_non_null(strstr(text, "  --quiet               no progress\n  --on"));
    assert_non_null(strstr(text, "  -h, --help            this text\n"));
    /* no line runs past the width */
    for (char *line = text, *nl; (nl = strchr(line, '\n')); line = nl + 1)
        assert_true(nl - line <= 79);
    free(text);
}

static void test_help_wraps(void **state)
{
    (void)state;
    struct {
        int64_t n;
    } v = {0};
    const struct opt o[] = {
        {.name = "a-rather-long-option-name",
         .kind = OPT_INT,
         .off = 0,
         .min = 0,
         .max = 5,
         .help = "a help text long enough that it has to be wrapped onto a second line at the "
                 "right margin without splitting any word"},
    };
    struct opts_set set = {o, 1, &v};
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    opts_write_help(f, &set, 1);
    fclose(f);
    assert_string_equal(
        text, "  --a-rather-long-option-name N\n"
              "                        a help text long enough that it has to be wrapped onto\n"
              "                        a second line at the right margin without splitting any\n"
              "                        word\n"
              "                        (an integer in [0, 5])\n"
              "  -h, --help            this text\n");
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_and_release),
        cmocka_unit_test(test_every_kind),
        cmocka_unit_test(test_value_forms),
        cmocka_unit_test(test_argv_errors),
        cmocka_unit_test(test_help_stops),
        cmocka_unit_test(test_two_sets),
        cmocka_unit_test(test_kv),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_find_and_format),
        cmocka_unit_test(test_help),
        cmocka_unit_test(test_help_wraps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
