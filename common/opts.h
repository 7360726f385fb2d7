/*
 * opts.h - the one option engine: a table of options drives the command
 * lines of `lcnd serve`, `lcnd solve` and every lcnctl command, lcnd's
 * config file (server/config.c), the engines' "key=value,..." tuning knobs,
 * and the help texts of all of them.
 *
 * A table row names an option, its kind (flag, boolean, integer or number
 * with an inclusive range, string, one of a list of names, or a custom
 * setter), the offset of its field in the struct the table describes, its
 * default and its help. One value core parses and range-checks a value for
 * every front end, so that an option reports the same problem however it
 * is given:
 *
 *   --budget-s: expected a number > 0, got 'x'          (command line)
 *   lcnd.conf:3: max_nodes: expected an integer in ...  (config file)
 *   tuning: t_lo: expected a number in [0, 1000000000] (tuning string)
 *
 * Option names compare with '-' and '_' alike: the config file spells
 * max_nodes what the command line spells --max-nodes.
 *
 * Why not a library: getopt_long(3) parses only a command line, and inih
 * (Debian's libinih-dev) only splits an INI file into section, name and
 * value strings;
 * neither knows kinds, ranges, defaults or help, which are what this table
 * is for, and one table has to drive command lines, the config file, the
 * tuning strings and the help texts alike.
 *
 * Ownership: tables are static and read-only. OPT_STRING stores a pointer
 * into the text parsed (argv lives as long as the process); OPT_STRDUP
 * stores an xstrdup'ed copy that the struct owns: opts_release frees it.
 */
#ifndef LCN_OPTS_H
#define LCN_OPTS_H

#include <stddef.h>
#include <stdio.h>

enum opt_kind {
    OPT_FLAG,   /* int set to 1; takes no value (command line only) */
    OPT_BOOL,   /* int: true|yes|on|1 or false|no|off|0; on the command line the value
                   may be left out, meaning true */
    OPT_INT,    /* int64_t: a decimal integer in [min, max] */
    OPT_INT32,  /* int32_t: a decimal integer in [min, max] */
    OPT_DOUBLE, /* double: a finite decimal number in [min, max] */
    OPT_STRING, /* const char *: borrowed from the text parsed */
    OPT_STRDUP, /* char *: an owned copy (opts_release frees it) */
    OPT_ENUM,   /* int (int32_t fields qualify): the index of the value in choices */
    OPT_CUSTOM, /* set() parses the value into the field */
};

enum opt_flags {
    OPT_GT_MIN = 1 << 0,   /* numeric: the minimum itself is excluded (> min) */
    OPT_ONE_LINE = 1 << 1, /* string: the value must not contain a newline */
};

/* 1 + the offset of an int field that the parser sets to 1 when the option
 * is given (struct opt's seen); 0 in seen means none. */
#define OPT_SEEN(type, field) (offsetof(type, field) + 1)

struct opt {
    const char *name; /* long name without dashes; '-' and '_' compare alike */
    enum opt_kind kind;
    size_t off;          /* offsetof(the described struct, field) */
    double min, max;     /* OPT_INT, OPT_INT32, OPT_DOUBLE: inclusive range; -INFINITY and
                            INFINITY leave a side open; min == max == 0 means no range */
    const char *def;     /* default in the value syntax, applied by opts_defaults; NULL: none
                            (the field keeps what the caller put there) */
    const char *help;    /* one phrase, lower case, no full stop */
    const char *arg;     /* the value's name in the help ("FILE"); NULL: from the kind */
    const char *choices; /* OPT_ENUM: "a|b|c" */
    /* OPT_CUSTOM: parses val into field; returns 0, or LCN_EINVAL / LCN_ERANGE with the
     * problem (no option name) in err */
    int (*set)(const char *val, void *field, char *err, size_t errlen);
    size_t seen;     /* OPT_SEEN(type, field) or 0 */
    char short_name; /* single-letter alias (-o), or 0 */
    unsigned flags;  /* enum opt_flags */
};

/* A row with no range, default or alias (a flag, a string). arg may be NULL. */
#define OPT_ROW(name_, kind_, off_, arg_, help_)                                                   \
    {                                                                                              \
        OPT_ROW_FIELDS(name_, kind_, off_, arg_, help_)                                            \
    }

/* A ranged number with no alias; def and arg may be NULL. */
#define OPT_RANGE(name_, kind_, off_, lo, hi, def_, arg_, help_)                                   \
    {                                                                                              \
        OPT_RANGE_FIELDS(name_, kind_, off_, lo, hi, def_, arg_, help_)                            \
    }

/* The fields of OPT_ROW and OPT_RANGE without the braces, for a row that
 * sets more: {OPT_ROW_FIELDS("output", OPT_STRING, off, "FILE", "..."),
 * .short_name = 'o'}. */
#define OPT_ROW_FIELDS(name_, kind_, off_, arg_, help_)                                            \
    .name = (name_), .kind = (kind_), .off = (off_), .arg = (arg_), .help = (help_)
#define OPT_RANGE_FIELDS(name_, kind_, off_, lo, hi, def_, arg_, help_)                            \
    .name = (name_), .kind = (kind_), .off = (off_), .min = (lo), .max = (hi), .def = (def_),      \
    .arg = (arg_), .help = (help_)

/* Rows of the engines' long knob tables: a ranged number, or a name. */
#define OPT_I32(name_, off_, lo, hi)                                                               \
    {                                                                                              \
        .name = (name_), .kind = OPT_INT32, .off = (off_), .min = (lo), .max = (hi)                \
    }
#define OPT_DBL(name_, off_, lo, hi)                                                               \
    {                                                                                              \
        .name = (name_), .kind = OPT_DOUBLE, .off = (off_), .min = (lo), .max = (hi)               \
    }
#define OPT_CHOICE(name_, off_, choices_)                                                          \
    {                                                                                              \
        .name = (name_), .kind = OPT_ENUM, .off = (off_), .choices = (choices_)                    \
    }

/* A table and the struct its offsets point into. A command line may be
 * parsed against several (a command's options and the ones every command
 * shares). */
struct opts_set {
    const struct opt *opts;
    size_t count;
    void *base;
};

/*
 * The value core. Parses val for option o and stores it in the struct at
 * base (and sets o's seen field). Returns 0, LCN_EINVAL for a value of the
 * wrong form or LCN_ERANGE for a number outside the range, with the
 * problem in err without the option's name: "expected an integer in
 * [1, 10], got '11'". An OPT_FLAG ignores val.
 */
int opts_set_value(const struct opt *o, void *base, const char *val, char *err, size_t errlen);

/* Applies every default of the table (def) to base. A default that its own
 * option rejects is a bug in the table: it aborts through LCN_ASSERT. */
void opts_defaults(const struct opt *opts, size_t count, void *base);

/* Frees the OPT_STRDUP strings of base and sets them to NULL. */
void opts_release(const struct opt *opts, size_t count, void *base);

/* The option named name[0..len) ('-' and '_' alike), or NULL. */
const struct opt *opts_find(const struct opt *opts, size_t count, const char *name, size_t len);

/* Formats the current value of o in base in the value syntax (what
 * opts_set_value reads back to the same value) into buf. */
void opts_format_value(const struct opt *o, const void *base, char *buf, size_t len);

/* Describes the values o accepts ("an integer in [1, 10]", "a number > 0",
 * "one of auto|gpu|cpu", "true or false"); "" for flags, strings and custom
 * options. */
void opts_describe(const struct opt *o, char *buf, size_t len);

/* Writes "--max-nodes" (the command-line spelling of o's name) into buf. */
void opts_flag_name(const struct opt *o, char *buf, size_t len);

/* The help output of opts_parse_argv: it returns this when --help or -h
 * was given (a positive value, so that callers testing `rc < 0` see no
 * error). */
#define OPTS_HELP 1

/* The positional arguments of a command line, and where parsing stopped. */
struct opts_args {
    char **pos;             /* in: room for max_pos positional arguments */
    int max_pos;            /* in: more is the error "unexpected argument 'x'" */
    int stop_at_positional; /* in: stop at the first positional argument (leaving it) */
    int npos;               /* out: positional arguments stored */
    int next;               /* out: index of the first argument not parsed (argc: all) */
};

/*
 * The command-line front end. Parses argv[1..argc) against the sets:
 * "--name value", "--name=value", "-x value" for short names; flags take
 * no value; a boolean takes "--name", "--name=false" or "--name false".
 * Options and positional arguments mix in any order; "--" ends the
 * options; "-" is a positional argument. A repeated option: the last one
 * wins. --help and -h stop the parse and return OPTS_HELP. Returns 0,
 * OPTS_HELP, or LCN_EINVAL / LCN_ERANGE with the reason in err:
 * "unknown option '--x'", "--out needs a value", "--quiet takes no value",
 * "unexpected argument 'x'", "--seed: expected an integer >= 0, got 'x'".
 */
int opts_parse_argv(const struct opts_set *sets, size_t nsets, int argc, char **argv,
                    struct opts_args *args, char *err, size_t errlen);

/*
 * The key=value front end: applies spec ("key=value,key=value"; NULL or ""
 * is nothing) to base. Errors are prefixed with what: "tuning: unknown key
 * 'y'", "tuning: 'n' is not key=value", "tuning: n: expected an integer in
 * [1, 10], got '11'". A repeated key: the last one wins. Returns 0, or
 * LCN_EINVAL (also for a value out of range: the engine contract has one
 * code for bad tuning) at the first bad entry; the entries before it have
 * been applied.
 */
int opts_parse_kv(const struct opt *opts, size_t count, void *base, const char *spec,
                  const char *what, char *err, size_t errlen);

/*
 * Writes one entry per option of the sets, in table order:
 *
 *   -o, --output FILE   the help, wrapped to the line
 *                       (an integer in [1, 10]; default 3)
 *
 * The range and default line is left out where there is neither.
 */
void opts_write_help(FILE *f, const struct opts_set *sets, size_t nsets);

#endif
