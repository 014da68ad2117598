/* mgmt_merge.c: k-way merge of the nodes' pages of a cluster-wide trace (mgmt_merge.h). */
#include "mgmt_merge.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A record's place in the merged sequence. */
typedef struct merge_key {
    double ts;
    const char *node;
    json_int_t seq;
} merge_key;

/* One node's page being consumed. */
typedef struct merge_stream {
    const char *node;
    json_t *recs; /* borrowed */
    size_t len;   /* the items of recs within the node's bound */
    size_t pos;
    double last_ts; /* ts of the item before pos (a gap item sorts there) */
} merge_stream;

static int key_cmp(const merge_key *a, const merge_key *b)
{
    if (a->ts != b->ts) {
        return a->ts < b->ts ? -1 : 1;
    }
    int c = strcmp(a->node, b->node);
    if (c != 0) {
        return c;
    }
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static bool item_key(const merge_stream *s, const json_t *rec, merge_key *k)
{
    json_t *ts = json_object_get(rec, "ts");
    json_t *seq = json_object_get(rec, "seq");
    if (!json_is_integer(seq) || (ts && !json_is_number(ts))) {
        return false;
    }
    *k = (merge_key){.ts = ts ? json_number_value(ts) : s->last_ts,
                     .node = s->node,
                     .seq = json_integer_value(seq)};
    return true;
}

json_int_t mgmt_merge_from_of(const json_t *from, const char *node)
{
    json_t *v = json_is_integer(from) ? (json_t *)from : json_object_get(from, node);
    return json_is_integer(v) ? json_integer_value(v) : 0;
}

json_int_t mgmt_merge_to_of(const json_t *to, const char *node)
{
    if (json_is_object(to)) {
        json_t *v = json_object_get(to, node);
        return json_is_integer(v) ? json_integer_value(v) : -1;
    }
    return json_is_integer(to) ? json_integer_value(to) : -2;
}

/* How many of a node's page's items (from the first) lie within its bound to
 * (mgmt_merge_to_of()): a node
 * that ignored the bound (an older one) answers the items after it too, which are left unread. */
static size_t within_bound(json_t *recs, json_int_t to)
{
    size_t n = json_array_size(recs);
    if (to == -2) {
        return n;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *seq = json_object_get(json_array_get(recs, i), "seq");
        if (json_is_integer(seq) && json_integer_value(seq) > to) {
            return i;
        }
    }
    return n;
}

/* Long: a k-way merge of the nodes' pages with its cut (where the next page starts for each
 * node), which needs the per-node state of both phases at once. */
json_t *mgmt_merge_pages(const json_t *pages, const json_t *from, const json_t *to, size_t limit)
{
    size_t n = json_object_size(pages);
    merge_stream *st = calloc(n ? n : 1, sizeof(*st));
    json_t *records = json_array();
    json_t *next = json_is_object(from) ? json_copy((json_t *)from) : json_object();
    json_t *errors = json_object();
    json_t *out = NULL;
    merge_key cut = {0};
    bool has_cut = false, ok = st && records && next && errors;
    size_t ns = 0;
    const char *node;
    json_t *page;
    json_object_foreach((json_t *)pages, node, page)
    {
        if (!ok) {
            break;
        }
        if (json_object_get(page, "error")) {
            ok = json_object_set(errors, node, page) == 0 &&
                 json_object_set_new(next, node, json_integer(mgmt_merge_from_of(from, node))) == 0;
            continue;
        }
        json_t *recs = json_object_get(page, "records");
        json_t *now = json_object_get(page, "now");
        if (!json_is_array(recs) || !json_is_number(now)) {
            ok = false;
            break;
        }
        json_int_t upto = mgmt_merge_to_of(to, node);
        size_t len = within_bound(recs, upto);
        merge_stream *s = &st[ns++];
        *s = (merge_stream){.node = node, .recs = recs, .len = len};
        ok = json_object_set_new(next, node, json_integer(mgmt_merge_from_of(from, node))) == 0;
        /* The first key this node's unread records can have. */
        merge_key bound = {0};
        merge_key end;
        if (upto != -2 && (len < limit ||
                           (item_key(s, json_array_get(recs, len - 1), &end) && end.seq >= upto))) {
            continue; /* all it holds of its bounded range is here: nothing more to come */
        }
        if (len > 0 && len >= limit) {
            merge_stream tmp = *s;
            for (size_t i = 0; ok && i < len; i++) {
                ok = item_key(&tmp, json_array_get(recs, i), &bound);
                tmp.last_ts = bound.ts;
            }
            bound.seq++;
        } else if (json_is_true(json_object_get(page, "running"))) {
            json_int_t seq = mgmt_merge_from_of(from, node);
            merge_key last;
            if (len > 0 && item_key(s, json_array_get(recs, len - 1), &last)) {
                seq = last.seq + 1;
            }
            bound = (merge_key){.ts = json_number_value(now), .node = node, .seq = seq};
        } else {
            continue; /* all read and stopped: nothing more to come */
        }
        if (ok && (!has_cut || key_cmp(&bound, &cut) < 0)) {
            cut = bound;
            has_cut = true;
        }
    }
    /* Take the smallest head while it sorts before the cut. */
    while (ok && json_array_size(records) < limit) {
        merge_stream *best = NULL;
        merge_key bk = {0}, k;
        for (size_t i = 0; ok && i < ns; i++) {
            merge_stream *s = &st[i];
            if (s->pos >= s->len) {
                continue;
            }
            ok = item_key(s, json_array_get(s->recs, s->pos), &k);
            if (ok && (!best || key_cmp(&k, &bk) < 0)) {
                best = s;
                bk = k;
            }
        }
        if (!ok || !best || (has_cut && key_cmp(&bk, &cut) >= 0)) {
            break;
        }
        json_t *r = json_copy(json_array_get(best->recs, best->pos));
        ok = r && json_object_set_new(r, "node_id", json_string(best->node)) == 0 &&
             json_array_append(records, r) == 0 &&
             json_object_set_new(next, best->node, json_integer(bk.seq + 1)) == 0;
        json_decref(r);
        best->pos++;
        best->last_ts = bk.ts;
    }
    if (ok) {
        out = json_pack("{s:O, s:O, s:O}", "records", records, "next", next, "errors", errors);
    }
    json_decref(records);
    json_decref(next);
    json_decref(errors);
    free(st);
    return out;
}
