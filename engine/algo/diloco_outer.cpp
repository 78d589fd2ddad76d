// DiLoCo, arXiv 2311.08105: the DiLoCo class behind the OuterAlgorithm interface, and its registry functions.
#include "engine/algo/diloco_outer.h"

#include "core/algorithm.h"
#include "core/time_budget.h"
#include "core/wire_dtype.h"
#include "engine/algo/diloco.h"
#include "engine/algo/streaming_diloco.h"
#include "engine/codec/codec.h"

#include <torch/torch.h>

namespace tw {
namespace {

std::string rank_mismatch(const char* algo, int replica, int replicas, const Collective& c) {
    return std::string(algo) + ": replica " + std::to_string(replica) + " built for " + std::to_string(replicas) +
           " replicas, the collective has " + std::to_string(c.size()) + " members";
}

// DiLoCo with fp32 or bf16 on the wire: the DiLoCo class every H steps, over the mesh or the ring.
class DiLoCoOuter : public OuterAlgorithm {
public:
    DiLoCoOuter(std::vector<torch::Tensor> params, DiLoCoConfig cfg, int64_t inner_steps, int replica, int replicas)
        : params_(params),
          diloco_(std::move(params), cfg),
          inner_steps_(inner_steps),
          replica_(replica),
          replicas_(replicas) {}

    std::string name() const override { return to_string(Algorithm::kDiLoCo); }

    Result<RoundReport> after_step(int64_t step, Collective& c, double sim_clock_s) override {
        if (step % inner_steps_ != 0) return RoundReport{};
        if (c.size() > replicas_)  // all replicas, or the survivors (docs/faults.md)
            return Result<RoundReport>::error(rank_mismatch(to_string(Algorithm::kDiLoCo), replica_, replicas_, c));
        // DiLoCo's fp32/bf16 payload would carry NaN to every replica silently: check before sending,
        // and send an empty payload instead, which the peers' sync() refuses at once.
        for (auto& p : params_) {
            if (torch::isfinite(p).all().item<bool>()) continue;
            diloco_.refuse_round(c, sim_clock_s);
            return Result<RoundReport>::error(std::string(to_string(Algorithm::kDiLoCo)) + ": replica " + std::to_string(replica_) +
                                              "'s parameters hold NaN or Inf at step " + std::to_string(step));
        }
        RoundReport rep;
        if (Status s = diloco_.sync(c, sim_clock_s, &rep.clocks); !s) return s;
        rep.synced = true;
        rep.bytes_sent = diloco_.last_bytes_sent();  // mesh: (R−1)·P·b; ring: ring_allreduce.h
        rep.hops = diloco_.last_hops();
        rep.what = "round " + std::to_string(step / inner_steps_);
        rep.guard_clipped = diloco_.last_guard_clipped();
        return rep;
    }

    std::vector<torch::Tensor> eval_params() const override { return diloco_.global(); }
    // Every replica holds the same θ after a round.
    AgreedState agreed_state() const override { return {{}, diloco_.global()}; }
    bool round_at(int64_t step) const override { return step % inner_steps_ == 0; }
    OuterState save_state() const override {
        OuterState s;
        put_tensors(s, "global", diloco_.global());
        put_tensors(s, "momentum", const_cast<DiLoCo&>(diloco_).momentum_state());
        return s;
    }
    Status load_state(const OuterState& s) override {
        if (std::string u = unknown_state(s, {"global", "momentum"}); !u.empty())
            return Status::error("diloco: unknown state " + u);
        for (const char* k : {"global", "momentum"}) {
            auto& list = std::string(k) == "global" ? diloco_.global_state() : diloco_.momentum_state();
            auto got = take_tensors(s, k, list);
            if (!got) return Status::error("diloco: " + got.message());
            if (!*got) return Status::error(std::string("diloco: the state has no ") + k);
        }
        return Status::ok();
    }

private:
    std::vector<torch::Tensor> params_;
    DiLoCo diloco_;
    int64_t inner_steps_;
    int replica_, replicas_;
};

// DiLoCo with int8 or fp4 on the wire: Streaming DiLoCo with one fragment, τ = 0 and α = 0 is exactly
// DiLoCo with the wire codec applied per tensor (the per-tensor scales make it so).
class CodecDiLoCoOuter : public OuterAlgorithm {
public:
    CodecDiLoCoOuter(std::unique_ptr<StreamingDiLoCo> s, int64_t inner_steps)
        : s_(std::move(s)), inner_steps_(inner_steps) {}
    std::string name() const override { return to_string(Algorithm::kDiLoCo); }
    Result<RoundReport> after_step(int64_t step, Collective& c, double sim_clock_s) override {
        auto rep = s_->after_step(step, c, sim_clock_s);
        if (rep && rep->synced) rep->what = "round " + std::to_string(step / inner_steps_);
        return rep;
    }
    std::vector<torch::Tensor> eval_params() const override { return s_->eval_params(); }
    AgreedState agreed_state() const override { return s_->agreed_state(); }
    bool round_at(int64_t step) const override { return s_->round_at(step); }
    OuterState save_state() const override { return s_->save_state(); }
    Status load_state(const OuterState& s) override { return s_->load_state(s); }

private:
    std::unique_ptr<StreamingDiLoCo> s_;
    int64_t inner_steps_;
};

}  // namespace

void diloco_problems(const OuterBuild& b, std::vector<std::string>& p) {
    const OuterConfig& o = b.cfg.outer;
    if (!parse_wire_dtype(o.dtype))
        p.push_back("outer.dtype \"" + o.dtype + "\" is unknown (expected fp32, bf16, int8 or fp4)");
}

Result<std::unique_ptr<OuterAlgorithm>> make_diloco(OuterBuild b) {
    const OuterConfig& o = b.cfg.outer;
    const WireDtype wire = parse_wire_dtype(o.dtype).value();  // checked by diloco_problems
    if (wire == WireDtype::kFp32 || wire == WireDtype::kBf16) {  // DiLoCo's own dense path
        DiLoCoConfig dc{o.lr, o.momentum, wire, o.guard_ratio, topology_of(b.cfg)};
        if (o.round_time_s > 0) {  // time-budgeted rounds: the token-weighted mean
            auto plan = time_budget(b.cfg);
            if (!plan) return plan.status();
            dc.contribution_scale = plan->mean_scale.at(static_cast<size_t>(b.replica));
        }
        return std::unique_ptr<OuterAlgorithm>(
            std::make_unique<DiLoCoOuter>(std::move(b.params), dc, o.inner_steps, b.replica, b.replicas));
    }
    StreamingDiLoCoConfig sc{o.inner_steps, 1,    FragmentOrder::kSequential, 0, 0.0, o.lr, o.momentum, o.dtype,
                             o.guard_ratio, topology_of(b.cfg)};
    if (b.names.empty()) b.names.assign(b.params.size(), "");
    auto s = StreamingDiLoCo::create(std::move(b.params), b.names, sc, b.replica, b.replicas);
    if (!s) return s.status();
    return std::unique_ptr<OuterAlgorithm>(std::make_unique<CodecDiLoCoOuter>(std::move(s).value(), o.inner_steps));
}

namespace {

class DiLoCoRounds : public RoundCostModel {
public:
    DiLoCoRounds(const RunConfig& cfg, std::unique_ptr<Codec> dense)
        : cfg_(cfg), dense_(std::move(dense)), period_(round_period(cfg)), everyone_(every_replica(cfg)) {}
    RoundCost at(int64_t step, int r, const std::vector<TensorShape>& tensors) const override {
        if (step % period_ != 0) return {};
        // fp32/bf16 run DiLoCo's own path (one segment); int8/fp4 a one-fragment Streaming DiLoCo.
        const bool own = cfg_.outer.dtype == "fp32" || cfg_.outer.dtype == "bf16";
        return dense_exchange_cost(cfg_, *dense_, tensors, own ? std::vector<int64_t>{sum_numel(tensors)} : numels(tensors),
                                   everyone_, r);
    }

private:
    RunConfig cfg_;
    std::unique_ptr<Codec> dense_;  // outer.dtype
    int64_t period_;
    std::vector<int> everyone_;
};

}  // namespace

Result<std::unique_ptr<RoundCostModel>> plan_diloco_rounds(const RunConfig& cfg) {
    auto d = make_wire_codec(cfg.outer.dtype);
    if (!d) return d.status();
    return std::unique_ptr<RoundCostModel>(std::make_unique<DiLoCoRounds>(cfg, std::move(*d)));
}

}  // namespace tw
