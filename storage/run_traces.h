// A stored run as re-timing needs it: its resolved config and every node's trace (core/timeline.h),
// the nodes ordered by their run_nodes columns (replica, stage, rank), never by parsing names.
// `runs retime`, `thinwire run`'s comparison and the workbench's what-if all load runs this way.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/network.h"
#include "core/skippipe.h"
#include "core/status.h"
#include "core/timeline.h"
#include "storage/run_store.h"

namespace tw {

struct StoredRunTraces {
    RunConfig cfg;                 // parsed from the stored resolved config
    std::vector<TraceNode> nodes;  // by (replica, stage, rank)
    // The first stored value of each metric its run kind's replay reads (core/run_kind.h
    // replay_metrics; SkipPipe: the stage times every node scheduled with), in that order.
    std::vector<double> replay_metrics;
};

// Fails when the run is unknown, its config does not parse, or it recorded rounds before their
// bytes were stored (round.comm_s without round.bytes: such runs cannot be re-timed). A run
// without run_nodes rows (older single-process runs) is accepted with one node only.
Result<StoredRunTraces> load_run_traces(RunStore& store, int64_t id);

// Replays `run` (core/timeline.h retime) on network profile `profile` with the run's own [network]
// link overrides, and the outer link's bandwidth / latency replaced where the arguments are > 0.
Result<NetworkProfile> retime_network(const StoredRunTraces& run, const std::string& profile,
                                      double outer_bandwidth_bps = 0, double outer_latency_s = 0);
Result<Timeline> retime_stored(const StoredRunTraces& run, const std::string& profile,
                               double outer_bandwidth_bps = 0, double outer_latency_s = 0);
// The replay on `net` for every run kind: core/timeline.h retime, or a SkipPipe run's schedules.
Result<Timeline> retime_loaded(const StoredRunTraces& run, const NetworkProfile& net);

}  // namespace tw
