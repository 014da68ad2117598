/* wamp_uri.h: URI validation (spec "URIs": strict and loose rules) and pattern matching
 * (exact / prefix / wildcard, as used by pattern-based subscriptions and registrations and by
 * Crossbar-style role permissions). Pure functions. */
#ifndef WAMP_URI_H
#define WAMP_URI_H

#include <stdbool.h>

typedef enum wamp_uri_rule {
    /* Loose: components are non-empty and contain no '.', '#' or whitespace. */
    WAMP_URI_LOOSE,
    /* Strict: components match [0-9a-z_]+. */
    WAMP_URI_STRICT,
    /* Loose, but empty components are allowed (wildcard patterns, e.g. "com..update"). */
    WAMP_URI_LOOSE_EMPTY,
    /* Strict, empty components allowed. */
    WAMP_URI_STRICT_EMPTY
} wamp_uri_rule;

typedef enum wamp_match {
    WAMP_MATCH_EXACT,
    WAMP_MATCH_PREFIX,
    WAMP_MATCH_WILDCARD
} wamp_match;

/* true if uri is a valid URI under rule. NULL and "" are invalid (a prefix pattern of "" is
 * checked by the caller, it matches everything). */
bool wamp_uri_is_valid(const char *uri, wamp_uri_rule rule);

/* true if uri matches pattern under m: EXACT string equality; PREFIX plain string prefix (as
 * Crossbar and the spec define it, "com.a" matches "com.ab"); WILDCARD same number of components,
 * an empty pattern component matches any one component. */
bool wamp_uri_matches(const char *pattern, wamp_match m, const char *uri);

/* Parses "exact" / "prefix" / "wildcard"; false if s is none of them. */
bool wamp_match_parse(const char *s, wamp_match *out);
/* "exact" / "prefix" / "wildcard". */
const char *wamp_match_name(wamp_match m);

#endif /* WAMP_URI_H */
