// Re-timing a run's compute for other hardware; see hardware_retime.h.
#include "ui/logic/hardware_retime.h"
#include "core/run_kind.h"

#include <cstdio>

#include "core/compute_model.h"
#include "core/pipeline_program.h"
#include "ui/logic/units.h"

namespace tw::ui {
namespace {

std::string joined(const std::vector<std::string>& lines) {
    std::string s;
    for (auto& l : lines) s += (s.empty() ? "" : "; ") + l;
    return s;
}

// A flops run: the FLOPs of every segment stay, only the rate changes.
Status scale_flops_node(const RunConfig& cfg, const ComputeConfig& target, TraceNode& n) {
    const int64_t r = n.replica;
    if (!cfg.compute.node_speed.empty() && (r < 0 || r >= static_cast<int64_t>(cfg.compute.node_speed.size())))
        return Status::error(n.name + ": replica " + std::to_string(r) + " has no compute.node_speed entry");
    const int64_t at = cfg.compute.node_speed.empty() ? 0 : r;
    const double factor = effective_flops(cfg.compute, at) / effective_flops(target, at);
    for (auto& [step, s] : n.trace.compute_s) s *= factor;
    for (auto& [step, segs] : n.trace.segments_s)
        for (double& s : segs) s *= factor;
    return Status::ok();
}

// A measured run's whole-model node: each step is the flops clock's step on the new hardware.
Status model_whole_node(const RunConfig& flops_cfg, TraceNode& n) {
    if (!n.trace.segments_s.empty())
        return Status::error(n.name + " holds the whole model but stored pipeline clock segments");
    auto ct = ComputeTime::create(flops_cfg, n.replica);
    if (!ct) return ct.status();
    for (auto& [step, s] : n.trace.compute_s) {
        if (step < 1) return Status::error(n.name + ": a compute record before the first step");
        s = ct->train_step(0.0);
    }
    return Status::ok();
}

// A measured run's pipeline stage node: its step's segments are the compute events of
// stage_iteration in order (the frozen-table messages carry no compute), each modelled as the
// pipeline worker's ComputeTime::stage_segment would under flops.
Status model_stage_node(const RunConfig& cfg, const RunConfig& flops_cfg, TraceNode& n) {
    auto ct = ComputeTime::create(flops_cfg, n.replica, n.stage);
    if (!ct) return ct.status();
    for (auto& [step, s] : n.trace.compute_s)
        if (!n.trace.segments_s.count(step))
            return Status::error(n.name + " at step " + std::to_string(step) + ": no clock segments stored");
    for (auto& [step, segs] : n.trace.segments_s) {
        if (step < 1) return Status::error(n.name + ": compute segments before the first step");
        std::vector<StageEvent> compute;
        for (const StageEvent& e : stage_iteration(cfg, n.replica, n.stage, step - 1))
            if (e.kind == StageEventKind::kCompute) compute.push_back(e);
        if (compute.size() != segs.size())
            return Status::error(n.name + " at step " + std::to_string(step) + ": " + std::to_string(segs.size()) +
                                 " compute segments stored, the schedule has " + std::to_string(compute.size()));
        double total = 0;
        for (size_t i = 0; i < segs.size(); ++i) total += segs[i] = ct->stage_segment(compute[i], 0.0);
        if (n.trace.compute_s.count(step)) n.trace.compute_s[step] = total;
    }
    return Status::ok();
}

}  // namespace

ComputeConfig what_if_compute(const RunConfig& cfg, const HardwareWhatIf& hw) {
    ComputeConfig c;
    c.model = "flops";
    c.hardware = hw.hardware;
    c.efficiency = hw.efficiency;
    c.peak_flops = hw.peak_flops;
    if (cfg.compute.model == "flops") c.node_speed = cfg.compute.node_speed;
    return c;
}

Status check_hardware_what_if(const RunConfig& cfg, const HardwareWhatIf& hw) {
    RunConfig c = cfg;
    c.compute = what_if_compute(cfg, hw);
    std::vector<std::string> problems;
    validate_compute(c, problems);
    return problems.empty() ? Status::ok() : Status::error(joined(problems));
}

Result<std::vector<TraceNode>> retime_compute(const RunConfig& cfg, const std::vector<TraceNode>& nodes,
                                              const HardwareWhatIf& hw) {
    using R = Result<std::vector<TraceNode>>;
    if (cfg.outer.round_time_s > 0)
        return R::error("time-budgeted rounds (outer.round_time_s): how many inner steps fit a round follows the "
                        "compute rate, so other hardware would train differently; not re-timed");
    if (is_run_kind(cfg, RunKind::kSkipPipe))
        return R::error("SkipPipe schedules its micro-batches' paths from the stage times, so other hardware "
                        "would train differently; not re-timed");
    if (Status s = check_hardware_what_if(cfg, hw); !s) return s;
    const bool flops = cfg.compute.model == "flops";
    if (!flops && is_run_kind(cfg, RunKind::kHdee))
        return R::error("HDEE recorded under compute.model \"measured\": each expert's width is its own config, "
                        "which the what-if does not rebuild; run it under \"flops\" to compare hardware");
    if (!flops && cfg.model.vocab_size <= 0)
        return R::error("the run's stored config has no resolved model.vocab_size, so its FLOPs cannot be counted");
    RunConfig flops_cfg = cfg;
    flops_cfg.compute = what_if_compute(cfg, hw);
    std::vector<TraceNode> out = nodes;
    for (TraceNode& n : out) {
        Status s = flops ? scale_flops_node(cfg, flops_cfg.compute, n)
                   : n.stage < 0 ? model_whole_node(flops_cfg, n)
                                 : model_stage_node(cfg, flops_cfg, n);
        if (!s) return s;
    }
    return out;
}

std::string describe_compute_what_if(const RunConfig& cfg, const HardwareWhatIf& hw) {
    RunConfig c = cfg;
    c.compute = what_if_compute(cfg, hw);
    const double rate = effective_flops(c.compute, 0);  // replica 0's; node speeds scale both alike
    char buf[320];
    if (cfg.compute.model == "flops") {
        const double recorded = effective_flops(cfg.compute, 0);
        std::snprintf(buf, sizeof buf,
                      "recorded under flops on %s at %s (replica 0); every compute second x %.6g (recorded rate / %s)",
                      cfg.compute.hardware.c_str(), rate_text(recorded).c_str(), recorded / rate, rate_text(rate).c_str());
    } else {
        const double step = train_step_flops(cfg.model, cfg.train.batch_size * cfg.model.seq_len);
        std::snprintf(buf, sizeof buf,
                      "recorded under measured (this machine's wall seconds); compute from the model's FLOPs: "
                      "%.6g FLOP per whole-model step / %s = %.6g s%s",
                      step, rate_text(rate).c_str(), step / rate, cfg.cluster.stages > 1 ? " (stage nodes: per segment)" : "");
    }
    return buf;
}

}  // namespace tw::ui
