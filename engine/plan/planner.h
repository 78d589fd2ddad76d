// The planner (`thinwire plan`): what a layout costs per round and in total — bytes,
// compute, communication, exposed time, utilisation, simulated wall-clock — without data and
// without training, at any model size. It writes the traces a run of the layout would store under
// `[compute] model = "flops"` and replays them with core/timeline.h, the same arithmetic the live
// clocks and `runs retime` use; its bytes come from the codecs' own wire_bytes over the model's
// tensor shapes (core/model_size.h model_tensors) and, for rings, engine/algo/ring_allreduce.h's
// ring_payload_bytes (engine/plan/round_cost.h), and a pipeline's messages from the boundary
// codecs' own byte functions (engine/plan/pipeline_plan.h). So a flops run of the same layout
// gives the same bytes and clocks exactly.
//
// Covered: runs of full one-node replicas (DDP, DiLoCo, Streaming DiLoCo, SparseLoCo, NoLoCo,
// DeMo, over their topologies), and runs with pipeline replicas (cluster.stages > 1): uniform
// (every replica a pipeline) and heterogeneous (full replicas beside pipelines), GPipe or 1F1B,
// any micro-batch count, dense or subspace boundaries of any rank and coordinate dtype, fixed or
// random routing, with SparseLoCo, DiLoCo or NoLoCo synced per stage and AD2's frozen-table
// messages. Refused by name: replicas of several nodes, SkipPipe, HDEE.
// Units: seconds, bytes, FLOP/s. Pure: no sockets, no tensors (LibTorch is linked for the codecs'
// byte functions only).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/status.h"
#include "core/timeline.h"

namespace tw {

struct PlannedNode {
    std::string name;             // the run's node name: replica-R, or replica-R.S for a stage node
    int replica = 0;
    int stage = -1;               // a pipeline replica's stage; -1 for a node holding the whole model
    double step_s = 0;            // one inner step under the compute model (a stage node: its segments)
    uint64_t round_bytes = 0;     // outer-sync payload bytes sent in its first round
    uint64_t inter_stage_bytes = 0;  // activations, gradients, norms and AD2 tables sent over the run
    uint64_t total_bytes = 0;     // every payload byte sent over the run: rounds + inter-stage
                                  // (start-up weight checks excluded)
    int64_t rounds = 0;
    double sim_s = 0, compute_s = 0, exposed_s = 0;  // from the replay
    double sync_exposed_s = 0;    // the part of exposed_s spent waiting for outer rounds
};

struct Plan {
    int64_t params = 0, steps = 0, tokens = 0;  // tokens over every replica
    double effective_flops = 0;                 // replica 0's
    std::vector<PlannedNode> nodes;
    Timeline timeline;  // the replay, nodes in order
    double utilisation() const;       // Σ compute / Σ (compute + exposed): bubbles and transfers count
    double sync_utilisation() const;  // Σ compute / Σ (compute + sync_exposed): the paper's measure
                                      // (docs/methods.md §7), outer-sync waits only
    double sim_s() const;           // the latest node's clock
};

// The plan of `cfg` (a checked config; model.vocab_size must be set) for cfg.train.steps steps.
// cfg.compute.model is taken as "flops" whatever it says (a measured plan has no meaning).
Result<Plan> plan_run(RunConfig cfg);

}  // namespace tw
