// Node wiring; see engine_node.h.
#include "app/engine_node.h"

#include "core/layout.h"
#include "engine/worker/pipeline_worker.h"
#include "engine/worker/replica_worker.h"
#include "remote/zmq_collective.h"

namespace tw::cli {

const char* thinwire_version() { return TW_VERSION; }

WorkerFactory engine_worker_factory(std::shared_ptr<zmq::context_t> ctx) {
    return [ctx](const RunConfig& cfg, const NodeRole& role, const std::string& listen) -> Result<std::unique_ptr<Worker>> {
        std::unique_ptr<ZmqCollective> mesh;
        if (role.mesh_rank >= 0) {
            auto own = derive_endpoints(listen);
            if (!own) return own.status();
            // Peers are reached at the addresses the coordinator knows; this node binds its own view
            // of its data endpoint (e.g. 0.0.0.0 where the coordinator says a host name).
            auto endpoints = role.mesh_endpoints;
            endpoints[static_cast<size_t>(role.mesh_rank)] = own->data;
            // Waits are abortable (a stop ends them), so the timeout only has to outlast a pause.
            auto m = ZmqCollective::create(ctx, endpoints, role.mesh_rank, 30 * 60 * 1000);
            if (!m) return m.status();
            mesh = std::move(*m);
        }
        ZmqCollective* raw = mesh.get();
        auto set_abort = [raw](std::function<bool()> f) {
            if (raw) raw->set_abort(std::move(f));
        };
        if (cfg.cluster.stages > 1) return make_pipeline_worker(cfg, role, std::move(mesh), set_abort);
        return make_replica_worker(cfg, role, std::move(mesh), set_abort);
    };
}

}  // namespace tw::cli
