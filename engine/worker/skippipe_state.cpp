// A SkipPipe node's checkpointed state; see skippipe_state.h.
#include "engine/worker/skippipe_state.h"

#include <algorithm>
#include <cmath>

#include <torch/torch.h>

namespace tw {
namespace {

constexpr const char* kSums = "skippipe/sums";                // busy, trained and SkipPipe makespans summed
constexpr const char* kStageTimes = "skippipe/stage_times";  // block fwd, bwd, head fwd, bwd
constexpr const char* kPathPrefix = "skippipe/val/";          // the last evaluation's val.loss.path_*

torch::Tensor f64(std::vector<double> v) { return torch::tensor(v, torch::kFloat64); }

}  // namespace

NamedTensors save_skippipe_state(const SkipPipeNodeState& s) {
    NamedTensors out = {{kSums, f64({s.busy_s, s.iter_sum_s, s.skip_iter_sum_s})},
                        {kStageTimes, f64({s.block.fwd_s, s.block.bwd_s, s.head.fwd_s, s.head.bwd_s})}};
    for (auto& [name, v] : s.paths) out.emplace_back(kPathPrefix + name, f64({v}));
    return out;
}

Result<SkipPipeNodeState> load_skippipe_state(const NamedTensors& saved, const std::vector<std::string>& path_metrics) {
    using R = Result<SkipPipeNodeState>;
    std::map<std::string, torch::Tensor> by;
    for (auto& [name, t] : saved) {
        if (!t.defined() || t.scalar_type() != torch::kFloat64)
            return R::error("SkipPipe state \"" + name + "\" is empty or not fp64");
        if (!by.emplace(name, t.contiguous()).second) return R::error("SkipPipe state \"" + name + "\" appears twice");
    }
    auto values = [&](const char* name, int64_t n) -> const double* {
        auto it = by.find(name);
        return it == by.end() || it->second.numel() != n ? nullptr : it->second.data_ptr<double>();
    };
    const double* sums = values(kSums, 3);
    const double* times = values(kStageTimes, 4);
    if (!sums || !times)
        return R::error("not a SkipPipe node's checkpoint (\"" + std::string(sums ? kStageTimes : kSums) +
                        "\" missing or malformed)");
    for (int i = 0; i < 4; ++i)
        if (!std::isfinite(times[i]) || times[i] < 0)
            return R::error("SkipPipe state \"" + std::string(kStageTimes) + "\": a stage time that is negative or not finite");
    SkipPipeNodeState s;
    s.busy_s = sums[0], s.iter_sum_s = sums[1], s.skip_iter_sum_s = sums[2];
    s.block = {times[0], times[1]}, s.head = {times[2], times[3]};
    const std::string prefix = kPathPrefix;
    for (auto& [name, t] : by) {
        if (name == kSums || name == kStageTimes) continue;
        const std::string metric_name = name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : "";
        if (metric_name.empty() || t.numel() != 1 ||
            std::find(path_metrics.begin(), path_metrics.end(), metric_name) == path_metrics.end())
            return R::error("SkipPipe state \"" + name + "\" is not this run's");
        s.paths[metric_name] = t.item<double>();
    }
    return s;
}

}  // namespace tw
