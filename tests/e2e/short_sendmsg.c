/* short_sendmsg.c: an LD_PRELOAD shim for e2e tests that makes every sendmsg() of the process
 * take at most RT_SHORT_SENDMSG octets (environment; unset or 0: no limit), as a socket whose
 * buffer is nearly full would. On loopback the kernel's send buffer (up to 4 MiB) takes whole
 * what the router writes at once, so the paths that go on with a frame the socket took in part
 * are otherwise never reached. Only sendmsg() is capped: lws' own writes are left alone. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#define SHORT_IOV_MAX 64

ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
    static ssize_t (*real)(int, const struct msghdr *, int);
    static size_t cap;
    static int init;
    if (!init) {
        real = (ssize_t(*)(int, const struct msghdr *, int))dlsym(RTLD_NEXT, "sendmsg");
        const char *e = getenv("RT_SHORT_SENDMSG");
        cap = e ? (size_t)strtoul(e, NULL, 10) : 0;
        init = 1;
    }
    if (cap == 0 || msg->msg_iovlen > SHORT_IOV_MAX) {
        return real(fd, msg, flags);
    }
    struct iovec iov[SHORT_IOV_MAX];
    struct msghdr m = *msg;
    size_t left = cap;
    size_t n = 0;
    for (size_t i = 0; i < msg->msg_iovlen && left > 0; i++) {
        iov[n] = msg->msg_iov[i];
        if (iov[n].iov_len > left) {
            iov[n].iov_len = left;
        }
        left -= iov[n].iov_len;
        n++;
    }
    m.msg_iov = iov;
    m.msg_iovlen = n;
    return real(fd, &m, flags);
}
