/* ctl_format.h: human-readable output of wampscope-ctl: the trace table, trace metadata and
 * the record table (TRACING.md "Trace metadata", "Trace record"). Pure formatting over jansson
 * values (borrowed); one call writes whole lines to out. */
#ifndef CTL_FORMAT_H
#define CTL_FORMAT_H

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

/* traces: "ID STATUS RECORDS DROPPED STARTED RUNTIME" header and one row per metadata object. */
void ctl_format_traces_header(FILE *out);
void ctl_format_trace_row(FILE *out, const json_t *meta);
/* One "key: value" line per metadata field. */
void ctl_format_meta(FILE *out, const json_t *meta);
/* data / tail: "SEQ TIME DIR TYPE REALM SESSION URI CORR MSG" header and one row per record.
 * TIME is the UTC time of day with milliseconds; CORR the last 8 hex digits of the correlation
 * with A (anchor) / L (last); MSG the compact message, cut to msg_width characters (0: whole). */
void ctl_format_records_header(FILE *out);
void ctl_format_record_row(FILE *out, const json_t *rec, int msg_width);
/* Action records (trace_level "action"; ctl_format_record_row() prints them this way):
 * "SEQ TIME ACTION REALM ORIGINATOR URI RESP SUCCESS DURATION" with the originator's session
 * id, the number of responders, yes/NO, and the duration in milliseconds. */
bool ctl_format_is_action(const json_t *rec);
void ctl_format_actions_header(FILE *out);

#endif /* CTL_FORMAT_H */
