// The engine's side of the run-kind registry (core/run_kind.h names the kinds): one row per kind
// with the worker its nodes run. A node builds its transports from its role (the data-plane mesh
// when role.mesh_rank ≥ 0, the gradient group's store when role.grad_group.size > 1; app/
// engine_node.cpp) and hands them to its kind's `make`. Adding a run kind: its core row and this
// row, each registered from the kind's own file.
//
// Rows are registered before main (static initialisers); afterwards the table is read-only and
// every function is thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "core/collective.h"
#include "core/config.h"
#include "core/kv_store.h"
#include "core/role.h"
#include "core/run_kind.h"
#include "core/worker.h"

namespace tw {

// What a node's worker is built from besides its config and role. The worker owns all of it.
struct WorkerParts {
    std::unique_ptr<Collective> mesh;  // the role's data-plane collective; null when it has none
    // Makes the mesh's waits end when a stop arrives (may be empty).
    std::function<void(std::function<bool()>)> set_abort;
    GroupStore store;                  // the gradient group's rendezvous; empty without a group
};

using RunKindWorkerMake = std::unique_ptr<Worker> (*)(const RunConfig& cfg, const NodeRole& role, WorkerParts parts);

struct RunKindWorker {
    RunKind kind{};
    RunKindWorkerMake make = nullptr;
};

// Adds a row; aborts naming the clash when the kind has a row already or has no core row.
void register_run_kind_worker(RunKindWorker row);
// The worker of a node of a `kind` run, or the error naming a kind without a worker row.
Result<std::unique_ptr<Worker>> make_run_kind_worker(RunKind kind, const RunConfig& cfg, const NodeRole& role,
                                                     WorkerParts parts);

}  // namespace tw
