#include "server/notify.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "err.h"

static int nfd = -1;
static struct sockaddr_un naddr;
static socklen_t naddr_len;
static uint64_t wd_usec;

int notify_init(void)
{
    notify_release();
    const char *wd = getenv("WATCHDOG_USEC");
    const char *wpid = getenv("WATCHDOG_PID");
    wd_usec = 0;
    if (wd && (!wpid || strtol(wpid, NULL, 10) == (long)getpid()))
        wd_usec = strtoull(wd, NULL, 10);
    const char *s = getenv("NOTIFY_SOCKET");
    if (!s || !*s)
        return 0;
    size_t len = strlen(s);
    if ((s[0] != '/' && s[0] != '@') || len >= sizeof naddr.sun_path)
        return LCN_EINVAL;
    memset(&naddr, 0, sizeof naddr);
    naddr.sun_family = AF_UNIX;
    memcpy(naddr.sun_path, s, len);
    if (s[0] == '@')
        naddr.sun_path[0] = 0; /* abstract namespace */
    naddr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
    nfd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (nfd < 0)
        return LCN_EIO;
    return 1;
}

int notify_send(const char *msg)
{
    if (nfd < 0)
        return 0;
    ssize_t n = sendto(nfd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&naddr, naddr_len);
    return n < 0 ? LCN_EIO : 0;
}

uint64_t notify_watchdog_usec(void)
{
    return nfd < 0 ? 0 : wd_usec;
}

void notify_release(void)
{
    if (nfd >= 0)
        close(nfd);
    nfd = -1;
}
