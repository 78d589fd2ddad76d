// The OuterAlgorithm interface's shared parts: the global-weights swap for evaluation and the
// round agreement (METHODS.md §2–§5). Construction is the registry's (registry.cpp).
#include "engine/algo/outer.h"

#include <torch/torch.h>

#include "engine/algo/state_hash.h"

namespace tw {

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

}  // namespace tw
