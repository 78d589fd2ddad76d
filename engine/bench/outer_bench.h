// Per-round cost of a DiLoCo outer step (docs/methods.md §2) outside communication: R replicas of one
// model run as threads over the Collectives the caller hands in (the engine never opens a socket),
// and DiLoCo::last_timings() splits every round into encode, all-gather and apply.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/collective.h"
#include "core/config.h"
#include "core/status.h"

namespace tw {

struct OuterBenchConfig {
    int64_t rounds = 20;         // timed rounds
    int64_t warmup_rounds = 2;   // untimed rounds first (first connects, allocator warm-up)
    std::string dtype = "fp32";  // "fp32" | "bf16" on the wire, as outer.dtype
    double lr_outer = 0.7;       // η, μ: the DiLoCo defaults (they do not change the cost)
    double momentum = 0.9;
};

struct OuterBenchResult {
    int replicas = 0;
    std::string dtype;
    int64_t params = 0;          // P
    uint64_t payload_bytes = 0;  // P·b sent to each peer per round
    int64_t samples = 0;         // replicas × timed rounds behind each median
    // Medians over every (replica, timed round), seconds:
    double encode_s = 0;         // pseudo-gradient → wire buffer
    double apply_s = 0;          // decode + average + Nesterov + copy back
    double overhead_s = 0;       // encode_s + apply_s of the same round (median of the sums)
    double comm_s = 0;           // all_gather, including waiting for the slowest replica
};

// One replica per member of `members` (member i must have rank i), each a freshly initialised model
// of `cfg.model` (vocab_size resolved) wrapped in DiLoCo. Before every round each replica adds a fixed
// small perturbation of its own to its parameters, outside the timed sync, so the pseudo-gradients
// are non-zero and differ between replicas. Applies the compute-thread policy with cfg.run.threads.
Result<OuterBenchResult> bench_outer(const RunConfig& cfg, const std::vector<Collective*>& members,
                                     const OuterBenchConfig& oc);

}  // namespace tw
