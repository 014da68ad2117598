/* rt_broker_pub.c: a publication's options (PUBLISH.Options, or another node's publication):
 * their parsing, the black/white lists, the publisher's identity keys (rt_broker_int.h). Calls
 * nothing else of the broker. */
#include <string.h>

#include "rt_broker_int.h"
#include "wamp_msg.h"

/* Checks one list option's value: a list of session ids (ids true) or of strings. *out = the
 * list, or NULL when it is empty. false if malformed. */
static bool list_value(const json_t *v, bool ids, const json_t **out)
{
    if (!json_is_array(v)) {
        return false;
    }
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e)
    {
        if (ids ? !(json_is_integer(e) && json_integer_value(e) >= 0) : !json_is_string(e)) {
            return false;
        }
    }
    *out = json_array_size(v) > 0 ? v : NULL;
    return true;
}

static bool id_listed(const json_t *list, uint64_t id)
{
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e)
    {
        if ((uint64_t)json_integer_value(e) == id) {
            return true;
        }
    }
    return false;
}

static bool str_listed(const json_t *list, const char *s)
{
    size_t i;
    json_t *e;
    if (!s) {
        return false;
    }
    json_array_foreach(list, i, e)
    {
        if (strcmp(json_string_value(e), s) == 0) {
            return true;
        }
    }
    return false;
}

/* Whether the lists admit the session (id, authid, authrole); it may be on another node. */
bool rt_broker_lists_admit(const pub_filter *f, uint64_t id, const char *authid,
                           const char *authrole)
{
    if ((f->eligible && !id_listed(f->eligible, id)) ||
        (f->eligible_authid && !str_listed(f->eligible_authid, authid)) ||
        (f->eligible_authrole && !str_listed(f->eligible_authrole, authrole))) {
        return false;
    }
    return !((f->exclude && id_listed(f->exclude, id)) ||
             (f->exclude_authid && str_listed(f->exclude_authid, authid)) ||
             (f->exclude_authrole && str_listed(f->exclude_authrole, authrole)));
}

/* Parses PUBLISH options into p (publisher, topic, payload set by the caller); NULL if they
 * are acceptable, else a message for the ERROR (invalid_argument). Walks the options present
 * (usually none or one) rather than looking each known one up: this runs for every PUBLISH.
 * Unknown options are ignored. */
const char *rt_broker_parse_publish(const json_t *opts, pub_ctx *p, bool *ack)
{
    pub_filter *f = &p->filter;
    *ack = false;
    p->exclude_me = true;
    p->disclose = false;
    p->retain = false;
    memset(f, 0, sizeof(*f));
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)opts, key, v)
    {
        bool *flag = NULL;
        const json_t **list = NULL;
        bool ids = false;
        if (strcmp(key, "acknowledge") == 0) {
            flag = ack;
        } else if (strcmp(key, "exclude_me") == 0) {
            flag = &p->exclude_me;
        } else if (strcmp(key, "disclose_me") == 0) {
            flag = &p->disclose;
        } else if (strcmp(key, "retain") == 0) {
            flag = &p->retain;
        } else if (strcmp(key, "eligible") == 0) {
            list = &f->eligible;
            ids = true;
        } else if (strcmp(key, "exclude") == 0) {
            list = &f->exclude;
            ids = true;
        } else if (strcmp(key, "eligible_authid") == 0) {
            list = &f->eligible_authid;
        } else if (strcmp(key, "eligible_authrole") == 0) {
            list = &f->eligible_authrole;
        } else if (strcmp(key, "exclude_authid") == 0) {
            list = &f->exclude_authid;
        } else if (strcmp(key, "exclude_authrole") == 0) {
            list = &f->exclude_authrole;
        }
        if (flag && !json_is_boolean(v)) {
            return "options acknowledge, exclude_me, disclose_me and retain must be booleans";
        }
        if (flag) {
            *flag = json_is_true(v);
        } else if (list && !list_value(v, ids, list)) {
            return ids ? "options eligible and exclude must be lists of session ids"
                       : "options eligible_authid, eligible_authrole, exclude_authid and "
                         "exclude_authrole must be lists of strings";
        }
    }
    f->any = f->eligible || f->eligible_authid || f->eligible_authrole || f->exclude ||
             f->exclude_authid || f->exclude_authrole;
    return NULL;
}

/* Adds publisher identification (spec "Publisher Identification") for s to details d; non-zero
 * on allocation failure. */
int rt_broker_set_publisher(json_t *d, uint64_t id, const char *authid, const char *authrole)
{
    int rc = json_object_set_new(d, "publisher", json_integer((json_int_t)id));
    if (authid) {
        rc |= json_object_set_new(d, "publisher_authid", json_string(authid));
    }
    if (authrole) {
        rc |= json_object_set_new(d, "publisher_authrole", json_string(authrole));
    }
    return rc;
}

/* The publication context of another node's publication rp; false if its options are not
 * valid. */
bool rt_broker_remote_ctx(const rt_broker_pub *rp, pub_ctx *p)
{
    bool ack, ppt = false;
    *p = (pub_ctx){.topic = rp->topic,
                   .publication = rp->publication,
                   .args = (json_t *)rp->args,
                   .kwargs = (json_t *)rp->kwargs,
                   .payload = rp->payload,
                   .from = rp};
    if (rp->options && (rt_broker_parse_publish(rp->options, p, &ack) != NULL ||
                        wamp_msg_ppt_check(rp->options, &ppt) != NULL)) {
        return false;
    }
    p->ppt = ppt ? rp->options : NULL;
    p->exclude_me = false; /* the publisher is not here */
    p->retain = false;
    p->disclose = rp->disclose;
    return true;
}
