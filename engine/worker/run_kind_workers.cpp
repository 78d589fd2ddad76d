// The built-in kinds' workers and the registry; see run_kind_workers.h.
#include "engine/worker/run_kind_workers.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "engine/ensemble/hdee.h"
#include "engine/worker/pipeline_worker.h"
#include "engine/worker/replica_worker.h"
#include "engine/worker/skippipe_worker.h"

namespace tw {
namespace {

// A pipeline's stage node runs the stage executor; a full replica (or a spare) the replica loop,
// with per-stage rounds when the run has pipeline replicas.
std::unique_ptr<Worker> replicas_worker(const RunConfig& cfg, const NodeRole& role, WorkerParts p) {
    if (role.kind == NodeKind::kPipeline) return make_pipeline_worker(cfg, role, std::move(p.mesh), std::move(p.set_abort));
    return make_replica_worker(cfg, role, std::move(p.mesh), std::move(p.set_abort), std::move(p.store));
}

std::unique_ptr<Worker> skippipe_worker(const RunConfig& cfg, const NodeRole& role, WorkerParts p) {
    return make_skippipe_worker(cfg, role, std::move(p.mesh), std::move(p.set_abort));
}

// An HDEE expert talks to nobody but the coordinator: its role has no mesh and no group.
std::unique_ptr<Worker> hdee_worker(const RunConfig& cfg, const NodeRole& role, WorkerParts) {
    return make_expert_worker(cfg, role);
}

std::vector<RunKindWorker>& table() {
    static std::vector<RunKindWorker> rows{{RunKind::kReplicas, replicas_worker},
                                           {RunKind::kSkipPipe, skippipe_worker},
                                           {RunKind::kHdee, hdee_worker}};
    return rows;
}

}  // namespace

void register_run_kind_worker(RunKindWorker row) {
    const RunKindRow* core = nullptr;
    for (const RunKindRow& r : run_kind_table())
        if (r.id == row.kind) core = &r;
    auto refuse = [](const std::string& why) {
        std::fprintf(stderr, "thinwire: run kind worker registry: %s\n", why.c_str());
        std::abort();
    };
    if (!core) refuse("a worker for run kind " + std::to_string(static_cast<int>(row.kind)) + ", which has no core row");
    if (!row.make) refuse(std::string("run kind \"") + core->name + "\" registers no worker");
    for (const RunKindWorker& r : table())
        if (r.kind == row.kind) refuse(std::string("run kind \"") + core->name + "\" has a worker already");
    table().push_back(row);
}

Result<std::unique_ptr<Worker>> make_run_kind_worker(RunKind kind, const RunConfig& cfg, const NodeRole& role,
                                                     WorkerParts parts) {
    for (const RunKindWorker& r : table())
        if (r.kind == kind) return r.make(cfg, role, std::move(parts));
    std::string name = std::to_string(static_cast<int>(kind));
    for (const RunKindRow& r : run_kind_table())
        if (r.id == kind) name = std::string("\"") + r.name + "\"";
    return Status::error("run kind " + name + " has no worker on this node");
}

}  // namespace tw
