// Time-budgeted rounds; see time_budget.h.
#include "core/time_budget.h"

#include "core/algorithm.h"
#include "core/compute_model.h"

namespace tw {

void validate_time_budget(const RunConfig& c, std::vector<std::string>& out) {
    const double t = c.outer.round_time_s;
    if (t == 0) return;
    if (!(t > 0)) {
        out.push_back("outer.round_time_s must be 0 (off) or above 0 (simulated seconds per round)");
        return;
    }
    if (c.compute.model != "flops")
        out.push_back("outer.round_time_s needs compute.model = \"flops\" (under \"measured\" the steps that fit a round "
                      "would follow this machine's load)");
    const auto algo = named_algorithm(c);
    if (algo != Algorithm::kDiLoCo && algo != Algorithm::kSparseLoCo)
        out.push_back("outer.round_time_s: time-budgeted rounds run diloco and sparseloco, not outer.algorithm \"" +
                      c.outer.algorithm + "\"");
    else if (algo == Algorithm::kDiLoCo && c.outer.dtype != "fp32" && c.outer.dtype != "bf16")
        out.push_back("outer.round_time_s: diloco with outer.dtype \"" + c.outer.dtype +
                      "\" is not supported yet (fp32 or bf16 on the wire)");
    if (c.cluster.stages > 1)
        out.push_back("outer.round_time_s: runs with pipeline replicas (cluster.stages " +
                      std::to_string(c.cluster.stages) + ") are not supported yet");
    if (c.cluster.nodes_per_replica > 1)
        out.push_back("outer.round_time_s: replicas of several nodes (cluster.nodes_per_replica " +
                      std::to_string(c.cluster.nodes_per_replica) + ") are not supported yet");
    if (c.outer.inner_steps > 0 && c.train.steps % c.outer.inner_steps != 0)
        out.push_back("outer.round_time_s: train.steps " + std::to_string(c.train.steps) +
                      " must be a multiple of outer.inner_steps " + std::to_string(c.outer.inner_steps) +
                      " (their quotient is the number of rounds)");
}

Result<TimeBudget> time_budget(const RunConfig& c) {
    using R = Result<TimeBudget>;
    std::vector<std::string> p;
    validate_time_budget(c, p);
    if (c.outer.round_time_s <= 0) p.push_back("outer.round_time_s is off (0)");
    if (c.model.vocab_size <= 0) p.push_back("model.vocab_size is not resolved yet (the step's FLOPs need it)");
    if (!p.empty()) return R::error(p.front());
    TimeBudget b;
    b.rounds = c.train.steps / c.outer.inner_steps;
    const double T = c.outer.round_time_s;
    const double tokens_per_step = static_cast<double>(c.train.batch_size * c.model.seq_len);
    const double flops = train_step_flops(c.model, c.train.batch_size * c.model.seq_len);
    double total = 0;
    for (int64_t r = 0; r < c.outer.replicas; ++r) {
        const double s = flops / effective_flops(c.compute, r);  // as ComputeTime computes a step
        if (!(s <= T))
            return R::error("outer.round_time_s " + std::to_string(T) + " s is shorter than replica " +
                            std::to_string(r) + "'s step (" + std::to_string(s) + " s under the flops model)");
        auto n = static_cast<int64_t>(T / s);
        while (static_cast<double>(n + 1) * s <= T) ++n;  // the division may round either way
        while (n > 1 && static_cast<double>(n) * s > T) --n;
        b.inner_steps.push_back(n);
        b.step_s.push_back(s);
        b.tokens.push_back(static_cast<double>(n) * tokens_per_step);
        total += b.tokens.back();
    }
    const double replicas = static_cast<double>(c.outer.replicas);
    for (double w : b.tokens) b.mean_scale.push_back(replicas * w / total);
    return b;
}

RunConfig budgeted_config(const RunConfig& c, const TimeBudget& b, int64_t replica) {
    RunConfig out = c;
    out.outer.inner_steps = b.inner_steps.at(static_cast<size_t>(replica));
    out.train.steps = b.rounds * out.outer.inner_steps;
    return out;
}

}  // namespace tw
