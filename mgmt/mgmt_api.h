/* mgmt_api.h: the management API (README.md), served as router-local procedures on the
 * management realm so that calls reach it through the normal dealer path (authorization and
 * tracing included), and the live topics published there.
 * Ownership: mgmt_api is created after the router and freed before it; it borrows the router.
 * Service thread only. */
#ifndef MGMT_API_H
#define MGMT_API_H

#include <stdint.h>

#include "mgmt_uri.h" /* MGMT_PREFIX, MGMT_TOPIC_PREFIX */
#include "rt_cluster.h"
#include "rt_router.h"
#include "wamp_err.h"

typedef struct mgmt_api mgmt_api;

/* Registers every management procedure on the router's management realm and subscribes the
 * live feed to the tracing hub's events. started_wall_ns: when the process started (for
 * get_worker). WAMP_ENOTFOUND if the configuration has no management realm; WAMP_ENOMEM.
 * *out is NULL after failure. */
wamp_err mgmt_api_new(rt_router *rt, uint64_t started_wall_ns, mgmt_api **out);
/* Serves and forwards management calls over cluster c (borrowed; NULL: stop, before c's link is
 * freed): list_nodes lists c's live nodes, and every procedure called with another node's
 * node_id runs on that node (mgmt/README.md "Cluster"). Calls forwarded before a stop are still
 * answered until the link is freed. Once per mgmt_api: WAMP_EEXIST for a second cluster;
 * WAMP_ENOMEM or the link's error (nothing changed). */
wamp_err mgmt_api_set_cluster(mgmt_api *m, rt_cluster *c);
/* Detaches the live feed and frees (free the cluster's link first). NULL-safe. The procedures stay
 * registered on the (dying) realm, so free the router right after. */
void mgmt_api_free(mgmt_api *m);

/* Error URIs of the management API (README.md "Errors"). */
#define MGMT_ERROR_NO_SUCH_OBJECT        "crossbar.error.no_such_object"
#define MGMT_ERROR_NO_SUCH_WORKER        "crossbar.error.no_such_worker"
#define MGMT_ERROR_ALREADY_RUNNING       "crossbar.error.already_running"
#define MGMT_ERROR_ALREADY_EXISTS        "crossbar.error.already_exists"
#define MGMT_ERROR_NOT_STOPPED           "crossbar.error.not_stopped"
#define MGMT_ERROR_INVALID_CONFIGURATION "crossbar.error.invalid_configuration"
#define MGMT_ERROR_RESOURCE_LIMIT        "crossbar.error.resource_limit"
/* mark_trace on a stopped trace (Crossbar's ApplicationError.NOT_RUNNING). */
#define MGMT_ERROR_NOT_RUNNING "crossbar.error.not_running"

#endif /* MGMT_API_H */
