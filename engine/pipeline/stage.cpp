// One pipeline stage's compute; see stage.h.
#include "engine/pipeline/stage.h"

#include <torch/autograd.h>

#include "engine/model/fused_ops.h"

namespace tw {

PipelineStage::PipelineStage(const ModelConfig& cfg, uint64_t seed, int64_t stage, int64_t n_stages, BoundaryCodec in,
                             BoundaryCodec out, torch::Tensor t_fixed)
    : cfg_(cfg),
      stage_(stage),
      n_stages_(n_stages),
      in_(std::move(in)),
      out_(std::move(out)),
      t_fixed_(std::move(t_fixed)),
      model_(cfg, seed, stage_spec(cfg, stage, n_stages)) {
    if (stage == 0 && t_fixed_.defined()) model_->set_frozen_embedding(t_fixed_);
}

Result<torch::Tensor> PipelineStage::input(const torch::Tensor& ids, const std::vector<uint8_t>& payload, int64_t b,
                                           const BoundaryCodec& codec, torch::Tensor* ids_out, bool leaf) {
    if (first()) {
        if (ids_out) *ids_out = ids;
        return ids;
    }
    auto x = decode_activations(payload, b, cfg_.seq_len, cfg_.d_model, t_fixed_, codec.u, codec.dtype,
                                cfg_.vocab_size, ids_out);
    if (!x) return Result<torch::Tensor>::error("stage " + std::to_string(stage_) + ": " + x.message());
    if (leaf) x->requires_grad_(true);
    return *x;
}

Result<std::vector<uint8_t>> PipelineStage::forward(int mb, const torch::Tensor& ids, const std::vector<uint8_t>& payload,
                                                    int64_t b) {
    using R = Result<std::vector<uint8_t>>;
    TORCH_CHECK(!last(), "forward() is for stages before the last; use forward_loss()");
    torch::Tensor tok;
    auto x = input(ids, payload, b, in_, &tok, true);
    if (!x) return x.status();
    auto y = model_->forward(*x);
    saved_[mb] = {first() ? torch::Tensor() : *x, y};
    if (out_.rank > 0 && !tok.defined())
        return R::error("stage " + std::to_string(stage_) + ": a compressed boundary needs the token ids, and stage " +
                        std::to_string(stage_ - 1) + " sent dense activations");
    return encode_activations(y.detach(), tok, t_fixed_, out_.u, out_.dtype, cfg_.vocab_size);
}

Result<double> PipelineStage::forward_loss(int mb, const torch::Tensor& ids, const std::vector<uint8_t>& payload,
                                           const torch::Tensor& targets, int64_t b, double scale) {
    TORCH_CHECK(last(), "forward_loss() is for the last stage");
    auto x = input(ids, payload, b, in_, nullptr, true);
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
        auto g = decode_gradient(grad_payload, b, cfg_.seq_len, cfg_.d_model, out_.u, out_.dtype);
        if (!g) return R::error("stage " + std::to_string(stage_) + ": " + g.message());
        s.output.backward(*g);
    }
    if (first()) return std::vector<uint8_t>{};
    return encode_gradient(s.input.grad(), in_.u, in_.dtype);
}

Result<std::vector<uint8_t>> PipelineStage::eval_forward(const torch::Tensor& ids, const std::vector<uint8_t>& payload,
                                                         int64_t b) {
    torch::NoGradGuard no_grad;
    auto x = input(ids, payload, b, BoundaryCodec{}, nullptr, false);
    if (!x) return x.status();
    return encode_activations(model_->forward(*x), torch::Tensor(), torch::Tensor(), torch::Tensor(), WireDtype::kFp32,
                              cfg_.vocab_size);
}

Result<double> PipelineStage::eval_loss(const torch::Tensor& ids, const std::vector<uint8_t>& payload,
                                        const torch::Tensor& targets, int64_t b) {
    torch::NoGradGuard no_grad;
    auto x = input(ids, payload, b, BoundaryCodec{}, nullptr, false);
    if (!x) return x.status();
    auto logits = model_->forward(*x);
    return fused::cross_entropy(logits.reshape({-1, cfg_.vocab_size}), targets.reshape({-1})).item<double>();
}

}  // namespace tw
