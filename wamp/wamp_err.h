/* wamp_err.h: the C error values used by every wampscope module.
 * WAMP ERROR/ABORT messages are protocol results, not C errors: a function that answers a peer
 * with ERROR still returns WAMP_OK. No state; usable from any thread. */
#ifndef WAMP_ERR_H
#define WAMP_ERR_H

/* X(name, value, message). Zero is success; every error is negative. */
#define WAMP_ERR_MAP(X)                   \
    X(OK, 0, "success")                   \
    X(EAGAIN, -1, "need more input")      \
    X(ENOMEM, -2, "out of memory")        \
    X(EINVAL, -3, "invalid argument")     \
    X(EPROTO, -4, "protocol violation")   \
    X(ETOOBIG, -5, "size limit exceeded") \
    X(ENOTFOUND, -6, "not found")         \
    X(EEXIST, -7, "already exists")       \
    X(EDENIED, -8, "denied")              \
    X(ECLOSED, -9, "closed")              \
    X(EIO, -10, "I/O error")              \
    X(ERANGE, -11, "value not representable")

typedef enum wamp_err {
#define WAMP_ERR_ENUM(name, value, msg) WAMP_##name = (value),
    WAMP_ERR_MAP(WAMP_ERR_ENUM)
#undef WAMP_ERR_ENUM
} wamp_err;

/* Static string describing err; "unknown error" for a value outside the table. Never NULL. */
const char *wamp_strerror(wamp_err err);

#endif /* WAMP_ERR_H */
