// Training budgets in tokens per parameter: `train.tokens_per_param` sets `train.steps`.
// Torch-free; applied when a config is parsed (core/config_io.cpp), so the stored config holds the
// steps the budget gave and a resumed or re-run config resolves to the same ones.
//
// The rule (docs/budgets.md):
//   N      = count_parameters(model) with the data's vocabulary when model.vocab_size is 0
//            (every parameter, the tied embedding once: the count the DiLoCo scaling paper uses);
//   tokens per optimizer step = train.batch_size × model.seq_len × data-parallel replicas, where the
//            data-parallel replicas are outer.replicas (1 for algorithm "none"; each replica reads its
//            own batch_size sequences, a DDP group or pipeline replica included);
//   steps  = ⌈tokens_per_param × N / tokens per step⌉, rounded up to a multiple of outer.inner_steps:
//            whole rounds for algorithms with rounds (no tail left unsynced), and the same steps
//            for the data-parallel and one-node variants of a layout, which share H.
// SkipPipe and HDEE runs take their steps from their own planners and refuse a token budget.
#pragma once

#include <cstdint>

#include "core/config.h"
#include "core/status.h"

namespace tw {

// The parameter count N the budget is measured in (see above).
int64_t budget_parameters(const RunConfig& cfg);

// Tokens one optimizer step consumes across the data-parallel replicas (see above).
int64_t tokens_per_step(const RunConfig& cfg);

// The steps a budget of `tokens_per_param` gives for `cfg`'s model, batch and algorithm (≥ 1).
int64_t steps_for_budget(const RunConfig& cfg, double tokens_per_param);

// When cfg.train.tokens_per_param > 0: sets cfg.train.steps from it, or names why it cannot
// (SkipPipe, HDEE). Otherwise leaves cfg alone.
Status apply_token_budget(RunConfig& cfg);

}  // namespace tw
