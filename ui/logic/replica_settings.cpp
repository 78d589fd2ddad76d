// Per-replica settings of the layout editor; see replica_settings.h.
#include "ui/logic/replica_settings.h"

#include <cmath>

#include "core/compute_model.h"
#include "core/network.h"

namespace tw::ui {

const char* replica_setting_key(ReplicaSetting s) {
    switch (s) {
        case ReplicaSetting::kNodeSpeed: return "compute.node_speed";
        case ReplicaSetting::kUpBps: return "network.replica_up_bps";
        case ReplicaSetting::kDownBps: return "network.replica_down_bps";
        case ReplicaSetting::kLatencyS: return "network.replica_latency_s";
    }
    return "";
}

std::vector<double>& replica_setting_list(RunConfig& cfg, ReplicaSetting s) {
    switch (s) {
        case ReplicaSetting::kNodeSpeed: return cfg.compute.node_speed;
        case ReplicaSetting::kUpBps: return cfg.network.replica_up_bps;
        case ReplicaSetting::kDownBps: return cfg.network.replica_down_bps;
        case ReplicaSetting::kLatencyS: break;
    }
    return cfg.network.replica_latency_s;
}

const std::vector<double>& replica_setting_list(const RunConfig& cfg, ReplicaSetting s) {
    return replica_setting_list(const_cast<RunConfig&>(cfg), s);
}

double replica_setting_default(const RunConfig& cfg, ReplicaSetting s) {
    if (s == ReplicaSetting::kNodeSpeed) return 1.0;
    // The outer link the run would put every replica on: the profile with only the outer overrides
    // (the per-replica lists themselves must not feed their own default).
    auto p = network_profile(cfg.network.profile, cfg.network.outer_bandwidth_bps, cfg.network.outer_latency_s);
    if (!p) return NAN;
    return s == ReplicaSetting::kLatencyS ? p->outer.latency_s : p->outer.bandwidth_bps;
}

double replica_setting(const RunConfig& cfg, ReplicaSetting s, int64_t r) {
    const auto& list = replica_setting_list(cfg, s);
    if (r >= 0 && r < static_cast<int64_t>(list.size())) return list[static_cast<size_t>(r)];
    return replica_setting_default(cfg, s);
}

void set_replica_setting(RunConfig& cfg, ReplicaSetting s, int64_t r, double v) {
    if (r < 0 || r >= cfg.outer.replicas) return;
    auto& list = replica_setting_list(cfg, s);
    if (list.empty()) list.assign(static_cast<size_t>(cfg.outer.replicas), replica_setting_default(cfg, s));
    if (r >= static_cast<int64_t>(list.size())) list.resize(static_cast<size_t>(r) + 1, replica_setting_default(cfg, s));
    list[static_cast<size_t>(r)] = v;
}

void clear_replica_setting(RunConfig& cfg, ReplicaSetting s) { replica_setting_list(cfg, s).clear(); }

void fit_replica_settings(RunConfig& cfg) {
    if (cfg.outer.replicas < 1) return;  // an out-of-range count shows its own error; keep the lists
    for (ReplicaSetting s : {ReplicaSetting::kNodeSpeed, ReplicaSetting::kUpBps, ReplicaSetting::kDownBps,
                             ReplicaSetting::kLatencyS}) {
        auto& list = replica_setting_list(cfg, s);
        if (!list.empty()) list.resize(static_cast<size_t>(cfg.outer.replicas), replica_setting_default(cfg, s));
    }
}

void set_compute_model(RunConfig& cfg, const std::string& model) {
    cfg.compute.model = model;
    if (model != "measured") return;
    const ComputeConfig defaults;
    cfg.compute.hardware = defaults.hardware;
    cfg.compute.peak_flops = defaults.peak_flops;
    cfg.compute.efficiency = defaults.efficiency;
    cfg.compute.node_speed.clear();
}

double replica_rate_flops(const RunConfig& cfg, int64_t r) {
    const ComputeConfig& c = cfg.compute;
    const HardwareProfile* hw = find_hardware(c.hardware);
    if (c.model != "flops" || !hw) return 0;
    const double peak = c.peak_flops > 0 ? c.peak_flops : hw->peak_flops;
    const double eff = c.efficiency > 0 ? c.efficiency : hw->efficiency;
    const double speed = replica_setting(cfg, ReplicaSetting::kNodeSpeed, r);
    return peak > 0 && eff > 0 && speed > 0 ? peak * eff * speed : 0;
}

double replica_step_s(const RunConfig& cfg, int64_t r) {
    const double rate = replica_rate_flops(cfg, r);
    if (rate <= 0) return 0;
    ModelConfig m = cfg.model;
    if (m.vocab_size <= 0) m.vocab_size = cfg.data.vocab_size;
    return train_step_flops(m, cfg.train.batch_size * m.seq_len) / rate;
}

}  // namespace tw::ui
