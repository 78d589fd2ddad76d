// Sizes of the model family (docs/methods.md §0) computed from its config alone, without building it.
// Torch-free so the coordinator can plan compute budgets (core/hdee_plan.h); the engine's model
// (engine/model/llama.h) is the reference they count.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config.h"

namespace tw {

// One trainable tensor of the model: its name (as the engine's named_parameters() gives it) and shape.
struct TensorShape {
    std::string name;
    std::vector<int64_t> shape;
    int64_t numel() const;
};

// Every trainable tensor of the whole model in the engine's order (tok_emb, norm_f, head unless
// tied, then block_l.{attn_norm, wqkv, wo, mlp_norm, w13, w2} per layer), without building it: what
// the planner sizes payloads over at any scale.
std::vector<TensorShape> model_tensors(const ModelConfig& cfg);

// Parameter count (tied head counted once).
int64_t count_parameters(const ModelConfig& cfg);

// Training FLOPs per token: 6·N_matmul + 12·L·T·d (attention scores and values, fwd + bwd), where
// N_matmul = L·(4·d² + 3·d_ff·d) + V·d counts the weights of every matrix product, the head included.
double train_flops_per_token(const ModelConfig& cfg);

// The largest data-plane message a run's nodes exchange, in bytes: dense fp32 outer gradients of
// the whole model or one step's dense fp32 activations, whichever is larger, plus 25% and 1 MiB
// for codec headers and index arrays. Receivers drop anything longer (the mesh's frames, the hub
// relay's uploads). The model's vocabulary is the data's when the layout leaves it to the tokenizer.
size_t largest_data_frame_bytes(const RunConfig& cfg);
// The largest message on the data-plane mesh: a data frame, or the state a joiner or a spare
// receives (three fp32 copies of the model and their names at most). Mesh receivers drop longer ones.
size_t largest_mesh_message_bytes(const RunConfig& cfg);

}  // namespace tw
