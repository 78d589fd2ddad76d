// SkipPipe (Blagoev et al., arXiv 2502.19913), docs/methods.md §8: the training semantics of partial
// pipelines on one whole model in one process. Each micro-batch runs only the stages of its path
// (LlamaImpl::forward_path), so only those stages receive its gradient; the optimizer then steps
// every parameter that some micro-batch reached. Where the nodes are and when they run is the
// scheduler's business (core/skippipe.h); this file trains, evaluates, and measures the per-stage
// compute times the scheduler is given (measure_stage_times).
//
// The one-process form: SkipPipe runs on nodes (engine/worker/skippipe_worker.h),
// which use path_stages_of, evaluate_path's loss and measure_stage_times from here; skippipe_step is
// the reference the node form is tested against (tests/app/test_skippipe_nodes.cpp).
#pragma once

#include <torch/optim/adamw.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/skippipe.h"
#include "engine/data/loader.h"
#include "engine/model/fused_ops.h"
#include "engine/model/llama.h"
#include "engine/train/inner_step.h"

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
    set_learning_rate(optim, lr);  // the shared inner step (train/inner_step.h)
    for (auto& p : model->parameters()) p.mutable_grad() = torch::Tensor();
    const double scale = 1.0 / static_cast<double>(windows.size());
    SkipStepResult r;
    for (size_t k = 0; k < windows.size(); ++k) {
        auto loss = path_loss(model, windows[k], paths[k], n_stages);
        (loss * scale).backward();
        r.loss += loss.item<double>() * scale;
    }
    r.grad_norm = clip_grad_norm(model->parameters(), grad_clip);
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

// ---- per-stage compute times -----------------------------------------------------------------------

// Blocks per stage of an n_stages split of cfg.n_layer (stage_spec's), [n_stages].
inline std::vector<int64_t> stage_block_counts(const ModelConfig& cfg, int64_t n_stages) {
    std::vector<int64_t> out;
    for (int64_t s = 0; s < n_stages; ++s) {
        const StageSpec sp = stage_spec(cfg, s, n_stages);
        out.push_back(sp.last_layer - sp.first_layer);
    }
    return out;
}

// Fastest forward and backward seconds of `run` over `reps` runs after two warm-ups (backward with
// `grad`, or of a scalar output when grad is undefined). The minimum, not the median: on a shared
// machine it is the estimate least disturbed by other processes.
template <class Fn>
FwdBwd time_fwd_bwd(Fn&& run, const torch::Tensor& grad, int reps) {
    std::vector<double> f, b;
    for (int i = 0; i < reps + 2; ++i) {
        auto t0 = std::chrono::steady_clock::now();
        torch::Tensor out = run();
        auto t1 = std::chrono::steady_clock::now();
        grad.defined() ? out.backward(grad) : out.backward();
        auto t2 = std::chrono::steady_clock::now();
        if (i < 2) continue;
        f.push_back(std::chrono::duration<double>(t1 - t0).count());
        b.push_back(std::chrono::duration<double>(t2 - t1).count());
    }
    return {*std::min_element(f.begin(), f.end()), *std::min_element(b.begin(), b.end())};
}

// Per-stage seconds of one micro-batch `window` [b, T+1] on this machine for an n_stages split of
// `model` (whole model, config `cfg`), from two measurements, each skipped when given:
//   head   the head op: forward_path with no blocks (path {}) plus the loss, and its backward;
//   block  one block alone (a blocks-only module built with `seed`: a middle stage's spec) on random
//          hidden states [b, T, cfg.d_model], backward with a random gradient.
// Then skip_stage_times(block, head, stage_block_counts(cfg, n_stages)) (core/skippipe.h). Leaves no
// gradient on `model`. The block measurement draws from Torch's global generator.
inline SkipStageTimes measure_stage_times(const ModelConfig& cfg, uint64_t seed, Llama& model,
                                          const torch::Tensor& window, int64_t n_stages,
                                          const std::optional<FwdBwd>& block_given,
                                          const std::optional<FwdBwd>& head_given, int reps = 10) {
    const int64_t b = window.size(0), T = window.size(1) - 1;
    const FwdBwd head =
        head_given ? *head_given : time_fwd_bwd([&] { return path_loss(model, window, {}, n_stages); }, {}, reps);
    for (auto& p : model->parameters()) p.mutable_grad() = torch::Tensor();
    FwdBwd block;
    if (block_given) {
        block = *block_given;
    } else {
        auto h = torch::randn({b, T, cfg.d_model}).requires_grad_(true);
        auto g = torch::randn({b, T, cfg.d_model});
        Llama one(cfg, seed, StageSpec{1, 3, 0, 1});
        block = time_fwd_bwd([&] { return one->forward(h); }, g, reps);
    }
    return skip_stage_times(block, head, stage_block_counts(cfg, n_stages));
}

}  // namespace tw
