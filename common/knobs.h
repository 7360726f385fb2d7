/*
 * knobs.h - "key=value,key=value" engine knobs parsed against a table.
 *
 * Each engine describes its knobs as one table (name, type, offset into its
 * knob struct, range); this module parses a tuning string into that struct.
 * Numeric knobs are range-checked (integers must be whole); KNOB_CUSTOM
 * knobs hand their text to the entry's own parser.
 */
#ifndef LCN_KNOBS_H
#define LCN_KNOBS_H

#include <stddef.h>

enum knob_type { KNOB_INT, KNOB_DOUBLE, KNOB_CUSTOM };

struct knob {
    const char *name;
    enum knob_type type;
    size_t off;    /* offset of the int32_t / double / custom field */
    double lo, hi; /* inclusive range of numeric knobs */
    /* KNOB_CUSTOM: parses val into field; returns 0 or LCN_EINVAL with a message */
    int (*parse)(const char *val, void *field, char *err, size_t errlen);
};

/*
 * Applies spec (NULL or "" = nothing) to the struct at base. Returns 0, or
 * LCN_EINVAL with a lower-case message in err ("tuning: unknown key 'x'",
 * "tuning: t_lo: bad value 'abc'") at the first bad entry; entries before it
 * have been applied.
 */
int knobs_parse(const struct knob *table, size_t count, void *base, const char *spec, char *err,
                size_t errlen);

#endif
