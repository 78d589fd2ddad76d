// The compute model (core/compute_model.h) counts from the model's shapes without building it; these
// tests build the real stage modules (engine/model/llama.h) and check that the counts are theirs:
// the blocks each stage holds, its parameters, and the forward matrix FLOPs (2 per weight entry per
// token, the head included; attention's 4·T·d per block on top).
#include <gtest/gtest.h>

#include "core/compute_model.h"
#include "engine/model/llama.h"

namespace tw {
namespace {

TEST(ComputeShapes, StagesMatchTheModules) {
    for (bool tied : {false, true}) {
        ModelConfig m;
        m.vocab_size = 96, m.d_model = 32, m.n_layer = 5, m.n_head = 2, m.seq_len = 16, m.d_ff = 0;
        m.tie_embeddings = tied;
        for (int64_t S = 1; S <= 3; ++S)
            for (int64_t s = 0; s < S; ++s) {
                const StageSpec spec = stage_spec(m, s, S);
                Llama stage(m, 7, spec);
                EXPECT_EQ(stage_blocks(m, s, S), spec.last_layer - spec.first_layer);
                int64_t numel = 0;  // every tensor the module holds (a tied last stage holds its own copy)
                double matrix_flops = 0;
                for (auto& p : stage->named_parameters()) {
                    numel += p.value().numel();
                    const std::string& n = p.key();
                    const bool lookup_only = n == "tok_emb" && !(spec.has_head() && tied);
                    if (p.value().dim() == 2 && !lookup_only) matrix_flops += 2.0 * static_cast<double>(p.value().numel());
                }
                EXPECT_EQ(stage_parameters(m, s, S), numel) << "stage " << s << " of " << S << (tied ? ", tied" : "");
                // Forward per token: the matrices, attention per block, and the loss's per-logit work.
                const double attention = static_cast<double>(spec.last_layer - spec.first_layer) * 4.0 * 16 * 32;
                const double loss = spec.has_head() ? kCeForwardPerLogit * 96 : 0.0;
                EXPECT_EQ(stage_flops(m, s, S).forward, matrix_flops + attention + loss)
                    << "stage " << s << " of " << S << (tied ? ", tied" : "");
            }
    }
}

}  // namespace
}  // namespace tw
