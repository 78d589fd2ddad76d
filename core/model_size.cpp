// Parameter and FLOPs counts; see model_size.h.
#include "core/model_size.h"

#include <algorithm>

namespace tw {

int64_t TensorShape::numel() const {
    int64_t n = 1;
    for (int64_t x : shape) n *= x;
    return n;
}

std::vector<TensorShape> model_tensors(const ModelConfig& c) {
    const int64_t V = c.vocab_size, d = c.d_model, f = c.ff_width();
    // The module's own tensors come first, then its blocks' (LibTorch's named_parameters order).
    std::vector<TensorShape> out{{"tok_emb", {V, d}}, {"norm_f", {d}}};
    if (!c.tie_embeddings) out.push_back({"head", {V, d}});
    for (int64_t l = 0; l < c.n_layer; ++l) {
        const std::string p = "block_" + std::to_string(l) + ".";
        out.push_back({p + "attn_norm", {d}});
        out.push_back({p + "wqkv", {3 * d, d}});
        out.push_back({p + "wo", {d, d}});
        out.push_back({p + "mlp_norm", {d}});
        out.push_back({p + "w13", {2 * f, d}});
        out.push_back({p + "w2", {d, f}});
    }
    return out;
}

int64_t count_parameters(const ModelConfig& c) {
    const int64_t d = c.d_model, f = c.ff_width();
    const int64_t per_block = 2 * d + 3 * d * d + d * d + 2 * f * d + f * d;
    return c.vocab_size * d * (c.tie_embeddings ? 1 : 2) + c.n_layer * per_block + d;
}

double train_flops_per_token(const ModelConfig& c) {
    const double d = c.d_model, f = c.ff_width();
    const double matmul_params = c.n_layer * (4 * d * d + 3 * f * d) + c.vocab_size * d;  // incl. the head
    return 6.0 * matmul_params + 12.0 * c.n_layer * c.seq_len * d;
}

size_t largest_data_frame_bytes(const RunConfig& cfg) {
    ModelConfig m = cfg.model;
    if (m.vocab_size <= 0) m.vocab_size = cfg.data.vocab_size;
    // Every codec and boundary of the run sends no more than the larger of the two.
    const auto params = static_cast<size_t>(std::max<int64_t>(count_parameters(m), 1));
    const auto acts = static_cast<size_t>(std::max<int64_t>(cfg.train.batch_size, 1)) *
                      static_cast<size_t>(std::max<int64_t>(m.seq_len, 1)) *
                      static_cast<size_t>(std::max<int64_t>(m.d_model, 1));
    const size_t payload = 4 * std::max(params, acts);
    return payload + payload / 4 + (1u << 20);
}

size_t largest_mesh_message_bytes(const RunConfig& cfg) {
    ModelConfig m = cfg.model;
    if (m.vocab_size <= 0) m.vocab_size = cfg.data.vocab_size;
    const auto params = static_cast<size_t>(std::max<int64_t>(count_parameters(m), 1));
    // A recovery message (engine/worker/recovery.h) holds at most three fp32 copies of the model:
    // θ_global, the outer momentum and the donor's live weights (Streaming DiLoCo), plus names.
    return std::max(largest_data_frame_bytes(cfg), 3 * 4 * params + (1u << 20));
}

}  // namespace tw
