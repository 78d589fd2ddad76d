// A pipeline run's node state beside its model; see stage_state.h.
#include "engine/worker/stage_state.h"

#include <map>
#include <string>

#include <torch/torch.h>

namespace tw {
namespace {

std::string stage_prefix(int64_t s) { return "stage." + std::to_string(s) + "/"; }
constexpr const char* kStages = "stages";
constexpr const char* kTFixed = "t_fixed";
constexpr const char* kReparam = "reparam/";
constexpr const char* kShadowEmb = "shadow.emb";
constexpr const char* kShadow = "shadow/";

std::string shape_of(const torch::Tensor& t) {
    std::string s = std::string(c10::toString(t.scalar_type())) + "[";
    for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
    return s + "]";
}

std::string stages_text(const torch::Tensor& t) {
    std::string s;
    auto c = t.contiguous();
    for (int64_t i = 0; i < c.numel(); ++i) s += (i ? ", " : "") + std::to_string(c.data_ptr<int64_t>()[i]);
    return s.empty() ? "none" : s;
}

// The entries of `saved` under `prefix`, the prefix taken off.
OuterState under(const NamedTensors& saved, const std::string& prefix) {
    OuterState out;
    for (auto& [name, t] : saved)
        if (name.rfind(prefix, 0) == 0) out.emplace_back(name.substr(prefix.size()), t);
    return out;
}

void copy_into(torch::Tensor& live, const torch::Tensor& saved) {
    torch::NoGradGuard no_grad;
    live.copy_(saved);
}

}  // namespace

NamedTensors save_stage_state(const StageStateParts& parts) {
    NamedTensors out;
    std::vector<int64_t> stages;
    for (auto& [s, algo] : parts.slices) stages.push_back(s);
    out.emplace_back(kStages, torch::tensor(stages, torch::kInt64));
    for (auto& [s, algo] : parts.slices)
        if (algo)
            for (auto& [name, t] : algo->save_state()) out.emplace_back(stage_prefix(s) + name, t);
    if (parts.t_fixed.defined()) out.emplace_back(kTFixed, parts.t_fixed.detach().clone());
    if (parts.reparam)
        for (auto& r : *parts.reparam) out.emplace_back(kReparam + r.name, r.z.detach().clone());
    if (parts.shadow_emb.defined()) out.emplace_back(kShadowEmb, parts.shadow_emb.detach().clone());
    if (parts.shadow)
        for (auto& [name, t] : parts.shadow->save_state()) out.emplace_back(kShadow + name, t);
    return out;
}

Status load_stage_state(const NamedTensors& saved, const StageStateParts& parts) {
    // What this node's parts save now is what the file must hold: the same names, dtypes and shapes.
    const NamedTensors want = save_stage_state(parts);
    std::map<std::string, torch::Tensor> got;
    for (auto& [name, t] : saved) {
        if (!t.defined()) return Status::error("stage state \"" + name + "\" is empty");
        if (!got.emplace(name, t).second) return Status::error("stage state \"" + name + "\" appears twice");
    }
    auto stages = got.find(kStages);
    if (stages == got.end() || stages->second.scalar_type() != torch::kInt64 || stages->second.dim() != 1)
        return Status::error("no stage state (\"stages\" missing or malformed): not a checkpoint of a pipeline run's node");
    const torch::Tensor& mine = want.front().second;
    if (!torch::equal(stages->second.contiguous(), mine))
        return Status::error("a checkpoint of stage(s) " + stages_text(stages->second) + "; this node holds stage(s) " +
                             stages_text(mine));
    for (auto& [name, t] : want) {
        auto it = got.find(name);
        if (it == got.end()) return Status::error("stage state \"" + name + "\" missing");
        if (it->second.scalar_type() != t.scalar_type() || it->second.sizes() != t.sizes())
            return Status::error("stage state \"" + name + "\" is " + shape_of(it->second) + ", expected " + shape_of(t));
    }
    if (got.size() != want.size()) {
        std::map<std::string, int> known;
        for (auto& [name, t] : want) known[name] = 1;
        for (auto& [name, t] : got)
            if (!known.count(name)) return Status::error("stage state \"" + name + "\" is not this node's");
    }
    for (auto& [s, algo] : parts.slices)
        if (algo)
            if (Status st = algo->load_state(under(saved, stage_prefix(s))); !st)
                return Status::error("stage " + std::to_string(s) + ": " + algo->name() + " state: " + st.message());
    if (parts.t_fixed.defined()) {
        torch::Tensor t = parts.t_fixed;
        copy_into(t, got.at(kTFixed));
    }
    if (parts.reparam)
        for (auto& r : *parts.reparam) copy_into(r.z, got.at(kReparam + r.name));
    if (parts.shadow_emb.defined()) {
        torch::Tensor t = parts.shadow_emb;
        copy_into(t, got.at(kShadowEmb));
    }
    if (parts.shadow)
        if (Status st = parts.shadow->load_state(under(saved, kShadow)); !st)
            return Status::error("the embedding's shadow: " + parts.shadow->name() + " state: " + st.message());
    return Status::ok();
}

}  // namespace tw
