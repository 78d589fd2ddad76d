// The OuterAlgorithm interface's shared parts: the global-weights swap for evaluation and the
// round agreement (docs/methods.md §2–§5, §11). Construction is the registry's (registry.cpp).
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

void put_tensors(OuterState& s, const std::string& prefix, const std::vector<torch::Tensor>& list) {
    for (size_t i = 0; i < list.size(); ++i) s.emplace_back(prefix + "." + std::to_string(i), list[i].detach().clone());
}

Result<bool> take_tensors(const OuterState& s, const std::string& prefix, std::vector<torch::Tensor>& list) {
    using R = Result<bool>;
    std::vector<const torch::Tensor*> found(list.size(), nullptr);
    size_t n = 0;
    for (auto& [name, t] : s) {
        if (name.compare(0, prefix.size() + 1, prefix + ".") != 0) continue;
        const std::string idx = name.substr(prefix.size() + 1);
        if (idx.empty() || idx.find_first_not_of("0123456789") != std::string::npos || idx.size() > 6)
            return R::error("state " + name + ": not an index of " + prefix);
        const size_t i = std::stoul(idx);
        if (i >= list.size()) return R::error("state " + name + ": " + prefix + " has " + std::to_string(list.size()) + " tensors");
        if (!t.defined() || t.sizes() != list[i].sizes() || t.scalar_type() != list[i].scalar_type())
            return R::error("state " + name + ": shape or type differs from this model's");
        if (!found[i]) ++n;
        found[i] = &t;
    }
    if (n == 0) return false;
    if (n != list.size()) return R::error("state " + prefix + ": " + std::to_string(n) + " of " + std::to_string(list.size()) + " tensors");
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < list.size(); ++i) list[i].copy_(*found[i]);
    return true;
}

std::string unknown_state(const OuterState& s, const std::vector<std::string>& known) {
    for (auto& [name, t] : s) {
        bool ok = false;
        for (auto& k : known) ok = ok || name.compare(0, k.size() + 1, k + ".") == 0 || name == k;
        if (!ok) return name;
    }
    return "";
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
