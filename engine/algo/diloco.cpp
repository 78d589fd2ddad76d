// DiLoCo outer step over a byte-level all-gather.
#include "engine/algo/diloco.h"

#include <chrono>
#include <cmath>
#include <cstring>

#include "engine/algo/aggregation_guard.h"
#include "engine/algo/ring_allreduce.h"
#include "engine/codec/codec.h"

namespace tw {
namespace {
using Clock = std::chrono::steady_clock;
double seconds_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }
}  // namespace

DiLoCo::DiLoCo(std::vector<torch::Tensor> params, DiLoCoConfig cfg) : params_(std::move(params)), cfg_(cfg) {
    torch::NoGradGuard no_grad;
    for (auto& p : params_) {
        global_.push_back(p.detach().clone());
        momentum_.push_back(torch::zeros_like(p));
        n_params_ += p.numel();
    }
}

Status DiLoCo::sync(Collective& c, double sim_clock_s, std::vector<double>* clocks) {
    torch::NoGradGuard no_grad;
    const auto t_encode = Clock::now();
    // Δ_r = θ − θ_r, flattened into one fp32 vector, then cast for the wire.
    std::vector<torch::Tensor> parts;
    for (size_t i = 0; i < params_.size(); ++i) parts.push_back((global_[i] - params_[i]).reshape({-1}));
    auto delta = torch::cat(parts);
    if (cfg_.contribution_scale != 1.0) delta.mul_(cfg_.contribution_scale);  // time-budgeted rounds
    if (cfg_.topology == Topology::kRing) {
        const auto t_comm = Clock::now();
        // The ring reduces the fp32 Δ itself, with the wire dtype's codec on every hop.
        auto codec = make_dense_codec(cfg_.dtype == WireDtype::kBf16);
        RingSpec spec;
        for (int r = 0; r < c.size(); ++r) spec.members.push_back(r);
        spec.segments = {n_params_};
        spec.codec = codec.get();
        spec.tag = "diloco";
        auto ring = ring_allreduce_mean(c, spec, delta, sim_clock_s, RingGuard{cfg_.guard_ratio});
        if (!ring) return ring.status();
        if (clocks) *clocks = ring->clocks;
        guard_clipped_ = ring->guard_clipped;
        bytes_sent_ = ring->bytes_sent;
        hops_ = ring->hops;
        const auto t_apply = Clock::now();
        apply_mean(delta);
        timings_ = {seconds_between(t_encode, t_comm), seconds_between(t_comm, t_apply),
                    seconds_between(t_apply, Clock::now())};
        return Status::ok();
    }
    auto wire = cfg_.dtype == WireDtype::kFp32 ? delta : delta.to(torch::kBFloat16);
    std::vector<uint8_t> mine(static_cast<size_t>(wire.numel() * wire.element_size()));
    std::memcpy(mine.data(), wire.data_ptr(), mine.size());

    const auto t_comm = Clock::now();
    auto all = c.all_gather(mine, LinkClass::kOuterSync, sim_clock_s, clocks);
    const auto t_apply = Clock::now();
    if (!all) return all.status();
    // Average in rank order on every replica, so all of them compute bit-identical results.
    const auto wire_type = cfg_.dtype == WireDtype::kFp32 ? torch::kFloat32 : torch::kBFloat16;
    std::vector<torch::Tensor> contrib;
    std::vector<double> norms;
    for (size_t r = 0; r < all->size(); ++r) {
        auto& bytes = (*all)[r];
        if (bytes.size() != mine.size())
            return Status::error("diloco: replica " + std::to_string(r) + " sent " + std::to_string(bytes.size()) +
                                 " bytes, expected " + std::to_string(mine.size()) + " (different model?)");
        contrib.push_back(torch::from_blob(bytes.data(), {n_params_}, wire_type).to(torch::kFloat32));
        if (cfg_.guard_ratio <= 0) continue;
        // A sequential double sum: the same bits on every replica whatever its thread count, so the
        // guard's decisions (and the scaled values) never differ between them.
        const float* v = contrib.back().data_ptr<float>();
        double s = 0;
        for (int64_t j = 0; j < n_params_; ++j) s += static_cast<double>(v[j]) * v[j];
        if (!std::isfinite(s))
            return Status::error("diloco: replica " + std::to_string(r) + " sent non-finite or overflowing values");
        norms.push_back(std::sqrt(s));
    }
    const auto scale = norm_clip_scales(norms, cfg_.guard_ratio, NormReference::kLowerMedianOfOthers, &guard_clipped_);
    auto avg = torch::zeros({n_params_}, torch::kFloat32);
    for (size_t r = 0; r < contrib.size(); ++r) {
        if (scale.empty() || scale[r] == 1.0f)
            avg += contrib[r];
        else
            avg += contrib[r] * scale[r];
    }
    avg /= static_cast<double>(all->size());

    apply_mean(avg);
    bytes_sent_ = static_cast<uint64_t>(all->size() - 1) * mine.size();
    hops_ = 1;
    timings_ = {seconds_between(t_encode, t_comm), seconds_between(t_comm, t_apply),
                seconds_between(t_apply, Clock::now())};
    return Status::ok();
}

void DiLoCo::refuse_round(Collective& c, double sim_clock_s) const {
    if (cfg_.topology == Topology::kMesh) {
        (void)c.all_gather({}, LinkClass::kOuterSync, sim_clock_s, nullptr);
        return;
    }
    RingSpec spec;
    for (int r = 0; r < c.size(); ++r) spec.members.push_back(r);
    ring_refuse(c, spec, sim_clock_s);
}

void DiLoCo::apply_mean(const torch::Tensor& avg) {
    // Outer Nesterov, PyTorch SGD semantics: the buffer starts at zero, so after the first round it
    // holds Δ̄ exactly, as PyTorch's clone of the first gradient does.
    int64_t off = 0;
    for (size_t i = 0; i < params_.size(); ++i) {
        auto d = avg.narrow(0, off, params_[i].numel()).view(params_[i].sizes());
        off += params_[i].numel();
        if (cfg_.momentum > 0) {
            momentum_[i].mul_(cfg_.momentum).add_(d);
            global_[i].sub_(d + cfg_.momentum * momentum_[i], cfg_.lr_outer);
        } else {
            global_[i].sub_(d, cfg_.lr_outer);
        }
        params_[i].copy_(global_[i]);
    }
}

}  // namespace tw
