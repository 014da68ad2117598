/* ctl_export.h: trace exports built client-side from get_trace_data records
 * (mgmt/README.md "Records"): JSON Lines and the Chrome Trace Event format (JSON object form, loads
 * in Perfetto and chrome://tracing).
 *
 * Chrome layout: one process (pid) per realm (per node for records that name their node_id: a
 * merged cluster-wide trace), one thread (tid) per session, named by metadata
 * events (process_name / thread_name); every record an instant event ("ph": "i", thread scope;
 * markers: global scope) with the record in args; every correlated action (records sharing a
 * correlation: CALL -> INVOCATION -> YIELD -> RESULT, PUBLISH -> EVENTs -> PUBLISHED, ...) a
 * complete event ("ph": "X", args {correlation}) on the anchor's session from the anchor to the
 * last message, and a flow arrow from the anchor to each follower: "ph": "s" at the start of
 * that slice, then "ph": "f" with "bp": "e" bound to a zero-length complete event (args {seq})
 * at the follower's time on its session (chrome://tracing and Perfetto bind flows to slices
 * only, not to instants); flow ids are unique, and slices and flows share the category "wamp"
 * (the DevTools trace engine binds a flow event to the slice of the same time, thread and
 * category, and pairs start and end by category, name and id). Slices of one thread always
 * nest: an action overlapping another of the same session without containing it goes to an
 * extra thread of that session ("session N (overlap k)"). Times are microseconds of the
 * records' wall clock ("ts"); a message record whose time is not after the previous one's
 * (records of one clock reading) is placed at the next representable time after it, so that
 * no arrow joins two events of one time (consumers drop those).
 * Action records (trace_level "action") are no instants: each is one complete event (cat
 * "wamp") on its originator's track from ts to ts + duration, named "call com.example.add",
 * with the record in args (responders included), laid out on lanes like the other slices.
 * Ownership: the converter copies what it keeps from each record; single-threaded. One event
 * per line in the output. */
#ifndef CTL_EXPORT_H
#define CTL_EXPORT_H

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

/* Writes record as one compact JSON line (the API's object, unchanged; reals as short as they
 * round-trip, ctl_format_real()). false on I/O error. */
bool ctl_export_jsonl(FILE *out, const json_t *record);

typedef struct ctl_chrome ctl_chrome;

/* Starts a Chrome trace document on out (borrowed until ctl_chrome_finish()): instant and
 * metadata events are written as records are added, so memory holds only the maps and each
 * action's anchor and followers, not the records. NULL on allocation or write failure. */
ctl_chrome *ctl_chrome_new(FILE *out);
void ctl_chrome_free(ctl_chrome *c);
/* Adds one record (borrowed; records in seq order). false on allocation or write failure, or a
 * record that is not an object. */
bool ctl_chrome_add(ctl_chrome *c, const json_t *record);
/* Writes the action slices and flows, then ends the document as {"traceEvents": [...],
 * "displayTimeUnit": "ms", "otherData": other_data (borrowed, NULL = {})}. false on failure
 * (the document is then incomplete). Call once. */
bool ctl_chrome_finish(ctl_chrome *c, const json_t *other_data);

#endif /* CTL_EXPORT_H */
