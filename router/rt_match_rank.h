/* rt_match_rank.h: which of two wildcard registrations a CALL prefers (spec "Calls matching
 * multiple registrations"), for the dealer and the cluster's registry, which must agree. */
#ifndef RT_MATCH_RANK_H
#define RT_MATCH_RANK_H

/* > 0 if wildcard pattern a is more specific than b, < 0 if less, 0 if equal: the lengths, in
 * components, of the runs of non-empty components between wildcards, compared in order; the
 * longer run first wins ("a1.b2..d4" beats "a1...d4", "a1.b2..d4.e5..g7" beats
 * "a1.b2..d4..f6.g7"). */
int rt_wildcard_cmp(const char *a, const char *b);

#endif /* RT_MATCH_RANK_H */
