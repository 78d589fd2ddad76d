// The frame shared by SparseLoCo and DeMo; see sparse_gather_method.h.
#include "engine/algo/sparse_gather_method.h"

#include <torch/torch.h>

#include <cmath>

#include "engine/algo/sparse_gather_round.h"

namespace tw {

SparseGatherMethod::SparseGatherMethod(Algorithm algorithm, std::vector<torch::Tensor> params,
                                       std::unique_ptr<Codec> codec, int64_t inner_steps, Topology topology,
                                       std::string buffer_name, int replica, int replicas)
    : algorithm_(algorithm),
      params_(std::move(params)),
      codec_(std::move(codec)),
      inner_steps_(inner_steps),
      topology_(topology),
      buffer_name_(std::move(buffer_name)),
      replica_(replica),
      replicas_(replicas) {
    torch::NoGradGuard no_grad;
    for (auto& p : params_) {
        TORCH_CHECK(p.scalar_type() == torch::kFloat32 && p.is_contiguous(), name(),
                    ": parameters must be contiguous fp32");
        global_.push_back(p.detach().clone());
        buffer_.push_back(torch::zeros(p.sizes(), torch::kFloat32));
    }
}

std::string SparseGatherMethod::where(int replica, size_t tensor) const {
    return name() + ": replica " + std::to_string(replica) + ", tensor " + std::to_string(tensor);
}

bool SparseGatherMethod::round_at(int64_t step) const { return step % inner_steps_ == 0; }

Result<RoundReport> SparseGatherMethod::after_step(int64_t step, Collective& c, double sim_clock_s) {
    if (step % inner_steps_ != 0) return RoundReport{};
    auto rep = sync(c, sim_clock_s);
    if (rep) rep->what = "round " + std::to_string(step / inner_steps_);
    return rep;
}

Result<RoundReport> SparseGatherMethod::sync(Collective& c, double sim_clock_s) {
    torch::NoGradGuard no_grad;
    const std::string n = name();
    SparseGatherRound round{n.c_str(), replica_, replicas_, [this](std::vector<uint8_t>& out) { return encode_own(out); },
                            [this](const std::vector<std::vector<uint8_t>>& all) { return apply(all); }, topology_};
    auto rep = sparse_gather_round(round, mine_, c, sim_clock_s);
    if (rep) rep->guard_clipped = guard_clipped_;
    return rep;
}

uint64_t SparseGatherMethod::payload_bytes() const {
    uint64_t n = 0;
    for (auto& g : global_) n += codec_->wire_bytes(g.sizes());
    return n;
}

Status SparseGatherMethod::decode_all(const std::vector<std::vector<uint8_t>>& all, const char* buffer_what,
                                      std::vector<std::vector<SparsePayload>>& dec) const {
    const size_t R = all.size(), n = global_.size();
    dec.assign(R, std::vector<SparsePayload>(n));
    for (size_t r = 0; r < R; ++r) {
        const int ri = static_cast<int>(r);
        const auto& bytes = all[r];
        if (bytes.empty())
            return Status::error(name() + ": replica " + std::to_string(r) + " sent no payload (its " + buffer_what +
                                 " holds NaN or Inf)");
        size_t off = 0;
        for (size_t i = 0; i < n; ++i) {
            auto& d = dec[r][i];
            if (Status s = codec_->decode_sparse(bytes.data(), bytes.size(), off, global_[i].sizes(), d); !s)
                return Status::error(where(ri, i) + ": " + s.message());
            const int64_t numel = global_[i].numel();
            for (size_t k = 0; k < d.index.size(); ++k) {
                if (!std::isfinite(d.value[k])) return Status::error(where(ri, i) + ": non-finite value in the payload");
                if (d.index[k] < 0 || d.index[k] >= numel) return Status::error(where(ri, i) + ": index out of range");
            }
        }
        if (off != bytes.size())
            return Status::error(name() + ": replica " + std::to_string(r) + " sent " + std::to_string(bytes.size()) +
                                 " bytes, expected " + std::to_string(off) + " (different model or codec?)");
    }
    return Status::ok();
}

OuterState SparseGatherMethod::save_global_and_buffer() const {
    OuterState s;
    put_tensors(s, "global", global_);
    put_tensors(s, buffer_name_, buffer_);
    return s;
}

Status SparseGatherMethod::load_global_and_buffer(const OuterState& s, const std::vector<std::string>& extra) {
    std::vector<std::string> keys{"global", buffer_name_};
    keys.insert(keys.end(), extra.begin(), extra.end());
    if (std::string u = unknown_state(s, keys); !u.empty()) return Status::error(name() + ": unknown state " + u);
    auto g = take_tensors(s, "global", global_);
    if (!g || !*g) return Status::error(name() + ": " + (g ? std::string("the state has no global") : g.message()));
    auto b = take_tensors(s, buffer_name_, buffer_);
    if (!b) return Status::error(name() + ": " + b.message());
    torch::NoGradGuard no_grad;
    if (!*b)
        for (auto& t : buffer_) t.zero_();  // a newcomer's buffer starts at zero
    return Status::ok();
}

}  // namespace tw
