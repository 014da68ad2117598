/* rt_options.c: one table per message type of the options the WAMP spec defines (Basic and
 * Advanced Profile), with the options that Crossbar and Autobahn add for router links and
 * transactions (forward_for, transaction_hash, force_reregister). */
#include "rt_options.h"

#include <stdio.h>
#include <string.h>

typedef struct rt_opt_spec {
    const char *name;
    rt_opt_type type;
} rt_opt_spec;

static const rt_opt_spec publish_opts[] = {
        {"acknowledge", RT_OPT_BOOL},
        {"exclude_me", RT_OPT_BOOL},
        {"disclose_me", RT_OPT_BOOL},
        {"retain", RT_OPT_BOOL},
        {"exclude", RT_OPT_ID_LIST},
        {"eligible", RT_OPT_ID_LIST},
        {"exclude_authid", RT_OPT_STRING_LIST},
        {"exclude_authrole", RT_OPT_STRING_LIST},
        {"eligible_authid", RT_OPT_STRING_LIST},
        {"eligible_authrole", RT_OPT_STRING_LIST},
        {"transaction_hash", RT_OPT_STRING},
        {"forward_for", RT_OPT_FORWARD_FOR},
};

static const rt_opt_spec subscribe_opts[] = {
        {"match", RT_OPT_STRING},
        {"get_retained", RT_OPT_BOOL},
        {"forward_for", RT_OPT_FORWARD_FOR},
};

static const rt_opt_spec call_opts[] = {
        {"timeout", RT_OPT_UINT},
        {"receive_progress", RT_OPT_BOOL},
        {"disclose_me", RT_OPT_BOOL},
        {"transaction_hash", RT_OPT_STRING},
        {"forward_for", RT_OPT_FORWARD_FOR},
};

static const rt_opt_spec register_opts[] = {
        {"match", RT_OPT_STRING},          {"invoke", RT_OPT_STRING},
        {"concurrency", RT_OPT_POS_INT},   {"disclose_caller", RT_OPT_BOOL},
        {"force_reregister", RT_OPT_BOOL}, {"forward_for", RT_OPT_FORWARD_FOR},
};

static const rt_opt_spec cancel_opts[] = {
        {"mode", RT_OPT_STRING},
        {"forward_for", RT_OPT_FORWARD_FOR},
};

static const rt_opt_spec yield_opts[] = {
        {"progress", RT_OPT_BOOL},
        {"forward_for", RT_OPT_FORWARD_FOR},
};

static const char *const type_text[] = {
        [RT_OPT_BOOL] = "a boolean",
        [RT_OPT_STRING] = "a string without NUL bytes",
        [RT_OPT_UINT] = "a non-negative integer",
        [RT_OPT_POS_INT] = "a positive integer",
        [RT_OPT_ID_LIST] = "a list of session ids",
        [RT_OPT_STRING_LIST] = "a list of strings without NUL bytes",
        [RT_OPT_FORWARD_FOR] = "a list of dicts",
};

bool rt_options_is_plain_string(const json_t *v)
{
    return json_is_string(v) && !memchr(json_string_value(v), '\0', json_string_length(v));
}

static bool has_type(const json_t *v, rt_opt_type t)
{
    size_t i;
    const json_t *e;
    switch (t) {
    case RT_OPT_BOOL:
        return json_is_boolean(v);
    case RT_OPT_STRING:
        return rt_options_is_plain_string(v);
    case RT_OPT_UINT:
        return json_is_integer(v) && json_integer_value(v) >= 0;
    case RT_OPT_POS_INT:
        return json_is_integer(v) && json_integer_value(v) >= 1;
    case RT_OPT_ID_LIST:
    case RT_OPT_STRING_LIST:
    case RT_OPT_FORWARD_FOR:
        if (!json_is_array(v)) {
            return false;
        }
        json_array_foreach(v, i, e)
        {
            bool ok = t == RT_OPT_ID_LIST       ? json_is_integer(e) && json_integer_value(e) >= 0
                      : t == RT_OPT_STRING_LIST ? rt_options_is_plain_string(e)
                                                : json_is_object(e);
            if (!ok) {
                return false;
            }
        }
        return true;
    }
    return false;
}

bool rt_options_check(wamp_msg_type type, const json_t *opts, char *why, size_t why_len)
{
    const rt_opt_spec *specs;
    size_t n;
#define RT_OPTS(t) (specs = (t), n = sizeof(t) / sizeof((t)[0]))
    switch (type) {
    case WAMP_MSG_PUBLISH:
        RT_OPTS(publish_opts);
        break;
    case WAMP_MSG_SUBSCRIBE:
        RT_OPTS(subscribe_opts);
        break;
    case WAMP_MSG_CALL:
        RT_OPTS(call_opts);
        break;
    case WAMP_MSG_REGISTER:
        RT_OPTS(register_opts);
        break;
    case WAMP_MSG_CANCEL:
        RT_OPTS(cancel_opts);
        break;
    case WAMP_MSG_YIELD:
        RT_OPTS(yield_opts);
        break;
    default:
        return true;
    }
#undef RT_OPTS
    /* The options given (usually none, one or two) against the table, rather than a hash
     * lookup per table entry: this runs for every PUBLISH that has options. */
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)opts, key, v)
    {
        size_t i = 0;
        while (i < n && strcmp(key, specs[i].name) != 0) {
            i++;
        }
        if (i < n && !has_type(v, specs[i].type)) {
            snprintf(why, why_len, "option %s must be %s", specs[i].name, type_text[specs[i].type]);
            return false;
        }
    }
    return true;
}
