/*
 * stop.h - when a long computation must give up: a deadline and a cancel
 * flag, polled from inside the loops of every phase of a run (start
 * layouts, repair, crossing counts, the oracle, replica states), so that a
 * job ends within a few milliseconds of its deadline or of a DELETE
 * whatever the graph's size (issue 14).
 *
 * A phase keeps a work counter and calls lcn_stop_tick with the units of
 * work it just did (pair tests, nodes moved, ...). The clock is read once
 * per LCN_STOP_EVERY units, about 0.05-0.5 ms of work on the slowest unit
 * in use (a relocation attempt of the repair), so the check costs nothing
 * measurable and a stop is seen well within a millisecond or two. A NULL
 * stop never fires: every function that takes one behaves exactly as
 * before when given NULL.
 */
#ifndef LCN_STOP_H
#define LCN_STOP_H

#include <stdint.h>

#include "engine.h"
#include "err.h"
#include "util.h"

struct lcn_stop {
    int64_t deadline_ns;          /* absolute lcn_now_ns(); 0 = none */
    const LCN_ATOMIC_INT *cancel; /* nonzero = stop; NULL = none */
    int64_t cancel_from_ns;       /* the flag counts only from then on; 0 = always */
};

#define LCN_STOP_EVERY 4096

/* LCN_ECANCELLED when the flag is set, LCN_EDEADLINE when the deadline has
 * passed, else 0. Reads the clock. */
static inline int lcn_stop_check(const struct lcn_stop *s)
{
    if (!s)
        return 0;
#ifdef __cplusplus
    int flag = s->cancel && __atomic_load_n(s->cancel, __ATOMIC_RELAXED);
#else
    int flag = s->cancel && atomic_load_explicit(s->cancel, memory_order_relaxed);
#endif
    if (!flag && !s->deadline_ns)
        return 0;
    int64_t now = lcn_now_ns();
    if (flag && now >= s->cancel_from_ns)
        return LCN_ECANCELLED;
    if (s->deadline_ns && now >= s->deadline_ns)
        return LCN_EDEADLINE;
    return 0;
}

/* Adds units to *work and checks the stop once *work reaches
 * LCN_STOP_EVERY. Returns what lcn_stop_check returns, 0 in between. */
static inline int lcn_stop_tick(const struct lcn_stop *s, int64_t *work, int64_t units)
{
    if (!s)
        return 0;
    *work += units;
    if (*work < LCN_STOP_EVERY)
        return 0;
    *work = 0;
    return lcn_stop_check(s);
}

/*
 * The engines' shared rules (CPU and GPU), in terms of t_val, the time one
 * oracle pass took on the run's start.
 *
 * The hard stop of every phase: the deadline, and the cancel flag counted
 * from LCN_CANCEL_GRACE_NS after the run began (a cancel in the first
 * moments still lets a start that cheap be validated and returned).
 */
#define LCN_CANCEL_GRACE_NS 40000000LL

static inline struct lcn_stop lcn_stop_run(const struct engine_params *p, int64_t began_ns)
{
    struct lcn_stop s = {p->deadline_ns, p->cancel, began_ns + LCN_CANCEL_GRACE_NS};
    return s;
}

static inline int64_t lcn_caller_passes(const struct engine_params *p)
{
    return p->caller_validations > 0 ? p->caller_validations : 0;
}

/* What the search keeps before the deadline: 1.5 t_val for its own oracle
 * pass and each of the caller's, plus 2 ms. */
static inline int64_t lcn_final_reserve_ns(const struct engine_params *p, int64_t t_val)
{
    return (1 + lcn_caller_passes(p)) * (3 * t_val / 2) + 2000000;
}

/* The limit of the engine's own final oracle pass: the deadline less the
 * time kept for the caller's passes, and past it a little grace (workers may
 * leave their sweeps late): at most 50 ms, enough for the oracle on any
 * graph it takes <= 20 ms on. No cancel flag: the run has stopped. */
static inline struct lcn_stop lcn_final_stop(const struct engine_params *p, int64_t t_val)
{
    int64_t caller = lcn_caller_passes(p) * (3 * t_val / 2);
    int64_t grace = 2 * t_val + 5000000 < 50000000 ? 2 * t_val + 5000000 : 50000000;
    int64_t soon = lcn_now_ns() + grace;
    struct lcn_stop s = {p->deadline_ns - caller > soon ? p->deadline_ns - caller : soon, NULL, 0};
    return s;
}

/* An oracle pass this quick is not worth planning around. */
#define LCN_ORACLE_CHEAP_NS 20000000LL

/* A cancelled run validates its newest best only when every oracle pass
 * left (its own and the caller's) takes under LCN_ORACLE_CHEAP_NS together. */
static inline int lcn_final_cheap(const struct engine_params *p, int64_t t_val)
{
    return t_val * (1 + lcn_caller_passes(p)) < LCN_ORACLE_CHEAP_NS;
}

#endif
