/* trace_options.h: the trace_options argument of start_trace (../mgmt/README.md), parsed and
 * validated into plain C values.
 * Every key of the table is checked for type and range; an unknown key is an error.
 * trace_level "action" (one record per completed action, trace_action.h) requires direction
 * "both" (the filter is evaluated on each action's anchor); trace_app_payload has no effect on
 * it (action records carry no payload). Two keys are wampscope's own, for the
 * retention of persisted traces: persist_max_bytes (bytes of segment files kept) and
 * persist_max_age (seconds; null = no age limit). Error messages start with
 * the option's name ("limit: must be an integer from 1 to 10000000 (got 0)"), so the management
 * layer can answer crossbar.error.invalid_configuration with the message as args[0].
 * Ownership: a parsed trace_options owns its arrays and its json; release with
 * trace_options_fini(). No state; service thread only (jansson). */
#ifndef TRACE_OPTIONS_H
#define TRACE_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "wamp_err.h"
#include "wamp_uri.h"

/* Defaults and ranges (../mgmt/README.md "trace_options"). */
#define TRACE_OPT_LIMIT_DEFAULT         100000u
#define TRACE_OPT_LIMIT_MAX             10000000u
#define TRACE_OPT_MAX_BYTES_DEFAULT     ((uint64_t)64 * 1024 * 1024)
#define TRACE_OPT_MAX_BYTES_MIN         ((uint64_t)1024)
#define TRACE_OPT_MAX_BYTES_MAX         ((uint64_t)1 << 40)
#define TRACE_OPT_DURATION_MAX          86400 /* seconds; minimum 1 */
#define TRACE_OPT_BATCH_DEFAULT         200u  /* ms */
#define TRACE_OPT_BATCH_MIN             10u
#define TRACE_OPT_BATCH_MAX             10000u
#define TRACE_OPT_MAX_RECORDS_MAX       ((uint64_t)1 << 53)
#define TRACE_OPT_PERSIST_BYTES_DEFAULT ((uint64_t)1 << 30) /* 1 GiB of segment files */
#define TRACE_OPT_PERSIST_BYTES_MIN     ((uint64_t)64 * 1024)
#define TRACE_OPT_PERSIST_BYTES_MAX     ((uint64_t)1 << 50)
#define TRACE_OPT_PERSIST_AGE_MAX       ((uint64_t)10 * 366 * 86400) /* seconds: ten years */
/* Longest accepted list (realms, uris, msg_types, session_ids, authids, authroles). */
#define TRACE_OPT_LIST_MAX 1024u

/* One entry of "uris". */
typedef struct trace_uri_pat {
    char *uri; /* owned */
    wamp_match match;
} trace_uri_pat;

/* Parsed options. Lists: NULL with count 0 = no restriction ("all"). */
typedef struct trace_options {
    char **realms;
    size_t n_realms;
    trace_uri_pat *uris; /* 0 entries when absent or when a plain "*" was listed */
    size_t n_uris;
    uint64_t msg_types[2]; /* bit per WAMP code (0..127; 0: "Unknown"); all ones when absent */
    bool has_msg_types;
    bool msg_connections; /* msg_types names "Connection" (connection records: no bit) */
    unsigned direction;   /* mask of trace_dir bits: TRACE_RX | TRACE_TX for "both" */
    uint64_t *session_ids;
    size_t n_session_ids;
    char **authids;
    size_t n_authids;
    char **authroles;
    size_t n_authroles;
    bool trace_app_payload;
    size_t limit;
    uint64_t max_bytes;
    uint64_t duration_ns;        /* 0 = no duration */
    uint64_t max_records;        /* 0 = no limit */
    uint32_t batching_period;    /* ms */
    bool persist;                /* records also go to disk (trace_persist.h) */
    bool action_level;           /* trace_level "action": one record per completed action */
    uint64_t persist_max_bytes;  /* retention of a persisted trace: bytes of files */
    uint64_t persist_max_age_ns; /* retention by age; 0 = none */
    /* The effective options as JSON (every key, defaults filled in, lists as given), for the
     * metadata's "options" echo. Owned. */
    json_t *json;
} trace_options;

/* Defaults of the options that a deployment may configure (wampscope.tracing.default_limit /
 * default_max_bytes). Plain data; a field of 0 means the built-in default
 * (TRACE_OPT_LIMIT_DEFAULT / TRACE_OPT_MAX_BYTES_DEFAULT). Non-zero values are clamped into the
 * option's range (limit 1..TRACE_OPT_LIMIT_MAX, max_bytes TRACE_OPT_MAX_BYTES_MIN..MAX). */
typedef struct trace_option_defaults {
    size_t limit;
    uint64_t max_bytes;
    uint64_t persist_max_bytes; /* wampscope.tracing.persist_max_bytes; 0 = built-in */
    uint64_t persist_max_age_s; /* wampscope.tracing.persist_max_age; 0 = no age limit */
} trace_option_defaults;

/* Parses j (an object; NULL or JSON null = all defaults) into *out. WAMP_EINVAL with a message
 * naming the option in why (when why != NULL) if j is not an object or an option is unknown, of
 * the wrong type, out of range, or not supported yet; WAMP_ENOMEM. *out is zeroed after failure
 * (trace_options_fini() on it is harmless). Same as trace_options_parse_with(j, NULL, ...). */
wamp_err trace_options_parse(const json_t *j, trace_options *out, char *why, size_t why_len);
/* As trace_options_parse(), but limit and max_bytes, when j does not set them, come from
 * defaults (NULL = the built-in defaults); out->json shows the effective values. */
wamp_err trace_options_parse_with(const json_t *j, const trace_option_defaults *defaults,
                                  trace_options *out, char *why, size_t why_len);

/* Releases everything o owns (NULL-safe) and zeroes it. */
void trace_options_fini(trace_options *o);

/* Parses a msg_type name as in trace records ("Publish", ..., "Marker", "Unknown",
 * "Connection"; case-insensitive) into its WAMP code (TRACE_MSG_MARKER for "Marker", 0 for
 * "Unknown": received bytes that did not decode, TRACE_MSG_CONNECTION for "Connection"); false
 * if unknown. */
bool trace_msg_type_parse(const char *name, int *out);

#endif /* TRACE_OPTIONS_H */
