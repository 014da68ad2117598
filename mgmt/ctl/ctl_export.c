/* ctl_export.c: see ctl_export.h. The Chrome converter keeps its maps in jansson objects (realm
 * -> pid, session -> tid, correlation -> action) and writes instant and metadata events at once;
 * action slices and flows are laid out once every record is in (ctl_chrome_finish()). */
#include "ctl_export.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_format.h"
#include "wamp_ws.h"

/* The category of every slice and flow event (action records' slices included). */
#define CHROME_CAT "wamp"

struct ctl_chrome {
    FILE *out;
    size_t written;  /* events written so far */
    bool failed;     /* a write failed: the document is unusable */
    json_t *pids;    /* realm -> pid */
    json_t *tids;    /* "pid/session[#lane]" -> tid */
    json_t *actions; /* correlation -> {pid, tid, skey, start, end, name, corr, followers:
                        [{ts, pid, tid, name, seq}]} */
    json_t *order;   /* correlations in order of first appearance */
    json_int_t next_pid;
    json_int_t next_tid;
    json_int_t next_flow;
    bool markers;
    bool have_prev; /* prev_raw/prev_us hold the previous message record's times */
    double prev_raw;
    double prev_us;
};

bool ctl_export_jsonl(FILE *out, const json_t *record)
{
    char *line = ctl_format_json(record, false);
    if (!line) {
        return false;
    }
    bool ok = fputs(line, out) >= 0 && fputc('\n', out) != EOF;
    free(line);
    return ok;
}

/* Writes one event (consumed) as a line of the traceEvents array. */
static bool emit(ctl_chrome *c, json_t *ev_take)
{
    char *line = ev_take ? json_dumps(ev_take, JSON_COMPACT) : NULL;
    json_decref(ev_take);
    if (!line || c->failed || fputs(c->written ? ",\n" : "", c->out) < 0 ||
        fputs(line, c->out) < 0) {
        c->failed = true;
    }
    free(line);
    c->written++;
    return !c->failed;
}

ctl_chrome *ctl_chrome_new(FILE *out)
{
    ctl_chrome *c = calloc(1, sizeof(*c));
    if (!c) {
        return NULL;
    }
    c->out = out;
    c->pids = json_object();
    c->tids = json_object();
    c->actions = json_object();
    c->order = json_array();
    c->next_pid = 1;
    c->next_tid = 1;
    c->next_flow = 1;
    if (!c->pids || !c->tids || !c->actions || !c->order ||
        fputs("{\"traceEvents\": [\n", out) < 0) {
        ctl_chrome_free(c);
        return NULL;
    }
    return c;
}

void ctl_chrome_free(ctl_chrome *c)
{
    if (!c) {
        return;
    }
    json_decref(c->pids);
    json_decref(c->tids);
    json_decref(c->actions);
    json_decref(c->order);
    free(c);
}

static bool add_meta(ctl_chrome *c, const char *what, json_int_t pid, json_int_t tid,
                     const char *name)
{
    return emit(c, json_pack("{s:s, s:s, s:I, s:I, s:i, s:{s:s}}", "name", what, "ph", "M", "pid",
                             pid, "tid", tid, "ts", 0, "args", "name", name));
}

static const char *str_or(const json_t *obj, const char *key, const char *dflt)
{
    const char *s = json_string_value(json_object_get(obj, key));
    return s ? s : dflt;
}

/* pid of the record's process, creating it (with its process_name event) on first use: its node
 * ("node X") when the record names one (a merged cluster-wide trace), else its realm ("realm X").
 * 0 on failure. */
static json_int_t pid_of(ctl_chrome *c, const json_t *rec)
{
    const char *node = json_string_value(json_object_get(rec, "node_id"));
    char key[300], name[310];
    if (node) {
        wamp_utf8_snprintf(key, sizeof(key), "node\n%s", node); /* '\n' is in no realm name */
        wamp_utf8_snprintf(name, sizeof(name), "node %s", node);
    } else {
        wamp_utf8_snprintf(key, sizeof(key), "%s", str_or(rec, "realm", "(no realm)"));
        wamp_utf8_snprintf(name, sizeof(name), "realm %s", key);
    }
    json_t *v = json_object_get(c->pids, key);
    if (v) {
        return json_integer_value(v);
    }
    json_int_t pid = c->next_pid++;
    if (json_object_set_new(c->pids, key, json_integer(pid)) != 0 ||
        !add_meta(c, "process_name", pid, 0, name)) {
        return 0;
    }
    return pid;
}

/* tid under key, creating it (with its thread_name event) on first use; 0 on failure. */
static json_int_t tid_of(ctl_chrome *c, const char *key, json_int_t pid, const char *name)
{
    json_t *v = json_object_get(c->tids, key);
    if (v) {
        return json_integer_value(v);
    }
    json_int_t tid = c->next_tid++;
    if (json_object_set_new(c->tids, key, json_integer(tid)) != 0 ||
        !add_meta(c, "thread_name", pid, tid, name)) {
        return 0;
    }
    return tid;
}

/* "Call com.example.add" / "Hello". */
static void event_name(const json_t *rec, char *out, size_t len)
{
    const char *type = str_or(rec, "msg_type", "Unknown");
    const char *uri = json_string_value(json_object_get(rec, "uri"));
    if (uri) {
        wamp_utf8_snprintf(out, len, "%s %s", type, uri);
    } else {
        wamp_utf8_snprintf(out, len, "%s", type);
    }
}

/* Microseconds of the record's wall clock. */
static double ts_us(const json_t *rec)
{
    return json_number_value(json_object_get(rec, "ts")) * 1e6;
}

/* The time of a message record on the trace's timeline: ts_us(), except that a record whose
 * time is not after the previous one's (the records of one received message and of what it
 * causes share one clock reading) is placed at the next representable time after it, so that
 * every message record has its own time. Consumers need that: the DevTools trace engine binds
 * a flow event to the slice of exactly its time and keeps one event per time in a flow, so an
 * arrow between two records of one reading would vanish. A clock that went back (the wall
 * clock can) restarts the sequence. */
static double message_us(ctl_chrome *c, const json_t *rec)
{
    double raw = ts_us(rec);
    double t = raw;
    if (c->have_prev && raw >= c->prev_raw && t <= c->prev_us) {
        t = nextafter(c->prev_us, INFINITY);
    }
    c->have_prev = true;
    c->prev_raw = raw;
    c->prev_us = t;
    return t;
}

/* The track (tid) of the session who names ({session_id, authid, authrole}: a message record
 * or an action record's originator) under realm pid, named on first use; key gets its map key.
 * 0 on failure. */
static json_int_t session_tid(ctl_chrome *c, json_int_t pid, const json_t *who, char key[64])
{
    json_int_t session = json_integer_value(json_object_get(who, "session_id"));
    char tname[600];
    snprintf(key, 64, "%lld/%lld", (long long)pid, (long long)session);
    const char *authid = json_string_value(json_object_get(who, "authid"));
    const char *authrole = json_string_value(json_object_get(who, "authrole"));
    wamp_utf8_snprintf(tname, sizeof(tname), "session %lld%s%s%s%s%s", (long long)session,
                       authid ? " " : "", authid ? authid : "", authrole ? " (" : "",
                       authrole ? authrole : "", authrole ? ")" : "");
    return tid_of(c, key, pid, tname);
}

/* An action record (trace_level "action"): one complete slice on the originator's track from
 * ts to ts + duration, with the record in args, laid out with the others at the end. */
static bool add_action(ctl_chrome *c, const json_t *rec)
{
    json_int_t pid = pid_of(c, rec);
    char key[64], name[600], seqkey[40];
    json_int_t tid = pid ? session_tid(c, pid, json_object_get(rec, "originator"), key) : 0;
    if (!pid || !tid) {
        return false;
    }
    const char *uri = json_string_value(json_object_get(rec, "uri"));
    wamp_utf8_snprintf(name, sizeof(name), "%s%s%s", str_or(rec, "action", "action"),
                       uri ? " " : "", uri ? uri : "");
    double start = ts_us(rec);
    double dur = json_number_value(json_object_get(rec, "duration")) * 1e6;
    const char *corr = json_string_value(json_object_get(rec, "correlation"));
    if (!corr || json_object_get(c->actions, corr)) {
        snprintf(seqkey, sizeof(seqkey), "seq %lld",
                 (long long)json_integer_value(json_object_get(rec, "seq")));
        corr = seqkey;
    }
    json_t *a = json_pack("{s:I, s:I, s:s, s:f, s:f, s:s, s:[], s:O}", "pid", pid, "tid", tid,
                          "skey", key, "start", start, "end", start + (dur > 0 ? dur : 0), "name",
                          name, "followers", "args", rec);
    return a && json_object_set_new(c->actions, corr, a) == 0 &&
           json_array_append_new(c->order, json_string(corr)) == 0;
}

bool ctl_chrome_add(ctl_chrome *c, const json_t *rec)
{
    if (!json_is_object(rec)) {
        return false;
    }
    char name[600];
    double ts = ts_us(rec);
    const char *type = str_or(rec, "msg_type", "Unknown");
    if (strcmp(type, "Marker") == 0) {
        /* Markers belong to no session: a global instant (a line across every track). */
        if (!c->markers) {
            c->markers = true;
            if (!add_meta(c, "process_name", 0, 0, "wampscope markers")) {
                return false;
            }
        }
        wamp_utf8_snprintf(name, sizeof(name), "Marker %s", str_or(rec, "uri", ""));
        return emit(c, json_pack("{s:s, s:s, s:s, s:s, s:f, s:i, s:i, s:O}", "name", name, "cat",
                                 "marker", "ph", "i", "s", "g", "ts", ts, "pid", 0, "tid", 0,
                                 "args", rec));
    }
    if (json_is_string(json_object_get(rec, "action"))) {
        return add_action(c, rec);
    }
    json_int_t pid = pid_of(c, rec);
    char key[64];
    json_int_t tid = pid ? session_tid(c, pid, rec, key) : 0;
    if (!pid || !tid) {
        return false;
    }
    event_name(rec, name, sizeof(name));
    ts = message_us(c, rec);
    const char *dir = str_or(rec, "direction", "message");
    if (!emit(c, json_pack("{s:s, s:s, s:s, s:s, s:f, s:I, s:I, s:O}", "name", name, "cat", dir,
                           "ph", "i", "s", "t", "ts", ts, "pid", pid, "tid", tid, "args", rec))) {
        return false;
    }
    const char *corr = json_string_value(json_object_get(rec, "correlation"));
    if (!corr) {
        return true;
    }
    json_t *a = json_object_get(c->actions, corr);
    if (!a) {
        /* The first record of an action is its anchor (unless the anchor was not captured). */
        a = json_pack("{s:I, s:I, s:s, s:f, s:f, s:s, s:s, s:[]}", "pid", pid, "tid", tid, "skey",
                      key, "start", ts, "end", ts, "name", name, "corr", corr, "followers");
        return a && json_object_set_new(c->actions, corr, a) == 0 &&
               json_array_append_new(c->order, json_string(corr)) == 0;
    }
    if (ts > json_real_value(json_object_get(a, "end"))) {
        json_object_set_new(a, "end", json_real(ts));
    }
    /* A follower: the end of a flow arrow from the anchor, written with the action's slice
     * (ctl_chrome_finish()), after the arrow's start: the lane of that slice is known only
     * then, and consumers pair a flow's events in the order they read them. */
    return json_array_append_new(json_object_get(a, "followers"),
                                 json_pack("{s:f, s:I, s:I, s:s, s:O?}", "ts", ts, "pid", pid,
                                           "tid", tid, "name", name, "seq",
                                           json_object_get(rec, "seq"))) == 0;
}

typedef struct slice {
    double start, end;
    json_int_t pid, tid;
    const char *skey;
    json_t *action; /* borrowed */
} slice;

static int slice_cmp(const void *pa, const void *pb)
{
    const slice *a = pa, *b = pb;
    if (a->pid != b->pid) {
        return a->pid < b->pid ? -1 : 1;
    }
    if (a->tid != b->tid) {
        return a->tid < b->tid ? -1 : 1;
    }
    if (a->start != b->start) {
        return a->start < b->start ? -1 : 1;
    }
    if (a->end != b->end) {
        return a->end > b->end ? -1 : 1; /* the longer (parent) first */
    }
    return 0;
}

/* Per-lane stack of the end times of open slices. */
typedef struct lane {
    double *ends;
    size_t n, cap;
} lane;

static bool lane_fits(lane *l, const slice *s)
{
    while (l->n > 0 && l->ends[l->n - 1] <= s->start) {
        l->n--;
    }
    return l->n == 0 || s->end <= l->ends[l->n - 1];
}

static bool lane_push(lane *l, double end)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        double *p = realloc(l->ends, cap * sizeof(*p));
        if (!p) {
            return false;
        }
        l->ends = p;
        l->cap = cap;
    }
    l->ends[l->n++] = end;
    return true;
}

/* Writes an action's slice on lane tid, then for each follower the start of a flow arrow at the
 * slice's start (the slice it binds to), the follower's zero-length slice and the arrow's end
 * bound to it ("bp": "e", the enclosing slice: chrome://tracing and Perfetto bind flows to
 * slices, not to instants; the DevTools engine to the slice of the same time, thread and
 * category). Slices and flows share one category, "wamp": consumers pair a flow's start and end
 * by category, name and id. */
static bool emit_action(ctl_chrome *c, const slice *s, json_int_t tid)
{
    const char *name = json_string_value(json_object_get(s->action, "name"));
    json_t *ev =
            json_pack("{s:s, s:s, s:s, s:f, s:f, s:I, s:I}", "name", name, "cat", CHROME_CAT, "ph",
                      "X", "ts", s->start, "dur", s->end - s->start, "pid", s->pid, "tid", tid);
    json_t *args = json_object_get(s->action, "args"); /* action records */
    if (ev) {
        int rc = args ? json_object_set(ev, "args", args)
                      : json_object_set_new(ev, "args",
                                            json_pack("{s:O}", "correlation",
                                                      json_object_get(s->action, "corr")));
        if (rc != 0) {
            json_decref(ev);
            ev = NULL;
        }
    }
    bool ok = emit(c, ev);
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(s->action, "followers"), i, f)
    {
        if (!ok) {
            break;
        }
        json_int_t id = c->next_flow++;
        double ts = json_real_value(json_object_get(f, "ts"));
        json_int_t fpid = json_integer_value(json_object_get(f, "pid"));
        json_int_t ftid = json_integer_value(json_object_get(f, "tid"));
        ok = emit(c,
                  json_pack("{s:s, s:s, s:s, s:I, s:f, s:I, s:I}", "name", name, "cat", CHROME_CAT,
                            "ph", "s", "id", id, "ts", s->start, "pid", s->pid, "tid", tid)) &&
             emit(c, json_pack("{s:s, s:s, s:s, s:f, s:i, s:I, s:I, s:{s:O?}}", "name",
                               json_string_value(json_object_get(f, "name")), "cat", CHROME_CAT,
                               "ph", "X", "ts", ts, "dur", 0, "pid", fpid, "tid", ftid, "args",
                               "seq", json_object_get(f, "seq"))) &&
             emit(c, json_pack("{s:s, s:s, s:s, s:s, s:I, s:f, s:I, s:I}", "name", name, "cat",
                               CHROME_CAT, "ph", "f", "bp", "e", "id", id, "ts", ts, "pid", fpid,
                               "tid", ftid));
    }
    return ok;
}

/* Places the slices (sorted) on lanes of their session and writes their X and flow events. */
static bool layout(ctl_chrome *c, slice *sl, size_t n)
{
    bool ok = true;
    size_t i = 0;
    while (ok && i < n) {
        size_t j = i;
        while (j < n && sl[j].pid == sl[i].pid && sl[j].tid == sl[i].tid) {
            j++;
        }
        lane *lanes = NULL;
        size_t nlanes = 0;
        for (size_t k = i; ok && k < j; k++) {
            size_t L = 0;
            while (L < nlanes && !lane_fits(&lanes[L], &sl[k])) {
                L++;
            }
            if (L == nlanes) {
                lane *p = realloc(lanes, (nlanes + 1) * sizeof(*p));
                if (!p) {
                    ok = false;
                    break;
                }
                lanes = p;
                memset(&lanes[nlanes++], 0, sizeof(lane));
            }
            ok = lane_push(&lanes[L], sl[k].end);
            json_int_t tid = sl[k].tid;
            if (ok && L > 0) {
                char key[96], tname[128];
                snprintf(key, sizeof(key), "%s#%zu", sl[k].skey, L);
                snprintf(tname, sizeof(tname), "session %s (overlap %zu)",
                         strchr(sl[k].skey, '/') + 1, L);
                tid = tid_of(c, key, sl[k].pid, tname);
                ok = tid != 0;
            }
            if (!ok) {
                break;
            }
            ok = emit_action(c, &sl[k], tid);
        }
        for (size_t L = 0; L < nlanes; L++) {
            free(lanes[L].ends);
        }
        free(lanes);
        i = j;
    }
    return ok;
}

bool ctl_chrome_finish(ctl_chrome *c, const json_t *other_data)
{
    size_t n = json_array_size(c->order);
    slice *sl = calloc(n ? n : 1, sizeof(*sl));
    if (!sl) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *a = json_object_get(c->actions, json_string_value(json_array_get(c->order, i)));
        sl[i] = (slice){.start = json_real_value(json_object_get(a, "start")),
                        .end = json_real_value(json_object_get(a, "end")),
                        .pid = json_integer_value(json_object_get(a, "pid")),
                        .tid = json_integer_value(json_object_get(a, "tid")),
                        .skey = json_string_value(json_object_get(a, "skey")),
                        .action = a};
    }
    qsort(sl, n, sizeof(*sl), slice_cmp);
    bool ok = layout(c, sl, n) && !c->failed;
    free(sl);
    char *other = other_data ? json_dumps(other_data, JSON_COMPACT) : strdup("{}");
    ok = ok && other &&
         fprintf(c->out, "%s],\n\"displayTimeUnit\": \"ms\",\n\"otherData\": %s}\n",
                 c->written ? "\n" : "", other) > 0;
    free(other);
    return ok;
}
