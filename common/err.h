/*
 * err.h - the project's error codes.
 *
 * Every fallible function returns 0 on success and a negative LCN_E* code on
 * failure. The table below is the single source of the enum, the human
 * message (lcn_strerror) and the stable machine code used by the HTTP API
 * (lcn_errcode). Codes are never renumbered; new ones go at the end.
 */
#ifndef LCN_ERR_H
#define LCN_ERR_H

#include <stddef.h>

/* X(name, value, api code, message) */
#define LCN_ERR_MAP(X)                                                                             \
    X(OK, 0, "ok", "success")                                                                      \
    X(NOMEM, -1, "out_of_memory", "out of memory")                                                 \
    X(INVAL, -2, "invalid_argument", "invalid argument")                                           \
    X(RANGE, -3, "out_of_range", "value out of range")                                             \
    X(PARSE, -4, "parse_error", "malformed input")                                                 \
    X(IO, -5, "io_error", "input/output error")                                                    \
    X(NOTFOUND, -6, "not_found", "not found")                                                      \
    X(TOOBIG, -7, "too_large", "input exceeds a configured limit")                                 \
    X(CANCELLED, -8, "cancelled", "cancelled")                                                     \
    X(DEADLINE, -9, "deadline", "deadline reached")                                                \
    X(CORRUPT, -10, "corrupt_state", "internal state failed an invariant check")                   \
    X(INVALID_LAYOUT, -11, "invalid_layout", "layout violates a validity rule")                    \
    X(GPU, -12, "gpu_error", "GPU error")                                                          \
    X(NOGPU, -13, "gpu_unavailable", "no usable GPU")                                              \
    X(UNSUPPORTED, -14, "unsupported", "operation not supported")                                  \
    X(BUSY, -15, "busy", "resource busy")                                                          \
    X(CONFLICT, -16, "conflict", "conflicting state")                                              \
    X(STORE, -17, "store_error", "job store error")                                                \
    X(GPU_STICKY, -18, "gpu_fatal", "unrecoverable GPU error")

enum lcn_err {
#define LCN_ERR_ENUM(name, val, code, msg) LCN_E##name = (val),
    LCN_ERR_MAP(LCN_ERR_ENUM)
#undef LCN_ERR_ENUM
};

/* Returns a static lower-case message for an error code ("unknown error" for
 * values outside the table). */
const char *lcn_strerror(int err);

/* Returns the stable API string code ("invalid_argument", ...) for an error
 * code, or "unknown" for values outside the table. */
const char *lcn_errcode(int err);

/* Writes the printf-formatted message into err, truncated to errlen bytes
 * (nothing when err is NULL or errlen is 0): the message half of the
 * (char *err, size_t errlen) pair that fallible functions fill. */
void lcn_errmsg(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
