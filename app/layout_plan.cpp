// The workbench's Plan view's planner call; see layout_plan.h.
#include "app/layout_plan.h"

#include "core/config_io.h"
#include "core/network.h"
#include "engine/plan/planner.h"

namespace tw::cli {

Result<ui::LayoutPlan> plan_layout(const RunConfig& layout) {
    RunConfig flops = layout;
    flops.compute.model = "flops";  // a measured plan has nothing to measure (app/cmd_plan.cpp does the same)
    auto cfg = parse_config(to_toml(flops), "layout");
    if (!cfg) return cfg.status();
    if (cfg->model.vocab_size <= 0) cfg->model.vocab_size = cfg->data.vocab_size;  // the tokenizer's target size
    auto planned = plan_run(*cfg);
    if (!planned) return planned.status();
    auto net = network_profile(cfg->network);
    if (!net) return net.status();
    const Plan& p = *planned;
    ui::LayoutPlan out;
    out.algorithm = cfg->outer.algorithm;
    out.preset = cfg->model.preset;
    out.hardware = cfg->compute.hardware;
    out.network = cfg->network.profile;
    out.replicas = cfg->outer.replicas;
    out.params = p.params;
    out.steps = p.steps;
    out.tokens = p.tokens;
    out.tokens_per_step = cfg->train.batch_size * cfg->model.seq_len;
    out.effective_flops = p.effective_flops;
    out.outer_bandwidth_bps = net->outer.bandwidth_bps;
    out.outer_latency_s = net->outer.latency_s;
    out.measured_layout = layout.compute.model != "flops";
    for (const PlannedNode& n : p.nodes)
        out.nodes.push_back({n.name, n.replica, n.step_s, n.rounds, n.round_bytes, n.total_bytes, n.compute_s, n.exposed_s,
                             n.sim_s});
    out.utilisation = p.utilisation();
    out.sim_s = p.sim_s();
    return out;
}

}  // namespace tw::cli
