// The worker of one node of a full replica (docs/methods.md §1–§5, §10, §11): trains the model on the
// node's part of the data, all-reduces gradients in its DDP group (c10d Gloo) every step, runs the
// outer algorithm's rounds over the data-plane mesh, keeps the node's simulated clock, and reports
// per-step and per-round metrics to its sink. It never opens a socket itself: the mesh arrives as a
// byte-level Collective (remote/ builds it), the Gloo group is c10d's own, meeting through the store it is handed.
#pragma once

#include <functional>
#include <memory>

#include "core/collective.h"
#include "core/config.h"
#include "core/kv_store.h"
#include "core/role.h"
#include "core/worker.h"

namespace tw {

// `mesh` is the role's data-plane collective (null when the role is not a mesh member).
// `set_abort` lets the worker make the mesh's waits end when a stop arrives (may be empty).
// `store` is the gradient group's rendezvous (role.grad_group.size > 1: a client, and on the
// group's rank 0 the server too); the worker owns it, so it closes when the worker is destroyed.
std::unique_ptr<Worker> make_replica_worker(const RunConfig& cfg, const NodeRole& role,
                                            std::unique_ptr<Collective> mesh,
                                            std::function<void(std::function<bool()>)> set_abort,
                                            GroupStore store);

}  // namespace tw
