// Loading a run's traces; see run_traces.h.
#include "storage/run_traces.h"
#include "core/run_kind.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "core/config_io.h"
#include "core/metric_names.h"
#include "core/network.h"

namespace tw {

Result<StoredRunTraces> load_run_traces(RunStore& store, int64_t id) {
    const std::string what = "run " + std::to_string(id);
    auto toml = store.config_toml(id);
    if (!toml) return toml.status();
    auto cfg = parse_config(*toml, what);
    if (!cfg) return Status::error(what + ": its stored config does not parse: " + cfg.message());
    auto names = store.metric_names(id);
    if (!names) return names.status();
    auto has = [&](const char* n) { return std::find(names->begin(), names->end(), n) != names->end(); };
    if (has(metric::kRoundCommS) && !has(metric::kRoundBytes))
        return Status::error(what + " was recorded before per-round bytes were stored; it cannot be re-timed");
    std::map<std::string, NodeTrace> traces;
    for (const std::string& name : trace_metric_names()) {
        auto rows = store.metrics(id, name);
        if (!rows) return rows.status();
        for (const MetricRecord& m : *rows) add_to_trace(traces[m.node], m);
    }
    if (traces.empty()) return Status::error(what + " has no " + metric::kTrainComputeS + " metrics to re-time");
    auto stored_nodes = store.nodes(id);
    if (!stored_nodes) return stored_nodes.status();
    StoredRunTraces out;
    out.cfg = std::move(*cfg);
    // What the run kind's replay reads besides the traces (core/run_kind.h replay_metrics).
    const RunKindRow& kind = run_kind_of(out.cfg);
    for (const char* name : kind.replay_metrics) {
        auto rows = store.metrics(id, name);
        if (!rows) return rows.status();
        if (rows->empty())
            return Status::error(what + " (" + kind.name + ") has no " + name + " metric to re-time with");
        out.replay_metrics.push_back(rows->front().value);
    }
    if (stored_nodes->empty()) {
        if (traces.size() != 1)
            return Status::error(what + " has metrics of " + std::to_string(traces.size()) +
                                 " nodes but no node table (run_nodes) to place them");
        out.nodes.push_back(TraceNode{traces.begin()->first, 0, -1, -1, std::move(traces.begin()->second)});
        return out;
    }
    for (const RunNode& n : *stored_nodes) {
        TraceNode t;
        t.name = n.node;
        t.replica = static_cast<int>(std::max<int64_t>(0, n.replica));
        // Runs stored before the stage column was filled in: a pipeline node's rank is its stage.
        const bool stage_node = n.kind == "pipeline";
        t.stage = !stage_node ? -1 : static_cast<int>(n.stage >= 0 ? n.stage : n.rank);
        t.rank = stage_node ? -1 : static_cast<int>(n.rank);
        auto it = traces.find(n.node);
        if (it != traces.end()) t.trace = std::move(it->second);
        out.nodes.push_back(std::move(t));
    }
    std::stable_sort(out.nodes.begin(), out.nodes.end(), [](const TraceNode& a, const TraceNode& b) {
        return std::make_tuple(a.replica, a.stage, a.rank) < std::make_tuple(b.replica, b.stage, b.rank);
    });
    return out;
}

Result<NetworkProfile> retime_network(const StoredRunTraces& run, const std::string& profile,
                                      double outer_bandwidth_bps, double outer_latency_s) {
    NetworkConfig n = run.cfg.network;
    n.profile = profile;
    if (outer_bandwidth_bps > 0) n.outer_bandwidth_bps = outer_bandwidth_bps;
    if (outer_latency_s > 0) n.outer_latency_s = outer_latency_s;
    return network_profile(n);
}

Result<Timeline> retime_stored(const StoredRunTraces& run, const std::string& profile, double outer_bandwidth_bps,
                               double outer_latency_s) {
    auto net = retime_network(run, profile, outer_bandwidth_bps, outer_latency_s);
    if (!net) return net.status();
    return retime_loaded(run, *net);
}

Result<Timeline> retime_loaded(const StoredRunTraces& run, const NetworkProfile& net) {
    return replay_run(run.cfg, run.nodes, run.replay_metrics, net);
}

}  // namespace tw
