/* trace_action.h: the action tracker of an action-level trace (trace_level "action",
 * ../mgmt/README.md "Action-level traces").
 *
 * An action starts with an anchor message the router receives (HELLO, CALL, PUBLISH, SUBSCRIBE,
 * UNSUBSCRIBE, REGISTER, UNREGISTER, GOODBYE of a joined session) and ends with the message the
 * router marks correlation_is_last. The tracker keeps one pending entry per action it was
 * offered the anchor of, keyed by the correlation UUID (open addressing, linear probing), and
 * folds every later message of that correlation into it:
 *   - originator: the anchor's session (its peer info is refreshed from later messages of the
 *     same session, so a join gets the authid/authrole the WELCOME carries);
 *   - responders: every other session a delivered message of the action went to or came from
 *     (the callee of INVOCATION and its YIELD/ERROR, each EVENT receiver, meta-event
 *     subscribers), each once (deduplicated by session id), in order of first appearance;
 *   - success: false once an ERROR or ABORT of the action passes, true otherwise;
 *   - error: the error URI of the last ERROR or ABORT of the action (the one the originator
 *     got: a callee's ERROR passes on as the caller's), NULL on success;
 *   - duration: from the anchor to the completing message (monotonic clock);
 *   - callee_node: the cluster node a call's answer came from (the first message naming one),
 *     NULL for an action that stayed on this node.
 * When the completing message comes, the tracker hands out one record (trace_record with
 * msg_type TRACE_MSG_ACTION: pc/ts are the ANCHOR's, peer = originator, uri = the action's URI,
 * corr = the correlation, wire = the MessagePack array [action, [[session_id, authid,
 * authrole], ...], success, duration, error, callee_node] that trace_render.c turns into the
 * record object) and forgets the action. The array's length versions it: four elements (no
 * error) and five (no callee_node) are the action parts written before those were kept
 * (persisted traces still hold them).
 * Bounded: at most max_pending actions are pending; a new anchor beyond that abandons the oldest
 * pending action (counted, see trace_action_abandoned()). Actions never completed are never
 * recorded (trace_action_clear() discards them when the trace stops).
 * Ownership: the tracker holds its own references on peers and URIs it keeps; records it hands
 * out own theirs. No clock, no JSON on the capture path. Service thread only. */
#ifndef TRACE_ACTION_H
#define TRACE_ACTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace_record.h"
#include "wamp_wr.h"

typedef struct trace_action trace_action;

/* One message of an action, as the hub offers it. Pointers are borrowed for the call. */
typedef struct trace_action_msg {
    const uint8_t *corr; /* TRACE_UUID_LEN bytes; NULL: not part of an action (ignored) */
    bool anchor;         /* the received message that starts the action */
    bool last;           /* the message that completes it */
    int msg_type;        /* WAMP code of the message */
    uint64_t pc_ns;      /* monotonic clock */
    uint64_t ts_ns;      /* wall clock */
    trace_peer *peer;    /* the session the message came from / went to; NULL if unknown */
    trace_str *uri;      /* the action's URI; NULL if none */
    bool dropped;        /* a tx message that was not delivered (no responder from it) */
    const char *error;   /* an ERROR's or ABORT's error URI (copied if kept); NULL otherwise */
    /* The cluster node a cross-node call's answer (RESULT, ERROR) came from (copied if kept);
     * NULL otherwise. */
    const char *callee_node;
} trace_action_msg;

/* New tracker holding at most max_pending (>= 1) pending actions. NULL on allocation failure. */
trace_action *trace_action_new(size_t max_pending);
/* Frees every pending action (NULL-safe). */
void trace_action_free(trace_action *a);

/* true if the action with this correlation is pending (its anchor was taken). Never
 * allocates. */
bool trace_action_is_pending(const trace_action *a, const uint8_t corr[TRACE_UUID_LEN]);

/* Folds m into its action: an anchor opens a pending action (abandoning the oldest one when
 * max_pending are pending), another message updates the pending action of its correlation (a
 * message of no pending action is ignored). When m completes the action, returns true and fills
 * *out with the action's record (the caller owns it: trace_append_take() or
 * trace_record_fini()), and the action is no longer pending. Otherwise returns false and *out
 * is untouched. Out of memory: the action is dropped (an anchor) or a responder is missed, and
 * a completed action's record may lack its action part (wire NULL). */
bool trace_action_on_message(trace_action *a, const trace_action_msg *m, trace_record *out);

/* Discards every pending action (the trace stopped: only completed actions are recorded). */
void trace_action_clear(trace_action *a);

/* Pending actions now. */
size_t trace_action_pending(const trace_action *a);
/* Actions abandoned so far because max_pending were pending (a trace counts them as
 * dropped). */
uint64_t trace_action_abandoned(const trace_action *a);

/* The action name of an anchor message type: "join" (HELLO), "leave" (GOODBYE), "call",
 * "publish", "subscribe", "unsubscribe", "register", "unregister"; NULL for other types.
 * Static string. */
const char *trace_action_name(int anchor_type);

/* Writes the record object of an action record r (msg_type TRACE_MSG_ACTION) into w: {seq, pc,
 * ts, realm, action, correlation, uri, originator: {session_id, authid, authrole}, responders:
 * [{session_id, authid, authrole}, ...], success, duration, error}. An action part that is
 * missing or does not decode renders as action null, responders [], success null, duration
 * null, error null; one of four elements (written before the error URI was kept) as error
 * null. */
void trace_action_write_record(wamp_wr *w, const trace_record *r);

#endif /* TRACE_ACTION_H */
