// LLaMA-style decoder and its stage split. See llama.h for the contract.
#include "engine/model/llama.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/nn/functional.h>

#include <cmath>

#include "core/assert.h"
#include "core/hash.h"
#include "engine/model/fused_ops.h"

namespace tw {
namespace F = torch::nn::functional;
namespace {

// Per-parameter seed: seeded_hash64 (core/hash.h) of the name mixed with the run seed, so init does not depend on
// construction order or on which stage builds the parameter.
uint64_t param_seed(uint64_t seed, const std::string& name) {
    return seeded_hash64(name, kHashSeed ^ (seed * 0x9E3779B97F4A7C15ull));
}

torch::Tensor normal_init(uint64_t seed, const std::string& name, std::vector<int64_t> shape, double std) {
    auto gen = at::make_generator<at::CPUGeneratorImpl>(param_seed(seed, name));
    return at::normal(0.0, std, shape, gen, torch::kFloat32);
}

}  // namespace

struct LlamaImpl::Block : torch::nn::Module {
    torch::Tensor attn_norm, wqkv, wo, mlp_norm, w13, w2;
    int64_t n_head, d_ff;
    double eps;

    Block(const ModelConfig& c, int64_t layer, uint64_t seed) : n_head(c.n_head), d_ff(c.ff_width()), eps(c.norm_eps) {
        const std::string p = "block_" + std::to_string(layer) + ".";
        const int64_t d = c.d_model;
        const double resid_std = c.init_std / std::sqrt(2.0 * c.n_layer);  // GPT-2 scaling of residual writers
        attn_norm = register_parameter("attn_norm", torch::ones({d}));
        wqkv = register_parameter("wqkv", normal_init(seed, p + "wqkv", {3 * d, d}, c.init_std));
        wo = register_parameter("wo", normal_init(seed, p + "wo", {d, d}, resid_std));
        mlp_norm = register_parameter("mlp_norm", torch::ones({d}));
        w13 = register_parameter("w13", normal_init(seed, p + "w13", {2 * d_ff, d}, c.init_std));
        w2 = register_parameter("w2", normal_init(seed, p + "w2", {d, d_ff}, resid_std));
    }

    // x: [B, T, d] → [B, T, d]. causal_bias: [T, T], 0 on and below the diagonal, −inf above.
    torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                          const torch::Tensor& causal_bias) {
        const int64_t B = x.size(0), T = x.size(1), d = x.size(2), hd = d / n_head;
        // Attention: fused QKV projection, heads split and RoPE applied in one pass, then fused
        // causal attention (per-head BLAS GEMMs, softmax on the lower triangle); softmax in fp32.
        auto qkv = fused::qkv_rope(F::linear(fused::rms_norm(x, attn_norm, eps), wqkv), cos, sin, n_head);
        torch::Tensor y;  // [B, T, d]
        if (fused::has_cblas()) {
            y = fused::causal_attention(qkv[0], qkv[1], qkv[2]);
        } else {  // ATen path: scale and causal mask folded into the score GEMM
            auto q = qkv[0].view({B * n_head, T, hd}), k = qkv[1].view({B * n_head, T, hd});
            auto scores = torch::baddbmm(causal_bias, q, k.transpose(1, 2), /*beta=*/1.0,
                                         /*alpha=*/1.0 / std::sqrt(static_cast<double>(hd)));
            y = torch::bmm(torch::softmax(scores, -1), qkv[2].view({B * n_head, T, hd}))
                    .view({B, n_head, T, hd}).transpose(1, 2).reshape({B, T, d});
        }
        auto h = x + F::linear(y, wo);
        // SwiGLU MLP: fused gate/up projection.
        return h + F::linear(fused::swiglu(F::linear(fused::rms_norm(h, mlp_norm, eps), w13)), w2);
    }
};

StageSpec stage_spec(const ModelConfig& cfg, int64_t stage, int64_t n_stages) {
    TW_ASSERT(n_stages >= 1 && n_stages <= cfg.n_layer && stage >= 0 && stage < n_stages);
    const int64_t base = cfg.n_layer / n_stages, extra = cfg.n_layer % n_stages;
    StageSpec s;
    s.stage = stage;
    s.n_stages = n_stages;
    s.first_layer = stage * base + std::min(stage, extra);
    s.last_layer = s.first_layer + base + (stage < extra ? 1 : 0);
    return s;
}

LlamaImpl::LlamaImpl(const ModelConfig& cfg, uint64_t seed) : LlamaImpl(cfg, seed, stage_spec(cfg, 0, 1)) {}

LlamaImpl::LlamaImpl(const ModelConfig& cfg, uint64_t seed, StageSpec spec) : cfg_(cfg), spec_(spec) {
    TW_ASSERT(cfg.vocab_size > 0);
    TW_ASSERT(cfg.d_model % cfg.n_head == 0 && cfg.head_dim() % 2 == 0);
    build(seed);
}

void LlamaImpl::build(uint64_t seed) {
    const int64_t V = cfg_.vocab_size, d = cfg_.d_model, T = cfg_.seq_len, hd = cfg_.head_dim();
    const bool tied_copy = spec_.has_head() && cfg_.tie_embeddings;
    if (spec_.has_embedding() || tied_copy)
        tok_emb_ = register_parameter("tok_emb", normal_init(seed, "tok_emb", {V, d}, cfg_.init_std));
    for (int64_t l = spec_.first_layer; l < spec_.last_layer; ++l)
        blocks_.push_back(register_module("block_" + std::to_string(l), std::make_shared<Block>(cfg_, l, seed)));
    if (spec_.has_head()) {
        norm_f_ = register_parameter("norm_f", torch::ones({d}));
        if (!cfg_.tie_embeddings) head_ = register_parameter("head", normal_init(seed, "head", {V, d}, cfg_.init_std));
    }
    // RoPE tables, rotate-half layout: [T, hd] with the hd/2 frequencies repeated twice.
    auto inv_freq = 1.0 / torch::pow(cfg_.rope_theta, torch::arange(0, hd, 2, torch::kFloat64) / hd);
    auto freqs = torch::outer(torch::arange(T, torch::kFloat64), inv_freq);
    auto emb = torch::cat({freqs, freqs}, -1);
    rope_cos_ = register_buffer("rope_cos", emb.cos().to(torch::kFloat32));
    rope_sin_ = register_buffer("rope_sin", emb.sin().to(torch::kFloat32));
    causal_bias_ = register_buffer("causal_bias", torch::full({T, T}, -INFINITY).triu(1));
}

torch::Tensor LlamaImpl::embed(const torch::Tensor& ids) {
    TORCH_CHECK(ids.dim() == 2 && ids.scalar_type() == torch::kLong, "stage 0 expects int64 token ids [B, T]");
    auto h = F::embedding(ids, tok_emb_);
    if (frozen_emb_.defined()) h = h + F::embedding(ids, frozen_emb_);
    return h;
}

torch::Tensor LlamaImpl::head(const torch::Tensor& h) {
    return F::linear(fused::rms_norm(h, norm_f_, cfg_.norm_eps), cfg_.tie_embeddings ? tok_emb_ : head_);
}

void LlamaImpl::set_frozen_embedding(torch::Tensor t_fixed) {
    TORCH_CHECK(!t_fixed.defined() || (t_fixed.dim() == 2 && t_fixed.size(0) == cfg_.vocab_size &&
                                       t_fixed.size(1) == cfg_.d_model),
                "frozen embedding must be [vocab_size, d_model]");
    frozen_emb_ = t_fixed.defined() ? t_fixed.detach() : t_fixed;
}

StageSpec skippipe_stage_spec(const ModelConfig& cfg, int64_t stage, int64_t n_stages) {
    StageSpec s = stage_spec(cfg, stage, n_stages);
    s.n_stages = stage == 0 ? 1 : n_stages + 1;
    return s;
}

torch::Tensor LlamaImpl::forward(const torch::Tensor& x) {
    torch::Tensor h = forward_blocks(x);
    if (!spec_.has_head()) return h;
    return head(h);  // [B, T, V]
}

torch::Tensor LlamaImpl::forward_head(const torch::Tensor& h) {
    TORCH_CHECK(spec_.has_head(), "forward_head: this module holds no head");
    TORCH_CHECK(h.dim() == 3 && h.size(2) == cfg_.d_model, "forward_head expects hidden states [B, T, d_model]");
    return head(h);
}

torch::Tensor LlamaImpl::forward_blocks(const torch::Tensor& x) {
    torch::Tensor h;
    if (spec_.has_embedding()) {
        h = embed(x);
    } else {
        TORCH_CHECK(x.dim() == 3 && x.size(2) == cfg_.d_model, "stage expects hidden states [B, T, d_model]");
        h = x;
    }
    const int64_t T = x.size(1);
    TORCH_CHECK(T <= cfg_.seq_len, "sequence length ", T, " exceeds model.seq_len ", cfg_.seq_len);
    auto cos = rope_cos_.narrow(0, 0, T), sin = rope_sin_.narrow(0, 0, T);
    auto mask = causal_bias_.narrow(0, 0, T).narrow(1, 0, T);
    for (auto& b : blocks_) h = b->forward(h, cos, sin, mask);
    return h;
}

torch::Tensor LlamaImpl::forward_path(const torch::Tensor& ids, const std::vector<int64_t>& path, int64_t n_stages) {
    TORCH_CHECK(spec_.n_stages == 1, "forward_path needs the whole model");
    const int64_t T = ids.size(1);
    TORCH_CHECK(T <= cfg_.seq_len, "sequence length ", T, " exceeds model.seq_len ", cfg_.seq_len);
    auto cos = rope_cos_.narrow(0, 0, T), sin = rope_sin_.narrow(0, 0, T);
    auto mask = causal_bias_.narrow(0, 0, T).narrow(1, 0, T);
    auto h = embed(ids);
    for (int64_t s : path) {
        const StageSpec st = stage_spec(cfg_, s, n_stages);
        for (int64_t l = st.first_layer; l < st.last_layer; ++l) h = blocks_[static_cast<size_t>(l)]->forward(h, cos, sin, mask);
    }
    return head(h);
}

torch::Tensor LlamaImpl::loss(const torch::Tensor& window) {
    TORCH_CHECK(spec_.n_stages == 1, "loss() needs the whole model");
    const int64_t T = window.size(1) - 1;
    auto logits = forward(window.narrow(1, 0, T));
    auto targets = window.narrow(1, 1, T);
    return fused::cross_entropy(logits.reshape({-1, cfg_.vocab_size}), targets.reshape({-1}));
}

int64_t LlamaImpl::num_parameters() const {
    int64_t n = 0;
    for (auto& p : parameters()) n += p.numel();
    return n;
}

}  // namespace tw
