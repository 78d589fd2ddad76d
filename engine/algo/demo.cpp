// DeMo, arXiv 2411.19870: momentum, chunked DCT, Top-k coefficients on the wire, sign update (on pseudo-gradients).
#include "engine/algo/demo.h"

#include <torch/torch.h>

#include <cmath>

#include "engine/algo/aggregation_guard.h"
#include "engine/algo/sparse_gather_round.h"

namespace tw {
namespace {

std::string where(int replica, size_t tensor) {
    return std::string(to_string(Algorithm::kDeMo)) + ": replica " + std::to_string(replica) + ", tensor " +
           std::to_string(tensor);
}

}  // namespace

bool DeMo::round_at(int64_t step) const { return step % cfg_.inner_steps == 0; }

OuterState DeMo::save_state() const {
    OuterState s;
    put_tensors(s, "global", global_);
    put_tensors(s, "m", m_);
    return s;
}

Status DeMo::load_state(const OuterState& s) {
    if (std::string u = unknown_state(s, {"global", "m"}); !u.empty()) return Status::error("demo: unknown state " + u);
    auto g = take_tensors(s, "global", global_);
    if (!g || !*g) return Status::error("demo: " + (g ? std::string("the state has no global") : g.message()));
    auto m = take_tensors(s, "m", m_);
    if (!m) return Status::error("demo: " + m.message());
    torch::NoGradGuard no_grad;
    if (!*m)
        for (auto& t : m_) t.zero_();  // a newcomer's momentum starts at zero
    return Status::ok();
}

DeMo::DeMo(std::vector<torch::Tensor> params, DeMoConfig cfg, int replica, int replicas)
    : params_(std::move(params)), cfg_(cfg), codec_(cfg.dct), replica_(replica), replicas_(replicas) {
    torch::NoGradGuard no_grad;
    for (auto& p : params_) {
        TORCH_CHECK(p.scalar_type() == torch::kFloat32 && p.is_contiguous(), "demo: parameters must be contiguous fp32");
        global_.push_back(p.detach().clone());
        m_.push_back(torch::zeros(p.sizes(), torch::kFloat32));
    }
}

uint64_t DeMo::payload_bytes() const {
    uint64_t n = 0;
    for (auto& g : global_) n += codec_.wire_bytes(g.sizes());
    return n;
}

Result<RoundReport> DeMo::after_step(int64_t step, Collective& c, double sim_clock_s) {
    if (step % cfg_.inner_steps != 0) return RoundReport{};
    auto rep = sync(c, sim_clock_s);
    if (rep) rep->what = "round " + std::to_string(step / cfg_.inner_steps);
    return rep;
}

// m ← β·m + Δ; append the Top-k of DCT(m); m ← m − IDCT(what was kept).
Status DeMo::encode_own(std::vector<uint8_t>& out) {
    out.clear();
    SparsePayload kept;
    for (size_t i = 0; i < params_.size(); ++i) {
        auto& m = m_[i];
        m.mul_(cfg_.beta).add_(global_[i] - params_[i]);
        const torch::Tensor coeffs = chunked_dct(m, cfg_.dct.chunk);
        if (Status s = codec_.encode_coefficients(coeffs, out, &kept); !s)
            return Status::error(where(replica_, i) + ": " + s.message());
        auto q = torch::zeros_like(coeffs);
        float* qp = q.data_ptr<float>();
        for (size_t k = 0; k < kept.index.size(); ++k) qp[kept.index[k]] = kept.value[k];
        m.sub_(chunked_idct(q, cfg_.dct.chunk));
    }
    return Status::ok();
}

// Decodes every replica's payload (replica order), averages the coefficients, transforms back and
// takes the outer step.
Status DeMo::apply(const std::vector<std::vector<uint8_t>>& all) {
    const int R = static_cast<int>(all.size());
    const size_t n = global_.size();
    std::vector<std::vector<SparsePayload>> dec(static_cast<size_t>(R), std::vector<SparsePayload>(n));
    for (int r = 0; r < R; ++r) {
        const auto& bytes = all[static_cast<size_t>(r)];
        if (bytes.empty())
            return Status::error("demo: replica " + std::to_string(r) +
                                 " sent no payload (its momentum holds NaN or Inf)");
        size_t off = 0;
        for (size_t i = 0; i < n; ++i)
            if (Status s = codec_.decode_sparse(bytes.data(), bytes.size(), off, global_[i].sizes(),
                                                dec[static_cast<size_t>(r)][i]);
                !s)
                return Status::error(where(r, i) + ": " + s.message());
        if (off != bytes.size())
            return Status::error("demo: replica " + std::to_string(r) + " sent " + std::to_string(bytes.size()) +
                                 " bytes, expected " + std::to_string(off) + " (different model or codec?)");
    }
    // The guard: one factor per replica over its whole payload (sequential double sums, the same
    // bits on every replica). Under sign values every norm is √K, so it never scales.
    const std::vector<float> scale = sparse_payload_guard(dec, cfg_.guard_ratio, guard_clipped_);
    const float fr = static_cast<float>(R);
    for (size_t i = 0; i < n; ++i) {
        auto sum = torch::zeros(global_[i].sizes(), torch::kFloat32);
        float* sp = sum.data_ptr<float>();
        for (int r = 0; r < R; ++r) {
            const auto& d = dec[static_cast<size_t>(r)][i];
            const float s = scale[static_cast<size_t>(r)];
            for (size_t k = 0; k < d.index.size(); ++k) sp[d.index[k]] += d.value[k] * s;
        }
        for (int64_t j = 0; j < sum.numel(); ++j) sp[j] /= fr;
        const torch::Tensor u = chunked_idct(sum, cfg_.dct.chunk);
        global_[i].sub_(cfg_.sign_update ? u.sign() : u, cfg_.lr_outer);
        params_[i].copy_(global_[i]);
    }
    return Status::ok();
}

Result<RoundReport> DeMo::sync(Collective& c, double sim_clock_s) {
    torch::NoGradGuard no_grad;
    SparseGatherRound round{to_string(Algorithm::kDeMo), replica_, replicas_, [this](std::vector<uint8_t>& out) { return encode_own(out); },
                            [this](const std::vector<std::vector<uint8_t>>& all) { return apply(all); }, cfg_.topology};
    auto rep = sparse_gather_round(round, mine_, c, sim_clock_s);
    if (rep) rep->guard_clipped = guard_clipped_;
    return rep;
}

void demo_problems(const OuterBuild& b, std::vector<std::string>& p) {
    const OuterConfig& o = b.cfg.outer;
    if (o.dtype != "fp32")
        p.push_back("outer.dtype \"" + o.dtype + "\" does not apply to demo (it sends DCT coefficients as " +
                    "outer.demo_values says); leave it at fp32");
    if (o.demo_chunk < 2 || o.demo_chunk > 64)
        p.push_back("outer.demo_chunk " + std::to_string(o.demo_chunk) + " must be in [2, 64] (12-bit positions in a chunk)");
    if (o.demo_topk < 1 || o.demo_topk > o.demo_chunk * o.demo_chunk)
        p.push_back("outer.demo_topk " + std::to_string(o.demo_topk) + " must be in [1, outer.demo_chunk² = " +
                    std::to_string(o.demo_chunk * o.demo_chunk) + "]");
    if (o.demo_beta < 0 || o.demo_beta > 1) p.push_back("outer.demo_beta must be in [0, 1]");
    if (o.demo_values != "fp32" && o.demo_values != "sign")
        p.push_back("outer.demo_values \"" + o.demo_values + "\" is unknown (expected fp32 or sign)");
}

Result<std::unique_ptr<OuterAlgorithm>> make_demo(OuterBuild b) {
    const OuterConfig& o = b.cfg.outer;
    DeMoConfig dc;
    dc.inner_steps = o.inner_steps;
    dc.lr_outer = o.lr;
    dc.beta = o.demo_beta;
    dc.dct = DctTopkConfig{o.demo_chunk, o.demo_topk, o.demo_values == "sign" ? DctValues::kSign : DctValues::kFp32};
    dc.sign_update = o.demo_sign_update;
    dc.guard_ratio = o.guard_ratio;
    dc.topology = topology_of(b.cfg);
    return std::unique_ptr<OuterAlgorithm>(std::make_unique<DeMo>(std::move(b.params), dc, b.replica, b.replicas));
}

Result<std::unique_ptr<RoundCostModel>> plan_demo_rounds(const RunConfig& cfg) {
    const OuterConfig& o = cfg.outer;
    return plan_gather_rounds(
        cfg, std::make_unique<DctTopkCodec>(
                 DctTopkConfig{o.demo_chunk, o.demo_topk, o.demo_values == "sign" ? DctValues::kSign : DctValues::kFp32}));
}

}  // namespace tw
