// Re-timing a finished synchronous run for another network (METHODS.md §10): loss per step does
// not depend on bandwidth, so the simulated timeline follows from the stored per-step compute
// seconds and per-round bytes alone. Mirrors the clock rules the replica worker applies live
// (engine/worker/replica_worker.cpp: round_end_s is shared; the replay is kept equal to it by an
// integration test). Pipeline runs have clocks of their own and are not re-timed correctly yet.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/metrics.h"
#include "core/network.h"

namespace tw {

struct ReplicaTrace {
    std::map<int64_t, double> compute_s;   // step → compute seconds of that step
    std::map<int64_t, uint64_t> round_bytes;  // round's last step → bytes this replica sent in it
    std::map<int64_t, int64_t> round_hops;    // round's last step → sequential transfers (latencies); absent = 1
    std::map<int64_t, int64_t> round_overlap; // round's step → τ: the result is applied τ steps later; absent = 0
    std::map<int64_t, uint64_t> round_group;  // round's step → bitmask of the replicas exchanged with; absent = all
};

// The stored metrics a trace is made of, as the workers record them (engine/worker/): the step's
// train.compute_s and the round's round.bytes, round.hops, round.overlap_steps, round.group_mask.
// Every reader that rebuilds traces (the coordinator's sink, `runs retime`, the workbench) goes
// through these two, so the names and conversions live here only.
const std::vector<std::string>& trace_metric_names();
// Adds `m` to `t` if it is one of those metrics (by name); returns whether it was.
bool add_to_trace(ReplicaTrace& t, const MetricRecord& m);

struct Timeline {
    std::vector<double> sim_s;      // final clock per replica
    std::vector<double> compute_s;  // total compute per replica
    std::vector<double> exposed_s;  // total time waiting for or in outer syncs per replica
    std::vector<std::map<int64_t, double>> clock_at;  // per replica: step → clock after that step (and its round)
};

// The clock rule of one synchronisation round: it starts when the slowest member arrives (the
// maximum of `clocks`) and this member's uplink then carries `bytes` back to back in `hops`
// sequential steps, each paying the link's latency (an all-gather over a mesh is one hop; a ring
// all-reduce over R members is 2·(R−1)). Returns this member's clock after the round; the time it
// spent waiting or sending is the result minus its own clock.
double round_end_s(const std::vector<double>& clocks, const LinkSpec& link, uint64_t bytes, int64_t hops = 1);

// Node names ("replica-10", "replica-2.1") in replica order (numerically), the order retime()
// expects its traces in: round_group masks name replicas by index.
std::vector<std::string> replica_order(std::vector<std::string> names);

// Each clock advances by its steps' compute; every round follows round_end_s over the clocks of its
// group (all replicas unless round_group says otherwise). A round with an overlap of τ steps does
// not stop the clock: its end is due τ steps later, when the clock becomes max(clock, end). At each
// step: compute, then results due now, then the step's own round — the order the live worker uses.
Timeline retime(const std::vector<ReplicaTrace>& replicas, const LinkSpec& link);

}  // namespace tw
