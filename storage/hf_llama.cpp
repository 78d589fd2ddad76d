#include "storage/hf_llama.h"

#include <nlohmann/json.hpp>

#include "core/model_size.h"

namespace tw {
namespace {

// Rows [first, first + count) of a row-major [rows, cols] tensor.
SafeTensor rows_of(const SafeTensor& t, const std::string& name, int64_t first, int64_t count) {
    const int64_t cols = t.shape.at(1);
    SafeTensor out;
    out.name = name;
    out.shape = {count, cols};
    out.values.assign(t.values.begin() + first * cols, t.values.begin() + (first + count) * cols);
    return out;
}

SafeTensor renamed(const SafeTensor& t, const std::string& name) {
    SafeTensor out = t;
    out.name = name;
    return out;
}

}  // namespace

Result<SafeTensorsFile> to_hf_llama(const SafeTensorsFile& engine, const ModelConfig& model) {
    using R = Result<SafeTensorsFile>;
    for (const TensorShape& t : model_tensors(model)) {
        const SafeTensor* got = engine.find(t.name);
        if (!got) return R::error("the model has no tensor " + t.name);
        if (got->shape != t.shape) return R::error("tensor " + t.name + " has another shape than the config's model");
    }
    const int64_t d = model.d_model, f = model.ff_width(), V = model.vocab_size;
    SafeTensorsFile out;
    SafeTensor emb = renamed(*engine.find("tok_emb"), "model.embed_tokens.weight");
    const SafeTensor* frozen = engine.find("frozen_emb");
    if (frozen) {
        if (frozen->shape != std::vector<int64_t>{V, d}) return R::error("tensor frozen_emb has another shape than tok_emb");
        for (size_t i = 0; i < emb.values.size(); ++i) emb.values[i] += frozen->values[i];
    }
    out.tensors.push_back(std::move(emb));
    for (int64_t l = 0; l < model.n_layer; ++l) {
        const std::string b = "block_" + std::to_string(l) + ".", h = "model.layers." + std::to_string(l) + ".";
        const SafeTensor& qkv = *engine.find(b + "wqkv");
        const SafeTensor& w13 = *engine.find(b + "w13");
        out.tensors.push_back(renamed(*engine.find(b + "attn_norm"), h + "input_layernorm.weight"));
        out.tensors.push_back(rows_of(qkv, h + "self_attn.q_proj.weight", 0, d));
        out.tensors.push_back(rows_of(qkv, h + "self_attn.k_proj.weight", d, d));
        out.tensors.push_back(rows_of(qkv, h + "self_attn.v_proj.weight", 2 * d, d));
        out.tensors.push_back(renamed(*engine.find(b + "wo"), h + "self_attn.o_proj.weight"));
        out.tensors.push_back(renamed(*engine.find(b + "mlp_norm"), h + "post_attention_layernorm.weight"));
        out.tensors.push_back(rows_of(w13, h + "mlp.gate_proj.weight", 0, f));
        out.tensors.push_back(rows_of(w13, h + "mlp.up_proj.weight", f, f));
        out.tensors.push_back(renamed(*engine.find(b + "w2"), h + "mlp.down_proj.weight"));
    }
    out.tensors.push_back(renamed(*engine.find("norm_f"), "model.norm.weight"));
    if (!model.tie_embeddings) out.tensors.push_back(renamed(*engine.find("head"), "lm_head.weight"));
    else if (frozen) out.tensors.push_back(renamed(*engine.find("tok_emb"), "lm_head.weight"));
    out.metadata["format"] = "pt";
    return out;
}

std::string hf_llama_config_json(const ModelConfig& model, bool tied) {
    nlohmann::json j = {{"architectures", {"LlamaForCausalLM"}},
                        {"model_type", "llama"},
                        {"hidden_size", model.d_model},
                        {"intermediate_size", model.ff_width()},
                        {"num_hidden_layers", model.n_layer},
                        {"num_attention_heads", model.n_head},
                        {"num_key_value_heads", model.n_head},
                        {"head_dim", model.head_dim()},
                        {"hidden_act", "silu"},
                        {"max_position_embeddings", model.seq_len},
                        {"rms_norm_eps", model.norm_eps},
                        {"rope_theta", model.rope_theta},
                        {"vocab_size", model.vocab_size},
                        {"tie_word_embeddings", tied},
                        {"attention_bias", false},
                        {"mlp_bias", false},
                        {"torch_dtype", "float32"}};
    return j.dump(2) + "\n";
}

}  // namespace tw
