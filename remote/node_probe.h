// One node asked what it is (host, version, threads, memory, state) the way a run of this layout
// would reach it: by its control endpoint, or, for a node named by key ("key:K",
// core/joined_nodes.h), through the layout's relay (cluster.relay, cluster.relay_key) with the
// layout's coordinator key. The workbench's "Find node" runs it on a thread of its own.
//
// Thread-safety: no shared state; each call makes its own ZeroMQ context.
#pragma once

#include <string>

#include "core/config.h"
#include "core/status.h"
#include "remote/coordinator.h"

namespace tw {

struct ProbedNode {
    NodeInfo info;
    std::string entry;       // as asked: what a cluster.endpoints entry for this node holds
    std::string reached_at;  // the control endpoint dialled: for a joined node, the relay's port for it
    bool joined = false;     // reached through a relay
};

// `entry`: tcp://HOST:PORT, ipc://PATH, or "key:K". A plain endpoint is dialled with the layout's
// coordinator key and that endpoint's node_keys entry when the layout lists it with a key, else
// without keys. A key needs cluster.relay, cluster.relay_key and cluster.coordinator_key (a relay
// the coordinator hosts itself, cluster.relay_listen, exists only while a run does). `timeout_ms`
// bounds the relay's answer and the node's hello each. The error names what is missing or who
// did not answer.
Result<ProbedNode> probe_node(const std::string& entry, const ClusterConfig& cluster, int timeout_ms);

}  // namespace tw
