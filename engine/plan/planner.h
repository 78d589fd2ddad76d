// The planner (`thinwire plan`, issue 15): what a layout costs per round and in total — bytes,
// compute, communication, exposed time, utilisation, simulated wall-clock — without data and
// without training, at any model size. It writes the traces a run of the layout would store under
// `[compute] model = "flops"` and replays them with core/timeline.h, the same arithmetic the live
// clocks and `runs retime` use; its bytes come from the codecs' own wire_bytes over the model's
// tensor shapes (core/model_size.h model_tensors) and, for rings, engine/algo/ring_allreduce.h's
// ring_payload_bytes. So a flops run of the same layout gives the same bytes and clocks exactly.
//
// Covered: runs of full one-node replicas (DDP, DiLoCo, Streaming DiLoCo, SparseLoCo, NoLoCo,
// DeMo, over their topologies). Refused by name: pipeline replicas, replicas of several nodes,
// SkipPipe, HDEE. Units: seconds, bytes, FLOP/s. Pure: no sockets, no tensors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/status.h"
#include "core/timeline.h"

namespace tw {

struct PlannedNode {
    std::string name;
    int replica = 0;
    double step_s = 0;            // one inner step under the compute model
    uint64_t round_bytes = 0;     // payload bytes sent in its first round
    uint64_t total_bytes = 0;     // payload bytes sent over the whole run (start-up checks excluded)
    int64_t rounds = 0;
    double sim_s = 0, compute_s = 0, exposed_s = 0;  // from the replay
};

struct Plan {
    int64_t params = 0, steps = 0, tokens = 0;  // tokens over every replica
    double effective_flops = 0;                 // replica 0's
    std::vector<PlannedNode> nodes;
    Timeline timeline;  // the replay, nodes in order
    double utilisation() const;     // Σ compute / Σ (compute + exposed)
    double sim_s() const;           // the latest node's clock
};

// The plan of `cfg` (a checked config; model.vocab_size must be set) for cfg.train.steps steps.
// cfg.compute.model is taken as "flops" whatever it says (a measured plan has no meaning).
Result<Plan> plan_run(RunConfig cfg);

}  // namespace tw
