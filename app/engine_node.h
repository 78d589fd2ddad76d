// Wiring of a node: the engine's replica worker with its data-plane mesh from remote/.
#pragma once

#include <memory>

#include "app/version.h"
#include "coordinator/run_session.h"
#include "core/worker.h"

namespace zmq { class context_t; }

namespace tw::cli {

// Workers for this process's nodes; inproc:// meshes need the context all of them share.
WorkerFactory engine_worker_factory(std::shared_ptr<zmq::context_t> ctx);

// The engine's data preparation for this process's nodes (`prepare`, remote/protocol.h): the run's
// data prepared or found under the node's data root, its fingerprint and unigram baseline.
DataPreparer engine_data_preparer();

// The hooks a coordinated session needs from this binary: the engine's workers and data
// preparation for thread nodes, and `exe` (this binary) for child-process nodes.
EngineHooks engine_hooks(std::string exe);

}  // namespace tw::cli
