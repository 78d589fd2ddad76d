// Warnings about a run's data that do not stop it (docs/data_formats.md "Warnings"): printed by
// `thinwire data prepare` and among the first lines of a run. Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config.h"

namespace tw {

struct PreparedData;

// A trained BPE tokenizer should see at least this many training tokens per vocabulary entry;
// with fewer, most of its pieces are seen a handful of times and their embeddings barely train.
inline constexpr int64_t kBpeTokensPerPiece = 20;
// More passes than this over the training tokens: the run mostly memorises its corpus.
inline constexpr double kMaxEpochs = 4.0;

// The warnings for `run` (its budget: train.steps × tokens per step) on `data`, each one line
// starting "warning: ": the tokenizer was trained on fewer than kBpeTokensPerPiece × vocabulary
// tokens ("bpe" only), or the budget is more than kMaxEpochs passes over the training tokens.
// Empty when neither applies (and for user shards, which have no trained tokenizer).
std::vector<std::string> data_warnings(const RunConfig& run, const PreparedData& data);

}  // namespace tw
