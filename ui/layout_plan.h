// What the Plan view shows for the layout in the editor before it runs: the planner's
// (engine/plan/planner.h, the code `thinwire plan` runs) per-node bytes, compute, exposed
// communication, utilisation and simulated wall-clock, in plain values so ui/ needs neither the
// planner's library nor LibTorch: the RunDriver (app/) calls the planner and fills this in.
// Units: seconds, bytes, FLOP/s.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tw::ui {

struct LayoutPlanNode {
    std::string name;
    int replica = 0;
    double step_s = 0;         // one inner step under the flops compute model
    int64_t rounds = 0;        // synchronisation rounds over the run
    uint64_t round_bytes = 0;  // payload bytes it sends in its first round
    uint64_t total_bytes = 0;  // over the whole run
    double compute_s = 0, exposed_s = 0, sim_s = 0;  // totals of the replay
};

struct LayoutPlan {
    std::string algorithm, preset, hardware, network;  // as the layout names them
    int64_t replicas = 0, params = 0, steps = 0, tokens = 0, tokens_per_step = 0;
    double effective_flops = 0;                        // replica 0's
    double outer_bandwidth_bps = 0, outer_latency_s = 0;
    bool measured_layout = false;  // the layout says compute.model = "measured": planned as flops on its hardware
    std::vector<LayoutPlanNode> nodes;
    double utilisation = 0;  // Σ compute / Σ (compute + exposed)
    double sim_s = 0;        // the latest node's clock: the run's simulated wall-clock
};

}  // namespace tw::ui
