// One pipeline stage's compute; see stage.h.
#include "engine/pipeline/stage.h"

#include <torch/autograd.h>

#include "engine/model/fused_ops.h"

namespace tw {

PipelineStage::PipelineStage(const ModelConfig& cfg, uint64_t seed, int64_t stage, int64_t n_stages,
                             std::unique_ptr<ActivationCodec> in, std::unique_ptr<ActivationCodec> out,
                             torch::Tensor t_fixed)
    : cfg_(cfg),
      stage_(stage),
      n_stages_(n_stages),
      in_(in ? std::move(in) : make_dense_codec(cfg.d_model)),
      out_(out ? std::move(out) : make_dense_codec(cfg.d_model)),
      dense_(make_dense_codec(cfg.d_model)),
      t_fixed_(std::move(t_fixed)),
      model_(cfg, seed, stage_spec(cfg, stage, n_stages)) {
    if (stage == 0 && t_fixed_.defined()) model_->set_frozen_embedding(t_fixed_);
}

Result<torch::Tensor> PipelineStage::input(const torch::Tensor& ids, const std::vector<uint8_t>& payload, int64_t b,
                                           const ActivationCodec& codec, torch::Tensor* ids_out, bool leaf) {
    if (first()) {
        if (ids_out) *ids_out = ids;
        return ids;
    }
    auto x = codec.decode_activations(payload, b, cfg_.seq_len, ids_out);
    if (!x) return Result<torch::Tensor>::error("stage " + std::to_string(stage_) + ": " + x.message());
    if (leaf) x->requires_grad_(true);
    return *x;
}

Result<std::vector<uint8_t>> PipelineStage::forward(int mb, const torch::Tensor& ids, const std::vector<uint8_t>& payload,
                                                    int64_t b) {
    using R = Result<std::vector<uint8_t>>;
    TORCH_CHECK(!last(), "forward() is for stages before the last; use forward_loss()");
    torch::Tensor tok;
    auto x = input(ids, payload, b, *in_, &tok, true);
    if (!x) return x.status();
    auto y = model_->forward(*x);
    saved_[mb] = {first() ? torch::Tensor() : *x, y};
    if (out_->needs_ids() && !tok.defined())
        return R::error("stage " + std::to_string(stage_) + ": a compressed boundary needs the token ids, and stage " +
                        std::to_string(stage_ - 1) + " sent dense activations");
    return out_->encode_activations(y.detach(), tok);
}

Result<double> PipelineStage::forward_loss(int mb, const torch::Tensor& ids, const std::vector<uint8_t>& payload,
                                           const torch::Tensor& targets, int64_t b, double scale) {
    TORCH_CHECK(last(), "forward_loss() is for the last stage");
    auto x = input(ids, payload, b, *in_, nullptr, true);
    if (!x) return x.status();
    auto logits = model_->forward(*x);
    auto loss = fused::cross_entropy(logits.reshape({-1, cfg_.vocab_size}), targets.reshape({-1}));
    saved_[mb] = {first() ? torch::Tensor() : *x, loss * scale};
    return loss.item<double>();
}

Result<std::vector<uint8_t>> PipelineStage::backward(int mb, const std::vector<uint8_t>& grad_payload, int64_t b) {
    using R = Result<std::vector<uint8_t>>;
    auto it = saved_.find(mb);
    if (it == saved_.end())
        return R::error("stage " + std::to_string(stage_) + ": backward of micro-batch " + std::to_string(mb) +
                        " before its forward");
    Saved s = std::move(it->second);
    saved_.erase(it);
    if (last()) {
        s.output.backward();
    } else {
        auto g = out_->decode_gradient(grad_payload, b, cfg_.seq_len);
        if (!g) return R::error("stage " + std::to_string(stage_) + ": " + g.message());
        s.output.backward(*g);
    }
    if (first()) return std::vector<uint8_t>{};
    return in_->encode_gradient(s.input.grad());
}

Result<std::vector<uint8_t>> PipelineStage::eval_forward(const torch::Tensor& ids, const std::vector<uint8_t>& payload,
                                                         int64_t b) {
    torch::NoGradGuard no_grad;
    auto x = input(ids, payload, b, *dense_, nullptr, false);
    if (!x) return x.status();
    return dense_->encode_activations(model_->forward(*x), torch::Tensor());
}

Result<double> PipelineStage::eval_loss(const torch::Tensor& ids, const std::vector<uint8_t>& payload,
                                        const torch::Tensor& targets, int64_t b) {
    torch::NoGradGuard no_grad;
    auto x = input(ids, payload, b, *dense_, nullptr, false);
    if (!x) return x.status();
    auto logits = model_->forward(*x);
    return fused::cross_entropy(logits.reshape({-1, cfg_.vocab_size}), targets.reshape({-1})).item<double>();
}

}  // namespace tw
