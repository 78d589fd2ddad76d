// A run's final model (storage/safetensors.h, the engine's names) in the Hugging Face Llama layout:
//   tok_emb [V, d]                     → model.embed_tokens.weight (plus a subspace pipeline's
//                                        frozen embedding "frozen_emb", which the model adds there)
//   block_L.attn_norm [d]              → model.layers.L.input_layernorm.weight
//   block_L.wqkv [3d, d] = [q | k | v] → model.layers.L.self_attn.{q,k,v}_proj.weight [d, d] each
//   block_L.wo [d, d]                  → model.layers.L.self_attn.o_proj.weight
//   block_L.mlp_norm [d]               → model.layers.L.post_attention_layernorm.weight
//   block_L.w13 [2f, d] = [gate | up]  → model.layers.L.mlp.{gate,up}_proj.weight [f, d] each
//   block_L.w2 [d, f]                  → model.layers.L.mlp.down_proj.weight
//   norm_f [d]                         → model.norm.weight
//   head [V, d] (untied)               → lm_head.weight
// The engine's attention splits each of q and k into heads of d/h contiguous rows and applies RoPE
// in the rotate-half form (pairs (j, j + hd/2), frequencies θ^(−2j/hd)), which is the layout of
// the Hugging Face Llama weights: rows are copied as they are, never permuted. A tied model stays
// tied (tie_word_embeddings, no lm_head) unless a frozen embedding is folded into the input side,
// which unties it (lm_head = tok_emb). Torch-free.
#pragma once

#include <string>

#include "core/config.h"
#include "core/status.h"
#include "storage/safetensors.h"

namespace tw {

// The Hugging Face tensors of `engine` (checked: every tensor of `model` present with its shape).
Result<SafeTensorsFile> to_hf_llama(const SafeTensorsFile& engine, const ModelConfig& model);
// config.json of a LlamaForCausalLM with `model`'s shape; `tied` as to_hf_llama left it.
std::string hf_llama_config_json(const ModelConfig& model, bool tied);

}  // namespace tw
