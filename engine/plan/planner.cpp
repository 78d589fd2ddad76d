// The planner; see planner.h.
#include "engine/plan/planner.h"
#include "core/run_kind.h"

#include <algorithm>

#include "core/algorithm.h"
#include "core/compute_model.h"
#include "core/model_size.h"
#include "core/network.h"
#include "core/topology.h"
#include "engine/plan/pipeline_plan.h"
#include "engine/plan/round_cost.h"

namespace tw {
namespace {

Status refuse_unplannable(const RunConfig& cfg) {
    if (const char* why = run_kind_of(cfg).not_planned; *why)
        return Status::error(std::string("plan: ") + run_kind_of(cfg).name + " runs are not planned: " + why);
    if (cfg.cluster.nodes_per_replica > 1)
        return Status::error("plan: replicas of several nodes (cluster.nodes_per_replica " +
                             std::to_string(cfg.cluster.nodes_per_replica) + ") are not planned yet");
    // (A hub with pipeline replicas is refused by the layout's own checks: core/hub_endpoint.h.)
    if (cfg.outer.round_time_s > 0)
        return Status::error("plan: time-budgeted rounds (outer.round_time_s " + std::to_string(cfg.outer.round_time_s) +
                             ") are not planned yet: each replica's steps per round follow from its speed "
                             "(core/time_budget.h)");
    if (cfg.model.vocab_size <= 0) return Status::error("plan: model.vocab_size must be set (there is no tokenizer to ask)");
    return Status::ok();
}

// A run of full one-node replicas: per step the whole model's compute, per round the replica's
// bytes over the whole model's tensors.
Result<PlannedTraces> replica_traces(const RunConfig& cfg, const RoundCosts& costs) {
    const int R = static_cast<int>(cfg.outer.replicas);
    const std::vector<TensorShape> shapes = model_tensors(cfg.model);
    PlannedTraces out;
    for (int r = 0; r < R; ++r) {
        auto full = plan_full_replica(cfg, r);
        if (!full) return full.status();
        PlannedNode& pn = full->node;
        TraceNode& tn = full->trace;
        for (int64_t step = 1; step <= cfg.train.steps; ++step) {
            const RoundCost cost = costs.at(step, r, shapes);
            if (cost.synced)
                record_round(pn, tn.trace, step, cost,
                             cost.group ? std::vector<uint64_t>{cost.group} : std::vector<uint64_t>{});
        }
        out.nodes.push_back(pn);
        out.traces.push_back(std::move(tn));
    }
    return out;
}

}  // namespace

double Plan::utilisation() const {
    double c = 0, e = 0;
    for (auto& n : nodes) c += n.compute_s, e += n.exposed_s;
    return c / std::max(1e-300, c + e);
}

double Plan::sync_utilisation() const {
    double c = 0, e = 0;
    for (auto& n : nodes) c += n.compute_s, e += n.sync_exposed_s;
    return c / std::max(1e-300, c + e);
}

double Plan::sim_s() const {
    double s = 0;
    for (auto& n : nodes) s = std::max(s, n.sim_s);
    return s;
}

Result<Plan> plan_run(RunConfig cfg) {
    if (Status st = refuse_unplannable(cfg); !st) return st;
    cfg.compute.model = "flops";
    Plan plan;
    plan.params = count_parameters(cfg.model);
    plan.steps = cfg.train.steps;
    plan.tokens = plan.steps * cfg.outer.replicas * cfg.train.batch_size * cfg.model.seq_len;
    auto costs = RoundCosts::create(cfg);
    if (!costs) return costs.status();
    auto traces = cfg.cluster.stages > 1 ? plan_pipeline_traces(cfg, *costs) : replica_traces(cfg, *costs);
    if (!traces) return traces.status();
    auto net = network_profile(cfg.network);
    if (!net) return net.status();
    auto t = retime(cfg, traces->traces, *net);
    if (!t) return t.status();
    plan.nodes = std::move(traces->nodes);
    plan.timeline = std::move(*t);
    for (size_t i = 0; i < plan.nodes.size(); ++i) {
        plan.nodes[i].sim_s = plan.timeline.sim_s[i];
        plan.nodes[i].compute_s = plan.timeline.compute_s[i];
        plan.nodes[i].exposed_s = plan.timeline.exposed_s[i];
        plan.nodes[i].sync_exposed_s = plan.timeline.sync_exposed_s[i];
    }
    plan.effective_flops = effective_flops(cfg.compute, 0);
    return plan;
}

}  // namespace tw
