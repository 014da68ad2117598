/* trace_hub_int.h: what the two files of the trace hub share: the hub's structure. trace_hub.c
 * (the registry: start, stop, find, reload, tick) calls into trace_hub_capture.c (the capture
 * path and the repeats of a fan-out), never the other way. Not a public header: only
 * trace_hub*.c include it. */
#ifndef TRACE_HUB_INT_H
#define TRACE_HUB_INT_H

#include <stddef.h>

#include "trace_hub.h"

/* Entries of the hub's action-URI cache (a power of two). */
#define HUB_URI_CACHE 256
/* The most traces a message recorded for trace_hub_repeat() may go to. */
#define HUB_REPEAT_TRACES 4

struct trace_hub {
    struct trace_hub_pub pub; /* first: read by the inline trace_hub_is_active() */
    size_t max_traces;
    char *mgmt_realm; /* owned; NULL = none */
    /* pub.fast's store while pub.fast is set and keeps its records in memory, else NULL (noted
     * with pub.fast: the fast path's append goes straight to it). */
    trace_store *fast_store;
    trace **traces; /* max_traces slots; n used, oldest first */
    size_t n;
    trace **hits; /* max_traces slots: the traces trace_hub_match() chose */
    size_t n_hits;
    size_t n_action_hits;           /* of them, action-level traces */
    uint64_t match_gen;             /* trace_hub_match_gen() */
    uint64_t auto_id;               /* last number used for a "traceN" name */
    trace_option_defaults defaults; /* limit / max_bytes of new traces; 0 = built-in */
    trace_persist_config persist;   /* data_dir owned (persist_dir) */
    char *persist_dir;
    trace_hub_log_fn log;
    void *log_ctx;
    /* trace_hub_reserve(): the always-on trace's id (owned; NULL = none) and its options
     * (owned). It has a slot of its own: traces/hits then hold max_traces + 1 slots. */
    char *reserved_id;
    json_t *reserved_opts;
    /* Action URIs made for kept messages, by hash of their text (direct-mapped, each entry a
     * reference; see trace_hub_uri()). */
    trace_str *uris[HUB_URI_CACHE];
    /* The message being recorded without its payload (make_env()), strip_cap bytes; owned. */
    unsigned char *strip;
    size_t strip_cap;

    /* The rest of the message trace_hub_repeat() records again (pub.rep: its buffer, clock
     * reading, correlation and the receivers gathered). uri is a reference; rec, the message's
     * parts (its peer NULL), borrows it and pub.rep's wire, and its corr points to pub.rep.corr. */
    struct {
        trace_str *uri;
        trace_rec_view rec;
        trace *traces[HUB_REPEAT_TRACES]; /* the traces it went to */
        size_t n;
        uint64_t keys;  /* the last trace_rec_view.key given */
        bool pend_last; /* the last receiver gathered completes the action */
    } rep;
};

_Static_assert(offsetof(struct trace_hub, pub) == 0, "trace_hub_is_active() reads offset 0");

/* Appends the repeats gathered by trace_hub_repeat() to their traces (trace_hub_capture.c). Every
 * entry point of the hub but trace_hub_repeat() and trace_hub_is_active() calls it first, so that
 * nothing is recorded, read or stopped between a repeat and its record. */
void trace_hub_flush_repeats(trace_hub *hub);
/* The same, then forgets the message trace_hub_repeat() would repeat: something else comes. */
void trace_hub_clear_repeats(trace_hub *hub);
/* trace_hub_repeat_end() (trace_hub.h's inline code calls trace_hub.c only). */
void trace_hub_end_repeats(trace_hub *hub, bool last);

#endif
