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

// The clock rule of one outer round: it starts when the slowest member arrives (the maximum of
// `clocks`) and this member's uplink then carries `bytes` back to back. Returns this member's
// clock after the round; the time it spent waiting or sending is the result minus `mine`.
double round_end_s(const std::vector<double>& clocks, const LinkSpec& outer, uint64_t bytes);

// Each clock advances by its steps' compute; every round follows round_end_s.
Timeline retime(const std::vector<ReplicaTrace>& replicas, const LinkSpec& outer);

}  // namespace tw
