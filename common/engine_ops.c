/*
 * engine_ops.c - the names of the move operators (engine.h), apart from
 * the CPU engine so that the wire format (proto/job.c) links without it.
 */
#include "engine.h"

const char *engine_op_name(enum engine_op op)
{
    static const char *const names[ENGINE_OPS] = {"local", "bary", "median", "global",
                                                  "empty", "pair", "swap",   "cluster"};
    return (unsigned)op < ENGINE_OPS ? names[op] : "?";
}
