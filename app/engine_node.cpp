// Node wiring; see engine_node.h.
#include "app/engine_node.h"

#include <algorithm>
#include <set>

#include "core/layout.h"
#include "engine/data/dataset.h"
#include "engine/ensemble/hdee.h"
#include "engine/model/llama.h"
#include "engine/worker/pipeline_worker.h"
#include "engine/worker/replica_worker.h"
#include "remote/kv_store.h"
#include "remote/zmq_collective.h"

namespace tw::cli {

const char* thinwire_version() { return TW_VERSION; }

size_t largest_data_frame_bytes(const RunConfig& cfg) {
    ModelConfig m = cfg.model;
    if (m.vocab_size <= 0) m.vocab_size = cfg.data.vocab_size;
    // Dense fp32 outer gradients of the whole model, or one step's dense fp32 activations: every
    // codec and boundary of the run sends no more than the larger of the two.
    const auto params = static_cast<size_t>(std::max<int64_t>(count_parameters(m), 1));
    const auto acts = static_cast<size_t>(std::max<int64_t>(cfg.train.batch_size, 1)) *
                      static_cast<size_t>(std::max<int64_t>(m.seq_len, 1)) *
                      static_cast<size_t>(std::max<int64_t>(m.d_model, 1));
    const size_t payload = 4 * std::max(params, acts);
    return payload + payload / 4 + (1u << 20);  // 25% + 1 MiB margin for codec headers and index arrays
}

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

// The gradient group's store for a worker: rank 0 starts the server, every member connects a client.
Result<GroupStore> group_store(const std::shared_ptr<zmq::context_t>& ctx, const NodeSite& site,
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

}  // namespace

EngineHooks engine_hooks(std::string exe) {
    EngineHooks h;
    h.worker_factory = [](std::shared_ptr<zmq::context_t> ctx) { return engine_worker_factory(std::move(ctx)); };
    h.prepare_data = engine_data_preparer();
    h.exe = std::move(exe);
    h.version = thinwire_version();
    return h;
}

DataPreparer engine_data_preparer() {
    return [](const RunConfig& cfg, const NodeSite&) -> Result<DataReport> {
        DataReport r;
        auto data = prepare_data(cfg.data, [&r](const std::string& line) { r.log.push_back(line); });
        if (!data) return data.status();
        auto fp = data_fingerprint(*data);
        if (!fp) return fp.status();
        r.vocab_size = data->vocab_size;
        r.fingerprint = to_wire(*fp);
        // The run's vocabulary: the model's when the layout fixes it, else the tokenizer's.
        const int64_t vocab = cfg.model.vocab_size > 0 ? cfg.model.vocab_size : data->vocab_size;
        r.unigram_loss = unigram_loss(*data->train, *data->val, vocab);
        return r;
    };
}

WorkerFactory engine_worker_factory(std::shared_ptr<zmq::context_t> ctx) {
    return [ctx](const RunConfig& cfg, const NodeRole& role, const NodeSite& site) -> Result<std::unique_ptr<Worker>> {
        // An HDEE expert talks to nobody but the coordinator: no mesh, no gradient group.
        if (role.kind == "expert") return make_expert_worker(cfg, role);
        const bool grad_group = role.grad_group.size > 1;
        if (!site.public_key.empty()) {
            if (role.mesh_rank >= 0 && role.mesh_keys.size() != role.mesh_endpoints.size())
                return Status::error("configure: this node has CurveZMQ keys but the run gave " +
                                     std::to_string(role.mesh_keys.size()) + " mesh keys for " +
                                     std::to_string(role.mesh_endpoints.size()) + " members");
            if (grad_group && role.grad_group.keys.size() != static_cast<size_t>(role.grad_group.size))
                return Status::error("configure: this node has CurveZMQ keys but the run gave " +
                                     std::to_string(role.grad_group.keys.size()) + " keys for a gradient group of " +
                                     std::to_string(role.grad_group.size));
            // One call with every peer this run's data listeners serve (the mesh's PULL and the
            // group's store): the hook replaces the set, so two calls would leave only the last.
            std::set<std::string> peers;
            if (role.mesh_rank >= 0) peers.insert(role.mesh_keys.begin(), role.mesh_keys.end());
            if (grad_group) peers.insert(role.grad_group.keys.begin(), role.grad_group.keys.end());
            if (site.allow_data_peers) site.allow_data_peers({peers.begin(), peers.end()});
        }
        if (grad_group && cfg.cluster.stages > 1)
            return Status::error("configure: " + role.name + " is a pipeline node with a gradient group");
        GroupStore store;
        if (grad_group) {
            auto s = group_store(ctx, site, role);
            if (!s) return s.status();
            store = std::move(*s);
        }
        std::unique_ptr<ZmqCollective> mesh;
        if (role.mesh_rank >= 0) {
            auto own = derive_endpoints(site.listen);
            if (!own) return own.status();
            // Peers are reached at the addresses the coordinator knows; this node binds its own view
            // of its data endpoint (e.g. 0.0.0.0 where the coordinator says a host name).
            auto endpoints = role.mesh_endpoints;
            endpoints[static_cast<size_t>(role.mesh_rank)] = own->data;
            MeshOptions o;
            // Waits are abortable (a stop ends them) and silence is its own deadline, so the
            // backstop only has to outlast a pause.
            o.timeout_ms = 30 * 60 * 1000;
            o.token = role.mesh_token;
            o.heartbeat_s = site.heartbeat_s;
            o.silence_timeout_s = site.heartbeat_timeout_s;
            o.max_frame_bytes = largest_data_frame_bytes(cfg);
            if (cfg.network.shape) {
                auto net = network_profile(cfg.network);
                if (!net) return net.status();
                o.shape = std::array<LinkSpec, 3>{net->intra, net->stage, net->outer};  // LinkClass order
            }
            if (!site.public_key.empty()) {
                o.public_key = site.public_key;
                o.secret_key = site.secret_key;
                o.member_keys = role.mesh_keys;
            }
            if (MetricSink* events = site.events)
                o.on_event = [events, name = role.name](const std::string& kind, const std::string& text) {
                    events->event({0, name, EventLevel::kWarning, kind, text});
                };
            auto m = ZmqCollective::create(ctx, endpoints, role.mesh_rank, std::move(o));
            if (!m) return m.status();
            mesh = std::move(*m);
        }
        ZmqCollective* raw = mesh.get();
        auto set_abort = [raw](std::function<bool()> f) {
            if (raw) raw->set_abort(std::move(f));
        };
        if (cfg.cluster.stages > 1) return make_pipeline_worker(cfg, role, std::move(mesh), set_abort);
        return make_replica_worker(cfg, role, std::move(mesh), set_abort, std::move(store));
    };
}

}  // namespace tw::cli
