// SkipPipe (Blagoev et al., arXiv 2502.19913), METHODS.md §8: the training semantics of partial
// pipelines on one whole model in one process. Each micro-batch runs only the stages of its path
// (LlamaImpl::forward_path), so only those stages receive its gradient; the optimizer then steps
// every parameter that some micro-batch reached. Where the nodes are and when they run is the
// scheduler's business (core/skippipe.h); this file only trains and evaluates.
//
// Header-only so that `thinwire skippipe` (app/cmd_skippipe.cpp) and the engine tests share the
// very code that trains.
#pragma once

#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>

#include <cstdint>
#include <vector>

#include "core/skippipe.h"
#include "engine/data/loader.h"
#include "engine/model/fused_ops.h"
#include "engine/model/llama.h"

namespace tw {

// The stage sequence a scheduled path visits, in forward order: what forward_path runs.
inline std::vector<int64_t> path_stages_of(const SkipPath& p) {
    std::vector<int64_t> out;
    out.reserve(p.visits.size());
    for (const SkipVisit& v : p.visits) out.push_back(v.stage);
    return out;
}

// Mean next-token cross-entropy (nats/token) of windows [B, T+1] through the blocks of `path` of an
// n_stages split; with the in-order full path this is LlamaImpl::loss.
inline torch::Tensor path_loss(Llama& model, const torch::Tensor& window, const std::vector<int64_t>& path,
                               int64_t n_stages) {
    const int64_t T = window.size(1) - 1;
    auto logits = model->forward_path(window.narrow(1, 0, T), path, n_stages);  // [B, T, V]
    return fused::cross_entropy(logits.reshape({-1, logits.size(-1)}), window.narrow(1, 1, T).reshape({-1}));
}

struct SkipStepResult {
    double loss = 0;       // mean over the micro-batches, nats/token
    double grad_norm = 0;  // global norm before clipping, over the parameters that got a gradient
};

// One optimizer step of SkipPipe training.
//   windows[k]  [b, T+1] int64: micro-batch k's tokens
//   paths[k]    its stage sequence (path_stages_of of the scheduled path)
//   lr          set on every parameter group before the step
//   grad_clip   max global grad norm; 0 = off (the norm is still reported)
// Each micro-batch's loss, divided by the number of micro-batches, is backpropagated on its own
// (gradient accumulation: one graph alive at a time). Gradients are dropped — left undefined, not
// zeroed — before the first micro-batch, so a parameter that no path reached has no gradient and
// AdamW skips it entirely: no update, no weight decay, no moment or step-count change, as if that
// stage's nodes had not taken part in the iteration. Parameters some path reached step as usual.
inline SkipStepResult skippipe_step(Llama& model, torch::optim::AdamW& optim, const std::vector<torch::Tensor>& windows,
                                    const std::vector<std::vector<int64_t>>& paths, int64_t n_stages, double lr,
                                    double grad_clip) {
    TORCH_CHECK(!windows.empty() && windows.size() == paths.size(), "skippipe_step: one path per micro-batch");
    for (auto& g : optim.param_groups()) static_cast<torch::optim::AdamWOptions&>(g.options()).lr(lr);
    for (auto& p : model->parameters()) p.mutable_grad() = torch::Tensor();
    const double scale = 1.0 / static_cast<double>(windows.size());
    SkipStepResult r;
    for (size_t k = 0; k < windows.size(); ++k) {
        auto loss = path_loss(model, windows[k], paths[k], n_stages);
        (loss * scale).backward();
        r.loss += loss.item<double>() * scale;
    }
    r.grad_norm = torch::nn::utils::clip_grad_norm_(model->parameters(), grad_clip > 0 ? grad_clip : 1e30);
    optim.step();
    return r;
}

// Mean loss over validation batches 0..batches−1 (val.sequential_batch, fixed across calls, as
// Trainer::evaluate uses) through `path`, without gradients.
inline double evaluate_path(Llama& model, const WindowLoader& val, int64_t batches, const std::vector<int64_t>& path,
                            int64_t n_stages) {
    torch::NoGradGuard no_grad;
    double sum = 0;
    for (int64_t i = 0; i < batches; ++i)
        sum += path_loss(model, val.sequential_batch(i), path, n_stages).item<double>();
    return sum / static_cast<double>(batches);
}

}  // namespace tw
