// Re-timing a finished run for another network (docs/methods.md §10): loss per step does not depend on
// bandwidth, so a run's simulated timeline follows from what its nodes stored — per-step compute,
// per-round bytes, and for pipeline stages every compute segment and message — replayed through
// the clock the workers advanced live (core/sim_clock.h), in the order the workers ran them
// (core/pipeline_program.h for stage nodes). On the network a run was recorded on, the replay
// reproduces every node's recorded clocks bit for bit. What cannot be replayed is refused by name.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/metrics.h"
#include "core/network.h"
#include "core/status.h"

namespace tw {

// What one node stored that its clock depends on, by step (1-based inner step; 0 = before the first).
struct NodeTrace {
    std::map<int64_t, double> compute_s;                  // train.compute_s: the step's compute seconds
    std::map<int64_t, std::vector<double>> segments_s;    // clock.compute_s rows, in order (stage nodes)
    std::map<int64_t, std::vector<uint64_t>> sent_bytes;  // clock.send_bytes rows, in order (stage nodes)
    std::map<int64_t, uint64_t> round_bytes;              // round's step → bytes this node sent in it
    std::map<int64_t, int64_t> round_hops;                // round's step → sequential transfers; absent = 1
    std::map<int64_t, int64_t> round_overlap;             // round's step → τ; absent = 0
    // round's step → bitmasks of the replicas exchanged with (absent = all): one, or one per stage
    // a pipeline run's node holds, in stage order
    std::map<int64_t, std::vector<uint64_t>> round_group;
    // The clocks the node recorded, to compare a replay with: the clock on each round.bytes record
    // (after its round), and the largest clock on a train.compute_s or round.bytes record.
    std::map<int64_t, double> recorded_round_s;
    double recorded_final_s = 0;
};

// The stored metrics a trace is made of (the names in core/metric_names.h), and the one function
// that turns a stored record into trace data: every reader (`runs retime`, `thinwire run`'s
// comparison, `report`, the workbench) builds traces through these two. Records of one name must
// arrive in store order (step, then insertion) for the per-step lists.
const std::vector<std::string>& trace_metric_names();
// Adds `m` to `t` if it is one of those metrics (by name); returns whether it was.
bool add_to_trace(NodeTrace& t, const MetricRecord& m);

// A node of the run with its place in the layout (the run store's run_nodes columns).
struct TraceNode {
    std::string name;
    int replica = 0;  // replica index
    int stage = -1;   // stage of a pipeline replica's node; -1 for a node holding the whole model
    int rank = -1;    // rank inside its replica's DDP group; -1 when the replica is one node
    NodeTrace trace;
};

struct Timeline {
    std::vector<double> sim_s;      // per node (in the order given): final clock
    std::vector<double> compute_s;  // total compute
    std::vector<double> exposed_s;  // total waiting: messages, rounds, due results
    std::vector<double> sync_exposed_s;  // the part of exposed_s spent in outer rounds (SimClock's)
    std::vector<std::map<int64_t, double>> clock_at;  // step → clock at the end of that step (after its round)
};

// Replays every node's trace on network `net` under `cfg` (the run's resolved config: algorithm,
// layout, schedule, routing, AD switches; its own [network] is not used). Refused, with the run
// kind named: replicas of several nodes under an outer algorithm (the leader's broadcast is not
// stored), pipeline runs recorded before their stage nodes stored clock segments, and traces that
// do not match the config (a segment or message missing or left over).
Result<Timeline> retime(const RunConfig& cfg, const std::vector<TraceNode>& nodes, const NetworkProfile& net);

}  // namespace tw
