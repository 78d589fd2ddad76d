// The worker of one stage node of a pipeline replica (docs/methods.md §5–§7, §10): it runs its stage of
// every micro-batch in the schedule's order (GPipe or 1F1B), receiving activations from the
// previous stage and gradients from the next over the data plane (compressed into a subspace where
// the layout says so, routed to a random replica's next stage under NoLoCo routing). Every H steps
// the holders of each stage sync it with the outer algorithm (engine/worker/stage_rounds.h, which
// the full replicas of the same run share through the replica worker's loop).
//
// Simulated time: compute advances a node's clock by its measured seconds; a message leaves when
// the sender's uplink is free, arrives latency + 8·bytes/bandwidth later, and the receiver's clock
// waits for it. So a schedule's bubbles and exposed transfers show up as idle time.
#pragma once

#include <functional>
#include <memory>

#include "core/collective.h"
#include "core/config.h"
#include "core/role.h"
#include "core/worker.h"

namespace tw {

// `mesh` holds every node of the run (NodeRole::mesh_rank). `set_abort` as for the replica worker.
std::unique_ptr<Worker> make_pipeline_worker(const RunConfig& cfg, const NodeRole& role,
                                             std::unique_ptr<Collective> mesh,
                                             std::function<void(std::function<bool()>)> set_abort);

}  // namespace tw
