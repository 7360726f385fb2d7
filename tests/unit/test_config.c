/* The options table: defaults, the file parser, flags, and the sample
 * config/lcnd.conf, which must be exactly what the table generates. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "server/config.h"
#include "err.h"
#include "opts.h"
#include "util.h"

static char *write_tmp_len(const char *text, size_t len)
{
    char *path = xstrdup("/tmp/lcn-test-config-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, len), (ssize_t)len);
    close(fd);
    return path;
}

static char *write_tmp(const char *text)
{
    return write_tmp_len(text, strlen(text));
}

static char *read_all(FILE *f, size_t *len)
{
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = xmalloc((size_t)n + 1);
    *len = fread(b, 1, (size_t)n, f);
    b[*len] = 0;
    return b;
}

static void test_defaults_in_range(void **state)
{
    (void)state;
    struct lcnd_config c;
    config_defaults(&c);
    assert_string_equal(c.listen, "127.0.0.1:8480");
    assert_int_equal(c.max_queued, 64);
    assert_int_equal(c.backend, LCN_BACKEND_AUTO);
    assert_int_equal(c.resume_interrupted, 1);
    assert_true(c.default_budget_s <= c.max_budget_s);
    for (size_t i = 0; i < config_option_count; i++) {
        const struct opt *o = &config_options[i];
        assert_non_null(o->help);
        assert_true(strlen(o->help) > 10);
        /* the default, formatted and re-read, gives the same value */
        char buf[512], err[200];
        opts_format_value(o, &c, buf, sizeof buf);
        struct lcnd_config d;
        config_defaults(&d);
        assert_int_equal(config_set(&d, o, buf, err, sizeof err), 0);
        char buf2[512];
        opts_format_value(o, &d, buf2, sizeof buf2);
        assert_string_equal(buf, buf2);
        /* names are unique and findable by flag spelling */
        char flag[64];
        size_t k = 0;
        for (; o->name[k]; k++)
            flag[k] = o->name[k] == '_' ? '-' : o->name[k];
        flag[k] = 0;
        assert_ptr_equal(config_find(flag), o);
        assert_ptr_equal(config_find(o->name), o);
        config_release(&d);
    }
    config_release(&c);
}

static void test_set_errors(void **state)
{
    (void)state;
    struct lcnd_config c;
    config_defaults(&c);
    char err[200];
    assert_int_equal(config_set(&c, config_find("max_nodes"), "0", err, sizeof err), LCN_ERANGE);
    assert_string_equal(err, "max_nodes: expected an integer in [1, 1000000], got '0'");
    assert_int_equal(config_set(&c, config_find("max_nodes"), "12x", err, sizeof err), LCN_EINVAL);
    assert_string_equal(err, "max_nodes: expected an integer in [1, 1000000], got '12x'");
    assert_int_equal(config_set(&c, config_find("max_budget_s"), "nan", err, sizeof err),
                     LCN_EINVAL);
    assert_int_equal(config_set(&c, config_find("max_budget_s"), "0", err, sizeof err), LCN_ERANGE);
    assert_int_equal(config_set(&c, config_find("backend"), "tpu", err, sizeof err), LCN_EINVAL);
    assert_string_equal(err, "backend: expected one of auto|gpu|cpu, got 'tpu'");
    assert_int_equal(config_set(&c, config_find("resume_interrupted"), "maybe", err, sizeof err),
                     LCN_EINVAL);
    assert_int_equal(config_set(&c, config_find("backend"), "cpu", err, sizeof err), 0);
    assert_int_equal(c.backend, LCN_BACKEND_CPU);
    assert_int_equal(config_set(&c, config_find("max_budget_s"), "2.5", err, sizeof err), 0);
    assert_true(c.max_budget_s == 2.5);
    config_release(&c);
}

static void test_file(void **state)
{
    (void)state;
    struct lcnd_config c;
    config_defaults(&c);
    char err[300];
    char *p = write_tmp("# comment\n\n  max_nodes = 500   # trailing comment\n"
                        "state_dir = /var/lib/lcn#not-a-comment\nbackend=cpu\n"
                        "token_file =\nresume_interrupted = no\n");
    assert_int_equal(config_load_file(&c, p, err, sizeof err), 0);
    assert_int_equal(c.max_nodes, 500);
    assert_string_equal(c.state_dir, "/var/lib/lcn#not-a-comment");
    assert_int_equal(c.backend, LCN_BACKEND_CPU);
    assert_string_equal(c.token_file, "");
    assert_int_equal(c.resume_interrupted, 0);
    unlink(p);
    free(p);

    p = write_tmp("max_nodes = 5\nmax_node = 3\n");
    assert_int_equal(config_load_file(&c, p, err, sizeof err), LCN_EINVAL);
    assert_non_null(strstr(err, ":2: unknown option 'max_node'"));
    unlink(p);
    free(p);

    p = write_tmp("max_nodes = 5\nmax_nodes = 6\n");
    assert_int_equal(config_load_file(&c, p, err, sizeof err), LCN_EINVAL);
    assert_non_null(strstr(err, ":2: option 'max_nodes' given twice"));
    unlink(p);
    free(p);

    p = write_tmp("just words\n");
    assert_int_equal(config_load_file(&c, p, err, sizeof err), LCN_EINVAL);
    assert_non_null(strstr(err, ":1: expected 'name = value'"));
    unlink(p);
    free(p);

    p = write_tmp("max_edges = -1\n");
    assert_int_equal(config_load_file(&c, p, err, sizeof err), LCN_ERANGE);
    assert_non_null(strstr(err, ":1: max_edges: expected an integer in [0, 4000000], got '-1'"));
    unlink(p);
    free(p);

    /* a NUL byte ended the line where it stood: "max_nodes = 7\0junk" was
     * read as max_nodes = 7, whatever followed (probe 4) */
    static const char nul[] = "max_nodes = 7\0junk\n";
    p = write_tmp_len(nul, sizeof nul - 1);
    assert_int_equal(config_load_file(&c, p, err, sizeof err), LCN_EINVAL);
    assert_non_null(strstr(err, ":1: NUL byte in the line"));
    unlink(p);
    free(p);

    assert_int_equal(config_load_file(&c, "/nonexistent/lcnd.conf", err, sizeof err), LCN_EIO);
    config_release(&c);
}

static void test_args(void **state)
{
    (void)state;
    struct lcnd_config c;
    config_defaults(&c);
    char err[300];
    int help, print;
    char *p = write_tmp("max_nodes = 500\nmax_edges = 900\n");
    /* flags override the file wherever --config stands */
    char *argv[] = {"serve",
                    "--max-nodes",
                    "7",
                    "--config",
                    p,
                    "--backend=gpu",
                    "--allow-insecure-listen",
                    "--state-dir",
                    "/tmp/x",
                    "--resume-interrupted",
                    "false",
                    NULL};
    assert_int_equal(config_parse_args(&c, 11, argv, &help, &print, err, sizeof err), 0);
    assert_int_equal(c.max_nodes, 7);
    assert_int_equal(c.max_edges, 900);
    assert_int_equal(c.backend, LCN_BACKEND_GPU);
    assert_int_equal(c.allow_insecure_listen, 1);
    assert_string_equal(c.state_dir, "/tmp/x");
    assert_int_equal(c.resume_interrupted, 0);
    assert_int_equal(help, 0);
    assert_int_equal(print, 0);
    unlink(p);
    free(p);

    char *bad[] = {"serve", "--max-nodez", "7", NULL};
    assert_int_equal(config_parse_args(&c, 3, bad, &help, &print, err, sizeof err), LCN_EINVAL);
    assert_string_equal(err, "unknown option '--max-nodez'");
    char *bad2[] = {"serve", "--max-nodes", NULL};
    assert_int_equal(config_parse_args(&c, 2, bad2, &help, &print, err, sizeof err), LCN_EINVAL);
    char *bad3[] = {"serve", "stray", NULL};
    assert_int_equal(config_parse_args(&c, 2, bad3, &help, &print, err, sizeof err), LCN_EINVAL);
    char *bad4[] = {"serve", "--max-nodes", "0", NULL};
    assert_int_equal(config_parse_args(&c, 3, bad4, &help, &print, err, sizeof err), LCN_ERANGE);
    assert_string_equal(err, "--max-nodes: expected an integer in [1, 1000000], got '0'");
    /* --help stops the parse: what follows is not looked at */
    char *h[] = {"serve", "--print-config", "--help", "--max-nodes", "0", NULL};
    assert_int_equal(config_parse_args(&c, 5, h, &help, &print, err, sizeof err), 0);
    assert_int_equal(help, 1);
    assert_int_equal(print, 1);
    config_release(&c);
}

/* config_write output, read back by config_load_file, gives the same
 * config: the file syntax and the writer agree. */
static void test_write_roundtrip(void **state)
{
    (void)state;
    struct lcnd_config c, d;
    config_defaults(&c);
    char err[300];
    assert_int_equal(config_set(&c, config_find("listen"), "[::1]:9000", err, sizeof err), 0);
    assert_int_equal(config_set(&c, config_find("sse_heartbeat_s"), "0.25", err, sizeof err), 0);
    assert_int_equal(config_set(&c, config_find("log_level"), "debug", err, sizeof err), 0);
    FILE *f = tmpfile();
    config_write(f, &c);
    size_t len;
    char *text = read_all(f, &len);
    fclose(f);
    char *p = write_tmp(text);
    config_defaults(&d);
    assert_int_equal(config_load_file(&d, p, err, sizeof err), 0);
    for (size_t i = 0; i < config_option_count; i++) {
        char a[512], b[512];
        opts_format_value(&config_options[i], &c, a, sizeof a);
        opts_format_value(&config_options[i], &d, b, sizeof b);
        assert_string_equal(a, b);
    }
    unlink(p);
    free(p);
    free(text);
    config_release(&c);
    config_release(&d);
}

/* config/lcnd.conf documents every option with its default: it must be
 * byte-identical to what the table generates (regenerate it with
 * `lcnd serve --print-config > config/lcnd.conf`). */
static void test_sample_file(void **state)
{
    (void)state;
    struct lcnd_config c;
    config_defaults(&c);
    FILE *f = tmpfile();
    config_write(f, &c);
    size_t glen;
    char *gen = read_all(f, &glen);
    fclose(f);
    FILE *s = fopen(LCN_SOURCE_DIR "/config/lcnd.conf", "r");
    assert_non_null(s);
    size_t slen;
    char *sample = read_all(s, &slen);
    fclose(s);
    if (glen != slen || memcmp(gen, sample, glen)) {
        fprintf(stderr, "config/lcnd.conf differs from the options table; regenerate it with\n"
                        "  lcnd serve --print-config > config/lcnd.conf\n");
        fail();
    }
    for (size_t i = 0; i < config_option_count; i++) {
        char line[256];
        snprintf(line, sizeof line, "\n%s =", config_options[i].name);
        assert_non_null(strstr(sample, line));
    }
    free(gen);
    free(sample);
    config_release(&c);
}

static void test_help_lists_every_flag(void **state)
{
    (void)state;
    FILE *f = tmpfile();
    config_write_help(f, "lcnd");
    size_t len;
    char *text = read_all(f, &len);
    fclose(f);
    for (size_t i = 0; i < config_option_count; i++) {
        char flag[80], line[90];
        opts_flag_name(&config_options[i], flag, sizeof flag);
        snprintf(line, sizeof line, "\n  %s ", flag);
        assert_non_null(strstr(text, line));
        /* the help's first words (the rest may be wrapped) */
        snprintf(line, sizeof line, "%.30s", config_options[i].help);
        assert_non_null(strstr(text, line));
    }
    free(text);
}

/* The gpus option: "all" names the visible devices, a list its ordinals
 * (repeats allowed: gpus = 0,0 is two stand-in devices); syntax errors,
 * invisible ordinals and too many entries are refused with a message. */
static void test_gpus_list(void **state)
{
    (void)state;
    int d[16];
    char err[200] = "";
    assert_int_equal(config_gpus_parse("all", 3, d, 16, err, sizeof err), 3);
    assert_int_equal(d[0], 0);
    assert_int_equal(d[2], 2);
    assert_int_equal(config_gpus_parse("all", 0, d, 16, err, sizeof err), 0);
    assert_int_equal(config_gpus_parse("all", -1, d, 16, err, sizeof err), 0); /* syntax only */
    assert_int_equal(config_gpus_parse("all", 40, d, 16, err, sizeof err), 16);
    assert_int_equal(config_gpus_parse("0,0", 1, d, 16, err, sizeof err), 2);
    assert_int_equal(d[0], 0);
    assert_int_equal(d[1], 0);
    assert_int_equal(config_gpus_parse(" 2, 0 ,1", 3, d, 16, err, sizeof err), 3);
    assert_int_equal(d[0], 2);
    assert_int_equal(d[1], 0);
    assert_int_equal(d[2], 1);
    assert_int_equal(config_gpus_parse("0,3", -1, d, 16, err, sizeof err), 2);
    assert_int_equal(config_gpus_parse("0,3", 2, d, 16, err, sizeof err), LCN_ENOGPU);
    assert_string_equal(err, "gpus: device 3 is not visible (2 CUDA devices)");
    static const char *bad[] = {"", "x", "0,", ",0", "0,,1", "-1", "1.5", "all,0", "0 1", "al"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (!bad[i][0])
            continue; /* empty means all */
        err[0] = 0;
        assert_int_equal(config_gpus_parse(bad[i], 4, d, 16, err, sizeof err), LCN_EINVAL);
        assert_non_null(strstr(err, "gpus: expected all or a list of device ordinals"));
    }
    assert_int_equal(config_gpus_parse("0,0,0", 1, d, 2, err, sizeof err), LCN_ERANGE);
    assert_string_equal(err, "gpus: more than 2 devices");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_in_range),
        cmocka_unit_test(test_set_errors),
        cmocka_unit_test(test_file),
        cmocka_unit_test(test_args),
        cmocka_unit_test(test_write_roundtrip),
        cmocka_unit_test(test_sample_file),
        cmocka_unit_test(test_help_lists_every_flag),
        cmocka_unit_test(test_gpus_list),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
