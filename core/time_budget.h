// Time-budgeted rounds for uneven hardware (docs/time_budget.md). With
// `outer.round_time_s` > 0 (simulated seconds; only under compute.model = "flops", where a step's
// time is deterministic) replica r runs n_r inner steps per round: the largest n ≥ 1 with
// n · step_s_r ≤ round_time_s, step_s_r being the compute model's whole-model step on replica r's
// rate (effective_flops, node_speed included; the same double ComputeTime::train_step returns). Every
// node computes every replica's n_r from the config alone, so no count travels on the wire. The
// number of rounds stays train.steps / outer.inner_steps; replica r's worker runs with H = n_r and
// train.steps = rounds · n_r. The aggregate weights replica r by the tokens it processed in the
// round, n_r · batch_size · seq_len.
//
// Torch-free (the coordinator, a planner and re-timing can use it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/status.h"

namespace tw {

struct TimeBudget {
    int64_t rounds = 0;                // train.steps / outer.inner_steps
    std::vector<int64_t> inner_steps;  // n_r, per replica
    std::vector<double> step_s;        // replica r's modelled step (s)
    std::vector<double> tokens;        // n_r · batch_size · seq_len: replica r's tokens per round
    // R · w_r / Σ w: the factor replica r's contribution takes in a plain mean over R replicas so that
    // the mean becomes Σ w_r Δ_r / Σ w_r. Exactly 1 for every replica when all n_r are equal.
    std::vector<double> mean_scale;
};

// Every problem of outer.round_time_s against the rest of the config, each naming the key
// (validate_config calls it): flops only, diloco (fp32/bf16 on the wire) or sparseloco, one node per
// replica, no pipeline replicas, train.steps a multiple of outer.inner_steps.
void validate_time_budget(const RunConfig& c, std::vector<std::string>& out);

// The plan of a config with round_time_s > 0 and model.vocab_size resolved. An error names the key
// when a replica's step does not fit the round even once.
Result<TimeBudget> time_budget(const RunConfig& c);

// Replica `replica`'s config: outer.inner_steps = n_r, train.steps = rounds · n_r (the learning-rate
// schedule then spans the replica's own steps over the same simulated time).
RunConfig budgeted_config(const RunConfig& c, const TimeBudget& b, int64_t replica);

}  // namespace tw
