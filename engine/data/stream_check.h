// What a run needs from its token streams, checked before any step: a training stream long enough
// for one batch of distinct windows, a validation stream for one window, every part a node reads
// for one window, and every token id inside the model's vocabulary. Each failure is an error
// naming the stream's source (the key and file a person gave, e.g. "data.train_shard /x/a.bin")
// and the numbers, instead of an exception from the window loader or the embedding lookup.
// Torch-free: the coordinator's nodes run it on prepared data, before the engine sees a tensor.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/status.h"
#include "engine/data/dataset.h"

namespace tw {

// The model and batch a stream must fill (units: tokens and sequences).
struct StreamNeeds {
    int64_t seq_len = 0;     // model.seq_len (T): a window holds T + 1 tokens (inputs and shifted targets)
    int64_t batch_size = 0;  // train.batch_size (B): a training stream must hold B distinct windows
    int64_t vocab_size = 0;  // model.vocab_size: every id must be below it; 0 = not checked
};

// Token count: a training stream (`train`) needs B·T + 1 tokens (B windows of stride T), a
// validation stream T + 1. E.g. "data.train_shard /x/a.bin: 10 tokens, a training window needs 129
// (model.seq_len + 1)".
Status check_stream_size(const std::string& source, int64_t tokens, bool train, const StreamNeeds& needs);

// Token ids: the first id not below needs.vocab_size, with its position. One pass, no allocation.
Status check_token_ids(const std::string& source, const std::vector<uint16_t>& tokens, const StreamNeeds& needs);

// The part of `tokens` (stream length) that reader `part` of `parts` gets (the window loader's
// contiguous split) must hold one window; the error says which part and how to fix it.
Status check_stream_part(const std::string& source, int64_t tokens, int64_t part, int64_t parts, int64_t seq_len);

// Where a prepared stream came from, for a person: "data.train_shard PATH" for a user's shard,
// "data.corpus PATH: its training split (CACHE/train.bin)" for a corpus.
std::string stream_source(const DataConfig& data, const PreparedData& d, bool train);

// check_stream_part for reader `part` of `parts` of the run's training stream (the genres it selects).
Status check_train_part(const RunConfig& cfg, const PreparedData& d, int64_t part, int64_t parts);

// All of the above but the parts for a run's prepared data: sizes of the streams the run reads (the genres it
// selects) and the ids of both streams. `cfg.model.vocab_size` is the run's (0: the data's).
Status check_run_data(const RunConfig& cfg, const PreparedData& d);

}  // namespace tw
