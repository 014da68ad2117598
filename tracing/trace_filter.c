/* trace_filter.c: one allocation per list; matching is linear in each list, which is short
 * (typically one to a few entries, TRACE_OPT_LIST_MAX at most). */
#include "trace_filter.h"

#include <stdlib.h>
#include <string.h>

#include "wamp_uri.h"

struct trace_filter {
    uint64_t types[2]; /* bit per WAMP code, 0..127 */
    bool connections;  /* msg_types names "Connection" */
    unsigned dir_mask;
    /* The management realm while "realms" is absent; NULL when there is no exclusion to apply
     * (no management realm, or a realms list, which is then the whole truth). */
    char *mgmt_realm;
    char **realms;
    size_t n_realms;
    trace_uri_pat *uris;
    size_t n_uris;
    uint64_t *sessions;
    size_t n_sessions;
    char **authids;
    size_t n_authids;
    char **authroles;
    size_t n_authroles;
};

static void free_strings(char **list, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(list[i]);
    }
    free(list);
}

static bool dup_strings(char *const *src, size_t n, char ***dst, size_t *n_dst)
{
    *dst = NULL;
    *n_dst = 0;
    if (n == 0) {
        return true;
    }
    char **list = calloc(n, sizeof(*list));
    if (!list) {
        return false;
    }
    *dst = list;
    for (size_t i = 0; i < n; i++) {
        list[i] = strdup(src[i]);
        if (!list[i]) {
            return false;
        }
        *n_dst = i + 1;
    }
    return true;
}

trace_filter *trace_filter_new(const trace_options *o, const char *mgmt_realm)
{
    trace_filter *f = calloc(1, sizeof(*f));
    if (!f) {
        return NULL;
    }
    f->types[0] = o->msg_types[0];
    f->types[1] = o->msg_types[1];
    f->connections = o->msg_connections;
    f->dir_mask = o->direction;
    if (!dup_strings(o->realms, o->n_realms, &f->realms, &f->n_realms) ||
        !dup_strings(o->authids, o->n_authids, &f->authids, &f->n_authids) ||
        !dup_strings(o->authroles, o->n_authroles, &f->authroles, &f->n_authroles)) {
        goto fail;
    }
    if (o->n_realms == 0 && mgmt_realm) {
        f->mgmt_realm = strdup(mgmt_realm);
        if (!f->mgmt_realm) {
            goto fail;
        }
    }
    if (o->n_session_ids) {
        f->sessions = malloc(o->n_session_ids * sizeof(*f->sessions));
        if (!f->sessions) {
            goto fail;
        }
        memcpy(f->sessions, o->session_ids, o->n_session_ids * sizeof(*f->sessions));
        f->n_sessions = o->n_session_ids;
    }
    if (o->n_uris) {
        f->uris = calloc(o->n_uris, sizeof(*f->uris));
        if (!f->uris) {
            goto fail;
        }
        for (size_t i = 0; i < o->n_uris; i++) {
            f->uris[i].uri = strdup(o->uris[i].uri);
            if (!f->uris[i].uri) {
                goto fail;
            }
            f->uris[i].match = o->uris[i].match;
            f->n_uris = i + 1;
        }
    }
    return f;

fail:
    trace_filter_free(f);
    return NULL;
}

void trace_filter_free(trace_filter *f)
{
    if (!f) {
        return;
    }
    free(f->mgmt_realm);
    free_strings(f->realms, f->n_realms);
    free_strings(f->authids, f->n_authids);
    free_strings(f->authroles, f->n_authroles);
    for (size_t i = 0; i < f->n_uris; i++) {
        free(f->uris[i].uri);
    }
    free(f->uris);
    free(f->sessions);
    free(f);
}

/* true if s equals one of list (a NULL s never does). */
static bool in_strings(char *const *list, size_t n, const char *s)
{
    if (!s) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (strcmp(list[i], s) == 0) {
            return true;
        }
    }
    return false;
}

bool trace_filter_keeps_all(const trace_filter *f)
{
    return f->dir_mask == (TRACE_RX | TRACE_TX) && f->types[0] == UINT64_MAX &&
           f->types[1] == UINT64_MAX && !f->n_sessions && !f->n_realms && !f->n_authids &&
           !f->n_authroles && !f->n_uris;
}

bool trace_filter_keeps_connections(const trace_filter *f)
{
    return trace_filter_keeps_all(f) || (f->connections && !f->n_realms && !f->n_uris &&
                                         !f->n_sessions && !f->n_authids && !f->n_authroles);
}

bool trace_filter_reads_peer(const trace_filter *f)
{
    return f->n_sessions || f->n_authids || f->n_authroles;
}

bool trace_filter_match(const trace_filter *f, const trace_ctx *c)
{
    unsigned t = (unsigned)c->msg_type;
    if (!((unsigned)c->direction & f->dir_mask) || t > 127 ||
        !(f->types[t / 64] & ((uint64_t)1 << (t % 64)))) {
        return false;
    }
    if (f->n_sessions) {
        size_t i = 0;
        while (i < f->n_sessions && f->sessions[i] != c->session_id) {
            i++;
        }
        if (i == f->n_sessions) {
            return false;
        }
    }
    if (trace_is_mgmt_realm(f->mgmt_realm, c->realm)) {
        return false;
    }
    if (f->n_realms && !in_strings(f->realms, f->n_realms, c->realm)) {
        return false;
    }
    if (f->n_authids && !in_strings(f->authids, f->n_authids, c->authid)) {
        return false;
    }
    if (f->n_authroles && !in_strings(f->authroles, f->n_authroles, c->authrole)) {
        return false;
    }
    if (f->n_uris) {
        if (!c->uri) {
            return false;
        }
        for (size_t i = 0; i < f->n_uris; i++) {
            if (wamp_uri_matches(f->uris[i].uri, f->uris[i].match, c->uri)) {
                return true;
            }
        }
        return false;
    }
    return true;
}
