// A toy outer algorithm added the way any method is (docs/adding_a_method.md), from this file
// alone: "plain_average". Every H inner steps each replica sends its live weights in fp32 to every
// other member of the round (a mesh all-gather) and every member replaces its weights by their mean,
// summed in member order and divided by the member count, so all members hold the same bits. No
// learning rate, no momentum, nothing carried from one round to the next.
//
// What registers it: the two static initialisers at the end, core's row (traits, keys, round
// schedule, memory) and the engine's row (construction, planned round cost) under the id the
// first returns. No other file of the tree names it; tests/app/test_plain_average.cpp finds it by
// name.
#include <torch/torch.h>

#include "core/algorithm.h"
#include "engine/algo/registry.h"
#include "engine/codec/codec.h"

namespace tw {
namespace {

constexpr const char* kName = "plain_average";

class PlainAverage : public OuterAlgorithm {
public:
    PlainAverage(std::vector<torch::Tensor> params, int64_t inner_steps)
        : params_(std::move(params)), inner_steps_(inner_steps), fp32_(make_dense_codec(false)) {}

    std::string name() const override { return kName; }

    Result<RoundReport> after_step(int64_t step, Collective& c, double sim_clock_s) override {
        using R = Result<RoundReport>;
        if (!round_at(step)) return RoundReport{};
        std::vector<uint8_t> mine;
        for (auto& p : params_)
            if (Status s = fp32_->encode(p.detach().contiguous(), mine); !s) return R::error(std::string(kName) + ": " + s.message());
        const uint64_t sent_before = c.counters().sent_bytes[static_cast<int>(LinkClass::kOuterSync)];
        RoundReport rep;
        auto all = c.all_gather(mine, LinkClass::kOuterSync, sim_clock_s, &rep.clocks);
        if (!all) return all.status();
        // The mean, tensor by tensor: member 0's values, plus each further member's in order, over n.
        torch::NoGradGuard no_grad;
        const auto n = static_cast<double>(all->size());
        std::vector<size_t> offsets(all->size(), 0);
        for (auto& p : params_) {
            torch::Tensor sum, one;  // decode gives each member's values a tensor of their own
            for (size_t m = 0; m < all->size(); ++m) {
                const std::vector<uint8_t>& in = (*all)[m];
                if (Status s = fp32_->decode(in.data(), in.size(), offsets[m], p.sizes(), one); !s)
                    return R::error(std::string(kName) + ": member " + std::to_string(m) + ": " + s.message());
                if (m == 0) sum = one;
                else sum.add_(one);
            }
            p.copy_(sum.div_(n));
        }
        rep.synced = true;
        rep.bytes_sent = c.counters().sent_bytes[static_cast<int>(LinkClass::kOuterSync)] - sent_before;
        rep.what = "round " + std::to_string(step / inner_steps_);
        return rep;
    }

    std::vector<torch::Tensor> eval_params() const override { return params_; }
    // Every member holds the mean after a round.
    AgreedState agreed_state() const override { return {{}, params_}; }
    bool round_at(int64_t step) const override { return step % inner_steps_ == 0; }
    OuterState save_state() const override { return {}; }
    Status load_state(const OuterState& s) override {
        if (std::string u = unknown_state(s, {}); !u.empty()) return Status::error(std::string(kName) + ": unknown state " + u);
        return Status::ok();
    }

private:
    std::vector<torch::Tensor> params_;
    int64_t inner_steps_;
    std::unique_ptr<Codec> fp32_;
};

// ---- core's row ----

int64_t every_round(const RunConfig& c) { return std::max<int64_t>(1, c.outer.inner_steps); }

// Nothing kept besides the live weights; a node holds every member's fp32 payload during a round.
ExchangeMemory memory(const RunConfig& c, int64_t params) {
    return {0, false, params, 4.0 * static_cast<double>(params),
            std::max<int64_t>(1, c.outer.replicas + c.cluster.spares)};
}

AlgorithmTraits traits() {
    AlgorithmTraits t;
    t.name = kName;
    t.summary = "every H steps each replica's weights replaced by the replicas' mean";
    t.outer_rounds = true;
    t.keys = {"outer.inner_steps"};
    t.topologies = {Topology::kMesh};
    t.defining_keys = {"outer.inner_steps"};
    t.round_period = every_round;
    t.memory = memory;
    return t;
}

// ---- the engine's row ----

Result<std::unique_ptr<OuterAlgorithm>> make(OuterBuild b) {
    return std::unique_ptr<OuterAlgorithm>(std::make_unique<PlainAverage>(std::move(b.params), b.cfg.outer.inner_steps));
}

// Its rounds for the planner: the fp32 weights to every other replica, every H steps.
class Rounds : public RoundCostModel {
public:
    explicit Rounds(const RunConfig& cfg) : cfg_(cfg), fp32_(make_dense_codec(false)), everyone_(every_replica(cfg)) {}
    RoundCost at(int64_t step, int replica, const std::vector<TensorShape>& tensors) const override {
        if (step % round_period(cfg_) != 0) return {};
        return dense_exchange_cost(cfg_, *fp32_, tensors, {sum_numel(tensors)}, everyone_, replica);
    }

private:
    RunConfig cfg_;
    std::unique_ptr<Codec> fp32_;
    std::vector<int> everyone_;
};

Result<std::unique_ptr<RoundCostModel>> plan_rounds(const RunConfig& cfg) {
    return std::unique_ptr<RoundCostModel>(std::make_unique<Rounds>(cfg));
}

// ---- the registration ----

const Algorithm kPlainAverage = register_algorithm(traits());
[[maybe_unused]] const Algorithm kPlainAverageEngine = register_outer_algorithm({kPlainAverage, nullptr, make, plan_rounds});

}  // namespace
}  // namespace tw
