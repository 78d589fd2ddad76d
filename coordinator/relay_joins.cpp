// A run's nodes named by key; see relay_joins.h.
#include "coordinator/relay_joins.h"

#include <set>
#include <zmq.hpp>

#include "core/joined_nodes.h"
#include "core/layout.h"

namespace tw {
namespace {

// How long a listed node has to answer a hello before the relay is asked for it.
constexpr int kDirectHelloMs = 2000;

// True when the node at `endpoint` with public key `node_key` answers a hello from `keys`.
bool answers(const std::string& endpoint, const CurveKeyPair& keys, const std::string& node_key) {
    CoordinatorOptions o;
    o.reply_timeout_ms = kDirectHelloMs;
    o.keys = keys;
    o.node_keys = {node_key};
    return static_cast<bool>(Coordinator::connect(std::make_shared<zmq::context_t>(), {endpoint}, o));
}

}  // namespace

Result<RelayJoins> RelayJoins::resolve(const RunConfig& cfg, const CurveKeyPair& keys, std::vector<std::string>& endpoints,
                                       std::vector<std::string>& node_keys, const std::function<void(const std::string&)>& log,
                                       const std::function<bool()>& stopped) {
    using R = Result<RelayJoins>;
    RelayJoins j;
    std::vector<std::string> wanted;
    for (size_t i = 0; i < endpoints.size(); ++i) {
        auto text = joined_key_text(endpoints[i]);
        if (!text) continue;
        auto key = public_key_from_text_or_file(*text);
        if (!key) return R::error("cluster.endpoints[" + std::to_string(i) + "]: " + key.message());
        if (i < node_keys.size() && !node_keys[i].empty() && node_keys[i] != *key)
            return R::error("cluster.endpoints[" + std::to_string(i) + "] names the key " + key_tag(*key) +
                            " but cluster.node_keys[" + std::to_string(i) + "] is " + key_tag(node_keys[i]));
        j.joined_.emplace_back(i, *key);
        wanted.push_back(*key);
    }
    // A listed node that does not answer where the layout says, when the layout has a relay: learned
    // unreachable, and looked for at the relay by its key (it may have joined from behind a NAT).
    if (!cfg.cluster.relay.empty() || !cfg.cluster.relay_listen.empty()) {
        for (size_t i = 0; i < endpoints.size() && i < node_keys.size(); ++i) {
            if (joined_key_text(endpoints[i]) || node_keys[i].empty() || answers(endpoints[i], keys, node_keys[i]))
                continue;
            log("coordinator: node " + std::to_string(i) + " does not answer at " + endpoints[i] +
                "; looking for its key " + key_tag(node_keys[i]) + " at the relay");
            j.joined_.emplace_back(i, node_keys[i]);
            wanted.push_back(node_keys[i]);
        }
    }
    if (j.joined_.empty()) return j;
    std::string relay = cfg.cluster.relay, relay_key;
    if (!cfg.cluster.relay_listen.empty()) {
        RelayOptions o;
        o.listen = cfg.cluster.relay_listen;
        o.public_host = cfg.cluster.relay_public_host;
        o.keys = keys;
        o.allowed = wanted;
        o.allowed.push_back(keys.public_key);  // this coordinator asks its own relay
        o.timeout_s = cfg.cluster.heartbeat_timeout_s;
        o.log = log;
        auto r = Relay::start(std::move(o));
        if (!r) return r.status();
        j.hosted_ = std::move(*r);
        relay = j.hosted_->endpoint();
        if (relay.rfind("tcp://0.0.0.0:", 0) == 0) relay = "tcp://127.0.0.1:" + relay.substr(14);
        relay_key = keys.public_key;
        log("coordinator: hosting a relay on " + j.hosted_->endpoint() + " (key " + keys.public_key + ")");
    } else {
        auto k = public_key_from_text_or_file(cfg.cluster.relay_key);
        if (!k) return R::error("cluster.relay_key: " + k.message());
        relay_key = *k;
    }
    auto dir = RelayDirectory::connect(relay, relay_key, keys);
    if (!dir) return dir.status();
    j.dir_ = std::move(*dir);
    auto found = j.dir_->wait_for(wanted, cfg.cluster.join_timeout_s, log, stopped);
    if (!found) return found.status();
    if (node_keys.size() < endpoints.size()) node_keys.resize(endpoints.size());
    for (auto& [i, key] : j.joined_) {
        // The relay counts for as long as it runs: this run's share is what comes after this.
        auto base = j.dir_->counters(key);
        j.base_[key] = base ? *base : RelayCounters{};
        endpoints[i] = found->at(key);
        node_keys[i] = key;
        log("coordinator: node " + std::to_string(i) + " (key " + key_tag(key) + ") joined the relay: " + endpoints[i]);
    }
    return j;
}

std::vector<std::string> RelayJoins::report(const std::vector<std::string>& names) {
    std::vector<std::string> lines;
    for (auto& [i, key] : joined_) {
        const std::string who = i < names.size() ? names[i] : "node " + std::to_string(i);
        auto c = dir_->counters(key);
        if (!c) {
            lines.push_back(who + ": no relay counters: " + c.message());
            continue;
        }
        const RelayCounters& b = base_[key];
        c->joins -= b.joins, c->connections -= b.connections, c->bulk_connections -= b.bulk_connections;
        for (int k = 0; k < kRelayClasses; ++k) {
            auto less = [](ZmtpCount& x, const ZmtpCount& y) { x.bytes -= y.bytes, x.payload -= y.payload, x.frames -= y.frames; };
            less(c->to_node[static_cast<size_t>(k)], b.to_node[static_cast<size_t>(k)]);
            less(c->from_node[static_cast<size_t>(k)], b.from_node[static_cast<size_t>(k)]);
        }
        std::string line = who + " via relay (rejoins " + std::to_string(c->joins) + ", connections " +
                           std::to_string(c->connections) + "):";
        for (int k = 0; k < kRelayClasses; ++k) {
            const auto& in = c->to_node[static_cast<size_t>(k)];
            const auto& out = c->from_node[static_cast<size_t>(k)];
            line += std::string(" ") + to_string(static_cast<RelayClass>(k)) + " to node " + std::to_string(in.bytes) +
                    " B (payload " + std::to_string(in.payload) + " B in " + std::to_string(in.frames) +
                    " frames), from node " + std::to_string(out.bytes) + " B (payload " + std::to_string(out.payload) +
                    " B in " + std::to_string(out.frames) + " frames);";
        }
        lines.push_back(line);
    }
    return lines;
}

void RelayJoins::mark_relayed(std::vector<NodeRole>& roles, const std::vector<std::string>& endpoints) const {
    std::set<std::string> data;  // the joined nodes' data endpoints, at the relay
    for (const auto& [i, key] : joined_)
        if (i < endpoints.size())
            if (auto eps = derive_endpoints(endpoints[i])) data.insert(eps->data);
    for (NodeRole& r : roles) {
        r.mesh_relayed.clear();
        for (size_t m = 0; m < r.mesh_endpoints.size(); ++m)
            if (data.count(r.mesh_endpoints[m])) r.mesh_relayed.push_back(static_cast<int>(m));
    }
}

void RelayJoins::mark(std::vector<NodeInfo>& nodes) const {
    for (const auto& [i, key] : joined_)
        if (i < nodes.size()) nodes[i].joined_key = key;
}

}  // namespace tw
