/*
 * engine_ops.c - the names of the move operators and of the backends,
 * and the restart rule both engines share (engine.h), apart from the CPU
 * engine so that the wire format (proto/job.c) links without it.
 */
#include "engine.h"

#include <string.h>

#include "err.h"

const char *engine_op_name(enum engine_op op)
{
    static const char *const names[ENGINE_OPS] = {"local", "bary", "median", "global",
                                                  "empty", "pair", "swap",   "cluster"};
    return (unsigned)op < ENGINE_OPS ? names[op] : "?";
}

static const char *const backend_names[LCN_BACKENDS] = {"auto", "gpu", "cpu"};

const char *lcn_backend_name(enum lcn_backend b)
{
    return (unsigned)b < LCN_BACKENDS ? backend_names[b] : "?";
}

int lcn_backend_parse(const char *name, enum lcn_backend *b)
{
    for (int i = 0; i < LCN_BACKENDS; i++)
        if (name && strcmp(name, backend_names[i]) == 0) {
            *b = (enum lcn_backend)i;
            return 0;
        }
    return LCN_EINVAL;
}

int32_t engine_restart_slots(double share, int32_t L)
{
    int32_t k = (int32_t)(share * L + 0.5);
    if (share > 0 && k < 1)
        k = 1;
    return k > L ? L : (k < 0 ? 0 : k);
}
