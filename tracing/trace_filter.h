/* trace_filter.h: a trace's filter, compiled from its trace_options, and the per-message context
 * it is matched against.
 * Semantics (../mgmt/README.md "trace_options"): AND across keys, OR within one list; an absent key
 * does not restrict. Messages of sessions on the management realm are excluded unless the
 * trace's "realms" names that realm (no self-tracing by default).
 * trace_filter_match() allocates nothing and touches no JSON: a bitmask test for direction and
 * message type, then small arrays of integers and strings.
 * Ownership: a filter owns copies of everything it needs (the options may be freed after
 * trace_filter_new()). Service thread only. */
#ifndef TRACE_FILTER_H
#define TRACE_FILTER_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "trace_options.h"
#include "trace_record.h"

/* What the router knows about one message, filled per message (plain data, all borrowed for
 * the duration of the call). */
typedef struct trace_ctx {
    trace_dir direction;
    int msg_type;        /* WAMP code; 0 when a received message could not be decoded */
    uint64_t session_id; /* the peer session (receiver of tx, sender of rx) */
    /* The realm the session joined; before the join (HELLO, CHALLENGE, AUTHENTICATE, ABORT) the
     * realm the HELLO asked for. NULL if unknown. */
    const char *realm;
    const char *authid;   /* NULL if unknown */
    const char *authrole; /* NULL if unknown */
    /* The action URI: topic, procedure, or the URI of the action the message belongs to (an
     * EVENT's topic, a RESULT's procedure). NULL if the message has none. */
    const char *uri;
    /* The message's correlation (TRACE_UUID_LEN bytes; NULL if none) and whether it is the
     * received anchor that starts the action. The filter does not read them: action-level
     * traces (trace_matches()) do, to evaluate the filter on anchors only and keep the other
     * messages of the actions they track. */
    const uint8_t *correlation;
    bool correlation_is_anchor;
} trace_ctx;

typedef struct trace_filter trace_filter;

/* Compiles o. mgmt_realm is the management realm's name (NULL: none): its sessions are excluded
 * unless o->realms names it. Everything is copied. NULL on allocation failure. */
trace_filter *trace_filter_new(const trace_options *o, const char *mgmt_realm);
/* NULL-safe. */
void trace_filter_free(trace_filter *f);
/* true if the message described by c passes every key of f. A key that restricts on a field
 * the context lacks (NULL realm, authid, authrole or uri) does not match. Never allocates. */
bool trace_filter_match(const trace_filter *f, const trace_ctx *c);

/* true if realm is the management realm mgmt (either may be NULL: then false). The first
 * characters first: most messages are not on the management realm, and this runs for every
 * message while a trace runs (the filter's exclusion, and the hub's for traces that keep all). */
static inline bool trace_is_mgmt_realm(const char *mgmt, const char *realm)
{
    return mgmt && realm && mgmt[0] == realm[0] && strcmp(mgmt, realm) == 0;
}

/* true if f restricts nothing but the management realm's exclusion: it keeps every direction,
 * every message type and every session outside the management realm given at creation. The
 * hub tests such a trace inline (trace_hub_match()), without a call per message. */
bool trace_filter_keeps_all(const trace_filter *f);

/* true if a trace of f keeps connection records (TRACE_MSG_CONNECTION, which have no realm,
 * URI, peer or direction): when f restricts nothing (trace_filter_keeps_all()), or when its
 * msg_types names "Connection" and it restricts no realm, URI or peer session. */
bool trace_filter_keeps_connections(const trace_filter *f);

/* true if f looks at the peer session (session_ids, authids or authroles): one message sent to
 * several sessions may then match for some of them only. */
bool trace_filter_reads_peer(const trace_filter *f);

#endif /* TRACE_FILTER_H */
