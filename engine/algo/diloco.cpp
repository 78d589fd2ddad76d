// DiLoCo outer step over a byte-level all-gather.
#include "engine/algo/diloco.h"

#include <chrono>
#include <cstring>

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
    auto wire = cfg_.dtype == WireDtype::kFp32 ? delta : delta.to(torch::kBFloat16);
    std::vector<uint8_t> mine(static_cast<size_t>(wire.numel() * wire.element_size()));
    std::memcpy(mine.data(), wire.data_ptr(), mine.size());

    const auto t_comm = Clock::now();
    auto all = c.all_gather(mine, LinkClass::kOuterSync, sim_clock_s, clocks);
    const auto t_apply = Clock::now();
    if (!all) return all.status();
    // Average in rank order on every replica, so all of them compute bit-identical results.
    auto avg = torch::zeros({n_params_}, torch::kFloat32);
    const auto wire_type = cfg_.dtype == WireDtype::kFp32 ? torch::kFloat32 : torch::kBFloat16;
    for (size_t r = 0; r < all->size(); ++r) {
        auto& bytes = (*all)[r];
        if (bytes.size() != mine.size())
            return Status::error("diloco: replica " + std::to_string(r) + " sent " + std::to_string(bytes.size()) +
                                 " bytes, expected " + std::to_string(mine.size()) + " (different model?)");
        avg += torch::from_blob(bytes.data(), {n_params_}, wire_type).to(torch::kFloat32);
    }
    avg /= static_cast<double>(all->size());

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
    timings_ = {seconds_between(t_encode, t_comm), seconds_between(t_comm, t_apply),
                seconds_between(t_apply, Clock::now())};
    return Status::ok();
}

}  // namespace tw
