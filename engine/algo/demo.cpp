// DeMo, arXiv 2411.19870: momentum, chunked DCT, Top-k coefficients on the wire, sign update (on pseudo-gradients).
#include "engine/algo/demo.h"

#include <torch/torch.h>

#include <cmath>

#include "engine/algo/aggregation_guard.h"
#include "engine/algo/sparse_gather_round.h"

namespace tw {
namespace {

DctTopkConfig dct_config(const OuterConfig& o) {
    return DctTopkConfig{o.demo_chunk, o.demo_topk, o.demo_values == "sign" ? DctValues::kSign : DctValues::kFp32};
}

}  // namespace

DeMo::DeMo(std::vector<torch::Tensor> params, DeMoConfig cfg, int replica, int replicas)
    : SparseGatherMethod(Algorithm::kDeMo, std::move(params), std::make_unique<DctTopkCodec>(cfg.dct), cfg.inner_steps,
                         cfg.topology, "m", replica, replicas),
      cfg_(cfg),
      dct_(static_cast<const DctTopkCodec*>(codec_.get())) {}

// m ← β·m + Δ; append the Top-k of DCT(m); m ← m − IDCT(what was kept).
Status DeMo::encode_own(std::vector<uint8_t>& out) {
    out.clear();
    SparsePayload kept;
    for (size_t i = 0; i < params_.size(); ++i) {
        auto& m = buffer_[i];
        m.mul_(cfg_.beta).add_(global_[i] - params_[i]);
        const torch::Tensor coeffs = chunked_dct(m, cfg_.dct.chunk);
        if (Status s = dct_->encode_coefficients(coeffs, out, &kept); !s)
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
    std::vector<std::vector<SparsePayload>> dec;
    if (Status s = decode_all(all, "momentum", dec); !s) return s;
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
    take_shared_outer(b.cfg, dc);
    dc.beta = o.demo_beta;
    dc.dct = dct_config(o);
    dc.sign_update = o.demo_sign_update;
    return std::unique_ptr<OuterAlgorithm>(std::make_unique<DeMo>(std::move(b.params), dc, b.replica, b.replicas));
}

Result<std::unique_ptr<RoundCostModel>> plan_demo_rounds(const RunConfig& cfg) {
    return plan_gather_rounds(cfg, std::make_unique<DctTopkCodec>(dct_config(cfg.outer)));
}

}  // namespace tw
