#include "knobs.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "util.h"

static int apply(const struct knob *kb, void *base, const char *key, const char *val, char *err,
                 size_t errlen)
{
    void *field = (char *)base + kb->off;
    if (kb->type == KNOB_CUSTOM)
        return kb->parse(val, field, err, errlen);
    char *end = NULL;
    double x = strtod(val, &end);
    if (end == val || *end || !(x >= kb->lo && x <= kb->hi) ||
        (kb->type == KNOB_INT && x != floor(x))) {
        snprintf(err, errlen, "tuning: %s: bad value '%s' (%s in [%g, %g])", key, val,
                 kb->type == KNOB_INT ? "an integer" : "a number", kb->lo, kb->hi);
        return LCN_EINVAL;
    }
    if (kb->type == KNOB_INT)
        *(int32_t *)field = (int32_t)x;
    else
        *(double *)field = x;
    return 0;
}

int knobs_parse(const struct knob *table, size_t count, void *base, const char *spec, char *err,
                size_t errlen)
{
    if (!spec || !*spec)
        return 0;
    char *copy = xstrdup(spec), *save = NULL;
    int rc = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok && !rc; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq) {
            snprintf(err, errlen, "tuning: '%s' is not key=value", tok);
            rc = LCN_EINVAL;
            break;
        }
        *eq = 0;
        const struct knob *kb = NULL;
        for (size_t i = 0; i < count && !kb; i++)
            if (strcmp(table[i].name, tok) == 0)
                kb = &table[i];
        if (!kb) {
            snprintf(err, errlen, "tuning: unknown key '%s'", tok);
            rc = LCN_EINVAL;
            break;
        }
        rc = apply(kb, base, tok, eq + 1, err, errlen);
    }
    free(copy);
    return rc;
}
