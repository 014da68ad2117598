/* ctl_format.h: human-readable output of wampscope-ctl: the trace table, trace metadata, the
 * record tables, the worker's stats, and JSON text with the shortest round-tripping floats.
 * Pure formatting over jansson values (borrowed); one call writes whole lines to out.
 *
 * Tables fit a width: every table has a last, flexible column (MSG for records) that takes what
 * the others leave; when even their minimum widths do not fit, shrinkable columns (URI, REALM,
 * ID) are cut first, then whole columns are dropped in a fixed order (records: REALM, CORR,
 * SESSION; actions: REALM, ORIGINATOR, RESP). A cut cell ends with "...". Colour is ANSI SGR,
 * never written unless ctl_style.color says so. Text from the router that is not JSON-escaped
 * (URIs, realms, ids) has its control characters replaced by '?', so a peer cannot send escape
 * sequences to the terminal. */
#ifndef CTL_FORMAT_H
#define CTL_FORMAT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

/* How tables are drawn. columns > 0: fit the table into that many columns (a terminal's width).
 * columns == 0: every column at its full width and the last one cut at msg_width characters
 * (0 = whole: --wide). color: ANSI colours (errors and failed actions red, rx cyan, tx green,
 * undelivered yellow, headers bold). seq_width: the records' SEQ column, when wider than its
 * 6 characters (0: 6; ctl_format_fit_seq()). */
typedef struct ctl_style {
    int columns;
    int msg_width;
    bool color;
    int seq_width;
} ctl_style;

/* traces: "ID STATUS RECORDS DROPPED STARTED RUNTIME" header and one row per metadata object of
 * the list metas; the ID column is as wide as the longest id. */
void ctl_format_traces(FILE *out, const ctl_style *st, const json_t *metas);
/* One "key: value" line per metadata field. */
void ctl_format_meta(FILE *out, const json_t *meta);
/* data / tail: "SEQ TIME DIR TYPE REALM SESSION URI CORR MSG" header and one row per record.
 * TIME is the UTC time of day with milliseconds; CORR the last 8 hex digits of the correlation
 * with A (anchor) / L (last); MSG the compact message. An Error record's MSG starts with its
 * error URI, an Abort's with its reason, since the cut message might hide them. */
void ctl_format_records_header(FILE *out, const ctl_style *st);
/* Widens st's SEQ column to the digits of the largest seq among records (an array), so that the
 * header and every row line up (a busy flight recorder's seqs have seven digits and more). */
void ctl_format_fit_seq(ctl_style *st, const json_t *records);
/* The same for seqs up to seq (a live table: where the trace stands, with room to grow). */
void ctl_format_fit_seq_to(ctl_style *st, long long seq);
void ctl_format_record_row(FILE *out, const ctl_style *st, const json_t *rec);
/* Action records (trace_level "action"; ctl_format_record_row() prints them this way):
 * "SEQ TIME ACTION REALM ORIGINATOR URI RESP SUCCESS DURATION" with the originator's session
 * id, the number of responders, yes/NO, and the duration in milliseconds. */
bool ctl_format_is_action(const json_t *rec);
void ctl_format_actions_header(FILE *out, const ctl_style *st);
/* get_worker's answer (mgmt/README.md "get_worker's stats"): a title line (worker, node, pid,
 * uptime, realms), then the gauges ("NOW") and the counters ("SINCE START"), one per line in
 * the router's order. prev (may be NULL): an earlier answer, elapsed_s seconds older; when
 * given, each counter also shows its rate per second since then. */
void ctl_format_stats(FILE *out, const ctl_style *st, const char *node, const json_t *worker,
                      const json_t *prev, double elapsed_s);

/* v as the shortest "%.{1..17}g" text that strtod() reads back as v, with ".0" added when that
 * text would read as an integer (JSON). Writes at most n bytes (NUL included); returns buf. */
char *ctl_format_real(char *buf, size_t n, double v);
/* v as JSON text (compact, or pretty with 2-space indents), reals as ctl_format_real() writes
 * them. NULL on allocation failure; free() the result. */
char *ctl_format_json(const json_t *v, bool pretty);

/* printf(fmt, ...) to out with control characters (C0, DEL, C1) and bidirectional controls of
 * the formatted text written as '?' (newlines too: the caller ends its line): for text that
 * carries the router's strings (node and worker ids, error URIs and messages) outside tables.
 * A text over 64 KiB is cut. */
void ctl_format_clean(FILE *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ctl_format_vclean(FILE *out, const char *fmt, va_list ap)
        __attribute__((format(printf, 2, 0)));

#endif /* CTL_FORMAT_H */
