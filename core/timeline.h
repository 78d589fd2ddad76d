// Re-timing a finished synchronous run for another network (METHODS.md §10): loss per step does
// not depend on bandwidth, so the simulated timeline follows from the stored per-step compute
// seconds and per-round bytes alone. Mirrors the clock rules `thinwire train` applies live.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "core/network.h"

namespace tw {

struct ReplicaTrace {
    std::map<int64_t, double> compute_s;   // step → compute seconds of that step
    std::map<int64_t, uint64_t> round_bytes;  // round's last step → bytes this replica sent in it
};

struct Timeline {
    std::vector<double> sim_s;      // final clock per replica
    std::vector<double> compute_s;  // total compute per replica
    std::vector<double> exposed_s;  // total time waiting for or in outer syncs per replica
};

// Each clock advances by its steps' compute; at a round step every replica waits for the slowest
// (the maximum clock) and then spends transfer_s(outer, bytes) on its uplink.
Timeline retime(const std::vector<ReplicaTrace>& replicas, const LinkSpec& outer);

}  // namespace tw
