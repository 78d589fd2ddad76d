// The inner optimizer step; see inner_step.h.
#include "engine/train/inner_step.h"

#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>

#include "engine/train/schedule.h"

namespace tw {
namespace {

std::unique_ptr<torch::optim::AdamWOptions> adamw_options(const TrainConfig& t, double weight_decay) {
    return std::make_unique<torch::optim::AdamWOptions>(
        torch::optim::AdamWOptions(t.lr).betas({t.beta1, t.beta2}).eps(1e-8).weight_decay(weight_decay));
}

}  // namespace

std::unique_ptr<torch::optim::AdamW> make_adamw(const std::vector<torch::Tensor>& params, const TrainConfig& t) {
    std::vector<torch::Tensor> decay, no_decay;
    for (auto& p : params) (p.dim() >= 2 ? decay : no_decay).push_back(p);
    std::vector<torch::optim::OptimizerParamGroup> groups;
    groups.emplace_back(decay, adamw_options(t, t.weight_decay));
    groups.emplace_back(no_decay, adamw_options(t, 0.0));
    return std::make_unique<torch::optim::AdamW>(groups, torch::optim::AdamWOptions(t.lr));
}

void set_learning_rate(torch::optim::AdamW& optim, double lr) {
    for (auto& g : optim.param_groups()) static_cast<torch::optim::AdamWOptions&>(g.options()).lr(lr);
}

double clip_grad_norm(const std::vector<torch::Tensor>& params, double max_norm) {
    return torch::nn::utils::clip_grad_norm_(params, max_norm > 0 ? max_norm : 1e30);
}

void clip_grad_to_norm(const std::vector<torch::Tensor>& params, double norm, double max_norm) {
    if (max_norm <= 0) return;
    const double coef = max_norm / (norm + 1e-6);  // torch's clip_grad_norm_ rule
    if (coef >= 1) return;
    for (auto& p : params)
        if (p.grad().defined()) p.grad().mul_(coef);
}

InnerOptimizer::InnerOptimizer(std::vector<torch::Tensor> params, const TrainConfig& t)
    : cfg_(t), params_(std::move(params)), adamw_(make_adamw(params_, t)) {}

InnerOptimizer::~InnerOptimizer() = default;

void InnerOptimizer::add_params(const std::vector<torch::Tensor>& params) {
    if (params.empty()) return;
    adamw_->add_param_group(torch::optim::OptimizerParamGroup(params, adamw_options(cfg_, cfg_.weight_decay)));
    params_.insert(params_.end(), params.begin(), params.end());
}

double InnerOptimizer::set_lr(int64_t step) {
    const double lr = lr_at(step, cfg_.steps, cfg_.lr, cfg_.warmup_steps, cfg_.min_lr_frac);
    set_learning_rate(*adamw_, lr);
    return lr;
}

double InnerOptimizer::clip() { return clip_grad_norm(params_, cfg_.grad_clip); }

void InnerOptimizer::clip_to(double global_norm) { clip_grad_to_norm(params_, global_norm, cfg_.grad_clip); }

void InnerOptimizer::step() { adamw_->step(); }

}  // namespace tw
