// The inner optimizer every training loop steps (docs/methods.md §0): AdamW with weight decay on
// matrices only, the warm-up + cosine schedule (schedule.h), and clipping by a global gradient
// norm. Shared by the single-replica trainer (train/trainer.h), the pipeline stages (with
// `reparam`'s coordinates) and SkipPipe's step (train/skippipe_step.h), so the three cannot drift.
//
// One step: set_lr(step) → clip() or clip_to(norm) → step(). Not thread-safe; one per node.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <torch/types.h>

#include "core/config.h"

namespace torch::optim {
class AdamW;
}

namespace tw {

// AdamW over `params` in two groups: matrices (dim ≥ 2) with t.weight_decay, the rest without;
// betas (t.beta1, t.beta2), eps 1e-8, lr t.lr until set otherwise.
std::unique_ptr<torch::optim::AdamW> make_adamw(const std::vector<torch::Tensor>& params, const TrainConfig& t);
// Sets `lr` on every parameter group of `optim`.
void set_learning_rate(torch::optim::AdamW& optim, double lr);
// Clips the gradients of `params` (those defined) to a global L2 norm of `max_norm` with torch's
// clip_grad_norm_ (0 = off: the norm is still computed) and returns the norm before clipping.
double clip_grad_norm(const std::vector<torch::Tensor>& params, double max_norm);
// Clipping by a norm computed elsewhere (a pipeline replica's stages together): every defined
// gradient is scaled by max_norm / (norm + 1e-6), torch's coefficient, when that is below 1.
// max_norm = 0 is off.
void clip_grad_to_norm(const std::vector<torch::Tensor>& params, double norm, double max_norm);

class InnerOptimizer {
public:
    // Steps `params` (their order is the order gradients are clipped in) with `t`'s settings.
    InnerOptimizer(std::vector<torch::Tensor> params, const TrainConfig& t);
    ~InnerOptimizer();
    InnerOptimizer(const InnerOptimizer&) = delete;
    InnerOptimizer& operator=(const InnerOptimizer&) = delete;

    // More parameters stepped with the same settings in a group of their own (`reparam`'s Z,
    // matrices, with weight decay). AdamW updates every parameter on its own, so this steps them
    // exactly as a separate optimizer would.
    void add_params(const std::vector<torch::Tensor>& params);
    // The schedule's learning rate for 0-based step `step` (lr_at), set on every group; returns it.
    double set_lr(int64_t step);
    // Clips by the norm over this optimizer's parameters; returns the norm before clipping.
    double clip();
    // Clips by `global_norm`, computed over more than this node's parameters.
    void clip_to(double global_norm);
    void step();

    const std::vector<torch::Tensor>& params() const { return params_; }
    torch::optim::AdamW& adamw() { return *adamw_; }  // for checkpoints

private:
    TrainConfig cfg_;
    std::vector<torch::Tensor> params_;
    std::unique_ptr<torch::optim::AdamW> adamw_;
};

}  // namespace tw
