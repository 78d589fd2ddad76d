// The engine's side of the node boundary: nothing a worker, its factory or a data preparation
// throws leaves as an exception. LibTorch's errors (c10::Error, whose what() carries a backtrace
// of addresses) and the standard library's become error values with a one-line message, so the
// coordinator marks the run failed with that reason and the person sees the reason, not a stack.
// The node server catches what still gets through (remote/node_server.cpp); this is the layer that
// knows LibTorch.
#pragma once

#include <exception>
#include <memory>
#include <string>

#include "core/worker.h"

namespace tw {

// The message of an exception a node caught: LibTorch's without its backtrace, others' what().
std::string exception_message(const std::exception& e);

// `w`, whose run() returns an error instead of throwing: "worker: MESSAGE". Owns `w`.
std::unique_ptr<Worker> guard_worker(std::unique_ptr<Worker> w);

// `f`, whose workers are guarded and whose own exceptions are errors (the node server prefixes
// "configure: ").
WorkerFactory guard_worker_factory(WorkerFactory f);

// `p`, whose exceptions are errors (the node server prefixes "prepare: ").
DataPreparer guard_data_preparer(DataPreparer p);

}  // namespace tw
