/* mgmt_uri.h: the management API's URI namespace, the one definition shared by the server
 * (mgmt/), the router core (the management role may use only this namespace) and the
 * command-line client (mgmt/ctl/). Header-only and include-free (CMake target mgmt_uri), so
 * that each of them can include it without depending on the others. */
#ifndef MGMT_URI_H
#define MGMT_URI_H

/* Every management procedure and topic starts with this. */
#define MGMT_PREFIX "crossbarfabriccenter."
/* The live topics (on_trace_started, on_trace_data, on_trace_stopped). */
#define MGMT_TOPIC_PREFIX MGMT_PREFIX "remote.tracing."

#endif /* MGMT_URI_H */
