/* trace_wire_corr.h: correlation for the wire capture's messages (trace_wire.h), derived when
 * the capture is read: which messages belong to one action (a CALL, its INVOCATION, YIELD and
 * RESULT; a PUBLISH, its EVENTs and PUBLISHED; a SUBSCRIBE and its SUBSCRIBED; ...), as a trace's
 * correlation says it (mgmt/README.md, "Correlation"), from the messages' own ids and from two
 * facts the router notes as it routes: a call's INVOCATION id and a publication's id.
 *
 * Fed in wire order (the order of trace_wire_decode_facts()): each message with
 * trace_wire_corr_of(), each routing fact with trace_wire_corr_call() or
 * trace_wire_corr_published() where the walk meets it. The router notes a fact while it handles
 * the request, after the read that brought the request and before the write that carries what
 * it caused, so a walk meets request, fact and answers in that order.
 *
 * Actions are keyed by what names them on the wire: a request by its connection and request id,
 * an invocation by its callee's connection and INVOCATION id, a publication by its id. An
 * action's UUID is derived from the key of its anchor (its request), so reads of the same
 * capture give the same UUIDs; an action whose request the capture no longer holds gets it from
 * the fact. Each action keeps its request's URI (one string shared by the consecutive requests of
 * one URI). Memory: one entry per action key met in a walk (trace_wire_corr_bound() bounds it).
 * Service thread only. */
#ifndef TRACE_WIRE_CORR_H
#define TRACE_WIRE_CORR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace_record.h"
#include "wamp_msg.h"

typedef struct trace_wire_corr trace_wire_corr;

/* NULL without memory. Unbounded until trace_wire_corr_bound(). */
trace_wire_corr *trace_wire_corr_new(void);
/* Keeps at most about 2 * max actions (max > 0), for a reader that follows a capture for good
 * (trace_wire_reader): when max actions are newer than the older generation, that generation is
 * forgotten. An answer whose request was forgotten gets the UUID of its key alone (and no URI),
 * as one whose request the walk did not meet. */
void trace_wire_corr_bound(trace_wire_corr *c, size_t max);
void trace_wire_corr_free(trace_wire_corr *c); /* NULL-safe */

/* Facts: caller_conn's CALL call_id went to callee_conn as INVOCATION inv_id (0: a connection
 * the capture does not hold); conn's PUBLISH request_id got publication_id. false without
 * memory (the fact is then not known). */
bool trace_wire_corr_call(trace_wire_corr *c, uint64_t caller_conn, uint64_t call_id,
                          uint64_t callee_conn, uint64_t inv_id);
bool trace_wire_corr_published(trace_wire_corr *c, uint64_t conn, uint64_t request_id,
                               uint64_t publication_id);

/* Facts of a call that crosses nodes, whose action's UUID the caller's node chose and sent
 * along: conn's CALL request id (met already) has uuid; on the callee's node, its INVOCATION
 * inv_id to callee_conn has uuid, and procedure (NUL-terminated; NULL: none) as its URI. false
 * when there is no such request, or without memory. */
bool trace_wire_corr_rename(trace_wire_corr *c, uint64_t conn, uint64_t id,
                            const uint8_t uuid[TRACE_UUID_LEN]);
bool trace_wire_corr_invoked(trace_wire_corr *c, uint64_t callee_conn, uint64_t inv_id,
                             const uint8_t uuid[TRACE_UUID_LEN], const char *procedure);
/* On a subscriber's node, publication_id of another node has uuid and topic (NULL: none). */
bool trace_wire_corr_published_as(trace_wire_corr *c, uint64_t publication_id,
                                  const uint8_t uuid[TRACE_UUID_LEN], const char *topic);

/* The correlation of message m (seq), decoded from connection conn in direction dir (TRACE_RX:
 * sent by the client, TRACE_TX: by the router): its action's UUID in uuid and the flags
 * (TRACE_CORR_HAS, _ANCHOR: it opens the action, _LAST: it completes it), or 0 when it belongs to
 * no action (a HELLO, a GOODBYE, an EVENT whose publication the walk did not meet) or without
 * memory. A request's UUID comes from its connection, request id and seq (a request id a client
 * uses again is another action); an answer whose request the walk did not meet gets one from its
 * connection and request id alone. */
uint8_t trace_wire_corr_of(trace_wire_corr *c, uint64_t seq, uint64_t conn, uint8_t dir,
                           const wamp_msg *m, uint8_t uuid[TRACE_UUID_LEN]);

/* The URI of the action of the message trace_wire_corr_of() was last asked about: the request's
 * own (a CALL's procedure, a PUBLISH's or SUBSCRIBE's topic, a REGISTER's procedure) for it and
 * every message of its action the walk correlates (an INVOCATION, a RESULT, an EVENT, ...); NULL
 * when that message has no action, or its action no URI (an UNSUBSCRIBE's) or a request the walk
 * did not meet. Borrowed until the next call into c. */
trace_str *trace_wire_corr_uri(const trace_wire_corr *c);

#endif /* TRACE_WIRE_CORR_H */
