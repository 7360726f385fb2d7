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

#endif
