// Sizes of the model family (METHODS.md §0) computed from its config alone, without building it.
// Torch-free so the coordinator can plan compute budgets (core/hdee_plan.h); the engine's model
// (engine/model/llama.h) is the reference they count.
#pragma once

#include <cstdint>

#include "core/config.h"

namespace tw {

// Parameter count (tied head counted once).
int64_t count_parameters(const ModelConfig& cfg);

// Training FLOPs per token: 6·N_matmul + 12·L·T·d (attention scores and values, fwd + bwd), where
// N_matmul = L·(4·d² + 3·d_ff·d) + V·d counts the weights of every matrix product, the head included.
double train_flops_per_token(const ModelConfig& cfg);

}  // namespace tw
