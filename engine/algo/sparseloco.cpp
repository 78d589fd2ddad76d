// SparseLoCo, arXiv 2508.15706: error feedback + chunked Top-k + 2-bit values, aggregated in replica order.
#include "engine/algo/sparseloco.h"

#include "core/little_endian.h"
#include "core/time_budget.h"
#include "engine/algo/aggregation_guard.h"
#include "engine/algo/sparse_gather_round.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

namespace tw {

SparseLoCo::SparseLoCo(std::vector<torch::Tensor> params, SparseLoCoConfig cfg, int replica, int replicas)
    : SparseGatherMethod(Algorithm::kSparseLoCo, std::move(params), make_sparseloco_codec(cfg.topk), cfg.inner_steps,
                         cfg.topology, "ef", replica, replicas),
      cfg_(std::move(cfg)) {}

Status SparseLoCo::replay(const std::vector<std::vector<uint8_t>>& payloads) {
    torch::NoGradGuard no_grad;
    all_ = payloads;
    std::vector<torch::Tensor> mean;
    if (Status s = aggregate(all_, mean); !s) return s;
    for (size_t i = 0; i < params_.size(); ++i) {
        global_[i].sub_(mean[i], cfg_.lr_outer);
        params_[i].copy_(global_[i]);
    }
    if (hooks_.after_round) hooks_.after_round(global_, params_);
    for (size_t i = 0; i < start_.size(); ++i) start_[i].copy_(params_[i]);
    return Status::ok();
}

void SparseLoCo::set_hooks(SparseLoCoHooks hooks) {
    hooks_ = std::move(hooks);
    start_.clear();
    if (hooks_.delta_from_start)
        for (auto& p : params_) start_.push_back(p.detach().clone());
}

HookSupport SparseLoCo::set_round_hooks(RoundHooks hooks) {
    set_hooks(std::move(hooks));
    return {true, true, true};
}

namespace {
constexpr char kGuardTag[4] = {'T', 'W', 'G', 'F'};
}  // namespace

std::optional<std::vector<uint8_t>> SparseLoCo::leading_tensor_payloads() const {
    if (global_.empty()) return std::nullopt;
    const size_t len = codec_->wire_bytes(global_[0].sizes());
    std::vector<uint8_t> bytes;
    for (auto& p : all_) bytes.insert(bytes.end(), p.begin(), p.begin() + static_cast<long>(std::min(len, p.size())));
    if (std::any_of(last_guard_.begin(), last_guard_.end(), [](float f) { return f != 1.0f; })) {
        le::Appender w{bytes};
        for (float f : last_guard_) w.f32(f);
        w.u32(static_cast<uint32_t>(last_guard_.size()));
        bytes.insert(bytes.end(), kGuardTag, kGuardTag + 4);
    }
    return bytes;
}

Status SparseLoCo::replay_round(const std::vector<uint8_t>& leading_payloads_in, int max_members) {
    const size_t len = global_.empty() ? 0 : codec_->wire_bytes(global_[0].sizes());
    // The guard's factors, when the round scaled something (leading_tensor_payloads).
    std::vector<uint8_t> leading_payloads = leading_payloads_in;
    std::vector<float> factors;
    const size_t n_in = leading_payloads.size();
    if (n_in >= 8 && std::memcmp(leading_payloads.data() + n_in - 4, kGuardTag, 4) == 0) {
        uint32_t members = 0;
        le::Reader r{leading_payloads.data(), n_in - 4, n_in - 8};
        if (!r.u32(members) || members == 0 || members > static_cast<uint32_t>(std::max(max_members, 1)) ||
            static_cast<size_t>(members) * 4 + 8 > n_in)
            return Status::error("sparseloco: the guard's factors name an impossible member count");
        const size_t at = n_in - 8 - static_cast<size_t>(members) * 4;
        le::Reader f{leading_payloads.data(), n_in - 8, at};
        for (uint32_t i = 0; i < members; ++i) {
            float v = 0;
            if (!f.f32(v) || !(v > 0.0f && v <= 1.0f))
                return Status::error("sparseloco: a guard factor outside (0, 1]");
            factors.push_back(v);
        }
        leading_payloads.erase(leading_payloads.begin() + static_cast<std::ptrdiff_t>(at), leading_payloads.end());
        if (len == 0 || leading_payloads.size() != static_cast<size_t>(members) * len)
            return Status::error("sparseloco: " + std::to_string(members) + " guard factors for " +
                                 std::to_string(len > 0 ? leading_payloads.size() / len : 0) + " members' encodings");
    }
    const size_t R = len > 0 ? leading_payloads.size() / len : 0;
    if (params_.size() != 1 || R == 0 || R * len != leading_payloads.size() ||
        R > static_cast<size_t>(std::max(max_members, 1)))
        return Status::error("sparseloco: leading-tensor payloads of " + std::to_string(leading_payloads.size()) +
                             " bytes are not the encodings of 1 to " + std::to_string(std::max(max_members, 1)) +
                             " members (" + std::to_string(len) + " bytes each)");
    std::vector<std::vector<uint8_t>> payloads;
    for (size_t r = 0; r < R; ++r)
        payloads.emplace_back(leading_payloads.begin() + static_cast<long>(r * len),
                              leading_payloads.begin() + static_cast<long>((r + 1) * len));
    guard_override_ = std::move(factors);
    Status st = replay(payloads);
    guard_override_.clear();
    return st;
}

OuterState SparseLoCo::save_state() const {
    OuterState s = save_global_and_buffer();
    if (!start_.empty()) put_tensors(s, "start", start_);
    return s;
}

Status SparseLoCo::load_state(const OuterState& s) {
    if (Status st = load_global_and_buffer(s, {"start"}); !st) return st;
    if (!start_.empty()) {
        auto st = take_tensors(s, "start", start_);
        if (!st) return Status::error("sparseloco: " + st.message());
        if (!*st)  // AD6's start: a newcomer starts its round from the global weights
            for (size_t i = 0; i < start_.size(); ++i) start_[i].copy_(global_[i]);
    }
    return Status::ok();
}

// e ← β·e + Δ; append encode(e); e ← e − decode(what was appended).
Status SparseLoCo::encode_own(std::vector<uint8_t>& out) {
    out.clear();
    SparsePayload sent;
    for (size_t i = 0; i < params_.size(); ++i) {
        auto& e = buffer_[i];
        e.mul_(cfg_.ef_beta).add_((start_.empty() ? global_[i] : start_[i]) - params_[i]);
        if (hooks_.before_encode) hooks_.before_encode(i, e);
        const size_t start = out.size();
        if (Status s = codec_->encode(e, out); !s) return Status::error(where(replica_, i) + ": " + s.message());
        size_t off = start;
        if (Status s = codec_->decode_sparse(out.data(), out.size(), off, e.sizes(), sent); !s)
            return Status::error(where(replica_, i) + ": own payload does not decode: " + s.message());
        float* ep = e.data_ptr<float>();
        for (size_t k = 0; k < sent.index.size(); ++k) ep[sent.index[k]] -= sent.value[k];
    }
    return Status::ok();
}

// Decodes every replica's payload (in replica order) and averages per coordinate into `mean`.
Status SparseLoCo::aggregate(const std::vector<std::vector<uint8_t>>& all, std::vector<torch::Tensor>& mean) {
    const int R = static_cast<int>(all.size());
    const size_t n = global_.size();
    std::vector<std::vector<SparsePayload>> dec;
    if (Status s = decode_all(all, "outer gradient", dec); !s) return s;
    // The guard: one factor per replica over its whole payload (sequential double sums, the same
    // bits on every replica).
    // A replay applies the factors the members' round applied (replay_round).
    const std::vector<float> guard =
        guard_override_.empty() ? sparse_payload_guard(dec, cfg_.guard_ratio, guard_clipped_) : guard_override_;
    last_guard_ = guard;
    mean.clear();
    for (size_t i = 0; i < n; ++i) {
        std::vector<float> scale = guard;
        if (cfg_.clip_median) {
            std::vector<double> norms;
            for (int r = 0; r < R; ++r) {
                double s = 0;
                for (float v : dec[static_cast<size_t>(r)][i].value) s += static_cast<double>(v) * v;
                norms.push_back(std::sqrt(s) * guard[static_cast<size_t>(r)]);  // of the guarded values
            }
            const auto clip = norm_clip_scales(norms, 1.0, NormReference::kMedianOfAll);
            for (int r = 0; r < R; ++r) scale[static_cast<size_t>(r)] *= clip[static_cast<size_t>(r)];
        }
        const int64_t numel = global_[i].numel();
        auto sum = torch::zeros({numel}, torch::kFloat32);
        float* sp = sum.data_ptr<float>();
        std::vector<int32_t> selected(cfg_.aggregation == Aggregation::kMeanOverSelectors ? static_cast<size_t>(numel)
                                                                                          : 0);
        const bool weighted = !cfg_.replica_weights.empty();
        std::vector<float> selected_w(weighted && !selected.empty() ? static_cast<size_t>(numel) : 0);
        for (int r = 0; r < R; ++r) {
            const auto& d = dec[static_cast<size_t>(r)][i];
            const float w = weighted ? static_cast<float>(cfg_.replica_weights.at(static_cast<size_t>(r))) : 1.0f;
            const float s = weighted ? scale[static_cast<size_t>(r)] * w : scale[static_cast<size_t>(r)];
            for (size_t k = 0; k < d.index.size(); ++k) sp[d.index[k]] += d.value[k] * s;
            if (!selected.empty())
                for (int64_t j : d.index) ++selected[static_cast<size_t>(j)];
            if (!selected_w.empty())
                for (int64_t j : d.index) selected_w[static_cast<size_t>(j)] += w;
        }
        if (!selected_w.empty()) {  // weighted mean over the selectors
            for (int64_t j = 0; j < numel; ++j)
                sp[j] = selected_w[static_cast<size_t>(j)] > 0 ? sp[j] / selected_w[static_cast<size_t>(j)] : 0.0f;
        } else if (selected.empty()) {
            const float fr = static_cast<float>(R);
            for (int64_t j = 0; j < numel; ++j) sp[j] /= fr;
        } else {
            for (int64_t j = 0; j < numel; ++j)
                sp[j] = selected[static_cast<size_t>(j)] > 0
                            ? sp[j] / static_cast<float>(selected[static_cast<size_t>(j)])
                            : 0.0f;
        }
        mean.push_back(sum.view(global_[i].sizes()));
    }
    return Status::ok();
}

void sparseloco_problems(const OuterBuild& b, std::vector<std::string>& p) {
    const OuterConfig& o = b.cfg.outer;
    if (o.dtype != "fp32")
        p.push_back("outer.dtype \"" + o.dtype + "\" does not apply to sparseloco (it sends its own 2-bit Top-k values); "
                    "leave it at fp32");
    if (o.topk_chunk < 1 || o.topk_chunk > 64)
        p.push_back("outer.topk_chunk " + std::to_string(o.topk_chunk) + " must be in [1, 64] (12-bit positions in a chunk)");
    if (o.topk_k < 2 || o.topk_k % 2 != 0 || o.topk_k > o.topk_chunk * o.topk_chunk)
        p.push_back("outer.topk_k " + std::to_string(o.topk_k) + " must be even, at least 2 and at most outer.topk_chunk² (" +
                    std::to_string(o.topk_chunk * o.topk_chunk) + ")");
    if (o.ef_beta < 0 || o.ef_beta > 1) p.push_back("outer.ef_beta must be in [0, 1]");
    if (o.aggregation != "mean_over_replicas" && o.aggregation != "mean_over_selectors")
        p.push_back("outer.aggregation \"" + o.aggregation +
                    "\" is unknown (expected mean_over_replicas or mean_over_selectors)");
}

Result<std::unique_ptr<OuterAlgorithm>> make_sparseloco(OuterBuild b) {
    const OuterConfig& o = b.cfg.outer;
    SparseLoCoConfig sc;
    take_shared_outer(b.cfg, sc);
    sc.ef_beta = o.ef_beta;
    sc.topk = TopkConfig{o.topk_chunk, o.topk_k};
    sc.aggregation =
        o.aggregation == "mean_over_selectors" ? Aggregation::kMeanOverSelectors : Aggregation::kMeanOverReplicas;
    sc.clip_median = o.clip_median;
    if (o.round_time_s > 0) {  // time-budgeted rounds: the token-weighted aggregate
        auto plan = time_budget(b.cfg);
        if (!plan) return plan.status();
        if (static_cast<int64_t>(plan->mean_scale.size()) != b.replicas)
            return Status::error("sparseloco: outer.round_time_s plans " + std::to_string(plan->mean_scale.size()) +
                                 " replicas, the run has " + std::to_string(b.replicas));
        sc.replica_weights = plan->mean_scale;
    }
    return std::unique_ptr<OuterAlgorithm>(std::make_unique<SparseLoCo>(std::move(b.params), sc, b.replica, b.replicas));
}

Result<std::unique_ptr<RoundCostModel>> plan_sparseloco_rounds(const RunConfig& cfg) {
    return plan_gather_rounds(cfg, make_sparseloco_codec(TopkConfig{cfg.outer.topk_chunk, cfg.outer.topk_k}));
}

}  // namespace tw
