// Data warnings; see data_warnings.h.
#include "engine/data/data_warnings.h"
#include "core/run_kind.h"

#include <cstdio>

#include "core/token_budget.h"
#include "engine/data/dataset.h"

namespace tw {

std::vector<std::string> data_warnings(const RunConfig& run, const PreparedData& data) {
    std::vector<std::string> out;
    char line[512];
    const auto train_tokens = static_cast<int64_t>(data.train ? data.train->size() : 0);
    if (data.tokenizer_kind == "bpe" && data.vocab_size > 0 && train_tokens < kBpeTokensPerPiece * data.vocab_size) {
        std::snprintf(line, sizeof line,
                      "warning: the BPE tokenizer of %lld pieces was trained on %lld tokens, fewer than %lld x its "
                      "vocabulary (%lld): many pieces are rare and their embeddings barely train (use a smaller "
                      "data.vocab_size or more text)",
                      (long long)data.vocab_size, (long long)train_tokens, (long long)kBpeTokensPerPiece,
                      (long long)(kBpeTokensPerPiece * data.vocab_size));
        out.push_back(line);
    }
    const double budget = static_cast<double>(run.train.steps) * static_cast<double>(tokens_per_step(run));
    // HDEE experts plan their own steps per domain (`thinwire data prepare` prints their passes).
    if (!is_run_kind(run, RunKind::kHdee) && train_tokens > 0 && budget / static_cast<double>(train_tokens) > kMaxEpochs) {
        std::snprintf(line, sizeof line,
                      "warning: the budget of %.3gM tokens (%lld steps) is %.1f epochs over the %lld training tokens, "
                      "more than %g: the model will mostly memorise the corpus (use more data or fewer steps)",
                      budget / 1e6, (long long)run.train.steps, budget / static_cast<double>(train_tokens),
                      (long long)train_tokens, kMaxEpochs);
        out.push_back(line);
    }
    return out;
}

}  // namespace tw
