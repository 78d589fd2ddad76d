// Wiring of a node: the engine's replica worker with its data-plane mesh from remote/.
#pragma once

#include <memory>

#include "core/worker.h"

namespace zmq { class context_t; }

namespace tw::cli {

// Workers for this process's nodes; inproc:// meshes need the context all of them share.
WorkerFactory engine_worker_factory(std::shared_ptr<zmq::context_t> ctx);

// The project version reported in capabilities.
const char* thinwire_version();

}  // namespace tw::cli
