// Heterogeneous SparseLoCo's bookkeeping; see hetero.h.
#include "engine/pipeline/hetero.h"

#include "engine/model/llama.h"

namespace tw {

int64_t stage_of_param(const ModelConfig& cfg, const std::string& name, int64_t n_stages) {
    if (name.rfind("tok_emb", 0) == 0) return 0;
    if (name.rfind("block_", 0) == 0) {
        const int64_t layer = std::stoll(name.substr(6, name.find('.') - 6));
        for (int64_t s = 0; s < n_stages; ++s)
            if (layer < stage_spec(cfg, s, n_stages).last_layer) return s;
    }
    return n_stages - 1;  // norm_f, head
}

}  // namespace tw
