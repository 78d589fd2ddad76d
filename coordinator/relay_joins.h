// A run's nodes named by key (cluster.endpoints "key:K", core/joined_nodes.h): the relay this
// coordinator hosts (cluster.relay_listen) or asks (cluster.relay), the wait until every such node
// has joined it, and at the run's end what the relay carried for each of them.
//
// Ownership: RelayJoins owns the hosted relay (if any) and the directory connection; one thread.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/role.h"
#include "core/status.h"
#include "remote/coordinator.h"
#include "remote/curve.h"
#include "remote/relay.h"
#include "remote/relay_directory.h"

namespace tw {

class RelayJoins {
public:
    // Nothing to do (an empty RelayJoins) when no endpoint names a node by key and the layout has no
    // relay. With a relay, a node listed by endpoint and key that does not answer a hello there
    // within 2 s is looked for at the relay too (learned unreachable). Hosts or asks the relay and
    // waits (cluster.join_timeout_s, a progress line through `log`) until every such node has
    // joined; then endpoints[i] is the relay's endpoint for node i and node_keys[i] its key.
    // `keys` are the coordinator's own; node_keys the nodes' public keys (Z85). The error names the
    // nodes that never joined.
    static Result<RelayJoins> resolve(const RunConfig& cfg, const CurveKeyPair& keys, std::vector<std::string>& endpoints,
                                      std::vector<std::string>& node_keys, const std::function<void(const std::string&)>& log,
                                      const std::function<bool()>& stopped);
    bool empty() const { return joined_.empty(); }
    // Sets each role's mesh_relayed: the mesh ranks whose endpoint is a joined node's data endpoint
    // at the relay (`endpoints`: the nodes' control endpoints as resolve left them).
    void mark_relayed(std::vector<NodeRole>& roles, const std::vector<std::string>& endpoints) const;
    // Sets joined_key on each node named by key (nodes: the coordinator's, in endpoint order).
    void mark(std::vector<NodeInfo>& nodes) const;
    // One line per joined node: what the relay carried for it during this run (and how often it
    // joined again), per class and way; `names[i]` is node i's role name. Lines for nodes the relay could not report say why.
    std::vector<std::string> report(const std::vector<std::string>& names);

private:
    std::unique_ptr<Relay> hosted_;
    std::unique_ptr<RelayDirectory> dir_;
    std::vector<std::pair<size_t, std::string>> joined_;  // node index, key
    std::map<std::string, RelayCounters> base_;           // each node's counters when the run began
};

}  // namespace tw
