/* ctl_format.c: see ctl_format.h. */
#include "ctl_format.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *str_or(const json_t *obj, const char *key, const char *dflt)
{
    const char *s = json_string_value(json_object_get(obj, key));
    return s ? s : dflt;
}

static long long int_of(const json_t *obj, const char *key)
{
    return (long long)json_integer_value(json_object_get(obj, key));
}

void ctl_format_traces_header(FILE *out)
{
    fprintf(out, "%-20s %-8s %10s %10s %-24s %10s\n", "ID", "STATUS", "RECORDS", "DROPPED",
            "STARTED", "RUNTIME");
}

void ctl_format_trace_row(FILE *out, const json_t *meta)
{
    fprintf(out, "%-20s %-8s %10lld %10lld %-24s %9.1fs\n", str_or(meta, "id", "?"),
            str_or(meta, "status", "?"), int_of(meta, "records"), int_of(meta, "dropped"),
            str_or(meta, "started", "-"), json_number_value(json_object_get(meta, "runtime")));
}

void ctl_format_meta(FILE *out, const json_t *meta)
{
    static const char *const keys[] = {"id",          "node_id",       "worker_id", "status",
                                       "started",     "ended",         "runtime",   "first_seq",
                                       "next_seq",    "records",       "dropped",   "bytes",
                                       "stop_reason", "persistent_id", "options"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        json_t *v = json_object_get(meta, keys[i]);
        char *s = NULL;
        if (json_is_string(v)) {
            fprintf(out, "%-14s %s\n", keys[i], json_string_value(v));
            continue;
        }
        if (!v || json_is_null(v)) {
            fprintf(out, "%-14s -\n", keys[i]);
            continue;
        }
        if (json_is_real(v)) {
            fprintf(out, "%-14s %.3f\n", keys[i], json_real_value(v));
            continue;
        }
        s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS);
        fprintf(out, "%-14s %s\n", keys[i], s ? s : "?");
        free(s);
    }
}

void ctl_format_records_header(FILE *out)
{
    fprintf(out, "%6s %-12s %-3s %-12s %-10s %-16s %-32s %-10s %s\n", "SEQ", "TIME", "DIR", "TYPE",
            "REALM", "SESSION", "URI", "CORR", "MSG");
}

/* The record's ts as the UTC time of day with milliseconds ("-" if it has none). */
static void time_of_day(const json_t *rec, char when[16])
{
    double ts = json_number_value(json_object_get(rec, "ts"));
    time_t secs = (time_t)ts;
    struct tm tm;
    snprintf(when, 16, "-");
    if (gmtime_r(&secs, &tm)) {
        int ms = (int)((ts - (double)secs) * 1000.0);
        snprintf(when, 16, "%02d:%02d:%02d.%03d", tm.tm_hour, tm.tm_min, tm.tm_sec,
                 ms < 0     ? 0
                 : ms > 999 ? 999
                            : ms);
    }
}

bool ctl_format_is_action(const json_t *rec)
{
    return json_is_string(json_object_get(rec, "action"));
}

void ctl_format_actions_header(FILE *out)
{
    fprintf(out, "%6s %-12s %-11s %-10s %-16s %-32s %4s %-7s %s\n", "SEQ", "TIME", "ACTION",
            "REALM", "ORIGINATOR", "URI", "RESP", "SUCCESS", "DURATION");
}

static void action_row(FILE *out, const json_t *rec)
{
    char when[16], session[24] = "-", dur[32] = "-";
    time_of_day(rec, when);
    json_t *sid = json_object_get(json_object_get(rec, "originator"), "session_id");
    if (json_is_integer(sid)) {
        snprintf(session, sizeof(session), "%lld", (long long)json_integer_value(sid));
    }
    json_t *d = json_object_get(rec, "duration");
    if (json_is_number(d)) {
        snprintf(dur, sizeof(dur), "%.3f ms", json_number_value(d) * 1000.0);
    }
    json_t *ok = json_object_get(rec, "success");
    fprintf(out, "%6lld %-12s %-11s %-10s %-16s %-32s %4zu %-7s %s\n", int_of(rec, "seq"), when,
            str_or(rec, "action", "?"), str_or(rec, "realm", "-"), session, str_or(rec, "uri", "-"),
            json_array_size(json_object_get(rec, "responders")),
            json_is_true(ok)    ? "yes"
            : json_is_false(ok) ? "NO"
                                : "-",
            dur);
}

void ctl_format_record_row(FILE *out, const json_t *rec, int msg_width)
{
    if (ctl_format_is_action(rec)) {
        action_row(out, rec);
        return;
    }
    char when[16];
    time_of_day(rec, when);
    char corr[16] = "-";
    const char *c = json_string_value(json_object_get(rec, "correlation"));
    if (c) {
        /* The last 8 hex digits: the router's correlation ids share their first half. */
        size_t n = strlen(c);
        snprintf(corr, sizeof(corr), "%.8s %s%s", n > 8 ? c + n - 8 : c,
                 json_is_true(json_object_get(rec, "correlation_is_anchor")) ? "A" : "",
                 json_is_true(json_object_get(rec, "correlation_is_last")) ? "L" : "");
    }
    char session[24] = "-";
    json_t *sid = json_object_get(rec, "session_id");
    if (json_is_integer(sid)) {
        snprintf(session, sizeof(session), "%lld", (long long)json_integer_value(sid));
    }
    const char *dir = str_or(rec, "direction", "-");
    char dirbuf[8];
    snprintf(dirbuf, sizeof(dirbuf), "%s%s", dir, json_object_get(rec, "dropped") ? "!" : "");
    char *msg = json_dumps(json_object_get(rec, "msg"), JSON_COMPACT | JSON_ENCODE_ANY);
    const char *m = msg ? msg : "null";
    int width = msg_width > 0 ? msg_width : (int)strlen(m);
    bool cut = (int)strlen(m) > width;
    fprintf(out, "%6lld %-12s %-3s %-12s %-10s %-16s %-32s %-10s %.*s%s\n", int_of(rec, "seq"),
            when, dirbuf, str_or(rec, "msg_type", "?"), str_or(rec, "realm", "-"), session,
            str_or(rec, "uri", "-"), corr, cut ? width - 3 : width, m, cut ? "..." : "");
    free(msg);
}
