// One pipeline stage's compute, one micro-batch at a time (docs/methods.md §6): the model slice, the
// codecs of its two boundaries, and what it keeps between a micro-batch's forward and backward.
// It moves no bytes itself: the pipeline worker (engine/worker/pipeline_worker) carries the
// payloads over the data plane, and the tests chain stages directly.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include <torch/types.h>

#include "core/config.h"
#include "core/status.h"
#include "engine/model/llama.h"
#include "engine/pipeline/activation_codec.h"

namespace tw {

class PipelineStage {
public:
    // Stage `stage` of `n_stages` of the model built from `seed`. `in` is the codec of the boundary
    // from stage−1, `out` of the one to stage+1 (null: dense; ignored on the first / last stage); the
    // stage owns them. `t_fixed` [V, d] is the frozen embedding shared by every node of the run
    // (undefined when no boundary of the run is compressed); stage 0 adds it where it embeds, and
    // compressed boundaries' codecs rebuild X with it.
    PipelineStage(const ModelConfig& cfg, uint64_t seed, int64_t stage, int64_t n_stages,
                  std::unique_ptr<ActivationCodec> in, std::unique_ptr<ActivationCodec> out, torch::Tensor t_fixed);

    Llama& model() { return model_; }
    int64_t stage() const { return stage_; }
    bool first() const { return stage_ == 0; }
    bool last() const { return stage_ == n_stages_ - 1; }
    const ActivationCodec& in() const { return *in_; }
    const ActivationCodec& out() const { return *out_; }
    torch::Tensor& t_fixed() { return t_fixed_; }

    // Forward of micro-batch `mb` on a stage before the last. First stage: `ids` [b, T] int64;
    // others: `payload` from stage−1 (b sequences). Returns the payload for stage+1 and keeps what
    // the backward needs.
    Result<std::vector<uint8_t>> forward(int mb, const torch::Tensor& ids, const std::vector<uint8_t>& payload,
                                         int64_t b);
    // Forward and loss on the last stage (or the only one: then `ids` are its input): the mean
    // next-token cross-entropy on `targets` [b, T]; `scale`·loss is what backward() differentiates.
    Result<double> forward_loss(int mb, const torch::Tensor& ids, const std::vector<uint8_t>& payload,
                                const torch::Tensor& targets, int64_t b, double scale);
    // Backward of `mb`: the last stage from its loss, the others from the gradient payload of
    // stage+1. Accumulates parameter gradients; returns the gradient payload for stage−1 (empty on
    // the first stage).
    Result<std::vector<uint8_t>> backward(int mb, const std::vector<uint8_t>& grad_payload, int64_t b);

    // Evaluation, without autograd and over dense boundaries whatever the training codecs: the
    // hidden states for stage+1, or (last stage) the loss.
    Result<std::vector<uint8_t>> eval_forward(const torch::Tensor& ids, const std::vector<uint8_t>& payload,
                                              int64_t b);
    Result<double> eval_loss(const torch::Tensor& ids, const std::vector<uint8_t>& payload,
                             const torch::Tensor& targets, int64_t b);

    // Micro-batches whose forward ran and whose backward has not (activations held).
    size_t held() const { return saved_.size(); }

private:
    // Input of this stage for a micro-batch: ids (first stage) or the decoded boundary (a leaf that
    // requires grad, so backward yields the gradient to send back). Fills ids_out when known.
    Result<torch::Tensor> input(const torch::Tensor& ids, const std::vector<uint8_t>& payload, int64_t b,
                                const ActivationCodec& codec, torch::Tensor* ids_out, bool leaf);

    struct Saved {
        torch::Tensor input;   // [b, T, d] leaf (undefined on the first stage)
        torch::Tensor output;  // [b, T, d] stage output, or the scaled scalar loss on the last stage
    };
    ModelConfig cfg_;
    int64_t stage_, n_stages_;
    std::unique_ptr<ActivationCodec> in_, out_;
    std::unique_ptr<ActivationCodec> dense_;  // evaluation's boundaries
    torch::Tensor t_fixed_;
    Llama model_;
    std::map<int, Saved> saved_;
};

}  // namespace tw
