/* trace_store.h: the bounded in-memory store of one trace.
 *
 * Every appended record gets the next seq (0, 1, 2, ... with no gaps). The store keeps at most
 * `limit` records and at most `max_bytes` bytes, counting per record the length of the bytes it
 * keeps + TRACE_RECORD_OVERHEAD; appending beyond either bound drops the oldest records, which
 * are counted in `dropped`. Records held are always the contiguous seq range
 * [first_seq, next_seq), so locating a seq is index arithmetic (O(1)).
 * A record is held as an entry written once in the store's ring: a message entry (a header
 * with its peer, correlation flags, clocks, type, sizes, correlation and URI, then the bytes it
 * keeps, inline) or, for a fan-out's further receivers (trace_store_append_repeats()), a 16-byte
 * repeat entry (peer, flags) after its message entry, which they share; an index of a 32-bit
 * offset per seq locates a record. The bytes a record keeps (a received message, a sent one of
 * at most TRACE_STORE_COPY_MAX bytes, a message without its payload) count in each store that
 * keeps the message. The ring is rebuilt 1.25 to 4 times what it holds (larger or smaller as that
 * changes, at most once a round in steady state; at 1.25 times when the store is first full)
 * and the index doubles up to `limit` seqs:
 * steady-state appends allocate nothing. A store holds at most TRACE_STORE_HOLD_MAX (4 GiB) of
 * what its records count, whatever its max_bytes allows: its budget is held to that, so one whose
 * max_bytes allows more drops its oldest records there (counted in dropped), as at its budget.
 * That bounds the ring's entries (each takes at most its record's cost), which the index's
 * offsets (32 bits, in 8-byte words, one bit of a repeat's for its kind) bound to a ring of
 * 8 GiB, and the large sent messages held as references outside the ring, which only the budget
 * bounds.
 * Ownership: the store owns every record it holds (their references included). Service thread
 * only. */
#ifndef TRACE_STORE_H
#define TRACE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace_record.h"

/* Messages of at most this many bytes are kept as copies in a store's entries; the capture
 * path passes larger sent ones as a reference on the router's buffer (trace_record.wire). */
#define TRACE_STORE_COPY_MAX 4096

/* The most a store holds, in what its records count against max_bytes, whatever its max_bytes
 * allows (top of the file). */
#define TRACE_STORE_HOLD_MAX ((uint64_t)1 << 32)

/* to_seq of trace_store_range(): up to the newest record. */
#define TRACE_SEQ_NONE UINT64_MAX

typedef struct trace_store trace_store;

/* New empty store (limit >= 1 records, max_bytes bytes, held to TRACE_STORE_HOLD_MAX); allocates
 * its first ring slots lazily.
 * NULL on allocation failure or limit == 0. */
trace_store *trace_store_new(size_t limit, uint64_t max_bytes);
/* Frees every record (NULL-safe). */
void trace_store_free(trace_store *st);

/* Consumes *rec (its references move into the store and its pointers become NULL; its borrowed
 * `bytes`, if any, are copied into the store's entry), gives it the next seq and returns that
 * seq. Never fails; instead, records are dropped (and counted in dropped):
 *   - a record whose cost alone exceeds max_bytes is dropped, and so is every older record
 *     (held seqs stay contiguous, so nothing older than a dropped record can remain);
 *   - a full ring that cannot grow for lack of memory drops its oldest record, as at the
 *     limit; with no ring at all, the new record itself is dropped. */
uint64_t trace_store_append_take(trace_store *st, trace_record *rec);

/* The same for a record given by its parts (borrowed: trace_rec_view), written straight into
 * its slot: references taken on its peer and uri, its bytes copied into its entry (v->bytes,
 * or v->wire's bytes when at most TRACE_STORE_COPY_MAX), a larger v->wire referenced. v->seq and
 * v->key are not read. Returns the record's seq. */
uint64_t trace_store_append_view(trace_store *st, const trace_rec_view *v);

/* A fan-out's further receivers: appends, for each peer in peers[0..n) in order, a record of the
 * newest held record's message with that peer and flags (last_flags for the n-th), with the next
 * seqs; returns how many it appended, k. The caller gives a reference on each peer: those of
 * peers[0..k) move into the records, those of peers[k..n) stay the caller's. The records share the
 * newest record's message entry (its uri, wire, bytes: nothing copied, no reference taken on them);
 * each counts the same cost as the newest record. Appends nothing unless the newest held record
 * is the message: appended by trace_store_append_view() with this key (non-zero), uri and pc_ns.
 * Stops (returns less than n) where the evictions an append needs would leave nothing of that
 * message: the store then holds what it held minus the oldest records those evictions dropped
 * (the same an append of the record would drop), and the caller appends the next one itself. */
size_t trace_store_append_repeats(trace_store *st, uint64_t key, const trace_str *uri,
                                  uint64_t pc_ns, trace_peer *const *peers, size_t n, uint8_t flags,
                                  uint8_t last_flags);

/* Gives the next seq to a record kept elsewhere (a persisted trace's files) and returns it: the
 * store holds nothing of it. Records still held are dropped first (and counted), so that held
 * seqs stay contiguous; a store used only this way holds nothing and drops nothing. */
uint64_t trace_store_skip(trace_store *st);
/* The same for n records (seqs returned .. returned + n - 1). */
uint64_t trace_store_skip_n(trace_store *st, uint64_t n);

/* Makes an empty store start its seqs at seq (a trace reloaded from disk continues its seqs).
 * No effect if the store holds or held records. */
void trace_store_start_at(trace_store *st, uint64_t seq);

/* The record with this seq, written into *out: out, or NULL if not held (never captured, or
 * dropped). Every pointer in *out (peer, uri, wire, bytes) is borrowed from the store, valid until
 * the next append, skip or free: *out holds no references (never trace_record_fini() it). */
const trace_record *trace_store_get(const trace_store *st, uint64_t seq, trace_record *out);

/* The page of held records with from_seq <= seq <= to_seq (TRACE_SEQ_NONE: no upper bound),
 * oldest first, at most limit of them: sets *first and *count (the page is the seqs
 * first .. first + count - 1, fetch each with trace_store_get()). A from_seq older than the
 * oldest held record starts the page at first_seq. Returns false (count 0) for an empty page. */
bool trace_store_range(const trace_store *st, uint64_t from_seq, uint64_t to_seq, size_t limit,
                       uint64_t *first, uint64_t *count);

uint64_t trace_store_first_seq(const trace_store *st); /* oldest held (= next_seq if empty) */
uint64_t trace_store_next_seq(const trace_store *st);  /* seq of the next append */
size_t trace_store_records(const trace_store *st);     /* held now */
size_t trace_store_messages(const trace_store *st);    /* message entries they share */
uint64_t trace_store_dropped(const trace_store *st);   /* discarded by limit / max_bytes */
uint64_t trace_store_bytes(const trace_store *st);     /* sum of trace_record_cost() held */
/* Bytes the store's ring and index take; what it counts
 * against max_bytes is trace_store_bytes(). */
size_t trace_store_alloc_bytes(const trace_store *st);
size_t trace_store_limit(const trace_store *st);
uint64_t trace_store_max_bytes(const trace_store *st); /* the budget in effect */

#endif /* TRACE_STORE_H */
