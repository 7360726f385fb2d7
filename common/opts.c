#include "opts.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "util.h"

/* OPT_ENUM writes an int; the engines' knob structs declare int32_t. */
_Static_assert(sizeof(int) == sizeof(int32_t), "OPT_ENUM stores an int into int32_t fields");

/* Shortest decimal that reads back to v exactly; whole numbers without a
 * fraction or exponent. */
static void fmt_double(char *buf, size_t len, double v)
{
    if (v == (double)(long long)v && v > -1e15 && v < 1e15) {
        snprintf(buf, len, "%lld", (long long)v);
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, len, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            return;
    }
}

/* The effective range of a numeric option: the table's, narrowed to what
 * the field can hold. */
static void bounds(const struct opt *o, double *lo, double *hi)
{
    *lo = o->min;
    *hi = o->max;
    if (o->min == 0 && o->max == 0) {
        *lo = -INFINITY;
        *hi = INFINITY;
    }
    if (o->kind == OPT_INT32) {
        *lo = fmax(*lo, INT32_MIN);
        *hi = fmin(*hi, INT32_MAX);
    }
}

/* Whether the table leaves a side of the range open (an int64 bound at the
 * type's end is no bound either). */
static int open_side(const struct opt *o, double b)
{
    return (o->min == 0 && o->max == 0) || isinf(b) || (o->kind == OPT_INT && fabs(b) >= 0x1p63);
}

void opts_describe(const struct opt *o, char *buf, size_t len)
{
    buf[0] = 0;
    switch (o->kind) {
    case OPT_BOOL:
        snprintf(buf, len, "true or false");
        return;
    case OPT_ENUM:
        snprintf(buf, len, "one of %s", o->choices);
        return;
    case OPT_INT:
    case OPT_INT32:
    case OPT_DOUBLE: {
        const char *what = o->kind == OPT_DOUBLE ? "a number" : "an integer";
        double lo, hi;
        bounds(o, &lo, &hi);
        char a[32], b[32];
        fmt_double(a, sizeof a, lo);
        fmt_double(b, sizeof b, hi);
        int gt = (o->flags & OPT_GT_MIN) != 0;
        int has_lo = !open_side(o, o->min), has_hi = !open_side(o, o->max);
        if (has_lo && has_hi)
            snprintf(buf, len, "%s in %c%s, %s]", what, gt ? '(' : '[', a, b);
        else if (has_lo)
            snprintf(buf, len, "%s %s %s", what, gt ? ">" : ">=", a);
        else if (has_hi)
            snprintf(buf, len, "%s <= %s", what, b);
        else
            snprintf(buf, len, "%s", what);
        return;
    }
    case OPT_FLAG:
    case OPT_STRING:
    case OPT_STRDUP:
    case OPT_CUSTOM:
        return;
    }
}

/* "expected an integer in [1, 10], got 'x'" */
static int bad_value(const struct opt *o, const char *val, int rc, char *err, size_t errlen)
{
    char what[96];
    opts_describe(o, what, sizeof what);
    snprintf(err, errlen, "expected %s, got '%s'", what, val);
    return rc;
}

static int enum_index(const char *choices, const char *v)
{
    size_t vl = strlen(v);
    const char *p = choices;
    for (int i = 0; p; i++) {
        const char *bar = strchr(p, '|');
        size_t n = bar ? (size_t)(bar - p) : strlen(p);
        if (n == vl && strncmp(p, v, n) == 0)
            return i;
        p = bar ? bar + 1 : NULL;
    }
    return -1;
}

static int bool_word(const char *v)
{
    static const char *const yes[] = {"true", "yes", "on", "1"};
    static const char *const no[] = {"false", "no", "off", "0"};
    for (size_t i = 0; i < LCN_ARRAY_LEN(yes); i++) {
        if (strcmp(v, yes[i]) == 0)
            return 1;
        if (strcmp(v, no[i]) == 0)
            return 0;
    }
    return -1;
}

static int set_number(const struct opt *o, void *field, const char *val, char *err, size_t errlen)
{
    double x;
    errno = 0;
    if (o->kind == OPT_DOUBLE) {
        x = strtod(val, NULL);
        if (!lcn_number_syntax(val, 0) || errno == ERANGE || !isfinite(x))
            return bad_value(o, val, LCN_EINVAL, err, errlen);
    } else {
        long long v = strtoll(val, NULL, 10);
        if (!lcn_number_syntax(val, 1) || errno == ERANGE)
            return bad_value(o, val, LCN_EINVAL, err, errlen);
        x = (double)v;
        double lo, hi;
        bounds(o, &lo, &hi);
        /* compare as integers where a double would round (int64 near its ends) */
        if ((lo > -0x1p63 && v < (long long)lo) || (hi < 0x1p63 && v > (long long)hi) ||
            ((o->flags & OPT_GT_MIN) && x <= lo))
            return bad_value(o, val, LCN_ERANGE, err, errlen);
        if (o->kind == OPT_INT)
            *(int64_t *)field = v;
        else
            *(int32_t *)field = (int32_t)v;
        return 0;
    }
    double lo, hi;
    bounds(o, &lo, &hi);
    if (x < lo || x > hi || ((o->flags & OPT_GT_MIN) && x <= lo))
        return bad_value(o, val, LCN_ERANGE, err, errlen);
    *(double *)field = x;
    return 0;
}

int opts_set_value(const struct opt *o, void *base, const char *val, char *err, size_t errlen)
{
    void *field = (char *)base + o->off;
    int rc = 0;
    switch (o->kind) {
    case OPT_FLAG:
        *(int *)field = 1;
        break;
    case OPT_BOOL: {
        int b = bool_word(val);
        if (b < 0)
            return bad_value(o, val, LCN_EINVAL, err, errlen);
        *(int *)field = b;
        break;
    }
    case OPT_INT:
    case OPT_INT32:
    case OPT_DOUBLE:
        rc = set_number(o, field, val, err, errlen);
        break;
    case OPT_STRING:
    case OPT_STRDUP:
        if ((o->flags & OPT_ONE_LINE) && strchr(val, '\n')) {
            snprintf(err, errlen, "expected one line, got a newline");
            return LCN_EINVAL;
        }
        if (o->kind == OPT_STRING) {
            *(const char **)field = val;
        } else {
            free(*(char **)field);
            *(char **)field = xstrdup(val);
        }
        break;
    case OPT_ENUM: {
        int i = enum_index(o->choices, val);
        if (i < 0)
            return bad_value(o, val, LCN_EINVAL, err, errlen);
        *(int *)field = i;
        break;
    }
    case OPT_CUSTOM:
        rc = o->set(val, field, err, errlen);
        break;
    }
    if (!rc && o->seen)
        *(int *)((char *)base + o->seen - 1) = 1;
    return rc;
}

void opts_defaults(const struct opt *opts, size_t count, void *base)
{
    for (size_t i = 0; i < count; i++) {
        if (!opts[i].def)
            continue;
        char err[200];
        int rc = opts_set_value(&opts[i], base, opts[i].def, err, sizeof err);
        if (rc)
            fprintf(stderr, "fatal: option %s: bad default: %s\n", opts[i].name, err);
        LCN_ASSERT(rc == 0);
        /* a default is not "given" */
        if (opts[i].seen)
            *(int *)((char *)base + opts[i].seen - 1) = 0;
    }
}

void opts_release(const struct opt *opts, size_t count, void *base)
{
    for (size_t i = 0; i < count; i++) {
        if (opts[i].kind != OPT_STRDUP)
            continue;
        char **slot = (char **)((char *)base + opts[i].off);
        free(*slot);
        *slot = NULL;
    }
}

static int same_name(const char *table_name, const char *name, size_t len)
{
    size_t i = 0;
    for (; i < len && table_name[i]; i++) {
        char a = table_name[i] == '-' ? '_' : table_name[i];
        char b = name[i] == '-' ? '_' : name[i];
        if (a != b)
            return 0;
    }
    return i == len && table_name[i] == 0;
}

const struct opt *opts_find(const struct opt *opts, size_t count, const char *name, size_t len)
{
    for (size_t i = 0; i < count; i++)
        if (same_name(opts[i].name, name, len))
            return &opts[i];
    return NULL;
}

void opts_format_value(const struct opt *o, const void *base, char *buf, size_t len)
{
    const void *field = (const char *)base + o->off;
    switch (o->kind) {
    case OPT_FLAG:
    case OPT_BOOL:
        snprintf(buf, len, "%s", *(const int *)field ? "true" : "false");
        return;
    case OPT_INT:
        snprintf(buf, len, "%lld", (long long)*(const int64_t *)field);
        return;
    case OPT_INT32:
        snprintf(buf, len, "%d", (int)*(const int32_t *)field);
        return;
    case OPT_DOUBLE:
        fmt_double(buf, len, *(const double *)field);
        return;
    case OPT_STRING:
    case OPT_STRDUP: {
        const char *s = *(const char *const *)field;
        snprintf(buf, len, "%s", s ? s : "");
        return;
    }
    case OPT_ENUM: {
        int v = *(const int *)field;
        const char *p = o->choices;
        for (int i = 0; p && i < v; i++) {
            p = strchr(p, '|');
            p = p ? p + 1 : NULL;
        }
        size_t n = p ? strcspn(p, "|") : 1;
        snprintf(buf, len, "%.*s", (int)n, p ? p : "?");
        return;
    }
    case OPT_CUSTOM:
        snprintf(buf, len, "?");
        return;
    }
}

void opts_flag_name(const struct opt *o, char *buf, size_t len)
{
    size_t j = 0;
    if (len < 3) {
        if (len)
            buf[0] = 0;
        return;
    }
    buf[j++] = '-';
    buf[j++] = '-';
    for (size_t i = 0; o->name[i] && j + 1 < len; i++)
        buf[j++] = o->name[i] == '_' ? '-' : o->name[i];
    buf[j] = 0;
}

/* ---- the command-line front end ----------------------------------------- */

static const struct opt *find_in_sets(const struct opts_set *sets, size_t nsets, const char *name,
                                      size_t len, char short_name, void **base)
{
    for (size_t s = 0; s < nsets; s++) {
        const struct opt *o = NULL;
        if (short_name) {
            for (size_t i = 0; i < sets[s].count && !o; i++)
                if (sets[s].opts[i].short_name == short_name)
                    o = &sets[s].opts[i];
        } else {
            o = opts_find(sets[s].opts, sets[s].count, name, len);
        }
        if (o) {
            *base = sets[s].base;
            return o;
        }
    }
    return NULL;
}

int opts_parse_argv(const struct opts_set *sets, size_t nsets, int argc, char **argv,
                    struct opts_args *args, char *err, size_t errlen)
{
    int only_pos = 0;
    args->npos = 0;
    args->next = argc;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (only_pos || a[0] != '-' || strcmp(a, "-") == 0) {
            if (args->stop_at_positional) {
                args->next = i;
                return 0;
            }
            if (args->npos >= args->max_pos) {
                snprintf(err, errlen, "unexpected argument '%s'", a);
                return LCN_EINVAL;
            }
            args->pos[args->npos++] = argv[i];
            continue;
        }
        if (strcmp(a, "--") == 0) {
            only_pos = 1;
            continue;
        }
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            args->next = i + 1;
            return OPTS_HELP;
        }
        const struct opt *o;
        const char *val = NULL;
        void *base = NULL;
        char flag[80];
        if (a[1] == '-') {
            const char *name = a + 2, *eq = strchr(name, '=');
            size_t len = eq ? (size_t)(eq - name) : strlen(name);
            o = find_in_sets(sets, nsets, name, len, 0, &base);
            if (!o) {
                snprintf(err, errlen, "unknown option '--%.*s'", (int)len, name);
                return LCN_EINVAL;
            }
            if (eq)
                val = eq + 1;
            opts_flag_name(o, flag, sizeof flag);
        } else {
            o = a[2] ? NULL : find_in_sets(sets, nsets, NULL, 0, a[1], &base);
            if (!o) {
                snprintf(err, errlen, "unknown option '%s'", a);
                return LCN_EINVAL;
            }
            snprintf(flag, sizeof flag, "%s", a);
        }
        if (o->kind == OPT_FLAG) {
            if (val) {
                snprintf(err, errlen, "%s takes no value", flag);
                return LCN_EINVAL;
            }
            val = "";
        } else if (!val && o->kind == OPT_BOOL) {
            val = i + 1 < argc && bool_word(argv[i + 1]) >= 0 ? argv[++i] : "true";
        } else if (!val) {
            if (i + 1 >= argc) {
                snprintf(err, errlen, "%s needs a value", flag);
                return LCN_EINVAL;
            }
            val = argv[++i];
        }
        char why[256];
        int rc = opts_set_value(o, base, val, why, sizeof why);
        if (rc) {
            snprintf(err, errlen, "%s: %s", flag, why);
            return rc;
        }
    }
    return 0;
}

/* ---- the key=value front end --------------------------------------------- */

int opts_parse_kv(const struct opt *opts, size_t count, void *base, const char *spec,
                  const char *what, char *err, size_t errlen)
{
    if (!spec || !*spec)
        return 0;
    char *copy = xstrdup(spec), *save = NULL;
    int rc = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok && !rc; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq) {
            snprintf(err, errlen, "%s: '%s' is not key=value", what, tok);
            rc = LCN_EINVAL;
            break;
        }
        *eq = 0;
        const struct opt *o = opts_find(opts, count, tok, strlen(tok));
        if (!o) {
            snprintf(err, errlen, "%s: unknown key '%s'", what, tok);
            rc = LCN_EINVAL;
            break;
        }
        char why[256];
        if (opts_set_value(o, base, eq + 1, why, sizeof why)) {
            snprintf(err, errlen, "%s: %s: %s", what, tok, why);
            rc = LCN_EINVAL; /* the engine contract's one code for bad tuning */
        }
    }
    free(copy);
    return rc;
}

/* ---- help ----------------------------------------------------------------- */

enum { HELP_INDENT = 24, HELP_WIDTH = 79 };

/* Writes text word-wrapped from column col to HELP_WIDTH, continuation
 * lines indented HELP_INDENT; ends the line. */
static void wrap(FILE *f, int col, const char *text)
{
    const char *p = text;
    while (*p) {
        size_t w = strcspn(p, " ");
        if (col > HELP_INDENT && col + 1 + (int)w > HELP_WIDTH) {
            fprintf(f, "\n%*s", HELP_INDENT, "");
            col = HELP_INDENT;
        } else if (col > HELP_INDENT) {
            fputc(' ', f);
            col++;
        }
        fprintf(f, "%.*s", (int)w, p);
        col += (int)w;
        p += w;
        while (*p == ' ')
            p++;
    }
    fputc('\n', f);
}

static const char *arg_name(const struct opt *o)
{
    if (o->arg)
        return o->arg;
    switch (o->kind) {
    case OPT_FLAG:
        return NULL;
    case OPT_BOOL:
        return "[BOOL]";
    case OPT_INT:
    case OPT_INT32:
        return "N";
    case OPT_DOUBLE:
        return "X";
    case OPT_ENUM:
        return o->choices;
    case OPT_STRING:
    case OPT_STRDUP:
    case OPT_CUSTOM:
        return "VALUE";
    }
    return NULL;
}

void opts_write_help(FILE *f, const struct opts_set *sets, size_t nsets)
{
    for (size_t s = 0; s < nsets; s++) {
        for (size_t i = 0; i < sets[s].count; i++) {
            const struct opt *o = &sets[s].opts[i];
            char flag[80], head[200], range[128], tail[256];
            opts_flag_name(o, flag, sizeof flag);
            const char *arg = arg_name(o);
            int col = o->short_name ? snprintf(head, sizeof head, "  -%c, %s", o->short_name, flag)
                                    : snprintf(head, sizeof head, "  %s", flag);
            if (arg)
                col += snprintf(head + col, sizeof head - (size_t)col, " %s", arg);
            fputs(head, f);
            if (col + 2 > HELP_INDENT)
                fprintf(f, "\n%*s", HELP_INDENT, "");
            else
                fprintf(f, "%*s", HELP_INDENT - col, "");
            wrap(f, HELP_INDENT, o->help);
            opts_describe(o, range, sizeof range);
            tail[0] = 0;
            if (range[0] && o->def)
                snprintf(tail, sizeof tail, "(%s; default %s)", range, *o->def ? o->def : "empty");
            else if (range[0])
                snprintf(tail, sizeof tail, "(%s)", range);
            else if (o->def && *o->def)
                snprintf(tail, sizeof tail, "(default %s)", o->def);
            if (tail[0]) {
                fprintf(f, "%*s", HELP_INDENT, "");
                wrap(f, HELP_INDENT, tail);
            }
        }
    }
    fprintf(f, "  -h, --help%*sthis text\n", HELP_INDENT - 12, "");
}
