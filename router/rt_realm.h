/* rt_realm.h: one realm: its name and role policy (from rt_config), its joined sessions, its
 * observers (rt_observer.h), and its broker and dealer. Owned by rt_router, which also makes and
 * frees the broker and dealer (they sit above the realm: they ask it for names and permissions).
 * Service thread only. */
#ifndef RT_REALM_H
#define RT_REALM_H

#include <stdbool.h>
#include <stddef.h>

#include "rt_router.h"

typedef struct rt_broker rt_broker;
typedef struct rt_dealer rt_dealer;

typedef enum rt_action {
    RT_ACTION_CALL,
    RT_ACTION_REGISTER,
    RT_ACTION_PUBLISH,
    RT_ACTION_SUBSCRIBE
} rt_action;

/* New realm for cfg (borrowed, outlives the realm), with no broker or dealer yet. NULL on
 * allocation failure. */
rt_realm *rt_realm_new(rt_router *rt, const rt_realm_config *cfg);
/* Sets the realm's broker and dealer (borrowed: the router frees them, before the realm). */
void rt_realm_set_routing(rt_realm *r, rt_broker *b, rt_dealer *d);
/* The realm must have no members left; its broker and dealer are not freed. NULL-safe. */
void rt_realm_free(rt_realm *r);

const char *rt_realm_name(const rt_realm *r);
rt_broker *rt_realm_broker(rt_realm *r);
rt_dealer *rt_realm_dealer(rt_realm *r);
rt_router *rt_realm_router(rt_realm *r);
/* Borrowed: the observers of this realm's events (rt_observer.h), in registration order. Add to
 * it with rt_observers_add(); the realm finalizes it when freed. */
struct rt_observers *rt_realm_observers(rt_realm *r);
size_t rt_realm_member_count(const rt_realm *r);
/* true if the realm serves the meta API (rt_meta.h): not the management realm, and not a realm
 * with options.enable_meta_api false. */
bool rt_realm_has_meta_api(const rt_realm *r);

/* true if the realm defines role `authrole`. */
bool rt_realm_has_role(const rt_realm *r, const char *authrole);
/* Crossbar-style static authorization: the permission of role `authrole` that best matches uri
 * (an exact match first, then the longest prefix match, then the wildcard pattern with the most
 * non-empty components) decides; no matching permission = denied. */
bool rt_realm_authorize(const rt_realm *r, const char *authrole, rt_action action, const char *uri);
/* Borrowed: the permission that decides for (authrole, uri) under the precedence above (it also
 * carries the "disclose" flags), or NULL when none matches or the role does not exist. */
const rt_permission *rt_realm_permission(const rt_realm *r, const char *authrole, const char *uri);

#endif /* RT_REALM_H */
