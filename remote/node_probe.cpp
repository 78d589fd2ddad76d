// One node asked what it is; see node_probe.h.
#include "remote/node_probe.h"

#include <memory>
#include <vector>
#include <zmq.hpp>

#include "core/joined_nodes.h"
#include "remote/curve.h"
#include "remote/relay_directory.h"

namespace tw {

Result<ProbedNode> probe_node(const std::string& entry, const ClusterConfig& cluster, int timeout_ms) {
    using R = Result<ProbedNode>;
    ProbedNode p;
    p.entry = entry;
    p.reached_at = entry;
    CoordinatorOptions o;
    o.reply_timeout_ms = timeout_ms;
    const auto key_text = joined_key_text(entry);
    if (key_text) {
        if (cluster.relay.empty())
            return R::error(entry.substr(0, 16) + "…: a node named by key is found through a relay: set cluster.relay"
                            " (a relay the coordinator hosts, cluster.relay_listen, exists only while a run does)");
        if (cluster.relay_key.empty()) return R::error("cluster.relay_key: the relay's public key is needed to ask it");
        if (cluster.coordinator_key.empty())
            return R::error("cluster.coordinator_key: a joined node answers only a coordinator with keys");
        auto key = public_key_from_text_or_file(*key_text);
        if (!key) return R::error(entry.substr(0, 16) + "…: " + key.message());
        auto relay_key = public_key_from_text_or_file(cluster.relay_key);
        if (!relay_key) return R::error("cluster.relay_key: " + relay_key.message());
        auto keys = read_secret_key(cluster.coordinator_key);
        if (!keys) return R::error("cluster.coordinator_key: " + keys.message());
        auto dir = RelayDirectory::connect(cluster.relay, *relay_key, *keys);
        if (!dir) return dir.status();
        auto found = (*dir)->wait_for({*key}, timeout_ms / 1000.0, nullptr, nullptr);
        if (!found) return found.status();
        p.reached_at = found->at(*key);
        p.joined = true;
        o.keys = *keys;
        o.node_keys = {*key};
    } else if (!cluster.coordinator_key.empty()) {
        for (size_t i = 0; i < cluster.endpoints.size() && i < cluster.node_keys.size(); ++i) {
            if (cluster.endpoints[i] != entry || cluster.node_keys[i].empty()) continue;
            auto keys = read_secret_key(cluster.coordinator_key);
            if (!keys) return R::error("cluster.coordinator_key: " + keys.message());
            auto key = public_key_from_text_or_file(cluster.node_keys[i]);
            if (!key) return R::error("cluster.node_keys[" + std::to_string(i) + "]: " + key.message());
            o.keys = *keys;
            o.node_keys = {*key};
            break;
        }
    }
    auto c = Coordinator::connect(std::make_shared<zmq::context_t>(), {p.reached_at}, o);
    if (!c) return c.status();
    p.info = (*c)->nodes()[0];
    return p;
}

}  // namespace tw
