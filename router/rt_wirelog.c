/* rt_wirelog.c: the trace-level message lines and the session lookup of JSON log lines. */
#include "rt_wirelog.h"

#include "rt_auth.h"
#include "rt_realm.h"
#include "wamp_codec.h"
#include "wamp_msg.h"

const char *rt_wirelog_realm(const rt_session *s)
{
    if (s->realm) {
        return rt_realm_name(s->realm);
    }
    if (s->auth) {
        return rt_auth_pending_realm(s->auth);
    }
    return s->rt->cur.set ? s->rt->cur.realm : NULL;
}

void rt_wirelog_line(const rt_session *s, bool rx, int type, size_t len)
{
    const char *realm = rt_wirelog_realm(s);
    rt_log_field f[4];
    size_t n = 0;
    f[n++] = (rt_log_field){.key = "dir", .str = rx ? "rx" : "tx"};
    f[n++] = (rt_log_field){.key = "type", .str = type ? wamp_msg_type_name(type) : "undecodable"};
    if (realm) {
        f[n++] = (rt_log_field){.key = "realm", .str = realm};
    }
    f[n++] = (rt_log_field){.key = "bytes", .num = len};
    rt_log_ev(RT_LOG_LEVEL_TRACE, s->id, f, n, "%s %s (%s)", rx ? "rx" : "tx",
              type ? wamp_msg_type_name(type) : "undecodable message", wamp_ser_name(s->ser));
}

bool rt_router_log_session_info(void *ctx, uint64_t session_id, rt_log_session_info *out)
{
    const rt_session *s = rt_router_session_by_id(ctx, session_id);
    if (!s) {
        return false;
    }
    out->realm = rt_wirelog_realm(s);
    out->peer = s->peer.addr;
    return true;
}
