// The worker of one node of a run with pipeline replicas (METHODS.md §5–§7, §10): a stage node of
// a pipeline replica runs its stage of every micro-batch in the schedule's order (GPipe or 1F1B),
// receiving activations from the previous stage and gradients from the next over the data plane
// (compressed into a subspace where the layout says so, routed to a random replica's next stage
// under NoLoCo routing); a full replica trains the whole model on the whole batch. Every H steps the
// holders of each stage (every full replica's slice s and every pipeline's stage-s node) sync that
// stage with the outer algorithm, S groups one after the other, with the AD switches of §7.
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
