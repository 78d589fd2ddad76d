// LLaMA-style decoder (docs/methods.md §0): RoPE, RMSNorm, SwiGLU, causal attention, tied or untied head.
// The same module class is the whole model and any contiguous stage of it: a stage is built
// with a layer range, and every parameter is initialised from a generator seeded by (seed, name),
// so a stage built alone on another node holds exactly the full model's slice.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include "core/config.h"
#include "core/model_size.h"

namespace tw {

// Which part of the model a module holds: blocks [first_layer, last_layer) plus the ends it owns.
struct StageSpec {
    int64_t stage = 0;       // index s in [0, n_stages)
    int64_t n_stages = 1;
    int64_t first_layer = 0;
    int64_t last_layer = 0;  // exclusive
    bool has_embedding() const { return stage == 0; }
    bool has_head() const { return stage == n_stages - 1; }
};

// Splits n_layer blocks into n_stages contiguous ranges, earlier stages taking the remainder.
// Requires 1 <= n_stages <= n_layer.
StageSpec stage_spec(const ModelConfig& cfg, int64_t stage, int64_t n_stages);

// SkipPipe's split (docs/methods.md §8): stage 0 holds the embedding, its blocks AND the final norm and head
// (every path starts and ends there); stage s > 0 holds its blocks only. The blocks are
// stage_spec(cfg, s, n_stages)'s; the ends are written in StageSpec's own terms (has_embedding: stage 0,
// has_head: the last of n_stages): stage 0 as {0, 1, ...} (first and last), stage s as {s, n_stages + 1, ...}
// (neither). A tied head then uses stage 0's one embedding matrix.
StageSpec skippipe_stage_spec(const ModelConfig& cfg, int64_t stage, int64_t n_stages);

class LlamaImpl : public torch::nn::Module {
public:
    // Whole model. cfg.vocab_size must be resolved (> 0).
    LlamaImpl(const ModelConfig& cfg, uint64_t seed);
    // One stage. With tied embeddings and n_stages > 1 the last stage holds its own copy of the
    // embedding matrix for the head (same initial values); keeping the two copies in step is the
    // pipeline's job.
    LlamaImpl(const ModelConfig& cfg, uint64_t seed, StageSpec spec);

    // Stage 0 takes token ids [B, T] (int64); other stages take hidden states [B, T, d].
    // The last stage returns logits [B, T, V]; others return hidden states [B, T, d].
    torch::Tensor forward(const torch::Tensor& x);
    // forward() in two parts, for stages that run their head apart from their blocks (SkipPipe's stage 0):
    // the embedding when the module holds it, then its blocks: ids [B, T] or hidden [B, T, d] → [B, T, d];
    // and the final norm and head (modules that hold it): hidden [B, T, d] → logits [B, T, V].
    // forward(x) is forward_head(forward_blocks(x)) bit for bit.
    torch::Tensor forward_blocks(const torch::Tensor& x);
    torch::Tensor forward_head(const torch::Tensor& h);

    // Mean next-token cross-entropy of a [B, T+1] window (whole model only).
    torch::Tensor loss(const torch::Tensor& window);

    // Subspace-compressed pipelines (docs/methods.md §6): a frozen token embedding T_fixed [V, d], added
    // to the trainable one where the model embeds (stage 0). A buffer, never a parameter: it is not
    // trained and not synced. Undefined (the default) = no frozen embedding.
    void set_frozen_embedding(torch::Tensor t_fixed);
    torch::Tensor& frozen_embedding() { return frozen_emb_; }

    // SkipPipe (docs/methods.md §8), whole model only: the embedding, then the blocks of stages `path`
    // of an n_stages split in that order (stages may be left out or swapped), then norm and head.
    // ids [B, T] → logits [B, T, V].
    torch::Tensor forward_path(const torch::Tensor& ids, const std::vector<int64_t>& path, int64_t n_stages);

    const ModelConfig& config() const { return cfg_; }
    const StageSpec& spec() const { return spec_; }
    int64_t num_parameters() const;  // distinct parameters (a tied head is counted once)

private:
    struct Block;
    void build(uint64_t seed);

    ModelConfig cfg_;
    StageSpec spec_;
    torch::Tensor embed(const torch::Tensor& ids);  // [B, T] → [B, T, d]
    torch::Tensor head(const torch::Tensor& h);     // [B, T, d] → logits [B, T, V]

    torch::Tensor tok_emb_;                 // [V, d], stage 0 (and the head copy when split + tied)
    torch::Tensor frozen_emb_;              // [V, d] T_fixed buffer, or undefined
    torch::Tensor head_;                    // [V, d] untied head (last stage)
    torch::Tensor norm_f_;                  // [d] final RMSNorm weight (last stage)
    std::vector<std::shared_ptr<Block>> blocks_;
    torch::Tensor rope_cos_, rope_sin_;     // [T, hd] buffers
    torch::Tensor causal_bias_;             // [T, T] fp32: 0 on/below the diagonal, −inf above
};
TORCH_MODULE(Llama);

// count_parameters and train_flops_per_token live in core/model_size.h (Torch-free: the
// coordinator plans compute budgets with them).

}  // namespace tw
