// Node wiring; see engine_node.h.
#include "app/engine_node.h"

#include <algorithm>
#include <set>

#include "app/grad_group_store.h"

#include "core/layout.h"
#include "engine/data/data_warnings.h"
#include "engine/data/dataset.h"
#include "engine/data/stream_check.h"
#include "engine/model/llama.h"
#include "engine/worker/guarded_worker.h"
#include "core/model_size.h"
#include "core/run_kind.h"
#include "engine/worker/run_kind_workers.h"
#include "remote/kv_store.h"
#include "remote/zmq_collective.h"

namespace tw::cli {

EngineHooks engine_hooks(std::string exe) {
    EngineHooks h;
    h.worker_factory = [](std::shared_ptr<zmq::context_t> ctx) { return engine_worker_factory(std::move(ctx)); };
    h.prepare_data = engine_data_preparer();
    h.exe = std::move(exe);
    h.version = thinwire_version();
    return h;
}

DataPreparer engine_data_preparer() {
    return guard_data_preparer([](const RunConfig& cfg, const NodeSite&) -> Result<DataReport> {
        DataReport r;
        auto data = prepare_data(cfg.data, [&r](const std::string& line) { r.log.push_back(line); });
        if (!data) return data.status();
        // What the run needs from the data, checked where it is first prepared, so a run whose data
        // cannot fill a window or a batch fails before any node is configured.
        if (Status st = check_run_data(cfg, *data); !st) return st;
        for (auto& w : data_warnings(cfg, *data)) r.log.push_back(w);
        auto fp = data_fingerprint(*data);
        if (!fp) return fp.status();
        r.vocab_size = data->vocab_size;
        r.fingerprint = to_wire(*fp);
        // The run's vocabulary: the model's when the layout fixes it, else the tokenizer's.
        const int64_t vocab = cfg.model.vocab_size > 0 ? cfg.model.vocab_size : data->vocab_size;
        r.unigram_loss = unigram_loss_of(*data, cfg.data.genres, vocab);  // the documents the run uses
        return r;
    });
}

WorkerFactory engine_worker_factory(std::shared_ptr<zmq::context_t> ctx) {
    // Guarded: whatever the engine throws becomes the run's failure reason (engine/worker/guarded_worker.h).
    return guard_worker_factory([ctx](const RunConfig& cfg, const NodeRole& role, const NodeSite& site) -> Result<std::unique_ptr<Worker>> {
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
        // A reachable member's outbox for relayed members binds the store's port (remote/mesh_outbox.h).
        if (grad_group && !role.mesh_relayed.empty())
            return Status::error("configure: " + role.name + " has a gradient group in a mesh with relayed members");
        if (grad_group && cfg.cluster.stages > 1)
            return Status::error("configure: " + role.name + " is a pipeline node with a gradient group");
        GroupStore store;
        if (grad_group) {
            auto s = grad_group_store(ctx, site, role);
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
            o.max_frame_bytes = largest_mesh_message_bytes(cfg);
            o.hub_endpoint = role.hub_endpoint;
            o.hub_key = role.hub_key;
            o.relayed_members = role.mesh_relayed;
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
        WorkerParts parts;
        parts.mesh = std::move(mesh);
        parts.set_abort = [raw](std::function<bool()> f) {
            if (raw) raw->set_abort(std::move(f));
        };
        parts.store = std::move(store);
        return make_run_kind_worker(run_kind_of(cfg).id, cfg, role, std::move(parts));
    });
}

}  // namespace tw::cli
