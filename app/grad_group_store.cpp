// A gradient group's store and Gloo address for a node; see grad_group_store.h.
#include "app/grad_group_store.h"

#include "core/layout.h"
#include "remote/kv_store.h"

namespace tw::cli {
namespace {

// The host of a tcp:// endpoint as written (an IPv6 host keeps its brackets); "" for inproc/ipc.
std::string tcp_host(const std::string& ep) {
    if (ep.rfind("tcp://", 0) != 0) return "";
    const auto colon = ep.rfind(':');
    return colon == std::string::npos || colon < 6 ? "" : ep.substr(6, colon - 6);
}
bool is_wildcard(const std::string& h) { return h == "*" || h == "0.0.0.0" || h == "[::]" || h == "::"; }
std::string unbracket(const std::string& h) {
    return h.size() >= 2 && h.front() == '[' && h.back() == ']' ? h.substr(1, h.size() - 2) : h;
}

// Gloo binds its pair sockets to this address and advertises it to the peers through the store, so
// it must be this node's own address, never every interface: the host of the node's listen
// endpoint; for a wildcard listen, the address the coordinator reaches this node at; loopback for
// inproc/ipc nodes, which share one machine.
Result<std::string> gloo_bind_host(const NodeSite& site, const NodeRole& role) {
    if (site.listen.rfind("tcp://", 0) != 0) return std::string("127.0.0.1");
    std::string h = tcp_host(site.listen);
    if (is_wildcard(h) && role.mesh_rank >= 0 && static_cast<size_t>(role.mesh_rank) < role.mesh_endpoints.size())
        h = tcp_host(role.mesh_endpoints[static_cast<size_t>(role.mesh_rank)]);
    if (is_wildcard(h) && role.grad_group.rank == 0) h = role.grad_group.host;
    if (h.empty() || is_wildcard(h))
        return Result<std::string>::error("gradient group: this node listens on " + site.listen +
                                          ", and Gloo needs the one address its peers reach it at; listen on that "
                                          "address instead of every interface");
    return unbracket(h);
}

// Where the group's store is bound (rank 0) and reached (everyone). TCP nodes: the group's host and
// port for connecting, and rank 0 binds its own listen host at its P+3 (core/layout.h). inproc
// nodes share this process's context, so the store is an inproc endpoint named after the group's
// (unique) port. ipc nodes share one machine: loopback TCP at the port the coordinator chose.
struct StoreEndpoints {
    std::string bind, connect;
};
Result<StoreEndpoints> store_endpoints(const NodeSite& site, const GlooGroupSpec& g) {
    const std::string port = std::to_string(g.port);
    if (site.listen.rfind("inproc://", 0) == 0) {
        const std::string ep = "inproc://tw-store-" + g.host + ":" + port;
        return StoreEndpoints{ep, ep};
    }
    StoreEndpoints e;
    e.connect = "tcp://" + g.host + ":" + port;
    e.bind = e.connect;
    if (site.listen.rfind("tcp://", 0) == 0) {
        auto own = derive_endpoints(site.listen);
        if (!own) return own.status();
        e.bind = "tcp://" + tcp_host(site.listen) + ":" + std::to_string(own->store_port);
    }
    return e;
}

}  // namespace

// The gradient group's store for a worker: rank 0 starts the server, every member connects a client.
Result<GroupStore> grad_group_store(const std::shared_ptr<zmq::context_t>& ctx, const NodeSite& site,
                               const NodeRole& role) {
    const GlooGroupSpec& g = role.grad_group;
    GroupStore out;
    auto bind_host = gloo_bind_host(site, role);
    if (!bind_host) return bind_host.status();
    out.bind_host = *bind_host;
    auto eps = store_endpoints(site, g);
    if (!eps) return eps.status();
    CurveKeyPair own;
    if (!site.public_key.empty()) own = {site.public_key, site.secret_key};
    if (g.rank == 0) {
        KvServerOptions so;
        so.keys = own;
        if (MetricSink* events = site.events)
            so.log = [events, name = role.name](const std::string& text) {
                events->event({0, name, EventLevel::kWarning, "store", text});
            };
        auto server = KvStoreServer::start(ctx, eps->bind, std::move(so));
        if (!server) return server.status();
        out.host = std::move(*server);
    }
    KvClientOptions co;
    co.keys = own;
    if (!own.empty()) co.server_key = g.keys[0];
    // Every member is configured (rank 0's store is up) before any starts, so a set that is not
    // answered within minutes means rank 0 is gone.
    co.op_timeout_ms = 10 * 60 * 1000;
    auto client = KvStoreClient::connect(ctx, eps->connect, std::move(co));
    if (!client) return client.status();
    out.client = std::move(*client);
    return out;
}


}  // namespace tw::cli
