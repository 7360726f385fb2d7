/*
 * util.h - allocation, assertions and clocks shared by every module.
 *
 * Host out-of-memory is not a recoverable error in lcn: xmalloc and friends
 * print a message and abort. Programmer errors go through LCN_ASSERT, which
 * is active in every build type (it guards invariants whose violation would
 * publish a wrong answer). Client input must never reach an assertion.
 */
#ifndef LCN_UTIL_H
#define LCN_UTIL_H

#include <stddef.h>
#include <stdint.h>

void *xmalloc(size_t n);
void *xcalloc(size_t count, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
/* Grows *p (an array of elem-sized items with capacity *cap) to hold at
 * least need items; capacity at least doubles. */
void xgrow(void **p, size_t elem, size_t *cap, size_t need);
/* Frees the n pointers of ptrs (NULL ones too). */
void lcn_free_each(void *const *ptrs, size_t n);
/* Frees every pointer given, in one statement: the teardown of a struct that
 * owns many separately allocated arrays (C only: a compound literal). */
#define LCN_FREE_ALL(...)                                                                          \
    lcn_free_each((void *const[]){__VA_ARGS__}, sizeof((void *const[]){__VA_ARGS__}) / sizeof(void *))

#ifdef __cplusplus
#define LCN_NORETURN [[noreturn]]
#else
#define LCN_NORETURN _Noreturn
#endif
LCN_NORETURN void lcn_assert_fail(const char *expr, const char *file, int line);
#define LCN_ASSERT(e) ((e) ? (void)0 : lcn_assert_fail(#e, __FILE__, __LINE__))

/* Monotonic clock in nanoseconds (CLOCK_MONOTONIC). */
int64_t lcn_now_ns(void);
/* Wall clock in milliseconds since the Unix epoch (CLOCK_REALTIME). */
int64_t lcn_wall_ms(void);

/* Writes the CPU's model name (the first "model name" of /proc/cpuinfo,
 * for benchmark records) to out. Returns 0, or -1 with out "" when there
 * is none. */
int lcn_cpu_model(char *out, size_t len);

/* Whether s is a decimal number as RFC 8259 writes one: an optional '-', an
 * integer part without leading zeros, then (unless integer is set) an
 * optional fraction and exponent; nothing before or after. The one syntax
 * of numbers in options, the config file and query arguments: no '+', no
 * blanks, no hexadecimal, no ".5", "5." or "007". */
int lcn_number_syntax(const char *s, int integer);

/* Copies the text in (UTF-8, from anyone: a job's name) to out for a
 * terminal or a log line: C0 controls and DEL as \xNN, and as \xNN per
 * byte the characters that act on a terminal or on the order of what
 * follows: C1 controls (U+0080 to U+009F, C2 80 to C2 9F; U+009B is CSI)
 * and the bidirectional embeddings, overrides and isolates (U+202A to
 * U+202E, U+2066 to U+2069), which make a line read other than it is.
 * Other characters stay as they are. At most cap - 1 bytes and a NUL
 * (cap > 0), cut before an escape or a UTF-8 sequence that does not fit,
 * never inside one. Returns out. */
char *lcn_printable(const char *in, char *out, size_t cap);

#define LCN_MIN(a, b)    ((a) < (b) ? (a) : (b))
#define LCN_MAX(a, b)    ((a) > (b) ? (a) : (b))
#define LCN_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* -1, 0 or 1 as the key (a1, a2, a3) sorts before, equal to or after
 * (b1, b2, b3), the first members deciding first: the answer of a qsort
 * comparator for records sorted by three integers. */
static inline int lcn_cmp3(int64_t a1, int64_t a2, int64_t a3, int64_t b1, int64_t b2, int64_t b3)
{
    if (a1 != b1)
        return a1 < b1 ? -1 : 1;
    if (a2 != b2)
        return a2 < b2 ? -1 : 1;
    return (a3 > b3) - (a3 < b3);
}

/*
 * Intrusive doubly linked lists: the elements carry the link fields (named
 * by the prev and next arguments), the list is a pointer to its first
 * element (head), and for a list that also keeps its last element (a
 * queue), a second pointer (tail). The arguments are evaluated more than
 * once.
 */

/* Puts x first in the list whose first element is head. */
#define LCN_DLIST_PUSH(head, x, prev, next)                                                        \
    do {                                                                                           \
        (x)->prev = NULL;                                                                          \
        (x)->next = (head);                                                                        \
        if (head)                                                                                  \
            (head)->prev = (x);                                                                    \
        (head) = (x);                                                                              \
    } while (0)

/* Unlinks x from the list whose first element is head (x's own link fields
 * are left as they were). */
#define LCN_DLIST_UNLINK(head, x, prev, next)                                                      \
    do {                                                                                           \
        if ((x)->prev)                                                                             \
            (x)->prev->next = (x)->next;                                                           \
        else                                                                                       \
            (head) = (x)->next;                                                                    \
        if ((x)->next)                                                                             \
            (x)->next->prev = (x)->prev;                                                           \
    } while (0)

/* Puts x first in the queue (head, tail). */
#define LCN_QUEUE_PUSH_FRONT(head, tail, x, prev, next)                                            \
    do {                                                                                           \
        LCN_DLIST_PUSH(head, x, prev, next);                                                       \
        if (!(tail))                                                                               \
            (tail) = (x);                                                                          \
    } while (0)

/* Puts x last in the queue (head, tail): the mirror image of putting it first. */
#define LCN_QUEUE_PUSH_BACK(head, tail, x, prev, next)                                             \
    LCN_QUEUE_PUSH_FRONT(tail, head, x, next, prev)

/* Unlinks x from the queue (head, tail) (x's own link fields are left as they were). */
#define LCN_QUEUE_UNLINK(head, tail, x, prev, next)                                                \
    do {                                                                                           \
        LCN_DLIST_UNLINK(head, x, prev, next);                                                     \
        if (!(x)->next)                                                                            \
            (tail) = (x)->prev;                                                                    \
    } while (0)

/* Takes x out of the queue (head, tail) when its flag in_queue (an int
 * lvalue) says it is in, and clears x's link fields and the flag. */
#define LCN_QUEUE_REMOVE(head, tail, x, prev, next, in_queue)                                      \
    do {                                                                                           \
        if (in_queue) {                                                                            \
            LCN_QUEUE_UNLINK(head, tail, x, prev, next);                                           \
            (x)->prev = (x)->next = NULL;                                                          \
            (in_queue) = 0;                                                                        \
        }                                                                                          \
    } while (0)

#endif
