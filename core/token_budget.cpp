#include "core/token_budget.h"
#include "core/run_kind.h"

#include <algorithm>
#include <cmath>

#include "core/algorithm.h"
#include "core/model_size.h"

namespace tw {

int64_t budget_parameters(const RunConfig& cfg) {
    ModelConfig m = cfg.model;
    if (m.vocab_size <= 0) m.vocab_size = cfg.data.vocab_size;
    return count_parameters(m);
}

int64_t tokens_per_step(const RunConfig& cfg) {
    const auto algo = named_algorithm(cfg);
    const int64_t replicas = (algo && *algo == Algorithm::kNone) ? 1 : std::max<int64_t>(cfg.outer.replicas, 1);
    return std::max<int64_t>(cfg.train.batch_size, 1) * std::max<int64_t>(cfg.model.seq_len, 1) * replicas;
}

int64_t steps_for_budget(const RunConfig& cfg, double tokens_per_param) {
    const double tokens = tokens_per_param * static_cast<double>(budget_parameters(cfg));
    auto steps = static_cast<int64_t>(std::ceil(tokens / static_cast<double>(tokens_per_step(cfg))));
    steps = std::max<int64_t>(steps, 1);
    // Whole rounds of H for every algorithm, not only those with rounds: the variants of one layout
    // share H, so a data-parallel run and its DiLoCo counterparts see the same tokens.
    if (const int64_t H = cfg.outer.inner_steps; H > 0) steps = (steps + H - 1) / H * H;
    return steps;
}

Status apply_token_budget(RunConfig& cfg) {
    if (cfg.train.tokens_per_param <= 0) return Status::ok();
    if (is_run_kind(cfg, RunKind::kSkipPipe))
        return Status::error("train.tokens_per_param: SkipPipe runs take their steps from train.steps (set it instead)");
    if (is_run_kind(cfg, RunKind::kHdee))
        return Status::error("train.tokens_per_param: HDEE experts take their steps from train.steps and the "
                             "ensemble's proportions (set train.steps instead)");
    cfg.train.steps = steps_for_budget(cfg, cfg.train.tokens_per_param);
    return Status::ok();
}

}  // namespace tw
