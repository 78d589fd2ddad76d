// Parameter and FLOPs counts; see model_size.h.
#include "core/model_size.h"

namespace tw {

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

}  // namespace tw
