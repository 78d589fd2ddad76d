// Nodes named by key; see joined_nodes.h.
#include "core/joined_nodes.h"

#include "core/hub_endpoint.h"

namespace tw {

std::optional<std::string> joined_key_text(const std::string& endpoint) {
    if (endpoint.rfind(kJoinedPrefix, 0) != 0) return std::nullopt;
    return endpoint.substr(std::string(kJoinedPrefix).size());
}

bool has_joined_nodes(const RunConfig& c) {
    for (const auto& e : c.cluster.endpoints)
        if (joined_key_text(e)) return true;
    return false;
}

void validate_joined_nodes(const RunConfig& c, std::vector<std::string>& out) {
    const auto& k = c.cluster;
    for (size_t i = 0; i < k.endpoints.size(); ++i) {
        auto key = joined_key_text(k.endpoints[i]);
        if (key && key->empty()) out.push_back("cluster.endpoints[" + std::to_string(i) + "]: \"key:\" names no key");
        if (!key && i < k.node_keys.size() && k.node_keys[i].empty() && !k.coordinator_key.empty())
            out.push_back("cluster.node_keys[" + std::to_string(i) + "] is empty beside the endpoint " + k.endpoints[i] +
                          " (only a node named by \"key:\" may leave it empty)");
    }
    for (auto [name, ep] : {std::pair{"cluster.relay", &k.relay}, {"cluster.relay_listen", &k.relay_listen}})
        if (!ep->empty())
            if (std::string why = hub_endpoint_problem(*ep); !why.empty()) out.push_back(std::string(name) + " " + why);
    if (!k.relay.empty() && !k.relay_listen.empty())
        out.push_back("cluster.relay and cluster.relay_listen: the joined nodes are found at one relay, not two");
    if (!has_joined_nodes(c)) {
        if (!k.relay.empty() || !k.relay_listen.empty())
            out.push_back("cluster.relay" + std::string(k.relay.empty() ? "_listen" : "") +
                          " is set but no endpoint names a node by key (\"key:K\")");
        return;
    }
    if (k.mode != "remote") out.push_back("cluster.endpoints: nodes named by key (\"key:K\") need cluster.mode = \"remote\"");
    if (k.coordinator_key.empty())
        out.push_back("cluster.endpoints: nodes named by key (\"key:K\") need keys: cluster.coordinator_key");
    if (k.relay.empty() && k.relay_listen.empty())
        out.push_back("cluster.endpoints: nodes named by key (\"key:K\") are found at a relay: set cluster.relay "
                      "(and cluster.relay_key) or cluster.relay_listen");
    if (!k.relay.empty() && k.relay_key.empty()) out.push_back("cluster.relay_key: the relay's public key is needed to ask it");
    // A Gloo group opens its own connections between its ranks, which no relay carries.
    if (k.nodes_per_replica > 1)
        out.push_back("cluster.nodes_per_replica > 1: a replica's Gloo group dials its ranks directly, so its nodes "
                      "cannot be named by key (\"key:K\"); give them endpoints they are reached at");
}

}  // namespace tw
