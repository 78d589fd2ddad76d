// `thinwire runs retime`; see cmd_runs_retime.h.
#include "app/cmd_runs_retime.h"
#include "core/run_kind.h"

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>

#include "core/algorithm.h"
#include "core/network.h"
#include "core/timeline.h"
#include "storage/run_traces.h"

namespace tw::cli {
namespace {

// "sparseloco, 4 replicas" or "pipelines: 2 of 4 replicas × 2 stages, sparseloco".
std::string run_kind(const RunConfig& c) {
    if (is_run_kind(c, RunKind::kSkipPipe))
        return "SkipPipe, " + std::to_string(c.skippipe.stages) + " stages × " + std::to_string(c.skippipe.replicas) +
               " replicas";
    const std::string algo = to_string(algorithm_of(c));
    const std::string replicas = std::to_string(c.outer.replicas) + " replica" + (c.outer.replicas == 1 ? "" : "s");
    if (c.cluster.stages <= 1)
        return algo + ", " + replicas +
               (c.cluster.nodes_per_replica > 1 ? " × " + std::to_string(c.cluster.nodes_per_replica) + " nodes" : "");
    return "pipelines: " + std::to_string(c.pipeline_replicas()) + " of " + replicas + " × " +
           std::to_string(c.cluster.stages) + " stages, " + algo;
}

std::string link_text(const LinkSpec& l) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.4g Mb/s, %.4g ms", l.bandwidth_bps / 1e6, 1e3 * l.latency_s);
    return buf;
}

}  // namespace

int run_retime(RunStore& store, const RetimeArgs& a) {
    const int64_t id = a.id;
    const StoredRunTraces run = unwrap(load_run_traces(store, id));
    const NetworkProfile net = unwrap(retime_network(run, a.network, a.outer_bandwidth_bps, a.outer_latency_s));
    auto timeline = retime_loaded(run, net);
    if (!timeline) throw Error("run " + std::to_string(id) + " (" + run_kind(run.cfg) + "): " + timeline.message());
    const Timeline& t = *timeline;
    std::printf("run %lld (%s) re-timed for %s: outer link %s, stage link %s, intra-replica link %s; recorded with %s\n",
                (long long)id, run_kind(run.cfg).c_str(), a.network.c_str(), link_text(net.outer).c_str(),
                link_text(net.stage).c_str(), link_text(net.intra).c_str(), run.cfg.network.profile.c_str());
    std::printf("  %-12s %16s %16s %12s\n", "node", "recorded sim (s)", "retimed sim (s)", "utilisation");
    for (size_t i = 0; i < run.nodes.size(); ++i)
        std::printf("  %-12s %16.6f %16.6f %11.1f%%\n", run.nodes[i].name.c_str(), run.nodes[i].trace.recorded_final_s,
                    t.sim_s[i], 100 * t.compute_s[i] / (t.compute_s[i] + t.exposed_s[i]));
    if (!a.rounds) return 0;
    // Every round's clock at full precision (%.17g round-trips a double), to compare bit for bit.
    std::printf("\n  %-12s %7s %24s %24s\n", "node", "step", "recorded clock (s)", "retimed clock (s)");
    for (size_t i = 0; i < run.nodes.size(); ++i) {
        const char* node = run.nodes[i].name.c_str();
        for (auto& [step, recorded] : run.nodes[i].trace.recorded_round_s) {
            auto it = t.clock_at[i].find(step);
            std::printf("  %-12s %7lld %24.17g %24.17g\n", node, (long long)step, recorded,
                        it == t.clock_at[i].end() ? NAN : it->second);
        }
        std::printf("  %-12s %7s %24.17g %24.17g\n", node, "final", run.nodes[i].trace.recorded_final_s, t.sim_s[i]);
    }
    return 0;
}

void add_retime_options(CLI::App* rt, RetimeArgs& a) {
    rt->add_option("run", a.id, "run id")->required();
    rt->add_option("--network", a.network, "datacenter | wan-1g | wan-100m | home-20m")->required();
    rt->add_option("--outer-bandwidth-bps", a.outer_bandwidth_bps, "override the outer link's bandwidth");
    rt->add_option("--outer-latency-s", a.outer_latency_s, "override the outer link's latency");
    rt->add_flag("--rounds", a.rounds, "also print every round's recorded and re-timed clock at full precision");
}

}  // namespace tw::cli
