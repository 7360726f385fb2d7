/*
 * notify.h - the systemd notification protocol (sd_notify), implemented
 * directly: one datagram per message to the AF_UNIX socket named by
 * $NOTIFY_SOCKET (a path, or an abstract name starting with '@').
 *
 * Without NOTIFY_SOCKET every call is a no-op returning 0. The watchdog
 * interval comes from $WATCHDOG_USEC, honoured only when $WATCHDOG_PID is
 * unset or names this process. Used from the loop thread only.
 *
 * Why not a library: libsystemd's sd_notify(3) sends the same single
 * datagram (its NOTES describe the protocol), but no lcn target links
 * libsystemd (scripts/deps.sh installs libsystemd-dev; nothing uses it).
 * Linking it would make libsystemd0 a run-time dependency of every lcnd,
 * also where no systemd runs (`lcnd solve`, the container of deploy/k8s),
 * for the about 60 lines of notify.c.
 */
#ifndef LCN_SERVER_NOTIFY_H
#define LCN_SERVER_NOTIFY_H

#include <stdint.h>

/* Reads the environment. Returns 1 when notifications will be sent, 0 when
 * NOTIFY_SOCKET is unset, or LCN_EINVAL when it is malformed. */
int notify_init(void);

/* Sends one message ("READY=1", "STATUS=...", ...). Returns 0 (also when
 * disabled) or LCN_EIO. */
int notify_send(const char *msg);

/* Watchdog interval in microseconds, 0 when systemd did not ask for one. */
uint64_t notify_watchdog_usec(void);

void notify_release(void);

#endif
