// Outer algorithms behind one interface (METHODS.md §2–§5): DiLoCo (arXiv 2311.08105) adapted, and the factory.
#include "engine/algo/outer.h"

#include "engine/algo/state_hash.h"

#include "engine/algo/diloco.h"
#include "engine/algo/noloco.h"
#include "engine/algo/sparseloco.h"
#include "engine/algo/streaming_diloco.h"

namespace tw {
namespace {

std::string rank_mismatch(const char* algo, int replica, int replicas, const Collective& c) {
    return std::string(algo) + ": built for replica " + std::to_string(replica) + " of " + std::to_string(replicas) +
           ", collective has rank " + std::to_string(c.rank()) + " of " + std::to_string(c.size());
}

// DiLoCo with fp32 or bf16 on the wire: the DiLoCo class every H steps.
class DiLoCoOuter : public OuterAlgorithm {
public:
    DiLoCoOuter(std::vector<torch::Tensor> params, DiLoCoConfig cfg, int64_t inner_steps, int replica, int replicas)
        : params_(params),
          diloco_(std::move(params), cfg),
          dtype_(cfg.dtype),
          inner_steps_(inner_steps),
          replica_(replica),
          replicas_(replicas) {}

    std::string name() const override { return "diloco"; }

    Result<RoundReport> after_step(int64_t step, Collective& c, double sim_clock_s) override {
        if (step % inner_steps_ != 0) return RoundReport{};
        if (c.rank() != replica_ || c.size() != replicas_)
            return Result<RoundReport>::error(rank_mismatch("diloco", replica_, replicas_, c));
        // DiLoCo's fp32/bf16 payload would carry NaN to every replica silently: check before sending,
        // and send an empty payload instead, which the peers' sync() refuses at once.
        for (auto& p : params_) {
            if (torch::isfinite(p).all().item<bool>()) continue;
            (void)c.all_gather({}, LinkClass::kOuterSync, sim_clock_s, nullptr);
            return Result<RoundReport>::error("diloco: replica " + std::to_string(replica_) +
                                              "'s parameters hold NaN or Inf at step " + std::to_string(step));
        }
        RoundReport rep;
        if (Status s = diloco_.sync(c, sim_clock_s, &rep.clocks); !s) return s;
        rep.synced = true;
        rep.bytes_sent = static_cast<uint64_t>(replicas_ - 1) * DiLoCo::payload_bytes(diloco_.num_params(), dtype_);
        rep.hops = 1;
        rep.what = "round " + std::to_string(step / inner_steps_);
        rep.guard_clipped = diloco_.last_guard_clipped();
        return rep;
    }

    std::vector<torch::Tensor> eval_params() const override { return diloco_.global(); }
    // Every replica holds the same θ after a round.
    AgreedState agreed_state() const override { return {{}, diloco_.global()}; }

private:
    std::vector<torch::Tensor> params_;
    DiLoCo diloco_;
    WireDtype dtype_;
    int64_t inner_steps_;
    int replica_, replicas_;
};

// DiLoCo with int8 or fp4 on the wire: Streaming DiLoCo with one fragment, τ = 0 and α = 0 is exactly
// DiLoCo with the wire codec applied per tensor (the per-tensor scales make it so).
class CodecDiLoCoOuter : public OuterAlgorithm {
public:
    CodecDiLoCoOuter(std::unique_ptr<StreamingDiLoCo> s, int64_t inner_steps)
        : s_(std::move(s)), inner_steps_(inner_steps) {}
    std::string name() const override { return "diloco"; }
    Result<RoundReport> after_step(int64_t step, Collective& c, double sim_clock_s) override {
        auto rep = s_->after_step(step, c, sim_clock_s);
        if (rep && rep->synced) rep->what = "round " + std::to_string(step / inner_steps_);
        return rep;
    }
    std::vector<torch::Tensor> eval_params() const override { return s_->eval_params(); }
    AgreedState agreed_state() const override { return s_->agreed_state(); }

private:
    std::unique_ptr<StreamingDiLoCo> s_;
    int64_t inner_steps_;
};

bool is_dense_dtype(const std::string& d) { return parse_wire_dtype(d).is_ok(); }

// Every problem of the [outer] section that this algorithm depends on, at once.
std::vector<std::string> problems_of(const OuterConfig& o, size_t n_params, size_t n_names, int replica, int replicas) {
    std::vector<std::string> p;
    const std::string& a = o.algorithm;
    if (replicas < 1 || replica < 0 || replica >= replicas)
        p.push_back("replica " + std::to_string(replica) + " of " + std::to_string(replicas) + " is out of range");
    if (n_names != 0 && n_names != n_params)
        p.push_back(std::to_string(n_names) + " parameter names for " + std::to_string(n_params) + " parameters");
    if (o.inner_steps < 1) p.push_back("outer.inner_steps must be at least 1");
    if (o.guard_ratio != 0 && !(o.guard_ratio >= 1))
        p.push_back("outer.guard_ratio must be 0 (off) or at least 1 (below 1 it scales healthy replicas down)");
    if ((a == "diloco" || a == "streaming_diloco") && !is_dense_dtype(o.dtype))
        p.push_back("outer.dtype \"" + o.dtype + "\" is unknown (expected fp32, bf16, int8 or fp4)");
    if ((a == "sparseloco" || a == "noloco") && o.dtype != "fp32")
        p.push_back("outer.dtype \"" + o.dtype + "\" does not apply to " + a +
                    (a == "sparseloco" ? " (it sends its own 2-bit Top-k values)" : " (it exchanges fp32 weights)") +
                    "; leave it at fp32");
    if (a == "sparseloco") {
        if (o.topk_chunk < 1 || o.topk_chunk > 64)
            p.push_back("outer.topk_chunk " + std::to_string(o.topk_chunk) +
                        " must be in [1, 64] (12-bit positions in a chunk)");
        if (o.topk_k < 2 || o.topk_k % 2 != 0 || o.topk_k > o.topk_chunk * o.topk_chunk)
            p.push_back("outer.topk_k " + std::to_string(o.topk_k) +
                        " must be even, at least 2 and at most outer.topk_chunk² (" +
                        std::to_string(o.topk_chunk * o.topk_chunk) + ")");
        if (o.ef_beta < 0 || o.ef_beta > 1) p.push_back("outer.ef_beta must be in [0, 1]");
        if (o.aggregation != "mean_over_replicas" && o.aggregation != "mean_over_selectors")
            p.push_back("outer.aggregation \"" + o.aggregation +
                        "\" is unknown (expected mean_over_replicas or mean_over_selectors)");
    }
    if (a == "streaming_diloco") {
        if (o.fragment_order != "sequential" && o.fragment_order != "strided")
            p.push_back("outer.fragment_order \"" + o.fragment_order +
                        "\" is unknown (expected sequential or strided)");
        if (o.mix_alpha < 0 || o.mix_alpha > 1) p.push_back("outer.mix_alpha must be in [0, 1]");
        if (n_names != n_params) p.push_back("streaming_diloco needs the parameters' names to form fragments");
    }
    if (a == "noloco" && (o.group_size < 1 || o.group_size > replicas))
        p.push_back("outer.group_size " + std::to_string(o.group_size) +
                    " must be in [1, outer.replicas = " + std::to_string(replicas) + "]");
    return p;
}

}  // namespace

void GlobalWeightsSwap::add(std::vector<torch::Tensor> live, const std::vector<torch::Tensor>& global) {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < live.size() && i < global.size(); ++i) {
        saved_.emplace_back(live[i], live[i].detach().clone());
        live[i].copy_(global[i]);
    }
}

GlobalWeightsSwap::~GlobalWeightsSwap() {
    torch::NoGradGuard no_grad;
    for (auto& [live, before] : saved_) live.copy_(before);
}

Result<uint64_t> agree_on_round(const OuterAlgorithm& a, Collective& c) {
    AgreedState st = a.agreed_state();
    if (st.group.empty())
        for (int r = 0; r < c.size(); ++r) st.group.push_back(r);
    const uint64_t h = state_hash(st.tensors);
    if (Status s = c.agree(st.group, h); !s) return Result<uint64_t>::error(a.name() + ": " + s.message());
    return h;
}

Result<std::unique_ptr<OuterAlgorithm>> make_outer_algorithm(const RunConfig& cfg, std::vector<torch::Tensor> params,
                                                             std::vector<std::string> names, int replica,
                                                             int replicas) {
    using R = Result<std::unique_ptr<OuterAlgorithm>>;
    const OuterConfig& o = cfg.outer;
    const std::string& a = o.algorithm;
    if (a != "diloco" && a != "sparseloco" && a != "streaming_diloco" && a != "noloco")
        return R::error("outer.algorithm \"" + a +
                        "\" has no outer algorithm (expected diloco, sparseloco, "
                        "streaming_diloco or noloco; ddp and none are the worker's own)");
    if (auto p = problems_of(o, params.size(), names.size(), replica, replicas); !p.empty()) {
        std::string msg = a + ":";
        for (auto& s : p) msg += "\n  " + s;
        return R::error(msg);
    }
    if (a == "diloco") {
        const WireDtype wire = parse_wire_dtype(o.dtype).value();  // checked by problems_of
        if (wire == WireDtype::kFp32 || wire == WireDtype::kBf16) {  // DiLoCo's own dense path
            DiLoCoConfig dc{o.lr, o.momentum, wire, o.guard_ratio};
            return std::unique_ptr<OuterAlgorithm>(
                std::make_unique<DiLoCoOuter>(std::move(params), dc, o.inner_steps, replica, replicas));
        }
        StreamingDiLoCoConfig sc{o.inner_steps, 1,    FragmentOrder::kSequential, 0, 0.0, o.lr, o.momentum, o.dtype,
                                 o.guard_ratio};
        if (names.empty()) names.assign(params.size(), "");
        auto s = StreamingDiLoCo::create(std::move(params), names, sc, replica, replicas);
        if (!s) return s.status();
        return std::unique_ptr<OuterAlgorithm>(std::make_unique<CodecDiLoCoOuter>(std::move(s).value(), o.inner_steps));
    }
    if (a == "sparseloco") {
        SparseLoCoConfig sc;
        sc.inner_steps = o.inner_steps;
        sc.lr_outer = o.lr;
        sc.ef_beta = o.ef_beta;
        sc.topk = TopkConfig{o.topk_chunk, o.topk_k};
        sc.aggregation =
            o.aggregation == "mean_over_selectors" ? Aggregation::kMeanOverSelectors : Aggregation::kMeanOverReplicas;
        sc.clip_median = o.clip_median;
        sc.guard_ratio = o.guard_ratio;
        return std::unique_ptr<OuterAlgorithm>(std::make_unique<SparseLoCo>(std::move(params), sc, replica, replicas));
    }
    if (a == "streaming_diloco") {
        StreamingDiLoCoConfig sc{o.inner_steps,
                                 o.fragments,
                                 o.fragment_order == "strided" ? FragmentOrder::kStrided : FragmentOrder::kSequential,
                                 o.overlap_steps,
                                 o.mix_alpha,
                                 o.lr,
                                 o.momentum,
                                 o.dtype,
                                 o.guard_ratio};
        auto s = StreamingDiLoCo::create(std::move(params), names, sc, replica, replicas);
        if (!s) return s.status();
        return std::unique_ptr<OuterAlgorithm>(std::move(s).value());
    }
    NoLoCoConfig nc{o.inner_steps, o.lr, o.momentum, o.group_size, o.guard_ratio};
    return std::unique_ptr<OuterAlgorithm>(std::make_unique<NoLoCo>(std::move(params), nc, replica, replicas));
}

}  // namespace tw
